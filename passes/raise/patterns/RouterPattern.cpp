//===- RouterPattern.cpp - the MoE router -> moe.router --------------------------===//
//
// Anchor: TopK(K constant) of the router logits MatMul(x, Wg) [+ b] or Gemm(x, Wg^T, b), x the
// FFN norm's output through reshapes. Scoring from the nodes around TopK: Softmax before it
// (softmax_topk), with Div(ReduceSum) after (softmax_topk_renorm), or Softmax after it
// (topk_softmax); a positive constant Mul on the gates is DeepSeek's routed_scaling_factor.
// The TopK's ids and the final gates are replaced by moe.router's results, which the experts
// patterns start from. TopKs that choose on sigmoid scores are SigmoidRouterPattern.cpp's.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

#include <cmath>

using namespace mlir;

namespace disagmoe::raise {

bool ComponentMatcher::readRouterProjection(NodeOp logits, RouterMatch &r) {
  r.input = skipDataMovement(logits.getInputs()[0]);
  r.weight = weightOf(logits.getInputs()[1]);
  if (r.weight && logits.getOpType() == "Gemm") {
    auto attrs = logits.getOnnxAttrs();
    auto intAttr = [&](StringRef name, int64_t dflt) {
      auto a = attrs.getAs<IntegerAttr>(name);
      return a ? a.getInt() : dflt;
    };
    auto floatAttr = [&](StringRef name) {
      auto a = attrs.getAs<FloatAttr>(name);
      return a ? a.getValueAsDouble() : 1.0;
    };
    if (intAttr("transA", 0) != 0 || floatAttr("alpha") != 1.0 || floatAttr("beta") != 1.0)
      return fail(logits, "router: Gemm with transA or alpha/beta other than 1"), false;
    if (intAttr("transB", 0) == 1) {
      if (r.weight.getTransposed())
        return fail(logits, "router: Gemm transposes a weight that is already transposed"), false;
      r.weight = transposedRef(r.weight);
    }
    if (logits.getInputs().size() > 2 &&
        !isa_and_nonnull<onnxir::NoneOp>(logits.getInputs()[2].getDefiningOp())) {
      r.bias = weightOf(logits.getInputs()[2]);
      if (!r.bias)
        return fail(logits, "router: the Gemm's bias is not a weight"), false;
    }
  }
  auto wShape = r.weight ? staticShape(r.weight.getResult()) : SmallVector<int64_t>{};
  if (!r.weight || wShape.size() != 2)
    return false; // the caller says what it expected
  r.numExperts = wShape[1];
  if (logits.getOpType() == "MatMul")
    r.bias = biasAfter(logits.getOutputs()[0], r.numExperts).second;
  if (r.bias && staticShape(r.bias.getResult()) != SmallVector<int64_t>{r.numExperts})
    return fail(logits,
                "router: the logits' bias is not [experts = " + std::to_string(r.numExperts) + "]"),
           false;
  return true;
}

std::optional<NodeOp> ComponentMatcher::sumRenormalisation(Value values) {
  NodeOp div, nearMiss;
  for (NodeOp d : consumers(values, "Div")) {
    if (d.getInputs()[0] != values)
      continue;
    // Div(values, ReduceSum(values)) or Div(values, ReduceSum(values) + tiny eps).
    Value den = d.getInputs()[1];
    if (NodeOp add = producer(den, {"Add"}))
      for (Value in : add.getInputs())
        if (producer(in, {"ReduceSum"}) && otherOperand(add, in) &&
            scalarConstant(*otherOperand(add, in)) &&
            std::abs(*scalarConstant(*otherOperand(add, in))) < 1e-6)
          den = in;
    NodeOp sum = producer(den, {"ReduceSum"});
    if (sum && sum.getInputs()[0] == values)
      div = d;
    else if (dependsOn(d.getInputs()[1], values, 16))
      nearMiss = d; // divided by something computed from the weights, but not their sum
  }
  // A renormalisation the router does not represent (the sum scaled, shifted, or of other values)
  // must not pass as no renormalisation: the Div would be left to run as part of the combine.
  if (!div && nearMiss)
    return fail(nearMiss,
                "router: the top-k weights are divided by " +
                    (producer(nearMiss.getInputs()[1]) ? describe(producer(nearMiss.getInputs()[1]))
                                                       : std::string("a function argument")) +
                    ", not by their sum (or their sum + an epsilon below 1e-6): not a "
                    "renormalisation moe.router represents");
  return div;
}

bool ComponentMatcher::readScalingFactor(RouterMatch &r) {
  // routed_scaling_factor: the gates multiplied by a positive constant.
  for (NodeOp mul : consumers(r.gates, "Mul"))
    if (auto c = otherOperand(mul, r.gates) ? scalarConstant(*otherOperand(mul, r.gates))
                                            : std::nullopt) {
      if (*c <= 0)
        return fail(mul, "router: the gates are multiplied by a non-positive constant"), false;
      r.scalingFactor = shortestF32(*c);
      r.gates = mul.getOutputs()[0];
      break;
    }
  return true;
}

std::optional<RouterMatch> ComponentMatcher::matchRouter(NodeOp topk) {
  // Logits: MatMul(x', Wg) [+ b] or Gemm(x', Wg^T, b) upstream of TopK, x' a reshape of x.
  NodeOp logits = findUpstream(topk.getInputs()[0], "MatMul", 8);
  if (!logits || !weightOf(logits.getInputs()[1]))
    logits = findUpstream(topk.getInputs()[0], "Gemm", 8);
  if (!logits)
    return std::nullopt;
  RouterMatch r;
  r.topk = topk;
  auto k = scalarConstant(topk.getInputs()[1]);
  if (!readRouterProjection(logits, r) || !k)
    return fail(topk, "router: expected TopK(K constant) of MatMul(x, Wg[hidden, experts])");
  r.topK = static_cast<int64_t>(*k);
  if (auto largest = topk.getOnnxAttrs().getAs<IntegerAttr>("largest"))
    if (largest.getInt() != 1)
      return fail(topk, "router: TopK must select the largest scores");
  NodeOp before = findUpstream(topk.getInputs()[0], "Softmax", 4);
  bool softmaxBefore = static_cast<bool>(before);
  if (before && !isLastAxisSoftmax(before))
    return fail(before, "router: the Softmax is not over the experts (the last axis)");
  Value values = topk.getOutputs()[0];
  std::optional<NodeOp> div = sumRenormalisation(values);
  if (!div)
    return std::nullopt;
  NodeOp softmaxAfter = single(consumers(values, "Softmax"));
  if (softmaxAfter && !isLastAxisSoftmax(softmaxAfter))
    return fail(softmaxAfter, "router: the Softmax is not over the top-k (the last axis)");
  if (softmaxBefore && *div) {
    r.scoring = "softmax_topk_renorm";
    r.gates = div->getOutputs()[0];
  } else if (softmaxBefore) {
    r.scoring = "softmax_topk";
    r.gates = values;
  } else if (softmaxAfter) {
    r.scoring = "topk_softmax";
    r.gates = softmaxAfter.getOutputs()[0];
  } else {
    return fail(topk, "router: no Softmax before or after TopK");
  }
  if (!readScalingFactor(r))
    return std::nullopt;
  r.ids = topk.getOutputs()[1];
  return r;
}

moe::RouterOp buildRouter(PatternRewriter &rewriter, MatchContext &ctx, RouterMatch r) {
  auto i64 = [&](int64_t v) { return rewriter.getI64IntegerAttr(v); };
  auto op = rewriter.create<moe::RouterOp>(
      r.topk->getLoc(), RankedTensorType::get({ctx.tokens, r.topK}, rewriter.getI64Type()),
      RankedTensorType::get({ctx.tokens, r.topK}, rewriter.getF32Type()), r.input,
      r.weight.getResult(), r.bias ? r.bias.getResult() : Value(),
      r.correctionBias ? r.correctionBias.getResult() : Value(), i64(-1), i64(r.numExperts),
      i64(r.topK), rewriter.getStringAttr(r.scoring),
      r.scalingFactor > 0 ? rewriter.getF64FloatAttr(r.scalingFactor) : FloatAttr(),
      r.nGroup > 1 ? i64(r.nGroup) : IntegerAttr(),
      r.nGroup > 1 ? i64(r.topkGroup) : IntegerAttr());
  ctx.inheritOrder(op, r.topk);
  replaceComponent(rewriter, r.gates, op.getGates());
  replaceComponent(rewriter, r.ids, op.getIds());
  return op;
}

namespace {

struct RouterPattern : ComponentPattern<NodeOp> {
  using ComponentPattern::ComponentPattern;

  LogicalResult matchAndRewrite(NodeOp topk, PatternRewriter &rewriter) const override {
    if (topk.getOpType() != "TopK" || topk.getInputs().size() < 2 || topk.getOutputs().size() != 2)
      return failure();
    if (sigmoidRouterScores(topk))
      return failure(); // SigmoidRouterPattern's
    ComponentMatcher m(ctx);
    auto r = m.matchRouter(topk);
    if (!r) {
      if (m.error)
        ctx.recordFailure(topk, *m.error);
      return failure();
    }
    rewriter.setInsertionPoint(topk);
    buildRouter(rewriter, ctx, *r);
    return success();
  }
};

} // namespace

void populateRouterPattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<RouterPattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
