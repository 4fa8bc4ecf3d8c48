// How router logits become gate weights (plan.json `model.router_scoring`, `n_group`,
// `topk_group`). Shared by the plan reader and every backend's router kernel.
#pragma once

#include <cstdint>

namespace disagmoe {

enum class RouterScoring {
  SoftmaxTopkRenorm, ///< "softmax_topk_renorm": softmax over all experts, top-k, divide the k
                     ///< weights by their sum (Mixtral)
  SoftmaxTopk,       ///< "softmax_topk": softmax over all experts, top-k, no renormalisation
  TopkSoftmax,       ///< "topk_softmax": top-k on the logits, softmax over the k values
  /// "sigmoid_group_topk_renorm": DeepSeek-V3's DeepseekV3TopkRouter (transformers
  /// modeling_deepseek_v3.py) with norm_topk_prob: s = sigmoid(logits); the choice ranks s plus
  /// the selection bias (e_score_correction_bias) within the topk_group best of n_group expert
  /// groups (RouterGroups); the gates are the UNBIASED s of the chosen experts over
  /// (their sum + 1e-20)
  SigmoidGroupTopkRenorm,
  SigmoidGroupTopk, ///< "sigmoid_group_topk": the same choice, gates s of the chosen experts
};

/// True for the scorings whose scores are sigmoid(logits) rather than a softmax.
inline bool isSigmoidScoring(RouterScoring s) {
  return s == RouterScoring::SigmoidGroupTopkRenorm || s == RouterScoring::SigmoidGroupTopk;
}

/// DeepSeek-V3's group-limited choice (config n_group, topk_group): the experts form nGroup
/// groups of experts/nGroup consecutive ids; a group's score is the sum of its two best biased
/// scores; the experts of all but the topkGroup best groups score 0.0 for the top-k (HF's
/// masked_fill(~score_mask, 0.0), so a masked expert still outranks a kept one whose biased score
/// is negative). {1, 1}: no grouping. Requires experts % nGroup == 0, 1 <= topkGroup <= nGroup,
/// experts / nGroup >= 2 when nGroup > 1 (the top-2), top_k <= topkGroup * experts / nGroup.
struct RouterGroups {
  int64_t nGroup = 1;
  int64_t topkGroup = 1;
};

} // namespace disagmoe
