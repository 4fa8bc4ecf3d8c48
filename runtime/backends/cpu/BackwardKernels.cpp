// fp32 CPU backward kernels: dx written, dW accumulated, GEMMs on cblas (BackwardKernels.h).
#include "runtime/backends/cpu/BackwardKernels.h"

#include "runtime/backends/cpu/FamilyKernels.h"
#include "runtime/backends/cpu/Kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace disagmoe::cpu {

void embeddingBackward(const float *dOut, const int64_t *ids, int64_t tokens, int64_t hidden,
                       float *dW) {
  for (int64_t t = 0; t < tokens; ++t) {
    float *row = dW + ids[t] * hidden;
    const float *g = dOut + t * hidden;
    for (int64_t j = 0; j < hidden; ++j)
      row[j] += g[j];
  }
}

void rmsNormBackward(const float *x, const float *dy, int64_t rows, int64_t hidden, const float *w,
                     float eps, float *dx, float *dw) {
  for (int64_t t = 0; t < rows; ++t) {
    const float *xr = x + t * hidden;
    const float *dyr = dy + t * hidden;
    double sumSq = 0;
    for (int64_t j = 0; j < hidden; ++j)
      sumSq += static_cast<double>(xr[j]) * xr[j];
    // The same fp32 statistic as the forward kernel.
    const float variance = static_cast<float>(sumSq / static_cast<double>(hidden));
    const double r = 1.0f / std::sqrt(variance + eps);
    double dot = 0; // sum_j (dy_j w_j) x_j
    for (int64_t j = 0; j < hidden; ++j)
      dot += static_cast<double>(dyr[j]) * w[j] * xr[j];
    if (dw)
      for (int64_t j = 0; j < hidden; ++j)
        dw[j] += static_cast<float>(static_cast<double>(dyr[j]) * xr[j] * r);
    const double c = r * r * r * dot / static_cast<double>(hidden);
    float *dxr = dx + t * hidden;
    for (int64_t j = 0; j < hidden; ++j)
      dxr[j] = static_cast<float>(r * static_cast<double>(dyr[j]) * w[j] - xr[j] * c);
  }
}

void linearBackward(const float *x, const float *dy, int64_t rows, int64_t in, const float *w,
                    int64_t out, float *dx, float *dW) {
  if (dx) {
    if (rows > 0 && in > 0) {
      if (out == 0)
        std::fill_n(dx, rows * in, 0.0f);
      else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
                    static_cast<int>(in), static_cast<int>(out), 1.0f, dy, static_cast<int>(out), w,
                    static_cast<int>(out), 0.0f, dx, static_cast<int>(in));
    }
  }
  if (dW && rows > 0 && in > 0 && out > 0)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(in),
                static_cast<int>(out), static_cast<int>(rows), 1.0f, x, static_cast<int>(in), dy,
                static_cast<int>(out), 1.0f, dW, static_cast<int>(out));
}

void ropeBackward(float *dx, int64_t tokens, int64_t heads, int64_t headDim,
                  const int64_t *positions, const kernels::RopeSpec &spec) {
  const RopeTable table(positions, tokens, headDim, spec); // exactly the forward's fp32 cos/sin
  const int64_t half = table.half;
  for (int64_t t = 0; t < tokens; ++t) {
    const float *cosv = table.cos(t);
    const float *sinv = table.sin(t);
    for (int64_t h = 0; h < heads; ++h) {
      float *v = dx + (t * heads + h) * headDim;
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cosv[i] + b * sinv[i];
        v[i + half] = b * cosv[i] - a * sinv[i];
      }
    }
  }
}

void causalAttentionBackward(const float *q, const float *k, const float *v, const float *dOut,
                             int64_t seqLen, int64_t heads, int64_t kvHeads, int64_t headDim,
                             float *dq, float *dk, float *dv) {
  causalAttentionVariantBackward(q, k, v, dOut, seqLen, heads, kvHeads, headDim, nullptr, 0, dq, dk,
                                 dv, nullptr);
}

