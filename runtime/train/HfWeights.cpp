// Hugging Face safetensors -> the plan's weights (HfWeights.h).
#include "runtime/train/HfWeights.h"

#include "runtime/io/FileKind.h"
#include "runtime/io/Safetensors.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/TrainStep.h"

#include "runtime/io/JsonError.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>

namespace disagmoe::train {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string &file, const std::string &what) {
  throw HfWeightsError(file + ": " + what);
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The index's weight_map: tensor -> shard path (resolved against the index's directory).
std::map<std::string, std::string> readIndex(const std::string &index) {
  if (const std::string why = inputRefusal(index); !why.empty())
    fail(index, why);
  std::ifstream in(index);
  if (!in)
    fail(index, "cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error &e) {
    throw HfWeightsError(jsonParseError(index, e));
  }
  if (!j.is_object())
    fail(index, "not a JSON object");
  if (!j.contains("weight_map") || !j["weight_map"].is_object())
    fail(index, "weight_map: missing or not an object");
  const fs::path dir = fs::path(index).parent_path();
  std::map<std::string, std::string> map;
  for (const auto &[name, shard] : j["weight_map"].items()) {
    if (!shard.is_string())
      fail(index, "weight_map.\"" + name + "\": not a file name");
    const std::string file = shard.get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
      fail(index, "weight_map.\"" + name + "\": \"" + file + "\" is not a file name in " +
                      (dir.empty() ? std::string(".") : dir.string()));
    map[name] = (dir / file).string();
  }
  return map;
}

} // namespace

HfWeights::~HfWeights() = default;

HfWeights::HfWeights(const Plan &plan, const std::string &path)
    : plan_(plan), family_(hfFamilyOf(plan.model)), tensors_(hfTensors(plan.model, family_)) {
  // Which file each tensor of the checkpoint is in.
  std::string index;
  std::string single = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const std::string idx = (fs::path(path) / "model.safetensors.index.json").string();
    const std::string one = (fs::path(path) / "model.safetensors").string();
    if (fs::exists(idx, ec))
      index = idx;
    else if (fs::exists(one, ec))
      single = one;
    else
      fail(path, "a directory without model.safetensors.index.json or model.safetensors");
  } else if (endsWith(path, ".json")) {
    index = path;
  } else if (!fs::exists(path, ec)) {
    fail(path, "does not exist");
  }
  std::map<std::string, std::string> located; // tensor -> file
  const std::string named =
      index.empty() ? single : index; // the file errors name for a missing one
  if (!index.empty()) {
    located = readIndex(index);
    std::set<std::string> shards;
    for (const auto &[name, file] : located)
      if (shards.insert(file).second)
        files_.push_back(file);
  } else {
    files_.push_back(single);
  }
  std::map<std::string, size_t> fileIndex;
  for (const std::string &file : files_) {
    if (!fs::exists(file, ec))
      fail(file, "missing (" + named + " names it)");
    try {
      headers_.push_back(std::make_unique<SafetensorsHeader>(readSafetensorsHeader(file)));
    } catch (const SafetensorsError &e) {
      throw HfWeightsError(e.what());
    }
    // disagmoe's own checkpoints are safetensors too, by plan names: say what the file is.
    if (const auto it = headers_.back()->metadata.find("format");
        it != headers_.back()->metadata.end() && it->second == kCheckpointFormat)
      fail(file, "a disagmoe training checkpoint (__metadata__.format " + it->second +
                     "), not Hugging Face weights: continue its run with --resume " + file +
                     " (--init-weights reads Hugging Face safetensors by their HF names)");
    fileIndex[file] = headers_.size() - 1;
  }
  // Every tensor of every file is in the index, under its own file.
  for (size_t f = 0; f < headers_.size(); ++f)
    for (const auto &[name, entry] : headers_[f]->tensors) {
      if (index.empty()) {
        located[name] = files_[f];
        continue;
      }
      const auto it = located.find(name);
      if (it == located.end() || it->second != files_[f])
        fail(files_[f],
             "tensor \"" + name + "\": " +
                 (it == located.end() ? "not in " + index : index + " maps it to " + it->second));
    }
  // Every plan tensor present with Hugging Face's shape; nothing else.
  const std::vector<std::string> keys = weightKeys(plan.model);
  std::set<std::string> expected;
  fileOf_.resize(tensors_.size());
  where_.resize(plan.model.weights.size());
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const HfTensor &hf = tensors_[t];
    expected.insert(hf.name);
    std::string plans = keys[static_cast<size_t>(hf.weights[0])];
    if (hf.weights.size() > 1)
      plans += ".." + keys[static_cast<size_t>(hf.weights.back())];
    const auto it = located.find(hf.name);
    if (it == located.end())
      fail(named, "tensor \"" + hf.name + "\": missing (the plan's " + plans +
                      ", Hugging Face shape " + shapeToString(hf.shape) + ")");
    const size_t f = fileIndex.at(it->second);
    const auto entry = headers_[f]->tensors.find(hf.name);
    if (entry == headers_[f]->tensors.end())
      fail(it->second, "tensor \"" + hf.name + "\": missing (" + named + " maps it here)");
    if (entry->second.shape != hf.shape)
      fail(it->second, "tensor \"" + hf.name + "\": shape " + shapeToString(entry->second.shape) +
                           ", the plan's " + plans + " needs " + shapeToString(hf.shape) +
                           (hf.transposed ? " (Hugging Face layout [out, in])" : ""));
    fileOf_[t] = f;
    for (size_t p = 0; p < hf.weights.size(); ++p)
      where_[static_cast<size_t>(hf.weights[p])] = {t, p};
  }
  for (const auto &[name, file] : located)
    if (!expected.count(name))
      fail(file, "tensor \"" + name + "\": not a weight of this " + toString(family_) + " plan");
}

Tensor HfWeights::read(int index) const {
  const Where w = where_.at(static_cast<size_t>(index));
  const HfTensor &hf = tensors_[w.tensor];
  const WeightSpec &spec = plan_.model.weights[static_cast<size_t>(index)];
  const uint64_t numel = static_cast<uint64_t>(numelOf(spec.shape));
  std::vector<float> raw;
  try {
    raw = readSafetensorsElements(*headers_[fileOf_[w.tensor]], hf.name, w.part * numel, numel);
  } catch (const SafetensorsError &e) {
    throw HfWeightsError(e.what());
  }
  Tensor t(spec.shape);
  if (!hf.transposed) {
    t.data = std::move(raw);
    return t;
  }
  // Hugging Face [out, in] -> the runtime's [in, out].
  const int64_t rows = spec.shape[0], cols = spec.shape[1];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      t.data[i * cols + j] = raw[j * rows + i];
  return t;
}

WeightSource HfWeights::source() const {
  return [this](int index) { return read(index); };
}

std::string HfWeights::dtypeSummary() const {
  std::map<std::string, int> count;
  for (size_t t = 0; t < tensors_.size(); ++t)
    ++count[toString(headers_[fileOf_[t]]->tensors.at(tensors_[t].name).dtype)];
  std::string out;
  for (const auto &[dtype, n] : count)
    out += (out.empty() ? "" : ", ") + dtype + " " + std::to_string(n);
  return out;
}

} // namespace disagmoe::train
