#include "runtime/backends/cpu/FamilyKernels.h"

#include "runtime/backends/cpu/Kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace disagmoe::cpu {

void addBias(float* y, int64_t rows, int64_t cols, const float* b) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] += b[c];
}

void causalAttentionVariant(const float* q, const float* k, const float* v, int64_t seqLen, int64_t heads,
                            int64_t kvHeads, int64_t headDim, const float* sinks, int64_t window, float* out) {
  causalAttentionGeneral(q, k, v, seqLen, heads, kvHeads, headDim, headDim,
                         1.0 / std::sqrt(static_cast<double>(headDim)), sinks, window, out);
}

void causalAttentionGeneral(const float* q, const float* k, const float* v, int64_t seqLen, int64_t heads,
                            int64_t kvHeads, int64_t qkDim, int64_t vDim, double scale, const float* sinks,
                            int64_t window, float* out) {
  const int64_t groupSize = heads / kvHeads;
  const int64_t qStride = heads * qkDim, kStride = kvHeads * qkDim, vStride = kvHeads * vDim;
  std::vector<double> scores(static_cast<size_t>(seqLen));
  std::vector<double> acc(static_cast<size_t>(vDim));
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t g = h / groupSize;
    for (int64_t t = 0; t < seqLen; ++t) {
      const int64_t first = window > 0 ? std::max<int64_t>(0, t - window + 1) : 0;
      const float* qv = q + t * qStride + h * qkDim;
      double maxScore = sinks ? static_cast<double>(sinks[h]) : -INFINITY;
      for (int64_t s = first; s <= t; ++s) {
        const float* kv = k + s * kStride + g * qkDim;
        double dot = 0;
        for (int64_t d = 0; d < qkDim; ++d)
          dot += static_cast<double>(qv[d]) * kv[d];
        scores[s] = dot * scale;
        maxScore = std::max(maxScore, scores[s]);
      }
      double denom = sinks ? std::exp(static_cast<double>(sinks[h]) - maxScore) : 0.0;
      for (int64_t s = first; s <= t; ++s) {
        scores[s] = std::exp(scores[s] - maxScore);
        denom += scores[s];
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t s = first; s <= t; ++s) {
        const float* vv = v + s * vStride + g * vDim;
        const double p = scores[s] / denom;
        for (int64_t d = 0; d < vDim; ++d)
          acc[d] += p * vv[d];
      }
      float* o = out + t * heads * vDim + h * vDim;
      for (int64_t d = 0; d < vDim; ++d)
        o[d] = static_cast<float>(acc[d]);
    }
  }
}

void ffnForward(const float* x, int64_t rows, int64_t hidden, int64_t inner, const FfnWeights& w, bool oai,
                float limit, float alpha, float* out) {
  if (rows == 0) return;
  const int64_t gateWidth = w.fusedGateUp ? 2 * inner : inner;
  std::vector<float> gateUp(static_cast<size_t>(rows * gateWidth));
  linear(x, rows, hidden, w.w1, gateWidth, gateUp.data());
  if (w.b1) addBias(gateUp.data(), rows, gateWidth, w.b1);
  std::vector<float> up;
  if (!w.fusedGateUp) {
    up.resize(static_cast<size_t>(rows * inner));
    linear(x, rows, hidden, w.w3, inner, up.data());
    if (w.b3) addBias(up.data(), rows, inner, w.b3);
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
  if (w.b2) addBias(out, rows, hidden, w.b2);
}

float plainActivation(float a, PlainActivation act) {
  switch (act) {
  case PlainActivation::Relu: return std::max(0.0f, a);
  case PlainActivation::GeluTanh: {
    const double d = a, kSqrt2OverPi = 0.7978845608028654; // sqrt(2 / pi)
    return static_cast<float>(0.5 * d * (1.0 + std::tanh(kSqrt2OverPi * (d + 0.044715 * d * d * d))));
  }
  case PlainActivation::Silu: return a / (1.0f + std::exp(-a));
  case PlainActivation::Identity: return a;
  }
  return a;
}

void plainFfnForward(const float* x, int64_t rows, int64_t hidden, int64_t inner, const float* w1, const float* b1,
                     const float* w2, const float* b2, PlainActivation act, float* out) {
  if (rows == 0) return;
  std::vector<float> a(static_cast<size_t>(rows * inner));
  linear(x, rows, hidden, w1, inner, a.data());
  if (b1) addBias(a.data(), rows, inner, b1);
  for (float& v : a) v = plainActivation(v, act);
  linear(a.data(), rows, inner, w2, hidden, out);
  if (b2) addBias(out, rows, hidden, b2);
}

} // namespace disagmoe::cpu
