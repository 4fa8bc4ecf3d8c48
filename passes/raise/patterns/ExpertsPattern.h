//===- ExpertsPattern.h - the skeleton shared by the three experts patterns ---------===//
//
// Anchor: a raised moe.router without experts. Each form (ExpertsLoopPattern.cpp,
// ExpertsDenseMaskedPattern.cpp, ExpertsEinsumPattern.cpp) says whether the router's ids start
// it and reads its experts; the skeleton finds the routed output from the layer's residual add,
// builds moe.experts there and erases the ONNX nodes of the dispatch, experts and combine.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_RAISE_PATTERNS_EXPERTSPATTERN_H
#define DISAGMOE_PASSES_RAISE_PATTERNS_EXPERTSPATTERN_H

#include "passes/raise/patterns/ComponentMatcher.h"

namespace disagmoe::raise {

class ExpertsPattern : public ComponentPattern<moe::RouterOp> {
public:
  using ComponentPattern::ComponentPattern;

  mlir::LogicalResult matchAndRewrite(moe::RouterOp router,
                                      mlir::PatternRewriter &rewriter) const final;

protected:
  /// The router's ids feed this form's first node.
  virtual bool isForm(moe::RouterOp router) const = 0;
  /// The experts by expert id, or nullopt (m.error set when the form is contradicted).
  virtual std::optional<llvm::SmallVector<ExpertMatch>> match(ComponentMatcher &m,
                                                              const RouterMatch &router,
                                                              int64_t &expertHidden,
                                                              ExpertForm &form) const = 0;
};

/// The RouterMatch that `router` stands for (input, ids, gates, expert count; topk = router).
RouterMatch routerMatchOf(moe::RouterOp router);

} // namespace disagmoe::raise

#endif