void causalAttentionVariantBackward(const float *q, const float *k, const float *v,
                                    const float *dOut, int64_t seqLen, int64_t heads,
                                    int64_t kvHeads, int64_t headDim, const float *sinks,
                                    int64_t window, float *dq, float *dk, float *dv,
                                    float *dSinks) {
  causalAttentionGeneralBackward(q, k, v, dOut, seqLen, heads, kvHeads, headDim, headDim,
                                 1.0 / std::sqrt(static_cast<double>(headDim)), sinks, window, dq,
                                 dk, dv, dSinks);
}

void causalAttentionGeneralBackward(const float *q, const float *k, const float *v,
                                    const float *dOut, int64_t seqLen, int64_t heads,
                                    int64_t kvHeads, int64_t headDim, int64_t vDim, double scale,
                                    const float *sinks, int64_t window, float *dq, float *dk,
                                    float *dv, float *dSinks) {
  const AttentionShape a{seqLen, heads, kvHeads, headDim, vDim, scale, sinks, window};
  const int groupSize = static_cast<int>(heads / kvHeads);
  const int qStride = static_cast<int>(heads * headDim),
            kvStride = static_cast<int>(kvHeads * headDim);
  const int oStride = static_cast<int>(heads * vDim), vStride = static_cast<int>(kvHeads * vDim);
  // dk and dv sum over the query heads of each kv group (sgemm with beta 1 onto zeros).
  std::fill_n(dk, seqLen * kvStride, 0.0f);
  std::fill_n(dv, seqLen * vStride, 0.0f);
  const size_t block = static_cast<size_t>(kAttentionRowBlock * seqLen);
  std::vector<float> p(block), ds(block), sinkProb(static_cast<size_t>(kAttentionRowBlock));
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t g = h / groupSize;
    double dSink = 0;
    for (int64_t t0 = 0; t0 < seqLen; t0 += kAttentionRowBlock) {
      const int64_t t1 = std::min(seqLen, t0 + kAttentionRowBlock);
      const int rows = static_cast<int>(t1 - t0);
      const int64_t k0 = attentionProbs(q, k, a, h, t0, t1, p.data(), sinkProb.data());
      const int keys = static_cast<int>(t1 - k0);
      const float *qh = q + t0 * qStride + h * headDim;
      const float *kg = k + k0 * kvStride + g * headDim;
      const float *vg = v + k0 * vStride + g * vDim;
      const float *doh = dOut + t0 * oStride + h * vDim;
      // dP = dO_h V_g^T, dV_g += P^T dO_h
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, keys, static_cast<int>(vDim), 1.0f,
                  doh, oStride, vg, vStride, 0.0f, ds.data(), keys);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, keys, static_cast<int>(vDim), rows, 1.0f,
                  p.data(), keys, doh, oStride, 1.0f, dv + k0 * vStride + g * vDim, vStride);
      // dS = P (dP - <P, dP>) scale; the sink's probability carries no value (its dP is 0), so
      // d sink = p_sink (0 - <P, dP>).
      for (int r = 0; r < rows; ++r) {
        const float *pr = p.data() + static_cast<size_t>(r) * keys;
        float *dr = ds.data() + static_cast<size_t>(r) * keys;
        double pdp = 0;
        for (int s = 0; s < keys; ++s)
          pdp += static_cast<double>(pr[s]) * dr[s];
        for (int s = 0; s < keys; ++s)
          dr[s] = static_cast<float>(pr[s] * (dr[s] - pdp) * scale);
        if (sinks)
          dSink -= sinkProb[r] * pdp;
      }
      // dQ_h = dS K_g, dK_g += dS^T Q_h
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, static_cast<int>(headDim), keys,
                  1.0f, ds.data(), keys, kg, kvStride, 0.0f, dq + t0 * qStride + h * headDim,
                  qStride);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, keys, static_cast<int>(headDim), rows,
                  1.0f, ds.data(), keys, qh, qStride, 1.0f, dk + k0 * kvStride + g * headDim,
                  kvStride);
    }
    if (dSinks)
      dSinks[h] += static_cast<float>(dSink);
  }
}

