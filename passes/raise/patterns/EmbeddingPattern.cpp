//===- EmbeddingPattern.cpp - the token embedding -> moe.embedding ---------------===//
//
// Anchor: Gather(W[vocab, hidden], token ids), the ids being the function's first argument.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

using namespace mlir;

namespace disagmoe::raise {
namespace {

struct EmbeddingPattern : ComponentPattern<NodeOp> {
  using ComponentPattern::ComponentPattern;

  LogicalResult matchAndRewrite(NodeOp gather, PatternRewriter &rewriter) const override {
    if (gather.getOpType() != "Gather" || gather.getInputs().size() != 2 ||
        gather.getInputs()[1] != ctx.func.getArgument(0))
      return failure();
    WeightOp table = weightOf(gather.getInputs()[0]);
    if (!table || staticShape(table.getResult()).size() != 2)
      return failure();
    if (auto axis = gather.getOnnxAttrs().getAs<IntegerAttr>("axis"); axis && axis.getInt() != 0)
      return failure();
    rewriter.setInsertionPoint(gather);
    auto op = rewriter.create<moe::EmbeddingOp>(gather.getLoc(), ctx.actType,
                                                ctx.func.getArgument(0), table.getResult());
    ctx.inheritOrder(op, gather);
    replaceComponent(rewriter, gather.getOutputs()[0], op.getResult());
    return success();
  }
};

} // namespace

void populateEmbeddingPattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<EmbeddingPattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
