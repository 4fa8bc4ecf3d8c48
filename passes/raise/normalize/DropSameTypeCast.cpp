//===- DropSameTypeCast.cpp - Cast(x, to = type of x) -> x ----------------===//
#include "passes/raise/normalize/NormalizePatterns.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace disagmoe::normalize {
namespace {

/// The element type the importer gives ONNX data type `to` (TensorProto.DataType; the same
/// mapping as frontends/onnx/OnnxImporter.cpp's elementType), or null for the others.
Type elementTypeOf(MLIRContext *ctx, int64_t to) {
  Builder b(ctx);
  switch (to) {
  case 1:
    return b.getF32Type();
  case 2:
    return b.getIntegerType(8, /*isSigned=*/false);
  case 3:
    return b.getIntegerType(8);
  case 4:
    return b.getIntegerType(16, false);
  case 5:
    return b.getIntegerType(16);
  case 6:
    return b.getIntegerType(32);
  case 7:
    return b.getIntegerType(64);
  case 9:
    return b.getI1Type();
  case 10:
    return b.getF16Type();
  case 11:
    return b.getF64Type();
  case 12:
    return b.getIntegerType(32, false);
  case 13:
    return b.getIntegerType(64, false);
  case 16:
    return b.getBF16Type();
  default:
    return Type();
  }
}

// Removes the Casts of Hugging Face's dtype round trips (RMSNorm's `x.to(torch.float32)` ...
// `.to(input_dtype)`, `softmax(..., dtype=torch.float32).to(q.dtype)`) where the export's dtype
// already is the target: Cast(fp32 -> fp32) in an fp32 export.
struct DropSameTypeCast : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (!isNode(node, "Cast", 1, 1))
      return failure();
    auto to = llvm::dyn_cast_or_null<IntegerAttr>(node.getOnnxAttrs().get("to"));
    Value input = node.getInputs()[0];
    // Ranked only: the importer types a value whose element type shape inference could not
    // determine as an unranked f32 tensor, which says nothing about its real element type.
    auto inType = llvm::dyn_cast<RankedTensorType>(input.getType());
    if (!to || !inType || inType != node.getResult(0).getType())
      return failure();
    Type target = elementTypeOf(node.getContext(), to.getInt());
    if (!target || target != inType.getElementType())
      return failure();
    rewriter.replaceOp(node, input);
    return success();
  }
};

} // namespace

void populateDropSameTypeCastPatterns(RewritePatternSet &patterns) {
  patterns.add<DropSameTypeCast>(patterns.getContext());
}

} // namespace disagmoe::normalize
