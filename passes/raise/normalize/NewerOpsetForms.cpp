//===- NewerOpsetForms.cpp - opset-18..23 and onnxruntime forms -> opset 13 ---===//
//
// The loader accepts opsets 13..23 (frontends/onnx/NewerOpsets.h). The matchers read the opset-13
// spelling of each operator; these patterns rewrite the later spellings into it, exactly:
//  - Reduce*-18 (all but ReduceSum) take their axes as an optional input: back to the `axes`
//    attribute (a constant input only), noop_with_empty_axes applied;
//  - Split-18's `num_outputs`: back to explicit sizes, ceil(dim / n) each, the last one smaller
//    (onnx/docs/Changelog.md, Split-18);
//  - RMSNormalization-23 (what torch's dynamo exporter writes for nn.RMSNorm and F.rms_norm) and
//    onnxruntime's SimplifiedLayerNormalization (ONNX domain; onnxruntime-genai's builder and the
//    transformer optimizer): Y = scale * (X / sqrt(mean(X^2, last axis) + epsilon)), back to the
//    chain torch's TorchScript exporter writes for Hugging Face's RMSNorm, which RmsNormPattern
//    matches;
//  - com.microsoft.SkipSimplifiedLayerNormalization(input, skip, gamma): S = input + skip, then the
//    same norm of S; its 4th output (input_skip_bias_sum) is S (onnxruntime's
//    docs/ContribOperators.md). A bias input is left alone (the residual stream has none).
// Only the last axis is normalized (axis -1 or rank-1); every other output of the norms must be
// unused. stash_type 1 (fp32 statistics) is what the chain computes in an fp32 graph.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/normalize/NormalizePatterns.h"

#include "passes/raise/GraphMatchers.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace disagmoe::normalize {
namespace {

/// `node`'s ONNX attributes without `drop`, plus `add`.
DictionaryAttr withAttrs(PatternRewriter &rewriter, NodeOp node, ArrayRef<StringRef> drop,
                         ArrayRef<NamedAttribute> add = {}) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : node.getOnnxAttrs())
    if (!llvm::is_contained(drop, a.getName().getValue()))
      attrs.push_back(a);
  attrs.append(add.begin(), add.end());
  return rewriter.getDictionaryAttr(attrs);
}

int64_t intAttr(NodeOp node, StringRef name, int64_t def) {
  auto a = node.getOnnxAttrs().getAs<IntegerAttr>(name);
  return a ? a.getInt() : def;
}

std::optional<double> floatAttr(NodeOp node, StringRef name) {
  if (auto a = node.getOnnxAttrs().getAs<FloatAttr>(name))
    return a.getValueAsDouble();
  return std::nullopt;
}

bool isReduceWithAxesInput(StringRef op) {
  return op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd" ||
         op == "ReduceSumSquare" || op == "ReduceL1" || op == "ReduceL2" || op == "ReduceLogSum" ||
         op == "ReduceLogSumExp";
}

int64_t opsetOf(Operation *op) {
  if (auto module = op->getParentOfType<ModuleOp>())
    if (auto attr = module->getAttrOfType<IntegerAttr>("onnx.opset"))
      return attr.getInt();
  return 0;
}

