//===- ContribMoePattern.cpp - onnxruntime's com.microsoft.MoE -> moe.router + moe.experts ---===//
//
// Anchor: a com.microsoft.MoE node (onnxruntime's fused router + experts, ContribMoeMatcher.h)
// reading a raised RMSNorm's output through reshapes. Both component ops are built at once; the
// experts' output replaces the node's.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/ContribMoeMatcher.h"
#include "passes/raise/patterns/ComponentMatcher.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace disagmoe::raise {
namespace {

struct ContribMoePattern : ComponentPattern<NodeOp> {
  using ComponentPattern::ComponentPattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (!isContribMoe(node) || node.getInputs().empty())
      return failure();
    Value xn = skipDataMovement(node.getInputs()[0]);
    if (!xn.getDefiningOp<moe::RmsNormOp>())
      return failure();
    ComponentMatcher m(ctx);
    // The reader references expert slices as it goes; a failed read leaves them unused, and the
    // greedy driver would erase them and this pattern make them again, forever.
    llvm::DenseSet<Operation *> weightsBefore;
    ctx.func.walk([&](WeightOp w) { weightsBefore.insert(w); });
    llvm::Expected<ContribMoeMatch> c = matchContribMoe(node, xn);
    if (!c) {
      SmallVector<Operation *> made;
      ctx.func.walk([&](WeightOp w) {
        if (!weightsBefore.contains(w) && w->use_empty())
          made.push_back(w);
      });
      for (Operation *op : made)
        op->erase();
      llvm::handleAllErrors(
          c.takeError(), [&](const ContribMoeError &e) { m.fail(e.at, e.message); },
          [&](const llvm::ErrorInfoBase &e) { m.fail(node, e.message()); });
      ctx.recordFailure(node, *m.error);
      return failure();
    }
    rewriter.setInsertionPoint(node);
    auto router = rewriter.create<moe::RouterOp>(
        node.getLoc(), RankedTensorType::get({ctx.tokens, c->topK}, rewriter.getI64Type()),
        RankedTensorType::get({ctx.tokens, c->topK}, rewriter.getF32Type()), xn,
        c->routerWeight.getResult(), c->routerBias ? c->routerBias.getResult() : Value(),
        /*correction_bias=*/Value(), rewriter.getI64IntegerAttr(-1),
        rewriter.getI64IntegerAttr(c->numExperts), rewriter.getI64IntegerAttr(c->topK),
        rewriter.getStringAttr(c->scoring), /*routed_scaling_factor=*/FloatAttr(),
        /*n_group=*/IntegerAttr(), /*topk_group=*/IntegerAttr());
    ctx.inheritOrder(router, node);
    auto at = [](const SmallVector<WeightOp> &list, int64_t e) {
      return list.empty() ? WeightOp() : list[e];
    };
    SmallVector<ExpertMatch> experts;
    for (int64_t e = 0; e < c->numExperts; ++e)
      experts.push_back(ExpertMatch{e, c->w1[e], at(c->w3, e), c->w2[e], at(c->b1, e), at(c->b3, e),
                                    at(c->b2, e)});
    ExpertForm form{c->oai, c->limit, c->alpha, c->fusedGateUp, c->activation};
    Value out = buildExperts(rewriter, m, router, experts, c->expertHidden, form);
    if (!out) {
      rewriter.eraseOp(router);
      ctx.recordFailure(node, *m.error);
      return failure();
    }
    ctx.inheritOrder(out.getDefiningOp(), node);
    replaceComponent(rewriter, c->output, out);
    return success();
  }
};

} // namespace

void populateContribMoePattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<ContribMoePattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
