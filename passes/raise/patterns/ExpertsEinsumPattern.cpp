//===- ExpertsEinsumPattern.cpp - GPT-OSS's reference MLPBlock -> moe.experts --------===//
//
// Anchor: a moe.router whose ids gather stacked expert weights (Gather(W, ids)).
// The reference implementation's MLPBlock (openai/gpt-oss gpt_oss/torch/model.py): the chosen
// experts' weights gathered per token from stacked [experts, out, in] tensors by the router's
// ids, Einsum("beck,bk->bec") + gathered bias, the clamped SwiGLU, Einsum("beck,bek->bec") +
// gathered bias, and Einsum("bec,be->bc") with the gates.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ExpertsPattern.h"

using namespace mlir;

namespace disagmoe::raise {

std::optional<SmallVector<ExpertMatch>>
ComponentMatcher::matchEinsumExperts(const RouterMatch &router, int64_t &expertHidden,
                                     ExpertForm &form) {
  for (NodeOp up : allNodes("Einsum")) {
    if (einsumEquation(up) != "beck,bk->bec" || up.getInputs().size() != 2)
      continue;
    WeightOp w1 = gatheredByIds(up.getInputs()[0], router.ids);
    if (!w1 || skipDataMovement(up.getInputs()[1]) != router.input)
      continue;
    Value fused = up.getOutputs()[0];
    WeightOp b1;
    if (NodeOp add = single(consumers(fused, "Add"))) {
      b1 = gatheredByIds(*otherOperand(add, fused), router.ids);
      if (!b1)
        return fail(add, "experts: the gate_up bias is not gathered by the router's ids"),
               std::nullopt;
      fused = add.getOutputs()[0];
    }
    NodeOp sigmoid = findDownstream(fused, "Sigmoid", false, 16);
    Value rows;
    OaiActivation act;
    auto oai = sigmoid ? matchOaiExpert(sigmoid, rows, &act) : std::nullopt;
    if (error)
      return std::nullopt;
    if (!oai || act.fused != fused)
      return fail(up, "experts: the gathered gate_up is not followed by the clamped SwiGLU"),
             std::nullopt;
    NodeOp down = single(consumers(act.out.getOutputs()[0], "Einsum"));
    WeightOp w2 = down && einsumEquation(down) == "beck,bek->bec"
                      ? gatheredByIds(down.getInputs()[0], router.ids)
                      : WeightOp();
    if (!w2)
      return fail(act.out, "experts: expected Einsum(\"beck,bek->bec\") with the down weights "
                           "gathered by the router's ids"),
             std::nullopt;
    Value y = down.getOutputs()[0];
    WeightOp b2;
    if (NodeOp add = single(consumers(y, "Add"))) {
      b2 = gatheredByIds(*otherOperand(add, y), router.ids);
      if (!b2)
        return fail(add, "experts: the down bias is not gathered by the router's ids"),
               std::nullopt;
      y = add.getOutputs()[0];
    }
    NodeOp combine = single(consumers(y, "Einsum"));
    if (!combine || einsumEquation(combine) != "bec,be->bc" ||
        skipDataMovement(combine.getInputs()[1]) != router.gates)
      return fail(down, "experts: expected Einsum(\"bec,be->bc\") of the expert outputs and the "
                        "router's gates"),
             std::nullopt;
    auto s1 = staticShape(w1.getResult()), s2 = staticShape(w2.getResult());
    if (s1.size() != 3 || s2.size() != 3 || s1[0] != router.numExperts ||
        s2[0] != router.numExperts || s1[1] != 2 * s2[2])
      return fail(up, "experts: stacked weights [experts, 2*inner, hidden] and [experts, "
                      "hidden, inner] expected"),
             std::nullopt;
    for (WeightOp w : {w1, w2, b1, b2})
      if (w && w.getTransposed())
        return fail(up, "experts: transposed stacked weights are not supported"), std::nullopt;
    SmallVector<ExpertMatch> experts;
    for (int64_t e = 0; e < router.numExperts; ++e) {
      ExpertMatch m;
      m.expert = e;
      m.w1 = sliceRef(w1, e, /*transpose=*/true); // [2I, H] on disk, [H, 2I] as used
      m.w2 = sliceRef(w2, e, /*transpose=*/true);
      if (b1)
        m.b1 = sliceRef(b1, e);
      if (b2)
        m.b2 = sliceRef(b2, e);
      experts.push_back(m);
    }
    form = oai->second;
    expertHidden = s2[2];
    return experts;
  }
  return fail(router.topk, "experts: the router's ids gather no stacked expert weights into an "
                           "Einsum(\"beck,bk->bec\")"),
         std::nullopt;
}

namespace {

struct ExpertsEinsumPattern : ExpertsPattern {
  using ExpertsPattern::ExpertsPattern;

  bool isForm(moe::RouterOp router) const override {
    Value ids = router.getIds();
    return consumers(ids, "OneHot").empty() && consumers(ids, "ScatterElements").empty() &&
           !consumers(ids, "Gather").empty();
  }
  std::optional<SmallVector<ExpertMatch>> match(ComponentMatcher &m, const RouterMatch &router,
                                                int64_t &expertHidden,
                                                ExpertForm &form) const override {
    return m.matchEinsumExperts(router, expertHidden, form);
  }
};

} // namespace

void populateExpertsEinsumPattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<ExpertsEinsumPattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
