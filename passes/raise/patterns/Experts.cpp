//===- Experts.cpp - building moe.experts and finding the routed output -----------===//
#include "passes/raise/patterns/ExpertsPattern.h"

using namespace mlir;

namespace disagmoe::raise {

RouterMatch routerMatchOf(moe::RouterOp router) {
  RouterMatch r;
  r.input = router.getX();
  r.topk = router;
  r.weight = router.getWeight().getDefiningOp<WeightOp>();
  r.bias = router.getBias() ? router.getBias().getDefiningOp<WeightOp>() : WeightOp();
  r.numExperts = router.getNumExperts();
  r.topK = router.getTopK();
  r.scoring = router.getScoring().str();
  r.ids = router.getIds();
  r.gates = router.getGates();
  r.correctionBias = router.getCorrectionBias()
                         ? router.getCorrectionBias().getDefiningOp<WeightOp>()
                         : WeightOp();
  r.nGroup = router.getNGroup().value_or(1);
  r.topkGroup = router.getTopkGroup().value_or(1);
  return r;
}

/// The router's ids already feed a moe.experts (ContribMoePattern builds both at once).
static bool hasExperts(moe::RouterOp router) {
  return llvm::any_of(router.getIds().getUsers(),
                      [](Operation *user) { return isa<moe::ExpertsOp>(user); });
}

Value routedOutput(moe::RouterOp router) {
  auto norm = router.getX().getDefiningOp<moe::RmsNormOp>();
  if (!norm)
    return nullptr;
  Value h = norm.getX(), ids = router.getIds();
  // x_next = h + moe: the Add on h whose other operand depends on the routing.
  Value moeOut;
  for (Operation *user : h.getUsers())
    if (auto add = dyn_cast<NodeOp>(user); add && add.getOpType() == "Add")
      if (auto other = otherOperand(add, h); other && dependsOn(*other, ids))
        moeOut = *other;
  if (!moeOut)
    return nullptr;
  // With shared experts: h + (routed + shared), the shared part independent of the routing.
  if (NodeOp sum = producer(skipDataMovement(moeOut), {"Add"}); sum && sum.getInputs().size() == 2)
    for (int i = 0; i < 2; ++i)
      if (dependsOn(sum.getInputs()[i], ids) && !dependsOn(sum.getInputs()[1 - i], ids))
        return sum.getInputs()[i];
  return moeOut;
}

Value buildExperts(PatternRewriter &rewriter, ComponentMatcher &m, moe::RouterOp router,
                   ArrayRef<ExpertMatch> experts, int64_t expertHidden, const ExpertForm &form) {
  SmallVector<Value> w1, w3, w2, b1, b3, b2;
  for (ExpertMatch e : experts) {
    w1.push_back(e.w1);
    if (e.w3)
      w3.push_back(e.w3);
    w2.push_back(e.w2);
    if (e.b1)
      b1.push_back(e.b1);
    if (e.b3)
      b3.push_back(e.b3);
    if (e.b2)
      b2.push_back(e.b2);
  }
  const size_t count = experts.size();
  for (auto [list, what] : {std::pair<SmallVector<Value> *, const char *>{&b1, "gate bias"},
                            {&b3, "up bias"},
                            {&b2, "down bias"}})
    if (!list->empty() && list->size() != count) {
      m.fail(router, std::string("experts: only some experts have a ") + what);
      return nullptr;
    }
  return rewriter
      .create<moe::ExpertsOp>(
          router.getLoc(), m.ctx.actType, router.getX(), router.getIds(), router.getGates(), w1, w3,
          w2, b1, b3, b2, rewriter.getI64IntegerAttr(-1),
          rewriter.getI64IntegerAttr(router.getNumExperts()),
          rewriter.getI64IntegerAttr(expertHidden),
          form.oai              ? rewriter.getStringAttr("swiglu_oai")
          : !form.plain.empty() ? rewriter.getStringAttr(form.plain)
                                : StringAttr(),
          form.oai ? rewriter.getF64FloatAttr(form.limit) : FloatAttr(),
          form.oai ? rewriter.getF64FloatAttr(form.alpha) : FloatAttr(),
          form.fusedGateUp.value_or(form.oai) ? rewriter.getUnitAttr() : UnitAttr())
      .getResult();
}

LogicalResult ExpertsPattern::matchAndRewrite(moe::RouterOp router,
                                              PatternRewriter &rewriter) const {
  if (hasExperts(router) || !isForm(router))
    return failure();
  ComponentMatcher m(ctx);
  RouterMatch r = routerMatchOf(router);
  int64_t expertHidden = 0;
  ExpertForm form;
  auto experts = match(m, r, expertHidden, form);
  Value routed = experts ? routedOutput(router) : Value();
  if (experts && !routed) {
    Operation *in = router.getX().getDefiningOp();
    if (!isa_and_nonnull<moe::RmsNormOp>(in))
      m.fail(router, "router: its input is " +
                         (in ? ctx.describeOp(in) : std::string("a function argument")) +
                         ", not the FFN RMSNorm's output");
    else
      m.fail(router, "expected the residual add h + moe(h) after the experts");
  }
  Value out;
  if (routed) {
    rewriter.setInsertionPoint(routed.getDefiningOp());
    out = buildExperts(rewriter, m, router, *experts, expertHidden, form);
  }
  if (!out) {
    if (m.error)
      ctx.recordFailure(router, *m.error);
    return failure();
  }
  ctx.inheritOrder(out.getDefiningOp(), router);
  replaceComponent(rewriter, routed, out);
  return success();
}

} // namespace disagmoe::raise
