//===- OnnxLoader.cpp - ONNX model -> plain C++ graph ---------------------===//
//
// Compiled with exceptions and RTTI: libonnx and protobuf throw. Internally
// failures are thrown as LoadFailure; loadOnnxModel catches everything and
// returns it as a LoadResult.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxLoader.h"
#include "frontends/onnx/InlineFunctions.h"
#include "frontends/onnx/NewerOpsets.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <functional>
#include <queue>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace disagmoe::onnxfe {

int64_t elemTypeSize(ElemType t) noexcept {
  switch (t) {
  case ElemType::Float:
    return 4;
  case ElemType::UInt8:
    return 1;
  case ElemType::Int8:
    return 1;
  case ElemType::UInt16:
    return 2;
  case ElemType::Int16:
    return 2;
  case ElemType::Int32:
    return 4;
  case ElemType::Int64:
    return 8;
  case ElemType::Bool:
    return 1;
  case ElemType::Float16:
    return 2;
  case ElemType::Double:
    return 8;
  case ElemType::UInt32:
    return 4;
  case ElemType::UInt64:
    return 8;
  case ElemType::Complex64:
    return 8;
  case ElemType::Complex128:
    return 16;
  case ElemType::BFloat16:
    return 2;
  case ElemType::String:
  case ElemType::Undefined:
    return 0;
  }
  return 0;
}

const char *elemTypeName(ElemType t) noexcept {
  switch (t) {
  case ElemType::Undefined:
    return "undefined";
  case ElemType::Float:
    return "float";
  case ElemType::UInt8:
    return "uint8";
  case ElemType::Int8:
    return "int8";
  case ElemType::UInt16:
    return "uint16";
  case ElemType::Int16:
    return "int16";
  case ElemType::Int32:
    return "int32";
  case ElemType::Int64:
    return "int64";
  case ElemType::String:
    return "string";
  case ElemType::Bool:
    return "bool";
  case ElemType::Float16:
    return "float16";
  case ElemType::Double:
    return "double";
  case ElemType::UInt32:
    return "uint32";
  case ElemType::UInt64:
    return "uint64";
  case ElemType::Complex64:
    return "complex64";
  case ElemType::Complex128:
    return "complex128";
  case ElemType::BFloat16:
    return "bfloat16";
  }
  return "undefined";
}

bool ValueInfo::isStatic() const noexcept {
  if (!hasShape)
    return false;
  for (int64_t d : dims)
    if (d < 0)
      return false;
  return true;
}

