//===- SigmoidRouterCheck.h - refuse routers that select on sigmoid scores -------===//
//
// DeepSeek-V3's DeepseekV3TopkRouter (transformers modeling_deepseek_v3.py) scores experts with
// sigmoid(x Wg), adds e_score_correction_bias for the selection only, keeps the topk_group groups
// with the best sum of their top-2 scores, takes the top-k experts of those, and weights them by
// the unbiased sigmoid scores (renormalised, times routed_scaling_factor). moe.router (and the
// plan's model.router_scoring, runtime/plan/RouterScoring.h) represents softmax_topk,
// softmax_topk_renorm and topk_softmax only, so such an export is refused before matching, in one
// line naming the Sigmoid, instead of failing later at a node of its group mask.
//
// Found by dataflow: a Sigmoid of a router projection (MatMul/Gemm with a 2-D weight) whose values
// reach the data input of a TopK without passing another projection.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_RAISE_SIGMOIDROUTERCHECK_H
#define DISAGMOE_PASSES_RAISE_SIGMOIDROUTERCHECK_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"

namespace disagmoe::raise {

/// Emits one error, at the first Sigmoid of `func` that a router top-k selects on, and fails;
/// succeeds if there is none.
mlir::LogicalResult checkSigmoidRouter(mlir::func::FuncOp func);

} // namespace disagmoe::raise

#endif
