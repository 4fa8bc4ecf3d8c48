//===- ResolveExpertHitLoop.cpp - transformers' loop over the experts hit ---===//
//
// transformers >= 4.48 (MixtralSparseMoeBlock, Qwen3MoeSparseMoeBlock, ...) loops over the experts
// the batch routes to, not over all of them:
//   expert_mask = one_hot(selected_experts, num_experts).permute(2, 1, 0)
//   expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
//   for expert_idx in expert_hit: ... expert_mask[expert_idx] ...
// torch.onnx.export traces the loop: NonZero(Greater(ReduceSum(mask), 0)), transposed to
// [hits, 1], Split into one [1, 1] row per expert the example input hit, each row the index of a
// Gather from the mask, and the k-th row's body holds the weights of the k-th expert hit at trace
// time. When the example input hit all E experts, the file has E rows and NonZero lists the experts
// in ascending order, so row k is expert k on every input the file can run (on any other,
// onnxruntime fails in the Split); the rows become the constants 0..E-1 and the loop is the
// loop over every expert (ExpertsLoopPattern.cpp). Fewer rows than experts: the other experts'
// weights are not in the file and the pattern leaves the loop alone; ExpertsLoopPattern refuses
// it naming the layer and the missing experts (expertHitLoopProblem).
//
//===----------------------------------------------------------------------===//
#include "passes/raise/normalize/NormalizePatterns.h"

#include "passes/raise/GraphMatchers.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace disagmoe::normalize {

namespace {

NodeOp producerOf(Value v, StringRef opType) {
  auto node = v.getDefiningOp<NodeOp>();
  return node && node.getOpType() == opType && node.getDomain().empty() ? node : NodeOp();
}

} // namespace

std::optional<ExpertHitLoop> matchExpertHitLoop(NodeOp split) {
  if (split.getOpType() != "Split" || !split.getDomain().empty() || split.getInputs().empty() ||
      split.getOutputs().empty())
    return std::nullopt;
  auto axis = split.getOnnxAttrs().getAs<IntegerAttr>("axis");
  if (!axis || axis.getInt() != 0)
    return std::nullopt;
  NodeOp transpose = producerOf(split.getInputs()[0], "Transpose");
  NodeOp nonZero = transpose ? producerOf(transpose.getInputs()[0], "NonZero") : NodeOp();
  NodeOp greater = nonZero ? producerOf(nonZero.getInputs()[0], "Greater") : NodeOp();
  NodeOp sum = greater ? producerOf(greater.getInputs()[0], "ReduceSum") : NodeOp();
  if (!sum || greater.getInputs().size() != 2 ||
      raise::scalarConstant(greater.getInputs()[1]) != 0.0)
    return std::nullopt;
  // The mask: the OneHot output, possibly permuted; the sum leaves one value per expert.
  Value mask = sum.getInputs()[0];
  Value oneHotOut = mask;
  while (NodeOp t = producerOf(oneHotOut, "Transpose"))
    oneHotOut = t.getInputs()[0];
  NodeOp oneHot = producerOf(oneHotOut, "OneHot");
  auto depth = oneHot && oneHot.getInputs().size() >= 2
                   ? raise::scalarConstant(oneHot.getInputs()[1])
                   : std::nullopt;
  auto perExpert = llvm::dyn_cast<RankedTensorType>(sum.getOutputs()[0].getType());
  if (!depth || *depth < 1 || !perExpert || perExpert.getRank() != 1 ||
      perExpert.getDimSize(0) != static_cast<int64_t>(*depth))
    return std::nullopt;
  // One [1, 1] row per hit expert.
  for (Value row : split.getOutputs()) {
    auto t = llvm::dyn_cast<RankedTensorType>(row.getType());
    if (!t || t.getShape() != ArrayRef<int64_t>{1, 1})
      return std::nullopt;
  }
  ExpertHitLoop loop;
  loop.split = split;
  loop.oneHot = oneHot;
  loop.numExperts = static_cast<int64_t>(*depth);
  loop.rows = static_cast<int64_t>(split.getOutputs().size());
  loop.chain = {split, transpose, nonZero, greater, sum};
  return loop;
}

namespace {

struct ResolveExpertHitLoop : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    auto loop = matchExpertHitLoop(node);
    if (!loop || loop->rows != loop->numExperts)
      return failure();
    for (auto [k, row] : llvm::enumerate(node.getOutputs()))
      rewriter.replaceAllUsesWith(row,
                                  createI64Constant(rewriter, node, "expert_" + std::to_string(k),
                                                    {1, 1}, {static_cast<int64_t>(k)}));
    // The chain that computed the hit list goes with it, each node once nothing reads it.
    for (NodeOp n : loop->chain) {
      if (!llvm::all_of(n.getOutputs(), [](Value v) { return v.use_empty(); }))
        break;
      SmallVector<Value> inputs(n.getInputs());
      rewriter.eraseOp(n);
      for (Value in : inputs)
        eraseIfDeadConstant(rewriter, in);
    }
    return success();
  }
};

} // namespace

void populateResolveExpertHitLoopPatterns(RewritePatternSet &patterns) {
  patterns.add<ResolveExpertHitLoop>(patterns.getContext());
}

} // namespace disagmoe::normalize
