//===- Passes.td - the disagmoe pipeline passes ------------*- tablegen -*-===//
//
// One pass per stage of the data path (docs/architecture.md, "The data path"), each with its
// options. Generated into pass classes (`-gen-pass-decls`) and registered by `disagmoe-opt` and the
// `disagmoe` CLI.
//
//===----------------------------------------------------------------------===//

#ifndef DISAGMOE_PASSES
#define DISAGMOE_PASSES

include "mlir/Pass/PassBase.td"

def NormalizeOnnx : Pass<"normalize-onnx", "mlir::ModuleOp"> {
  let summary = "Rewrite exporter spellings of one computation to the one form raising matches";
  let description = [{
    The Normalize stage of raising (normalize -> fold -> match), run between import and
    raise-onnx-to-moe: rewrite patterns on `onnx.node` (passes/raise/normalize/), applied greedily.
    Drops Identity and a Cast whose `to` is its input's element type (Hugging Face's dtype round
    trips in an fp32 export: RMSNorm's `x.to(torch.float32)` ... `.to(input_dtype)`, softmax's
    `dtype=torch.float32` then `.to(q.dtype)`); rewrites Reciprocal(Sqrt(x)) and Pow(x, -0.5) to
    Div(1, Sqrt(x)) and Mul(x, x) to Pow(x, 2), the forms torch.onnx.export writes for
    torch.rsqrt and x.pow(2), which the RMSNorm matcher accepts; and MatMul(Mul(a, c1), Mul(b, c2))
    with scalar constants to Mul(MatMul(a, b), c1 * c2), torch's scaled_dot_product_attention
    symbolic (q and k each scaled by sqrt(scale)). The newer exporters' spellings are rewritten
    to the opset-13 ones (NewerOpsetForms.cpp, DecomposeAttention.cpp): Reduce*-18's axes input
    to the attribute, Split-18's num_outputs to sizes, RMSNormalization-23, onnxruntime's
    SimplifiedLayerNormalization and com.microsoft.SkipSimplifiedLayerNormalization to the
    TorchScript RMSNorm chain (plus the residual Add), a 4-D Attention-23 to
    Softmax(Q K^T * scale + mask) V with its causal mask as Trilu(-inf, 1), and RotaryEmbedding
    (com.microsoft and opset 23) whose tables are plain RoPE at positions 0..S-1 to Hugging Face's
    rotate-half chain (DecomposeRotaryEmbedding.cpp), and com.microsoft.GroupQueryAttention with
    separate q/k/v and no KV cache into head split, RoPE, repeat_kv and Attention-23
    (DecomposeGroupQueryAttention.cpp). Hugging Face's GPT-OSS training branch, the loop over
    `expert_hit = greater(mask.sum(), 0).nonzero()`, is unrolled by the exporter into
    Split(Transpose(NonZero(hit))); a split into as many indices as `hit` has flags (every expert
    hit by the trace) is the constants 0..N-1 wherever the graph runs
    (FoldExhaustiveNonZeroSplit.cpp), and Gather(W, constant e) on a stacked weight becomes a
    reference to W's row block e (FoldWeightGather.cpp). A float16 / bfloat16 export is computed in
    fp32 (WidenLowPrecision.cpp): its weights are read as f32 with their bytes' `stored_type`
    (exact), every float16 / bfloat16 result, constant and function type becomes f32, and a Cast to
    float16 / bfloat16 becomes a Cast to float, so the export's roundings to that dtype are not
    performed (what PyTorch computes for the model in float32 on the rounded weights). Each other
    pattern is exact or rounding-equivalent and checks its constants exactly; a Cast to another
    type, a Pow with another exponent, a Mul of two different values are kept.
  }];
}

