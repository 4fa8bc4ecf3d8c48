//===- DropEmptyConcatInput.cpp - Concat(empty, x) -> x -------------------===//
//
// A KV-cache export (optimum's text-generation-with-past; transformers' DynamicCache.update)
// appends each layer's new keys and values to its cache, torch.cat([past, new], dim=-2). A
// training plan runs every sequence from its first token, so the compiler binds each
// past_key_values.* input to an empty cache (past length 0, compiler/pipeline/InputBinding.h);
// the operands of a Concat that have length 0 along its axis contribute no element and go, and a
// Concat left with one operand is that operand. Exact: no value changes.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/normalize/NormalizePatterns.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace disagmoe::normalize {
namespace {

/// The static length of `v` along `axis` (negative: from the end), or -1 if unknown.
int64_t staticLength(Value v, int64_t axis) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return -1;
  if (axis < 0)
    axis += type.getRank();
  if (axis < 0 || axis >= type.getRank() || type.isDynamicDim(axis))
    return -1;
  return type.getDimSize(axis);
}

struct DropEmptyConcatInput : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (node.getOpType() != "Concat" || !node.getDomain().empty() ||
        node.getOutputs().size() != 1 || node.getInputs().size() < 2)
      return failure();
    auto axisAttr = node.getOnnxAttrs().getAs<IntegerAttr>("axis");
    if (!axisAttr)
      return failure();
    const int64_t axis = axisAttr.getInt();
    SmallVector<Value> kept, empty;
    for (Value in : node.getInputs())
      (staticLength(in, axis) != 0 ? kept : empty).push_back(in);
    if (kept.size() == node.getInputs().size() || kept.empty())
      return failure();
    Value result = node.getResult(0);
    if (kept.size() == 1) {
      // A graph output keeps the function's declared type (as DropIdentity).
      const bool returned = llvm::any_of(result.getUsers(), llvm::IsaPred<func::ReturnOp>);
      if (returned && kept[0].getType() != result.getType())
        return failure();
      rewriter.replaceOp(node, kept[0]);
    } else {
      rewriter.replaceOp(node, createNode(rewriter, node, "Concat", node.getNodeName(), kept,
                                          result.getType(), llvm::to_vector(node.getOnnxAttrs()))
                                   .getResult(0));
    }
    for (Value in : empty)
      eraseIfDeadConstant(rewriter, in);
    return success();
  }
};

} // namespace

void populateDropEmptyConcatInputPatterns(RewritePatternSet &patterns) {
  patterns.add<DropEmptyConcatInput>(patterns.getContext());
}

} // namespace disagmoe::normalize
