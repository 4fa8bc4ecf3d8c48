//===- ExpertsDenseMaskedPattern.cpp - every expert on every token, masked -> moe.experts ---===//
//
// Anchor: a moe.router whose ids feed ScatterElements(zeros, ids, gates), the dense score matrix.
// Dense-masked experts (e.g. Hugging Face GPT-OSS's inference path): every expert on every
// token through batched MatMuls with stacked weights ([experts, hidden, 2*inner] fused with the
// clamped SwiGLU, or [experts, hidden, inner] gate and up with SwiGLU; [experts, inner, hidden]
// down), weighted by the dense score matrix ScatterElements(zeros, ids, gates) and summed over
// the experts. Equal to the routed sum, since the matrix is zero off the top-k.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ExpertsPattern.h"

using namespace mlir;

namespace disagmoe::raise {

std::optional<SmallVector<ExpertMatch>>
ComponentMatcher::matchDenseMaskedExperts(const RouterMatch &router, int64_t &expertHidden,
                                          ExpertForm &form) {
  NodeOp scatter;
  for (NodeOp sc : consumers(router.ids, "ScatterElements"))
    if (sc.getInputs()[1] == router.ids && skipDataMovement(sc.getInputs()[2]) == router.gates &&
        isZeros(sc.getInputs()[0]))
      scatter = sc;
  if (!scatter)
    return fail(router.topk, "experts: the router's expert ids feed neither a OneHot mask (the "
                             "loop over experts) nor a dense score matrix ScatterElements(zeros, "
                             "ids, gates)"),
           std::nullopt;
  if (auto axis = scatter.getOnnxAttrs().getAs<IntegerAttr>("axis");
      !axis || (axis.getInt() != 1 && axis.getInt() != -1))
    return fail(scatter, "experts: the score matrix must scatter the gates along the experts axis"),
           std::nullopt;
  for (NodeOp sigmoid : allNodes("Sigmoid")) {
    Value rows;
    auto oai = matchOaiExpert(sigmoid, rows);
    if (error)
      return std::nullopt;
    if (!oai) {
      // Plain SwiGLU over stacked weights: silu(rows W1[e]) * (rows W3[e]), then W2[e].
      NodeOp mm1 = producer(sigmoid.getInputs()[0], {"MatMul"});
      WeightOp w1 = mm1 ? weightOf(mm1.getInputs()[1]) : WeightOp();
      if (!w1 || staticShape(w1.getResult()).size() != 3)
        continue;
      rows = mm1.getInputs()[0];
      NodeOp silu = single(consumers(sigmoid.getOutputs()[0], "Mul"));
      if (!silu || otherOperand(silu, sigmoid.getOutputs()[0]) != mm1.getOutputs()[0])
        return fail(sigmoid, "experts: expected SiLU = x * Sigmoid(x)"), std::nullopt;
      NodeOp gated = single(consumers(silu.getOutputs()[0], "Mul"));
      NodeOp mm3 =
          gated ? producer(*otherOperand(gated, silu.getOutputs()[0]), {"MatMul"}) : NodeOp();
      NodeOp mm2 = gated ? single(consumers(gated.getOutputs()[0], "MatMul")) : NodeOp();
      if (!mm3 || mm3.getInputs()[0] != rows || !weightOf(mm3.getInputs()[1]) || !mm2 ||
          !weightOf(mm2.getInputs()[1]))
        return fail(sigmoid, "experts: expected stacked SwiGLU (silu(x W1) * (x W3)) W2"),
               std::nullopt;
      ExpertMatch plain;
      plain.w1 = w1, plain.w3 = weightOf(mm3.getInputs()[1]),
      plain.w2 = weightOf(mm2.getInputs()[1]);
      oai = std::make_pair(plain, ExpertForm());
    }
    ExpertMatch stacked = oai->first;
    auto shape = staticShape(stacked.w1.getResult());
    if (shape.size() != 3 || !findUpstream(rows, "Tile", 8) ||
        skipDataMovement(findUpstream(rows, "Tile", 8).getInputs()[0]) != router.input &&
            !dependsOn(rows, router.input, 16))
      continue;
    if (shape[0] != router.numExperts || staticShape(stacked.w2.getResult()).size() != 3)
      return fail(sigmoid, "experts: the stacked weights do not hold " +
                               std::to_string(router.numExperts) + " experts"),
             std::nullopt;
    // The combine: Mul(expert outputs, scores) -> ReduceSum over the experts axis.
    NodeOp down = single(consumers(stacked.w2.getResult(), "MatMul"));
    NodeOp sum = down ? findDownstream(down.getOutputs()[0], "ReduceSum", false, 64) : NodeOp();
    if (!sum || !dependsOn(sum.getInputs()[0], scatter.getOutputs()[0]))
      return fail(sigmoid, "experts: the stacked experts' outputs are not weighted by the dense "
                           "score matrix and summed"),
             std::nullopt;
    // The sum is over the experts: axis 0 of the batched [experts, tokens, hidden] outputs (a sum
    // over another axis mixes tokens, and is a valid graph when there are as many tokens).
    std::optional<SmallVector<double>> axes;
    if (sum.getInputs().size() >= 2)
      axes = constantValues(sum.getInputs()[1]);
    else if (auto attr = sum.getOnnxAttrs().getAs<ArrayAttr>("axes"))
      axes = llvm::to_vector(llvm::map_range(attr, [](Attribute a) {
        return static_cast<double>(llvm::cast<IntegerAttr>(a).getInt());
      }));
    const int64_t sumRank = rankOf(sum.getInputs()[0]);
    if (axes && sumRank > 0 &&
        (axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != static_cast<double>(-sumRank)))) {
      std::string list;
      for (double a : *axes)
        list += (list.empty() ? "" : ", ") + std::to_string(static_cast<int64_t>(a));
      return fail(sum, "experts: the weighted expert outputs are summed over axes [" + list +
                           "], not over the experts (axis 0)"),
             std::nullopt;
    }
    for (WeightOp w : {stacked.w1, stacked.w3, stacked.w2, stacked.b1, stacked.b2})
      if (w && w.getTransposed())
        return fail(sigmoid, "experts: transposed stacked weights are not supported"), std::nullopt;
    if (stacked.w3 && staticShape(stacked.w3.getResult()) != shape)
      return fail(sigmoid, "experts: the stacked gate and up weights differ in shape"),
             std::nullopt;
    SmallVector<ExpertMatch> experts;
    for (int64_t e = 0; e < router.numExperts; ++e) {
      ExpertMatch m;
      m.expert = e;
      m.w1 = sliceRef(stacked.w1, e);
      if (stacked.w3)
        m.w3 = sliceRef(stacked.w3, e);
      m.w2 = sliceRef(stacked.w2, e);
      if (stacked.b1)
        m.b1 = sliceRef(stacked.b1, e);
      if (stacked.b2)
        m.b2 = sliceRef(stacked.b2, e);
      experts.push_back(m);
    }
    form = oai->second;
    expertHidden = form.oai ? shape[2] / 2 : shape[2];
    return experts;
  }
  return fail(scatter, "experts: no SwiGLU experts over stacked weights read the dense score "
                       "matrix"),
         std::nullopt;
}

namespace {

struct ExpertsDenseMaskedPattern : ExpertsPattern {
  using ExpertsPattern::ExpertsPattern;

  bool isForm(moe::RouterOp router) const override {
    Value ids = router.getIds();
    return consumers(ids, "OneHot").empty() && !consumers(ids, "ScatterElements").empty();
  }
  std::optional<SmallVector<ExpertMatch>> match(ComponentMatcher &m, const RouterMatch &router,
                                                int64_t &expertHidden,
                                                ExpertForm &form) const override {
    return m.matchDenseMaskedExperts(router, expertHidden, form);
  }
};

} // namespace

void populateExpertsDenseMaskedPattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<ExpertsDenseMaskedPattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
