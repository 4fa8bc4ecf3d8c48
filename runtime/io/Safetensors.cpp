// Reads and writes safetensors files (Safetensors.h).
#include "runtime/io/Safetensors.h"

#include "runtime/io/AtomicFile.h"
#include "runtime/io/FileKind.h"

#include "runtime/io/JsonError.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <unistd.h>

namespace disagmoe {
namespace {

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw SafetensorsError(path + ": " + what);
}

// The spec caps the header at 100 MB (a guard against a corrupt length field).
constexpr uint64_t kMaxHeader = 100u << 20;

bool parseDtype(const std::string &text, SafetensorsDtype &out) {
  for (SafetensorsDtype d : {SafetensorsDtype::F32, SafetensorsDtype::BF16, SafetensorsDtype::F16})
    if (text == toString(d)) {
      out = d;
      return true;
    }
  return false;
}

// Opens `path` (refusing a directory or FIFO by name first: an ifstream reports a directory's
// size as huge and blocks on a FIFO) and checks its header; `f32Only` for checkpoints.
SafetensorsHeader parseHeader(const std::string &path, std::ifstream &in, uint64_t &size,
                              bool f32Only) {
  if (const std::string why = inputRefusal(path); !why.empty())
    fail(path, why);
  in.open(path, std::ios::binary | std::ios::ate);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (size < 8)
    fail(path, "shorter than the 8-byte header length");
  unsigned char len[8];
  in.read(reinterpret_cast<char *>(len), 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(len[i]) << (8 * i);
  // Any other file (a text, a .pt pickle) fails here: its first 8 bytes read as a huge length.
  if (n > size - 8)
    fail(path, "not a safetensors file: its first 8 bytes give a header length of " +
                   std::to_string(n) + " bytes, more than the file's " + std::to_string(size));
  if (n > kMaxHeader)
    fail(path, "header length " + std::to_string(n) + " bytes is above the " +
                   std::to_string(kMaxHeader) + " this reader accepts");
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (!in)
    fail(path, "cannot read the header");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error &e) {
    // "FILE: header: not valid JSON at line 1, column C: ..." (C counts bytes of the header)
    const std::string full = jsonParseError("header", e);
    fail(path, full);
  }
  if (!header.is_object())
    fail(path, "header is not a JSON object");
  SafetensorsHeader out;
  out.path = path;
  out.dataStart = 8 + n;
  const uint64_t bufferSize = size - 8 - n;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto &[name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object())
        fail(path, "__metadata__ is not an object");
      for (const auto &[k, v] : entry.items()) {
        if (!v.is_string())
          fail(path, "__metadata__." + k + " is not a string");
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string field = "tensor \"" + name + "\"";
    if (!entry.is_object())
      fail(path, field + " is not an object");
    if (!entry.contains("dtype") || !entry["dtype"].is_string())
      fail(path, field + ": missing dtype");
    SafetensorsEntry e;
    const std::string dtype = entry["dtype"].get<std::string>();
    if (f32Only && dtype != "F32")
      fail(path, field + ": dtype " + dtype + " (only F32 is supported)");
    if (!parseDtype(dtype, e.dtype))
      fail(path, field + ": dtype " + dtype + " (supported: F32, BF16, F16)");
    if (!entry.contains("shape") || !entry["shape"].is_array())
      fail(path, field + ": missing shape");
    for (const auto &d : entry["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        fail(path, field + ": shape has a bad dimension");
      e.shape.push_back(d.get<int64_t>());
    }
    const auto &off = entry.contains("data_offsets") ? entry["data_offsets"] : nlohmann::json();
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      fail(path, field + ": data_offsets is not [begin, end]");
    e.begin = off[0].get<uint64_t>();
    e.end = off[1].get<uint64_t>();
    const uint64_t want = static_cast<uint64_t>(numelOf(e.shape)) * elementBytes(e.dtype);
    if (e.end < e.begin || e.end > bufferSize)
      fail(path, field + ": data_offsets [" + std::to_string(e.begin) + ", " +
                     std::to_string(e.end) + "] outside the data buffer of " +
                     std::to_string(bufferSize) + " bytes");
    if (e.end - e.begin != want)
      fail(path, field + ": data_offsets span " + std::to_string(e.end - e.begin) +
                     " bytes, shape " + shapeToString(e.shape) + " needs " + std::to_string(want));
    ranges.push_back({e.begin, e.end});
    out.tensors.emplace(name, std::move(e));
  }
  // The spec: the entries tile the buffer (no overlap, no hole).
  std::sort(ranges.begin(), ranges.end());
  uint64_t at = 0;
  for (const auto &[b, e] : ranges) {
    if (b != at)
      fail(path, "data_offsets overlap or leave a hole at byte " + std::to_string(std::min(b, at)));
    at = e;
  }
  if (at != bufferSize)
    fail(path,
         "the data buffer has " + std::to_string(bufferSize - at) + " bytes that no tensor covers");
  return out;
}

} // namespace

const char *toString(SafetensorsDtype dtype) {
  switch (dtype) {
  case SafetensorsDtype::F32:
    return "F32";
  case SafetensorsDtype::BF16:
    return "BF16";
  case SafetensorsDtype::F16:
    return "F16";
  }
  return "F32";
}

uint64_t elementBytes(SafetensorsDtype dtype) { return dtype == SafetensorsDtype::F32 ? 4 : 2; }

uint16_t floatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value))
    return static_cast<uint16_t>((bits >> 16) | 0x40); // quiet, sign kept
  // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit, then truncate.
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float bf16ToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