namespace {

using google::protobuf::io::CodedInputStream;

/// Internal failure; the message is the whole one-line error.
struct LoadFailure {
  std::string msg;
};

[[noreturn]] void fail(std::string msg) { throw LoadFailure{std::move(msg)}; }

/// Collapses the multi-line messages of libonnx into one line.
std::string oneLine(const std::string &s) {
  std::string out;
  bool pendingSpace = false;
  for (char c : s) {
    if (c == '\n' || c == '\r' || c == '\t') {
      pendingSpace = true;
      continue;
    }
    if (pendingSpace) {
      if (!out.empty() && out.back() != ' ' && c != ' ')
        out += ' ';
      pendingSpace = false;
    }
    out += c;
  }
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

std::string dimsStr(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

std::string nodeLabel(const onnx::NodeProto &n, size_t fileIndex) {
  return n.name().empty() ? "#" + std::to_string(fileIndex) : n.name();
}

std::string nodeRef(const onnx::NodeProto &n, size_t fileIndex) {
  return "node '" + nodeLabel(n, fileIndex) + "' (" + n.op_type() + ")";
}

ElemType toElemType(int32_t code) {
  switch (code) {
  case 1:
  case 2:
  case 3:
  case 4:
  case 5:
  case 6:
  case 7:
  case 8:
  case 9:
  case 10:
  case 11:
  case 12:
  case 13:
  case 14:
  case 15:
  case 16:
    return static_cast<ElemType>(code);
  default:
    return ElemType::Undefined;
  }
}

//===----------------------------------------------------------------------===//
// The file, mapped read-only.
//===----------------------------------------------------------------------===//

class MappedFile {
public:
  explicit MappedFile(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      fail(path + ": cannot open: " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int e = errno;
      ::close(fd);
      fail(path + ": cannot stat: " + std::strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      fail(path + ": is a directory, not an ONNX model");
    }
    size_ = static_cast<uint64_t>(st.st_size);
    if (size_ == 0) {
      ::close(fd);
      fail(path + ": empty file, not an ONNX model");
    }
    if (size_ > static_cast<uint64_t>(INT_MAX)) {
      ::close(fd);
      fail(path + ": file is " + std::to_string(size_) +
           " bytes, over protobuf's 2 GiB limit for one message (store the weights as ONNX "
           "external data)");
    }
    void *p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      map_ = p;
      data_ = static_cast<const uint8_t *>(p);
    } else {
      // Fall back to reading (e.g. file systems without mmap).
      copy_.resize(size_);
      uint64_t got = 0;
      while (got < size_) {
        ssize_t r = ::read(fd, copy_.data() + got, size_ - got);
        if (r < 0 && errno == EINTR)
          continue;
        if (r <= 0) {
          int e = errno;
          ::close(fd);
          fail(path + ": read failed: " +
               (r == 0 ? std::string("unexpected end of file") : std::strerror(e)));
        }
        got += static_cast<uint64_t>(r);
      }
      data_ = copy_.data();
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (map_)
      ::munmap(map_, size_);
  }
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const uint8_t *data() const { return data_; }
  int size() const { return static_cast<int>(size_); }

private:
  void *map_ = nullptr;
  const uint8_t *data_ = nullptr;
  uint64_t size_ = 0;
  std::vector<uint8_t> copy_;
};

//===----------------------------------------------------------------------===//
// Protobuf wire-format walk: where each initializer's data lies in the file.
//===----------------------------------------------------------------------===//

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLenDelim = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

/// Where one TensorProto's inline data lies.
struct TensorLoc {
  enum class Field { None, Raw, Float, Double };
  Field field = Field::None; ///< the contiguous data field seen last
  uint64_t offset = 0, length = 0;
  int chunks = 0;        ///< number of occurrences of that field (contiguous only if 1)
  bool unpacked = false; ///< float_data/double_data seen in unpacked encoding
};

enum class WalkStatus { Ok, Truncated, Corrupt };

struct WalkError {
  WalkStatus status;
  std::string detail;
};

/// Skips one field whose tag was just read. Throws WalkError.
void skipField(CodedInputStream &in, uint32_t tag, int fileSize) {
  auto truncated = [&](const char *what) {
    throw WalkError{WalkStatus::Truncated,
                    std::string(what) + " at byte " + std::to_string(in.CurrentPosition()) +
                        " runs past the end of the file (" + std::to_string(fileSize) + " bytes)"};
  };
  switch (tag & 7) {
  case kVarint: {
    uint64_t v;
    if (!in.ReadVarint64(&v)) {
      if (in.CurrentPosition() >= fileSize || in.BytesUntilTotalBytesLimit() <= 0)
        truncated("a varint");
      throw WalkError{WalkStatus::Corrupt,
                      "malformed varint at byte " + std::to_string(in.CurrentPosition())};
    }
    return;
  }
  case kFixed64:
    if (!in.Skip(8))
      truncated("a fixed64 field");
    return;
  case kFixed32:
    if (!in.Skip(4))
      truncated("a fixed32 field");
    return;
  case kLenDelim: {
    int start = in.CurrentPosition();
    uint32_t len;
    if (!in.ReadVarint32(&len))
      truncated("a length prefix");
    if (len > static_cast<uint32_t>(INT_MAX) || !in.Skip(static_cast<int>(len))) {
      int limit = in.BytesUntilLimit();
      if (limit >= 0 && static_cast<int64_t>(len) > limit &&
          in.CurrentPosition() + limit < fileSize)
        throw WalkError{WalkStatus::Corrupt, "field " + std::to_string(tag >> 3) + " at byte " +
                                                 std::to_string(start) + " claims " +
                                                 std::to_string(len) +
                                                 " bytes, more than its enclosing message holds"};
      throw WalkError{WalkStatus::Truncated,
                      "field " + std::to_string(tag >> 3) + " at byte " + std::to_string(start) +
                          " claims " + std::to_string(len) + " bytes, but the file ends at byte " +
                          std::to_string(fileSize)};
    }
    return;
  }
  default:
    throw WalkError{WalkStatus::Corrupt, "invalid wire type " + std::to_string(tag & 7) +
                                             " at byte " + std::to_string(in.CurrentPosition())};
  }
}

/// Reads a length prefix and pushes it as a limit. Throws WalkError.
CodedInputStream::Limit pushLength(CodedInputStream &in, int fileSize) {
  int start = in.CurrentPosition();
  uint32_t len;
  if (!in.ReadVarint32(&len))
    throw WalkError{WalkStatus::Truncated,
                    "length prefix at byte " + std::to_string(start) + " is cut off"};
  int limit = in.BytesUntilLimit();
  int remaining = fileSize - in.CurrentPosition();
  if (len > static_cast<uint32_t>(INT_MAX) || static_cast<int64_t>(len) > remaining)
    throw WalkError{WalkStatus::Truncated,
                    "message at byte " + std::to_string(start) + " claims " + std::to_string(len) +
                        " bytes, but the file ends at byte " + std::to_string(fileSize)};
  if (limit >= 0 && static_cast<int64_t>(len) > limit)
    throw WalkError{WalkStatus::Corrupt, "message at byte " + std::to_string(start) + " claims " +
                                             std::to_string(len) +
                                             " bytes, more than its enclosing message holds"};
  return in.PushLimit(static_cast<int>(len));
}

void walkTensor(CodedInputStream &in, int fileSize, TensorLoc &loc) {
  while (true) {
    uint32_t tag = in.ReadTag();
    if (tag == 0)
      break;
    uint32_t field = tag >> 3, wt = tag & 7;
    TensorLoc::Field which = TensorLoc::Field::None;
    if (field == 9 && wt == kLenDelim)
      which = TensorLoc::Field::Raw;
    else if (field == 4 && wt == kLenDelim)
      which = TensorLoc::Field::Float;
    else if (field == 10 && wt == kLenDelim)
      which = TensorLoc::Field::Double;
    if (which != TensorLoc::Field::None) {
      uint32_t len;
      if (!in.ReadVarint32(&len))
        throw WalkError{WalkStatus::Truncated, "length prefix cut off"};
      int pos = in.CurrentPosition();
      if (!in.Skip(static_cast<int>(len)))
        throw WalkError{WalkStatus::Truncated, "tensor data at byte " + std::to_string(pos) +
                                                   " claims " + std::to_string(len) +
                                                   " bytes past its end"};
      if (loc.field == which) {
        ++loc.chunks;
      } else {
        loc.field = which;
        loc.chunks = 1;
      }
      loc.offset = static_cast<uint64_t>(pos);
      loc.length = len;
      continue;
    }
    if ((field == 4 && wt == kFixed32) || (field == 10 && wt == kFixed64))
      loc.unpacked = true;
    skipField(in, tag, fileSize);
  }
}

void walkGraph(CodedInputStream &in, int fileSize, std::vector<TensorLoc> &inits) {
  while (true) {
    uint32_t tag = in.ReadTag();
    if (tag == 0)
      break;
    if ((tag >> 3) == 5 && (tag & 7) == kLenDelim) {
      auto lim = pushLength(in, fileSize);
      inits.emplace_back();
      walkTensor(in, fileSize, inits.back());
      if (!in.ConsumedEntireMessage() || in.BytesUntilLimit() != 0)
        throw WalkError{WalkStatus::Corrupt,
                        "malformed initializer " + std::to_string(inits.size() - 1)};
      in.PopLimit(lim);
      continue;
    }
    skipField(in, tag, fileSize);
  }
}

/// Is (field, wire type) a field of ModelProto (onnx.proto, IR version 8)?
bool isModelField(uint32_t field, uint32_t wt) {
  switch (field) {
  case 1:
  case 5:
    return wt == kVarint; // ir_version, model_version
  case 2:
  case 3:
  case 4:
  case 6:
  case 7:
  case 8:
  case 14:
  case 20:
  case 25:
    return wt == kLenDelim;
  default:
    return false;
  }
}

/// Walks the top level of a ModelProto and collects the location of every graph
/// initializer (in order) into `inits`. With `strict`, a top-level field that
/// ModelProto does not have is an error (used to tell non-ONNX files from
/// truncated ones); without, it is skipped (fields of newer IR versions).
/// Throws WalkError.
void walkModel(const uint8_t *data, int size, std::vector<TensorLoc> &inits, int *validFields,
               bool strict) {
  CodedInputStream in(data, size);
  in.SetTotalBytesLimit(INT_MAX);
  in.SetRecursionLimit(INT_MAX);
  *validFields = 0;
  while (true) {
    int at = in.CurrentPosition();
    if (at >= size)
      break;
    uint32_t tag = in.ReadTag();
    if (tag == 0)
      throw WalkError{WalkStatus::Corrupt, "invalid field tag at byte " + std::to_string(at)};
    uint32_t field = tag >> 3, wt = tag & 7;
    if (strict && !isModelField(field, wt))
      throw WalkError{WalkStatus::Corrupt, "byte " + std::to_string(at) +
                                               " is not a field of an ONNX ModelProto (field " +
                                               std::to_string(field) + ", wire type " +
                                               std::to_string(wt) + ")"};
    if (field == 7 && wt == kLenDelim) {
      auto lim = pushLength(in, size);
      walkGraph(in, size, inits);
      if (in.BytesUntilLimit() != 0)
        throw WalkError{WalkStatus::Corrupt, "malformed graph"};
      in.PopLimit(lim);
    } else {
      skipField(in, tag, size);
    }
    ++*validFields;
  }
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

struct TensorSize {
  ElemType type = ElemType::Undefined;
  std::vector<int64_t> dims;
  uint64_t nelem = 0;
  uint64_t nbytes = 0; ///< 0 for strings
};

/// Validates type and dims of a tensor; `ctx` prefixes errors ("<file>: initializer 'w'").
TensorSize tensorSize(const onnx::TensorProto &t, const std::string &ctx) {
  TensorSize ts;
  ts.type = toElemType(t.data_type());
  if (ts.type == ElemType::Undefined)
    fail(ctx + ": unsupported or undefined data_type " + std::to_string(t.data_type()));
  ts.dims.assign(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (size_t i = 0; i < ts.dims.size(); ++i) {
    if (ts.dims[i] < 0)
      fail(ctx + ": negative dimension " + std::to_string(ts.dims[i]) + " at axis " +
           std::to_string(i) + " in dims " + dimsStr(ts.dims));
    if (__builtin_mul_overflow(n, ts.dims[i], &n))
      fail(ctx + ": the product of dims " + dimsStr(ts.dims) + " overflows int64");
  }
  ts.nelem = static_cast<uint64_t>(n);
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, elemTypeSize(ts.type), &bytes))
    fail(ctx + ": dims " + dimsStr(ts.dims) + " of " + elemTypeName(ts.type) +
         " need more than 2^63 bytes");
  ts.nbytes = static_cast<uint64_t>(bytes);
  return ts;
}

enum class DataField { None, Raw, Float, Int32, String, Int64, Double, UInt64 };

const char *dataFieldName(DataField f) {
  switch (f) {
  case DataField::None:
    return "no data field";
  case DataField::Raw:
    return "raw_data";
  case DataField::Float:
    return "float_data";
  case DataField::Int32:
    return "int32_data";
  case DataField::String:
    return "string_data";
  case DataField::Int64:
    return "int64_data";
  case DataField::Double:
    return "double_data";
  case DataField::UInt64:
    return "uint64_data";
  }
  return "?";
}

/// The typed field that holds elements of `t` (besides raw_data).
DataField typedFieldFor(ElemType t) {
  switch (t) {
  case ElemType::Float:
  case ElemType::Complex64:
    return DataField::Float;
  case ElemType::Double:
  case ElemType::Complex128:
    return DataField::Double;
  case ElemType::Int64:
    return DataField::Int64;
  case ElemType::UInt32:
  case ElemType::UInt64:
    return DataField::UInt64;
  case ElemType::String:
    return DataField::String;
  case ElemType::Undefined:
    return DataField::None;
  default:
    return DataField::Int32; // int32, int16, int8, uint16, uint8, bool, float16, bfloat16
  }
}

/// Which field holds the inline data; checks counts against dims. Throws on mismatch.
DataField checkInlineData(const onnx::TensorProto &t, const TensorSize &ts,
                          const std::string &ctx) {
  std::vector<std::pair<DataField, uint64_t>> present;
  if (t.has_raw_data())
    present.push_back({DataField::Raw, t.raw_data().size()});
  if (t.float_data_size())
    present.push_back({DataField::Float, (uint64_t)t.float_data_size()});
  if (t.int32_data_size())
    present.push_back({DataField::Int32, (uint64_t)t.int32_data_size()});
  if (t.string_data_size())
    present.push_back({DataField::String, (uint64_t)t.string_data_size()});
  if (t.int64_data_size())
    present.push_back({DataField::Int64, (uint64_t)t.int64_data_size()});
  if (t.double_data_size())
    present.push_back({DataField::Double, (uint64_t)t.double_data_size()});
  if (t.uint64_data_size())
    present.push_back({DataField::UInt64, (uint64_t)t.uint64_data_size()});
  if (present.size() > 1)
    fail(ctx + ": has both " + dataFieldName(present[0].first) + " and " +
         dataFieldName(present[1].first));
  if (present.empty()) {
    if (ts.nelem != 0)
      fail(ctx + ": has no data, but dims " + dimsStr(ts.dims) + " need " +
           std::to_string(ts.nelem) + " elements");
    return DataField::None;
  }
  auto [field, count] = present[0];
  if (field == DataField::Raw) {
    if (ts.type == ElemType::String)
      fail(ctx + ": string tensors cannot use raw_data");
    if (count != ts.nbytes)
      fail(ctx + ": raw_data has " + std::to_string(count) + " bytes, but dims " +
           dimsStr(ts.dims) + " of " + elemTypeName(ts.type) + " need " +
           std::to_string(ts.nbytes) + " bytes");
    return field;
  }
  if (field != typedFieldFor(ts.type))
    fail(ctx + ": data is in " + dataFieldName(field) + ", which cannot hold " +
         elemTypeName(ts.type) + " (expected " + dataFieldName(typedFieldFor(ts.type)) +
         " or raw_data)");
  uint64_t expect = ts.nelem;
  if (ts.type == ElemType::Complex64 || ts.type == ElemType::Complex128)
    expect *= 2;
  if (count != expect)
    fail(ctx + ": " + dataFieldName(field) + " has " + std::to_string(count) +
         " values, but dims " + dimsStr(ts.dims) + " need " + std::to_string(expect));
  return field;
}

/// Copies the inline data of `t` (already checked) into a TensorData.
std::shared_ptr<TensorData> decodeTensor(const onnx::TensorProto &t, const TensorSize &ts,
                                         DataField field) {
  auto td = std::make_shared<TensorData>();
  td->type = ts.type;
  td->dims = ts.dims;
  if (ts.type == ElemType::String) {
    td->strings.assign(t.string_data().begin(), t.string_data().end());
    return td;
  }
  td->bytes.resize(ts.nbytes);
  char *dst = td->bytes.data();
  const int64_t esz = elemTypeSize(ts.type);
  switch (field) {
  case DataField::None:
  case DataField::String:
    break;
  case DataField::Raw:
    std::memcpy(dst, t.raw_data().data(), ts.nbytes);
    break;
  case DataField::Float:
    std::memcpy(dst, t.float_data().data(), ts.nbytes);
    break;
  case DataField::Double:
    std::memcpy(dst, t.double_data().data(), ts.nbytes);
    break;
  case DataField::Int64:
    std::memcpy(dst, t.int64_data().data(), ts.nbytes);
    break;
  case DataField::UInt64:
    for (int i = 0; i < t.uint64_data_size(); ++i) {
      uint64_t v = t.uint64_data(i);
      std::memcpy(dst + i * esz, &v, esz); // little-endian: low bytes first
    }
    break;
  case DataField::Int32:
    for (int i = 0; i < t.int32_data_size(); ++i) {
      int32_t v = t.int32_data(i);
      std::memcpy(dst + i * esz, &v, esz); // little-endian: low bytes first
    }
    break;
  }
  return td;
}

//===----------------------------------------------------------------------===//
// Values and attributes
//===----------------------------------------------------------------------===//

ValueInfo toValueInfo(const std::string &name, const onnx::TypeProto &tp) {
  ValueInfo vi;
  vi.name = name;
  if (!tp.has_tensor_type())
    return vi;
  const auto &tt = tp.tensor_type();
  vi.type = toElemType(tt.elem_type());
  if (tt.has_shape()) {
    vi.hasShape = true;
    for (const auto &d : tt.shape().dim())
      vi.dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
  }
  return vi;
}

/// `ctx` makes the error prefix ("<file>: node 'n' (Op)"); called only on the rare paths that need
/// it.
Attribute toAttribute(const onnx::AttributeProto &a, const std::function<std::string()> &ctx) {
  Attribute out;
  using AP = onnx::AttributeProto;
  switch (a.type()) {
  case AP::INT:
    out.kind = Attribute::Kind::Int;
    out.i = a.i();
    break;
  case AP::FLOAT:
    out.kind = Attribute::Kind::Float;
    out.f = a.f();
    break;
  case AP::STRING:
    out.kind = Attribute::Kind::String;
    out.s = a.s();
    break;
  case AP::INTS:
    out.kind = Attribute::Kind::Ints;
    out.ints.assign(a.ints().begin(), a.ints().end());
    break;
  case AP::FLOATS:
    out.kind = Attribute::Kind::Floats;
    out.floats.assign(a.floats().begin(), a.floats().end());
    break;
  case AP::STRINGS:
    out.kind = Attribute::Kind::Strings;
    out.strings.assign(a.strings().begin(), a.strings().end());
    break;
  case AP::TENSOR: {
    out.kind = Attribute::Kind::Tensor;
    const auto &t = a.t();
    std::string tctx = ctx() + ": attribute '" + a.name() + "'";
    if (t.has_data_location() && t.data_location() == onnx::TensorProto::EXTERNAL)
      fail(tctx + ": external tensor data in attributes is not supported");
    TensorSize ts = tensorSize(t, tctx);
    DataField f = checkInlineData(t, ts, tctx);
    out.tensor = decodeTensor(t, ts, f);
    break;
  }
  case AP::GRAPH:
    out.kind = Attribute::Kind::Graph;
    out.s = a.g().name();
    break;
  default:
    out.kind = Attribute::Kind::Other;
    break;
  }
  return out;
}

/// Names a subgraph (and its nested subgraphs) reads from enclosing scopes.
void collectOuterRefs(const onnx::GraphProto &g, std::set<std::string> &refs) {
  std::unordered_set<std::string> local;
  for (const auto &v : g.input())
    local.insert(v.name());
  for (const auto &t : g.initializer())
    local.insert(t.name());
  for (const auto &n : g.node())
    for (const auto &o : n.output())
      local.insert(o);
  for (const auto &n : g.node()) {
    for (const auto &i : n.input())
      if (!i.empty() && !local.count(i))
        refs.insert(i);
    for (const auto &a : n.attribute()) {
      std::set<std::string> inner;
      if (a.has_g())
        collectOuterRefs(a.g(), inner);
      for (const auto &sg : a.graphs())
        collectOuterRefs(sg, inner);
      for (const auto &r : inner)
        if (!local.count(r))
          refs.insert(r);
    }
  }
}

/// Makes a model acceptable to the checker of libonnx 1.12 where it is stricter
/// than the ONNX spec (and newer checkers), and undoes it on destruction:
///  - it opens every external data file, but a missing external file must not fail
///    loading: external initializers are made to look like empty inline tensors;
///  - it requires a shape on every graph input and output, which the spec does not:
///    shapeless ones get an empty shape for the duration of the check;
///  - it knows IR versions up to 8 and schemas up to opset 17 (NewerOpsets.h): the IR version is
///    lowered to 8 (versions 9..11 add types, which the loader's own type checks judge), and the
///    nodes of later signatures that the frontend checks itself move to a private domain.
class CheckerCompat {
public:
  explicit CheckerCompat(onnx::ModelProto *model, int64_t opset)
      : model_(model), g_(model->mutable_graph()), irVersion_(model->ir_version()) {
    onnx::GraphProto *g = g_;
    if (irVersion_ > kCheckerIrVersion)
      model->set_ir_version(kCheckerIrVersion);
    for (auto &node : *g->mutable_node()) {
      bool checkedHere = false;
      newerOpsetProblem(node, opset, checkedHere);
      if (checkedHere) {
        hidden_.emplace_back(&node, node.domain());
        node.set_domain(kCheckedHereDomain);
      }
    }
    if (!hidden_.empty()) {
      auto *os = model->add_opset_import();
      os->set_domain(kCheckedHereDomain);
      os->set_version(1);
      addedOpset_ = true;
    }
    for (int i = 0; i < g->initializer_size(); ++i) {
      auto *t = g->mutable_initializer(i);
      if (!(t->has_data_location() && t->data_location() == onnx::TensorProto::EXTERNAL))
        continue;
      Saved s;
      s.index = i;
      s.entries.Swap(t->mutable_external_data());
      s.dims.Swap(t->mutable_dims());
      t->clear_data_location();
      t->add_dims(0); // zero elements and no data: valid for the checker, whatever its size checks
      saved_.push_back(std::move(s));
    }
    auto addShape = [&](onnx::ValueInfoProto *v) {
      if (v->type().has_tensor_type() && !v->type().tensor_type().has_shape()) {
        v->mutable_type()->mutable_tensor_type()->mutable_shape();
        shapeless_.push_back(v);
      }
    };
    for (auto &v : *g->mutable_input())
      addShape(&v);
    for (auto &v : *g->mutable_output())
      addShape(&v);
  }
  ~CheckerCompat() {
    model_->set_ir_version(irVersion_);
    for (auto &[node, domain] : hidden_)
      node->set_domain(domain);
    if (addedOpset_)
      model_->mutable_opset_import()->RemoveLast();
    for (auto &s : saved_) {
      auto *t = g_->mutable_initializer(s.index);
      t->mutable_dims()->Swap(&s.dims);
      t->mutable_external_data()->Swap(&s.entries);
      t->set_data_location(onnx::TensorProto::EXTERNAL);
    }
    for (auto *v : shapeless_)
      v->mutable_type()->mutable_tensor_type()->clear_shape();
  }
  CheckerCompat(const CheckerCompat &) = delete;
  CheckerCompat &operator=(const CheckerCompat &) = delete;

private:
  struct Saved {
    int index = 0;
    google::protobuf::RepeatedPtrField<onnx::StringStringEntryProto> entries;
    google::protobuf::RepeatedField<int64_t> dims;
  };
  onnx::ModelProto *model_;
  onnx::GraphProto *g_;
  int64_t irVersion_;
  std::vector<std::pair<onnx::NodeProto *, std::string>> hidden_;
  bool addedOpset_ = false;
  std::vector<Saved> saved_;
  std::vector<onnx::ValueInfoProto *> shapeless_;
};

bool parseU64(const std::string &s, uint64_t &v) {
  if (s.empty() || s.size() > 20)
    return false;
  v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    if (__builtin_mul_overflow(v, 10u, &v) ||
        __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v))
      return false;
  }
  return true;
}

void specialiseShape(onnx::TypeProto *tp, const std::map<std::string, int64_t> &params,
                     std::set<std::string> *used) {
  if (!tp->has_tensor_type() || !tp->tensor_type().has_shape())
    return;
  auto *shape = tp->mutable_tensor_type()->mutable_shape();
  for (int i = 0; i < shape->dim_size(); ++i) {
    auto *d = shape->mutable_dim(i);
    if (!d->has_dim_param())
      continue;
    auto it = params.find(d->dim_param());
    if (it == params.end())
      continue;
    if (used)
      used->insert(it->first);
    d->set_dim_value(it->second); // oneof: clears dim_param
  }
}

//===----------------------------------------------------------------------===//
// The loader
//===----------------------------------------------------------------------===//

/// Parses the mapped file into `model`; tells non-ONNX files from truncated ones.
void parseModel(const std::string &F, const MappedFile &file, onnx::ModelProto &model) {
  CodedInputStream cis(file.data(), file.size());
  cis.SetTotalBytesLimit(INT_MAX); // the default of old protobufs is 64 MB
  bool parsed = false;
  try {
    parsed = model.ParseFromCodedStream(&cis);
  } catch (const std::exception &) {
    parsed = false;
  }
  if (!parsed) {
    int validFields = 0; // complete top-level ModelProto fields before the failure
    std::vector<TensorLoc> ignored;
    try {
      walkModel(file.data(), file.size(), ignored, &validFields, /*strict=*/true);
    } catch (const WalkError &e) {
      if (validFields == 0)
        fail(F + ": not an ONNX model (protobuf parse failed: " + e.detail + ")");
      if (e.status == WalkStatus::Truncated)
        fail(F + ": truncated or corrupt ONNX file (" + e.detail + ")");
      fail(F + ": corrupt ONNX file (protobuf parse failed: " + e.detail + ")");
    }
    fail(F + ": corrupt ONNX file (protobuf parse failed)");
  }
  if (!model.has_graph()) {
    if (model.ir_version() == 0)
      fail(F + ": not an ONNX model (protobuf parse found no ir_version and no graph)");
    fail(F + ": graph: the model has no graph");
  }
  if (model.ir_version() <= 0)
    fail(F + ": ir_version: missing (not an ONNX model?)");
  if (model.graph().node_size() == 0)
    fail(F + ": graph: has no nodes");
  if (model.graph().sparse_initializer_size() > 0)
    fail(F + ": graph.sparse_initializer: sparse initializers are not supported (tensor '" +
         model.graph().sparse_initializer(0).values().name() + "')");
}

/// Fills the opset fields of `out`; the default domain must be in kMinOpset..kMaxOpset.
void readOpsets(const std::string &F, const onnx::ModelProto &model, Graph &out) {
  const std::string supported =
      "(supported: " + std::to_string(kMinOpset) + ".." + std::to_string(kMaxOpset) + ")";
  bool haveDefault = false;
  for (const auto &os : model.opset_import()) {
    std::string dom = os.domain() == "ai.onnx" ? "" : os.domain();
    out.opsetImports[dom] = os.version();
    if (dom.empty()) {
      haveDefault = true;
      out.opset = os.version();
    }
  }
  if (!haveDefault)
    fail(F + ": opset_import: no opset for the default ONNX domain " + supported);
  if (out.opset < kMinOpset || out.opset > kMaxOpset)
    fail(F + ": opset_import: default-domain opset " + std::to_string(out.opset) +
         " is not supported " + supported);
  // onnxruntime's contrib domain: com.microsoft.MoE exists in version 1 only.
  auto ms = out.opsetImports.find("com.microsoft");
  if (ms != out.opsetImports.end() && ms->second != 1)
    fail(F + ": opset_import: com.microsoft opset " + std::to_string(ms->second) +
         " is not supported (supported: 1, the version of com.microsoft.MoE)");
}

/// An externally stored initializer: validates the external_data entries.
void convertExternal(const onnx::TensorProto &t, const TensorSize &ts, const std::string &ctx,
                     const std::filesystem::path &modelDir, Initializer &init) {
  if (ts.type == ElemType::String)
    fail(ctx + ": string tensors cannot be stored externally");
  if (t.has_raw_data() || t.float_data_size() || t.int32_data_size() || t.int64_data_size() ||
      t.double_data_size() || t.uint64_data_size() || t.string_data_size())
    fail(ctx + ": is stored externally but also has inline data");
  std::string location;
  bool haveLength = false;
  uint64_t offset = 0, length = 0;
  for (const auto &e : t.external_data()) {
    if (e.key() == "location") {
      location = e.value();
    } else if (e.key() == "offset") {
      if (!parseU64(e.value(), offset))
        fail(ctx + ": external_data offset '" + e.value() + "' is not a non-negative integer");
    } else if (e.key() == "length") {
      if (!parseU64(e.value(), length))
        fail(ctx + ": external_data length '" + e.value() + "' is not a non-negative integer");
      haveLength = true;
    }
  }
  if (location.empty())
    fail(ctx + ": is stored externally but has no location");
  std::filesystem::path loc(location);
  if (loc.is_absolute())
    fail(ctx + ": external_data location '" + location +
         "' must be relative to the model's directory");
  for (const auto &part : loc)
    if (part == "..")
      fail(ctx + ": external_data location '" + location +
           "' points outside the model's directory");
  if (haveLength && length != ts.nbytes)
    fail(ctx + ": external_data length is " + std::to_string(length) + " bytes, but dims " +
         dimsStr(ts.dims) + " of " + elemTypeName(ts.type) + " need " + std::to_string(ts.nbytes) +
         " bytes");
  uint64_t end;
  if (__builtin_add_overflow(offset, ts.nbytes, &end))
    fail(ctx + ": external_data offset " + std::to_string(offset) + " + length overflows");
  init.external = true;
  init.file = (modelDir / loc).string();
  init.offset = offset;
  init.length = ts.nbytes;
  init.hasFileRange = true;
}

/// An inline initializer: checks its data against its dims, finds its bytes in the file.
void convertInline(const onnx::TensorProto &t, const TensorSize &ts, const std::string &ctx,
                   const std::string &path, const TensorLoc &loc, bool keepBytes,
                   Initializer &init) {
  DataField field = checkInlineData(t, ts, ctx);
  init.file = path;
  bool contiguous = false;
  if (field == DataField::None) {
    contiguous = true; // zero elements
  } else if (field == DataField::Raw && loc.field == TensorLoc::Field::Raw) {
    contiguous = true;
  } else if (field == DataField::Float && loc.field == TensorLoc::Field::Float && loc.chunks == 1 &&
             !loc.unpacked) {
    contiguous = true;
  } else if (field == DataField::Double && loc.field == TensorLoc::Field::Double &&
             loc.chunks == 1 && !loc.unpacked) {
    contiguous = true;
  }
  if (contiguous && field != DataField::None) {
    if (loc.length != ts.nbytes)
      fail(ctx + ": data in the file is " + std::to_string(loc.length) + " bytes, but dims " +
           dimsStr(ts.dims) + " of " + elemTypeName(ts.type) + " need " +
           std::to_string(ts.nbytes) + " bytes");
    init.offset = loc.offset;
  }
  init.length = ts.nbytes;
  init.hasFileRange = contiguous;
  if (ts.nbytes <= kSmallTensorBytes || !contiguous ||
      (keepBytes && ts.nbytes <= kRotaryCacheBytes))
    init.data = decodeTensor(t, ts, field);
}

/// The initializers whose values the compiler must read although they are large: the cos/sin
/// caches of RotaryEmbedding (com.microsoft: inputs 2, 3; opset 23: inputs 1, 2) and of
/// com.microsoft.GroupQueryAttention (inputs 7, 8), which the normalize patterns check to be
/// plain RoPE's tables (onnxruntime's docs/ContribOperators.md; onnx/docs/Operators.md).
std::unordered_set<std::string> rotaryCacheNames(const onnx::GraphProto &g) {
  std::unordered_set<std::string> out;
  for (const auto &node : g.node()) {
    const bool ms = node.domain() == "com.microsoft";
    const bool onnxDomain = node.domain().empty() || node.domain() == "ai.onnx";
    std::vector<int> inputs;
    if (node.op_type() == "RotaryEmbedding" && ms)
      inputs = {2, 3};
    else if (node.op_type() == "RotaryEmbedding" && onnxDomain)
      inputs = {1, 2};
    else if (node.op_type() == "GroupQueryAttention" && ms)
      inputs = {7, 8};
    for (int i : inputs)
      if (i < node.input_size() && !node.input(i).empty())
        out.insert(node.input(i));
  }
  return out;
}

/// Validates every initializer and locates its data (inline: in the .onnx file,
/// found by walking its wire format; external: from external_data).
std::vector<Initializer> convertInitializers(const std::string &F, const MappedFile &file,
                                             const onnx::GraphProto &g) {
  std::vector<TensorLoc> locs;
  {
    int validFields = 0;
    try {
      walkModel(file.data(), file.size(), locs, &validFields, /*strict=*/false);
    } catch (const WalkError &e) {
      fail(F + ": corrupt ONNX file (" + e.detail + ")");
    }
  }
  if (static_cast<int>(locs.size()) != g.initializer_size())
    fail(F + ": graph.initializer: found " + std::to_string(locs.size()) +
         " initializers in the wire format but " + std::to_string(g.initializer_size()) +
         " after parsing");

  const std::filesystem::path modelDir = std::filesystem::path(F).parent_path();
  const std::unordered_set<std::string> keepBytes = rotaryCacheNames(g);
  std::unordered_set<std::string> names;
  std::vector<Initializer> inits;
  inits.reserve(g.initializer_size());
  for (int i = 0; i < g.initializer_size(); ++i) {
    const onnx::TensorProto &t = g.initializer(i);
    std::string ctx = F + ": initializer '" + t.name() + "'";
    if (t.name().empty())
      fail(F + ": initializer #" + std::to_string(i) + ": has no name");
    if (!names.insert(t.name()).second)
      fail(ctx + ": defined twice");
    TensorSize ts = tensorSize(t, ctx);
    Initializer init;
    init.info.name = t.name();
    init.info.type = ts.type;
    init.info.dims = ts.dims;
    init.info.hasShape = true;
    if (t.has_data_location() && t.data_location() == onnx::TensorProto::EXTERNAL)
      convertExternal(t, ts, ctx, modelDir, init);
    else
      convertInline(t, ts, ctx, F, locs[i], keepBytes.count(t.name()) > 0, init);
    inits.push_back(std::move(init));
  }
  return inits;
}

/// Checks that every value has one producer and every use a producer, and that
/// the graph is acyclic; returns a topological order of node indices (Kahn's
/// algorithm, smallest file index first, so a sorted file keeps its order).
std::vector<int> topologicalOrder(const std::string &F, const onnx::GraphProto &g) {
  const int numNodes = g.node_size();
  // Keys view the names inside `g`, which outlives this function and is not modified here.
  std::unordered_map<std::string_view, int>
      producer; // value -> node index; -1 graph input / initializer
  producer.reserve(static_cast<size_t>(g.initializer_size() + g.input_size()) +
                   2 * static_cast<size_t>(numNodes));
  std::unordered_set<std::string_view> graphInputNames;
  for (const auto &t : g.initializer())
    producer[t.name()] = -1;
  for (const auto &in : g.input()) {
    if (in.name().empty())
      fail(F + ": graph.input: an input has no name");
    if (!graphInputNames.insert(in.name()).second)
      fail(F + ": graph input '" + in.name() + "': listed twice");
    producer[in.name()] = -1;
  }
  for (int n = 0; n < numNodes; ++n) {
    const auto &node = g.node(n);
    for (const auto &o : node.output()) {
      if (o.empty())
        continue;
      auto [it, inserted] = producer.emplace(o, n);
      if (!inserted) {
        if (it->second < 0)
          fail(F + ": " + nodeRef(node, n) + ": output '" + o +
               "' redefines a graph input or initializer");
        fail(F + ": " + nodeRef(node, n) + ": output '" + o + "' is also produced by " +
             nodeRef(g.node(it->second), it->second) + " (values must have one producer)");
      }
    }
  }
  // Edges in compressed rows: the distinct producer nodes of node n, ascending, are
  // preds[predStart[n] .. predStart[n + 1]).
  std::vector<int> predStart(static_cast<size_t>(numNodes) + 1, 0), preds;
  preds.reserve(2 * static_cast<size_t>(numNodes));
  std::vector<int> from;
  for (int n = 0; n < numNodes; ++n) {
    const auto &node = g.node(n);
    from.clear();
    for (const auto &i : node.input())
      if (!i.empty()) {
        auto it = producer.find(i);
        if (it == producer.end())
          fail(F + ": " + nodeRef(node, n) + ": input '" + i +
               "' is not produced by any node, initializer or graph input");
        if (it->second >= 0)
          from.push_back(it->second);
      }
    for (const auto &a : node.attribute()) {
      if (!a.has_g() && a.graphs_size() == 0)
        continue;
      std::set<std::string> refs;
      if (a.has_g())
        collectOuterRefs(a.g(), refs);
      for (const auto &sg : a.graphs())
        collectOuterRefs(sg, refs);
      for (const auto &r : refs) {
        auto it = producer.find(r);
        if (it == producer.end())
          fail(F + ": " + nodeRef(node, n) + ": subgraph attribute '" + a.name() + "' reads '" + r +
               "', which is not produced by any node, initializer or graph input");
        if (it->second >= 0)
          from.push_back(it->second);
      }
    }
    std::sort(from.begin(), from.end());
    from.erase(std::unique(from.begin(), from.end()), from.end());
    preds.insert(preds.end(), from.begin(), from.end());
    predStart[n + 1] = static_cast<int>(preds.size());
  }
  for (const auto &o : g.output())
    if (!producer.count(o.name()))
      fail(F + ": graph output '" + o.name() +
           "': not produced by any node, initializer or graph input");

  // users[userStart[p] .. userStart[p + 1]) are the nodes that read node p, ascending.
  std::vector<int> userStart(static_cast<size_t>(numNodes) + 1, 0), users(preds.size());
  for (int p : preds)
    ++userStart[p + 1];
  for (int n = 0; n < numNodes; ++n)
    userStart[n + 1] += userStart[n];
  {
    std::vector<int> fillAt(userStart.begin(), userStart.end() - 1);
    for (int n = 0; n < numNodes; ++n)
      for (int k = predStart[n]; k < predStart[n + 1]; ++k)
        users[fillAt[preds[k]]++] = n;
  }
  std::vector<int> pending(numNodes);
  for (int n = 0; n < numNodes; ++n)
    pending[n] = predStart[n + 1] - predStart[n];

  std::vector<int> order;
  order.reserve(numNodes);
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int n = 0; n < numNodes; ++n)
    if (pending[n] == 0)
      ready.push(n);
  while (!ready.empty()) {
    int n = ready.top();
    ready.pop();
    order.push_back(n);
    for (int k = userStart[n]; k < userStart[n + 1]; ++k)
      if (--pending[users[k]] == 0)
        ready.push(users[k]);
  }
  if (static_cast<int>(order.size()) != numNodes) {
    // Find one cycle among the nodes left: walk predecessors that are also left.
    int start = -1;
    for (int n = 0; n < numNodes && start < 0; ++n)
      if (pending[n] > 0)
        start = n;
    std::vector<int> pos(numNodes, -1), path;
    int cur = start;
    while (pos[cur] < 0) {
      pos[cur] = static_cast<int>(path.size());
      path.push_back(cur);
      int next = -1;
      for (int k = predStart[cur]; k < predStart[cur + 1]; ++k)
        if (pending[preds[k]] > 0) {
          next = preds[k];
          break;
        }
      cur = next;
    }
    // path[k + 1] feeds path[k], and cur (= path[pos[cur]]) feeds path.back().
    std::string cyc = "'" + nodeLabel(g.node(cur), cur) + "'";
    for (size_t k = path.size(); k-- > static_cast<size_t>(pos[cur]);)
      cyc += " -> '" + nodeLabel(g.node(path[k]), path[k]) + "'";
    fail(F + ": " + nodeRef(g.node(cur), cur) + ": is on a cycle: " + cyc +
         " (the graph must be acyclic)");
  }
  return order;
}

/// Reorders g's nodes as `order` says (the checker and shape inference need topological order).
/// Rewrites a Constant's value_float / value_floats / value_int / value_ints (opset 12; what
/// onnxscript functions write, e.g. an epsilon taken from an attribute) into the `value` tensor
/// every later stage reads: float32 or int64, a scalar or a 1-D tensor (onnx/docs/Operators.md,
/// Constant).
void constantAttributesAsTensors(onnx::GraphProto *g) {
  for (auto &node : *g->mutable_node()) {
    if (node.op_type() != "Constant" || !(node.domain().empty() || node.domain() == "ai.onnx") ||
        node.attribute_size() != 1)
      continue;
    const onnx::AttributeProto a = node.attribute(0);
    onnx::TensorProto t;
    if (a.name() == "value_float") {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_float_data(a.f());
    } else if (a.name() == "value_floats") {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_dims(a.floats_size());
      *t.mutable_float_data() = a.floats();
    } else if (a.name() == "value_int") {
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_int64_data(a.i());
    } else if (a.name() == "value_ints") {
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_dims(a.ints_size());
      *t.mutable_int64_data() = a.ints();
    } else {
      continue;
    }
    onnx::AttributeProto *value = node.mutable_attribute(0);
    value->Clear();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    *value->mutable_t() = std::move(t);
  }
}

void reorderNodes(onnx::GraphProto *g, const std::vector<int> &order) {
  // In place, by swapping element pointers (the nodes may live on an arena).
  const int n = static_cast<int>(order.size());
  std::vector<int> pos(n), at(n); // position of original node i; original node at position p
  for (int i = 0; i < n; ++i)
    pos[i] = at[i] = i;
  auto *nodes = g->mutable_node();
  for (int k = 0; k < n; ++k) {
    const int want = order[k], cur = pos[want];
    if (cur == k)
      continue;
    nodes->SwapElements(k, cur);
    const int displaced = at[k];
    at[cur] = displaced;
    pos[displaced] = cur;
    at[k] = want;
    pos[want] = k;
  }
}

/// Without LoadOptions::tokenIdsInput, the token ids are the runtime input named input_ids (Hugging
/// Face's name) wherever it is, else the one runtime input that is no input a plan binds
/// (attention_mask, position_ids, past_key_values.*; InputBinding.h); that input is moved to the
/// front of the graph's inputs, where every later step takes it. Refuses, naming the inputs, a
/// graph where neither rule finds exactly one.
void placeTokenIdsFirst(const std::string &F, const LoadOptions &opts, onnx::GraphProto *g,
                        const std::vector<int> &runtimeInputs) {
  if (!opts.tokenIdsInput.empty() || runtimeInputs.size() < 2)
    return;
  int tok = -1;
  for (int i : runtimeInputs)
    if (g->input(i).name() == "input_ids")
      tok = i;
  if (tok < 0) {
    std::vector<int> candidates;
    for (int i : runtimeInputs) {
      const std::string &n = g->input(i).name();
      if (n != "attention_mask" && n != "position_ids" && n.rfind("past_key_values.", 0) != 0)
        candidates.push_back(i);
    }
    if (candidates.size() != 1) {
      std::string names;
      for (int i : runtimeInputs)
        names += (names.empty() ? "'" : ", '") + g->input(i).name() + "'";
      fail(F + ": graph.input: cannot tell which of the inputs " + names +
           " holds the token ids: none is named input_ids, and " +
           std::to_string(candidates.size()) +
           " are not attention_mask, position_ids or past_key_values.* (name the token input "
           "input_ids)");
    }
    tok = candidates.front();
  }
  if (tok != runtimeInputs.front())
    g->mutable_input()->SwapElements(runtimeInputs.front(), tok);
}

/// The token-id input must be an int64 or int32 tensor.
void checkTokenIds(const std::string &F, const LoadOptions &opts, const onnx::GraphProto &g,
                   const std::vector<int> &runtimeInputs) {
  int tok = -1;
  if (opts.tokenIdsInput.empty()) {
    if (runtimeInputs.empty())
      fail(F + ": graph.input: the graph has no runtime input (expected token ids)");
    tok = runtimeInputs.front();
  } else {
    for (int i : runtimeInputs)
      if (g.input(i).name() == opts.tokenIdsInput)
        tok = i;
    if (tok < 0)
      fail(F + ": graph.input: no runtime input named '" + opts.tokenIdsInput +
           "' (the token-id input)");
  }
  const auto &in = g.input(tok);
  ElemType et = in.type().has_tensor_type() ? toElemType(in.type().tensor_type().elem_type())
                                            : ElemType::Undefined;
  if (et != ElemType::Int64 && et != ElemType::Int32)
    fail(F + ": graph input '" + in.name() + "': the token-id input must be int64 or int32, not " +
         (in.type().has_tensor_type() ? elemTypeName(et) : "a non-tensor type"));
}

/// Applies LoadOptions::dimParams and inputShapeOverride to the graph's declared types.
void specialiseDims(const std::string &F, const LoadOptions &opts, onnx::GraphProto *g,
                    const std::vector<int> &runtimeInputs, std::vector<std::string> &warnings) {
  for (const auto &[k, v] : opts.dimParams)
    if (v < 1)
      fail(F + ": dimParams: '" + k + "' = " + std::to_string(v) + " must be >= 1");
  for (int64_t d : opts.inputShapeOverride)
    if (d < 1)
      fail(F + ": inputShapeOverride: " + dimsStr(opts.inputShapeOverride) + " has a dim < 1");
  if (!opts.dimParams.empty()) {
    std::set<std::string> used;
    for (int i : runtimeInputs)
      specialiseShape(g->mutable_input(i)->mutable_type(), opts.dimParams, &used);
    for (auto &o : *g->mutable_output())
      specialiseShape(o.mutable_type(), opts.dimParams, nullptr);
    for (auto &v : *g->mutable_value_info())
      specialiseShape(v.mutable_type(), opts.dimParams, nullptr);
    for (const auto &kv : opts.dimParams)
      if (!used.count(kv.first))
        warnings.push_back(F + ": dimParams: no graph input has a dimension named '" + kv.first +
                           "'");
  }
  if (!opts.inputShapeOverride.empty()) {
    if (runtimeInputs.empty())
      fail(F + ": inputShapeOverride: the graph has no runtime input");
    auto *in = g->mutable_input(runtimeInputs.front());
    if (!in->type().has_tensor_type())
      fail(F + ": graph input '" + in->name() +
           "': inputShapeOverride given, but the input is not a tensor");
    auto *shape = in->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : opts.inputShapeOverride)
      shape->add_dim()->set_dim_value(d);
  }
}

