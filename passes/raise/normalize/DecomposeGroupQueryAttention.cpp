//===- DecomposeGroupQueryAttention.cpp - com.microsoft.GroupQueryAttention -> its parts -===//
//
// onnxruntime's com.microsoft.GroupQueryAttention (docs/ContribOperators.md; what the
// onnxruntime-genai builder and the transformer optimizer write) fuses a decoder layer's attention
// core: the head split of q [B, S, N H], k and v [B, S, Nkv H], RoPE from cos/sin caches
// (do_rotary), the KV-head repeat of GQA, causal softmax(q k^T * scale) v and the head merge. This
// pattern writes the node as those parts, each in the form the other patterns read: Reshape and
// Transpose to [B, heads, S, H], com.microsoft.RotaryEmbedding on q and k at positions 0..S-1
// (DecomposeRotaryEmbedding.cpp checks its tables), transformers' repeat_kv (Unsqueeze, Expand,
// Reshape), then the attention core, then Transpose and Reshape back to [B, S, N H]. The core is
//   - opset-23 Attention with is_causal (DecomposeAttention.cpp) for plain causal attention;
//   - opset-23 Attention with a constant additive attn_mask for local_window_size = L >= 0;
//   - with a head_sink input, the GPT-OSS sink chain AttentionPattern reads: MatMul(q, k^T) *
//     scale + mask, Concat(scores, Expand(Reshape(head_sink, [1, N, 1, 1]), [B, N, S, 1])),
//     Softmax, Slice (drop the sink column), MatMul with v.
// The window as onnxruntime defines it (its CPU kernel, checked with onnxruntime-node 1.23.2):
// query i sees keys max(0, i - L) .. i, i.e. L + 1 keys, so the mask is the sliding window
// w = L + 1 of MaskByValue (GraphMatchers.h) and of moe.attention's sliding_window. head_sink
// adds exp(head_sink[n]) to head n's softmax denominator (also with smooth_softmax = 0), which is
// exactly a sink logit column that joins the softmax and is dropped after it.
//
// What is imported (groupQueryAttentionMismatch names the rest): separate key and value inputs
// (a packed QKV input, one projection MatMul, is split into three by SplitPackedQkv.cpp first;
// packedQkvMismatch says why one was not); no past_key/past_value (a KV cache), or an empty one
// (past length 0, the builder's first-prompt form, to which the compiler binds optimum's and the
// builder's past_key_values.* inputs); seqlens_k = S - 1
// in every row and total_sequence_length = S (no padding, what the compiled plan binds); causal 1,
// softcap 0, no attention_bias, no position_ids, k_scale/v_scale or q/k_norm_weight input; a
// head_sink that is an initializer (onnx.weight [num_heads], a trained parameter like GPT-OSS's
// sinks); smooth_softmax = 1 only together with head_sink (alone it is a fixed zero sink, which
// moe.attention's trained sinks do not represent); the present_key/present_value outputs unused.
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

/// A KV-cache value of past length 0: a static [batch, kv_heads, 0, head_size] tensor.
bool isEmptyCache(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() && t.getRank() == 4 && t.getDimSize(2) == 0;
}

struct GqaForm {
  Value q, k, v, cos, sin;
  onnxir::WeightOp sink; // head_sink [heads], or null
  FloatType elem;
  int64_t b = 0, s = 0, heads = 0, kvHeads = 0, headDim = 0;
  int64_t window = 0; // keys each query sees (local_window_size + 1), 0 for full causal
  bool rotary = false, interleaved = false;
  double scale = 0;
};

bool absent(Value v) { return !v || isa_and_nonnull<onnxir::NoneOp>(v.getDefiningOp()); }

