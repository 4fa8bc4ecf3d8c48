// Reads bytes/uint16/uint32/Megatron token files and cuts training batches (TokenData.h).
#include "runtime/train/TokenData.h"
#include "runtime/io/FileKind.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace disagmoe::train {
namespace {

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw DataError(path + ": " + what);
}

std::vector<unsigned char> readAll(const std::string &path) {
  std::error_code ec;
  // An ifstream opens a directory and reports a huge size: refuse it by name first.
  if (std::filesystem::is_directory(path, ec))
    fail(path, "is a directory, not a token file");
  // A FIFO would block the read, a device read forever: refuse anything but a regular file.
  if (const std::string why = inputRefusal(path); !why.empty())
    fail(path, why);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  const std::streamoff size = in.tellg();
  if (size < 0)
    fail(path, "cannot determine the file size");
  in.seekg(0);
  std::vector<unsigned char> bytes(static_cast<size_t>(size));
  in.read(reinterpret_cast<char *>(bytes.data()), size);
  if (!in)
    fail(path, "cannot read");
  return bytes;
}

uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// Reads one token of Megatron dtype `code` (width `w`) at p, as int64.
int64_t megatronToken(const unsigned char *p, int code) {
  switch (code) {
  case 1:
    return p[0];
  case 2:
    return static_cast<int8_t>(p[0]);
  case 3:
    return static_cast<int16_t>(le(p, 2));
  case 4:
    return static_cast<int32_t>(le(p, 4));
  case 5:
    return static_cast<int64_t>(le(p, 8));
  default:
    return static_cast<int64_t>(le(p, 2)); // 8: uint16
  }
}

std::vector<int64_t> loadMegatron(std::string prefix) {
  if (prefix.size() > 4 && prefix.compare(prefix.size() - 4, 4, ".bin") == 0)
    prefix.resize(prefix.size() - 4);
  const std::string idxPath = prefix + ".idx", binPath = prefix + ".bin";
  const std::vector<unsigned char> idx = readAll(idxPath);
  static const unsigned char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
  constexpr size_t kFixed = 9 + 8 + 1 + 8 + 8;
  if (idx.size() < kFixed)
    fail(idxPath, "shorter than the index header (" + std::to_string(kFixed) + " bytes)");
  if (std::memcmp(idx.data(), kMagic, 9) != 0)
    fail(idxPath, "header: not a Megatron index (magic MMIDIDX)");
  const uint64_t version = le(idx.data() + 9, 8);
  if (version != 1)
    fail(idxPath, "version " + std::to_string(version) + " (only 1 is known)");
  const int code = idx[17];
  static const int kWidth[] = {0, 1, 1, 2, 4, 8, 0, 0, 2};
  if (code < 1 || code > 8 || kWidth[code] == 0)
    fail(idxPath,
         "dtype code " + std::to_string(code) + " is not an integer token type (1-5 or 8)");
  const int width = kWidth[code];
  const uint64_t seqs = le(idx.data() + 18, 8), docs = le(idx.data() + 26, 8);
  const uint64_t need = kFixed + seqs * 4 + seqs * 8 + docs * 8;
  if (seqs > idx.size() || docs > idx.size() || need != idx.size())
    fail(idxPath, "sequence count " + std::to_string(seqs) + " and document count " +
                      std::to_string(docs) + " need " + std::to_string(need) +
                      " bytes, the file has " + std::to_string(idx.size()));
  const std::vector<unsigned char> bin = readAll(binPath);
  std::vector<int64_t> tokens;
  const unsigned char *lengths = idx.data() + kFixed;
  const unsigned char *pointers = lengths + seqs * 4;
  for (uint64_t s = 0; s < seqs; ++s) {
    const int64_t len = static_cast<int32_t>(le(lengths + 4 * s, 4));
    const uint64_t ptr = le(pointers + 8 * s, 8);
    if (len < 0 || ptr > bin.size() || static_cast<uint64_t>(len) * width > bin.size() - ptr)
      fail(idxPath, "sequence " + std::to_string(s) + " (pointer " + std::to_string(ptr) +
                        ", length " + std::to_string(len) + ") lies outside " + binPath + " (" +
                        std::to_string(bin.size()) + " bytes)");
    for (int64_t i = 0; i < len; ++i)
      tokens.push_back(megatronToken(bin.data() + ptr + i * width, code));
  }
  return tokens;
}

} // namespace

TokenFormat parseTokenFormat(const std::string &name) {
  if (name == "bytes")
    return TokenFormat::Bytes;
  if (name == "uint16")
    return TokenFormat::Uint16;
  if (name == "uint32")
    return TokenFormat::Uint32;
  if (name == "megatron")
    return TokenFormat::Megatron;
  throw DataError("unknown token format \"" + name +
                  "\" (expected bytes, uint16, uint32 or megatron)");
}

std::vector<int64_t> loadTokens(const std::string &path, TokenFormat format, int64_t vocabSize) {
  std::vector<int64_t> tokens;
  std::string where = path;
  if (format == TokenFormat::Megatron) {
    tokens = loadMegatron(path);
  } else {
    const std::vector<unsigned char> bytes = readAll(path);
    const int width = format == TokenFormat::Bytes ? 1 : format == TokenFormat::Uint16 ? 2 : 4;
    if (bytes.size() % width)
      fail(path, "size " + std::to_string(bytes.size()) +
                     " bytes is not a multiple of the token width " + std::to_string(width));
    tokens.resize(bytes.size() / width);
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = static_cast<int64_t>(le(bytes.data() + i * width, width));
  }
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocabSize)
      fail(where, "token " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
                      ", outside the model's vocabulary [0, " + std::to_string(vocabSize) + ")");
  return tokens;
}

TokenBatcher::TokenBatcher(std::vector<int64_t> tokens, int64_t batch, int64_t seqLen,
                           const std::string &source)
    : tokens_(std::move(tokens)), batch_(batch), seqLen_(seqLen), source_(source) {
  if (size() < batch * seqLen + 1)
    fail(source, std::to_string(size()) + " tokens, a batch [" + std::to_string(batch) + "," +
                     std::to_string(seqLen) + "] needs at least " +
                     std::to_string(batch * seqLen + 1));
}

bool TokenBatcher::next(std::vector<int64_t> &ids, std::vector<int64_t> &targets) {
  const bool wrap = position_ + batch_ * seqLen_ + 1 > size();
  if (wrap) { // a new epoch
    position_ = 0;
    ++epoch_;
  }
  ids.resize(static_cast<size_t>(batch_ * seqLen_));
  targets.resize(ids.size());
  for (int64_t b = 0; b < batch_; ++b)
    for (int64_t s = 0; s < seqLen_; ++s) {
      const int64_t at = position_ + b * seqLen_ + s;
      ids[b * seqLen_ + s] = tokens_[at];
      targets[b * seqLen_ + s] = tokens_[at + 1];
    }
  position_ += batch_ * seqLen_;
  return wrap;
}

void TokenBatcher::setPosition(int64_t position) {
  if (position < 0 || position > size())
    fail(source_, "data position " + std::to_string(position) + " is outside the " +
                      std::to_string(size()) + " tokens of the file");
  position_ = position;
}

} // namespace disagmoe::train
