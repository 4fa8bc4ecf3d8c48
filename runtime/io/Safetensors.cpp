// Reads and writes safetensors files of fp32 tensors and string metadata (Safetensors.h).
#include "runtime/io/Safetensors.h"

#include "runtime/io/FileKind.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace disagmoe {
namespace {

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw SafetensorsError(path + ": " + what);
}

// The spec caps the header at 100 MB (a guard against a corrupt length field).
constexpr uint64_t kMaxHeader = 100u << 20;

} // namespace

void writeSafetensors(const std::string &path,
                      const std::vector<std::pair<std::string, const Tensor *>> &tensors,
                      const std::map<std::string, std::string> &metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  uint64_t at = 0;
  for (const auto &[name, t] : tensors) {
    if (name == "__metadata__")
      fail(path, "a tensor cannot be named __metadata__");
    if (header.contains(name))
      fail(path, "tensor \"" + name + "\" given twice");
    const uint64_t bytes = t->data.size() * sizeof(float);
    header[name] = {{"dtype", "F32"}, {"shape", t->shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' '); // the buffer starts 8-byte aligned
  // Refused before any write and again just before the rename (a path that became special
  // meanwhile).
  if (const std::string why = outputRefusal(path); !why.empty())
    fail(path, why);
  static std::atomic<unsigned> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      fail(path, "cannot create temporary file " + tmp + ": " + std::strerror(errno));
    unsigned char len[8];
    for (int i = 0; i < 8; ++i)
      len[i] = static_cast<unsigned char>((static_cast<uint64_t>(text.size()) >> (8 * i)) & 0xff);
    out.write(reinterpret_cast<const char *>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto &entry : tensors)
      out.write(reinterpret_cast<const char *>(entry.second->data.data()),
                static_cast<std::streamsize>(entry.second->data.size() * sizeof(float)));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      fail(path, "write failed");
    }
  }
  if (const std::string why = outputRefusal(path); !why.empty()) {
    std::remove(tmp.c_str());
    fail(path, why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    fail(path, std::string("cannot rename the temporary file into place: ") + std::strerror(err));
  }
}

SafetensorsFile readSafetensors(const std::string &path) {
  // An ifstream opens a directory and reports a huge size, and blocks on a FIFO: name them first.
  if (const std::string why = inputRefusal(path); !why.empty())
    fail(path, why);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (size < 8)
    fail(path, "shorter than the 8-byte header length");
  unsigned char len[8];
  in.read(reinterpret_cast<char *>(len), 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(len[i]) << (8 * i);
  if (n > kMaxHeader || n > size - 8)
    fail(path, "header length " + std::to_string(n) + " exceeds the file (" + std::to_string(size) +
                   " bytes)");
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (!in)
    fail(path, "cannot read the header");
  const nlohmann::json header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded())
    fail(path, "header is not valid JSON");
  if (!header.is_object())
    fail(path, "header is not a JSON object");
  const uint64_t bufferSize = size - 8 - n;
  std::vector<char> buffer(bufferSize);
  in.read(buffer.data(), static_cast<std::streamsize>(bufferSize));
  if (!in)
    fail(path, "cannot read the data buffer");

  SafetensorsFile out;
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
    if (entry["dtype"] != "F32")
      fail(path,
           field + ": dtype " + entry["dtype"].get<std::string>() + " (only F32 is supported)");
    if (!entry.contains("shape") || !entry["shape"].is_array())
      fail(path, field + ": missing shape");
    std::vector<int64_t> shape;
    for (const auto &d : entry["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        fail(path, field + ": shape has a bad dimension");
      shape.push_back(d.get<int64_t>());
    }
    const auto &off = entry.contains("data_offsets") ? entry["data_offsets"] : nlohmann::json();
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      fail(path, field + ": data_offsets is not [begin, end]");
    const uint64_t b = off[0].get<uint64_t>(), e = off[1].get<uint64_t>();
    const uint64_t want = static_cast<uint64_t>(numelOf(shape)) * sizeof(float);
    if (e < b || e > bufferSize)
      fail(path, field + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                     "] outside the data buffer of " + std::to_string(bufferSize) + " bytes");
    if (e - b != want)
      fail(path, field + ": data_offsets span " + std::to_string(e - b) + " bytes, shape " +
                     shapeToString(shape) + " needs " + std::to_string(want));
    Tensor t(shape);
    if (want)
      std::memcpy(t.data.data(), buffer.data() + b, want);
    out.tensors.emplace(name, std::move(t));
    ranges.push_back({b, e});
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

} // namespace disagmoe
