// .npy format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// magic "\x93NUMPY", major, minor, header length (uint16 LE for 1.x, uint32 LE for 2.x), then an
// ASCII Python dict literal with 'descr', 'fortran_order' and 'shape', padded with spaces and '\n'.
// Element bytes are copied as they are, so the host must be little-endian (x86-64, AArch64).
#include "runtime/io/Npy.h"
#include "runtime/io/FileKind.h"

#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace disagmoe {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw NpyError(path + ": " + what);
}

// Returns the text after `key` in the header dict (e.g. after "'descr':"), or fails.
size_t findValue(const std::string &path, const std::string &dict, const std::string &key) {
  size_t at = dict.find("'" + key + "'");
  if (at == std::string::npos)
    fail(path, "header has no '" + key + "' entry");
  at = dict.find(':', at);
  if (at == std::string::npos)
    fail(path, "malformed header entry '" + key + "'");
  ++at;
  while (at < dict.size() && dict[at] == ' ')
    ++at;
  return at;
}

NpyHeader parseDict(const std::string &path, const std::string &dict) {
  NpyHeader header;
  size_t at = findValue(path, dict, "descr");
  if (at >= dict.size() || (dict[at] != '\'' && dict[at] != '"'))
    fail(path, "malformed 'descr'");
  size_t end = dict.find(dict[at], at + 1);
  if (end == std::string::npos)
    fail(path, "malformed 'descr'");
  std::string descr = dict.substr(at + 1, end - at - 1);
  if (descr == "<f4")
    header.dtype = NpyDtype::Float32;
  else if (descr == "<i8")
    header.dtype = NpyDtype::Int64;
  else if (descr == "<i4")
    header.dtype = NpyDtype::Int32;
  else
    fail(path, "unsupported dtype '" + descr + "' (supported: <f4, <i8, <i4)");

  at = findValue(path, dict, "fortran_order");
  if (dict.compare(at, 4, "True") == 0)
    fail(path, "Fortran-ordered arrays are not supported");
  if (dict.compare(at, 5, "False") != 0)
    fail(path, "malformed 'fortran_order'");

  at = findValue(path, dict, "shape");
  if (at >= dict.size() || dict[at] != '(')
    fail(path, "malformed 'shape'");
  end = dict.find(')', at);
  if (end == std::string::npos)
    fail(path, "malformed 'shape'");
  std::string dims = dict.substr(at + 1, end - at - 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    while (pos < dims.size() && (dims[pos] == ' ' || dims[pos] == ','))
      ++pos;
    if (pos >= dims.size())
      break;
    size_t used = 0;
    long long d = 0;
    try {
      d = std::stoll(dims.substr(pos), &used);
    } catch (const std::exception &) {
      fail(path, "malformed 'shape' (" + dims + ")");
    }
    if (d < 0)
      fail(path, "negative dimension in 'shape'");
    header.shape.push_back(d);
    pos += used;
  }
  return header;
}

std::string tempPathFor(const std::string &path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

void writeNpy(const std::string &path, NpyDtype dtype, const std::vector<int64_t> &shape,
              const void *data, size_t bytes) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i)
    dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1)
    dims += ","; // a Python 1-tuple
  std::string dict = std::string("{'descr': '") + npyDescr(dtype) +
                     "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Pad so that the data starts on a 64-byte boundary, as NumPy does.
  size_t unpadded = kMagicLen + 2 + 2 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  if (dict.size() > 0xffff)
    fail(path, "header too long for format 1.0");

  // The temporary file is renamed over `path`, which would silently replace a device, a FIFO or a
  // symbolic link (and its target would never be written): refuse anything but a regular file.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    fail(path,
         "refusing to replace it: not a regular file (a device, FIFO, directory or symbolic link)");
  std::string tmp = tempPathFor(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      fail(path, std::string("cannot create temporary file ") + tmp + ": " + std::strerror(errno));
    const unsigned char version[2] = {1, 0};
    const unsigned char len[2] = {static_cast<unsigned char>(dict.size() & 0xff),
                                  static_cast<unsigned char>(dict.size() >> 8)};
    out.write(kMagic, kMagicLen);
    out.write(reinterpret_cast<const char *>(version), 2);
    out.write(reinterpret_cast<const char *>(len), 2);
    out.write(dict.data(), static_cast<std::streamsize>(dict.size()));
    out.write(static_cast<const char *>(data), static_cast<std::streamsize>(bytes));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      fail(path, "write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    fail(path, std::string("cannot rename temporary file into place: ") + std::strerror(err));
  }
}

// Reads the header and the data bytes of `path`.
std::vector<char> readData(const std::string &path, NpyHeader &header) {
  header = readNpyHeader(path);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  in.seekg(static_cast<std::streamoff>(header.dataOffset));
  std::vector<char> bytes(header.dataBytes);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<uint64_t>(in.gcount()) != header.dataBytes)
    fail(path, "file is shorter than its shape says");
  return bytes;
}

} // namespace

