//===- ModelShape.cpp -----------------------------------------------------===//
#include "runtime/cost/ModelShape.h"

namespace disagmoe::cost {

int64_t ModelShape::numExperts() const {
  for (const LayerShape &l : layers)
    if (l.isMoe())
      return l.experts;
  return 0;
}

int64_t ModelShape::topK() const {
  for (const LayerShape &l : layers)
    if (l.isMoe())
      return l.topK;
  return 0;
}

double ModelShape::attentionSideParams(int64_t l) const {
  const LayerShape &s = layers[l];
  double h = static_cast<double>(hidden);
  double q = static_cast<double>(s.heads * s.headDim),
         kv = static_cast<double>(s.kvHeads * s.headDim);
  double p = h * q + 2 * h * kv + q * h; // Wq, Wk, Wv, Wo
  p += 2 * h;                            // attn_norm, ffn_norm
  p += h * s.experts;                    // router
  p += 3 * h * (s.sharedHidden + s.denseHidden);
  return p;
}

double ModelShape::expertParams(int64_t l) const {
  return static_cast<double>(layers[l].expertMatrices) * hidden * layers[l].expertHidden;
}

double ModelShape::embeddingAndHeadParams() const {
  double e = static_cast<double>(vocab) * hidden;
  return (tiedEmbeddings ? e : 2 * e) + hidden;
}

double ModelShape::totalParams() const {
  double p = embeddingAndHeadParams();
  for (int64_t l = 0; l < numLayers(); ++l)
    p += attentionSideParams(l) + layers[l].experts * expertParams(l);
  return p;
}

double ModelShape::activeParams() const {
  double p = static_cast<double>(vocab) * hidden + hidden; // head + final norm
  for (int64_t l = 0; l < numLayers(); ++l)
    p += attentionSideParams(l) + layers[l].topK * expertParams(l);
  return p;
}

std::string ModelShape::validate() const {
  if (hidden < 1)
    return "hidden size must be at least 1";
  if (vocab < 1)
    return "vocabulary size must be at least 1";
  if (layers.empty())
    return "the model has no layers";
  int64_t experts = numExperts(), k = topK();
  if (experts == 0)
    return "the model has no MoE layer (no routed experts to place)";
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerShape &l = layers[i];
    std::string at = "layer " + std::to_string(i) + ": ";
    if (l.heads < 1 || l.kvHeads < 1 || l.headDim < 1)
      return at + "attention heads, kv heads and head_dim must be at least 1";
    if (l.heads % l.kvHeads)
      return at + "heads not a multiple of kv heads";
    if (l.window < 0)
      return at + "negative sliding window";
    if (l.isMoe()) {
      if (l.experts != experts || l.topK != k)
        return at + "every MoE layer must have the same expert count and top-k";
      if (l.topK < 1 || l.topK > l.experts || l.expertHidden < 1)
        return at + "needs 1 <= top_k <= experts and expert_hidden >= 1";
    } else if (l.denseHidden < 1) {
      return at + "a layer without routed experts needs a dense FFN";
    }
  }
  return "";
}

} // namespace disagmoe::cost
