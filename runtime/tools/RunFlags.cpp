// The table of disagmoe-run's flags and the nearest-flag suggestion (RunFlags.h).
#include "runtime/tools/RunFlags.h"

#include <algorithm>

namespace disagmoe::tools {

const std::vector<RunFlag> &runFlags() {
  static const std::vector<RunFlag> flags = {
      // The forward pass (disagmoe-run.cpp) and --backend sim.
      {"backend", true},
      {"comm", true},
      {"input", true},
      {"output", true},
      {"batch", true},
      {"seq-len", true},
      {"seed", true},
      {"timeout", true},
      {"trace", true},
      {"op-times-out", true},
      {"warmup", true},
      {"op-times", true},
      {"host-cores", true},
      // Training (DistributedRun.cpp).
      {"train", false},
      {"targets", true},
      {"optimizer", true},
      {"lr", true},
      {"weight-decay", true},
      {"beta1", true},
      {"beta2", true},
      {"eps", true},
      {"micro-batches", true},
      {"steps", true},
      {"save-grads", true},
      {"save-weights", true},
      {"clip-grad", true},
      {"warmup-steps", true},
      {"total-steps", true},
      {"lr-min", true},
      {"aux-loss-coef", true},
      {"capacity-factor", true},
      {"router-bias-update-rate", true},
      {"debug-nan-fill", false},
      {"data", true},
      {"data-format", true},
      {"loss-log", true},
      {"save-checkpoint", true},
      {"checkpoint-dir", true},
      {"keep-checkpoints", true},
      {"checkpoint-every", true},
      {"resume", true},
      {"fail-rank", true},
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
