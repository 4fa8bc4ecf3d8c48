// How router logits become gate weights (plan.json `model.router_scoring`). Shared by the plan
// reader and every backend's router kernel.
#pragma once

namespace disagmoe {

enum class RouterScoring {
  SoftmaxTopkRenorm, ///< "softmax_topk_renorm": softmax over all experts, top-k, divide the k
                     ///< weights by their sum (Mixtral)
  SoftmaxTopk,       ///< "softmax_topk": softmax over all experts, top-k, no renormalisation
  TopkSoftmax,       ///< "topk_softmax": top-k on the logits, softmax over the k values
};

} // namespace disagmoe
