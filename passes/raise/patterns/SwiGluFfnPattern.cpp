//===- SwiGluFfnPattern.cpp - an always-on SwiGLU FFN -> moe.dense_ffn --------------===//
//
// Anchor: Sigmoid(MatMul(x, W1)) with x a raised RMSNorm's output (or a reshape of it):
// (silu(x W1) * (x W3)) W2, a dense layer's FFN (DeepSeek's first_k_dense_replace layers) or the
// shared experts beside a router. Which of the two it is, the assembly of the residual stream
// decides (role pending until then). Experts' SwiGLUs read gathered rows or stacked weights, not
// the norm, and are left to the experts patterns.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

using namespace mlir;

namespace disagmoe::raise {

std::optional<FfnMatch> ComponentMatcher::matchSwiGLU(Value x) {
  SmallVector<Value> inputs{x};
  for (StringRef op : {"Reshape", "Flatten"})
    for (NodeOp r : consumers(x, op))
      inputs.push_back(r.getOutputs()[0]);
  for (Value in : inputs)
    for (auto [mm1, w1] : projections(in)) {
      NodeOp sigmoid = single(consumers(mm1.getOutputs()[0], "Sigmoid"));
      if (!sigmoid || routerTopKOf(sigmoid))
        continue; // no SiLU, or a sigmoid router's scores on the same norm (DeepSeek-V3)
      NodeOp silu = single(consumers(sigmoid.getOutputs()[0], "Mul"));
      if (!silu || otherOperand(silu, sigmoid.getOutputs()[0]) != mm1.getOutputs()[0])
        return fail(sigmoid, "FFN: expected SiLU = x * Sigmoid(x)");
      NodeOp gated = single(consumers(silu.getOutputs()[0], "Mul"));
      NodeOp mm3 =
          gated ? producer(*otherOperand(gated, silu.getOutputs()[0]), {"MatMul"}) : NodeOp();
      if (!mm3 || mm3.getInputs()[0] != in || !weightOf(mm3.getInputs()[1]))
        return fail(silu, "FFN: expected SwiGLU silu(x W1) * (x W3)");
      NodeOp mm2 = single(consumers(gated.getOutputs()[0], "MatMul"));
      if (!mm2 || !weightOf(mm2.getInputs()[1]))
        return fail(gated, "FFN: expected the down projection MatMul(., W2)");
      FfnMatch f{w1,
                 weightOf(mm3.getInputs()[1]),
                 weightOf(mm2.getInputs()[1]),
                 mm2.getOutputs()[0],
                 outWidth(w1),
                 sigmoid};
      if (outWidth(f.w3) != f.inner || staticShape(f.w2.getResult()).front() != f.inner)
        return fail(mm2, "FFN: gate, up and down projections disagree on the inner width");
      return f;
    }
  return std::nullopt;
}

namespace {

struct SwiGluFfnPattern : ComponentPattern<NodeOp> {
  using ComponentPattern::ComponentPattern;

  LogicalResult matchAndRewrite(NodeOp sigmoid, PatternRewriter &rewriter) const override {
    if (sigmoid.getOpType() != "Sigmoid" || sigmoid.getInputs().size() != 1 ||
        routerTopKOf(sigmoid))
      return failure();
    NodeOp mm1 = producer(sigmoid.getInputs()[0], {"MatMul"});
    if (!mm1 || !weightOf(mm1.getInputs()[1]))
      return failure();
    // The norm output itself, or one Reshape / Flatten of it.
    Value in = mm1.getInputs()[0];
    if (NodeOp r = producer(in, {"Reshape", "Flatten"}))
      in = r.getInputs()[0];
    auto norm = in.getDefiningOp<moe::RmsNormOp>();
    if (!norm)
      return failure();
    ComponentMatcher m(ctx);
    auto f = m.matchSwiGLU(norm.getResult());
    if (!f || f->sigmoid != sigmoid) {
      if (m.error)
        ctx.recordFailure(sigmoid, *m.error);
      return failure();
    }
    Operation *last = f->output.getDefiningOp();
    rewriter.setInsertionPoint(last);
    auto op = rewriter.create<moe::DenseFfnOp>(
        last->getLoc(), ctx.actType, norm.getResult(), f->w1.getResult(), f->w3.getResult(),
        f->w2.getResult(), rewriter.getI64IntegerAttr(-1), rewriter.getStringAttr(""),
        rewriter.getI64IntegerAttr(f->inner), /*num_shared_experts=*/IntegerAttr(),
        /*side=*/StringAttr());
    ctx.inheritOrder(op, sigmoid);
    replaceComponent(rewriter, f->output, op.getResult());
    return success();
  }
};

} // namespace

void populateSwiGluFfnPattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<SwiGluFfnPattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
