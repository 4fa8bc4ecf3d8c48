// A plan's weights -> a Hugging Face checkpoint directory, sharded, atomically (HfExport.h).
#include "runtime/train/HfExport.h"

#include "runtime/io/AtomicFile.h"
#include "runtime/io/FileKind.h"
#include "runtime/train/HfConfig.h"
#include "runtime/train/HfNameMap.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

namespace disagmoe::train {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string &dir, const std::string &what) {
  throw HfExportError(dir + ": " + what);
}

// Hugging Face layout of one tensor: the parts (transposed where nn.Linear's) along the first axis.
Tensor assemble(const HfTensor &hf, const std::function<const Tensor &(int)> &weightOf) {
  Tensor out(hf.shape);
  size_t at = 0;
  for (int w : hf.weights) {
    const Tensor &t = weightOf(w);
    if (!hf.transposed) {
      std::copy(t.data.begin(), t.data.end(), out.data.begin() + static_cast<std::ptrdiff_t>(at));
    } else { // the runtime's [in, out] -> [out, in]
      const int64_t rows = t.shape[0], cols = t.shape[1];
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t i = 0; i < rows; ++i)
          out.data[at + static_cast<size_t>(j * rows + i)] =
              t.data[static_cast<size_t>(i * cols + j)];
    }
    at += t.data.size();
  }
  return out;
}

void writeText(const std::string &path, const std::string &text) {
  const std::string why = writeFileAtomically(path, [&](std::ostream &out) { out << text; });
  if (!why.empty())
    throw HfExportError(path + ": " + why);
}

} // namespace

std::string hfExportRefusal(const std::string &dir) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(st))
    return "";
  if (!fs::is_directory(st))
    return "exists and is not a directory";
  if (!fs::is_empty(dir, ec))
    return "exists and is not empty (an export writes a new directory)";
  return "";
}

HfExportSummary exportHf(const Plan &plan, const std::function<const Tensor &(int)> &weightOf,
                         const std::string &dir, const HfExportOptions &options) {
  if (options.dtype == SafetensorsDtype::F16)
    fail(dir, "export dtype F16 is not supported (F32 or BF16)");
  if (options.shardBytes == 0)
    fail(dir, "a shard limit of 0 bytes");
  if (const std::string why = hfExportRefusal(dir); !why.empty())
    fail(dir, why);
  const HfFamily family = hfFamilyOf(plan.model);
  const std::vector<HfTensor> tensors = hfTensors(plan.model, family);
  const std::string config = hfConfigJson(plan.model, family, options.dtype);

  // Shards: consecutive tensors, a new shard when the next would pass the limit.
  const uint64_t elem = elementBytes(options.dtype);
  std::vector<std::vector<size_t>> shards(1);
  uint64_t inShard = 0, total = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const uint64_t bytes = static_cast<uint64_t>(numelOf(tensors[t].shape)) * elem;
    if (!shards.back().empty() && inShard + bytes > options.shardBytes) {
      shards.emplace_back();
      inShard = 0;
    }
    shards.back().push_back(t);
    inShard += bytes;
    total += bytes;
  }
  HfExportSummary summary;
  summary.tensorBytes = total;
  summary.tensors = tensors.size();
  const size_t n = shards.size();
  for (size_t s = 0; s < n; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, n);
    summary.files.push_back(n == 1 ? "model.safetensors" : name);
  }

  const fs::path parent = fs::absolute(fs::path(dir)).parent_path();
  std::error_code ec;
  if (!fs::is_directory(parent, ec))
    fail(dir, "its parent directory " + parent.string() + " does not exist");
  const std::string tmp = temporarySibling(dir);
  if (!fs::create_directory(tmp, ec) || ec)
    fail(dir, "cannot create the temporary directory " + tmp + ": " + ec.message());
  try {
    nlohmann::json weightMap = nlohmann::json::object();
    for (size_t s = 0; s < n; ++s) {
      std::vector<Tensor> held;
      held.reserve(shards[s].size());
      for (size_t t : shards[s])
        held.push_back(assemble(tensors[t], weightOf));
      std::vector<std::pair<std::string, const Tensor *>> entries;
      for (size_t i = 0; i < shards[s].size(); ++i) {
        entries.push_back({tensors[shards[s][i]].name, &held[i]});
        weightMap[tensors[shards[s][i]].name] = summary.files[s];
      }
      try {
        writeSafetensors((fs::path(tmp) / summary.files[s]).string(), entries, {{"format", "pt"}},
                         options.dtype);
      } catch (const SafetensorsError &e) {
        throw HfExportError(e.what());
      }
    }
    if (n > 1) {
      nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weightMap}};
      writeText((fs::path(tmp) / "model.safetensors.index.json").string(), index.dump(2) + "\n");
    }
    writeText((fs::path(tmp) / "config.json").string(), config);
    // An empty DIR is replaced by the rename; anything else there now is refused again.
    if (const std::string why = hfExportRefusal(dir); !why.empty())
      fail(dir, why);
    if (std::rename(tmp.c_str(), dir.c_str()) != 0)
      fail(dir, std::string("cannot rename the temporary directory into place: ") +
                    std::strerror(errno));
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return summary;
}

} // namespace disagmoe::train
