//===- Roofline.h - FLOPs and bytes of each component per micro-batch -*- C++ -*-===//
//
// Closed-form costs of the components of one layer, for training (docs/cost-model.md has the
// derivations). Units: FLOP (one multiply-add = 2 FLOP), bytes, tokens; bf16 activations on the
// wire (docs/architecture.md, "Training semantics and numerics": the cost model prices bf16
// activations).
//
// Sources of the formulas:
//  - Matmul FLOPs 2*m*n*k; forward FLOPs per token 2 * params + the attention score term:
//    Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §2.1 Table 1.
//  - Backward = 2 x forward; full activation recomputation adds one forward (training = 3x or 4x
//    forward): Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
//    Clusters Using Megatron-LM", §5.1 (eq. 3 and the text before it).
//  - Causal attention only computes the key positions j <= i (FlashAttention-2 skips masked
//    blocks: Dao 2023, §3.1.1), so the score term is 4 * heads * head_dim * P(s, w) per sequence
//    with P(s, w) = sum_{i=1..s} min(i, w) (~ s^2 / 2 for full attention: the s^2 term of the
//    DisagMoE roofline, papers.md "attention FLOPs ~ a1*s^2 + a2*s").
//  - SwiGLU experts (three matrices): Shazeer 2020, "GLU Variants Improve Transformer", eq. 6.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_COST_ROOFLINE_H
#define DISAGMOE_RUNTIME_COST_ROOFLINE_H

#include "runtime/cost/ModelShape.h"

