// NumPy .npy files (format versions 1.0 and 2.0), the exchange format for golden values, input
// token ids and output logits.
//
// Supported dtypes: little-endian float32 ('<f4'), int64 ('<i8') and int32 ('<i4'), C order only.
// Every error is an NpyError whose message starts with the file path.
#pragma once

#include "runtime/tensor/Tensor.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace disagmoe {

class NpyError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

enum class NpyDtype { Float32, Int64, Int32 };

/// "<f4", "<i8" or "<i4".
const char *npyDescr(NpyDtype dtype);
/// Bytes per element: 4, 8 or 4.
int64_t npyItemSize(NpyDtype dtype);

/// What the header of a .npy file says.
struct NpyHeader {
  NpyDtype dtype = NpyDtype::Float32;
  std::vector<int64_t> shape;
  /// Byte offset of the first element: the magic, version, header-length field and header dict.
  /// A plan can reference an .npy's data directly with `offset = dataOffset`.
  uint64_t dataOffset = 0;
  /// numel(shape) * itemsize.
  uint64_t dataBytes = 0;
};

/// Reads and checks the header only. Throws NpyError if the file is missing, is not a .npy of
/// version 1 or 2, has an unsupported dtype, is Fortran-ordered, or is shorter than its header
/// says.
NpyHeader readNpyHeader(const std::string &path);

/// Reads a '<f4' array. Throws NpyError for any other dtype.
Tensor readNpyFloat32(const std::string &path);

/// Reads an integer array ('<i8' or '<i4', widened to int64); `shape` receives its shape.
std::vector<int64_t> readNpyInt64(const std::string &path, std::vector<int64_t> &shape);

/// Writes a '<f4' array (format 1.0), atomically: a temporary file in the same directory is
/// written, then renamed onto `path`, so readers never see a partial file.
void writeNpyFloat32(const std::string &path, const Tensor &tensor);

/// Writes a '<i8' array of `shape` from `data` (numel(shape) values), atomically like above.
void writeNpyInt64(const std::string &path, const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &data);

} // namespace disagmoe
