//===- Memory.h - per-GPU training memory: one model for planner and verifier -*- C++ -*-===//
//
// Bytes one GPU holds at its peak during a training step: weights, gradients, optimizer state and
// the activations of the micro-batches in flight. The placement solver (passes/placement/solver)
// and the plan verifier both call these functions, so they agree by construction.
//
// Sources:
//  - Mixed-precision Adam keeps bf16 weights (2 bytes/param), fp32 gradients (4; gradients are
//    reduced in fp32, docs/architecture.md, "Training semantics and numerics") and fp32 master
//    weights + Adam moments (12): Rajbhandari et al. 2020, "ZeRO", §3.1 (K = 12); ZeRO stage 1
//    shards the 12 bytes over the data-parallel replicas of the parameter (§5.1, P_os).
//  - Activations per token and layer follow the method of Korthikanti et al. 2022, "Reducing
//    Activation Recomputation in Large Transformer Models", §4.1 (every tensor kept for the
//    backward, bf16; their s*b*h*(34 + 5*a*s/h) per layer), with FlashAttention keeping only the
//    output and the fp32 log-sum-exp per head instead of the s x s scores (Dao et al. 2022, §3.1):
//    FlashAttention's backward recomputes the scores, so Korthikanti's selective recomputation of
//    the attention core (which removes the 5*a*s/h term, §5) is already built in.
//  - Three recomputation levels per side (Recomputation):
//    None      every tensor the backward reads is kept;
//    Selective Korthikanti §5's principle (recompute what is large to keep and cheap to compute)
//              applied to the parts FlashAttention leaves: RMSNorm outputs are recomputed from the
//              kept norm inputs, SwiGLU's silu(x W1) and silu(x W1) * x W3 from the kept x W1 and
//              x W3; elementwise work only (Roofline.h, selectiveRecomputeFlops*);
//    Full      only the stage input is kept and the stage's forward runs again before its backward
//              (Korthikanti §4.3, Chen et al. 2016): an A stage keeps its layer input (2h per
//              token); an F stage keeps the M2N buffer it received: each token once per F-rank
//              (id, bf16 vector, count: 2h + 16 bytes per token-rank pair) and 12 bytes per
//              token-expert pair (expert id, gate), the exchange format of Roofline.h;
//    Redispatch (F side only) the F stage keeps nothing between its forward and its backward: the
//              A side sends the layer's M2N again before the F stage's backward, which recomputes
//              the experts from it. This is the MoE layer recomputed through its exchange, as
//              Megatron-Core's --moe-layer-recompute checkpoints the router, token dispatcher and
//              experts together (megatron/core/transformer/moe/moe_layer.py, MoELayer.forward) and
//              MindSpeed's --moe-zero-memory trades re-communication for memory. The A side can
//              send it again: at None it keeps the dispatch input (the second norm's output and the
//              routing), at Selective it recomputes that norm (4h FLOP per token more), at Full it
//              keeps the M2N payload besides the layer input (2h + 12k bytes per token more, so
//              it need not recompute the layer before the F backward). Cost: one more forward of
//              the experts and one more M2N per layer (Roofline.h, ExchangeBytes::m2n).
//    With Full and Redispatch the layer being recomputed holds its None-level activations of one
//    micro-batch during its backward (a transient of one layer, counted once per GPU).
//  - Context parallelism (Roofline.h, kvRingChunkBytes): an A-rank of a CP group of cp holds s/cp
//    tokens of a sequence per micro-batch, so every per-token term above (and the head's logits,
//    the loss being computed per sequence chunk as Megatron-Core does under CP) is counted for s/cp
//    tokens: the caller passes that token count. The ring adds a transient of one layer:
//    contextParallelBufferBytes.
//  - In-flight micro-batches: AF-Pipe (passes/schedule/AfPipe.h) lets a group start micro-batch j
//    only after micro-batch j - W finished its backward there; with the smallest window the ring
//    runs with, W = 2p (Narayanan et al. 2021 §2.2: 1F1B holds at most the pipeline depth), each
//    of the W micro-batches holds the activations of all v = ceil(L/p) of the group's layers at the
//    peak (the oldest finishes its forward through the group before its backward returns), so a
//    group holds min(m, 2p) x v layer-activations of one micro-batch.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_COST_MEMORY_H
#define DISAGMOE_RUNTIME_COST_MEMORY_H

#include "runtime/cost/ModelShape.h"

#include <string>
#include <vector>