std::optional<GqaForm> readGqa(NodeOp node, std::string &why) {
  why.clear();
  if (node.getDomain() != "com.microsoft" || node.getOpType() != "GroupQueryAttention")
    return std::nullopt;
  auto fail = [&](std::string w) {
    why = std::move(w);
    return std::nullopt;
  };
  auto ins = node.getInputs();
  auto input = [&](size_t i) { return i < ins.size() && !absent(ins[i]) ? ins[i] : Value(); };
  auto attrs = node.getOnnxAttrs();
  auto intAttr = [&](StringRef n, int64_t def) {
    auto a = attrs.getAs<IntegerAttr>(n);
    return a ? a.getInt() : def;
  };
  GqaForm f;
  f.q = input(0), f.k = input(1), f.v = input(2);
  if (!f.q || !f.k || !f.v)
    return fail("packed QKV (no separate key and value inputs) is not imported: " +
                (f.q ? packedQkvMismatch(node) : std::string("no query input")));
  const int64_t localWindow = intAttr("local_window_size", -1);
  // An empty cache (past length 0: what compiler/pipeline/InputBinding binds the builder's
  // past_key_values.* inputs to) is no cache: the attention runs over the S new keys only.
  Value pastKey = input(3), pastValue = input(4);
  if ((pastKey && !isEmptyCache(pastKey)) || (pastValue && !isEmptyCache(pastValue)))
    return fail(std::string("past_key/past_value inputs (a KV cache) are not imported") +
                (localWindow >= 0 ? " (with local_window_size = " + std::to_string(localWindow) +
                                        ": a windowed KV cache)"
                                  : std::string()) +
                ": training runs whole sequences");
  static const char *const kInputNames[] = {"",
                                            "",
                                            "",
                                            "",
                                            "",
                                            "",
                                            "",
                                            "",
                                            "",
                                            "position_ids",
                                            "attention_bias",
                                            "head_sink",
                                            "k_scale",
                                            "v_scale",
                                            "q_norm_weight",
                                            "k_norm_weight"};
  for (size_t i : {9, 10, 12, 13, 14, 15})
    if (input(i))
      return fail(std::string(kInputNames[i]) + " input is not imported");
  for (size_t i = 16; i < ins.size(); ++i)
    if (input(i))
      return fail("input " + std::to_string(i) + " is not a GroupQueryAttention input");
  if (intAttr("causal", 1) != 1)
    return fail("attribute causal = " + std::to_string(intAttr("causal", 1)) +
                " (bidirectional attention) is not imported: moe.attention is causal");
  if (localWindow < -1)
    return fail("attribute local_window_size = " + std::to_string(localWindow) +
                " is neither -1 nor a window >= 0");
  if (auto a = attrs.getAs<FloatAttr>("softcap"); a && a.getValueAsDouble() != 0)
    return fail("attribute softcap = " + std::to_string(a.getValueAsDouble()) +
                " is not imported (no softcap in moe.attention)");
  if (Value sink = input(11)) {
    f.sink = llvm::dyn_cast_or_null<onnxir::WeightOp>(sink.getDefiningOp());
    if (!f.sink)
      return fail("input head_sink is not an initializer (a trained per-head parameter): a "
                  "computed sink is not imported");
  } else if (intAttr("smooth_softmax", 0)) {
    return fail("attribute smooth_softmax = 1 without a head_sink input (a fixed zero sink) is "
                "not imported: moe.attention's sinks are trained parameters");
  }
  if (localWindow >= 0)
    f.window = localWindow + 1;
  for (auto [i, out] : llvm::enumerate(node.getOutputs()))
    if (i > 0 && !out.use_empty())
      return fail("output " + std::to_string(i) + " (present_key, present_value or output_qk) is " +
                  "read: not imported");
  f.heads = intAttr("num_heads", 0), f.kvHeads = intAttr("kv_num_heads", 0);
  auto qType = llvm::dyn_cast<RankedTensorType>(f.q.getType());
  auto kType = llvm::dyn_cast<RankedTensorType>(f.k.getType());
  f.elem = floatElementType(f.q);
  if (!qType || !kType || !f.elem || !qType.hasStaticShape() || qType.getRank() != 3 ||
      kType != f.v.getType() || kType.getRank() != 3 || !kType.hasStaticShape())
    return fail("query, key and value need static [batch, seq, heads * head_size] float shapes");
  if (f.heads <= 0 || f.kvHeads <= 0 || f.heads % f.kvHeads != 0 ||
      qType.getDimSize(2) % f.heads != 0)
    return fail("attributes num_heads = " + std::to_string(f.heads) + " and kv_num_heads = " +
                std::to_string(f.kvHeads) + " do not divide the query's width");
  f.b = qType.getDimSize(0), f.s = qType.getDimSize(1), f.headDim = qType.getDimSize(2) / f.heads;
  if (kType.getDimSize(0) != f.b || kType.getDimSize(1) != f.s ||
      kType.getDimSize(2) != f.kvHeads * f.headDim)
    return fail("key/value are not [batch, seq, kv_num_heads * head_size]");
  if (f.sink) {
    auto sinkType = llvm::dyn_cast<RankedTensorType>(f.sink.getResult().getType());
    if (!sinkType || sinkType.getElementType() != f.elem ||
        sinkType.getShape() != ArrayRef<int64_t>{f.heads})
      return fail("input head_sink is not [num_heads = " + std::to_string(f.heads) +
                  "] of the query's element type");
  }
  for (Value past : {pastKey, pastValue})
    if (past && llvm::cast<RankedTensorType>(past.getType()).getShape() !=
                    ArrayRef<int64_t>{f.b, f.kvHeads, 0, f.headDim})
      return fail("an empty past_key/past_value is not [batch, kv_num_heads, 0, head_size]");
  if (node.getOutputs().empty() || node.getOutputs()[0].getType() != f.q.getType())
    return fail("the output is not [batch, seq, num_heads * head_size]");
  // No padding: every row's last key index S - 1, the whole sequence.
  auto seqlens = input(5) ? raise::constantValues(ins[5]) : std::nullopt;
  auto total = input(6) ? raise::scalarConstant(ins[6]) : std::nullopt;
  if (!seqlens || static_cast<int64_t>(seqlens->size()) != f.b || !total ||
      *total != static_cast<double>(f.s) ||
      llvm::any_of(*seqlens, [&](double v) { return v != static_cast<double>(f.s - 1); }))
    return fail("seqlens_k and total_sequence_length are not S - 1 in every row and S (a padded "
                "batch or a KV cache): not imported");
  f.rotary = intAttr("do_rotary", 0) != 0;
  f.interleaved = intAttr("rotary_interleaved", 0) != 0;
  if (f.rotary) {
    f.cos = input(7), f.sin = input(8);
    if (!f.cos || !f.sin)
      return fail("do_rotary = 1 without cos_cache and sin_cache");
  }
  f.scale = 1.0 / std::sqrt(static_cast<double>(f.headDim));
  if (auto a = attrs.getAs<FloatAttr>("scale"); a && a.getValueAsDouble() != 0)
    f.scale = a.getValueAsDouble();
  return f;
}