void routerGatesBackward(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                         RouterScoring scoring, const int64_t *ids, const float *dGates,
                         float *dLogits) {
  std::vector<double> p(static_cast<size_t>(experts)), dp(static_cast<size_t>(experts));
  std::vector<double> g(static_cast<size_t>(k));
  for (int64_t t = 0; t < tokens; ++t) {
    const float *z = logits + t * experts;
    const int64_t *id = ids + t * k;
    const float *dg = dGates + t * k;
    float *dz = dLogits + t * experts;
    std::fill_n(dz, experts, 0.0f);
    if (scoring == RouterScoring::TopkSoftmax) {
      // g = softmax over the k chosen logits.
      double m = -INFINITY, sum = 0, dot = 0;
      for (int64_t i = 0; i < k; ++i)
        m = std::max(m, static_cast<double>(z[id[i]]));
      for (int64_t i = 0; i < k; ++i)
        sum += g[i] = std::exp(z[id[i]] - m);
      for (int64_t i = 0; i < k; ++i)
        dot += dg[i] * (g[i] /= sum);
      for (int64_t i = 0; i < k; ++i)
        dz[id[i]] = static_cast<float>(g[i] * (dg[i] - dot));
      continue;
    }
    if (isSigmoidScoring(scoring)) {
      // s = sigmoid(z) of the chosen experts (double); the choice, bias and group mask included,
      // is piecewise constant and contributes nothing.
      double d = 0, dot = 0;
      for (int64_t i = 0; i < k; ++i) {
        g[i] = 1.0 / (1.0 + std::exp(-static_cast<double>(z[id[i]])));
        d += g[i];
      }
      const bool renorm = scoring == RouterScoring::SigmoidGroupTopkRenorm;
      d += 1e-20;
      if (renorm)
        for (int64_t i = 0; i < k; ++i)
          dot += dg[i] * (g[i] / d);
      for (int64_t i = 0; i < k; ++i) {
        const double ds = renorm ? (dg[i] - dot) / d : dg[i];
        dz[id[i]] = static_cast<float>(ds * g[i] * (1.0 - g[i]));
      }
      continue;
    }
    double m = -INFINITY, sum = 0;
    for (int64_t e = 0; e < experts; ++e)
      m = std::max(m, static_cast<double>(z[e]));
    for (int64_t e = 0; e < experts; ++e)
      sum += p[e] = std::exp(z[e] - m);
    for (int64_t e = 0; e < experts; ++e)
      p[e] /= sum;
    std::fill(dp.begin(), dp.end(), 0.0);
    if (scoring == RouterScoring::SoftmaxTopkRenorm) {
      double s = 0, dot = 0;
      for (int64_t i = 0; i < k; ++i)
        s += p[id[i]];
      for (int64_t i = 0; i < k; ++i)
        dot += dg[i] * (p[id[i]] / s);
      for (int64_t i = 0; i < k; ++i)
        dp[id[i]] = (dg[i] - dot) / s;
    } else {
      for (int64_t i = 0; i < k; ++i)
        dp[id[i]] = dg[i];
    }
    double pdp = 0;
    for (int64_t e = 0; e < experts; ++e)
      pdp += p[e] * dp[e];
    for (int64_t e = 0; e < experts; ++e)
      dz[e] = static_cast<float>(p[e] * (dp[e] - pdp));
  }
}