/// Refuses, all in one line, every node the frontend does not import at the model's opset
/// (NewerOpsets.h); `order` maps the graph's node positions to the file's (for unnamed nodes).
void checkNewerOpsetNodes(const std::string &F, const onnx::GraphProto &g, int64_t opset,
                          const std::vector<int> &order) {
  std::vector<std::string> problems;
  for (int k = 0; k < g.node_size(); ++k) {
    bool checkedHere = false;
    std::string why = newerOpsetProblem(g.node(k), opset, checkedHere);
    if (!why.empty())
      problems.push_back(nodeRef(g.node(k), order[k]) + ": " + why);
  }
  if (problems.empty())
    return;
  std::string msg = F + ": opset " + std::to_string(opset) + ": " +
                    std::to_string(problems.size()) + (problems.size() == 1 ? " node" : " nodes") +
                    " not imported: ";
  for (size_t i = 0; i < problems.size(); ++i)
    msg += (i ? "; " : "") + problems[i];
  fail(msg);
}

void runChecker(const std::string &F, onnx::ModelProto &model, int64_t opset) {
  try {
    CheckerCompat compat(&model, opset);
    onnx::checker::check_model(model);
  } catch (const onnx::checker::ValidationError &e) {
    fail(F + ": onnx checker: " + oneLine(e.what()));
  } catch (const std::exception &e) {
    fail(F + ": onnx checker: " + oneLine(e.what()));
  }
}

