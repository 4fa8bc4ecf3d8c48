//===- SigmoidRouterPattern.cpp - DeepSeek-V3's router -> moe.router ---------------===//
//
// transformers' DeepseekV3TopkRouter (modeling_deepseek_v3.py), as the TorchScript exporter
// writes it (after fold):
//
//   s      = Sigmoid(MatMul(x, Wg))                                   scores, fp32
//   choice = Add(s, e_score_correction_bias [1, E] or [E])            optional
//   groups = ReduceSum(TopK(Reshape(choice, [-1, G, E/G]), 2).values, -1)
//   mask   = ScatterElements(zeros [T, G], TopK(groups, topk_group).ids, ones)
//   masked = Where(Not(Cast<bool>(Reshape(Expand(Unsqueeze(mask, -1), [., G, E/G]), [-1, E]))),
//                  0.0, choice)                                       HF's masked_fill
//   ids    = TopK(masked, k).ids                                      the anchor
//   gates  = GatherElements(s, ids) [/ (ReduceSum(.) + eps)] [* routed_scaling_factor]
//
// Without the group mask (n_group 1) the anchor TopK reads the choice itself. Anchor: the TopK
// whose data is computed from the Sigmoid of a router projection (GraphMatchers.h
// sigmoidRouterScores) and whose ids are used; the inner TopKs of the group choice are absorbed.
// Scoring sigmoid_group_topk_renorm with the Div, sigmoid_group_topk without.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

using namespace mlir;

