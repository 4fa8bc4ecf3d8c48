//===- DecomposeRotaryEmbedding.cpp - RotaryEmbedding -> Hugging Face's RoPE chain -===//
//
// onnxruntime's com.microsoft.RotaryEmbedding(input, position_ids, cos_cache, sin_cache) (what the
// onnxruntime-genai builder and the transformer optimizer write; docs/ContribOperators.md) and
// opset-23 RotaryEmbedding(X, cos_cache, sin_cache[, position_ids]) (onnx/docs/Operators.md)
// rotate q or k by tables gathered at the position ids. moe.attention computes plain RoPE
// (RoFormer, eqs. 15 and 34: inv_freq[i] = theta^(-2i/d), rotate_half, positions 0..S-1), which
// AttentionPattern reads from Hugging Face's chain, so this pattern checks that the node is that
// RoPE and writes the chain in its place:
//   freqs = Transpose(MatMul(inv_freq[d/2, 1], positions[1, S]));  emb = Concat(freqs, freqs)
//   Y = X * Cos(emb) + Concat(-X[..., d/2:], X[..., :d/2]) * Sin(emb)
// With interleaved = 1 the rotation pairs (2i, 2i+1) (GPT-J's form): each head is de-interleaved
// first, Transpose([.., d/2, 2], perm [0, 1, 2, 4, 3]) -> [.., 2, d/2] (what DeepSeek-V2 writes),
// rotated as above and interleaved back, which AttentionPattern reads as rope_interleaved.
// It checks: interleaved 0 or 1, the rotation over the whole head (rotary_embedding_dim 0 or d),
// scale 1, no packed batching, position ids 0..S-1 in every row (what the compiled plan binds),
// and every cache row used (0..S-1) equal to cos/sin(p * theta^(-2i/d)) for one theta, within the
// fp32 rounding of the table: |error| <= 2^-22 (1 + p * inv_freq[i]) (the angle p * inv_freq is
// rounded twice in fp32, then cos/sin once). theta is read from row 1 (atan2(sin, cos) = inv_freq)
// as AttentionPattern reads it from an inv_freq constant (ComponentMatcher::thetaOf). Otherwise
// the tables may be a scaled RoPE's, m cos/sin(p w_i) (onnxruntime-genai's YaRN caches: YaRN's
// frequencies, its attention factor m): the chain then gets the measured w_i as its inv_freq and
// a Mul by m after Cos and Sin, which AttentionPattern reads as rope_inv_freq and
// rope_attention_factor. Tables of neither form keep the node for the raise pass to name.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/normalize/NormalizePatterns.h"

#include "passes/raise/GraphMatchers.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>

using namespace mlir;