void swigluExpertBackward(const float *x, const float *dy, int64_t rows, int64_t hidden,
                          int64_t expertHidden, const float *w1, const float *w3, const float *w2,
                          float *dx, float *dw1, float *dw3, float *dw2, float *y) {
  if (rows == 0)
    return;
  const size_t n = static_cast<size_t>(rows * expertHidden);
  std::vector<float> a(n), b(n), hid(n), dh(n), expNeg(n);
  linear(x, rows, hidden, w1, expertHidden, a.data());
  linear(x, rows, hidden, w3, expertHidden, b.data());
  for (size_t i = 0; i < n; ++i) {
    const float z = a[i];
    expNeg[i] = std::exp(-z);
    hid[i] = z / (1.0f + expNeg[i]) * b[i]; // as the forward kernel
  }
  if (y)
    linear(hid.data(), rows, expertHidden, w2, hidden, y);
  // dh = dy W2^T, dW2 += hid^T dy
  linearBackward(hid.data(), dy, rows, expertHidden, w2, hidden, dh.data(), dw2);
  // da, db into a and b (their forward values are no longer needed after this loop).
  for (size_t i = 0; i < n; ++i) {
    const double z = a[i];
    const double sig = 1.0 / (1.0 + static_cast<double>(expNeg[i])); // the forward's fp32 exp(-z)
    const double silu = z * sig;
    const double dsilu = sig * (1.0 + z * (1.0 - sig));
    const double d = dh[i];
    a[i] = static_cast<float>(d * b[i] * dsilu);
    b[i] = static_cast<float>(d * silu);
  }
  // dx = da W1^T + db W3^T; dW1 += x^T da; dW3 += x^T db.
  std::vector<float> dx3(static_cast<size_t>(rows * hidden));
  linearBackward(x, a.data(), rows, hidden, w1, expertHidden, dx, dw1);
  linearBackward(x, b.data(), rows, hidden, w3, expertHidden, dx3.data(), dw3);
  for (size_t i = 0; i < dx3.size(); ++i)
    dx[i] += dx3[i];
}

double crossEntropyBackward(const float *logits, const int64_t *targets, int64_t rows,
                            int64_t vocab, float gradScale, float *dLogits) {
  double total = 0;
  std::vector<double> e(static_cast<size_t>(vocab));
  for (int64_t t = 0; t < rows; ++t) {
    const float *z = logits + t * vocab;
    float *dz = dLogits + t * vocab;
    if (targets[t] < 0) {
      std::fill_n(dz, vocab, 0.0f);
      continue;
    }
    double m = -INFINITY;
    for (int64_t j = 0; j < vocab; ++j)
      m = std::max(m, static_cast<double>(z[j]));
    double sum = 0;
    for (int64_t j = 0; j < vocab; ++j)
      sum += e[j] = std::exp(z[j] - m);
    const double lse = m + std::log(sum), inv = 1.0 / sum;
    total += lse - z[targets[t]];
    for (int64_t j = 0; j < vocab; ++j) {
      const double prob = e[j] * inv; // = exp(z_j - lse), one exp per logit
      dz[j] = static_cast<float>((prob - (j == targets[t] ? 1.0 : 0.0)) * gradScale);
    }
  }
  return total;
}

void nextTokenTargets(const int64_t *ids, int64_t batch, int64_t seq, int64_t *targets) {
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t i = 0; i < seq; ++i)
      targets[s * seq + i] = i + 1 < seq ? ids[s * seq + i + 1] : -1;
}

void biasBackward(const float *dy, int64_t rows, int64_t cols, float *db) {
  for (int64_t j = 0; j < cols; ++j) {
    double acc = 0;
    for (int64_t r = 0; r < rows; ++r)
      acc += dy[r * cols + j];
    db[j] += static_cast<float>(acc);
  }
}

