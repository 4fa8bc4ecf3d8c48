// The table of disagmoe-run's flags and the nearest-flag suggestion (RunFlags.h).
#include "runtime/tools/RunFlags.h"

#include <algorithm>

namespace disagmoe::tools {

const std::vector<RunFlag> &runFlags() {
  static const std::vector<RunFlag> flags = {
      // The forward pass (disagmoe-run.cpp) and --backend sim.
      {"backend", true, RunMode::Any},
      {"precision", true, RunMode::Any}, // --backend cuda: bf16 or fp32
      {"comm", true, RunMode::Any},
      {"input", true, RunMode::Any},
      {"output", true, RunMode::Any},
      {"batch", true, RunMode::Any},
      {"seq-len", true, RunMode::Any},
      {"seed", true, RunMode::Any},
      {"timeout", true, RunMode::Any},
      {"trace", true, RunMode::Any},
      {"op-times-out", true, RunMode::Any},
      // How much is printed (runtime/train/Progress.h).
      {"verbose", false, RunMode::Any},
      {"quiet", false, RunMode::Any},
      // Hugging Face weights in and out (runtime/train/HfWeights.h, HfExport.h).
      {"init-weights", true, RunMode::Any},
      {"export-hf", true, RunMode::Any},
      {"export-dtype", true, RunMode::Any},
      {"export-shard-bytes", true, RunMode::Any},
      {"warmup", true, RunMode::Forward},
      {"op-times", true, RunMode::Forward},
      {"host-cores", true, RunMode::Forward},
      // Training (DistributedRun.cpp).
      {"train", false, RunMode::Train},
      {"targets", true, RunMode::Train},
      {"optimizer", true, RunMode::Train},
      {"lr", true, RunMode::Train},
      {"weight-decay", true, RunMode::Train},
      {"beta1", true, RunMode::Train},
      {"beta2", true, RunMode::Train},
      {"eps", true, RunMode::Train},
      {"micro-batches", true, RunMode::Train},
      {"steps", true, RunMode::Train},
      {"save-grads", true, RunMode::Train},
      {"save-weights", true, RunMode::Train},
      {"clip-grad", true, RunMode::Train},
      {"warmup-steps", true, RunMode::Train},
      {"total-steps", true, RunMode::Train},
      {"lr-min", true, RunMode::Train},
      {"aux-loss-coef", true, RunMode::Train},
      {"capacity-factor", true, RunMode::Train},
      {"router-bias-update-rate", true, RunMode::Train},
      {"debug-nan-fill", false, RunMode::Train},
      {"data", true, RunMode::Train},
      {"data-format", true, RunMode::Train},
      {"loss-log", true, RunMode::Train},
      {"save-checkpoint", true, RunMode::Train},
      {"checkpoint-dir", true, RunMode::Train},
      {"keep-checkpoints", true, RunMode::Train},
      {"checkpoint-every", true, RunMode::Train},
      {"resume", true, RunMode::Train},
      {"fail-rank", true, RunMode::Train},
  };
  return flags;
}

const RunFlag *findRunFlag(const std::string &name) {
  for (const RunFlag &f : runFlags())
    if (name == f.name)
      return &f;
  return nullptr;
}

namespace {

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

} // namespace

std::string suggestRunFlag(const std::string &name) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  std::string best;
  size_t bestDistance = 3; // at most 2 edits
  for (const RunFlag &f : runFlags()) {
    const size_t d = editDistance(dashed, f.name);
    if (d < bestDistance && 2 * d < std::string(f.name).size()) {
      bestDistance = d;
      best = f.name;
    }
  }
  return best;
}

} // namespace disagmoe::tools