def FoldOnnxConstants : Pass<"fold-onnx-constants", "mlir::ModuleOp"> {
  let summary = "Fold every subgraph of known values into Constant nodes at the static shape";
  let description = [{
    The Fold stage of raising (normalize -> fold -> match), between normalize-onnx and
    raise-onnx-to-moe (passes/raise/fold/): each `onnx.node` whose inputs are all known (Constant
    nodes, integer and boolean initializers with values, static shapes read by Shape) is evaluated
    on the host (ConstantEvaluator.h: elementwise arithmetic, comparisons and logic with
    broadcasting, Where, Cast, reshapes, Expand, Transpose, Concat, Slice, Gather, Range,
    ConstantOfShape, Trilu, Shape) and replaced by a `Constant` node of the same name. Causal and
    sliding-window masks, built by Trilu, by comparisons of positions or by `masked_fill`, thus
    become dense constants that the matcher recognises by value. Float initializers (parameters)
    and transcendental ops (RoPE's Cos/Sin) are not folded, nor a result of more than
    `max-elements` values. Then the normalize patterns run again, for those whose constants were
    computed from shapes (the scaled_dot_product_attention scales).
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"int64_t(1) << 24",
           "Most values of one folded result">,
  ];
}

def RaiseOnnxToMoe : Pass<"raise-onnx-to-moe", "mlir::ModuleOp"> {
  let summary = "Recognise embedding, RMSNorm, attention, router, experts and head in an ONNX graph";
  let description = [{
    Matches the `onnx.node` graph by structure (never by tensor names: constant folding renames
    weights to `onnx::MatMul_<n>`) and replaces each component with one `moe` op whose attributes
    hold the hyper-parameters read from the graph (head counts from the projection widths and the
    Reshape constants, RoPE base from the inverse-frequency constant, top-k from TopK's K, ...).
    Fails with an error naming the node when an op outside the supported set appears, when the
    graph has no MoE layer, when a dispatch is baked from the traced batch
    (DispatchDataflowCheck.h), when a router selects experts on sigmoid scores (DeepSeek-V3's
    DeepseekV3TopkRouter, not a moe.router scoring: SigmoidRouterCheck.h), or when Hugging Face's
    loop over the experts hit was traced with an expert missing (FoldExhaustiveNonZeroSplit.cpp).

    The match stage of raising: one rewrite pattern per component variant, each rooted at its
    anchor op (passes/raise/patterns/), applied in three phases; then the residual stream is
    assembled (layers numbered, roles set) and every node must have a role
    (passes/raise/ResidualStream.h, ComponentCoverage.h). With `match-only`, only the patterns
    run and every failure they recorded is an error: the per-pattern lit tests.
  }];
  let options = [
    Option<"matchOnly", "match-only", "bool", /*default=*/"false",
           "apply the component patterns only (no assembly, no legality check); norms and dense "
           "FFNs keep layer -1 and an empty role">
  ];
  let dependentDialects = ["disagmoe::moe::MoeDialect", "mlir::arith::ArithDialect"];
}

def PartitionComponents : Pass<"partition-components", "mlir::ModuleOp"> {
  let summary = "Outline every layer into an attention stage and an FFN stage";
  let description = [{
    Each layer's attention-side ops (norms, attention, residual add, router) move into a
    `moe.stage "attention"` region and its experts into a `moe.stage "ffn"` region; embedding and
    head get stages of their own. Values crossing the cut (the residual stream, the normalised
    activations, the routing) become explicit stage inputs and outputs.
  }];
  let dependentDialects = ["disagmoe::moe::MoeDialect"];
}

def AssignGroups : Pass<"assign-groups", "mlir::ModuleOp"> {
  let summary = "Interleave layers over p groups per side: group g holds layers g, g+p, g+2p, ...";
  let description = [{
    Sets `group` on every `moe.stage`: the attention and FFN stages of layer l run on group
    l mod p of their side (DisagMoE, seeds/000, "interleaved layer assignment";
    docs/architecture.md, "Terms"). The embedding runs with layer 0 (group 0) and the head where the
    last layer's output arrives (group L mod p = 0). Rejects a p that does not divide the number of
    layers (dense layers count).

    Always-on FFNs (`moe.dense_ffn`) get a `side` attribute: `dense-side` for the FFN of dense
    layers (DeepSeek's first_k_dense_replace), `shared-experts-side` for shared experts; each is
    `attention` (default: the A-ranks of the layer's attention group compute it before the residual
    route) or `ffn` (the F-ranks of the layer's FFN group compute it: norm(h) travels in the
    layer's M2N, each token to F-rank (sequence mod D_F) of the group, and the output returns in
    that F-rank's N2M; docs/plan-format.md, `dense_ffn`). `embedding-side` and `head-side` set
    `on` of the embedding stage and of the head stage (final norm and head): `attention` (default)
    or `ffn`, the FFN group of the same index, whose F-ranks compute the embedding rows of their
    home tokens and send x_0 to the A-ranks / receive x_L from them and compute the logits
    (docs/plan-format.md, "FFN-side embedding and head"). Any other value is an error.
  }];
  let options = [
    Option<"groups", "p", "int64_t", /*default=*/"1",
           "Number of groups p per side (layer l runs on group l mod p)">,
    Option<"denseSide", "dense-side", "std::string", /*default=*/"\"attention\"",
           "Where dense layers' FFNs run: attention or ffn">,
    Option<"sharedExpertsSide", "shared-experts-side", "std::string", /*default=*/"\"attention\"",
           "Where shared experts run: attention or ffn">,
    Option<"embeddingSide", "embedding-side", "std::string", /*default=*/"\"attention\"",
           "Where the embedding runs: attention or ffn (group 0 of that side)">,
    Option<"headSide", "head-side", "std::string", /*default=*/"\"attention\"",
           "Where the final norm and head run: attention or ffn (group L mod p of that side)">
  ];
}

def FuseExchange : Pass<"fuse-exchange", "mlir::ModuleOp"> {
  let summary = "Replace each layer's dispatch/combine with moe.m2n, moe.n2m and moe.residual";
  let description = [{
    The routed values that an attention stage hands to its FFN stage go through `moe.m2n`; the FFN
    output goes back through `moe.n2m` to the next layer's attention group, and the residual stream
    through `moe.residual`; the receiver adds them (docs/architecture.md, "Exchanges"). Source and
    destination groups are the `group` attributes that assign-groups put on the stages.
  }];
  let dependentDialects = ["disagmoe::moe::MoeDialect", "mlir::arith::ArithDialect"];
}

def PlaceGroups : Pass<"place-groups", "mlir::ModuleOp"> {
  let summary = "Assign ranks to the attention and FFN groups and experts to F-ranks";
  let description = [{
    Attention group g gets `attn-ranks` consecutive ranks, then FFN group g gets `ffn-ranks`; the
    experts of each layer are split contiguously over the F-ranks of its group (expert e on F-rank
    e * ffn_ranks / num_experts), or, with `routing-profile`, placed from the measured per-expert
    loads by longest-processing-time packing refined by moves and swaps (placement/solver/
    ExpertPlacement.h), each F-rank holding at most ceil(E / F) experts like the contiguous split.
    Writes the `moe.placement` module attribute that plan emission reads, with the most loaded
    F-rank's share of each layer's profiled load under both placements.
  }];
  let options = [
    Option<"attnRanks", "attn-ranks", "int64_t", /*default=*/"2", "A-ranks per attention group">,
    Option<"ffnRanks", "ffn-ranks", "int64_t", /*default=*/"2", "F-ranks per FFN group">,
    Option<"routingProfile", "routing-profile", "std::string", /*default=*/"\"\"",
           "Routing profile (docs/routing-profile.md): place each layer's experts to minimise the "
           "most loaded F-rank instead of splitting them contiguously">
  ];
}

def ExchangeVolume : Pass<"exchange-volume", "mlir::ModuleOp"> {
  let summary = "Annotate each M2N with its expected bytes against an EP all-to-all";
  let description = [{
    For a placed module, attaches to every `moe.m2n` a `volume` dictionary: the expected number of
    destination F-ranks per token under uniform top-k routing, E[D] = sum_r [1 - C(E - E_r, k) /
    C(E, k)], and the bytes per micro-batch of M2N, N2M and the residual route beside the
    conventional expert-parallel all-to-all dispatch + combine (2 * T * k * H * b), and their ratio
    (formulas and sources in passes/exchange/ExchangeVolume.h).
  }];
  let options = [
    Option<"bytesPerElement", "bytes-per-element", "int64_t", /*default=*/"4",
           "Bytes per activation element on the wire (4: fp32 CPU, 2: bf16 GPU)">
  ];
}

def AfPipeSchedule : Pass<"afpipe-schedule", "mlir::ModuleOp"> {
  let summary = "Build the AF-Pipe training schedule of a placed module as `afpipe` IR";
  let description = [{
    Calls the plain C++ AF-Pipe library (passes/schedule/AfPipe.h) on the model shape read from the
    IR, the placement (`moe.placement`, one pipeline replica) and the compiled [batch, seq] as one
    micro-batch, and appends the verified schedule to the module as one `afpipe.schedule`: per group
    role a program of explicit forward and backward instructions per component and micro-batch on
    three streams (the ring A0 -> F0 -> A1 -> ... with v = L/p virtual stages, warm-up, steady state,
    cool-down, gradient all-reduce overlapped with the tail, optimizer step). Instructions are sized
    by the roofline of `cluster` (default H800 nodes). A model the cost model cannot size (e.g.
    multi-head latent attention) gets no schedule and an `afpipe.unscheduled` module attribute
    saying why. Errors: no placement, micro-batches < 2p or > 4096 (kMaxMicroBatches), more than
    max(4, 2 x batch) A-ranks (sequence s runs on A-rank s mod dA), an unreadable cluster, a failed check.
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"0",
           "Micro-batches per step, each the compiled [batch, seq] (0: 2p; in [2p, 4096])">,
    Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
           "Cluster YAML whose roofline sizes the instructions (empty: H800 nodes of 8 GPUs)">
  ];
  let dependentDialects = ["::disagmoe::afpipe::AfpipeDialect"];
}

def AfPipeVerify : Pass<"afpipe-verify", "mlir::ModuleOp"> {
  let summary = "Verify every `afpipe.schedule`: matched exchanges, no hang, no idle rank, memory fit";
  let description = [{
    Runs runtime/plan/Schedule.h's verifySchedule on each schedule (with the placement's world size
    when the module is placed): every send matched by exactly one receive of the same size in the
    same order per pair of ranks, an untimed execution in which no rank waits forever, compute work
    on every rank, peak memory within `capacity_bytes`. The error is reported on the instruction
    it names.
  }];
}

#endif // DISAGMOE_PASSES