// ReduceX-18(data[, axes]) -> ReduceX-13(data){axes}: exact.
struct ReduceAxesInputToAttribute : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (!node.getDomain().empty() || !isReduceWithAxesInput(node.getOpType()) ||
        node.getOutputs().size() != 1 || opsetOf(node) < 18)
      return failure();
    const bool noop = intAttr(node, "noop_with_empty_axes", 0) != 0;
    if (node.getInputs().size() == 1 && !node.getOnnxAttrs().contains("noop_with_empty_axes"))
      return failure(); // already the opset-13 form: reduce over every axis
    SmallVector<int64_t> axes;
    if (node.getInputs().size() == 2) {
      auto values = raise::constantValues(node.getInputs()[1]);
      if (!values)
        return failure(); // axes computed at run time: not a form the matchers read
      for (double a : *values)
        axes.push_back(static_cast<int64_t>(a));
    } else if (node.getInputs().size() != 1) {
      return failure();
    }
    if (axes.empty() && noop) { // noop_with_empty_axes: the identity
      rewriter.replaceOp(node, node.getInputs()[0]);
      return success();
    }
    SmallVector<NamedAttribute> add;
    if (!axes.empty())
      add.push_back(rewriter.getNamedAttr("axes", rewriter.getI64ArrayAttr(axes)));
    Value axesInput = node.getInputs().size() == 2 ? node.getInputs()[1] : Value();
    auto reduced = rewriter.create<NodeOp>(
        node.getLoc(), node->getResultTypes(), node.getOpTypeAttr(),
        ValueRange{node.getInputs()[0]}, node.getNodeNameAttr(), node.getDomainAttr(),
        withAttrs(rewriter, node, {"noop_with_empty_axes", "axes"}, add));
    rewriter.replaceOp(node, reduced.getResults());
    if (axesInput)
      eraseIfDeadConstant(rewriter, axesInput);
    return success();
  }
};

// Split-18{num_outputs = n}(x) -> Split(x, sizes): exact (sizes from the static dim).
struct SplitNumOutputsToSizes : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (node.getOpType() != "Split" || !node.getDomain().empty() || node.getInputs().size() != 1 ||
        !node.getOnnxAttrs().contains("num_outputs"))
      return failure();
    auto type = llvm::dyn_cast<RankedTensorType>(node.getInputs()[0].getType());
    const int64_t n = intAttr(node, "num_outputs", 0);
    if (!type || n < 1 || static_cast<int64_t>(node.getOutputs().size()) != n)
      return failure();
    int64_t axis = intAttr(node, "axis", 0);
    if (axis < 0)
      axis += type.getRank();
    if (axis < 0 || axis >= type.getRank() || type.isDynamicDim(axis))
      return failure();
    const int64_t dim = type.getDimSize(axis), chunk = (dim + n - 1) / n;
    SmallVector<int64_t> sizes;
    for (int64_t i = 0, left = dim; i < n; ++i, left -= chunk)
      sizes.push_back(std::max<int64_t>(std::min(chunk, left), 0));
    Value sizesValue =
        createI64Constant(rewriter, node, "split", {static_cast<int64_t>(sizes.size())}, sizes);
    auto split =
        rewriter.create<NodeOp>(node.getLoc(), node->getResultTypes(), node.getOpTypeAttr(),
                                ValueRange{node.getInputs()[0], sizesValue}, node.getNodeNameAttr(),
                                node.getDomainAttr(), withAttrs(rewriter, node, {"num_outputs"}));
    rewriter.replaceOp(node, split.getResults());
    return success();
  }
};

/// Writes scale * (x * (1 / sqrt(mean(x^2, -1) + eps))) before `anchor`, the TorchScript form of
/// Hugging Face's RMSNorm; returns the result (of x's type) or null if x's type is not a static
/// ranked float tensor.
Value emitRmsNormChain(PatternRewriter &rewriter, NodeOp anchor, Value x, Value scale, double eps) {
  auto type = llvm::dyn_cast<RankedTensorType>(x.getType());
  FloatType elem = floatElementType(x);
  if (!type || !elem || type.getRank() < 1)
    return Value();
  const std::string name = anchor.getNodeName().str();
  SmallVector<int64_t> meanDims(type.getShape());
  meanDims.back() = 1;
  auto meanType = RankedTensorType::get(meanDims, elem);
  Value two = createScalarConstant(rewriter, anchor, "two", elem, 2.0);
  Value pow = createNode(rewriter, anchor, "Pow", name + "/Pow", {x, two}, type).getResult(0);
  Value mean = createNode(rewriter, anchor, "ReduceMean", name + "/ReduceMean", {pow}, meanType,
                          {rewriter.getNamedAttr("axes", rewriter.getI64ArrayAttr({-1})),
                           rewriter.getNamedAttr("keepdims", rewriter.getI64IntegerAttr(1))})
                   .getResult(0);
  Value epsValue = createScalarConstant(rewriter, anchor, "epsilon", elem, eps);
  Value add =
      createNode(rewriter, anchor, "Add", name + "/Add", {mean, epsValue}, meanType).getResult(0);
  Value sqrt = createNode(rewriter, anchor, "Sqrt", name + "/Sqrt", {add}, meanType).getResult(0);
  Value one = createScalarConstant(rewriter, anchor, "one", elem, 1.0);
  Value inv =
      createNode(rewriter, anchor, "Div", name + "/Div", {one, sqrt}, meanType).getResult(0);
  Value normed = createNode(rewriter, anchor, "Mul", name + "/Mul", {x, inv}, type).getResult(0);
  return createNode(rewriter, anchor, "Mul", name, {scale, normed}, type).getResult(0);
}