namespace disagmoe::cost {

constexpr double kBf16Bytes = 2.0;

/// Key positions a causal sequence of length s attends to with window w (0 = full):
/// P(s, w) = sum_{i=1..s} min(i, w).
double causalPairs(int64_t seqLen, int64_t window);

/// Forward FLOPs of layer l's attention-side components for `sequences` sequences of `seqLen`:
/// projections 2*T*h*(q + 2*kv) + 2*T*q*h, scores 4*heads*head_dim*P(s, w) per sequence,
/// router 2*T*h*E, shared experts and dense FFN 6*T*h*I (T = sequences * seqLen tokens,
/// q = heads*head_dim, kv = kv_heads*head_dim).
struct AttentionFlops {
  double projections = 0, scores = 0, router = 0, sharedAndDense = 0;
  double total() const { return projections + scores + router + sharedAndDense; }
};
AttentionFlops attentionSideForwardFlops(const ModelShape &m, int64_t layer, double sequences,
                                         int64_t seqLen);

/// Forward FLOPs of layer l's routed experts for `tokens` tokens: 2 * expert_matrices * T * top_k *
/// h * I (6 T k h I for SwiGLU, 4 T k h I for non-gated experts).
double routedExpertForwardFlops(const ModelShape &m, int64_t layer, double tokens);

/// Forward FLOPs of the LM head: 2 * T * h * vocab (the embedding is a lookup: 0 FLOP).
double headForwardFlops(const ModelShape &m, double tokens);

/// Training FLOPs per forward FLOP: 3 (forward + backward), 4 with full recomputation.
double trainingMultiplier(bool recompute);

/// Forward FLOPs selective recomputation (Memory.h, Recomputation::Selective) repeats, elementwise
/// work only (counted as FLOPs although it is memory-bound, so the roofline never under-counts it):
/// attention side per token: both RMSNorm outputs, 4 FLOP per element (square, sum, scale by the
/// reciprocal root, weight): 8h; shared/dense SwiGLU silu(a) * b, 5 FLOP per element (sigmoid as
/// exp, add, divide; two multiplies): 5 * I.  Expert side: 5 * expert_hidden per (token, expert).
double selectiveRecomputeFlopsAttention(const ModelShape &m, int64_t layer, double tokens);
double selectiveRecomputeFlopsExpert(const ModelShape &m, int64_t layer, double pairs);

/// Context parallelism (CP) of degree cp: the sequence of a micro-batch split over cp A-ranks of
/// one node, ring attention with load-balanced causal chunks (Liu et al. 2023, "Ring Attention with
/// Blockwise Transformers", §3; Megatron-Core --context-parallel-size, whose CP splits the sequence
/// into 2*cp chunks and gives rank i chunks i and 2*cp-1-i so every rank does the same causal work,
/// megatron/core/utils.py get_batch_on_this_cp_rank). Per layer and micro-batch each rank passes
/// its K and V chunk around the ring in cp-1 steps over NVLink; one step moves
///   kvRingChunkBytes = 2 (K and V) * (s / cp) * kv_heads * head_dim * 2 (bf16)   bytes per GPU.
/// The backward passes K/V and their gradients dK/dV (twice the bytes per step): Transformer
/// Engine's AttnFuncWithCPAndKVP2P.backward circulates kv and dkv the same way.
double kvRingChunkBytes(const ModelShape &m, int64_t layer, int64_t seqLen, int64_t cp);

/// Seconds of one ring pass of the attention core on one GPU: the local block first, then cp-1
/// steps each computing on the chunk received while the next one is sent (the overlap of Ring
/// Attention §3: "overlapping the communication of key-value blocks with the computation of
/// blockwise attention"; Megatron-Core/TE issue the P2P send/recv of step i+1 before computing step
/// i). With load-balanced chunks every step does the same work, coreSeconds / cp, so
///   ringAttentionSeconds = coreSeconds / cp + (cp - 1) * max(coreSeconds / cp, chunkSeconds)
/// (the transfer is hidden when a step's compute outlasts it, exposed otherwise; cp = 1:
/// coreSeconds). coreSeconds: the GPU's score FLOPs (Roofline: 4 * heads * head_dim * P(s, w) of
/// its share) / peak; chunkSeconds: kvRingChunkBytes (x2 in the backward) / NVLink bandwidth per
/// direction.
double ringAttentionSeconds(double coreSeconds, double chunkSeconds, int64_t cp);

/// Probability that a token's top-k experts (a uniformly random k-subset of `experts`) include at
/// least one of the `held` experts of an F-rank: 1 - C(E - held, k) / C(E, k).
double rankHitProbability(int64_t experts, int64_t topK, int64_t held);

/// Expected number of distinct F-ranks that one token's top-k experts land on, with `experts`
/// experts spread over `ranks` ranks (rank j holds floor/ceil of experts/ranks, contiguous) and
/// the k experts a uniformly random k-subset: sum_j (1 - C(E - e_j, k) / C(E, k)).
/// (The M2N sends a token once to each F-rank holding one of its experts: docs/architecture.md,
/// "Exchanges".)
double expectedDistinctRanks(int64_t experts, int64_t topK, int64_t ranks);

/// Bytes one layer-visit of one micro-batch of `tokens` tokens moves through the NICs of each
/// side, forward + backward, per direction (NICs are full duplex: the larger direction bounds):
///  A side sends  M2N (8 + 2h + 8 per token-rank pair, 12 per token-expert pair: id, bf16
///                activations, count, expert id + gate) and the backward of N2M (dL/dy, 8 + 2h
///                per token-rank pair);
///  A side receives N2M (8 + 2h per pair) and the backward of M2N (dL/dx, 8 + 2h per pair, and
///                dL/dg, 4 per token-expert);
///  F side: the mirror image. With more than one group per side the residual route (8 + 2h per
///  token, forward and backward) also leaves and enters the attention side.
/// Dense layers move nothing.
struct ExchangeBytes {
  double attnSend = 0, attnRecv = 0, ffnSend = 0, ffnRecv = 0;
  double m2n = 0; ///< the forward M2N alone (part of attnSend and ffnRecv): what Redispatch resends
  double attnMax() const { return attnSend > attnRecv ? attnSend : attnRecv; }
  double ffnMax() const { return ffnSend > ffnRecv ? ffnSend : ffnRecv; }
};
ExchangeBytes exchangeBytes(const ModelShape &m, int64_t layer, double tokens, int64_t ffnRanks,
                            bool residualCrossesNetwork);

/// Arithmetic intensity of a side: its training FLOPs per byte it sends or receives (the larger
/// direction), the x-axis of the DisagMoE roofline; compare with turningPoint() scaled by the
/// side's GPU:NIC ratio.
double flopsPerByte(double flops, double bytes);

} // namespace disagmoe::cost

#endif
