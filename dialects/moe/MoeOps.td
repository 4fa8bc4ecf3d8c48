//===- MoeOps.td - the `moe` dialect: MoE transformer components -*- tablegen -*-===//
//
// Component ops with their hyper-parameters as attributes, raised from the `onnx` dialect (or built
// from a model config). Activations are `[batch, seq, hidden]` f32 tensors; routing results are
// `[tokens, top_k]` (i64 expert ids, f32 gate weights) with tokens = batch * seq flattened row-major.
// Linear weights are `[in, out]` tensors (y = x @ W), produced by `onnx.weight` ops.
// After partitioning, components live in `moe.stage` regions; after exchange fusion, `moe.m2n`,
// `moe.n2m` and `moe.residual` carry the values that cross from one GPU group to another
// (docs/architecture.md, "Exchanges").
//
//===----------------------------------------------------------------------===//

#ifndef DISAGMOE_MOE_OPS
#define DISAGMOE_MOE_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Moe_Dialect : Dialect {
  let name = "moe";
  let summary = "Mixture-of-Experts transformer components, partitions and exchanges";
  let cppNamespace = "::disagmoe::moe";
}

// A signless i64 attribute read back as a signed int64_t (layer -1 marks the final norm).
def Moe_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t", "64-bit integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

class Moe_Op<string mnemonic, list<Trait> traits = []> : Op<Moe_Dialect, mnemonic, traits>;

