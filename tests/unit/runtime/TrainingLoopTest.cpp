// Pieces of the training loop (issue 7): the lr schedule's refusals and its closed-form corner
// values, token batches (windows of S + 1 tokens, wrap-around), token files (uint32, Megatron int32
// with several sequences) and safetensors files (round trip, refusals of overlapping or missing
// data). The PyTorch comparisons are in tests/e2e/check_training.py and check_training_loop.py.
#include "TestSupport.h"

#include "runtime/io/Safetensors.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/CheckpointDir.h"
#include "runtime/train/LrSchedule.h"
#include "runtime/train/TokenData.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace disagmoe;
using namespace disagmoe::train;

namespace {

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <typename T> std::string le(T v) {
  std::string s(sizeof(T), '\0');
  for (size_t i = 0; i < sizeof(T); ++i)
    s[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  return s;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(LrSchedule, WarmupPeakCosineMidpointAndFloor) {
  LrSchedule s{10, 110, 0.1};
  EXPECT_DOUBLE_EQ(s.lrAt(1.0, 1), 0.1);     // lr / W, not 0
  EXPECT_DOUBLE_EQ(s.lrAt(1.0, 10), 1.0);    // the peak at the end of the warm-up
  EXPECT_NEAR(s.lrAt(1.0, 60), 0.55, 1e-15); // cos(pi/2) = 0: halfway between lr and lr_min
  EXPECT_DOUBLE_EQ(s.lrAt(1.0, 110), 0.1);
  EXPECT_DOUBLE_EQ(s.lrAt(1.0, 1000), 0.1);
  EXPECT_DOUBLE_EQ(LrSchedule{}.lrAt(0.3, 7), 0.3); // the default: constant
}

TEST(LrSchedule, RefusesInconsistentSettings) {
  EXPECT_NE(errorOf([] { LrSchedule{10, 10, 0}.validate(1.0); }).find("must exceed the warm-up"),
            std::string::npos);
  EXPECT_NE(errorOf([] { LrSchedule{0, 5, 2.0}.validate(1.0); }).find("lr-min"), std::string::npos);
  EXPECT_EQ(errorOf([] { LrSchedule{0, 5, 0.5}.validate(1.0); }), "");
}

TEST(TokenBatcher, WindowsOfSeqLenPlusOneAndWrap) {
  std::vector<int64_t> tokens(20);
  for (int64_t i = 0; i < 20; ++i)
    tokens[i] = i;
  TokenBatcher b(tokens, 2, 4, "mem");
  std::vector<int64_t> ids, targets;
  EXPECT_FALSE(b.next(ids, targets));
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(targets, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_FALSE(b.next(ids, targets)); // 8..16 needs token 16: fits
  EXPECT_EQ(ids.front(), 8);
  EXPECT_EQ(targets.back(), 16);
  EXPECT_EQ(b.position(), 16);
  EXPECT_EQ(b.epoch(), 1);
  EXPECT_TRUE(b.next(ids, targets)); // 16 + 8 + 1 > 20: wraps to 0 (the loop prints a notice)
  EXPECT_EQ(b.epoch(), 2);
  EXPECT_EQ(ids.front(), 0);
  EXPECT_EQ(b.position(), 8);
  EXPECT_NE(errorOf([&] {
              TokenBatcher(std::vector<int64_t>(8), 2, 4, "short");
            }).find("needs at least 9"),
            std::string::npos);
}

TEST(TokenData, Uint32AndMegatronInt32) {
  const std::string dir = test::makeTempDir("tokens");
  writeBytes(dir + "/t.u32", le<uint32_t>(7) + le<uint32_t>(255) + le<uint32_t>(0));
  EXPECT_EQ(loadTokens(dir + "/t.u32", TokenFormat::Uint32, 256),
            (std::vector<int64_t>{7, 255, 0}));
  // Megatron: two sequences stored out of order in the .bin (pointers 8 and 0), dtype code 4
  // (int32).
  writeBytes(dir + "/m.bin",
             le<int32_t>(5) + le<int32_t>(6) + le<int32_t>(1) + le<int32_t>(2) + le<int32_t>(3));
  std::string idx = std::string("MMIDIDX\0\0", 9) + le<uint64_t>(1) + std::string(1, '\4') +
                    le<uint64_t>(2) + le<uint64_t>(2) + le<int32_t>(3) + le<int32_t>(2) +
                    le<int64_t>(8) + le<int64_t>(0) + le<int64_t>(0) + le<int64_t>(2);
  writeBytes(dir + "/m.idx", idx);
  EXPECT_EQ(loadTokens(dir + "/m", TokenFormat::Megatron, 256),
            (std::vector<int64_t>{1, 2, 3, 5, 6}));
  // A window that starts inside the first sequence and runs into the second (stored before it).
  const TokenFile mapped = TokenFile::open(dir + "/m.bin", TokenFormat::Megatron, 256);
  std::vector<int64_t> window(3);
  mapped.read(1, 3, window.data());
  EXPECT_EQ(window, (std::vector<int64_t>{2, 3, 5}));
  idx[17] = 6; // float64
  writeBytes(dir + "/m.idx", idx);
  EXPECT_NE(
      errorOf([&] { loadTokens(dir + "/m.bin", TokenFormat::Megatron, 256); }).find("dtype code 6"),
      std::string::npos);
}

TEST(Safetensors, RoundTripAndRefusals) {
  const std::string dir = test::makeTempDir("st");
  Tensor a({2, 3}), b({4});
  for (int i = 0; i < 6; ++i)
    a.data[i] = 0.5f * i - 1;
  b.data = {1e-30f, -0.0f, 3.25f, 7};
  writeSafetensors(dir + "/x.safetensors", {{"a", &a}, {"b", &b}}, {{"step", "3"}});
  SafetensorsFile f = readSafetensors(dir + "/x.safetensors");
  EXPECT_EQ(f.tensors.at("a").shape, a.shape);
  EXPECT_EQ(f.tensors.at("a").data, a.data);
  EXPECT_EQ(f.tensors.at("b").data, b.data);
  EXPECT_EQ(f.metadata.at("step"), "3");
  // Hand-written files (the spec's layout): overlapping entries, an uncovered tail.
  const auto file = [&](const std::string &header, size_t dataBytes) {
    writeBytes(dir + "/y.safetensors",
               le<uint64_t>(header.size()) + header + std::string(dataBytes, '\0'));
    return errorOf([&] { readSafetensors(dir + "/y.safetensors"); });
  };
  EXPECT_NE(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                 12)
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 12)
                .find("4 bytes that no tensor"),
            std::string::npos);
  EXPECT_NE(file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8).find("needs 12"),
            std::string::npos);
  EXPECT_NE(
      file(R"({"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})", 8).find("dtype BF16"),
      std::string::npos);
}

