//===- DecomposeGroupQueryAttention.cpp - com.microsoft.GroupQueryAttention -> its parts -===//
//
// onnxruntime's com.microsoft.GroupQueryAttention (docs/ContribOperators.md; what the
// onnxruntime-genai builder and the transformer optimizer write) fuses a decoder layer's attention
// core: the head split of q [B, S, N H], k and v [B, S, Nkv H], RoPE from cos/sin caches
// (do_rotary), the KV-head repeat of GQA, causal softmax(q k^T * scale) v and the head merge. This
// pattern writes the node as those parts, each in the form the other patterns read: Reshape and
// Transpose to [B, heads, S, H], com.microsoft.RotaryEmbedding on q and k at positions 0..S-1
// (DecomposeRotaryEmbedding.cpp checks its tables), transformers' repeat_kv (Unsqueeze, Expand,
// Reshape), opset-23 Attention with is_causal (DecomposeAttention.cpp), then Transpose and Reshape
// back to [B, S, N H].
//
// What is imported (groupQueryAttentionMismatch names the rest): separate key and value inputs
// (a packed QKV input, one projection MatMul, is split into three by SplitPackedQkv.cpp first;
// packedQkvMismatch says why one was not); no past_key/past_value (a KV cache); seqlens_k = S - 1
// in every row and total_sequence_length = S (no padding, what the compiled plan binds);
// local_window_size -1, softcap 0, smooth_softmax 0, no attention_bias, no head_sink, no
// position_ids input; the present_key/present_value outputs unused.
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

struct GqaForm {
  Value q, k, v, cos, sin;
  FloatType elem;
  int64_t b = 0, s = 0, heads = 0, kvHeads = 0, headDim = 0;
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
  if (input(3) || input(4))
    return fail("past_key/past_value inputs (a KV cache) are not imported: training runs whole "
                "sequences");
  for (size_t i : {9, 10, 11})
    if (input(i))
      return fail(std::string(i == 9    ? "position_ids"
                              : i == 10 ? "attention_bias"
                                        : "head_sink") +
                  " input is not imported");
  if (int64_t w = intAttr("local_window_size", -1); w >= 0)
    return fail("attribute local_window_size = " + std::to_string(w) + " is not imported yet");
  if (auto a = attrs.getAs<FloatAttr>("softcap"); a && a.getValueAsDouble() != 0)
    return fail("attribute softcap = " + std::to_string(a.getValueAsDouble()) +
                " is not imported (no softcap in moe.attention)");
  if (intAttr("smooth_softmax", 0))
    return fail("attribute smooth_softmax = 1 is not imported");
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
    Value y = createNode(rewriter, node, "Attention", name + "/Attention", {q, k, v}, full,
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