/// The additive [S, S] mask: 0 where query i sees key j (max(0, i - w + 1) <= j <= i, w the
/// window, or every j <= i when it is 0), -inf elsewhere.
Value maskConstant(PatternRewriter &rewriter, NodeOp node, const GqaForm &f) {
  const auto &sem = FloatType(f.elem).getFloatSemantics();
  SmallVector<APFloat> values;
  values.reserve(static_cast<size_t>(f.s * f.s));
  for (int64_t i = 0; i < f.s; ++i)
    for (int64_t j = 0; j < f.s; ++j) {
      const bool sees = j <= i && (f.window == 0 || j > i - f.window);
      values.push_back(sees ? APFloat::getZero(sem) : APFloat::getInf(sem, /*Negative=*/true));
    }
  auto type = RankedTensorType::get({f.s, f.s}, f.elem);
  return createConstant(rewriter, node, f.window > 0 ? "window_mask" : "causal_mask",
                        DenseElementsAttr::get(type, values));
}

/// softmax over [scores, sink] with the sink column dropped, times v: q, k, v [B, N, S, H].
Value sinkAttention(PatternRewriter &rewriter, NodeOp node, const GqaForm &f, Value q, Value k,
                    Value v) {
  const std::string name = node.getNodeName().str();
  auto type = [&](ArrayRef<int64_t> dims) { return RankedTensorType::get(dims, f.elem); };
  const int64_t b = f.b, n = f.heads, s = f.s, h = f.headDim;
  Value kT =
      createNode(rewriter, node, "Transpose", name + "/k_transposed", {k}, type({b, n, h, s}),
                 {rewriter.getNamedAttr("perm", rewriter.getI64ArrayAttr({0, 1, 3, 2}))})
          .getResult(0);
  Value scores = createNode(rewriter, node, "MatMul", name + "/scores", {q, kT}, type({b, n, s, s}))
                     .getResult(0);
  Value scale = createScalarConstant(rewriter, node, "scale", f.elem, f.scale);
  scores = createNode(rewriter, node, "Mul", name + "/scaled", {scores, scale}, type({b, n, s, s}))
               .getResult(0);
  scores = createNode(rewriter, node, "Add", name + "/masked",
                      {scores, maskConstant(rewriter, node, f)}, type({b, n, s, s}))
               .getResult(0);
  Value sinkShape = createI64Constant(rewriter, node, "sink_shape", {4}, {1, n, 1, 1});
  Value sink4 = createNode(rewriter, node, "Reshape", name + "/sink_heads",
                           {onnxir::WeightOp(f.sink).getResult(), sinkShape}, type({1, n, 1, 1}))
                    .getResult(0);
  Value sinkTo = createI64Constant(rewriter, node, "sink_expand", {4}, {b, n, s, 1});
  Value sinks =
      createNode(rewriter, node, "Expand", name + "/sinks", {sink4, sinkTo}, type({b, n, s, 1}))
          .getResult(0);
  auto lastAxis = rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(-1));
  Value cat = createNode(rewriter, node, "Concat", name + "/with_sinks", {scores, sinks},
                         type({b, n, s, s + 1}), {lastAxis})
                  .getResult(0);
  Value p = createNode(rewriter, node, "Softmax", name + "/Softmax", {cat}, type({b, n, s, s + 1}),
                       {lastAxis})
                .getResult(0);
  Value starts = createI64Constant(rewriter, node, "drop_sinks_start", {1}, {0});
  Value ends = createI64Constant(rewriter, node, "drop_sinks_end", {1}, {s});
  Value axes = createI64Constant(rewriter, node, "drop_sinks_axis", {1}, {-1});
  Value pd = createNode(rewriter, node, "Slice", name + "/drop_sinks", {p, starts, ends, axes},
                        type({b, n, s, s}))
                 .getResult(0);
  return createNode(rewriter, node, "MatMul", name + "/pv", {pd, v}, type({b, n, s, h}))
      .getResult(0);
}