/// ONNX shape inference, with data propagation (so shapes computed by
/// Shape/Gather/Concat chains become static); without it if that throws.
void inferShapes(const std::string &F, onnx::ModelProto &model,
                 std::vector<std::string> &warnings) {
  std::string firstError;
  for (bool dataProp : {true, false}) {
    try {
      onnx::ShapeInferenceOptions so(/*check_type=*/false, /*error_mode=*/0,
                                     /*data_prop=*/dataProp);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), so);
      if (!firstError.empty())
        warnings.push_back(F + ": shape inference with data propagation failed (" + firstError +
                           "); inferred without it");
      return;
    } catch (const std::exception &e) {
      if (firstError.empty())
        firstError = oneLine(e.what());
    }
  }
  fail(F + ": shape inference: " + firstError);
}

/// Fills valueInfo, inputs, outputs and nodes of `out` from the (sorted, inferred) graph.
void fillGraph(const std::string &F, const onnx::GraphProto &g, const std::vector<int> &order,
               const std::vector<int> &runtimeInputs, Graph &out) {
  size_t numValues = static_cast<size_t>(g.input_size() + g.output_size() + g.value_info_size()) +
                     out.initializers.size();
  for (const auto &node : g.node())
    numValues += static_cast<size_t>(node.output_size());
  out.valueInfo.reserve(numValues);
  for (const auto &in : g.input())
    out.valueInfo[in.name()] = toValueInfo(in.name(), in.type());
  for (const auto &v : g.value_info())
    out.valueInfo[v.name()] = toValueInfo(v.name(), v.type());
  for (const auto &o : g.output())
    out.valueInfo[o.name()] = toValueInfo(o.name(), o.type());
  for (const auto &init : out.initializers)
    out.valueInfo[init.info.name] = init.info;
  for (const auto &node : g.node())
    for (const auto &o : node.output())
      if (!o.empty()) {
        auto [it, inserted] = out.valueInfo.try_emplace(o);
        if (inserted)
          it->second.name = o;
      }
  for (int i : runtimeInputs)
    out.inputs.push_back(out.valueInfo.at(g.input(i).name()));
  for (const auto &o : g.output())
    out.outputs.push_back(out.valueInfo.at(o.name()));

  out.nodes.resize(static_cast<size_t>(g.node_size()));
  for (int k = 0; k < g.node_size(); ++k) {
    const onnx::NodeProto &node = g.node(k); // already in topological order
    const int fileIndex = order[k];
    Node &n = out.nodes[static_cast<size_t>(k)];
    n.name = nodeLabel(node, fileIndex);
    n.opType = node.op_type();
    if (node.domain() != "ai.onnx")
      n.domain = node.domain();
    n.inputs.assign(node.input().begin(), node.input().end());
    n.outputs.assign(node.output().begin(), node.output().end());
    n.attributes.reserve(static_cast<size_t>(node.attribute_size()));
    for (const auto &a : node.attribute())
      n.attributes.emplace_back(
          a.name(), toAttribute(a, [&] { return F + ": " + nodeRef(node, fileIndex); }));
  }
}