namespace disagmoe::raise {
namespace {

/// TopK's K (constant), largest, over the last axis of a rank-`rank` input; nullopt otherwise.
std::optional<int64_t> lastAxisTopK(NodeOp topk, int64_t rank) {
  if (topk.getOpType() != "TopK" || topk.getInputs().size() < 2)
    return std::nullopt;
  auto attrs = topk.getOnnxAttrs();
  if (auto largest = attrs.getAs<IntegerAttr>("largest"); largest && largest.getInt() != 1)
    return std::nullopt;
  int64_t axis = -1;
  if (auto a = attrs.getAs<IntegerAttr>("axis"))
    axis = a.getInt();
  if (axis != -1 && axis != rank - 1)
    return std::nullopt;
  auto k = scalarConstant(topk.getInputs()[1]);
  return k ? std::optional<int64_t>(static_cast<int64_t>(*k)) : std::nullopt;
}

/// Follows `v` up through Reshape / Expand / Unsqueeze / Squeeze (the group mask's broadcast).
Value skipBroadcast(Value v, SmallVector<NodeOp> &path) {
  while (NodeOp n = producer(v, {"Reshape", "Expand", "Unsqueeze", "Squeeze", "Identity"})) {
    path.push_back(n);
    v = n.getInputs()[0];
  }
  return v;
}

/// Every value of constant `v` is `x`.
bool allValues(Value v, double x) {
  auto values = constantValues(v);
  return values && !values->empty() && llvm::all_of(*values, [&](double y) { return y == x; });
}

/// ReduceSum over the last axis of a rank-`rank` input (axes as input or attribute).
bool sumsLastAxis(NodeOp sum, int64_t rank) {
  std::optional<SmallVector<double>> axes;
  if (sum.getInputs().size() > 1)
    axes = constantValues(sum.getInputs()[1]);
  else if (auto attr = sum.getOnnxAttrs().getAs<ArrayAttr>("axes"); attr && attr.size() == 1)
    if (auto a = llvm::dyn_cast<IntegerAttr>(attr[0]))
      axes = SmallVector<double>{static_cast<double>(a.getInt())};
  return axes && axes->size() == 1 && ((*axes)[0] == -1 || (*axes)[0] == rank - 1);
}

/// A TopK of the group choice (its values summed, or its ids scattered into the group mask):
/// absorbed by the anchor's match, never an anchor itself.
bool isInnerTopK(NodeOp topk) {
  return llvm::any_of(consumers(topk.getOutputs()[0], "ReduceSum"),
                      [](NodeOp sum) { return !consumers(sum.getOutputs()[0], "TopK").empty(); }) ||
         !consumers(topk.getOutputs()[1], "ScatterElements").empty();
}

} // namespace

std::optional<RouterMatch> ComponentMatcher::matchSigmoidRouter(NodeOp topk) {
  NodeOp sigmoid = sigmoidRouterScores(topk);
  if (!sigmoid || isInnerTopK(topk))
    return std::nullopt;
  RouterMatch r;
  r.topk = topk;
  NodeOp logits = producer(skipDataMovement(sigmoid.getInputs()[0]));
  if (!readRouterProjection(logits, r))
    return fail(logits, "router: expected the logits MatMul(x, Wg[hidden, experts]) under " +
                            describe(sigmoid));
  if (r.bias)
    return fail(logits, "router: a bias on the logits of a sigmoid router (DeepSeek-V3's has "
                        "none; its e_score_correction_bias is added to the scores)");
  const int64_t E = r.numExperts;
  auto k = lastAxisTopK(topk, 2);
  if (!k || *k < 1 || *k > E)
    return fail(topk, "router: expected TopK(K constant, largest) over the experts' last axis");
  r.topK = *k;
  const Value scores = sigmoid.getOutputs()[0];

  // The group mask: Where(Not(Cast<bool>(broadcast(ScatterElements(...)))), 0.0, choice).
  Value choice = topk.getInputs()[0];
  if (NodeOp where = producer(choice, {"Where"})) {
    std::optional<double> zero = scalarConstant(where.getInputs()[1]);
    if (!zero || *zero != 0.0)
      return fail(where, "router: the experts of the dropped groups must score 0.0 (HF's "
                         "masked_fill(~score_mask, 0.0)); this Where gives them another value");
    NodeOp notOp = producer(where.getInputs()[0], {"Not"});
    NodeOp cast = notOp ? producer(notOp.getInputs()[0], {"Cast"}) : NodeOp();
    if (!cast)
      return fail(where, "router: expected the group mask Where(Not(Cast<bool>(score_mask)), 0, "
                         "scores_for_choice)");
    SmallVector<NodeOp> broadcast;
    Value groupMask = skipBroadcast(cast.getInputs()[0], broadcast);
    NodeOp scatter = producer(groupMask, {"ScatterElements"});
    if (!scatter || scatter.getInputs().size() != 3 || !isZeros(scatter.getInputs()[0]) ||
        !allValues(scatter.getInputs()[2], 1.0) || scatter.getOnnxAttrs().get("reduction"))
      return fail(cast, "router: expected the group mask ScatterElements(zeros, group ids, 1) "
                        "broadcast to the experts");
    // Expert e belongs to group e / (E / G): the mask [T, G] unsqueezed last, expanded to
    // [T, G, E / G] and flattened to [T, E].
    SmallVector<int64_t> maskShape = staticShape(scatter.getOutputs()[0]);
    if (maskShape.size() != 2 || maskShape[1] < 1 || E % maskShape[1] != 0)
      return fail(scatter, "router: the group mask is not [tokens, n_group] with n_group dividing "
                           "the " +
                               std::to_string(E) + " experts");
    const int64_t G = maskShape[1], per = E / G;
    bool expandsLast = false;
    for (NodeOp b : broadcast)
      if (b.getOpType() == "Expand")
        expandsLast =
            staticShape(b.getOutputs()[0]) == SmallVector<int64_t>{maskShape[0], G, per} &&
            staticShape(b.getInputs()[0]) == SmallVector<int64_t>{maskShape[0], G, 1};
    if (!expandsLast && G > 1)
      return fail(cast, "router: the group mask is not broadcast over each group's " +
                            std::to_string(per) +
                            " consecutive experts ([tokens, n_group, 1] expanded to [tokens, "
                            "n_group, experts / n_group])");
    NodeOp groupTopK = producer(scatter.getInputs()[1], {"TopK"});
    auto topkGroup = groupTopK ? lastAxisTopK(groupTopK, 2) : std::nullopt;
    if (!groupTopK || scatter.getInputs()[1] != groupTopK.getOutputs()[1] || !topkGroup ||
        *topkGroup < 1 || *topkGroup > G)
      return fail(scatter, "router: the group mask does not scatter the ids of a TopK(topk_group "
                           "constant) of the group scores");
    NodeOp sum = producer(groupTopK.getInputs()[0], {"ReduceSum"});
    NodeOp top2 = sum ? producer(sum.getInputs()[0], {"TopK"}) : NodeOp();
    auto two = top2 ? lastAxisTopK(top2, 3) : std::nullopt;
    if (!top2 || sum.getInputs()[0] != top2.getOutputs()[0] || two != 2 || !sumsLastAxis(sum, 3) ||
        staticShape(sum.getOutputs()[0]) != maskShape)
      return fail(groupTopK, "router: the group scores are not the sum of each group's top 2 "
                             "(ReduceSum(TopK(scores_for_choice.view(-1, n_group, -1), 2)))");
    if (staticShape(top2.getInputs()[0]) != SmallVector<int64_t>{maskShape[0], G, per} ||
        skipDataMovement(top2.getInputs()[0]) != skipDataMovement(where.getInputs()[2]))
      return fail(top2, "router: the group scores are not computed from the scores the experts' "
                        "top-k masks ([tokens, " +
                            std::to_string(G) + ", " + std::to_string(per) + "])");
    if (G > 1 && per < 2)
      return fail(top2, "router: groups of one expert have no top 2");
    if (r.topK > *topkGroup * per)
      return fail(topk, "router: top_k " + std::to_string(r.topK) + " exceeds the " +
                            std::to_string(*topkGroup * per) + " experts of the kept groups");
    r.nGroup = G;
    r.topkGroup = *topkGroup;
    choice = where.getInputs()[2];
  }

  // scores_for_choice = s [+ e_score_correction_bias].
  Value c = skipDataMovement(choice);
  if (NodeOp add = producer(c, {"Add"})) {
    Value biasIn;
    for (Value in : add.getInputs())
      if (skipDataMovement(in) == scores)
        biasIn = *otherOperand(add, in);
    WeightOp bias = biasIn ? weightOf(skipDataMovement(biasIn)) : WeightOp();
    auto shape = bias ? staticShape(bias.getResult()) : SmallVector<int64_t>{};
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    if (!bias || count != E || (shape.size() == 2 && shape[0] != 1) || shape.size() > 2)
      return fail(add, "router: the scores for the choice add something other than an "
                       "e_score_correction_bias weight [" +
                           std::to_string(E) + "] to the sigmoid scores");
    r.correctionBias = shape.size() == 1 ? bias : reshapedRef(bias, {E});
  } else if (c != scores) {
    return fail(topk, "router: the top-k does not rank the sigmoid scores of " + describe(sigmoid) +
                          " (plus e_score_correction_bias, group-masked)");
  }

  // gates = GatherElements(s, ids) [renormalised] [scaled]; the biased values are not used.
  r.ids = topk.getOutputs()[1];
  if (!topk.getOutputs()[0].use_empty())
    return fail(topk, "router: the top-k's values (the biased, masked scores) are used; "
                      "DeepSeek-V3's gates are the unbiased scores gathered at the ids");
  NodeOp gather;
  for (NodeOp g : consumers(r.ids, "GatherElements")) {
    auto axis = g.getOnnxAttrs().getAs<IntegerAttr>("axis");
    if (skipDataMovement(g.getInputs()[0]) == scores && g.getInputs()[1] == r.ids && axis &&
        (axis.getInt() == 1 || axis.getInt() == -1))
      gather = g;
  }
  if (!gather)
    return fail(topk, "router: the gates are not the sigmoid scores of " + describe(sigmoid) +
                          " gathered at the chosen ids (GatherElements(scores, ids, axis 1))");
  r.gates = gather.getOutputs()[0];
  std::optional<NodeOp> div = sumRenormalisation(r.gates);
  if (!div)
    return std::nullopt;
  r.scoring = *div ? "sigmoid_group_topk_renorm" : "sigmoid_group_topk";
  if (*div)
    r.gates = div->getOutputs()[0];
  if (!readScalingFactor(r))
    return std::nullopt;
  return r;
}

namespace {

struct SigmoidRouterPattern : ComponentPattern<NodeOp> {
  using ComponentPattern::ComponentPattern;

  LogicalResult matchAndRewrite(NodeOp topk, PatternRewriter &rewriter) const override {
    if (topk.getOpType() != "TopK" || topk.getInputs().size() < 2 || topk.getOutputs().size() != 2)
      return failure();
    ComponentMatcher m(ctx);
    auto r = m.matchSigmoidRouter(topk);
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

void populateSigmoidRouterPattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<SigmoidRouterPattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
