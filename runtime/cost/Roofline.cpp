//===- Roofline.cpp -------------------------------------------------------===//
#include "runtime/cost/Roofline.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace disagmoe::cost {

double causalPairs(int64_t s, int64_t w) {
  double sd = static_cast<double>(s);
  if (w <= 0 || w >= s)
    return sd * (sd + 1) / 2;
  double wd = static_cast<double>(w);
  return wd * (wd + 1) / 2 + (sd - wd) * wd;
}

AttentionFlops attentionSideForwardFlops(const ModelShape &m, int64_t layer, double sequences,
                                         int64_t seqLen) {
  const LayerShape &l = m.layers[layer];
  double h = static_cast<double>(m.hidden);
  double q = static_cast<double>(l.heads * l.headDim);
  double kv = static_cast<double>(l.kvHeads * l.headDim);
  double tokens = sequences * static_cast<double>(seqLen);
  AttentionFlops f;
  f.projections = 2 * tokens * h * (q + 2 * kv) + 2 * tokens * q * h;
  f.scores = sequences * 4.0 * q * causalPairs(seqLen, l.window);
  f.router = 2 * tokens * h * l.experts;
  f.sharedAndDense = 6 * tokens * h * static_cast<double>(l.sharedHidden + l.denseHidden);
  return f;
}

double routedExpertForwardFlops(const ModelShape &m, int64_t layer, double tokens) {
  const LayerShape &l = m.layers[layer];
  // 2 FLOP per multiply-add of each of the expert's matrices (3 SwiGLU, 2 non-gated).
  return 2.0 * static_cast<double>(l.expertMatrices) * tokens * static_cast<double>(l.topK) *
         m.hidden * static_cast<double>(l.expertHidden);
}

double headForwardFlops(const ModelShape &m, double tokens) {
  return 2 * tokens * static_cast<double>(m.hidden) * static_cast<double>(m.vocab);
}

double trainingMultiplier(bool recompute) { return recompute ? 4.0 : 3.0; }

double selectiveRecomputeFlopsAttention(const ModelShape &m, int64_t layer, double tokens) {
  const LayerShape &l = m.layers[layer];
  return tokens * (8.0 * static_cast<double>(m.hidden) +
                   5.0 * static_cast<double>(l.sharedHidden + l.denseHidden));
}

double selectiveRecomputeFlopsExpert(const ModelShape &m, int64_t layer, double pairs) {
  return pairs * 5.0 * static_cast<double>(m.layers[layer].expertHidden);
}

double kvRingChunkBytes(const ModelShape &m, int64_t layer, int64_t seqLen, int64_t cp) {
  const LayerShape &l = m.layers[layer];
  return 2.0 * (static_cast<double>(seqLen) / static_cast<double>(cp)) *
         static_cast<double>(l.kvHeads * l.headDim) * kBf16Bytes;
}

double ringAttentionSeconds(double coreSeconds, double chunkSeconds, int64_t cp) {
  if (cp <= 1)
    return coreSeconds;
  double step = coreSeconds / static_cast<double>(cp);
  return step + static_cast<double>(cp - 1) * std::max(step, chunkSeconds);
}

namespace {
/// C(n, k) / C(N, k) as a product, stable for large values.
double binomialRatio(int64_t n, int64_t N, int64_t k) {
  if (n < k)
    return 0.0;
  double r = 1.0;
  for (int64_t i = 0; i < k; ++i)
    r *= static_cast<double>(n - i) / static_cast<double>(N - i);
  return r;
}
} // namespace

double rankHitProbability(int64_t experts, int64_t topK, int64_t held) {
  return 1.0 - binomialRatio(experts - held, experts, topK);
}

double expectedDistinctRanks(int64_t experts, int64_t topK, int64_t ranks) {
  if (ranks <= 1)
    return 1.0;
  // The planner asks this for every layer of every candidate with the same few arguments: the
  // last answer of this thread is kept (the same sum, so the same bits).
  struct Last {
    int64_t experts = -1, topK = -1, ranks = -1;
    double d = 0;
  };
  thread_local Last last;
  if (last.experts == experts && last.topK == topK && last.ranks == ranks)
    return last.d;
  // A contiguous split holds floor(E/R) or floor(E/R) + 1 experts per rank: the two
  // probabilities once, summed rank by rank in the same order as term by term.
  const int64_t low = ranks > 0 ? experts / ranks : 0;
  const double pLow = rankHitProbability(experts, topK, low),
               pHigh = rankHitProbability(experts, topK, low + 1);
  double d = 0;
  for (int64_t j = 0; j < ranks; ++j) {
    // Contiguous split: rank j holds experts [j*E/R, (j+1)*E/R).
    int64_t held = (j + 1) * experts / ranks - j * experts / ranks;
    d += held == low ? pLow : held == low + 1 ? pHigh : rankHitProbability(experts, topK, held);
  }
  last = {experts, topK, ranks, d};
  return d;
}

ExchangeBytes exchangeBytes(const ModelShape &m, int64_t layer, double tokens, int64_t ffnRanks,
                            bool residualCrossesNetwork) {
  const LayerShape &l = m.layers[layer];
  ExchangeBytes b;
  if (!l.isMoe())
    return b;
  double h = static_cast<double>(m.hidden);
  double k = static_cast<double>(l.topK);
  double d = expectedDistinctRanks(l.experts, l.topK, ffnRanks);
  double pair = 8 + kBf16Bytes * h;                 // token id + bf16 vector
  double m2n = tokens * (d * (pair + 8) + 12 * k);  // + count per pair, expert/gate per k
  double n2mBackward = tokens * d * pair;           // dL/dy
  double n2m = tokens * d * pair;                   // expert outputs
  double m2nBackward = tokens * (d * pair + 4 * k); // dL/dx, dL/dg
  b.m2n = m2n;
  b.attnSend = m2n + n2mBackward;
  b.attnRecv = n2m + m2nBackward;
  b.ffnRecv = b.attnSend;
  b.ffnSend = b.attnRecv;
  if (residualCrossesNetwork) {
    double residual = 2 * tokens * pair; // forward h, backward dL/dh
    b.attnSend += residual;
    b.attnRecv += residual;
  }
  return b;
}

double flopsPerByte(double flops, double bytes) {
  return bytes > 0 ? flops / bytes : std::numeric_limits<double>::infinity();
}

} // namespace disagmoe::cost
