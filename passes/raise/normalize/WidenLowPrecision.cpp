//===- WidenLowPrecision.cpp - float16 / bfloat16 exports computed in fp32 -===//
//
// A float16 or bfloat16 export (Hugging Face's model.to(dtype), torch_dtype=...) stores its
// weights in that dtype and computes its activations in it, with Casts where the model code changes
// dtype: RMSNorm's x.to(float32) ... weight * x.to(input_dtype), softmax(..., dtype=float32)
// .to(q.dtype), the router's softmax in float32 and routing_weights.to(hidden_states.dtype), cos
// and sin .to(x.dtype), the causal mask built in the dtype with its finfo.min.
//
// The plan computes in fp32 (the cpu backend's only precision, docs/architecture.md, "Training
// semantics and numerics"): these patterns replace every float16 / bfloat16 element type by f32.
// That is the export evaluated in fp32 on its weights as stored: the weights are widened exactly
// (every float16 and bfloat16 value is a float32) and keep their bytes (WeightOp's stored_type),
// constants are widened exactly, and the export's roundings to float16 / bfloat16 are not
// performed: a Cast to the dtype becomes a Cast to float, which DropSameTypeCast removes where its
// input is already float. The result is what PyTorch computes for model.float() after the weights
// were rounded to the dtype (samples/models/mixtral_dtypes' golden/logits_*), not the export's
// own dtype arithmetic; `disagmoe compile` says so in a note (compiler/pipeline/Pipeline.cpp).
//
//===----------------------------------------------------------------------===//
#include "passes/raise/normalize/NormalizePatterns.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace disagmoe::normalize {
namespace {

bool isLowPrecision(Type t) { return llvm::isa<Float16Type, BFloat16Type>(t); }

/// `type` with a float16 / bfloat16 element type replaced by f32 (ranked or unranked tensors);
/// `type` itself otherwise.
Type widened(Type type) {
  if (auto ranked = llvm::dyn_cast<RankedTensorType>(type))
    return isLowPrecision(ranked.getElementType())
               ? RankedTensorType::get(ranked.getShape(), Float32Type::get(type.getContext()))
               : type;
  if (auto unranked = llvm::dyn_cast<UnrankedTensorType>(type))
    return isLowPrecision(unranked.getElementType())
               ? UnrankedTensorType::get(Float32Type::get(type.getContext()))
               : type;
  return type;
}

/// A float16 / bfloat16 dense attribute as f32, value by value (exact); null if `attr` is not one.
DenseElementsAttr widenedDense(Attribute attr) {
  auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !isLowPrecision(dense.getElementType()))
    return {};
  SmallVector<APFloat> values;
  bool inexact = false;
  for (APFloat v : dense.getValues<APFloat>()) {
    (void)v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &inexact);
    values.push_back(v);
  }
  return DenseElementsAttr::get(llvm::cast<ShapedType>(widened(dense.getType())), values);
}

// ONNX TensorProto.DataType: FLOAT = 1, FLOAT16 = 10, BFLOAT16 = 16.
constexpr int64_t kOnnxFloat = 1, kOnnxFloat16 = 10, kOnnxBFloat16 = 16;

/// onnx.weight of a float16 / bfloat16 initializer -> the same bytes read as f32 (stored_type
/// keeps their dtype; `value`, present for small initializers, widened).
struct WidenLowPrecisionWeight : OpRewritePattern<onnxir::WeightOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(onnxir::WeightOp w, PatternRewriter &rewriter) const override {
    auto type = llvm::dyn_cast<RankedTensorType>(w.getResult().getType());
    if (!type || !isLowPrecision(type.getElementType()))
      return failure();
    ElementsAttr value;
    if (w.getValue()) {
      value = widenedDense(*w.getValue());
      if (!value)
        return failure(); // a value that is not dense: left alone, the verifier's type check stays
    }
    auto widenedWeight = rewriter.create<onnxir::WeightOp>(
        w.getLoc(), widened(type), w.getWeightNameAttr(), w.getFileAttr(), w.getOffsetAttr(),
        w.getLengthAttr(), value, w.getTransposedAttr(), w.getRowStrideAttr(),
        TypeAttr::get(type.getElementType()));
    rewriter.replaceOp(w, widenedWeight.getResult());
    return success();
  }
};

/// Any onnx.node with a float16 / bfloat16 result or attribute -> the same node in f32: results
/// retyped, dense attributes (Constant's and ConstantOfShape's `value`) widened, and a Cast to
/// float16 / bfloat16 retargeted to float (to = 1).
struct WidenLowPrecisionNode : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    bool changed = false;
    SmallVector<Type> types;
    for (Type t : node.getResultTypes()) {
      types.push_back(widened(t));
      changed |= types.back() != t;
    }
    NamedAttrList attrs(node.getOnnxAttrs());
    for (NamedAttribute a : node.getOnnxAttrs())
      if (DenseElementsAttr dense = widenedDense(a.getValue())) {
        attrs.set(a.getName(), dense);
        changed = true;
      }
    if (node.getOpType() == "Cast" && node.getDomain().empty())
      if (auto to = node.getOnnxAttrs().getAs<IntegerAttr>("to"))
        if (to.getInt() == kOnnxFloat16 || to.getInt() == kOnnxBFloat16) {
          attrs.set("to", rewriter.getI64IntegerAttr(kOnnxFloat));
          changed = true;
        }
    if (!changed)
      return failure();
    auto copy = rewriter.create<NodeOp>(node.getLoc(), types, node.getOpTypeAttr(),
                                        node.getInputs(), node.getNodeNameAttr(),
                                        node.getDomainAttr(), attrs.getDictionary(getContext()));
    rewriter.replaceOp(node, copy.getResults());
    return success();
  }
};

/// A function whose arguments or results are float16 / bfloat16 tensors -> the same in f32 (the
/// logits of a float16 / bfloat16 export, computed in f32 once its nodes are).
struct WidenLowPrecisionSignature : OpRewritePattern<func::FuncOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(func::FuncOp func, PatternRewriter &rewriter) const override {
    FunctionType type = func.getFunctionType();
    auto widenAll = [](TypeRange types) {
      return llvm::to_vector(llvm::map_range(types, [](Type t) { return widened(t); }));
    };
    SmallVector<Type> inputs = widenAll(type.getInputs()), results = widenAll(type.getResults());
    if (TypeRange(inputs) == type.getInputs() && TypeRange(results) == type.getResults())
      return failure();
    rewriter.modifyOpInPlace(func, [&] {
      func.setFunctionType(FunctionType::get(getContext(), inputs, results));
      if (!func.isExternal())
        for (BlockArgument arg : func.getArguments())
          arg.setType(widened(arg.getType()));
    });
    return success();
  }
};

} // namespace

void populateWidenLowPrecisionPatterns(RewritePatternSet &patterns) {
  patterns.add<WidenLowPrecisionWeight, WidenLowPrecisionNode, WidenLowPrecisionSignature>(
      patterns.getContext());
}

} // namespace disagmoe::normalize