namespace disagmoe::normalize {
namespace {

/// theta from inverse frequencies (as ComponentMatcher::thetaOf: the mean of
/// -d/(2i) log inv_freq[i] over i >= 1, kept to 6 significant digits).
double thetaFrom(ArrayRef<double> invFreq, int64_t dim) {
  double logTheta = 0;
  for (size_t i = 1; i < invFreq.size(); ++i)
    logTheta += -static_cast<double>(dim) / (2.0 * static_cast<double>(i)) * std::log(invFreq[i]);
  double theta = std::exp(logTheta / static_cast<double>(invFreq.size() - 1));
  double magnitude = std::pow(10.0, std::floor(std::log10(theta)) - 5);
  return std::round(theta / magnitude) * magnitude;
}

/// The inverse frequencies of plain RoPE whose tables `cos`, `sin` ([rows, half] row-major) hold
/// in rows 0..used-1; empty if they are not such tables.
SmallVector<double> plainRopeFrequencies(ArrayRef<double> cos, ArrayRef<double> sin, int64_t rows,
                                         int64_t half, int64_t used) {
  if (rows < 2 || used > rows || half < 2)
    return {};
  SmallVector<double> measured;
  for (int64_t i = 0; i < half; ++i)
    measured.push_back(std::atan2(sin[half + i], cos[half + i]));
  if (measured[1] <= 0 || measured[1] >= 1)
    return {};
  const double theta = thetaFrom(measured, 2 * half);
  SmallVector<double> invFreq;
  for (int64_t i = 0; i < half; ++i)
    invFreq.push_back(std::pow(theta, -2.0 * static_cast<double>(i) / (2.0 * half)));
  const double u = std::ldexp(1.0, -22);
  for (int64_t p = 0; p < used; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * invFreq[i];
      const double tol = u * (1.0 + angle);
      if (std::abs(cos[p * half + i] - std::cos(angle)) > tol ||
          std::abs(sin[p * half + i] - std::sin(angle)) > tol)
        return {};
    }
  return invFreq;
}

/// A scaled RoPE's tables (onnxruntime-genai writes YaRN's as m cos(p w_i), m sin(p w_i)): the
/// factor m from row 0 (cos 0 = 1, sin 0 = 0), each frequency w_i from the angle of the last used
/// row, unwrapped by row 1's (w_i < pi), and every used row checked against them within the fp32
/// rounding of the table, m 2^-22 (2 + p w_i). Empty where the tables are not of that form.
SmallVector<double> scaledRopeFrequencies(ArrayRef<double> cos, ArrayRef<double> sin, int64_t rows,
                                          int64_t half, int64_t used, double &factor) {
  if (rows < 2 || used > rows || half < 1 || used < 2)
    return {};
  factor = cos[0];
  if (!(factor > 0.0) || !std::isfinite(factor))
    return {};
  const double u = std::ldexp(1.0, -22);
  for (int64_t i = 0; i < half; ++i)
    if (std::abs(cos[i] - factor) > factor * u * 2 || std::abs(sin[i]) > factor * u * 2)
      return {};
  const int64_t last = used - 1;
  constexpr double kTwoPi = 6.283185307179586;
  SmallVector<double> invFreq;
  for (int64_t i = 0; i < half; ++i) {
    const double first = std::atan2(sin[half + i], cos[half + i]);
    if (!(first > 0.0))
      return {};
    double w = first;
    if (last > 1) {
      const double a = std::atan2(sin[last * half + i], cos[last * half + i]);
      const double turns = std::round((static_cast<double>(last) * first - a) / kTwoPi);
      w = (a + kTwoPi * turns) / static_cast<double>(last);
    }
    invFreq.push_back(w);
  }
  for (int64_t p = 0; p < used; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * invFreq[i];
      const double tol = factor * u * (2.0 + angle);
      if (std::abs(cos[p * half + i] - factor * std::cos(angle)) > tol ||
          std::abs(sin[p * half + i] - factor * std::sin(angle)) > tol)
        return {};
    }
  return invFreq;
}

/// A float Constant of shape `dims` (element type `elem`).
Value floatConstant(PatternRewriter &rewriter, NodeOp anchor, StringRef suffix,
                    ArrayRef<int64_t> dims, FloatType elem, ArrayRef<double> values) {
  SmallVector<float> floats(values.begin(), values.end());
  return createConstant(
      rewriter, anchor, suffix,
      DenseElementsAttr::get(RankedTensorType::get(dims, elem), ArrayRef<float>(floats)));
}

/// What the rewrite needs of a RotaryEmbedding that is plain RoPE.
struct RotaryForm {
  Value x;
  RankedTensorType xType;
  FloatType elem;
  int64_t b = 0, s = 0, heads = 0, half = 0;
  bool interleaved = false; // GPT-J's pairs (2i, 2i+1) instead of the halves (i, i + d/2)
  SmallVector<double> invFreq;
  double factor = 1.0; // a scaled RoPE's factor on cos and sin (YaRN's attention factor)
};

/// Reads `node` as plain RoPE, or says why it is not (`why`; empty when `node` is not a
/// RotaryEmbedding at all).
std::optional<RotaryForm> readRotary(NodeOp node, std::string &why) {
  why.clear();
  if (node.getOpType() != "RotaryEmbedding" || node.getOutputs().size() != 1)
    return std::nullopt;
  const bool ms = node.getDomain() == "com.microsoft";
  if (!ms && !node.getDomain().empty())
    return std::nullopt;
  auto fail = [&](std::string w) {
    why = std::move(w);
    return std::nullopt;
  };
  auto ins = node.getInputs();
  if (ins.size() < 3 || (ms && ins.size() != 4))
    return fail("expected (input, position_ids, cos_cache, sin_cache) or (X, cos_cache, "
                "sin_cache[, position_ids])");
  RotaryForm f;
  f.x = ins[0];
  Value cosCache = ms ? ins[2] : ins[1], sinCache = ms ? ins[3] : ins[2];
  Value positions = ms ? ins[1] : (ins.size() > 3 ? ins[3] : Value());
  if (positions && isa_and_nonnull<onnxir::NoneOp>(positions.getDefiningOp()))
    positions = Value();
  auto attrs = node.getOnnxAttrs();
  auto intAttr = [&](StringRef n) {
    auto a = attrs.getAs<IntegerAttr>(n);
    return a ? a.getInt() : 0;
  };
  if (int64_t il = intAttr("interleaved"); il != 0 && il != 1)
    return fail("attribute interleaved = " + std::to_string(il) + " is neither 0 nor 1");
  f.interleaved = intAttr("interleaved") == 1;
  if (intAttr("is_packed_batching"))
    return fail("attribute is_packed_batching = 1 is not imported");
  if (auto sc = attrs.getAs<FloatAttr>("scale"); sc && sc.getValueAsDouble() != 1.0)
    return fail("attribute scale = " + std::to_string(sc.getValueAsDouble()) +
                " is not imported (plain RoPE has scale 1)");
  f.xType = llvm::dyn_cast<RankedTensorType>(f.x.getType());
  f.elem = floatElementType(f.x);
  auto cacheType = llvm::dyn_cast<RankedTensorType>(cosCache.getType());
  if (!f.xType || !f.elem || !f.xType.hasStaticShape() || !cacheType ||
      !cacheType.hasStaticShape() || cacheType != sinCache.getType() ||
      node.getOutputs()[0].getType() != f.x.getType())
    return fail("the input and the cos/sin caches need static float shapes, the caches alike");
  f.half = cacheType.getShape().back();
  const int64_t headDim = 2 * f.half;
  if (int64_t rotary = intAttr("rotary_embedding_dim"); rotary != 0 && rotary != headDim)
    return fail("attribute rotary_embedding_dim = " + std::to_string(rotary) +
                " rotates part of the head (" + std::to_string(headDim) +
                "): moe.attention rotates all of it");
  if (f.xType.getRank() == 4) { // [batch, heads, seq, head_dim]
    f.b = f.xType.getDimSize(0), f.heads = f.xType.getDimSize(1), f.s = f.xType.getDimSize(2);
    if (f.xType.getDimSize(3) != headDim)
      return fail("the input's head size " + std::to_string(f.xType.getDimSize(3)) +
                  " is not twice the caches' width " + std::to_string(f.half));
  } else if (f.xType.getRank() == 3) { // [batch, seq, heads * head_dim]
    f.b = f.xType.getDimSize(0), f.s = f.xType.getDimSize(1);
    if (f.xType.getDimSize(2) % headDim != 0)
      return fail("the input's width is not a multiple of the head size " +
                  std::to_string(headDim));
    f.heads = f.xType.getDimSize(2) / headDim;
    if (int64_t n = intAttr("num_heads"); n != 0 && n != f.heads)
      return fail("attribute num_heads = " + std::to_string(n) + " disagrees with the input");
  } else {
    return fail("the input is neither 3-D nor 4-D");
  }

  // The tables and the positions they are read at.
  auto cosValues = raise::constantValues(cosCache), sinValues = raise::constantValues(sinCache);
  if (!cosValues || !sinValues)
    return fail("the cos/sin caches are not constants whose values the compiler reads (inline "
                "initializers up to 64 MiB)");
  int64_t rows;
  if (positions) {
    auto ids = raise::constantValues(positions);
    if (cacheType.getRank() != 2 || !ids || static_cast<int64_t>(ids->size()) != f.b * f.s)
      return fail("position ids that are not [batch, seq] constants at the compiled shape");
    for (int64_t k = 0; k < f.b * f.s; ++k)
      if ((*ids)[k] != static_cast<double>(k % f.s))
        return fail("position ids other than 0..S-1 in every row (the compiled plan's)");
    rows = cacheType.getDimSize(0);
  } else { // opset 23 without position ids: tables [batch, seq, half], the same in every row
    if (cacheType.getRank() != 3 || cacheType.getDimSize(0) != f.b ||
        cacheType.getDimSize(1) != f.s)
      return fail("without position ids the caches must be [batch, seq, head_size / 2]");
    const size_t plane = static_cast<size_t>(f.s * f.half);
    for (size_t k = plane; k < cosValues->size(); ++k)
      if ((*cosValues)[k] != (*cosValues)[k % plane] || (*sinValues)[k] != (*sinValues)[k % plane])
        return fail("the caches differ between batch rows");
    rows = f.s;
  }
  f.invFreq = plainRopeFrequencies(*cosValues, *sinValues, rows, f.half, f.s);
  if (f.invFreq.empty()) // a scaled RoPE: its frequencies and factor measured from the tables
    f.invFreq = scaledRopeFrequencies(*cosValues, *sinValues, rows, f.half, f.s, f.factor);
  if (f.invFreq.empty())
    return fail("the cos/sin caches are not m cos/sin(p * w_i) for one factor m > 0 and "
                "frequencies w_i at positions 0..S-1");
  return f;
}

struct DecomposeRotaryEmbedding : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    std::string why;
    std::optional<RotaryForm> form = readRotary(node, why);
    if (!form)
      return failure();
    Value x = form->x;
    RankedTensorType xType = form->xType;
    FloatType elem = form->elem;
    const int64_t b = form->b, s = form->s, heads = form->heads, half = form->half;
    const int64_t headDim = 2 * half;
    const SmallVector<double> &invFreq = form->invFreq;

