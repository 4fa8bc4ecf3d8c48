//===- RmsNormPattern.cpp - RMSNorm on the residual stream -> moe.rms_norm ------------===//
//
// Anchor: ReduceMean(Pow(x, 2)). Form (after normalize: Casts dropped, rsqrt as Div(1, Sqrt)):
//   Pow(x, 2) -> ReduceMean(-1) -> Add(eps) -> Sqrt -> Div(1, .) -> Mul(x, .) -> Mul(w, .)
// or x / Sqrt(...) in place of the last two. Only a norm whose weight is [hidden] is raised here;
// the per-head q/k norms (Qwen3) and MLA's latent kv norm are read by their attention pattern.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

using namespace mlir;

namespace disagmoe::raise {

std::optional<NormMatch> ComponentMatcher::matchNorm(Value x) {
  for (NodeOp pow : consumers(x, "Pow")) {
    auto exponent = scalarConstant(pow.getInputs()[1]);
    if (!exponent || *exponent != 2.0 || pow.getInputs()[0] != x)
      continue;
    auto mean = single(consumers(pow.getOutputs()[0], "ReduceMean"));
    auto add = mean ? single(consumers(mean.getOutputs()[0], "Add")) : nullptr;
    auto eps = add ? scalarConstant(*otherOperand(add, mean.getOutputs()[0])) : std::nullopt;
    auto sqrt = add ? single(consumers(add.getOutputs()[0], "Sqrt")) : nullptr;
    if (!eps || !sqrt)
      return fail(pow, "RMSNorm: expected Pow -> ReduceMean -> Add(eps) -> Sqrt");
    NodeOp scaled;
    if (auto div = single(consumers(sqrt.getOutputs()[0], "Div"))) {
      auto one = scalarConstant(div.getInputs()[0]);
      if (one && *one == 1.0 && div.getInputs()[1] == sqrt.getOutputs()[0])
        scaled = single(consumers(div.getOutputs()[0], "Mul")); // x * (1 / sqrt)
      else if (div.getInputs()[0] == x)
        scaled = div; // x / sqrt
    }
    if (!scaled || !otherOperand(scaled, scaled.getInputs()[0]) ||
        (scaled.getOpType() == "Mul" && !otherOperand(scaled, x)))
      return fail(sqrt, "RMSNorm: expected x / sqrt(mean(x^2) + eps)");
    auto mul = single(consumers(scaled.getOutputs()[0], "Mul"));
    WeightOp weight = mul ? weightOf(*otherOperand(mul, scaled.getOutputs()[0])) : WeightOp();
    if (!weight)
      return fail(scaled, "RMSNorm: expected a multiplication by a weight [hidden]");
    return NormMatch{x, mul.getOutputs()[0], weight, *eps};
  }
  return std::nullopt;
}

std::optional<NormMatch> ComponentMatcher::normOn(Value x) {
  for (Operation *user : x.getUsers())
    if (auto norm = dyn_cast<moe::RmsNormOp>(user); norm && norm.getX() == x)
      if (WeightOp w = norm.getWeight().getDefiningOp<WeightOp>())
        return NormMatch{x, norm.getResult(), w, norm.getEps().convertToDouble()};
  return matchNorm(x);
}

namespace {

struct RmsNormPattern : ComponentPattern<NodeOp> {
  using ComponentPattern::ComponentPattern;

  LogicalResult matchAndRewrite(NodeOp mean, PatternRewriter &rewriter) const override {
    if (mean.getOpType() != "ReduceMean" || mean.getInputs().empty())
      return failure();
    NodeOp pow = producer(mean.getInputs()[0], {"Pow"});
    if (!pow)
      return failure();
    ComponentMatcher m(ctx);
    auto norm = m.matchNorm(pow.getInputs()[0]);
    if (!norm) {
      if (m.error)
        ctx.recordFailure(mean, *m.error);
      return failure();
    }
    const int64_t hidden = ctx.actType.getDimSize(2);
    if (staticShape(norm->weight.getResult()) != SmallVector<int64_t>{hidden})
      return failure(); // a per-head or latent norm: its attention reads it
    if (auto t = llvm::dyn_cast<RankedTensorType>(norm->input.getType()); t && t.getRank() != 3)
      return failure();
    Operation *last = norm->output.getDefiningOp();
    rewriter.setInsertionPoint(last);
    auto op = rewriter.create<moe::RmsNormOp>(last->getLoc(), ctx.actType, norm->input,
                                              norm->weight.getResult(), llvm::APFloat(norm->eps),
                                              /*layer=*/-1, /*role=*/"");
    ctx.inheritOrder(op, mean);
    replaceComponent(rewriter, norm->output, op.getResult());
    return success();
  }
};

} // namespace

void populateRmsNormPattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<RmsNormPattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