namespace disagmoe::cost {

/// Activation recomputation of one side (see the header comment for what each level keeps).
/// Ordered lightest first: each level keeps no more memory and costs no less time than the last.
enum class Recomputation { None, Selective, Full, Redispatch };
const char *recomputationName(Recomputation r); ///< "none", "selective", "full", "redispatch"

struct MemoryOptions {
  double weightBytes = 2;     ///< per parameter (bf16)
  double gradientBytes = 4;   ///< per parameter (fp32)
  double optimizerBytes = 12; ///< per parameter (fp32 master, Adam m and v)
  bool zero1 = true;          ///< shard optimizer state over the parameter's DP replicas
};

struct MemoryBreakdown {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0; ///< bytes
  double total() const { return weights + gradients + optimizer + activations; }
  /// Name of the largest term: "weights", "gradients", "optimizer state" or "activations".
  std::string dominant() const;
};

/// Activation bytes per token and layer on the attention side (q = heads * head_dim,
/// kv = kv_heads * head_dim, E routed experts, I shared/dense SwiGLU intermediate):
///   None      norms' inputs and outputs (8h), Q, K, V and the attention output (4q + 4kv),
///             log-sum-exp (4 * heads), router logits and probabilities in fp32 (8E), shared/dense
///             SwiGLU x W1, x W3, silu, product (8I);
///   Selective the norms' inputs only (4h) and x W1, x W3 only (4I), the rest as None;
///   Full      the layer input, 2h (Redispatch is an F-side level; here it reads as Full).
/// `ffnR`: the FFN side's level; with Redispatch an A side at Full also keeps the M2N payload of
/// MoE layers, 2h + 12k (k = top_k).
double attentionActivationBytesPerToken(const ModelShape &m, int64_t layer, Recomputation r,
                                        Recomputation ffnR = Recomputation::None);
/// bool form kept for callers that choose between None (false) and Full (true).
inline double attentionActivationBytesPerToken(const ModelShape &m, int64_t layer, bool recompute) {
  return attentionActivationBytesPerToken(m, layer,
                                          recompute ? Recomputation::Full : Recomputation::None);
}
/// Activation bytes one F-rank keeps for MoE layer `layer` and one micro-batch that brings it
/// `tokens` tokens (token-rank pairs) and `pairs` (token, expert) pairs (I = expert_hidden):
///   None      per pair: the expert's gathered input (2h) and x W1, x W3, silu, product (8I);
///   Selective per pair: 2h + 4I (silu and product recomputed);
///   Full      the received M2N buffer: (2h + 16) per token + 12 per pair;
///   Redispatch 0.
double expertActivationBytes(const ModelShape &m, int64_t layer, Recomputation r, double tokens,
                             double pairs);
/// Per-pair form (None: 2h + 8I; Full: 2h per pair, an upper bound of the received buffer when
/// every pair is counted as a token): kept for runtime/sim's per-pair accounting.
double expertActivationBytesPerPair(const ModelShape &m, int64_t layer, bool recompute);

/// Ring-attention buffers of one A-rank with context parallelism cp > 1 (0 for cp = 1), a transient
/// of the one layer computing: the backward holds the K/V chunk being sent and the one being
/// received and the same two of dK/dV (Roofline.h, TE's AttnFuncWithCPAndKVP2P), all bf16:
///   4 * max over `layers` of kvRingChunkBytes(m, l, seqLen, cp)   bytes.
/// (The forward holds two K/V chunks, fewer.) Bytes, per GPU.
double contextParallelBufferBytes(const ModelShape &m, const std::vector<int64_t> &layers,
                                  int64_t seqLen, int64_t cp);

/// Activations of the layers in flight: `inflight` micro-batches each hold every one of `layers`
/// at level r; with Full/Redispatch plus the one layer being recomputed at level None (the
/// largest). `ffnR` is the FFN side's level (see attentionActivationBytesPerToken). One A-GPU of a
/// group holding `layers`, optionally the embedding and/or the head (whose bf16 logits of one
/// micro-batch, 2 * vocab bytes per token, count as activations); its attention weights are
/// replicated over `dpDegree` ranks (the group's A-ranks times pipeline replicas).
/// `tokensPerMicrobatch`: tokens this rank processes per micro-batch; `inflight` micro-batches.
MemoryBreakdown attentionGpuMemory(const ModelShape &m, const std::vector<int64_t> &layers,
                                   bool holdsEmbedding, bool holdsHead, int64_t dpDegree,
                                   double tokensPerMicrobatch, int64_t inflight, Recomputation r,
                                   Recomputation ffnR, const MemoryOptions &opts = {});

/// One F-GPU of a group holding `expertsPerRank` experts of each MoE layer in `layers`,
/// replicated over `dpDegree` pipeline replicas; `tokensPerMicrobatch`: tokens this rank receives
/// (token-rank pairs) and `pairsPerMicrobatch`: (token, expert) pairs it computes, per micro-batch
/// and layer.
MemoryBreakdown ffnGpuMemory(const ModelShape &m, const std::vector<int64_t> &layers,
                             int64_t expertsPerRank, int64_t dpDegree, double tokensPerMicrobatch,
                             double pairsPerMicrobatch, int64_t inflight, Recomputation r,
                             const MemoryOptions &opts = {});

} // namespace disagmoe::cost

#endif
