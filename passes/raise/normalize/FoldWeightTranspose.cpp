//===- FoldWeightTranspose.cpp - Transpose(W) -> W marked `transposed` ------------===//
#include "passes/raise/GraphMatchers.h"
#include "passes/raise/normalize/NormalizePatterns.h"

using namespace mlir;

namespace disagmoe::normalize {
namespace {

// Exports without constant folding read `nn.Linear` weights ([out, in] on disk) through
// Transpose(W); the node becomes a reference to the same bytes marked `transposed`, typed as the
// [in, out] matrix the MatMul sees (the runtime transposes while binding), so the matchers see
// every weight in one orientation and by reference.
struct FoldWeightTranspose : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (!isNode(node, "Transpose", 1, 1))
      return failure();
    onnxir::WeightOp w = raise::weightOf(node.getInputs()[0]);
    if (!w || w.getTransposed() || w.getRowStride())
      return failure();
    auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
    if (type.getRank() != 2)
      return failure();
    if (auto perm = node.getOnnxAttrs().getAs<ArrayAttr>("perm")) {
      auto p = llvm::to_vector(
          llvm::map_range(perm, [](Attribute a) { return llvm::cast<IntegerAttr>(a).getInt(); }));
      if (p != SmallVector<int64_t>{1, 0})
        return failure();
    }
    rewriter.setInsertionPointAfter(w);
    auto transposed = rewriter.create<onnxir::WeightOp>(
        w.getLoc(),
        RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)}, type.getElementType()),
        w.getWeightNameAttr(), w.getFileAttr(), w.getOffsetAttr(), w.getLengthAttr(),
        /*value=*/ElementsAttr(), rewriter.getUnitAttr(), /*row_stride=*/IntegerAttr(),
        w.getStoredTypeAttr());
    rewriter.replaceOp(node, transposed.getResult());
    return success();
  }
};

} // namespace

void populateFoldWeightTransposePatterns(RewritePatternSet &patterns) {
  patterns.add<FoldWeightTranspose>(patterns.getContext());
}

} // namespace disagmoe::normalize
