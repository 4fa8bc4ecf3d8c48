//===- Memory.cpp ---------------------------------------------------------===//
#include "runtime/cost/Memory.h"

namespace disagmoe::cost {

std::string MemoryBreakdown::dominant() const {
  std::string name = "weights";
  double best = weights;
  if (gradients > best) { best = gradients; name = "gradients"; }
  if (optimizer > best) { best = optimizer; name = "optimizer state"; }
  if (activations > best) { name = "activations"; }
  return name;
}

double attentionActivationBytesPerToken(const ModelShape &m, int64_t layer, bool recompute) {
  double h = static_cast<double>(m.hidden);
  if (recompute)
    return 2 * h;
  const LayerShape &l = m.layers[layer];
  double q = static_cast<double>(l.heads * l.headDim), kv = static_cast<double>(l.kvHeads * l.headDim);
  return 8 * h + 4 * q + 4 * kv + 4.0 * l.heads + 8.0 * l.experts +
         8.0 * static_cast<double>(l.sharedHidden + l.denseHidden);
}

double expertActivationBytesPerPair(const ModelShape &m, int64_t layer, bool recompute) {
  double h = static_cast<double>(m.hidden);
  if (recompute)
    return 2 * h;
  return 2 * h + 8.0 * static_cast<double>(m.layers[layer].expertHidden);
}

namespace {
void addParams(MemoryBreakdown &b, double params, int64_t dp, const MemoryOptions &o) {
  b.weights += params * o.weightBytes;
  b.gradients += params * o.gradientBytes;
  b.optimizer += params * o.optimizerBytes / (o.zero1 && dp > 1 ? static_cast<double>(dp) : 1.0);
}
} // namespace

MemoryBreakdown attentionGpuMemory(const ModelShape &m, const std::vector<int64_t> &layers,
                                   bool holdsEmbedding, bool holdsHead, int64_t dpDegree,
                                   double tokensPerMicrobatch, int64_t inflight, bool recompute,
                                   const MemoryOptions &opts) {
  MemoryBreakdown b;
  double params = 0, actPerToken = 0;
  for (int64_t l : layers) {
    params += m.attentionSideParams(l);
    actPerToken += attentionActivationBytesPerToken(m, l, recompute);
  }
  double vocabRows = static_cast<double>(m.vocab) * m.hidden;
  if (holdsEmbedding)
    params += vocabRows;
  if (holdsHead && !(holdsEmbedding && m.tiedEmbeddings))
    params += vocabRows + m.hidden;
  addParams(b, params, dpDegree, opts);
  b.activations = actPerToken * tokensPerMicrobatch * static_cast<double>(inflight);
  if (holdsHead) // bf16 logits of one micro-batch, kept for the loss's backward
    b.activations += 2.0 * tokensPerMicrobatch * m.vocab;
  return b;
}

MemoryBreakdown ffnGpuMemory(const ModelShape &m, const std::vector<int64_t> &layers,
                             int64_t expertsPerRank, int64_t dpDegree, double pairsPerMicrobatch,
                             int64_t inflight, bool recompute, const MemoryOptions &opts) {
  MemoryBreakdown b;
  double params = 0, actPerPair = 0;
  for (int64_t l : layers) {
    if (!m.layers[l].isMoe())
      continue;
    params += static_cast<double>(expertsPerRank) * m.expertParams(l);
    actPerPair += expertActivationBytesPerPair(m, l, recompute);
  }
  addParams(b, params, dpDegree, opts);
  b.activations = actPerPair * pairsPerMicrobatch * static_cast<double>(inflight);
  return b;
}

} // namespace disagmoe::cost
