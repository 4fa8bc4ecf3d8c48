//===- ModelShape.h - what the cost model needs to know about a model -*- C++ -*-===//
//
// The cost model's view of an MoE transformer: per layer, the attention shape and the FFN shape.
// It is extracted from the `moe` IR (frontends/config/CostExtraction.h), whether that IR came from
// an ONNX export or from a model's config.json, and never needs MLIR itself.
// Parameter counts are in parameters (not bytes); biases, norms' epsilons and attention sinks are
// not modelled (they are < 0.1% of any model in docs/reference/models.json).
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_COST_MODELSHAPE_H
#define DISAGMOE_RUNTIME_COST_MODELSHAPE_H

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::cost {

struct LayerShape {
  // Attention (runs on the attention side).
  int64_t heads = 0, kvHeads = 0, headDim = 0;
  int64_t window = 0; ///< sliding-window length in tokens; 0 = full causal attention
  // FFN. A MoE layer has routed experts on the FFN side; shared experts and a dense FFN run on the
  // attention side (docs/architecture.md, "Exchanges", Layer l: the shared experts and dense FFN
  // placed on the attention side).
  int64_t experts = 0;      ///< routed experts (0: a dense layer, nothing on the FFN side)
  int64_t topK = 0;         ///< experts per token
  int64_t expertHidden = 0; ///< SwiGLU intermediate size of one routed expert
  /// [hidden, expert_hidden]-sized matrices of one routed expert: 3 for SwiGLU (W1, W3, W2), 2 for
  /// the non-gated experts of onnxruntime's com.microsoft.MoE (W1 -> act -> W2).
  int64_t expertMatrices = 3;
  int64_t sharedHidden = 0; ///< total SwiGLU intermediate of the shared experts (0: none)
  int64_t denseHidden = 0;  ///< SwiGLU intermediate of a dense FFN (dense layers only)
  bool isMoe() const { return experts > 0; }
};

struct ModelShape {
  std::string name;
  int64_t hidden = 0, vocab = 0;
  bool tiedEmbeddings = false;
  std::vector<LayerShape> layers;

  int64_t numLayers() const { return static_cast<int64_t>(layers.size()); }
  /// Routed experts of the MoE layers (0 when there is none); all MoE layers must agree.
  int64_t numExperts() const;
  int64_t topK() const;

  /// Parameters of layer l placed on the attention side: q/k/v/o projections, both RMSNorm
  /// weights, the router, shared experts and a dense FFN (SwiGLU: 3 * hidden * intermediate).
  double attentionSideParams(int64_t l) const;
  /// Parameters of one routed expert of layer l: expert_matrices * hidden * expert_hidden
  /// (3 for SwiGLU, 2 for non-gated experts).
  double expertParams(int64_t l) const;
  /// Embedding + final norm + head (head shares the embedding when tied).
  double embeddingAndHeadParams() const;
  double totalParams() const;
  /// Parameters a token uses: attention side, top_k routed experts, embedding row excluded, head
  /// included (the "active parameters" of model cards, excluding the input embedding).
  double activeParams() const;
  /// Checks the shape is usable; returns an empty string or one line naming the field.
  std::string validate() const;
};

} // namespace disagmoe::cost

#endif