// The writer refuses an existing non-regular file itself (disagmoe-run's up-front check aside): the
// rename of its temp file would replace a FIFO or a symlink, whose target would then never be
// written. The reader names a directory or FIFO instead of reporting a bogus header length (an
// ifstream on a directory reports a size of 2^63 - 1) or blocking on the FIFO.
TEST(Safetensors, RefusesFilesThatAreNotRegular) {
  const std::string dir = test::makeTempDir("st");
  Tensor a({2});
  writeBytes(dir + "/target", "keep me");
  std::filesystem::create_symlink("target", dir + "/link");
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(errorOf([&] { writeSafetensors(dir + "/link", {{"a", &a}}, {}); }),
            dir + "/link: exists and is not a regular file (a symlink): refusing to replace it");
  EXPECT_EQ(errorOf([&] { writeSafetensors(dir + "/fifo", {{"a", &a}}, {}); }),
            dir + "/fifo: exists and is not a regular file (a FIFO): refusing to replace it");
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/link"));
  EXPECT_TRUE(std::filesystem::is_fifo(dir + "/fifo"));
  std::ifstream target(dir + "/target");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(target), {}), "keep me");
  EXPECT_EQ(errorOf([&] { readSafetensors(dir); }), dir + ": is a directory, expected a file");
  EXPECT_EQ(errorOf([&] { readSafetensors(dir + "/fifo"); }),
            dir + "/fifo: is not a regular file (a FIFO)");
  // Nothing but the three entries made above (no temp file left behind).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 3);
}