void ffnBackward(const float *x, const float *dy, int64_t rows, int64_t hidden, int64_t inner,
                 const FfnWeights &w, bool oai, float limit, float alpha, float *dx,
                 const FfnGrads &g, float *y) {
  std::fill(dx, dx + rows * hidden, 0.0f);
  if (rows == 0)
    return;
  const int64_t gw = w.fusedGateUp ? 2 * inner : inner;
  std::vector<float> gateUp(static_cast<size_t>(rows * gw)), up,
      act(static_cast<size_t>(rows * inner));
  linear(x, rows, hidden, w.w1, gw, gateUp.data());
  if (w.b1)
    addBias(gateUp.data(), rows, gw, w.b1);
  if (!w.fusedGateUp) {
    up.resize(static_cast<size_t>(rows * inner));
    linear(x, rows, hidden, w.w3, inner, up.data());
    if (w.b3)
      addBias(up.data(), rows, inner, w.b3);
  }
  const auto gateAt = [&](int64_t r, int64_t i) -> float & {
    return w.fusedGateUp ? gateUp[r * gw + 2 * i] : gateUp[r * inner + i];
  };
  const auto upAt = [&](int64_t r, int64_t i) -> float & {
    return w.fusedGateUp ? gateUp[r * gw + 2 * i + 1] : up[r * inner + i];
  };
  // The activation exactly as FamilyKernels' ffnForward computes it.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < inner; ++i) {
      float gv = gateAt(r, i), uv = upAt(r, i);
      if (oai) {
        gv = std::min(gv, limit);
        uv = std::min(std::max(uv, -limit), limit);
        act[r * inner + i] = (uv + 1.0f) * (gv * (1.0f / (1.0f + std::exp(-(gv * alpha)))));
      } else {
        act[r * inner + i] = gv / (1.0f + std::exp(-gv)) * uv;
      }
    }
  if (y) {
    linear(act.data(), rows, inner, w.w2, hidden, y);
    if (w.b2)
      addBias(y, rows, hidden, w.b2);
  }
  std::vector<float> dAct(static_cast<size_t>(rows * inner));
  linearBackward(act.data(), dy, rows, inner, w.w2, hidden, dAct.data(), g.w2);
  if (g.b2)
    biasBackward(dy, rows, hidden, g.b2);
  // dAct -> d(gate pre-activation), d(up pre-activation), written over gateUp / up in place.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < inner; ++i) {
      const double da = dAct[r * inner + i];
      float &gRef = gateAt(r, i);
      float &uRef = upAt(r, i);
      const double g0 = gRef, u0 = uRef;
      double dg, du;
      if (oai) { // torch.clamp passes the gradient where the input is within the bounds
        const double gc = std::min(g0, static_cast<double>(limit));
        const double uc =
            std::min(std::max(u0, -static_cast<double>(limit)), static_cast<double>(limit));
        const double sg = 1.0 / (1.0 + std::exp(-alpha * gc));
        dg = g0 <= limit ? da * (uc + 1.0) * (sg + gc * alpha * sg * (1.0 - sg)) : 0.0;
        du = (u0 >= -limit && u0 <= limit) ? da * gc * sg : 0.0;
      } else {
        const double sg = 1.0 / (1.0 + std::exp(-g0));
        dg = da * u0 * sg * (1.0 + g0 * (1.0 - sg));
        du = da * g0 * sg;
      }
      gRef = static_cast<float>(dg);
      uRef = static_cast<float>(du);
    }
  std::vector<float> part(static_cast<size_t>(rows * hidden));
  linearBackward(x, gateUp.data(), rows, hidden, w.w1, gw, dx, g.w1);
  if (g.b1)
    biasBackward(gateUp.data(), rows, gw, g.b1);
  if (!w.fusedGateUp) {
    linearBackward(x, up.data(), rows, hidden, w.w3, inner, part.data(), g.w3);
    if (g.b3)
      biasBackward(up.data(), rows, inner, g.b3);
    for (int64_t i = 0; i < rows * hidden; ++i)
      dx[i] += part[i];
  }
}

} // namespace disagmoe::cpu
