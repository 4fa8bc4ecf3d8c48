//===- Memory.cpp ---------------------------------------------------------===//
#include "runtime/cost/Memory.h"
#include "runtime/cost/Roofline.h"

#include <algorithm>

namespace disagmoe::cost {

std::string MemoryBreakdown::dominant() const {
  std::string name = "weights";
  double best = weights;
  if (gradients > best) {
    best = gradients;
    name = "gradients";
  }
  if (optimizer > best) {
    best = optimizer;
    name = "optimizer state";
  }
  if (activations > best) {
    name = "activations";
  }
  return name;
}

const char *recomputationName(Recomputation r) {
  switch (r) {
  case Recomputation::Selective:
    return "selective";
  case Recomputation::Full:
    return "full";
  case Recomputation::Redispatch:
    return "redispatch";
  default:
    return "none";
  }
}

double attentionActivationBytesPerToken(const ModelShape &m, int64_t layer, Recomputation r,
                                        Recomputation ffnR) {
  double h = static_cast<double>(m.hidden);
  const LayerShape &l = m.layers[layer];
  if (r == Recomputation::Full || r == Recomputation::Redispatch)
    return 2 * h + (ffnR == Recomputation::Redispatch && l.isMoe()
                        ? 2 * h + 12.0 * static_cast<double>(l.topK)
                        : 0.0);
  double q = static_cast<double>(l.heads * l.headDim),
         kv = static_cast<double>(l.kvHeads * l.headDim);
  double swiglu = static_cast<double>(l.sharedHidden + l.denseHidden);
  bool selective = r == Recomputation::Selective;
  return (selective ? 4 : 8) * h + 4 * q + 4 * kv + 4.0 * l.heads + 8.0 * l.experts +
         (selective ? 4 : 8) * swiglu;
}

double expertActivationBytes(const ModelShape &m, int64_t layer, Recomputation r, double tokens,
                             double pairs) {
  double h = static_cast<double>(m.hidden), I = static_cast<double>(m.layers[layer].expertHidden);
  switch (r) {
  case Recomputation::Redispatch:
    return 0;
  case Recomputation::Full:
    return (2 * h + 16) * tokens + 12 * pairs;
  case Recomputation::Selective:
    return (2 * h + 4 * I) * pairs;
  default:
    return (2 * h + 8 * I) * pairs;
  }
}

double expertActivationBytesPerPair(const ModelShape &m, int64_t layer, bool recompute) {
  double h = static_cast<double>(m.hidden);
  if (recompute)
    return 2 * h;
  return 2 * h + 8.0 * static_cast<double>(m.layers[layer].expertHidden);
}

double contextParallelBufferBytes(const ModelShape &m, const std::vector<int64_t> &layers,
                                  int64_t seqLen, int64_t cp) {
  if (cp <= 1)
    return 0;
  double most = 0;
  for (int64_t l : layers)
    most = std::max(most, kvRingChunkBytes(m, l, seqLen, cp));
  return 4 * most;
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
                                   double tokensPerMicrobatch, int64_t inflight, Recomputation r,
                                   Recomputation ffnR, const MemoryOptions &opts) {
  MemoryBreakdown b;
  double params = 0, actPerToken = 0, transient = 0;
  const bool recomputes = r == Recomputation::Full || r == Recomputation::Redispatch;
  for (int64_t l : layers) {
    params += m.attentionSideParams(l);
    actPerToken += attentionActivationBytesPerToken(m, l, r, ffnR);
    if (recomputes) // the layer being recomputed, for its backward
      transient = std::max(transient, attentionActivationBytesPerToken(m, l, Recomputation::None));
  }
  double vocabRows = static_cast<double>(m.vocab) * m.hidden;
  if (holdsEmbedding)
    params += vocabRows;
  if (holdsHead && !(holdsEmbedding && m.tiedEmbeddings))
    params += vocabRows + m.hidden;
  addParams(b, params, dpDegree, opts);
  b.activations = (actPerToken * static_cast<double>(inflight) + transient) * tokensPerMicrobatch;
  if (holdsHead) // bf16 logits of one micro-batch, kept for the loss's backward
    b.activations += 2.0 * tokensPerMicrobatch * m.vocab;
  return b;
}

MemoryBreakdown ffnGpuMemory(const ModelShape &m, const std::vector<int64_t> &layers,
                             int64_t expertsPerRank, int64_t dpDegree, double tokensPerMicrobatch,
                             double pairsPerMicrobatch, int64_t inflight, Recomputation r,
                             const MemoryOptions &opts) {
  MemoryBreakdown b;
  double params = 0, act = 0, transient = 0;
  const bool recomputes = r == Recomputation::Full || r == Recomputation::Redispatch;
  for (int64_t l : layers) {
    if (!m.layers[l].isMoe())
      continue;
    params += static_cast<double>(expertsPerRank) * m.expertParams(l);
    act += expertActivationBytes(m, l, r, tokensPerMicrobatch, pairsPerMicrobatch);
    if (recomputes) // the layer being recomputed, for its backward
      transient =
          std::max(transient, expertActivationBytes(m, l, Recomputation::None, tokensPerMicrobatch,
                                                    pairsPerMicrobatch));
  }
  addParams(b, params, dpDegree, opts);
  b.activations = act * static_cast<double>(inflight) + transient;
  return b;
}

} // namespace disagmoe::cost