/// Seconds since `start`, and restarts it.
double lap(std::chrono::steady_clock::time_point &start) {
  auto now = std::chrono::steady_clock::now();
  double s = std::chrono::duration<double>(now - start).count();
  start = now;
  return s;
}

void load(const std::string &path, const LoadOptions &opts, Graph &out,
          std::vector<std::string> &warnings, std::vector<std::pair<std::string, double>> &phases) {
  const std::string &F = path; // every error starts with the file
  out = Graph();
  out.path = path;
  auto clock = std::chrono::steady_clock::now();

  MappedFile file(path);
  // The parsed model lives on an arena: one allocation per block instead of one per message, and
  // nothing to free message by message afterwards.
  google::protobuf::ArenaOptions arenaOptions;
  arenaOptions.start_block_size = 1 << 20;
  arenaOptions.max_block_size = 16 << 20;
  google::protobuf::Arena arena(arenaOptions);
  onnx::ModelProto &model = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  parseModel(F, file, model);
  out.irVersion = model.ir_version();
  out.producerName = model.producer_name();
  out.producerVersion = model.producer_version();
  readOpsets(F, model, out);
  if (std::string err = inlineLocalFunctions(model); !err.empty())
    fail(F + ": " + err);
  readOpsets(F, model, out); // inlining may add the functions' other domains
  phases.emplace_back("parse", lap(clock));

  onnx::GraphProto *g = model.mutable_graph();
  out.initializers = convertInitializers(F, file, *g);
  phases.emplace_back("initializers", lap(clock));
  std::vector<int> order = topologicalOrder(F, *g);

  std::unordered_set<std::string_view> initNames;
  initNames.reserve(out.initializers.size());
  for (const auto &init : out.initializers)
    initNames.insert(init.info.name);
  std::vector<int> runtimeInputs; // indices into g->input() of the inputs that are not initializers
  for (int i = 0; i < g->input_size(); ++i)
    if (!initNames.count(g->input(i).name()))
      runtimeInputs.push_back(i);
  placeTokenIdsFirst(F, opts, g, runtimeInputs);
  for (int i : runtimeInputs)
    out.declaredInputs.push_back(toValueInfo(g->input(i).name(), g->input(i).type()));
  if (opts.checkTokenIds)
    checkTokenIds(F, opts, *g, runtimeInputs);
  specialiseDims(F, opts, g, runtimeInputs, warnings);

  reorderNodes(g, order);
  constantAttributesAsTensors(g);
  checkNewerOpsetNodes(F, *g, out.opset, order);
  phases.emplace_back("graph checks", lap(clock));
  runChecker(F, model, out.opset);
  phases.emplace_back("onnx checker", lap(clock));

  if (opts.resolveInputShape) {
    if (runtimeInputs.empty())
      fail(F + ": graph.input: the graph has no runtime input");
    auto *in = g->mutable_input(runtimeInputs.front());
    std::vector<int64_t> dims;
    std::string error;
    if (!opts.resolveInputShape(toValueInfo(in->name(), in->type()), dims, error))
      fail(error);
    for (int64_t d : dims)
      if (d < 1)
        fail(F + ": graph input '" + in->name() + "': resolved dims " + dimsStr(dims) +
             " have a dim < 1");
    if (!in->type().has_tensor_type())
      fail(F + ": graph input '" + in->name() +
           "': a shape was given, but the input is not a tensor");
    auto *shape = in->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
  }

  // Inputs bound to constants: typed with the value's dims (so inference sees them static), and
  // no longer runtime inputs.
  std::vector<std::pair<int, std::shared_ptr<TensorData>>> bound;
  if (opts.bindInput && runtimeInputs.size() > 1) {
    std::vector<int64_t> tokenDims;
    if (opts.resolveInputShape)
      for (const auto &d : g->input(runtimeInputs.front()).type().tensor_type().shape().dim())
        tokenDims.push_back(d.dim_value());
    std::vector<int> kept{runtimeInputs.front()};
    for (size_t k = 1; k < runtimeInputs.size(); ++k) {
      auto *in = g->mutable_input(runtimeInputs[k]);
      const ValueInfo declared = toValueInfo(in->name(), in->type());
      auto value = std::make_shared<TensorData>();
      std::string error;
      if (!opts.bindInput(declared, tokenDims, *value, error))
        fail(error);
      const std::string what = F + ": graph input '" + in->name() + "': ";
      if (value->type != declared.type)
        fail(what + "bound to a " + elemTypeName(value->type) + " value, but it is declared " +
             elemTypeName(declared.type));
      bool admits = declared.hasShape && declared.dims.size() == value->dims.size();
      for (size_t i = 0; admits && i < value->dims.size(); ++i)
        admits = declared.dims[i] < 0 || declared.dims[i] == value->dims[i];
      if (!admits)
        fail(what + "bound to a value of dims " + dimsStr(value->dims) +
             ", which its declared dims do not admit");
      int64_t count = 1;
      for (int64_t d : value->dims)
        count *= d;
      if (static_cast<int64_t>(value->bytes.size()) != count * elemTypeSize(value->type))
        fail(what + "the bound value's bytes do not match its dims " + dimsStr(value->dims));
      auto *shape = in->mutable_type()->mutable_tensor_type()->mutable_shape();
      shape->clear_dim();
      for (int64_t d : value->dims)
        shape->add_dim()->set_dim_value(d);
      bound.emplace_back(runtimeInputs[k], std::move(value));
    }
    runtimeInputs = std::move(kept);
  }

  const ShapeInference engine = opts.inferShapes ? opts.shapeInference : ShapeInference::None;
  if (engine == ShapeInference::Onnx) {
    inferShapes(F, model, warnings);
    phases.emplace_back("shape inference", lap(clock));
  }
  fillGraph(F, *g, order, runtimeInputs, out);
  for (auto &[index, value] : bound)
    out.boundInputs.push_back({out.valueInfo.at(g->input(index).name()), std::move(value)});
  phases.emplace_back("fill", lap(clock));
  if (engine == ShapeInference::Static) {
    propagateStaticShapes(out);
    for (auto &o : out.outputs)
      o = out.valueInfo.at(o.name);
    phases.emplace_back("shape inference", lap(clock));
  }
}

} // namespace

LoadResult loadOnnxModel(const std::string &path, const LoadOptions &opts, Graph &out) noexcept {
  LoadResult r;
  try {
    load(path, opts, out, r.warnings, r.phases);
    r.ok = true;
  } catch (const LoadFailure &f) {
    r.ok = false;
    r.error = f.msg;
  } catch (const std::bad_alloc &) {
    r.ok = false;
    r.error = path + ": out of memory while loading";
  } catch (const std::exception &e) {
    r.ok = false;
    r.error = path + ": " + oneLine(e.what());
  } catch (...) {
    r.ok = false;
    r.error = path + ": unknown error while loading";
  }
  return r;
}

} // namespace disagmoe::onnxfe