// The CRC-32 of checkpoint tensors is zlib's (CRC-32/ISO-HDLC): the catalogue's check value of
// "123456789" is cbf43926 (Williams, "A painless guide to CRC error detection", and the reveng
// CRC catalogue); the empty input gives 0.
// BF16 / F16 (Hugging Face files, runtime/train/HfWeights.h): closed forms. bf16 keeps fp32's top
// 16 bits; 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 and rounds to the even one (1), 1 + 3 *
// 2^-8 halfway between 1 + 2^-7 and 1 + 2^-6 rounds to 1 + 2^-6; binary16 0x3c00 = 1, 0x0001 =
// 2^-24 (smallest subnormal), 0x7bff = 65504 (largest finite), 0xc000 = -2, 0x7c00 = +inf.
TEST(Safetensors, Bf16RoundsToNearestEvenAndHalfPrecisionDecodes) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 1.5f * std::ldexp(1.0f, -8))),
            1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(bf16ToFloat(floatToBf16(-3.0f)), -3.0f);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  EXPECT_EQ(f16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(f16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(f16ToFloat(0x7c00), INFINITY);
  // A BF16 file: the header reader takes it (readSafetensors, F32 only, does not), the element
  // reader converts a sub-range.
  const std::string dir = test::makeTempDir("st16");
  Tensor a({2, 2});
  a.data = {1.0f, -2.5f, 1.0f + std::ldexp(1.0f, -8), 0.15625f};
  writeSafetensors(dir + "/b.safetensors", {{"a", &a}}, {{"format", "pt"}}, SafetensorsDtype::BF16);
  const SafetensorsHeader h = readSafetensorsHeader(dir + "/b.safetensors");
  EXPECT_EQ(h.tensors.at("a").dtype, SafetensorsDtype::BF16);
  EXPECT_EQ(h.tensors.at("a").end - h.tensors.at("a").begin, 8u);
  EXPECT_EQ(readSafetensorsElements(h, "a", 1, 3), (std::vector<float>{-2.5f, 1.0f, 0.15625f}));
  EXPECT_NE(errorOf([&] { readSafetensorsElements(h, "a", 3, 2); }).find("outside its 4"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { readSafetensors(dir + "/b.safetensors"); }).find("dtype BF16"),
            std::string::npos);
}

TEST(Checkpoint, Crc32IsTheIsoHdlcCrc) {
  const char text[] = "123456789";
  EXPECT_EQ(train::crc32Hex(text, 9), "cbf43926");
  EXPECT_EQ(train::crc32Hex(text, 0), "00000000");
}

// Step-numbered checkpoint files (CheckpointDir.h): the names, `latest` replaced atomically, the
// resolution of --resume DIR and its refusals, and keep-last-N, which deletes only step files below
// the newest step (foreign files and later steps of another run stay).
TEST(CheckpointDir, NamesLatestResolveAndPrune) {
  EXPECT_EQ(checkpointFileName(10), "step-00000010.safetensors");
  EXPECT_EQ(checkpointFileName(123456789), "step-123456789.safetensors");
  const std::string dir = test::makeTempDir("ckdir");
  const auto read = [](const std::string &path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(errorOf([&] { resolveCheckpoint(dir); }),
            dir + "/latest: missing (" + dir + " holds no complete checkpoint)");
  for (int s : {2, 4, 6, 8})
    writeBytes(dir + "/" + checkpointFileName(s), "x");
  writeBytes(dir + "/step-00000003.safetensors.tmp.1.0", "partial");
  writeBytes(dir + "/notes.txt", "mine");
  writeLatest(dir, checkpointFileName(6));
  EXPECT_EQ(read(dir + "/latest"), "step-00000006.safetensors\n");
  EXPECT_EQ(resolveCheckpoint(dir), dir + "/step-00000006.safetensors");
  EXPECT_EQ(resolveCheckpoint(dir + "/step-00000002.safetensors"),
            dir + "/step-00000002.safetensors");
  // Newest step 6, keep 2: step 4 stays beside 6; step 2 goes; step 8 (another run's) stays.
  EXPECT_EQ(pruneCheckpoints(dir, 2, 6), std::vector<std::string>{"step-00000002.safetensors"});
  std::vector<std::string> left;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left,
            (std::vector<std::string>{"latest", "notes.txt", "step-00000003.safetensors.tmp.1.0",
                                      "step-00000004.safetensors", "step-00000006.safetensors",
                                      "step-00000008.safetensors"}));
  EXPECT_TRUE(pruneCheckpoints(dir, 0, 6).empty()); // keep 0: all
  EXPECT_EQ(pruneCheckpoints(dir, 1, 6), std::vector<std::string>{"step-00000004.safetensors"});
  // A bad pointer is named, never followed outside DIR.
  writeBytes(dir + "/latest", "../elsewhere.safetensors\n");
  EXPECT_EQ(errorOf([&] { resolveCheckpoint(dir); }),
            dir + "/latest: names \"../elsewhere.safetensors\", not a file name in " + dir);
  writeBytes(dir + "/latest", "step-00000004.safetensors\n");
  EXPECT_EQ(errorOf([&] { resolveCheckpoint(dir); }),
            dir + "/latest: names step-00000004.safetensors, which does not exist");
}

// Token files are memory-mapped (TokenData.h): a 1 GiB uint16 file (sparse, made with
// resize_file: zeros, valid tokens, and a few written tokens near both ends) opens, is checked
// against the vocabulary and gives its batches while the process's peak resident memory stays far
// below the file (read whole it would need 1 GiB, and 4 GiB more as int64 tokens). In a child
// process, so that the peak (getrusage's ru_maxrss) is this test's alone.
TEST(TokenData, ALargeFileIsMappedNotReadWhole) {
  const std::string dir = test::makeTempDir("bigtokens");
  const std::string path = dir + "/big.u16";
  const uint64_t bytes = uint64_t(1) << 30;
  {
    std::ofstream(path, std::ios::binary).put('\0');
    std::filesystem::resize_file(path, bytes);
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(0);
    f << le<uint16_t>(7) << le<uint16_t>(8) << le<uint16_t>(9);
    f.seekp(static_cast<std::streamoff>(bytes - 4));
    f << le<uint16_t>(254) << le<uint16_t>(255);
  }
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    long result[4] = {-1, -1, -1, -1};
    try {
      TokenFile file = TokenFile::open(path, TokenFormat::Uint16, 256);
      result[0] = static_cast<long>(file.size());
      std::vector<int64_t> tail(3);
      file.read(file.size() - 3, 3, tail.data());
      result[1] = static_cast<long>(tail[0] * 1000000 + tail[1] * 1000 + tail[2]);
      TokenBatcher batcher(std::move(file), 2, 4, path);
      std::vector<int64_t> ids, targets;
      batcher.next(ids, targets);
      result[2] = static_cast<long>(ids[0] * 1000000 + ids[1] * 1000 + targets[1]);
    } catch (const std::exception &) {
    }
    struct rusage usage;
    ::getrusage(RUSAGE_SELF, &usage);
    result[3] = usage.ru_maxrss; // KiB
    ssize_t written = ::write(fds[1], result, sizeof result);
    ::_exit(written == sizeof result ? 0 : 1);
  }
  ::close(fds[1]);
  long result[4] = {0, 0, 0, 0};
  ASSERT_EQ(::read(fds[0], result, sizeof result), static_cast<ssize_t>(sizeof result));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::filesystem::remove(path);
  EXPECT_EQ(result[0], static_cast<long>(bytes / 2));
  EXPECT_EQ(result[1], 0 * 1000000 + 254 * 1000 + 255); // the last three tokens
  EXPECT_EQ(result[2], 7 * 1000000 + 8 * 1000 + 9);     // ids 7, 8, ...; targets 8, 9, ...
  EXPECT_LT(result[3], 128 * 1024) << "peak resident memory " << result[3] / 1024 << " MiB";
}
