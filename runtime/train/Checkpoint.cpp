// Training checkpoints as one atomically written safetensors file: save and resume (Checkpoint.h).
#include "runtime/train/Checkpoint.h"

#include "runtime/executor/RankWorker.h"
#include "runtime/io/Safetensors.h"
#include "runtime/version/Version.h"

#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <set>

namespace disagmoe::train {
namespace {

const char *kFormat = kCheckpointFormat;
const char *kCrcPrefix = "crc32.";

std::string modelTag(const Plan &plan) {
  return plan.model.family + ", " + std::to_string(plan.model.numLayers) + " layers, " +
         std::to_string(plan.model.numExperts) + " experts, hidden " +
         std::to_string(plan.model.hiddenSize) + ", vocabulary " +
         std::to_string(plan.model.vocabSize);
}

std::string biasKey(int64_t layer) {
  return "l" + std::to_string(layer) + "_router_selection_bias";
}

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw CheckpointError(path + ": " + what);
}

int64_t parseCount(const std::string &path, const std::map<std::string, std::string> &meta,
                   const std::string &key) {
  const auto it = meta.find(key);
  if (it == meta.end())
    fail(path, "__metadata__." + key + " is missing");
  size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(it->second, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used != it->second.size() || it->second.empty() || v < 0)
    fail(path, "__metadata__." + key + " is \"" + it->second + "\", not a non-negative integer");
  return v;
}

// The tensors whose lowest holder runs in this process, in the file's order (weights with their
// moments in weightKeys order, then the selection biases). `biases` owns the bias tensors.
std::vector<std::pair<std::string, const Tensor *>> shard(const Plan &plan, const Trainer &trainer,
                                                          std::deque<Tensor> &biases) {
  const std::vector<std::string> keys = weightKeys(plan.model);
  std::vector<std::pair<std::string, const Tensor *>> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    const int lowest = plan.model.weights[i].ranks.front();
    if (trainer.state(lowest).rank != lowest)
      continue;
    const RankState &s = trainer.state(lowest);
    out.push_back({keys[i], &s.weights[i]});
    if (!s.m[i].empty()) {
      out.push_back({keys[i] + ".exp_avg", &s.m[i]});
      out.push_back({keys[i] + ".exp_avg_sq", &s.v[i]});
    }
  }
  if (trainer.options().routerBiasUpdateRate > 0)
    for (int64_t l = 0; l < plan.model.numLayers; ++l) {
      const int lowest = plan.placement.attentionGroupOfLayer(l).ranks.front();
      if (trainer.state(lowest).rank != lowest)
        continue;
      const std::vector<float> &b = trainer.state(lowest).routerBias[l];
      biases.emplace_back(std::vector<int64_t>{static_cast<int64_t>(b.size())});
      std::copy(b.begin(), b.end(), biases.back().data.begin());
      out.push_back({biasKey(l), &biases.back()});
    }
  return out;
}

void write(const std::string &path, const Plan &plan, const Trainer &trainer,
           const CheckpointInfo &info,
           const std::vector<std::pair<std::string, const Tensor *>> &tensors) {
  std::map<std::string, std::string> meta = {
      {"format", kFormat},
      {"version", "2"},
      {"step", std::to_string(info.step)},
      {"data_position", std::to_string(info.dataPosition)},
      {"data", info.data},
      {"optimizer", toString(trainer.options().optimizer.kind)},
      {"model", modelTag(plan)},
      {"producer", versionLine("disagmoe")},
  };
  if (!info.config.empty())
    meta["config"] = info.config;
  for (const auto &[name, t] : tensors)
    meta[kCrcPrefix + name] = crc32Hex(t->data.data(), t->data.size() * sizeof(float));
  try {
    writeSafetensors(path, tensors, meta);
  } catch (const SafetensorsError &e) {
    throw CheckpointError(e.what());
  }
}

// Gather messages: [u64 count] then per tensor [u64 name length][name][u64 rank][i64 dims][f32
// data].
void put(Bytes &b, const void *p, size_t n) {
  const size_t at = b.size();
  b.resize(at + n);
  if (n)
    std::memcpy(b.data() + at, p, n);
}

Bytes pack(const std::vector<std::pair<std::string, const Tensor *>> &tensors) {
  Bytes b;
  const uint64_t count = tensors.size();
  put(b, &count, 8);
  for (const auto &[name, t] : tensors) {
    const uint64_t n = name.size(), rank = t->shape.size();
    put(b, &n, 8);
    put(b, name.data(), name.size());
    put(b, &rank, 8);
    put(b, t->shape.data(), rank * sizeof(int64_t));
    put(b, t->data.data(), t->data.size() * sizeof(float));
  }
  return b;
}

