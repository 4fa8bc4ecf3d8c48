//===- ApplyMatchPatterns.cpp - the three phases of the match stage ---------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace disagmoe::raise {

LogicalResult applyMatchPatterns(MatchContext &ctx) {
  using Populate = void (*)(RewritePatternSet &, MatchContext &);
  // Phase 1: the ops the others start from; 2: the components on a norm; 3: experts on a router.
  const SmallVector<SmallVector<Populate>> phases = {
      {populateEmbeddingPattern, populateRmsNormPattern},
      {populateAttentionPattern, populateMlaAttentionPattern, populateRouterPattern,
       populateSwiGluFfnPattern, populateContribMoePattern, populateHeadPattern},
      {populateExpertsLoopPattern, populateExpertsDenseMaskedPattern,
       populateExpertsEinsumPattern}};
  for (const auto &phase : phases) {
    RewritePatternSet patterns(ctx.func.getContext());
    for (Populate populate : phase)
      populate(patterns, ctx);
    GreedyRewriteConfig config;
    config.enableRegionSimplification = GreedySimplifyRegionLevel::Disabled;
    config.listener = &ctx;
    if (failed(applyPatternsAndFoldGreedily(ctx.func, std::move(patterns), config)))
      return failure();
  }
  return success();
}

} // namespace disagmoe::raise
