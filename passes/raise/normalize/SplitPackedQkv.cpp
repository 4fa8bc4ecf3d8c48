//===- SplitPackedQkv.cpp - GroupQueryAttention on packed QKV -> separate q, k, v -===//
//
// onnxruntime's transformer optimizer and the onnxruntime-genai builder write a decoder layer with
// a fused qkv_proj as one projection MatMul(x, W) (optionally + bias) whose output [B, S, (N +
// 2 Nkv) H] is GroupQueryAttention's `query`, its key and value inputs left empty
// (docs/ContribOperators.md: the packed form is q, k, v concatenated along the last axis in that
// order). moe.attention holds the q, k and v projection weights apart, so this pattern writes the
// projection as three: W_q = W[:, :N H], W_k = W[:, N H:(N + Nkv) H], W_v = W[:, (N + Nkv) H:]
// (bias sliced likewise), three MatMuls (and Adds), and a GroupQueryAttention reading them as
// query, key and value with every attribute and every other input carried over; the separate-form
// decomposition (DecomposeGroupQueryAttention.cpp) then applies.
//
// The slices are references into the weight's bytes, never copies: a weight stored [out, in] and
// read through Transpose (nn.Linear's layout; FoldWeightTranspose.cpp marks it `transposed`) has
// each part as a contiguous block of rows on disk; a weight stored [in, out] (the onnxruntime-genai
// builder's layout) has each part as a column block, referenced with the `row_stride` of W's rows.
// A bias [out] slices contiguously either way.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/normalize/NormalizePatterns.h"

