#include "runtime/train/Checkpoint.h"

#include "runtime/executor/RankWorker.h"
#include "runtime/io/Safetensors.h"

#include <set>

namespace disagmoe::train {
namespace {

const char* kFormat = "disagmoe-train-checkpoint";

std::string modelTag(const Plan& plan) {
  return plan.model.family + ", " + std::to_string(plan.model.numLayers) + " layers, " +
         std::to_string(plan.model.numExperts) + " experts, hidden " + std::to_string(plan.model.hiddenSize) +
         ", vocabulary " + std::to_string(plan.model.vocabSize);
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw CheckpointError(path + ": " + what);
}

int64_t parseCount(const std::string& path, const std::map<std::string, std::string>& meta, const std::string& key) {
  const auto it = meta.find(key);
  if (it == meta.end()) fail(path, "__metadata__." + key + " is missing");
  size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != it->second.size() || it->second.empty() || v < 0)
    fail(path, "__metadata__." + key + " is \"" + it->second + "\", not a non-negative integer");
  return v;
}

} // namespace

void saveCheckpoint(const std::string& path, const Plan& plan, const Trainer& trainer, const CheckpointInfo& info) {
  const std::vector<std::string> keys = weightKeys(plan.model);
  std::vector<std::pair<std::string, const Tensor*>> tensors;
  for (size_t i = 0; i < keys.size(); ++i) {
    const int index = static_cast<int>(i);
    if (!trainer.holds(index))
      throw CheckpointError(path + ": weight \"" + keys[i] + "\" is not held in this process (checkpoints need "
                            "every rank in one process, the local comm)");
    tensors.push_back({keys[i], &trainer.weight(index)});
    if (!trainer.firstMoment(index).empty()) {
      tensors.push_back({keys[i] + ".exp_avg", &trainer.firstMoment(index)});
      tensors.push_back({keys[i] + ".exp_avg_sq", &trainer.secondMoment(index)});
    }
  }
  const std::map<std::string, std::string> meta = {
      {"format", kFormat},
      {"version", "1"},
      {"step", std::to_string(info.step)},
      {"data_position", std::to_string(info.dataPosition)},
      {"data", info.data},
      {"optimizer", toString(trainer.options().optimizer.kind)},
      {"model", modelTag(plan)},
  };
  try {
    writeSafetensors(path, tensors, meta);
  } catch (const SafetensorsError& e) {
    throw CheckpointError(e.what());
  }
}

CheckpointInfo loadCheckpoint(const std::string& path, const Plan& plan, Trainer& trainer) {
  SafetensorsFile file;
  try {
    file = readSafetensors(path);
  } catch (const SafetensorsError& e) {
    throw CheckpointError(e.what());
  }
  const auto& meta = file.metadata;
  const auto get = [&](const std::string& key) {
    const auto it = meta.find(key);
    if (it == meta.end()) fail(path, "__metadata__." + key + " is missing (not a disagmoe training checkpoint?)");
    return it->second;
  };
  if (get("format") != kFormat) fail(path, "__metadata__.format is \"" + get("format") + "\", expected " + kFormat);
  if (get("version") != "1") fail(path, "__metadata__.version is \"" + get("version") + "\" (only 1 is known)");
  const std::string optimizer = toString(trainer.options().optimizer.kind);
  if (get("optimizer") != optimizer)
    fail(path, "__metadata__.optimizer is " + get("optimizer") + ", this run uses " + optimizer);
  if (get("model") != modelTag(plan))
    fail(path, "__metadata__.model is \"" + get("model") + "\", the plan's is \"" + modelTag(plan) + "\"");
  CheckpointInfo info;
  info.step = parseCount(path, meta, "step");
  info.dataPosition = parseCount(path, meta, "data_position");
  info.data = get("data");

  const std::vector<std::string> keys = weightKeys(plan.model);
  std::set<std::string> used;
  const bool adamw = trainer.options().optimizer.kind == OptimizerKind::AdamW && info.step > 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto find = [&](const std::string& name) -> const Tensor* {
      const auto it = file.tensors.find(name);
      if (it == file.tensors.end()) fail(path, "tensor \"" + name + "\" is missing");
      used.insert(name);
      return &it->second;
    };
    const Tensor* w = find(keys[i]);
    const Tensor* m = adamw ? find(keys[i] + ".exp_avg") : nullptr;
    const Tensor* v = adamw ? find(keys[i] + ".exp_avg_sq") : nullptr;
    try {
      trainer.restore(static_cast<int>(i), *w, m, v);
    } catch (const ExecError& e) {
      fail(path, "tensor \"" + keys[i] + "\": " + e.what());
    }
  }
  for (const auto& entry : file.tensors)
    if (!used.count(entry.first)) fail(path, "tensor \"" + entry.first + "\" is not a weight of this plan's model");
  trainer.restoreSteps(info.step);
  return info;
}

} // namespace disagmoe::train
