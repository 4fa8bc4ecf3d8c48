//===- NormalizeUtils.cpp - helpers of the normalize-onnx patterns --------===//
#include "passes/raise/normalize/NormalizePatterns.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace disagmoe::normalize {

bool isNode(NodeOp node, StringRef opType, unsigned inputs, unsigned outputs) {
  return node.getOpType() == opType && node.getDomain().empty() &&
         node.getInputs().size() == inputs && node.getOutputs().size() == outputs;
}

FloatType floatElementType(Value v) {
  auto type = llvm::dyn_cast<TensorType>(v.getType());
  return type ? llvm::dyn_cast<FloatType>(type.getElementType()) : FloatType();
}

NodeOp createNode(PatternRewriter &rewriter, NodeOp anchor, StringRef opType, StringRef name,
                  ValueRange inputs, Type resultType, ArrayRef<NamedAttribute> attrs,
                  StringRef domain) {
  return rewriter.create<NodeOp>(anchor.getLoc(), TypeRange{resultType},
                                 rewriter.getStringAttr(opType), inputs,
                                 rewriter.getStringAttr(name), rewriter.getStringAttr(domain),
                                 rewriter.getDictionaryAttr(attrs));
}

Value createConstant(PatternRewriter &rewriter, NodeOp anchor, StringRef suffix,
                     DenseElementsAttr value) {
  return createNode(rewriter, anchor, "Constant", (anchor.getNodeName() + "/" + suffix).str(), {},
                    value.getType(), {rewriter.getNamedAttr("value", value)})
      .getResult(0);
}

Value createScalarConstant(PatternRewriter &rewriter, NodeOp anchor, StringRef suffix,
                           FloatType elem, double value) {
  auto type = RankedTensorType::get({}, elem);
  return createConstant(rewriter, anchor, suffix,
                        DenseElementsAttr::get(type, rewriter.getFloatAttr(elem, value)));
}

Value createI64Constant(PatternRewriter &rewriter, NodeOp anchor, StringRef suffix,
                        ArrayRef<int64_t> dims, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(dims, rewriter.getI64Type());
  return createConstant(rewriter, anchor, suffix, DenseElementsAttr::get(type, values));
}

void eraseIfDeadConstant(PatternRewriter &rewriter, Value v) {
  auto node = v.getDefiningOp<NodeOp>();
  if (node && isNode(node, "Constant", 0, 1) && node->use_empty())
    rewriter.eraseOp(node);
}

void populateNormalizeOnnxPatterns(RewritePatternSet &patterns) {
  populateDropIdentityPatterns(patterns);
  populateDropSameTypeCastPatterns(patterns);
  populateWidenLowPrecisionPatterns(patterns);
  populateDropEmptyConcatInputPatterns(patterns);
  populateCanonicalRsqrtPatterns(patterns);
  populateCanonicalSquarePatterns(patterns);
  populateHoistMatMulScalesPatterns(patterns);
  populateFoldWeightTransposePatterns(patterns);
  populateFoldExhaustiveNonZeroSplitPatterns(patterns);
  populateFoldWeightGatherPatterns(patterns);
  populateNewerOpsetFormPatterns(patterns);
  populateDecomposeAttentionPatterns(patterns);
  populateDecomposeRotaryEmbeddingPatterns(patterns);
  populateSplitPackedQkvPatterns(patterns);
  populateDecomposeGroupQueryAttentionPatterns(patterns);
}

LogicalResult applyNormalizeOnnxPatterns(Operation *root) {
  RewritePatternSet patterns(root->getContext());
  populateNormalizeOnnxPatterns(patterns);
  GreedyRewriteConfig config;
  config.enableRegionSimplification = GreedySimplifyRegionLevel::Disabled;
  return applyPatternsAndFoldGreedily(root, std::move(patterns), config);
}

} // namespace disagmoe::normalize
