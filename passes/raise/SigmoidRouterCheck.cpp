//===- SigmoidRouterCheck.cpp - refuse routers that select on sigmoid scores -----===//
#include "passes/raise/SigmoidRouterCheck.h"

#include "passes/raise/GraphMatchers.h"

#include "llvm/ADT/DenseSet.h"

#include <deque>

using namespace mlir;

namespace disagmoe::raise {
namespace {

/// MatMul/Gemm(x, W) with a 2-D weight W (through Transpose and data movement).
bool isProjection(NodeOp node) {
  if (!node || (node.getOpType() != "MatMul" && node.getOpType() != "Gemm"))
    return false;
  if (node.getInputs().size() < 2)
    return false;
  Value w = skipDataMovement(node.getInputs()[1]);
  while (NodeOp t = producer(w, {"Transpose"}))
    w = skipDataMovement(t.getInputs()[0]);
  return static_cast<bool>(weightOf(w));
}

/// The first TopK whose data input the values of `from` reach, not through a projection.
NodeOp selectingTopK(Value from) {
  llvm::DenseSet<Value> seen;
  std::deque<Value> work{from};
  for (int budget = 96; !work.empty() && budget-- > 0;) {
    Value v = work.front();
    work.pop_front();
    if (!seen.insert(v).second)
      continue;
    for (Operation *user : v.getUsers()) {
      auto node = dyn_cast<NodeOp>(user);
      if (!node || isProjection(node) || node.getOpType() == "Shape")
        continue;
      if (node.getOpType() == "TopK") {
        if (node.getInputs()[0] == v)
          return node;
        continue;
      }
      for (Value out : node.getOutputs())
        work.push_back(out);
    }
  }
  return nullptr;
}

} // namespace

LogicalResult checkSigmoidRouter(func::FuncOp func) {
  for (NodeOp node : func.getOps<NodeOp>()) {
    if (node.getOpType() != "Sigmoid" || !node.getDomain().empty())
      continue;
    if (!isProjection(producer(skipDataMovement(node.getInputs()[0]))))
      continue;
    NodeOp topk = selectingTopK(node.getOutputs()[0]);
    if (!topk)
      continue;
    node.emitError() << describe(node) << ": router: " << describe(topk)
                     << " selects experts on sigmoid(x Wg) scores (DeepSeek-V3's "
                        "DeepseekV3TopkRouter: sigmoid scores, e_score_correction_bias for the "
                        "selection, group-limited top-k); moe.router represents softmax_topk, "
                        "softmax_topk_renorm and topk_softmax only, so this export is not imported";
    return failure();
  }
  return success();
}

} // namespace disagmoe::raise