struct DecomposeGroupQueryAttention : OpRewritePattern<NodeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(NodeOp node, PatternRewriter &rewriter) const override {
    std::string why;
    std::optional<GqaForm> form = readGqa(node, why);
    if (!form)
      return failure();
    const GqaForm &f = *form;
    const std::string name = node.getNodeName().str();
    rewriter.setInsertionPoint(node);
    auto perm = rewriter.getNamedAttr("perm", rewriter.getI64ArrayAttr({0, 2, 1, 3}));
    // [B, S, n H] -> [B, n, S, H]
    auto heads = [&](Value x, int64_t n, StringRef what) {
      auto split = RankedTensorType::get({f.b, f.s, n, f.headDim}, f.elem);
      Value shape =
          createI64Constant(rewriter, node, (what + "_shape").str(), {4}, {f.b, f.s, n, f.headDim});
      Value r = createNode(rewriter, node, "Reshape", name + "/" + what.str() + "_heads",
                           {x, shape}, split)
                    .getResult(0);
      return createNode(rewriter, node, "Transpose", name + "/" + what.str() + "_t", {r},
                        RankedTensorType::get({f.b, n, f.s, f.headDim}, f.elem), {perm})
          .getResult(0);
    };
    Value q = heads(f.q, f.heads, "q"), k = heads(f.k, f.kvHeads, "k"),
          v = heads(f.v, f.kvHeads, "v");
    if (f.rotary) {
      SmallVector<int64_t> pos;
      for (int64_t r = 0; r < f.b; ++r)
        for (int64_t p = 0; p < f.s; ++p)
          pos.push_back(p);
      Value positions = createI64Constant(rewriter, node, "position_ids", {f.b, f.s}, pos);
      auto interleaved =
          rewriter.getNamedAttr("interleaved", rewriter.getI64IntegerAttr(f.interleaved ? 1 : 0));
      q = createNode(rewriter, node, "RotaryEmbedding", name + "/q_rotary",
                     {q, positions, f.cos, f.sin}, q.getType(), {interleaved}, "com.microsoft")
              .getResult(0);
      k = createNode(rewriter, node, "RotaryEmbedding", name + "/k_rotary",
                     {k, positions, f.cos, f.sin}, k.getType(), {interleaved}, "com.microsoft")
              .getResult(0);
    }
    const auto full = RankedTensorType::get({f.b, f.heads, f.s, f.headDim}, f.elem);
    if (f.kvHeads != f.heads) { // transformers' repeat_kv: [B, Nkv, 1, S, H] -> [B, N, S, H]
      const int64_t rep = f.heads / f.kvHeads;
      auto repeat = [&](Value x, StringRef what) {
        Value axes = createI64Constant(rewriter, node, (what + "_axes").str(), {1}, {2});
        Value u = createNode(rewriter, node, "Unsqueeze", name + "/" + what.str() + "_unsqueeze",
                             {x, axes},
                             RankedTensorType::get({f.b, f.kvHeads, 1, f.s, f.headDim}, f.elem))
                      .getResult(0);
        Value to = createI64Constant(rewriter, node, (what + "_expand").str(), {5},
                                     {f.b, f.kvHeads, rep, f.s, f.headDim});
        Value e = createNode(rewriter, node, "Expand", name + "/" + what.str() + "_expand", {u, to},
                             RankedTensorType::get({f.b, f.kvHeads, rep, f.s, f.headDim}, f.elem))
                      .getResult(0);
        Value shape = createI64Constant(rewriter, node, (what + "_repeat").str(), {4},
                                        {f.b, f.heads, f.s, f.headDim});
        return createNode(rewriter, node, "Reshape", name + "/" + what.str() + "_repeat",
                          {e, shape}, full)
            .getResult(0);
      };
      k = repeat(k, "k"), v = repeat(v, "v");
    }
    Value y = f.sink ? sinkAttention(rewriter, node, f, q, k, v)
              : f.window > 0
                  ? createNode(rewriter, node, "Attention", name + "/Attention",
                               {q, k, v, maskConstant(rewriter, node, f)}, full,
                               {rewriter.getNamedAttr("scale", rewriter.getF32FloatAttr(f.scale))})
                        .getResult(0)
                  : createNode(rewriter, node, "Attention", name + "/Attention", {q, k, v}, full,
                               {rewriter.getNamedAttr("is_causal", rewriter.getI64IntegerAttr(1)),
                                rewriter.getNamedAttr("scale", rewriter.getF32FloatAttr(f.scale))})
                        .getResult(0);
    Value yt = createNode(rewriter, node, "Transpose", name + "/out_t", {y},
                          RankedTensorType::get({f.b, f.s, f.heads, f.headDim}, f.elem), {perm})
                   .getResult(0);
    Value shape =
        createI64Constant(rewriter, node, "out_shape", {3}, {f.b, f.s, f.heads * f.headDim});
    Value out =
        createNode(rewriter, node, "Reshape", name, {yt, shape}, node.getOutputs()[0].getType())
            .getResult(0);
    rewriter.replaceAllUsesWith(node.getOutputs()[0], out);
    rewriter.eraseOp(node);
    return success();
  }
};

} // namespace

std::string groupQueryAttentionMismatch(NodeOp node) {
  std::string why;
  (void)readGqa(node, why);
  return why;
}

void populateDecomposeGroupQueryAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeGroupQueryAttention>(patterns.getContext());
}

} // namespace disagmoe::normalize
