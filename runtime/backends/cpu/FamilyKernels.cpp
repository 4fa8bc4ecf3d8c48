// fp32 CPU forward kernels of Qwen3/GPT-OSS/DeepSeek additions to Mixtral (FamilyKernels.h).
#include "runtime/backends/cpu/FamilyKernels.h"

#include "runtime/backends/cpu/Kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace disagmoe::cpu {

void addBias(float *y, int64_t rows, int64_t cols, const float *b) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] += b[c];
}

void causalAttentionVariant(const float *q, const float *k, const float *v, int64_t seqLen,
                            int64_t heads, int64_t kvHeads, int64_t headDim, const float *sinks,
                            int64_t window, float *out) {
  causalAttentionGeneral(q, k, v, seqLen, heads, kvHeads, headDim, headDim,
                         1.0 / std::sqrt(static_cast<double>(headDim)), sinks, window, out);
}

int64_t attentionProbs(const float *q, const float *k, const AttentionShape &a, int64_t h,
                       int64_t t0, int64_t t1, float *probs, float *sinkProb) {
  const int64_t g = h / (a.heads / a.kvHeads);
  const int64_t k0 = a.window > 0 ? std::max<int64_t>(0, t0 - a.window + 1) : 0, keys = t1 - k0;
  // scores = scale * Q_h K_g^T over rows [t0, t1) and keys [k0, t1); masked entries are
  // overwritten.
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(t1 - t0),
              static_cast<int>(keys), static_cast<int>(a.qkDim), static_cast<float>(a.scale),
              q + t0 * a.heads * a.qkDim + h * a.qkDim, static_cast<int>(a.heads * a.qkDim),
              k + k0 * a.kvHeads * a.qkDim + g * a.qkDim, static_cast<int>(a.kvHeads * a.qkDim),
              0.0f, probs, static_cast<int>(keys));
  for (int64_t t = t0; t < t1; ++t) {
    float *row = probs + (t - t0) * keys;
    const int64_t first = (a.window > 0 ? std::max<int64_t>(0, t - a.window + 1) : 0) - k0,
                  last = t - k0;
    float maxScore = a.sinks ? a.sinks[h] : -INFINITY;
    for (int64_t s = first; s <= last; ++s)
      maxScore = std::max(maxScore, row[s]);
    const float sinkExp = a.sinks ? std::exp(a.sinks[h] - maxScore) : 0.0f;
    double denom = sinkExp;
    for (int64_t s = first; s <= last; ++s)
      denom += row[s] = std::exp(row[s] - maxScore);
    const double inv = 1.0 / denom;
    std::fill(row, row + first, 0.0f);
    for (int64_t s = first; s <= last; ++s)
      row[s] = static_cast<float>(row[s] * inv);
    std::fill(row + last + 1, row + keys, 0.0f);
    if (sinkProb)
      sinkProb[t - t0] = static_cast<float>(sinkExp * inv);
  }
  return k0;
}

void causalAttentionGeneral(const float *q, const float *k, const float *v, int64_t seqLen,
                            int64_t heads, int64_t kvHeads, int64_t qkDim, int64_t vDim,
                            double scale, const float *sinks, int64_t window, float *out) {
  const AttentionShape a{seqLen, heads, kvHeads, qkDim, vDim, scale, sinks, window};
  std::vector<float> probs(static_cast<size_t>(kAttentionRowBlock * seqLen));
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t g = h / (heads / kvHeads);
    for (int64_t t0 = 0; t0 < seqLen; t0 += kAttentionRowBlock) {
      const int64_t t1 = std::min(seqLen, t0 + kAttentionRowBlock);
      const int64_t k0 = attentionProbs(q, k, a, h, t0, t1, probs.data(), nullptr);
      // out[t0:t1, h] = P V_g[k0:t1]
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(t1 - t0),
                  static_cast<int>(vDim), static_cast<int>(t1 - k0), 1.0f, probs.data(),
                  static_cast<int>(t1 - k0), v + k0 * kvHeads * vDim + g * vDim,
                  static_cast<int>(kvHeads * vDim), 0.0f, out + t0 * heads * vDim + h * vDim,
                  static_cast<int>(heads * vDim));
    }
  }
}

void ffnForward(const float *x, int64_t rows, int64_t hidden, int64_t inner, const FfnWeights &w,
                bool oai, float limit, float alpha, float *out) {
  if (rows == 0)
    return;
  const int64_t gateWidth = w.fusedGateUp ? 2 * inner : inner;
  std::vector<float> gateUp(static_cast<size_t>(rows * gateWidth));
  linear(x, rows, hidden, w.w1, gateWidth, gateUp.data());
  if (w.b1)
    addBias(gateUp.data(), rows, gateWidth, w.b1);
  std::vector<float> up;
  if (!w.fusedGateUp) {
    up.resize(static_cast<size_t>(rows * inner));
    linear(x, rows, hidden, w.w3, inner, up.data());
    if (w.b3)
      addBias(up.data(), rows, inner, w.b3);
  }
  std::vector<float> act(static_cast<size_t>(rows * inner));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < inner; ++i) {
      float g = w.fusedGateUp ? gateUp[r * gateWidth + 2 * i] : gateUp[r * inner + i];
      float u = w.fusedGateUp ? gateUp[r * gateWidth + 2 * i + 1] : up[r * inner + i];
      if (oai) {
        g = std::min(g, limit);
        u = std::min(std::max(u, -limit), limit);
        const float glu = g * (1.0f / (1.0f + std::exp(-(g * alpha))));
        act[r * inner + i] = (u + 1.0f) * glu;
      } else {
        act[r * inner + i] = g / (1.0f + std::exp(-g)) * u;
      }
    }
  linear(act.data(), rows, inner, w.w2, hidden, out);
  if (w.b2)
    addBias(out, rows, hidden, w.b2);
}

float plainActivation(float a, PlainActivation act) {
  switch (act) {
  case PlainActivation::Relu:
    return std::max(0.0f, a);
  case PlainActivation::GeluTanh: {
    const double d = a, kSqrt2OverPi = 0.7978845608028654; // sqrt(2 / pi)
    return static_cast<float>(0.5 * d *
                              (1.0 + std::tanh(kSqrt2OverPi * (d + 0.044715 * d * d * d))));
  }
  case PlainActivation::Silu:
    return a / (1.0f + std::exp(-a));
  case PlainActivation::Identity:
    return a;
  }
  return a;
}

void plainFfnForward(const float *x, int64_t rows, int64_t hidden, int64_t inner, const float *w1,
                     const float *b1, const float *w2, const float *b2, PlainActivation act,
                     float *out) {
  if (rows == 0)
    return;
  std::vector<float> a(static_cast<size_t>(rows * inner));
  linear(x, rows, hidden, w1, inner, a.data());
  if (b1)
    addBias(a.data(), rows, inner, b1);
  for (float &v : a)
    v = plainActivation(v, act);
  linear(a.data(), rows, inner, w2, hidden, out);
  if (b2)
    addBias(out, rows, hidden, b2);
}

} // namespace disagmoe::cpu
