//===- HoistMatMulScales.cpp - (a c1)(b c2) as (a b)(c1 c2) ---------------===//
//
// torch.onnx's scaled_dot_product_attention symbolic scales q and k each by sqrt(scale) before
// their MatMul (so that fp16 scores do not overflow); the attention matcher reads one scale after
// Q K^T. This rewrites MatMul(Mul(a, c1), Mul(b, c2)) with scalar constants c1, c2 to
// Mul(MatMul(a, b), c1 * c2): rounding-equivalent (a few ulps of the scores, within the fp32 error
// model), and it fires only where both operands are scaled by one known scalar each. The scalars
// are often computed from q's shape, so the pattern fires once the fold stage has made them
// constants (fold-onnx-constants re-applies the normalize patterns).
//
//===----------------------------------------------------------------------===//
#include "passes/raise/GraphMatchers.h"
#include "passes/raise/normalize/NormalizePatterns.h"

using namespace mlir;

namespace disagmoe::normalize {
namespace {

/// `v` = Mul(x, c) or Mul(c, x) with c a scalar constant: (x, c).
std::optional<std::pair<Value, double>> scaledBy(Value v) {
  auto mul = v.getDefiningOp<NodeOp>();
  if (!mul || !isNode(mul, "Mul", 2, 1) || !v.hasOneUse())
    return std::nullopt;
  for (int side = 0; side < 2; ++side)
    if (auto c = raise::scalarConstant(mul.getInputs()[side]))
      if (!raise::scalarConstant(mul.getInputs()[1 - side]) &&
          mul.getInputs()[1 - side].getType() == v.getType())
        return std::make_pair(mul.getInputs()[1 - side], *c);
  return std::nullopt;
}

struct HoistScalesOutOfMatMul : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (!isNode(node, "MatMul", 2, 1))
      return failure();
    FloatType elem = floatElementType(node.getResult(0));
    auto a = scaledBy(node.getInputs()[0]), b = scaledBy(node.getInputs()[1]);
    if (!elem || !a || !b)
      return failure();
    Operation *mulA = node.getInputs()[0].getDefiningOp(),
              *mulB = node.getInputs()[1].getDefiningOp();
    const std::string name = node.getNodeName().str();
    Type type = node.getResult(0).getType();
    NodeOp product =
        createNode(rewriter, node, "MatMul", name + "/unscaled", {a->first, b->first}, type);
    Value scale = createScalarConstant(rewriter, node, "scale", elem, a->second * b->second);
    NodeOp scaled = createNode(rewriter, node, "Mul", name, {product.getResult(0), scale}, type);
    rewriter.replaceOp(node, scaled.getResults());
    for (Operation *mul : {mulA, mulB}) {
      SmallVector<Value> operands(mul->getOperands());
      rewriter.eraseOp(mul);
      for (Value v : operands)
        eraseIfDeadConstant(rewriter, v);
    }
    return success();
  }
};

} // namespace

void populateHoistMatMulScalesPatterns(RewritePatternSet &patterns) {
  patterns.add<HoistScalesOutOfMatMul>(patterns.getContext());
}

} // namespace disagmoe::normalize