float f16ToFloat(uint16_t bits) {
  // IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits.
  const uint32_t sign = (bits >> 15) & 1u, exponent = (bits >> 10) & 0x1fu,
                 fraction = bits & 0x3ffu;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(fraction), -24); // subnormal: fraction * 2^-24
  else if (exponent == 31)
    magnitude = fraction ? std::nanf("") : INFINITY;
  else
    magnitude = std::ldexp(static_cast<float>(fraction | 0x400u), static_cast<int>(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

void writeSafetensors(const std::string &path,
                      const std::vector<std::pair<std::string, const Tensor *>> &tensors,
                      const std::map<std::string, std::string> &metadata, SafetensorsDtype dtype) {
  if (dtype == SafetensorsDtype::F16)
    fail(path, "writing F16 is not supported (F32 or BF16)");
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  uint64_t at = 0;
  for (const auto &[name, t] : tensors) {
    if (name == "__metadata__")
      fail(path, "a tensor cannot be named __metadata__");
    if (header.contains(name))
      fail(path, "tensor \"" + name + "\" given twice");
    const uint64_t bytes = t->data.size() * elementBytes(dtype);
    header[name] = {
        {"dtype", toString(dtype)}, {"shape", t->shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' '); // the buffer starts 8-byte aligned
  const std::string why = writeFileAtomically(path, [&](std::ostream &out) {
    unsigned char len[8];
    for (int i = 0; i < 8; ++i)
      len[i] = static_cast<unsigned char>((static_cast<uint64_t>(text.size()) >> (8 * i)) & 0xff);
    out.write(reinterpret_cast<const char *>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    std::vector<uint16_t> half;
    for (const auto &entry : tensors) {
      const std::vector<float> &data = entry.second->data;
      if (dtype == SafetensorsDtype::F32) {
        out.write(reinterpret_cast<const char *>(data.data()),
                  static_cast<std::streamsize>(data.size() * sizeof(float)));
        continue;
      }
      half.resize(data.size());
      std::transform(data.begin(), data.end(), half.begin(), floatToBf16);
      out.write(reinterpret_cast<const char *>(half.data()),
                static_cast<std::streamsize>(half.size() * sizeof(uint16_t)));
    }
  });
  if (!why.empty())
    fail(path, why);
}

SafetensorsFile readSafetensors(const std::string &path) {
  std::ifstream in;
  uint64_t size = 0;
  const SafetensorsHeader header = parseHeader(path, in, size, /*f32Only=*/true);
  const uint64_t bufferSize = size - header.dataStart;
  std::vector<char> buffer(bufferSize);
  in.seekg(static_cast<std::streamoff>(header.dataStart));
  in.read(buffer.data(), static_cast<std::streamsize>(bufferSize));
  if (!in)
    fail(path, "cannot read the data buffer");
  SafetensorsFile out;
  out.metadata = header.metadata;
  for (const auto &[name, e] : header.tensors) {
    Tensor t(e.shape);
    if (e.end > e.begin)
      std::memcpy(t.data.data(), buffer.data() + e.begin, e.end - e.begin);
    out.tensors.emplace(name, std::move(t));
  }
  return out;
}

SafetensorsHeader readSafetensorsHeader(const std::string &path) {
  std::ifstream in;
  uint64_t size = 0;
  return parseHeader(path, in, size, /*f32Only=*/false);
}

std::vector<float> readSafetensorsElements(const SafetensorsHeader &header, const std::string &name,
                                           uint64_t first, uint64_t count) {
  const auto it = header.tensors.find(name);
  if (it == header.tensors.end())
    fail(header.path, "no tensor \"" + name + "\"");
  const SafetensorsEntry &e = it->second;
  const uint64_t bytes = elementBytes(e.dtype);
  const uint64_t numel = (e.end - e.begin) / bytes;
  if (first > numel || count > numel - first)
    fail(header.path, "tensor \"" + name + "\": elements [" + std::to_string(first) + ", " +
                          std::to_string(first + count) + ") outside its " + std::to_string(numel));
  std::vector<char> raw(count * bytes);
  const int fd = ::open(header.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fail(header.path, std::string("cannot open: ") + std::strerror(errno));
  const uint64_t offset = header.dataStart + e.begin + first * bytes;
  uint64_t done = 0;
  while (done < raw.size()) {
    const ssize_t n =
        ::pread(fd, raw.data() + done, raw.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "the file ends early";
      ::close(fd);
      fail(header.path, "tensor \"" + name + "\": short read: " + why);
    }
    done += static_cast<uint64_t>(n);
  }
  ::close(fd);
  std::vector<float> out(count);
  if (e.dtype == SafetensorsDtype::F32) {
    std::memcpy(out.data(), raw.data(), raw.size());
    return out;
  }
  for (uint64_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, raw.data() + 2 * i, 2);
    out[i] = e.dtype == SafetensorsDtype::BF16 ? bf16ToFloat(bits) : f16ToFloat(bits);
  }
  return out;
}

} // namespace disagmoe
