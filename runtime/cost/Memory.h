//===- Memory.h - per-GPU training memory: one model for planner and verifier -*- C++ -*-===//
//
// Bytes one GPU holds at its peak during a training step: weights, gradients, optimizer state and
// the activations of the micro-batches in flight. The placement solver (passes/placement/solver)
// and the plan verifier both call these functions, so they agree by construction.
//
// Sources:
//  - Mixed-precision Adam keeps bf16 weights (2 bytes/param), fp32 gradients (4, DESIGN.md:
//    "reductions of gradients are fp32") and fp32 master weights + Adam moments (12): Rajbhandari
//    et al. 2020, "ZeRO", §3.1 (K = 12); ZeRO stage 1 shards the 12 bytes over the data-parallel
//    replicas of the parameter (§5.1, P_os).
//  - Activations per token and layer follow the method of Korthikanti et al. 2022, "Reducing
//    Activation Recomputation in Large Transformer Models", §4.1 (every tensor kept for the
//    backward, bf16), with FlashAttention keeping only the output and the fp32 log-sum-exp per
//    head instead of the s x s scores (Dao et al. 2022, §3.1); full recomputation keeps only the
//    stage input, 2h bytes per token (Korthikanti §4.3, Chen et al. 2016).
//  - In-flight micro-batches: a 1F1B-style schedule holds at most the pipeline depth
//    (here the ring of 2p stages) of micro-batches' activations (Narayanan et al. 2021, §2.2.1).
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_COST_MEMORY_H
#define DISAGMOE_RUNTIME_COST_MEMORY_H

#include "runtime/cost/ModelShape.h"

#include <string>
#include <vector>

namespace disagmoe::cost {

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

/// Activation bytes per token and layer on the attention side: norms' inputs and outputs (8h),
/// Q, K, V and the attention output (4q + 4kv), log-sum-exp (4 * heads), router logits and
/// probabilities in fp32 (8E), shared/dense SwiGLU intermediates (8 * I); with full
/// recomputation 2h.
double attentionActivationBytesPerToken(const ModelShape &m, int64_t layer, bool recompute);
/// Activation bytes per (token, expert) pair on the FFN side: the received input (2h) and the
/// SwiGLU intermediates x W1, x W3, silu, product (8 * I); with full recomputation 2h.
double expertActivationBytesPerPair(const ModelShape &m, int64_t layer, bool recompute);

/// One A-GPU of a group holding `layers`, optionally the embedding and/or the head (whose bf16
/// logits of one micro-batch, 2 * vocab bytes per token, count as activations); its attention
/// weights are replicated over `dpDegree` ranks (the group's A-ranks times pipeline replicas).
/// `tokensPerMicrobatch`: tokens this rank processes per micro-batch; `inflight` micro-batches.
MemoryBreakdown attentionGpuMemory(const ModelShape &m, const std::vector<int64_t> &layers,
                                   bool holdsEmbedding, bool holdsHead, int64_t dpDegree,
                                   double tokensPerMicrobatch, int64_t inflight, bool recompute,
                                   const MemoryOptions &opts = {});

/// One F-GPU of a group holding `expertsPerRank` experts of each MoE layer in `layers`,
/// replicated over `dpDegree` pipeline replicas; `pairsPerMicrobatch`: (token, expert) pairs
/// this rank computes per micro-batch and layer.
MemoryBreakdown ffnGpuMemory(const ModelShape &m, const std::vector<int64_t> &layers,
                             int64_t expertsPerRank, int64_t dpDegree, double pairsPerMicrobatch,
                             int64_t inflight, bool recompute, const MemoryOptions &opts = {});

} // namespace disagmoe::cost

#endif
