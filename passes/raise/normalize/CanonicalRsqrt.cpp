//===- CanonicalRsqrt.cpp - 1/sqrt(x) as Div(1, Sqrt(x)) ------------------===//
//
// torch.onnx.export writes torch.rsqrt as Div(1, Sqrt(x)), the form RMSNorm's matcher accepts
// (passes/raise/RaiseOnnxToMoe.cpp, matchNorm). The other spellings of 1/sqrt(x) become that one.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/GraphMatchers.h"
#include "passes/raise/normalize/NormalizePatterns.h"

using namespace mlir;

namespace disagmoe::normalize {
namespace {

// Rewrites Reciprocal(Sqrt(x)) (exporters and hand-written graphs that spell rsqrt with
// Reciprocal; `torch.reciprocal(torch.sqrt(x))`) to Div(1, Sqrt(x)); exact.
struct ReciprocalOfSqrt : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (!isNode(node, "Reciprocal", 1, 1))
      return failure();
    Value root = node.getInputs()[0];
    auto sqrt = root.getDefiningOp<NodeOp>();
    FloatType elem = floatElementType(root);
    if (!sqrt || !isNode(sqrt, "Sqrt", 1, 1) || !elem)
      return failure();
    Value one = createScalarConstant(rewriter, node, "one", elem, 1.0);
    NodeOp div = createNode(rewriter, node, "Div", node.getNodeName(), {one, root},
                            node.getResult(0).getType());
    rewriter.replaceOp(node, div.getResults());
    return success();
  }
};

// Rewrites Pow(x, -0.5) (`x ** -0.5`, `torch.pow(x, -0.5)`: Pow with a constant exponent) to
// Div(1, Sqrt(x)); rounding-equivalent (both within an ulp or two of 1/sqrt(x)).
struct PowMinusHalf : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (!isNode(node, "Pow", 2, 1))
      return failure();
    Value x = node.getInputs()[0], exponent = node.getInputs()[1];
    FloatType elem = floatElementType(x);
    Type resultType = node.getResult(0).getType();
    // One exponent value, and Pow's result of x's type (no broadcast to a larger shape).
    if (!elem || raise::scalarConstant(exponent) != -0.5 || resultType != x.getType())
      return failure();
    std::string name = node.getNodeName().str();
    NodeOp sqrt = createNode(rewriter, node, "Sqrt", name + "/Sqrt", {x}, resultType);
    Value one = createScalarConstant(rewriter, node, "one", elem, 1.0);
    NodeOp div = createNode(rewriter, node, "Div", name, {one, sqrt.getResult(0)}, resultType);
    rewriter.replaceOp(node, div.getResults());
    eraseIfDeadConstant(rewriter, exponent);
    return success();
  }
};

} // namespace

void populateCanonicalRsqrtPatterns(RewritePatternSet &patterns) {
  patterns.add<ReciprocalOfSqrt, PowMinusHalf>(patterns.getContext());
}

} // namespace disagmoe::normalize