/// The norm's axis is the last one, and its outputs other than `kept` are unused.
bool normsLastAxisOnly(NodeOp node, Value x, ArrayRef<unsigned> kept) {
  auto type = llvm::dyn_cast<RankedTensorType>(x.getType());
  if (!type)
    return false;
  int64_t axis = intAttr(node, "axis", -1);
  if (axis != -1 && axis != type.getRank() - 1)
    return false;
  for (auto [i, out] : llvm::enumerate(node.getOutputs()))
    if (!llvm::is_contained(kept, i) && !out.use_empty())
      return false;
  return node.getOutputs()[0].getType() == x.getType();
}

// RMSNormalization-23(X, scale), SimplifiedLayerNormalization(X, scale) -> the chain.
struct RmsNormalizationToChain : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    StringRef op = node.getOpType();
    if (!node.getDomain().empty() ||
        (op != "RMSNormalization" && op != "SimplifiedLayerNormalization") ||
        node.getInputs().size() != 2 || node.getOutputs().empty())
      return failure();
    Value x = node.getInputs()[0];
    if (!normsLastAxisOnly(node, x, {0}))
      return failure();
    const double eps = floatAttr(node, "epsilon").value_or(1e-5);
    rewriter.setInsertionPoint(node);
    Value y = emitRmsNormChain(rewriter, node, x, node.getInputs()[1], eps);
    if (!y)
      return failure();
    rewriter.replaceAllUsesWith(node.getOutputs()[0], y);
    rewriter.eraseOp(node);
    return success();
  }
};

// com.microsoft.SkipSimplifiedLayerNormalization(input, skip, gamma) -> Add + the chain.
struct SkipSimplifiedLayerNormalizationToChain : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    if (node.getDomain() != "com.microsoft" ||
        node.getOpType() != "SkipSimplifiedLayerNormalization" || node.getInputs().size() != 3 ||
        node.getOutputs().empty())
      return failure();
    Value input = node.getInputs()[0], skip = node.getInputs()[1];
    if (input.getType() != skip.getType() || !normsLastAxisOnly(node, input, {0, 3}))
      return failure();
    const double eps = floatAttr(node, "epsilon").value_or(1e-5);
    const std::string name = node.getNodeName().str();
    rewriter.setInsertionPoint(node);
    Value sum =
        createNode(rewriter, node, "Add", name + "/skip_sum", {input, skip}, input.getType())
            .getResult(0);
    Value y = emitRmsNormChain(rewriter, node, sum, node.getInputs()[2], eps);
    if (!y)
      return failure();
    rewriter.replaceAllUsesWith(node.getOutputs()[0], y);
    if (node.getOutputs().size() > 3)
      rewriter.replaceAllUsesWith(node.getOutputs()[3], sum);
    rewriter.eraseOp(node);
    return success();
  }
};

} // namespace

void populateNewerOpsetFormPatterns(RewritePatternSet &patterns) {
  patterns.add<ReduceAxesInputToAttribute, SplitNumOutputsToSizes, RmsNormalizationToChain,
               SkipSimplifiedLayerNormalizationToChain>(patterns.getContext());
}

} // namespace disagmoe::normalize