    const std::string name = node.getNodeName().str();
    rewriter.setInsertionPoint(node);
    SmallVector<double> pos;
    for (int64_t p = 0; p < s; ++p)
      pos.push_back(static_cast<double>(p));
    Value invCol = floatConstant(rewriter, node, "inv_freq", {half, 1}, elem, invFreq);
    Value posRow = floatConstant(rewriter, node, "positions", {1, s}, elem, pos);
    Value freqsT = createNode(rewriter, node, "MatMul", name + "/freqs", {invCol, posRow},
                              RankedTensorType::get({half, s}, elem))
                       .getResult(0);
    auto freqsType = RankedTensorType::get({s, half}, elem);
    Value freqs = createNode(rewriter, node, "Transpose", name + "/freqs_t", {freqsT}, freqsType,
                             {rewriter.getNamedAttr("perm", rewriter.getI64ArrayAttr({1, 0}))})
                      .getResult(0);
    auto embType = RankedTensorType::get({s, headDim}, elem);
    auto axisLast = rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(-1));
    Value emb =
        createNode(rewriter, node, "Concat", name + "/emb", {freqs, freqs}, embType, {axisLast})
            .getResult(0);
    Value cos = createNode(rewriter, node, "Cos", name + "/Cos", {emb}, embType).getResult(0);
    Value sin = createNode(rewriter, node, "Sin", name + "/Sin", {emb}, embType).getResult(0);
    if (form->factor != 1.0) { // YaRN's attention factor, as GptOssRotaryEmbedding applies it
      Value m = createScalarConstant(rewriter, node, "attention_factor", elem, form->factor);
      cos = createNode(rewriter, node, "Mul", name + "/cos_scaled", {cos, m}, embType).getResult(0);
      sin = createNode(rewriter, node, "Mul", name + "/sin_scaled", {sin, m}, embType).getResult(0);
    }

