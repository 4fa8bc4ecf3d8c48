//===- ExternalData.cpp - external-data files hold what the model claims --===//
#include "compiler/pipeline/ExternalData.h"

#include <filesystem>
#include <map>
#include <system_error>

namespace disagmoe {
namespace {
constexpr std::uintmax_t kAbsent = ~std::uintmax_t(0); // a file that does not exist here
} // namespace

bool checkExternalData(const std::string &path,
                       const std::vector<onnxfe::Initializer> &initializers, std::string &error) {
  std::map<std::string, std::uintmax_t> sizes; // each file once
  for (const onnxfe::Initializer &init : initializers) {
    if (!init.external)
      continue;
    const std::string where =
        path + ": initializer '" + init.info.name + "': external data file '" + init.file + "'";
    auto it = sizes.find(init.file);
    if (it == sizes.end()) {
      std::error_code ec;
      const auto status = std::filesystem::status(init.file, ec);
      if (ec || !std::filesystem::exists(status)) {
        sizes.emplace(init.file, kAbsent); // compiled anyway: the run reads it (header)
        continue;
      }
      if (!std::filesystem::is_regular_file(status)) {
        error = where + " is not a regular file";
        return false;
      }
      const std::uintmax_t size = std::filesystem::file_size(init.file, ec);
      if (ec) {
        error = where + ": cannot read its size: " + ec.message();
        return false;
      }
      it = sizes.emplace(init.file, size).first;
    }
    if (it->second == kAbsent)
      continue;
    // The loader checked that offset + length does not overflow (OnnxLoader.cpp).
    const std::uint64_t end = init.offset + init.length;
    if (end > it->second) {
      error = where + " is " + std::to_string(it->second) + " bytes, but the tensor's bytes are [" +
              std::to_string(init.offset) + ", " + std::to_string(end) + ") (offset " +
              std::to_string(init.offset) + ", length " + std::to_string(init.length) +
              "): the file is truncated or not this model's";
      return false;
    }
  }
  return true;
}

} // namespace disagmoe
