//===- ExpertsLoopPattern.cpp - Hugging Face's loop over experts -> moe.experts ------===//
//
// Anchor: a moe.router whose ids feed OneHot (Mixtral's and Qwen3-MoE's sparse blocks: one-hot
// expert mask, then per expert e: token indices from Gather(mask, e) -> NonZero, rows gathered
// from the norm output, a SwiGLU (or GPT-OSS's clamped SwiGLU) on them, scaled by the gathered
// gates and index_add-ed into the output). Each expert's id is read from the Gather of its rows.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ExpertsPattern.h"

#include "llvm/ADT/DenseSet.h"

#include <deque>

using namespace mlir;

namespace disagmoe::raise {

static Value skipTranspose(Value v) {
  while (auto t = producer(v, {"Transpose"}))
    v = t.getInputs()[0];
  return v;
}

/// Expert id whose one-hot row selects `rows`: Gather(mask', e) upstream of rows, where mask' is
/// the OneHot output (possibly transposed).
static std::optional<int64_t> expertIndexOf(MatchContext &ctx, Value rows, NodeOp oneHot) {
  // The walk from `rows` does not depend on `oneHot`: its candidates (Gathers with a constant
  // index, by the mask they read) are kept per `rows` (MatchContext), so each expert's rows are
  // walked once, not once per layer. The first candidate on `oneHot`'s mask is the one the walk
  // meets first.
  auto [cached, fresh] = ctx.expertCandidates.try_emplace(rows);
  if (fresh) {
    llvm::DenseSet<Value> seen;
    std::deque<Value> work{rows};
    for (int budget = 128; !work.empty() && budget-- > 0;) {
      Value v = work.front();
      work.pop_front();
      if (!seen.insert(v).second)
        continue;
      NodeOp node = producer(v);
      if (!node)
        continue;
      if (node.getOpType() == "Gather" && node.getInputs().size() == 2)
        if (auto e = scalarConstant(node.getInputs()[1]))
          cached->second.push_back({skipTranspose(node.getInputs()[0]), static_cast<int64_t>(*e)});
      if (node.getOpType() == "MatMul" && weightOf(node.getInputs()[1]))
        continue; // another component's projection: stop here
      for (Value operand : node.getInputs())
        work.push_back(operand);
    }
  }
  for (auto [mask, e] : cached->second)
    if (mask == oneHot.getOutputs()[0])
      return e;
  return std::nullopt;
}

/// A Gather(mask', e) with a constant e on the one-hot expert mask (mask' the OneHot output,
/// possibly transposed) that reads another axis than the experts axis (the OneHot's `axis`, moved
/// by the Transposes): it selects one token's (or one top-k slot's) routing, not expert e's
/// tokens. The first in block order; null if every such Gather reads the experts axis or the
/// ranks are not static.
static NodeOp gatherOffExpertsAxis(NodeOp oneHot, int64_t &readAxis, int64_t &expertsAxis) {
  NodeOp first;
  auto type = llvm::dyn_cast<RankedTensorType>(oneHot.getOutputs()[0].getType());
  if (!type)
    return nullptr;
  const int64_t rank = type.getRank();
  auto axisAttr = oneHot.getOnnxAttrs().getAs<IntegerAttr>("axis");
  int64_t axis = axisAttr ? axisAttr.getInt() : -1;
  if (axis < 0)
    axis += rank;
  SmallVector<std::pair<Value, int64_t>> work{{oneHot.getOutputs()[0], axis}};
  while (!work.empty()) {
    auto [v, a] = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      auto node = dyn_cast<NodeOp>(user);
      if (!node || node.getInputs()[0] != v)
        continue;
      if (node.getOpType() == "Transpose") {
        auto perm = node.getOnnxAttrs().getAs<ArrayAttr>("perm");
        int64_t moved = rank - 1 - a; // no perm: the axes reversed
        if (perm)
          for (auto [i, p] : llvm::enumerate(perm))
            if (llvm::cast<IntegerAttr>(p).getInt() == a)
              moved = static_cast<int64_t>(i);
        work.push_back({node.getOutputs()[0], moved});
      } else if (node.getOpType() == "Gather" && node.getInputs().size() == 2 &&
                 scalarConstant(node.getInputs()[1])) {
        auto g = node.getOnnxAttrs().getAs<IntegerAttr>("axis");
        int64_t read = g ? g.getInt() : 0;
        if (read < 0)
          read += rank;
        if (read != a && (!first || node->isBeforeInBlock(first)))
          first = node, readAxis = read, expertsAxis = a;
      }
    }
  }
  return first;
}