const char *npyDescr(NpyDtype dtype) {
  switch (dtype) {
  case NpyDtype::Float32:
    return "<f4";
  case NpyDtype::Int64:
    return "<i8";
  case NpyDtype::Int32:
    return "<i4";
  }
  return "?";
}

int64_t npyItemSize(NpyDtype dtype) { return dtype == NpyDtype::Int64 ? 8 : 4; }

NpyHeader readNpyHeader(const std::string &path) {
  // A directory would read as a bad magic, a FIFO would block: name them first.
  if (const std::string why = inputRefusal(path); !why.empty())
    fail(path, why);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  char magic[kMagicLen];
  unsigned char version[2];
  in.read(magic, kMagicLen);
  in.read(reinterpret_cast<char *>(version), 2);
  if (!in || std::memcmp(magic, kMagic, kMagicLen) != 0)
    fail(path, "not a .npy file (bad magic)");
  uint64_t headerLen = 0;
  uint64_t prefix = 0;
  if (version[0] == 1) {
    unsigned char len[2];
    in.read(reinterpret_cast<char *>(len), 2);
    headerLen = len[0] | (len[1] << 8);
    prefix = kMagicLen + 4;
  } else if (version[0] == 2) {
    unsigned char len[4];
    in.read(reinterpret_cast<char *>(len), 4);
    headerLen = len[0] | (len[1] << 8) | (len[2] << 16) | (static_cast<uint64_t>(len[3]) << 24);
    prefix = kMagicLen + 6;
  } else {
    fail(path, "unsupported .npy format version " + std::to_string(version[0]) + "." +
                   std::to_string(version[1]) + " (supported: 1.0, 2.0)");
  }
  std::string dict(headerLen, '\0');
  in.read(dict.data(), static_cast<std::streamsize>(headerLen));
  if (!in)
    fail(path, "truncated header");

  NpyHeader header = parseDict(path, dict);
  header.dataOffset = prefix + headerLen;
  in.seekg(0, std::ios::end);
  uint64_t size = static_cast<uint64_t>(in.tellg());
  // The shape comes from the file: multiply with overflow checks before trusting it to size
  // anything (a hostile header must not wrap around and pass the size check below).
  uint64_t bytes = static_cast<uint64_t>(npyItemSize(header.dtype));
  for (int64_t d : header.shape)
    if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      fail(path, "shape " + shapeToString(header.shape) + " overflows 64-bit sizes");
  header.dataBytes = bytes;
  if (size < header.dataOffset + header.dataBytes)
    fail(path, "file has " + std::to_string(size) + " bytes, shape " + shapeToString(header.shape) +
                   " " + npyDescr(header.dtype) + " needs " +
                   std::to_string(header.dataOffset + header.dataBytes));
  return header;
}

Tensor readNpyFloat32(const std::string &path) {
  NpyHeader header;
  std::vector<char> bytes = readData(path, header);
  if (header.dtype != NpyDtype::Float32)
    fail(path, std::string("expected dtype <f4, found ") + npyDescr(header.dtype));
  Tensor t(header.shape);
  std::memcpy(t.data.data(), bytes.data(), bytes.size());
  return t;
}

std::vector<int64_t> readNpyInt64(const std::string &path, std::vector<int64_t> &shape) {
  NpyHeader header;
  std::vector<char> bytes = readData(path, header);
  shape = header.shape;
  std::vector<int64_t> out(static_cast<size_t>(numelOf(shape)));
  if (header.dtype == NpyDtype::Int64) {
    std::memcpy(out.data(), bytes.data(), bytes.size());
  } else if (header.dtype == NpyDtype::Int32) {
    for (size_t i = 0; i < out.size(); ++i) {
      int32_t v;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      out[i] = v;
    }
  } else {
    fail(path,
         std::string("expected an integer dtype (<i8 or <i4), found ") + npyDescr(header.dtype));
  }
  return out;
}

void writeNpyFloat32(const std::string &path, const Tensor &tensor) {
  if (numelOf(tensor.shape) != tensor.numel())
    fail(path, "tensor data does not match its shape " + shapeToString(tensor.shape));
  writeNpy(path, NpyDtype::Float32, tensor.shape, tensor.data.data(),
           tensor.data.size() * sizeof(float));
}

void writeNpyInt64(const std::string &path, const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &data) {
  if (numelOf(shape) != static_cast<int64_t>(data.size()))
    fail(path, "data does not match shape " + shapeToString(shape));
  writeNpy(path, NpyDtype::Int64, shape, data.data(), data.size() * sizeof(int64_t));
}

} // namespace disagmoe