    // The per-head view: X itself, or [b, s, heads, d] with the tables as [s, 1, d].
    Value xh = x;
    auto headType = xType;
    if (xType.getRank() == 3) {
      headType = RankedTensorType::get({b, s, heads, headDim}, elem);
      Value shape = createI64Constant(rewriter, node, "head_shape", {4}, {b, s, heads, headDim});
      xh =
          createNode(rewriter, node, "Reshape", name + "/heads", {x, shape}, headType).getResult(0);
      auto tableType = RankedTensorType::get({s, 1, headDim}, elem);
      Value axes = createI64Constant(rewriter, node, "table_axes", {1}, {1});
      cos = createNode(rewriter, node, "Unsqueeze", name + "/cos_heads", {cos, axes}, tableType)
                .getResult(0);
      sin = createNode(rewriter, node, "Unsqueeze", name + "/sin_heads", {sin, axes}, tableType)
                .getResult(0);
    }
    // GPT-J's pairs: [.., d] -> [.., d/2, 2] -> swap -> [.., 2, d/2] -> [.., d] and back.
    auto swapLastTwo = [&](Value v, int64_t inner, const std::string &step) {
      SmallVector<int64_t> dims(headType.getShape());
      dims.back() = headDim / inner;
      dims.push_back(inner);
      SmallVector<int64_t> swapped(dims);
      std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
      Value split = createI64Constant(rewriter, node, step + "_shape", {5}, dims);
      Value in = createNode(rewriter, node, "Reshape", name + "/" + step + "_split", {v, split},
                            RankedTensorType::get(dims, elem))
                     .getResult(0);
      Value t =
          createNode(rewriter, node, "Transpose", name + "/" + step, {in},
                     RankedTensorType::get(swapped, elem),
                     {rewriter.getNamedAttr("perm", rewriter.getI64ArrayAttr({0, 1, 2, 4, 3}))})
              .getResult(0);
      Value whole =
          createI64Constant(rewriter, node, step + "_merge_shape",
                            {static_cast<int64_t>(headType.getRank())}, headType.getShape());
      return createNode(rewriter, node, "Reshape", name + "/" + step + "_merge", {t, whole},
                        headType)
          .getResult(0);
    };
    if (form->interleaved)
      xh = swapLastTwo(xh, 2, "deinterleave");
    SmallVector<int64_t> halfDims(headType.getShape());
    halfDims.back() = half;
    auto halfType = RankedTensorType::get(halfDims, elem);
    Value lastAxis = createI64Constant(rewriter, node, "last_axis", {1}, {-1});
    Value zero = createI64Constant(rewriter, node, "zero", {1}, {0});
    Value mid = createI64Constant(rewriter, node, "half", {1}, {half});
    Value end = createI64Constant(rewriter, node, "end", {1}, {headDim});
    Value x1 =
        createNode(rewriter, node, "Slice", name + "/x1", {xh, zero, mid, lastAxis}, halfType)
            .getResult(0);
    Value x2 = createNode(rewriter, node, "Slice", name + "/x2", {xh, mid, end, lastAxis}, halfType)
                   .getResult(0);
    Value neg = createNode(rewriter, node, "Neg", name + "/Neg", {x2}, halfType).getResult(0);
    Value rot =
        createNode(rewriter, node, "Concat", name + "/rotate_half", {neg, x1}, headType, {axisLast})
            .getResult(0);
    Value a = createNode(rewriter, node, "Mul", name + "/x_cos", {xh, cos}, headType).getResult(0);
    Value c =
        createNode(rewriter, node, "Mul", name + "/rot_sin", {rot, sin}, headType).getResult(0);
    const bool renamedLater = xType.getRank() == 3 || form->interleaved;
    Value y =
        createNode(rewriter, node, "Add", renamedLater ? name + "/rotated" : name, {a, c}, headType)
            .getResult(0);
    if (form->interleaved)
      y = swapLastTwo(y, half, "interleave");
    if (xType.getRank() == 3) {
      Value shape = createI64Constant(rewriter, node, "out_shape", {3}, {b, s, heads * headDim});
      y = createNode(rewriter, node, "Reshape", name, {y, shape}, xType).getResult(0);
    }
    rewriter.replaceAllUsesWith(node.getOutputs()[0], y);
    rewriter.eraseOp(node);
    return success();
  }
};

} // namespace

std::string rotaryEmbeddingMismatch(NodeOp node) {
  std::string why;
  (void)readRotary(node, why);
  return why;
}

void populateDecomposeRotaryEmbeddingPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeRotaryEmbedding>(patterns.getContext());
}

} // namespace disagmoe::normalize