/// The value an expert's combine weight is read from when it is not the router's gates: the Mul
/// that scales the expert output `out` (through reshapes), and the value its other operand is
/// gathered from (through data movement and Gather's data input; Hugging Face's
/// `routing_weights[top_x, idx, None]` exports as Reshape -> Gather -> Unsqueeze). Nullopt when
/// the weight is the gates, a constant or computed from the gates, or when no such Mul is found
/// (the coverage check reports those).
static std::optional<std::pair<NodeOp, Value>> foreignCombineWeight(Value out, Value gates) {
  NodeOp mul;
  Value v = out;
  for (int steps = 0; steps < 4 && !mul && v.hasOneUse(); ++steps) {
    auto next = dyn_cast<NodeOp>(*v.getUsers().begin());
    if (!next)
      break;
    if (next.getOpType() == "Mul")
      mul = next;
    else if (llvm::is_contained({"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten"},
                                next.getOpType()))
      v = next.getOutputs()[0];
    else
      break;
  }
  std::optional<Value> w = mul ? otherOperand(mul, v) : std::nullopt;
  if (!w)
    return std::nullopt;
  for (int budget = 16; budget-- > 0 && *w != gates;) {
    NodeOp n = producer(*w, {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity",
                             "Expand", "Gather", "Slice", "Transpose"});
    if (!n)
      break;
    w = n.getInputs()[0];
  }
  // A constant factor is no combine weight but a stray scale, and a value computed from the
  // gates is the gates with a stray node on their way: the coverage check names that node.
  NodeOp src = producer(*w);
  if (*w == gates || !src || src.getOpType() == "Constant" || weightOf(*w) ||
      dependsOn(*w, gates, 64))
    return std::nullopt;
  return std::make_pair(mul, *w);
}

