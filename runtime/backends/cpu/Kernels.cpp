// fp32 CPU forward kernels after HF Mixtral: norm, rope, attention, router, SwiGLU (Kernels.h).
#include "runtime/backends/cpu/Kernels.h"

#include "runtime/backends/cpu/FamilyKernels.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace disagmoe::cpu {

void embedding(const float *table, int64_t vocab, int64_t hidden, const int64_t *ids,
               int64_t tokens, float *out) {
  for (int64_t t = 0; t < tokens; ++t) {
    if (ids[t] < 0 || ids[t] >= vocab)
      throw KernelError("embedding: token id " + std::to_string(ids[t]) +
                        " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    std::copy_n(table + ids[t] * hidden, hidden, out + t * hidden);
  }
}

void rmsNorm(const float *x, int64_t rows, int64_t hidden, const float *w, float eps, float *y) {
  for (int64_t t = 0; t < rows; ++t) {
    const float *xr = x + t * hidden;
    double sumSq = 0;
    for (int64_t j = 0; j < hidden; ++j)
      sumSq += static_cast<double>(xr[j]) * xr[j];
    // PyTorch computes the mean and rsqrt in fp32; rounding the statistic to fp32 first matches it.
    float variance = static_cast<float>(sumSq / static_cast<double>(hidden));
    float inv = 1.0f / std::sqrt(variance + eps);
    float *yr = y + t * hidden;
    for (int64_t j = 0; j < hidden; ++j)
      yr[j] = w[j] * (xr[j] * inv);
  }
}

void linear(const float *x, int64_t rows, int64_t in, const float *w, int64_t out, float *y) {
  if (rows == 0 || out == 0)
    return;
  if (in == 0) {
    std::fill_n(y, rows * out, 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
              static_cast<int>(out), static_cast<int>(in), 1.0f, x, static_cast<int>(in), w,
              static_cast<int>(out), 0.0f, y, static_cast<int>(out));
}

RopeTable::RopeTable(const int64_t *positions, int64_t tokens, int64_t headDim,
                     const kernels::RopeSpec &spec)
    : half(headDim / 2) {
  // HF computes inv_freq and the angle in fp32; cos/sin of that fp32 angle (in double, rounded),
  // then times the attention factor in fp32 (GptOssRotaryEmbedding: cos() * attention_scaling).
  std::vector<float> invFreq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    invFreq[i] =
        spec.invFreq
            ? spec.invFreq[i]
            : static_cast<float>(1.0 / std::pow(spec.theta, static_cast<double>(2 * i) /
                                                                static_cast<double>(headDim)));
  const float m = spec.attentionFactor;
  rowOf.resize(static_cast<size_t>(tokens));
  std::vector<std::pair<int64_t, int64_t>>
      seen; // (position, row), positions repeat once per sequence
  for (int64_t t = 0; t < tokens; ++t) {
    auto it = std::lower_bound(seen.begin(), seen.end(), std::make_pair(positions[t], INT64_MIN));
    if (it != seen.end() && it->first == positions[t]) {
      rowOf[t] = it->second;
      continue;
    }
    const int64_t row = static_cast<int64_t>(cosv.size()) / std::max<int64_t>(half, 1);
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(positions[t]) * invFreq[i];
      const float c = static_cast<float>(std::cos(static_cast<double>(angle)));
      const float s = static_cast<float>(std::sin(static_cast<double>(angle)));
      cosv.push_back(m == 1.0f ? c : c * m);
      sinv.push_back(m == 1.0f ? s : s * m);
    }
    seen.insert(it, {positions[t], row});
    rowOf[t] = row;
  }
}

void rope(float *x, int64_t tokens, int64_t heads, int64_t headDim, const int64_t *positions,
          const kernels::RopeSpec &spec) {
  const RopeTable table(positions, tokens, headDim, spec);
  const int64_t half = table.half;
  for (int64_t t = 0; t < tokens; ++t) {
    const float *cosv = table.cos(t);
    const float *sinv = table.sin(t);
    for (int64_t h = 0; h < heads; ++h) {
      float *v = x + (t * heads + h) * headDim;
      for (int64_t i = 0; i < half; ++i) {
        float a = v[i], b = v[i + half];
        v[i] = a * cosv[i] - b * sinv[i];
        v[i + half] = b * cosv[i] + a * sinv[i];
      }
    }
  }
}

void causalAttention(const float *q, const float *k, const float *v, int64_t seqLen, int64_t heads,
                     int64_t kvHeads, int64_t headDim, float *out) {
  causalAttentionGeneral(q, k, v, seqLen, heads, kvHeads, headDim, headDim,
                         1.0 / std::sqrt(static_cast<double>(headDim)), nullptr, 0, out);
}

void softmax(const float *x, int64_t rows, int64_t cols, float *y) {
  std::vector<double> e(static_cast<size_t>(cols));
  for (int64_t t = 0; t < rows; ++t) {
    const float *xr = x + t * cols;
    const float maxValue = *std::max_element(xr, xr + cols);
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      e[j] = std::exp(static_cast<double>(xr[j]) - maxValue);
      sum += e[j];
    }
    for (int64_t j = 0; j < cols; ++j)
      y[t * cols + j] = static_cast<float>(e[j] / sum);
  }
}

