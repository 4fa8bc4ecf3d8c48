//===- DropIdentity.cpp - Identity(x) -> x --------------------------------===//
#include "passes/raise/normalize/NormalizePatterns.h"

using namespace mlir;

namespace disagmoe::normalize {
namespace {

// Removes the Identity nodes torch.onnx.export writes for deduplicated initializers and for
// `nn.Identity` / `x.clone()` / `x.contiguous()` in the module.
struct DropIdentity : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (!isNode(node, "Identity", 1, 1))
      return failure();
    Value input = node.getInputs()[0];
    // Same type only: a graph output keeps the function's declared type.
    if (input.getType() != node.getResult(0).getType())
      return failure();
    rewriter.replaceOp(node, input);
    return success();
  }
};

} // namespace

void populateDropIdentityPatterns(RewritePatternSet &patterns) {
  patterns.add<DropIdentity>(patterns.getContext());
}

} // namespace disagmoe::normalize
