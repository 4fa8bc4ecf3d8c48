//===- HeadPattern.cpp - the language-model head -> moe.head ---------------------===//
//
// Anchor: MatMul(x, W[hidden, vocab]) whose output is the graph's output (x the final norm's
// output, which the assembly of the residual stream checks).
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

using namespace mlir;

namespace disagmoe::raise {
namespace {

struct HeadPattern : ComponentPattern<NodeOp> {
  using ComponentPattern::ComponentPattern;

  LogicalResult matchAndRewrite(NodeOp mm, PatternRewriter &rewriter) const override {
    if (mm.getOpType() != "MatMul" || mm.getInputs().size() != 2)
      return failure();
    WeightOp w = weightOf(mm.getInputs()[1]);
    auto shape = w ? staticShape(w.getResult()) : SmallVector<int64_t>{};
    if (shape.size() != 2 || shape[0] != ctx.actType.getDimSize(2))
      return failure();
    Value out = mm.getOutputs()[0];
    if (!llvm::any_of(out.getUsers(), [](Operation *u) { return isa<func::ReturnOp>(u); }))
      return failure();
    auto logits = RankedTensorType::get(
        {ctx.actType.getDimSize(0), ctx.actType.getDimSize(1), shape[1]}, rewriter.getF32Type());
    rewriter.setInsertionPoint(mm);
    auto op = rewriter.create<moe::HeadOp>(mm.getLoc(), logits, mm.getInputs()[0], w.getResult());
    ctx.inheritOrder(op, mm);
    replaceComponent(rewriter, out, op.getResult());
    return success();
  }
};

} // namespace

void populateHeadPattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<HeadPattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
