//===- DecomposeAttention.cpp - opset-23 Attention -> softmax(Q K^T) V -------===//
//
// torch's dynamo exporter writes F.scaled_dot_product_attention as one opset-23 `Attention` node
// on 4-D Q, K, V [batch, heads, seq, head_dim] (K and V already repeated to the query heads for
// GQA). AttentionPattern reads attention from the TorchScript chain; this rewrites the node into
// that chain, exactly as the operator is specified (onnx/docs/Operators.md, Attention-23):
//   Y = Softmax(MatMul(Q, Transpose(K)) * scale + mask) V
// scale defaults to 1/sqrt(head_dim); the mask is is_causal's upper-left triangle of -inf, written
// as Trilu(-inf, k = 1) (the form torch.triu exports), or the attn_mask input: a float mask
// added, a boolean one as Where(mask, 0, -inf). The node is left alone (and the raise pass then
// names it) when it uses what moe.attention does not represent: past_key/past_value (a KV
// cache), the present_* or qk_matmul outputs, softcap, different head counts for Q and K/V, a
// key length other than the query's, or both is_causal and attn_mask. The loader refuses most of
// these by name before (frontends/onnx/NewerOpsets.cpp).
//
//===----------------------------------------------------------------------===//
#include "passes/raise/normalize/NormalizePatterns.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace disagmoe::normalize {
namespace {

struct DecomposeAttention : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (node.getOpType() != "Attention" || !node.getDomain().empty() ||
        node.getInputs().size() < 3 || node.getInputs().size() > 4)
      return failure();
    for (Value out : node.getOutputs().drop_front())
      if (!out.use_empty())
        return failure();
    auto attrs = node.getOnnxAttrs();
    if (auto softcap = attrs.getAs<FloatAttr>("softcap"); softcap && softcap.getValueAsDouble())
      return failure();
    Value q = node.getInputs()[0], k = node.getInputs()[1], v = node.getInputs()[2];
    auto qType = llvm::dyn_cast<RankedTensorType>(q.getType());
    auto kType = llvm::dyn_cast<RankedTensorType>(k.getType());
    auto vType = llvm::dyn_cast<RankedTensorType>(v.getType());
    FloatType elem = floatElementType(q);
    if (!qType || !kType || !vType || !elem || qType.getRank() != 4 || kType.getRank() != 4 ||
        vType.getRank() != 4 || !qType.hasStaticShape() || kType.getShape() != qType.getShape() ||
        !vType.hasStaticShape() || vType.getDimSize(2) != qType.getDimSize(2))
      return failure();
    const int64_t b = qType.getDimSize(0), h = qType.getDimSize(1), s = qType.getDimSize(2),
                  d = qType.getDimSize(3);
    auto causalAttr = attrs.getAs<IntegerAttr>("is_causal");
    const bool causal = causalAttr && causalAttr.getInt() != 0;
    Value mask = node.getInputs().size() == 4 ? node.getInputs()[3] : Value();
    if (mask && isa_and_nonnull<onnxir::NoneOp>(mask.getDefiningOp()))
      mask = Value();
    if (causal == static_cast<bool>(mask))
      return failure(); // neither (not a decoder's attention) or both
    double scale = 1.0 / std::sqrt(static_cast<double>(d));
    if (auto a = attrs.getAs<FloatAttr>("scale"))
      scale = a.getValueAsDouble();

    const std::string name = node.getNodeName().str();
    rewriter.setInsertionPoint(node);
    auto kt = RankedTensorType::get({b, h, d, s}, elem);
    auto scoresType = RankedTensorType::get({b, h, s, s}, elem);
    Value kT = createNode(rewriter, node, "Transpose", name + "/Transpose", {k}, kt,
                          {rewriter.getNamedAttr("perm", rewriter.getI64ArrayAttr({0, 1, 3, 2}))})
                   .getResult(0);
    Value scores =
        createNode(rewriter, node, "MatMul", name + "/MatMul", {q, kT}, scoresType).getResult(0);
    Value scaleValue = createScalarConstant(rewriter, node, "scale", elem, scale);
    scores = createNode(rewriter, node, "Mul", name + "/Mul", {scores, scaleValue}, scoresType)
                 .getResult(0);
    const double minusInf = -std::numeric_limits<double>::infinity();
    Value additive;
    if (causal) {
      Value fill = createScalarConstant(rewriter, node, "minus_inf", elem, minusInf);
      Value shape = createI64Constant(rewriter, node, "mask_shape", {2}, {s, s});
      auto square = RankedTensorType::get({s, s}, elem);
      Value full = createNode(rewriter, node, "Expand", name + "/mask_fill", {fill, shape}, square)
                       .getResult(0);
      Value offset = createI64Constant(rewriter, node, "mask_diagonal", {}, {1});
      additive = createNode(rewriter, node, "Trilu", name + "/causal_mask", {full, offset}, square,
                            {rewriter.getNamedAttr("upper", rewriter.getI64IntegerAttr(1))})
                     .getResult(0);
    } else if (auto maskType = llvm::dyn_cast<RankedTensorType>(mask.getType());
               maskType && maskType.getElementType().isInteger(1)) {
      Value zero = createScalarConstant(rewriter, node, "zero", elem, 0.0);
      Value hidden = createScalarConstant(rewriter, node, "minus_inf", elem, minusInf);
      additive = createNode(rewriter, node, "Where", name + "/mask", {mask, zero, hidden},
                            RankedTensorType::get(maskType.getShape(), elem))
                     .getResult(0);
    } else if (floatElementType(mask) == elem) {
      additive = mask;
    } else {
      return failure();
    }
    scores = createNode(rewriter, node, "Add", name + "/Add", {scores, additive}, scoresType)
                 .getResult(0);
    Value softmax = createNode(rewriter, node, "Softmax", name + "/Softmax", {scores}, scoresType,
                               {rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(-1))})
                        .getResult(0);
    Value y =
        createNode(rewriter, node, "MatMul", name, {softmax, v}, node.getOutputs()[0].getType())
            .getResult(0);
    rewriter.replaceAllUsesWith(node.getOutputs()[0], y);
    rewriter.eraseOp(node);
    return success();
  }
};

} // namespace

void populateDecomposeAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeAttention>(patterns.getContext());
}

} // namespace disagmoe::normalize