def Moe_ParamOp : Moe_Op<"param", [Pure]> {
  let summary = "a parameter known by name and shape only (no bytes), from the config frontend";
  let description = [{
    Full-size models are planned and simulated from their `config.json` without weights; their
    parameters are `moe.param` values in place of `onnx.weight` references. Plans that must run
    (not only be costed) need `onnx.weight` references instead.

    ```mlir
    %wq = moe.param "layers.0.self_attn.q_proj" : tensor<4096x4096xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$param_name);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$param_name attr-dict `:` type($result)";
}

def Moe_EmbeddingOp : Moe_Op<"embedding", [Pure]> {
  let summary = "token embedding: y[b,s] = W[ids[b,s]]";
  let arguments = (ins TensorOf<[I64, I32]>:$ids, F32Tensor:$weight);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$ids `,` $weight attr-dict `:` type($ids) `,` type($weight) `->` type($result)";
  let hasVerifier = 1;
}

def Moe_RmsNormOp : Moe_Op<"rms_norm", [Pure]> {
  let summary = "RMSNorm: y = x / sqrt(mean(x^2, -1) + eps) * w";
  let description = [{
    `role` is `attn_norm`, `ffn_norm` or `final_norm`; `layer` is -1 for the final norm. Inside
    raise-onnx-to-moe (its match patterns, before the residual stream is assembled) `role` may be
    empty with `layer` -1: not yet placed.
    Source: Zhang & Sennrich 2019, "Root Mean Square Layer Normalization", eq. 4.
  }];
  let arguments = (ins F32Tensor:$x, F32Tensor:$weight, F64Attr:$eps, Moe_I64Attr:$layer, StrAttr:$role);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x `,` $weight attr-dict `:` type($x) `,` type($weight) `->` type($result)";
  let hasVerifier = 1;
}

def Moe_AttentionOp : Moe_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "causal grouped-query self-attention with rotary position embedding";
  let description = [{
    q = x Wq, k = x Wk, v = x Wv split into `num_heads` / `num_kv_heads` heads of `head_dim`;
    RoPE in the rotate-half form with base `rope_theta` (Su et al. 2021, RoFormer, eq. 34);
    softmax(q k^T / sqrt(head_dim) + causal mask) v, KV heads shared by num_heads/num_kv_heads query
    heads (Ainslie et al. 2023, GQA); output projected by Wo, before the residual add.
    Weights: Wq [hidden, heads*head_dim], Wk/Wv [hidden, kv_heads*head_dim], Wo [heads*head_dim, hidden].

    Optional parts of the model families (each present or absent on its own):
    - `bq`/`bk`/`bv`/`bo`: projection biases [heads*head_dim], [kv_heads*head_dim] x2, [hidden]
      (GPT-OSS);
    - `qk_norm(q_norm, k_norm)`: RMSNorm weights [head_dim] applied per head to q and k before RoPE,
      with epsilon `qk_norm_eps` (Qwen3);
    - `sinks`: one learned logit per query head [heads] that joins each softmax denominator and
      contributes no value (GPT-OSS attention sinks);
    - `sliding_window` = w: query t attends keys s with t - w < s <= t (GPT-OSS, even layers);
    - `rope_interleaved`: RoPE rotates the pairs (2i, 2i+1) of each head (GPT-J's form, written by
      onnxruntime's RotaryEmbedding / GroupQueryAttention with interleaved = 1) instead of the
      halves (i, i + head_dim/2). Computed as a per-head de-interleave of q and k after their norm
      and before rotate-half RoPE: q . k is unchanged by one permutation of both, so the weights
      keep the export's layout;
    - `rope_inv_freq` (head_dim/2 values) and `rope_attention_factor`: a scaled RoPE (YaRN, Peng et
      al. 2023; linear or NTK scaling), its frequencies in place of rope_theta^(-2i/head_dim)
      (rope_theta then only the nearest plain base) and YaRN's factor m on cos and sin
      (GPT-OSS: `cos = emb.cos() * attention_scaling`).

    ```mlir
    %a = moe.attention %x weights(%wq, %wk, %wv, %wo) bq(%bq : tensor<64xf32>)
           sinks(%s : tensor<4xf32>) {head_dim = 16 : i64, ..., sliding_window = 4 : i64} : ...
    ```
  }];
  let arguments = (ins F32Tensor:$x, F32Tensor:$wq, F32Tensor:$wk, F32Tensor:$wv, F32Tensor:$wo,
                       Optional<F32Tensor>:$bq, Optional<F32Tensor>:$bk, Optional<F32Tensor>:$bv,
                       Optional<F32Tensor>:$bo, Optional<F32Tensor>:$q_norm,
                       Optional<F32Tensor>:$k_norm, Optional<F32Tensor>:$sinks,
                       Moe_I64Attr:$layer, Moe_I64Attr:$num_heads, Moe_I64Attr:$num_kv_heads, Moe_I64Attr:$head_dim,
                       F64Attr:$rope_theta, OptionalAttr<F64Attr>:$qk_norm_eps,
                       OptionalAttr<Moe_I64Attr>:$sliding_window, UnitAttr:$rope_interleaved,
                       OptionalAttr<DenseF64ArrayAttr>:$rope_inv_freq,
                       OptionalAttr<F64Attr>:$rope_attention_factor);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = [{
    $x `weights` `(` $wq `,` $wk `,` $wv `,` $wo `)`
    (`bq` `(` $bq^ `:` type($bq) `)`)? (`bk` `(` $bk^ `:` type($bk) `)`)?
    (`bv` `(` $bv^ `:` type($bv) `)`)? (`bo` `(` $bo^ `:` type($bo) `)`)?
    (`qk_norm` `(` $q_norm^ `,` $k_norm `:` type($q_norm) `,` type($k_norm) `)`)?
    (`sinks` `(` $sinks^ `:` type($sinks) `)`)?
    attr-dict `:` type($x) `,` `(` type($wq) `,`
    type($wk) `,` type($wv) `,` type($wo) `)` `->` type($result)
  }];
  let builders = [
    // The plain attention of the first version (no optional parts).
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$x, "::mlir::Value":$wq, "::mlir::Value":$wk, "::mlir::Value":$wv, "::mlir::Value":$wo,
                   "::mlir::IntegerAttr":$layer, "::mlir::IntegerAttr":$num_heads, "::mlir::IntegerAttr":$num_kv_heads,
                   "::mlir::IntegerAttr":$head_dim, "::mlir::FloatAttr":$rope_theta), [{
      build($_builder, $_state, result, x, wq, wk, wv, wo, ::mlir::Value(), ::mlir::Value(), ::mlir::Value(), ::mlir::Value(),
            ::mlir::Value(), ::mlir::Value(), ::mlir::Value(), layer, num_heads, num_kv_heads, head_dim, rope_theta,
            ::mlir::FloatAttr(), ::mlir::IntegerAttr(), ::mlir::UnitAttr(),
            ::mlir::DenseF64ArrayAttr(), ::mlir::FloatAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def Moe_MlaAttentionOp : Moe_Op<"mla_attention", [Pure]> {
  let summary = "multi-head latent attention (DeepSeek-V2 MLA) with a decoupled RoPE part";
  let description = [{
    DeepSeek-V2 (arXiv:2405.04434, section 2.1), without query compression (q_lora_rank null, as
    V2-Lite): q = x Wq split per head into q_nope [qk_nope_head_dim] and q_pe [qk_rope_head_dim];
    x Wkv_a = [c (kv_lora_rank) | k_pe (qk_rope_head_dim, one head shared by all)];
    RMSNorm(c; kv_norm, kv_norm_eps) Wkv_b split per head into k_nope and v [v_head_dim];
    RoPE (rotate-half, base rope_theta; with `rope_interleaved` after DeepSeek-V2's de-interleave
    [x0, x1, x2, x3, ...] -> [x0, x2, ..., x1, x3, ...]) on q_pe and k_pe only;
    causal softmax(cat(q_nope, q_pe) . cat(k_nope, k_pe) * softmax_scale) v, projected by Wo.
    Weights: Wq [hidden, heads*(nope+rope)], Wkv_a [hidden, kv_lora_rank+rope], kv_norm
    [kv_lora_rank], Wkv_b [kv_lora_rank, heads*(nope+v)], Wo [heads*v, hidden].
  }];
  let arguments = (ins F32Tensor:$x, F32Tensor:$wq, F32Tensor:$wkv_a, F32Tensor:$kv_norm,
                       F32Tensor:$wkv_b, F32Tensor:$wo, Moe_I64Attr:$layer, Moe_I64Attr:$num_heads,
                       Moe_I64Attr:$qk_nope_head_dim, Moe_I64Attr:$qk_rope_head_dim,
                       Moe_I64Attr:$v_head_dim, Moe_I64Attr:$kv_lora_rank, F64Attr:$kv_norm_eps,
                       F64Attr:$rope_theta, F64Attr:$softmax_scale, UnitAttr:$rope_interleaved);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = [{
    $x `weights` `(` $wq `,` $wkv_a `,` $kv_norm `,` $wkv_b `,` $wo `)` attr-dict `:` type($x) `,`
    `(` type($wq) `,` type($wkv_a) `,` type($kv_norm) `,` type($wkv_b) `,` type($wo) `)` `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Moe_RouterOp : Moe_Op<"router", [Pure, AttrSizedOperandSegments]> {
  let summary = "MoE router: logits = x Wg (+ b) (fp32), top-k expert ids and gate weights";
  let description = [{
    `scoring`: `softmax_topk_renorm` (softmax over all experts, top-k, gates divided by their sum),
    `softmax_topk` (no renormalisation), `topk_softmax` (top-k on logits, softmax over the k), or
    DeepSeek-V3's `sigmoid_group_topk_renorm` / `sigmoid_group_topk` (transformers'
    DeepseekV3TopkRouter): s = sigmoid(logits); the choice ranks s + `correction_bias`
    (e_score_correction_bias, a buffer that only steers the choice) among the experts of the
    `topk_group` best of `n_group` groups of num_experts / n_group consecutive experts (a group's
    score: the sum of its two best biased scores; the other groups' experts score 0.0); the gates
    are the unbiased s of the chosen experts, over (their sum + 1e-20) for `_renorm`.
    Top-k ties go to the lower expert id (ONNX TopK specification).
    Optional: `bias` [experts] added to the logits before scoring (GPT-OSS),
    `routed_scaling_factor` multiplying the final gate weights (DeepSeek), and for the sigmoid
    scorings `correction_bias` [experts], `n_group` and `topk_group` (absent: 1, no groups).
    Results: ids [tokens, top_k] i64, gates [tokens, top_k] f32.
  }];
  let arguments = (ins F32Tensor:$x, F32Tensor:$weight, Optional<F32Tensor>:$bias,
                       Optional<F32Tensor>:$correction_bias,
                       Moe_I64Attr:$layer, Moe_I64Attr:$num_experts,
                       Moe_I64Attr:$top_k, StrAttr:$scoring, OptionalAttr<F64Attr>:$routed_scaling_factor,
                       OptionalAttr<Moe_I64Attr>:$n_group, OptionalAttr<Moe_I64Attr>:$topk_group);
  let results = (outs I64Tensor:$ids, F32Tensor:$gates);
  let assemblyFormat = [{
    $x `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`correction_bias` `(` $correction_bias^ `:` type($correction_bias) `)`)? attr-dict `:`
    type($x) `,` type($weight) `->` type($ids) `,` type($gates)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$ids, "::mlir::Type":$gates, "::mlir::Value":$x, "::mlir::Value":$weight, "::mlir::IntegerAttr":$layer,
                   "::mlir::IntegerAttr":$num_experts, "::mlir::IntegerAttr":$top_k, "::mlir::StringAttr":$scoring), [{
      build($_builder, $_state, ids, gates, x, weight, ::mlir::Value(), ::mlir::Value(), layer,
            num_experts, top_k, scoring, ::mlir::FloatAttr(), ::mlir::IntegerAttr(),
            ::mlir::IntegerAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def Moe_ExpertsOp : Moe_Op<"experts", [Pure, AttrSizedOperandSegments]> {
  let summary = "routed SwiGLU experts, combined: y[t] = sum_j gates[t,j] * E_{ids[t,j]}(x[t])";
  let description = [{
    E_e(x) = (silu(x W1_e) * (x W3_e)) W2_e (Shazeer 2020, "GLU Variants Improve Transformer").
    `w1`, `w3`: `num_experts` tensors [hidden, expert_hidden]; `w2`: [expert_hidden, hidden], listed
    in expert id order. Terms are added in ascending expert id (docs/architecture.md, "Exchanges").

    Expert forms of the other families:
    - biases `b1`, `b3` [expert_hidden] and `b2` [hidden] (each list empty or one per expert);
    - `activation = "swiglu_oai"` (GPT-OSS): g = min(x W1 + b1, limit), u = clamp(x W3 + b3,
      -limit, limit), E(x) = ((u + 1) * g * sigmoid(alpha g)) W2 + b2 with `swiglu_limit` and
      `swiglu_alpha`;
    - `fused_gate_up`: `w1` holds [hidden, 2*expert_hidden] with the gate and up columns interleaved
      (gate = even columns, up = odd columns; `b1` likewise [2*expert_hidden]) and `w3`/`b3` are
      empty (GPT-OSS's gate_up_proj);
    - non-gated `activation` = "relu", "gelu_tanh", "silu" or "identity" (onnxruntime's
      com.microsoft.MoE activation_type relu, gelu, silu without fc3, identity):
      E(x) = act(x W1 + b1) W2 + b2 with `w3`/`b3` empty; gelu_tanh is the tanh approximation
      0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) that onnxruntime's CPU provider computes
      (contrib_ops/cpu/moe/moe_utils.cc, ApplyActivation).
  }];
  let arguments = (ins F32Tensor:$x, I64Tensor:$ids, F32Tensor:$gates, Variadic<F32Tensor>:$w1,
                       Variadic<F32Tensor>:$w3, Variadic<F32Tensor>:$w2, Variadic<F32Tensor>:$b1,
                       Variadic<F32Tensor>:$b3, Variadic<F32Tensor>:$b2, Moe_I64Attr:$layer,
                       Moe_I64Attr:$num_experts, Moe_I64Attr:$expert_hidden,
                       OptionalAttr<StrAttr>:$activation, OptionalAttr<F64Attr>:$swiglu_limit,
                       OptionalAttr<F64Attr>:$swiglu_alpha, UnitAttr:$fused_gate_up);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = [{
    $x `,` $ids `,` $gates `w1` `(` $w1 `)` `w3` `(` $w3 `)` `w2` `(` $w2 `)`
    (`b1` `(` $b1^ `:` type($b1) `)`)? (`b3` `(` $b3^ `:` type($b3) `)`)?
    (`b2` `(` $b2^ `:` type($b2) `)`)? attr-dict `:`
    type($x) `,` type($ids) `,` type($gates) `,` `(` type($w1) `)` `,`
    custom<ParenTypes>(type($w3)) `,` `(` type($w2) `)` `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$x, "::mlir::Value":$ids, "::mlir::Value":$gates, "::mlir::ValueRange":$w1,
                   "::mlir::ValueRange":$w3, "::mlir::ValueRange":$w2, "::mlir::IntegerAttr":$layer,
                   "::mlir::IntegerAttr":$num_experts, "::mlir::IntegerAttr":$expert_hidden), [{
      build($_builder, $_state, result, x, ids, gates, w1, w3, w2, ::mlir::ValueRange(), ::mlir::ValueRange(),
            ::mlir::ValueRange(), layer, num_experts, expert_hidden, ::mlir::StringAttr(), ::mlir::FloatAttr(), ::mlir::FloatAttr(),
            ::mlir::UnitAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def Moe_DenseFfnOp : Moe_Op<"dense_ffn", [Pure]> {
  let summary = "an always-on SwiGLU FFN: a dense layer's FFN or a layer's shared experts";
  let description = [{
    y = (silu(x W1) * (x W3)) W2 with W1, W3 [hidden, ffn_hidden] and W2 [ffn_hidden, hidden].
    (Inside raise-onnx-to-moe, before the residual stream is assembled, `role` may be empty with
    `layer` -1: dense or shared not decided yet.)
    `role = "dense"`: the whole FFN of a dense layer (DeepSeek's first_k_dense_replace layers), so
    x_{l+1} = h_l + y; `role = "shared"`: the shared experts of an MoE layer, fused into one FFN of
    width `num_shared_experts` x the routed expert width, so r_l = h_l + y is what the layer's
    experts' output is added to (docs/architecture.md, "Exchanges"). `side` (set by assign-groups,
    absent before it): `"attention"` runs it on the A-ranks of the layer's attention group, `"ffn"`
    on the F-ranks of its FFN group, which receive norm(h) through the layer's M2N and return y
    inside its N2M (docs/plan-format.md, `dense_ffn`). partition-components leaves it in the
    attention stage; fuse-exchange moves an FFN-side one into the layer's FFN stage (a dense layer
    gets one of its own, fed by an M2N without ids / gates), where its output starts the N2M vector.

    ```mlir
    %s = moe.dense_ffn %hn w1(%a) w3(%b) w2(%c) {ffn_hidden = 32 : i64, layer = 1 : i64,
           num_shared_experts = 2 : i64, role = "shared"} : tensor<2x8x32xf32>,
           (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins F32Tensor:$x, F32Tensor:$w1, F32Tensor:$w3, F32Tensor:$w2,
                       Moe_I64Attr:$layer, StrAttr:$role, Moe_I64Attr:$ffn_hidden,
                       OptionalAttr<Moe_I64Attr>:$num_shared_experts,
                       OptionalAttr<StrAttr>:$side);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = [{
    $x `w1` `(` $w1 `)` `w3` `(` $w3 `)` `w2` `(` $w2 `)` attr-dict `:` type($x) `,`
    `(` type($w1) `,` type($w3) `,` type($w2) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def Moe_HeadOp : Moe_Op<"head", [Pure]> {
  let summary = "language-model head: logits = x W, W [hidden, vocab]";
  let arguments = (ins F32Tensor:$x, F32Tensor:$weight);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x `,` $weight attr-dict `:` type($x) `,` type($weight) `->` type($result)";
  let hasVerifier = 1;
}

def Moe_StageOp : Moe_Op<"stage", [IsolatedFromAbove]> {
  let summary = "one side of one layer (attention or ffn), outlined at the partition cut";
  let description = [{
    `side` is `attention` or `ffn` (also `embedding` and `head`, which run on the attention side by
    default). The region's block arguments are the stage's inputs; `moe.yield` returns its outputs.
    The residual stream crosses the cut explicitly as an input and an output. `group` (set by
    assign-groups) is the index of the group of its side that runs it: layer l on group l mod p.
    `on` (embedding and head stages only, set by assign-groups' embedding-side and head-side):
    `"attention"` runs the stage on that attention group, `"ffn"` on the FFN group of that index
    (docs/plan-format.md, "FFN-side embedding and head").
  }];
  let arguments = (ins StrAttr:$side, Moe_I64Attr:$layer, OptionalAttr<Moe_I64Attr>:$group,
                       OptionalAttr<StrAttr>:$on, Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $side `layer` $layer (`group` $group^)? (`on` $on^)? `(` $inputs `)` `:`
    functional-type($inputs, $outputs)
    attr-dict-with-keyword
    $body
  }];
  let hasVerifier = 1;
}

def Moe_YieldOp : Moe_Op<"yield", [Pure, Terminator, HasParent<"StageOp">, ReturnLike]> {
  let summary = "returns a stage's outputs";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

def Moe_M2NOp : Moe_Op<"m2n", [AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "M2N exchange: A-workers of a group send tokens to the F-workers of a layer";
  let description = [{
    Each A-rank sends every F-rank of `dst_group` the tokens with at least one expert there: count,
    ascending token ids, normalised activations, and per token only the receiver's expert ids and gate
    weights (docs/architecture.md, "Exchanges"). Results are the same values as seen on the F side.
    When the FFN stage it feeds holds an FFN-side moe.dense_ffn (assign-groups' dense-side /
    shared-experts-side), every token also goes to its home F-rank (sequence s -> position
    s mod D_F of `dst_group`), with no expert ids if none of its experts is there. A dense layer's
    M2N has no `ids` / `gates` (no routing): each token goes to its home F-rank only.

    ```mlir
    %x1, %i1, %g1 = moe.m2n %x, %ids, %gates {dst_group = 0 : i64, layer = 1 : i64, src_group = 1 : i64}
        : tensor<16x32xf32>, tensor<16x6xi64>, tensor<16x6xf32> -> tensor<16x32xf32>, tensor<16x6xi64>, tensor<16x6xf32>
    %d = moe.m2n %xn {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64} : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins F32Tensor:$x, Optional<I64Tensor>:$ids, Optional<F32Tensor>:$gates,
                       Moe_I64Attr:$layer, Moe_I64Attr:$src_group, Moe_I64Attr:$dst_group);
  let results = (outs F32Tensor:$x_out, Optional<I64Tensor>:$ids_out, Optional<F32Tensor>:$gates_out);
  let assemblyFormat = [{
    $x (`,` $ids^ `,` $gates)? attr-dict `:` type($x) (`,` type($ids)^ `,` type($gates))? `->`
    type($x_out) (`,` type($ids_out)^ `,` type($gates_out))?
  }];
  let hasVerifier = 1;
}

def Moe_N2MOp : Moe_Op<"n2m"> {
  let summary = "N2M exchange: F-workers send expert outputs to the A-workers of the next layer";
  let description = [{
    Per token, the sum over the sender's local experts of g_e * E_e(x) in ascending expert id; the
    receiver adds the vectors of all F-ranks in ascending rank order onto the residual.
  }];
  let arguments = (ins F32Tensor:$y, Moe_I64Attr:$layer, Moe_I64Attr:$src_group, Moe_I64Attr:$dst_group);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$y attr-dict `:` type($y) `->` type($result)";
  let hasVerifier = 1;
}

def Moe_HomeTransferOp : Moe_Op<"home_transfer"> {
  let summary = "FFN-side embedding / head transfer: token rows between A-ranks and home F-ranks";
  let description = [{
    With assign-groups' embedding-side / head-side = ffn, the embedding or the final norm + head
    runs on an FFN group, each sequence s on its home F-rank (position s mod D_F). `kind =
    "embedding"`: x_0 from FFN group `src_group` to the A-rank of each sequence in attention group
    `dst_group`; `kind = "head"`: x_L from attention group `src_group` to the home F-ranks of FFN
    group `dst_group`. Every A-rank exchanges one message (count, token ids, rows) with every
    F-rank of the group, zero-token ones included (docs/plan-format.md, "FFN-side embedding and
    head"). The result is the same value as seen by the receiver.

    ```mlir
    %x0 = moe.home_transfer %e {dst_group = 0 : i64, kind = "embedding", src_group = 0 : i64}
        : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    ```
  }];
  let arguments = (ins F32Tensor:$x, StrAttr:$kind, Moe_I64Attr:$src_group, Moe_I64Attr:$dst_group);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def Moe_ResidualOp : Moe_Op<"residual"> {
  let summary = "residual route: h of layer l from A-rank i of group src to A-rank i of group dst";
  let arguments = (ins F32Tensor:$h, Moe_I64Attr:$layer, Moe_I64Attr:$src_group, Moe_I64Attr:$dst_group);
  let results = (outs F32Tensor:$result);
  let assemblyFormat = "$h attr-dict `:` type($h) `->` type($result)";
  let hasVerifier = 1;
}

#endif // DISAGMOE_MOE_OPS