#include "passes/raise/GraphMatchers.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace disagmoe::normalize {
namespace {

using onnxir::WeightOp;

bool absent(Value v) { return !v || isa_and_nonnull<onnxir::NoneOp>(v.getDefiningOp()); }

std::string str(int64_t v) { return std::to_string(v); }

/// A packed GroupQueryAttention's projection, read.
struct PackedQkv {
  NodeOp matmul, add;     // add is null without a bias
  Value x;                // the projection's input
  WeightOp weight;        // [in, out] as the MatMul reads it (transposed: [out, in] on disk)
  NodeOp transpose;       // Transpose(weight) when the weight is not yet marked `transposed`
  Value bias;             // [out], or null
  int64_t parts[3] = {0}; // columns of q, k, v
};

/// Whether `node` is a GroupQueryAttention with a packed query; `why` says what of its projection
/// is not the form split here (empty when it is).
std::optional<PackedQkv> readPacked(NodeOp node, std::string &why) {
  why.clear();
  if (node.getDomain() != "com.microsoft" || node.getOpType() != "GroupQueryAttention")
    return std::nullopt;
  auto ins = node.getInputs();
  if (ins.empty() || absent(ins[0]) || (ins.size() > 1 && !absent(ins[1])) ||
      (ins.size() > 2 && !absent(ins[2])))
    return std::nullopt;
  auto fail = [&](std::string w) {
    why = std::move(w);
    return std::nullopt;
  };
  auto attrs = node.getOnnxAttrs();
  auto intAttr = [&](StringRef n) {
    auto a = attrs.getAs<IntegerAttr>(n);
    return a ? a.getInt() : 0;
  };
  const int64_t heads = intAttr("num_heads"), kvHeads = intAttr("kv_num_heads");
  SmallVector<int64_t> qShape = raise::staticShape(ins[0]);
  SmallVector<int64_t> outShape =
      node.getOutputs().empty() ? SmallVector<int64_t>() : raise::staticShape(node.getOutputs()[0]);
  if (qShape.size() != 3 || outShape.size() != 3 || heads <= 0 || kvHeads <= 0 ||
      outShape[2] % heads != 0)
    return fail("the packed query and the output need static [batch, seq, width] shapes with "
                "num_heads > 0 and kv_num_heads > 0 dividing them");
  const int64_t headDim = outShape[2] / heads;
  if (qShape[2] != (heads + 2 * kvHeads) * headDim)
    return fail("the packed query's width " + str(qShape[2]) + " is not (num_heads " + str(heads) +
                " + 2 * kv_num_heads " + str(kvHeads) + ") * head_size " + str(headDim) + " = " +
                str((heads + 2 * kvHeads) * headDim));
  PackedQkv p;
  p.parts[0] = heads * headDim, p.parts[1] = p.parts[2] = kvHeads * headDim;
  Value proj = ins[0];
  if (NodeOp add = raise::producer(proj, {"Add"}); add && add.getInputs().size() == 2) {
    for (int i : {0, 1})
      if (raise::producer(add.getInputs()[i], {"MatMul"})) {
        p.add = add, p.bias = add.getInputs()[1 - i];
        proj = add.getInputs()[i];
        break;
      }
    if (!p.add)
      return fail("the packed query is an Add of no projection MatMul (" + raise::describe(add) +
                  ")");
  }
  p.matmul = raise::producer(proj, {"MatMul"});
  if (!p.matmul || p.matmul.getInputs().size() != 2)
    return fail("the packed query is not the output of one projection MatMul(x, W)" +
                (proj.getDefiningOp<NodeOp>()
                     ? " (it is " + raise::describe(proj.getDefiningOp<NodeOp>()) + ")"
                     : std::string()));
  p.x = p.matmul.getInputs()[0];
  Value w = p.matmul.getInputs()[1];
  if (NodeOp t = raise::producer(w, {"Transpose"}); t && t.getInputs().size() == 1) {
    auto perm = t.getOnnxAttrs().getAs<ArrayAttr>("perm");
    WeightOp inner = raise::weightOf(t.getInputs()[0]);
    bool swap = !perm || (perm.size() == 2 && llvm::cast<IntegerAttr>(perm[0]).getInt() == 1 &&
                          llvm::cast<IntegerAttr>(perm[1]).getInt() == 0);
    if (inner && !inner.getTransposed() && swap && raise::staticShape(inner).size() == 2)
      p.transpose = t, p.weight = inner;
  }
  if (!p.weight)
    p.weight = raise::weightOf(w);
  if (!p.weight)
    return fail("the packed projection " + raise::describe(p.matmul) +
                " does not read a constant weight initializer");
  SmallVector<int64_t> wShape = raise::staticShape(p.weight);
  if (p.transpose)
    std::reverse(wShape.begin(), wShape.end());
  const int64_t width = qShape[2];
  if (wShape.size() != 2 || wShape[1] != width)
    return fail("the packed weight '" + p.weight.getWeightName().str() + "' is not [hidden, " +
                str(width) + "] ((num_heads + 2 * kv_num_heads) * head_size columns)");
  if (p.weight.getRowStride())
    return fail("the packed weight '" + p.weight.getWeightName().str() +
                "' is itself a strided window of another weight");
  if (p.bias) {
    SmallVector<int64_t> bShape = raise::staticShape(p.bias);
    WeightOp bw = raise::weightOf(p.bias);
    NodeOp bc = raise::producer(p.bias, {"Constant"});
    if (bShape.size() != 1 || bShape[0] != width || (!bw && !bc) ||
        (bc && !llvm::isa_and_nonnull<DenseElementsAttr>(bc.getOnnxAttrs().get("value"))))
      return fail("the packed projection's bias is not a constant [" + str(width) + "] vector");
  }
  return p;
}

/// Columns [begin, begin + n) of `p.weight` as the MatMul reads it ([in, n]), a reference into its
/// bytes: stored [out, in] (`transposed`, or read through Transpose), rows begin..begin+n-1 on
/// disk, contiguous; stored [in, out], every row's elements begin..begin+n-1, `row_stride` apart.
Value columnSlice(PatternRewriter &rewriter, const PackedQkv &p, int64_t begin, int64_t n,
                  StringRef part) {
  WeightOp w = p.weight;
  auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
  const int64_t elem = static_cast<int64_t>(w.getLength()) / type.getNumElements();
  const bool rows = p.transpose || w.getTransposed();
  const int64_t in = p.transpose ? type.getDimSize(1) : type.getDimSize(0);
  const int64_t out = type.getNumElements() / in;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(w);
  const int64_t offset = static_cast<int64_t>(w.getOffset()) + begin * (rows ? in : 1) * elem;
  return rewriter
      .create<WeightOp>(
          w.getLoc(), RankedTensorType::get({in, n}, type.getElementType()),
          rewriter.getStringAttr(w.getWeightName().str() + "[" + part.str() + "]"), w.getFileAttr(),
          rewriter.getI64IntegerAttr(offset), rewriter.getI64IntegerAttr(n * in * elem),
          /*value=*/ElementsAttr(), rows ? rewriter.getUnitAttr() : UnitAttr(),
          rows ? IntegerAttr() : rewriter.getI64IntegerAttr(out * elem), w.getStoredTypeAttr())
      .getResult();
}

/// Elements [begin, begin + n) of the bias.
Value biasSlice(PatternRewriter &rewriter, NodeOp anchor, const PackedQkv &p, int64_t begin,
                int64_t n, StringRef part) {
  auto sliceValue = [&](ElementsAttr value) -> DenseElementsAttr {
    auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(value);
    if (!dense)
      return {};
    auto all = llvm::to_vector(dense.getValues<Attribute>());
    auto type = RankedTensorType::get({n}, dense.getElementType());
    return DenseElementsAttr::get(type, ArrayRef<Attribute>(all).slice(begin, n));
  };
  if (WeightOp w = raise::weightOf(p.bias)) {
    auto type = llvm::cast<RankedTensorType>(w.getResult().getType());
    const int64_t elem = static_cast<int64_t>(w.getLength()) / type.getNumElements();
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointAfter(w);
    DenseElementsAttr value = w.getValue() ? sliceValue(*w.getValue()) : DenseElementsAttr();
    return rewriter
        .create<WeightOp>(
            w.getLoc(), RankedTensorType::get({n}, type.getElementType()),
            rewriter.getStringAttr(w.getWeightName().str() + "[" + part.str() + "]"),
            w.getFileAttr(),
            rewriter.getI64IntegerAttr(static_cast<int64_t>(w.getOffset()) + begin * elem),
            rewriter.getI64IntegerAttr(n * elem), value ? ElementsAttr(value) : ElementsAttr(),
            UnitAttr(), IntegerAttr(), w.getStoredTypeAttr())
        .getResult();
  }
  NodeOp c = raise::producer(p.bias, {"Constant"});
  return createConstant(rewriter, anchor, (part + "_bias").str(),
                        sliceValue(llvm::cast<ElementsAttr>(c.getOnnxAttrs().get("value"))));
}

struct SplitPackedQkv : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    std::string why;
    std::optional<PackedQkv> packed = readPacked(node, why);
    if (!packed || !why.empty())
      return failure();
    const PackedQkv &p = *packed;
    const std::string name = node.getNodeName().str();
    rewriter.setInsertionPoint(node);
    SmallVector<int64_t> qShape = raise::staticShape(node.getInputs()[0]);
    auto elem = llvm::cast<RankedTensorType>(node.getInputs()[0].getType()).getElementType();
    SmallVector<Value> inputs(node.getInputs().begin(), node.getInputs().end());
    while (inputs.size() < 3)
      inputs.push_back(
          rewriter.create<onnxir::NoneOp>(node.getLoc(), rewriter.getNoneType()).getResult());
    const char *partNames[3] = {"q", "k", "v"};
    int64_t begin = 0;
    for (int i = 0; i < 3; ++i) {
      const int64_t n = p.parts[i];
      auto type = RankedTensorType::get({qShape[0], qShape[1], n}, elem);
      Value wi = columnSlice(rewriter, p, begin, n, partNames[i]);
      std::string proj = name + "/" + partNames[i] + "_proj";
      Value y =
          createNode(rewriter, node, "MatMul", proj + "/MatMul", {p.x, wi}, type).getResult(0);
      if (p.bias) {
        Value bi = biasSlice(rewriter, node, p, begin, n, partNames[i]);
        y = createNode(rewriter, node, "Add", proj + "/Add", {y, bi}, type).getResult(0);
      }
      inputs[i] = y;
      begin += n;
    }
    auto split =
        rewriter.create<NodeOp>(node.getLoc(), node.getResultTypes(), node.getOpTypeAttr(), inputs,
                                node.getNodeNameAttr(), node.getDomainAttr(), node.getOnnxAttrs());
    rewriter.replaceOp(node, split.getResults());
    // The packed projection, if nothing else reads it.
    for (NodeOp dead : {p.add, p.matmul, p.transpose})
      if (dead && dead->use_empty())
        rewriter.eraseOp(dead);
    return success();
  }
};

} // namespace

std::string packedQkvMismatch(NodeOp node) {
  std::string why;
  (void)readPacked(node, why);
  return why;
}

void populateSplitPackedQkvPatterns(RewritePatternSet &patterns) {
  patterns.add<SplitPackedQkv>(patterns.getContext());
}

} // namespace disagmoe::normalize