void unpack(const Bytes &b, int src, std::map<std::string, Tensor> &into) {
  const auto bad = [&] {
    return CommError("checkpoint shard from rank " + std::to_string(src) + " is malformed");
  };
  size_t at = 0;
  const auto take = [&](void *p, size_t n) {
    if (n > b.size() - at)
      throw bad();
    if (n)
      std::memcpy(p, b.data() + at, n);
    at += n;
  };
  uint64_t count = 0;
  take(&count, 8);
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t n = 0, rank = 0;
    take(&n, 8);
    if (n > b.size() - at)
      throw bad();
    std::string name(n, '\0');
    take(name.data(), n);
    take(&rank, 8);
    if (rank > 16)
      throw bad();
    std::vector<int64_t> shape(rank);
    take(shape.data(), rank * sizeof(int64_t));
    size_t numel = 1;
    for (int64_t d : shape) {
      if (d < 0 || static_cast<size_t>(d) > b.size())
        throw bad();
      numel *= static_cast<size_t>(d);
      if (numel > b.size())
        throw bad();
    }
    Tensor t(shape);
    take(t.data.data(), numel * sizeof(float));
    into[name] = std::move(t);
  }
}

} // namespace

std::string crc32Hex(const void *data, size_t bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto *p = static_cast<const Bytef *>(data);
  while (bytes > 0) { // zlib takes uInt lengths
    const uInt n = static_cast<uInt>(std::min<size_t>(bytes, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    bytes -= n;
  }
  char text[9];
  std::snprintf(text, sizeof text, "%08lx", static_cast<unsigned long>(crc & 0xffffffffUL));
  return text;
}

void saveCheckpoint(const std::string &path, const Plan &plan, const Trainer &trainer,
                    const CheckpointInfo &info) {
  const std::vector<std::string> keys = weightKeys(plan.model);
  for (size_t i = 0; i < keys.size(); ++i)
    if (!trainer.holds(static_cast<int>(i)))
      throw CheckpointError(
          path + ": weight \"" + keys[i] +
          "\" is not held in this process (checkpoints need "
          "every rank in one process, the local comm, or saveCheckpointGathered)");
  std::deque<Tensor> biases;
  write(path, plan, trainer, info, shard(plan, trainer, biases));
}

void saveCheckpointGathered(const std::string &path, const Plan &plan, const Trainer &trainer,
                            const CheckpointInfo &info, Comm &comm, int tag,
                            std::chrono::milliseconds timeout) {
  std::deque<Tensor> biases;
  const std::vector<std::pair<std::string, const Tensor *>> mine = shard(plan, trainer, biases);
  if (comm.rank() != 0) {
    comm.send(0, tag, pack(mine));
    return;
  }
  std::map<std::string, Tensor> received;
  for (int r = 1; r < comm.worldSize(); ++r)
    unpack(comm.recv(r, tag, timeout), r, received);
  std::map<std::string, const Tensor *> all;
  for (const auto &[name, t] : received)
    all[name] = &t;
  for (const auto &[name, t] : mine)
    all[name] = t;
  // The file's order (shard's): weights with their moments, then the selection biases.
  std::vector<std::pair<std::string, const Tensor *>> ordered;
  const auto take = [&](const std::string &name, bool required) {
    const auto it = all.find(name);
    if (it == all.end()) {
      if (required)
        throw CheckpointError(path + ": no rank sent weight \"" + name + "\"");
      return;
    }
    ordered.push_back(*it);
    all.erase(it);
  };
  for (const std::string &key : weightKeys(plan.model)) {
    take(key, true);
    take(key + ".exp_avg", false);
    take(key + ".exp_avg_sq", false);
  }
  if (trainer.options().routerBiasUpdateRate > 0)
    for (int64_t l = 0; l < plan.model.numLayers; ++l)
      take(biasKey(l), true);
  if (!all.empty())
    throw CheckpointError(path + ": a rank sent tensor \"" + all.begin()->first +
                          "\", not of this plan");
  write(path, plan, trainer, info, ordered);
}

std::vector<Tensor> gatherWeights(const Plan &plan, const Trainer &trainer, Comm &comm, int tag,
                                  std::chrono::milliseconds timeout) {
  const std::vector<std::string> keys = weightKeys(plan.model);
  std::vector<std::pair<std::string, const Tensor *>> mine;
  for (size_t i = 0; i < keys.size(); ++i)
    if (plan.model.weights[i].ranks.front() == comm.rank())
      mine.push_back({keys[i], &trainer.weight(static_cast<int>(i))});
  if (comm.rank() != 0) {
    comm.send(0, tag, pack(mine));
    return {};
  }
  std::map<std::string, Tensor> all;
  for (int r = 1; r < comm.worldSize(); ++r)
    unpack(comm.recv(r, tag, timeout), r, all);
  for (const auto &[name, t] : mine)
    all[name] = *t;
  std::vector<Tensor> out;
  out.reserve(keys.size());
  for (const std::string &key : keys) {
    const auto it = all.find(key);
    if (it == all.end())
      throw CheckpointError("gathering the weights: no rank sent weight \"" + key + "\"");
    out.push_back(std::move(it->second));
  }
  return out;
}

CheckpointInfo loadCheckpoint(const std::string &path, const Plan &plan, Trainer &trainer) {
  SafetensorsFile file;
  try {
    file = readSafetensors(path);
  } catch (const SafetensorsError &e) {
    throw CheckpointError(e.what());
  }
  const auto &meta = file.metadata;
  const auto get = [&](const std::string &key) {
    const auto it = meta.find(key);
    if (it == meta.end())
      fail(path, "__metadata__." + key + " is missing (not a disagmoe training checkpoint?)");
    return it->second;
  };
  if (get("format") != kFormat)
    fail(path, "__metadata__.format is \"" + get("format") + "\", expected " + kFormat);
  const std::string version = get("version");
  if (version != "1" && version != "2")
    fail(path, "__metadata__.version is \"" + version + "\" (1 and 2 are known)");
  const std::string optimizer = toString(trainer.options().optimizer.kind);
  if (get("optimizer") != optimizer)
    fail(path, "__metadata__.optimizer is " + get("optimizer") + ", this run uses " + optimizer);
  if (get("model") != modelTag(plan))
    fail(path, "__metadata__.model is \"" + get("model") + "\", the plan's is \"" + modelTag(plan) +
                   "\"");
  CheckpointInfo info;
  info.step = parseCount(path, meta, "step");
  info.dataPosition = parseCount(path, meta, "data_position");
  info.data = get("data");
  if (const auto it = meta.find("config"); it != meta.end())
    info.config = it->second;

  // Integrity first: every tensor's bytes against its CRC-32, before anything is restored.
  if (version == "2") {
    for (const auto &[name, t] : file.tensors) {
      const auto it = meta.find(kCrcPrefix + name);
      if (it == meta.end())
        fail(path, "tensor \"" + name + "\": __metadata__." + kCrcPrefix + name + " is missing");
      const std::string crc = crc32Hex(t.data.data(), t.data.size() * sizeof(float));
      if (crc != it->second)
        fail(path, "tensor \"" + name + "\": CRC-32 of its bytes is " + crc + ", __metadata__." +
                       kCrcPrefix + name + " says " + it->second + " (the file is corrupt)");
    }
  }

  const std::vector<std::string> keys = weightKeys(plan.model);
  std::set<std::string> used;
  const auto find = [&](const std::string &name) -> const Tensor * {
    const auto it = file.tensors.find(name);
    if (it == file.tensors.end())
      fail(path, "tensor \"" + name + "\" is missing");
    used.insert(name);
    return &it->second;
  };
  const bool adamw = trainer.options().optimizer.kind == OptimizerKind::AdamW && info.step > 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const Tensor *w = find(keys[i]);
    const Tensor *m = adamw ? find(keys[i] + ".exp_avg") : nullptr;
    const Tensor *v = adamw ? find(keys[i] + ".exp_avg_sq") : nullptr;
    try {
      trainer.restore(static_cast<int>(i), *w, m, v);
    } catch (const ExecError &e) {
      fail(path, "tensor \"" + keys[i] + "\": " + e.what());
    }
  }
  const bool bias = trainer.options().routerBiasUpdateRate > 0;
  for (int64_t l = 0; l < plan.model.numLayers; ++l) {
    const std::string key = biasKey(l);
    if (!bias) {
      if (file.tensors.count(key))
        fail(path, "tensor \"" + key +
                       "\" holds the router selection bias, and this run has no "
                       "--router-bias-update-rate (resume with the rate it was trained with)");
      continue;
    }
    if (!file.tensors.count(key))
      fail(path, "tensor \"" + key +
                     "\" is missing (this run has --router-bias-update-rate; the checkpoint was "
                     "written without one" +
                     std::string(version == "1" ? ", by version 1" : "") + ")");
    const Tensor *b = find(key);
    if (b->shape != std::vector<int64_t>{plan.model.numExperts})
      fail(path, "tensor \"" + key + "\" has shape " + shapeToString(b->shape) + ", expected [" +
                     std::to_string(plan.model.numExperts) + "]");
    trainer.restoreRouterBias(l, b->data);
  }
  for (const auto &entry : file.tensors)
    if (!used.count(entry.first))
      fail(path, "tensor \"" + entry.first + "\" is not a weight of this plan's model");
  // After the missing-tensor checks, which say more: a checksum of a tensor the file lacks.
  for (const auto &[key, value] : meta)
    if (key.rfind(kCrcPrefix, 0) == 0 && !file.tensors.count(key.substr(std::strlen(kCrcPrefix))))
      fail(path, "__metadata__." + key + " names no tensor of the file");
  trainer.restoreSteps(info.step);
  return info;
}

} // namespace disagmoe::train
