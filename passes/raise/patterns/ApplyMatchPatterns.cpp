//===- ApplyMatchPatterns.cpp - the three phases of the match stage ---------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace disagmoe::raise {
namespace {

using Populate = void (*)(RewritePatternSet &, MatchContext &);

struct Phase {
  SmallVector<Populate> patterns;
  SmallVector<StringRef> anchorTypes; // ONNX op types the phase's patterns are rooted at
};

/// The ops a phase's patterns may be rooted at: its anchor op types, the head's MatMul (the
/// producer of the graph output) in phase 2, and every moe.router in phase 3.
SmallVector<Operation *> anchorsOf(MatchContext &ctx, const Phase &phase, size_t index) {
  SmallVector<Operation *> ops;
  for (StringRef type : phase.anchorTypes)
    for (NodeOp node : ctx.nodesOfType(type))
      ops.push_back(node);
  if (index == 1)
    for (Value out : ctx.func.getBody().front().getTerminator()->getOperands())
      if (NodeOp mm = producer(out, {"MatMul"}))
        ops.push_back(mm);
  if (index == 2)
    ctx.func.walk([&](moe::RouterOp router) { ops.push_back(router); });
  return ops;
}

} // namespace

LogicalResult applyMatchPatterns(MatchContext &ctx) {
  // Phase 1: the ops the others start from; 2: the components on a norm; 3: experts on a router.
  // A phase's patterns read only the ops of earlier phases, so one pass over its anchors reaches
  // the fixed point; visiting the anchors, not every op, keeps a 337k-node graph cheap.
  const SmallVector<Phase> phases = {
      {{populateEmbeddingPattern, populateRmsNormPattern}, {"Gather", "ReduceMean"}},
      {{populateAttentionPattern, populateMlaAttentionPattern, populateRouterPattern,
        populateSigmoidRouterPattern, populateSwiGluFfnPattern, populateContribMoePattern,
        populateHeadPattern},
       {"Softmax", "TopK", "Sigmoid", "MoE"}},
      {{populateExpertsLoopPattern, populateExpertsDenseMaskedPattern,
        populateExpertsEinsumPattern},
       {}}};
  for (auto [index, phase] : llvm::enumerate(phases)) {
    RewritePatternSet patterns(ctx.func.getContext());
    for (Populate populate : phase.patterns)
      populate(patterns, ctx);
    SmallVector<Operation *> anchors = anchorsOf(ctx, phase, index);
    if (anchors.empty())
      continue;
    GreedyRewriteConfig config;
    config.listener = &ctx;
    config.strictMode = GreedyRewriteStrictness::ExistingOps;
    if (failed(applyOpPatternsAndFold(anchors, std::move(patterns), config)))
      return failure();
  }
  return success();
}

} // namespace disagmoe::raise
