// .npy reading and writing: round trips, format 2.0 headers, int32 widening, atomic writes, errors.
#include "TestSupport.h"

#include "runtime/io/Npy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

using namespace disagmoe;
using namespace disagmoe::test;

namespace {

// Writes a raw .npy with the given version and header dict, followed by `data`.
void writeRawNpy(const std::string &path, int major, std::string dict, const std::string &data) {
  const size_t prefix = major == 1 ? 10 : 12;
  dict.append((64 - (prefix + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  std::string bytes = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  const uint32_t len = static_cast<uint32_t>(dict.size());
  bytes += static_cast<char>(len & 0xff);
  bytes += static_cast<char>((len >> 8) & 0xff);
  if (major == 2) {
    bytes += static_cast<char>((len >> 16) & 0xff);
    bytes += static_cast<char>(len >> 24);
  }
  writeText(path, bytes + dict + data);
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const NpyError &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST(Npy, Float32RoundTripKeepsShapeAndBits) {
  const std::string dir = makeTempDir("npy");
  Tensor t({2, 3, 4});
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data[i] = 0.25f * static_cast<float>(i) - 1.0f / 3.0f;
  writeNpyFloat32(dir + "/t.npy", t);
  Tensor back = readNpyFloat32(dir + "/t.npy");
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(back.data, t.data);
  NpyHeader header = readNpyHeader(dir + "/t.npy");
  EXPECT_EQ(header.dataOffset % 64, 0u);
  EXPECT_EQ(header.dataBytes, 24u * 4);
  // Only the final file remains: the temporary was renamed into place.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(Npy, Int64RoundTripAndOneDimensionalShape) {
  const std::string dir = makeTempDir("npy");
  writeNpyInt64(dir + "/ids.npy", {5}, {0, -1, 7, 1LL << 40, 3});
  std::vector<int64_t> shape;
  EXPECT_EQ(readNpyInt64(dir + "/ids.npy", shape), (std::vector<int64_t>{0, -1, 7, 1LL << 40, 3}));
  EXPECT_EQ(shape, std::vector<int64_t>{5});
}

TEST(Npy, ReadsFormatTwoHeadersAndWidensInt32) {
  const std::string dir = makeTempDir("npy");
  const int32_t values[3] = {4, -2, 9};
  writeRawNpy(dir + "/v2.npy", 2, "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 3), }",
              std::string(reinterpret_cast<const char *>(values), sizeof values));
  std::vector<int64_t> shape;
  EXPECT_EQ(readNpyInt64(dir + "/v2.npy", shape), (std::vector<int64_t>{4, -2, 9}));
  EXPECT_EQ(shape, (std::vector<int64_t>{1, 3}));
  // The data (3 int32) ends the file, right after the 12-byte prefix and the header.
  EXPECT_EQ(readNpyHeader(dir + "/v2.npy").dataOffset + sizeof values,
            std::filesystem::file_size(dir + "/v2.npy"));
}

TEST(Npy, ReportsOffsetOfGoldenWeights) {
  NpyHeader header = readNpyHeader(goldenPath("w_l0_q.npy"));
  EXPECT_EQ(header.shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(header.dtype, NpyDtype::Float32);
  EXPECT_EQ(header.dataBytes, 64u * 64 * 4);
  EXPECT_EQ(std::filesystem::file_size(goldenPath("w_l0_q.npy")),
            header.dataOffset + header.dataBytes);
}

TEST(Npy, ErrorsNameTheFile) {
  const std::string dir = makeTempDir("npy");
  EXPECT_EQ(errorOf([&] { readNpyHeader(dir + "/missing.npy"); }),
            dir + "/missing.npy: cannot open: No such file or directory");

  writeText(dir + "/bad.npy", "not numpy at all");
  EXPECT_EQ(errorOf([&] { readNpyHeader(dir + "/bad.npy"); }),
            dir + "/bad.npy: not a .npy file (bad magic)");

  writeRawNpy(dir + "/f8.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }",
              std::string(8, '\0'));
  EXPECT_EQ(errorOf([&] { readNpyHeader(dir + "/f8.npy"); }),
            dir + "/f8.npy: unsupported dtype '<f8' (supported: <f4, <i8, <i4)");

  writeRawNpy(dir + "/fortran.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
              std::string(16, '\0'));
  EXPECT_EQ(errorOf([&] { readNpyHeader(dir + "/fortran.npy"); }),
            dir + "/fortran.npy: Fortran-ordered arrays are not supported");

  writeRawNpy(dir + "/short.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
              std::string(8, '\0'));
  const auto size = std::filesystem::file_size(dir + "/short.npy");
  EXPECT_EQ(errorOf([&] { readNpyFloat32(dir + "/short.npy"); }),
            dir + "/short.npy: file has " + std::to_string(size) + " bytes, shape [4] <f4 needs " +
                std::to_string(size + 8));

  writeNpyInt64(dir + "/ids.npy", {1}, {1});
  EXPECT_EQ(errorOf([&] { readNpyFloat32(dir + "/ids.npy"); }),
            dir + "/ids.npy: expected dtype <f4, found <i8");

  EXPECT_EQ(errorOf([&] {
              writeNpyFloat32(dir + "/no/such/dir/x.npy", Tensor({1}));
            }).rfind(dir + "/no/such/dir/x.npy: cannot create", 0),
            0u);
}

TEST(Npy, RejectsShapesWhoseSizeOverflows) {
  // A hostile header: 2^62 x 4 float32 elements with 128 bytes of data; the byte count wraps
  // around 2^64 and must not be trusted to size an allocation.
  const std::string path = makeTempDir("npy") + "/huge.npy";
  writeRawNpy(path, 1,
              "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
              std::string(128, '\0'));
  EXPECT_EQ(errorOf([&] { readNpyFloat32(path); }),
            path + ": shape [4611686018427387904,4] overflows 64-bit sizes");
}

TEST(Npy, RefusesToReplaceSomethingThatIsNotARegularFile) {
  const std::string dir = makeTempDir("npy");
  std::filesystem::create_symlink(dir + "/target.npy", dir + "/link.npy");
  Tensor t({1, 2});
  EXPECT_EQ(
      errorOf([&] { writeNpyFloat32(dir + "/link.npy", t); }),
      dir + "/link.npy: refusing to replace it: not a regular file (a device, FIFO, directory or "
            "symbolic link)");
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/link.npy"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/target.npy"));
}
