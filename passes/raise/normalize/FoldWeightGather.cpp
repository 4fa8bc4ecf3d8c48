//===- FoldWeightGather.cpp - Gather(W, constant i) -> a reference to W's row block i -===//
//
// `self.gate_up_proj[e]` on a stacked [experts, ...] parameter exports as Gather(W, e) (axis 0).
// With a Python int e torch.onnx.export's constant folding writes the slice as its own
// initializer; with an index computed in the graph (GPT-OSS's training branch reads e from
// expert_hit, FoldExhaustiveNonZeroSplit.cpp makes it a constant) the Gather stays. Once the
// index is a constant, the node is a reference to the same file's bytes at offset + i * (bytes of
// one row block), typed as Gather's result: W's shape without its first axis for a scalar i, with
// a first axis of 1 for a one-element 1-D i. Exact: the same values. A transposed or strided
// reference, another axis or several indices are kept.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/GraphMatchers.h"
#include "passes/raise/normalize/NormalizePatterns.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace disagmoe::normalize {
namespace {

struct FoldWeightGather : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (!isNode(node, "Gather", 2, 1))
      return failure();
    if (auto axis = node.getOnnxAttrs().getAs<IntegerAttr>("axis"); axis && axis.getInt() != 0)
      return failure();
    onnxir::WeightOp w = raise::weightOf(node.getInputs()[0]);
    if (!w || w.getTransposed() || w.getRowStride())
      return failure();
    auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
    if (type.getRank() < 1 || type.getDimSize(0) <= 0)
      return failure();
    auto indexType = llvm::dyn_cast<RankedTensorType>(node.getInputs()[1].getType());
    auto index = raise::constantValues(node.getInputs()[1]);
    if (!indexType || !index || index->size() != 1 || indexType.getRank() > 1)
      return failure();
    const int64_t rows = type.getDimSize(0);
    int64_t i = static_cast<int64_t>(index->front());
    if (i < 0)
      i += rows;
    if (i < 0 || i >= rows)
      return failure();
    SmallVector<int64_t> shape;
    if (indexType.getRank() == 1)
      shape.push_back(1);
    llvm::append_range(shape, type.getShape().drop_front());
    auto sliceType = RankedTensorType::get(shape, type.getElementType());
    const int64_t bytes = static_cast<int64_t>(w.getLength()) / rows;
    ElementsAttr value;
    if (auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(w.getValue().value_or(nullptr))) {
      const int64_t per = type.getNumElements() / rows;
      auto all = llvm::to_vector(dense.getValues<Attribute>());
      value = DenseElementsAttr::get(
          sliceType, ArrayRef<Attribute>(all).slice(static_cast<size_t>(i * per), per));
    }
    rewriter.setInsertionPointAfter(w);
    auto ref = rewriter.create<onnxir::WeightOp>(
        w.getLoc(), sliceType,
        rewriter.getStringAttr(w.getWeightName().str() + "[" + std::to_string(i) + "]"),
        w.getFileAttr(),
        rewriter.getI64IntegerAttr(static_cast<int64_t>(w.getOffset()) + i * bytes),
        rewriter.getI64IntegerAttr(bytes), value, UnitAttr(), /*row_stride=*/IntegerAttr(),
        w.getStoredTypeAttr());
    Value idx = node.getInputs()[1];
    rewriter.replaceOp(node, ref.getResult());
    eraseIfDeadConstant(rewriter, idx);
    return success();
  }
};

} // namespace

void populateFoldWeightGatherPatterns(RewritePatternSet &patterns) {
  patterns.add<FoldWeightGather>(patterns.getContext());
}

} // namespace disagmoe::normalize
