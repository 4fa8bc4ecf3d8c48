//===- CanonicalSquare.cpp - x * x as Pow(x, 2) ---------------------------===//
#include "passes/raise/normalize/NormalizePatterns.h"

using namespace mlir;

namespace disagmoe::normalize {
namespace {

// Rewrites Mul(x, x) (`x * x` / `x.square()` in a variance, where torch.onnx.export writes
// `x.pow(2)` as Pow(x, 2)) to Pow(x, 2), the form RMSNorm's matcher accepts; exact (ONNX Pow with
// exponent 2 is x * x).
struct MulSelfToPow : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (!isNode(node, "Mul", 2, 1) || node.getInputs()[0] != node.getInputs()[1])
      return failure();
    Value x = node.getInputs()[0];
    FloatType elem = floatElementType(x);
    if (!elem || floatElementType(node.getResult(0)) != elem)
      return failure();
    Value two = createScalarConstant(rewriter, node, "two", elem, 2.0);
    NodeOp pow = createNode(rewriter, node, "Pow", node.getNodeName(), {x, two},
                            node.getResult(0).getType());
    rewriter.replaceOp(node, pow.getResults());
    return success();
  }
};

} // namespace

void populateCanonicalSquarePatterns(RewritePatternSet &patterns) {
  patterns.add<MulSelfToPow>(patterns.getContext());
}

} // namespace disagmoe::normalize