std::optional<SmallVector<ExpertMatch>>
ComponentMatcher::matchLoopExperts(const RouterMatch &router, int64_t &expertHidden,
                                   ExpertForm &form) {
  NodeOp oneHot = single(consumers(router.ids, "OneHot"));
  if (!oneHot)
    return fail(router.topk, "experts: the router's expert ids feed more than one OneHot mask"),
           std::nullopt;
  // one_hot(ids, num_classes = num_experts): another depth drops the tokens routed past it (their
  // rows are all off) or holds classes that no expert of the router has.
  if (auto depth =
          oneHot.getInputs().size() >= 2 ? scalarConstant(oneHot.getInputs()[1]) : std::nullopt;
      depth && *depth != static_cast<double>(router.numExperts))
    return fail(oneHot, "experts: the one-hot expert mask has depth " +
                            std::to_string(static_cast<int64_t>(*depth)) +
                            ", but the router scores " + std::to_string(router.numExperts) +
                            " experts"),
           std::nullopt;
  int64_t readAxis = 0, expertsAxis = 0;
  if (NodeOp gather = gatherOffExpertsAxis(oneHot, readAxis, expertsAxis))
    return fail(gather, "experts: Gather(mask, e) reads axis " + std::to_string(readAxis) +
                            " of the one-hot expert mask, not its experts axis " +
                            std::to_string(expertsAxis) +
                            ": it selects one token's routing, not expert e's tokens"),
           std::nullopt;
  SmallVector<ExpertMatch> experts(router.numExperts);
  bool sawPlain = false, sawOai = false;
  for (NodeOp sigmoid : allNodes("Sigmoid")) {
    NodeOp mm1 = producer(sigmoid.getInputs()[0], {"MatMul"});
    if (!mm1) {
      // GPT-OSS's clamped SwiGLU on a fused gate_up projection.
      Value rows;
      auto oai = matchOaiExpert(sigmoid, rows);
      if (error)
        return std::nullopt;
      if (!oai)
        continue;
      std::optional<int64_t> expert = expertIndexOf(ctx, rows, oneHot);
      if (!expert)
        continue;
      if (*expert < 0 || *expert >= router.numExperts || experts[*expert].w1)
        return fail(sigmoid, "experts: expert index " + std::to_string(*expert) +
                                 " is out of range or appears twice"),
               std::nullopt;
      if (sawOai && (oai->second.limit != form.limit || oai->second.alpha != form.alpha))
        return fail(sigmoid, "experts: the experts of one layer use different swiglu limits "
                             "or alphas"),
               std::nullopt;
      sawOai = true;
      form = oai->second;
      // Hugging Face's training branch reads the expert's slices with a 1-D index
      // (`self.gate_up_proj[expert_idx]`, expert_idx = expert_hit[i]): [1, hidden, 2 inner] and
      // [1, 2 inner] references (FoldWeightGather.cpp); the leading 1 goes.
      auto dropUnitLead = [&](WeightOp w, size_t rank) {
        auto shape = w ? staticShape(w.getResult()) : SmallVector<int64_t>();
        if (shape.size() == rank + 1 && shape[0] == 1)
          return reshapedRef(w, ArrayRef<int64_t>(shape).drop_front());
        return w;
      };
      oai->first.w1 = dropUnitLead(oai->first.w1, 2);
      oai->first.w2 = dropUnitLead(oai->first.w2, 2);
      oai->first.b1 = dropUnitLead(oai->first.b1, 1);
      oai->first.b2 = dropUnitLead(oai->first.b2, 1);
      experts[*expert] = oai->first;
      experts[*expert].expert = *expert;
      expertHidden = outWidth(oai->first.w1) / 2;
      continue;
    }
    if (!weightOf(mm1.getInputs()[1]))
      continue;
    Value rows = mm1.getInputs()[0];
    // Which expert: rows come from Gather(x, tokens) with tokens from Gather(mask, e).
    std::optional<int64_t> expert = expertIndexOf(ctx, rows, oneHot);
    if (!expert)
      continue;
    NodeOp silu = single(consumers(sigmoid.getOutputs()[0], "Mul"));
    if (!silu || !otherOperand(silu, sigmoid.getOutputs()[0]) ||
        *otherOperand(silu, sigmoid.getOutputs()[0]) != mm1.getOutputs()[0])
      return fail(sigmoid, "experts: expected SiLU = x * Sigmoid(x)"), std::nullopt;
    NodeOp gated = single(consumers(silu.getOutputs()[0], "Mul"));
    NodeOp mm3 =
        gated ? producer(*otherOperand(gated, silu.getOutputs()[0]), {"MatMul"}) : NodeOp();
    if (!mm3 || mm3.getInputs()[0] != rows || !weightOf(mm3.getInputs()[1]))
      return fail(silu, "experts: expected SwiGLU silu(x W1) * (x W3)"), std::nullopt;
    NodeOp mm2 = single(consumers(gated.getOutputs()[0], "MatMul"));
    if (!mm2 || !weightOf(mm2.getInputs()[1]))
      return fail(gated, "experts: expected the down projection MatMul(., W2)"), std::nullopt;
    if (*expert < 0 || *expert >= router.numExperts || experts[*expert].w1)
      return fail(mm1, "experts: expert index " + std::to_string(*expert) +
                           " is out of range or appears twice"),
             std::nullopt;
    // The combine scales the expert's output by its gate, router.gates gathered at the expert's
    // (token, slot) pairs. A weight read from anything else (the router logits, its softmax over
    // every expert, a second router) is not what moe.experts computes: refuse it by name here
    // rather than leave the Mul to the coverage check's "not part of any component".
    if (auto foreign = foreignCombineWeight(mm2.getOutputs()[0], router.gates)) {
      NodeOp src = producer(foreign->second);
      std::string what = src ? describe(src) : std::string("a function argument");
      if (src && src.getOpType() == "MatMul" && weightOf(src.getInputs()[1]) == router.weight)
        what += ", the router logits x Wg";
      else if (src && src.getOpType() == "Softmax")
        what += ", a softmax over every expert";
      return fail(foreign->first,
                  "experts: expert " + std::to_string(*expert) +
                      "'s output is weighted by values gathered from " + what +
                      ", not by the router's top-k weights (" + router.scoring +
                      " gates, gathered at the expert's token and slot): the combine must read "
                      "the weights the router selects"),
             std::nullopt;
    }
    sawPlain = true;
    experts[*expert] = {*expert, weightOf(mm1.getInputs()[1]), weightOf(mm3.getInputs()[1]),
                        weightOf(mm2.getInputs()[1])};
    auto w1Shape = staticShape(experts[*expert].w1.getResult());
    expertHidden = w1Shape.size() == 2 ? w1Shape[1] : 0;
  }
  if (sawPlain && sawOai)
    return fail(router.topk, "experts: one layer mixes plain and clamped SwiGLU experts"),
           std::nullopt;
  for (auto [e, ex] : llvm::enumerate(experts))
    if (!ex.w1)
      return fail(router.topk, "experts: no SwiGLU expert found for expert id " +
                                   std::to_string(e) + " of " + std::to_string(router.numExperts)),
             std::nullopt;
  return experts;
}

namespace {

struct ExpertsLoopPattern : ExpertsPattern {
  using ExpertsPattern::ExpertsPattern;

  bool isForm(moe::RouterOp router) const override {
    return !consumers(router.getIds(), "OneHot").empty();
  }
  std::optional<SmallVector<ExpertMatch>> match(ComponentMatcher &m, const RouterMatch &router,
                                                int64_t &expertHidden,
                                                ExpertForm &form) const override {
    return m.matchLoopExperts(router, expertHidden, form);
  }
};

} // namespace

void populateExpertsLoopPattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<ExpertsLoopPattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
