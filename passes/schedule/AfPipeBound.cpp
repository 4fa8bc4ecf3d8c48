//===- AfPipeBound.cpp - a lower bound on any simulation of an AF-Pipe schedule -----===//
#include "passes/schedule/AfPipeBound.h"

#include <algorithm>

namespace disagmoe::afpipe {

double computeBoundSeconds(const Workload &work, const Config &config, const sched::Hardware &hw) {
  const double peak =
      hw.peakFlops * (config.computeEfficiency > 0 ? config.computeEfficiency : 1.0);
  const int64_t L = static_cast<int64_t>(work.layers.size()), p = config.groups;
  if (peak <= 0 || p < 1 || config.microbatches < 1)
    return 0;
  double busiest = 0; // FLOPs per micro-batch
  for (int64_t g = 0; g < p; ++g) {
    double attn = 0, ffn = 0;
    for (int64_t l = g; l < L; l += p) {
      const LayerWork &lw = work.layers[l];
      attn += lw.attnFwdFlops + lw.attnBwdFlops;
      if (lw.moe)
        ffn += lw.ffnFwdFlops + lw.ffnBwdFlops;
      if (lw.alwaysOnFfn)
        ffn += lw.alwaysOnFwdFlops + lw.alwaysOnBwdFlops;
    }
    busiest = std::max({busiest, attn, ffn});
  }
  return busiest * static_cast<double>(config.microbatches) / peak;
}

} // namespace disagmoe::afpipe