void topK(const float *row, int64_t n, int64_t k, int64_t *ids, float *values) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  // Stable on index: a strictly greater value wins, otherwise the lower index comes first.
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [row](int64_t a, int64_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  });
  for (int64_t i = 0; i < k; ++i) {
    ids[i] = order[i];
    values[i] = row[order[i]];
  }
}

namespace {

// DeepSeek-V3's choice (RouterScoring.h SigmoidGroupTopk*): `choice` [experts] holds the biased
// sigmoid scores; the experts outside the groups.topkGroup best groups are set to 0.0, as HF's
// masked_fill, before the top-k.
void maskToBestGroups(float *choice, int64_t experts, const RouterGroups &groups) {
  if (groups.nGroup <= 1)
    return;
  const int64_t per = experts / groups.nGroup;
  std::vector<float> groupScores(static_cast<size_t>(groups.nGroup)), top2(2);
  std::vector<int64_t> ids(2), kept(static_cast<size_t>(groups.topkGroup));
  for (int64_t g = 0; g < groups.nGroup; ++g) {
    topK(choice + g * per, per, 2, ids.data(), top2.data());
    groupScores[g] = top2[0] + top2[1]; // fp32, as .topk(2)[0].sum(-1)
  }
  topK(groupScores.data(), groups.nGroup, groups.topkGroup, kept.data(), top2.data());
  std::vector<char> keep(static_cast<size_t>(groups.nGroup), 0);
  for (int64_t g : kept)
    keep[g] = 1;
  for (int64_t e = 0; e < experts; ++e)
    if (!keep[e / per])
      choice[e] = 0.0f;
}

} // namespace

void routerGates(const float *logits, int64_t tokens, int64_t experts, int64_t k,
                 RouterScoring scoring, int64_t *ids, float *gates, const float *selectionBias,
                 const RouterGroups &groups) {
  std::vector<float> scores(static_cast<size_t>(experts)),
      biased(selectionBias || isSigmoidScoring(scoring) ? scores.size() : 0);
  // Top-k of `s` (+ the selection bias, when given); rowGates gets the UNBIASED chosen scores.
  const auto choose = [&](const float *s, int64_t *rowIds, float *rowGates) {
    if (!selectionBias)
      return topK(s, experts, k, rowIds, rowGates);
    for (int64_t e = 0; e < experts; ++e)
      biased[e] = s[e] + selectionBias[e];
    topK(biased.data(), experts, k, rowIds, rowGates);
    for (int64_t i = 0; i < k; ++i)
      rowGates[i] = s[rowIds[i]];
  };
  for (int64_t t = 0; t < tokens; ++t) {
    const float *row = logits + t * experts;
    int64_t *rowIds = ids + t * k;
    float *rowGates = gates + t * k;
    if (scoring == RouterScoring::TopkSoftmax) {
      choose(row, rowIds, rowGates);
      softmax(rowGates, 1, k, rowGates);
      continue;
    }
    if (isSigmoidScoring(scoring)) {
      for (int64_t e = 0; e < experts; ++e) {
        scores[e] = 1.0f / (1.0f + std::exp(-row[e])); // fp32 logits.sigmoid()
        biased[e] = selectionBias ? scores[e] + selectionBias[e] : scores[e];
      }
      maskToBestGroups(biased.data(), experts, groups);
      topK(biased.data(), experts, k, rowIds, rowGates);
      for (int64_t i = 0; i < k; ++i)
        rowGates[i] = scores[rowIds[i]]; // scores.gather(1, topk_indices)
      if (scoring == RouterScoring::SigmoidGroupTopkRenorm) {
        // fp32, as `topk_weights /= topk_weights.sum(dim=-1, keepdim=True) + 1e-20`.
        float sum = 0;
        for (int64_t i = 0; i < k; ++i)
          sum += rowGates[i];
        sum += 1e-20f;
        for (int64_t i = 0; i < k; ++i)
          rowGates[i] /= sum;
      }
      continue;
    }
    softmax(row, 1, experts, scores.data());
    choose(scores.data(), rowIds, rowGates);
    if (scoring == RouterScoring::SoftmaxTopkRenorm) {
      // fp32 sum and division, as `routing_weights /= routing_weights.sum(-1, keepdim=True)`.
      float sum = 0;
      for (int64_t i = 0; i < k; ++i)
        sum += rowGates[i];
      for (int64_t i = 0; i < k; ++i)
        rowGates[i] /= sum;
    }
  }
}

void swigluExpert(const float *x, int64_t rows, int64_t hidden, int64_t expertHidden,
                  const float *w1, const float *w3, const float *w2, float *out) {
  if (rows == 0)
    return;
  std::vector<float> gate(static_cast<size_t>(rows * expertHidden));
  std::vector<float> up(gate.size());
  linear(x, rows, hidden, w1, expertHidden, gate.data());
  linear(x, rows, hidden, w3, expertHidden, up.data());
  for (size_t i = 0; i < gate.size(); ++i) {
    const float z = gate[i];
    gate[i] = z / (1.0f + std::exp(-z)) * up[i];
  }
  linear(gate.data(), rows, expertHidden, w2, hidden, out);
}

} // namespace disagmoe::cpu
