//===- AfPipe.h - the AF-Pipe schedule (plain C++ part of the schedule pass) -*- C++ -*-===//
//
// DisagMoE's AF-Pipe (seeds/000 §2.2; docs/architecture.md, "Terms", "The plan and the executor"):
// the ring A0 -> F0 -> A1 -> F1 -> ... -> A(p-1) -> F(p-1) -> A0 ... over the interleaved layers
// (group g holds layers g, g+p, ...; v = ceil(L/p) virtual stages), with the exchanges as
// first-class steps of a communication stream, so that every group overlaps a forward, a backward
// and an exchange.
//
// Per replica and micro-batch j, for each layer l (A = attention group l mod p, F = FFN group l mod
// p, N = the attention group of layer l+1, or the head group after the last layer):
//   forward   A: recv residual(l-1), n2m(l-1) -> attention fwd(l) -> send m2n(l) to F, residual(l)
//   to N
//             F: recv m2n(l) -> experts fwd(l) -> send n2m(l) to N
//   head      H: recv residual(L-1), n2m(L-1) -> head fwd -> head bwd (loss) -> backward sends
//   backward  N: after its attention bwd(l+1) (or head bwd): send n2m(l) bwd (dL/dy) to F,
//                residual(l) bwd (dL/dr) to A
//             F: recv n2m(l) bwd -> experts bwd(l) -> send m2n(l) bwd (dL/dx, dL/dg) to A
//             A: recv residual(l) bwd, m2n(l) bwd -> attention bwd(l)
//   update    after the last micro-batch's backward of layer l: all-reduce of layer l's attention
//             gradients over its data-parallel ranks (every A-rank of the group in every replica)
//             on the comm stream, overlapped with the remaining backward; expert gradients over the
//             replicas; then the optimizer step of each group.
// Dense layers have no F stage: N receives only the residual, computed with the dense FFN on A.
// Side options (Config::denseOnFfn etc., assign-groups): an FFN-side dense FFN / shared experts is
// a `dense_ffn` compute on F (a dense layer then has its M2N/N2M), an FFN-side embedding / head
// runs on F group 0 / L mod p with `embedding` / `head` messages both ways (docs/plan-format.md).
// Memory: a group starts micro-batch j's forward only after micro-batch j - W finished its backward
// there, which bounds activations in flight to W micro-batches. The ring needs W >= 2p; since the
// backward trip is twice the forward's and exchanges lengthen both, the default takes the largest
// of 8p, 6p, 4p, 3p, 2p that fits memory. Stream orders: list scheduling on the roofline times with
// the priority of an uncontended ring's tick (forward j + 2l, backward j + 2(L - l)); the comm
// stream in the order exchanges become ready (ScheduleBuilder.h); the result is verified.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_SCHEDULE_AFPIPE_H
#define DISAGMOE_PASSES_SCHEDULE_AFPIPE_H

#include "runtime/cost/GradSync.h"
#include "runtime/cost/Hardware.h"
#include "runtime/cost/Memory.h"
#include "runtime/cost/ModelShape.h"
#include "runtime/plan/Schedule.h"

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::afpipe {

/// Work of one layer per micro-batch (per rank; F side: the busiest F-rank).
struct LayerWork {
  bool moe = true;
  double attnFwdFlops = 0, attnBwdFlops = 0, attnActivationBytes = 0;
  double ffnFwdFlops = 0, ffnBwdFlops = 0, ffnActivationBytes = 0;
  /// Exchange bytes per (A-rank, F-rank) pair; the residual per A-rank (rank i -> rank i).
  double m2nBytes = 0, n2mBytes = 0, m2nBwdBytes = 0, n2mBwdBytes = 0, residualBytes = 0;
  /// Parameters per rank whose gradients are synchronised (attention side over r x dA ranks,
  /// experts over r; Config::gradSync says how).
  double attnGradParams = 0, ffnGradParams = 0;
  /// Weights, gradients and optimizer state per rank.
  double attnStaticBytes = 0, ffnStaticBytes = 0;
  /// The layer's dense FFN or shared experts run on the FFN side (Config::denseOnFfn /
  /// sharedOnFfn): a `dense_ffn` compute on the busiest F-rank (its home tokens, sequences
  /// s mod D_F), before the routed experts; a dense layer then has its own M2N/N2M (m2nBytes etc.,
  /// one destination per token). Their FLOPs, parameters and activations are not in attn*.
  bool alwaysOnFfn = false;
  double alwaysOnFwdFlops = 0, alwaysOnBwdFlops = 0, alwaysOnActivationBytes = 0;
  double alwaysOnGradParams = 0; ///< synchronised over the F-ranks of the group (replicated there)
};

/// Everything the schedule needs, independent of where it came from (a ModelShape through the
/// roofline, or a synthetic model in tests).
struct Workload {
  std::vector<LayerWork> layers;
  double headFwdFlops = 0, headBwdFlops = 0, headActivationBytes = 0, headGradParams = 0,
         headStaticBytes = 0;
  double embedGradParams = 0, embedStaticBytes = 0;
  /// Embedding / final norm + head on FFN group 0 / L mod p (Config::embeddingOnFfn / headOnFfn):
  /// x_0 goes F -> A (`embedding` message, dL/dx_0 back), x_L A -> F (`head`, dL/dx_L back); bytes
  /// per (A-rank, F-rank) pair, each token to or from its home F-rank only.
  bool embeddingOnFfn = false, headOnFfn = false;
  double embeddingBytes = 0, headBytes = 0;
  double modelFlops = 0; ///< training FLOPs of a step, all replicas, without recomputation
};

struct Config {
  int64_t replicas = 1, groups = 1, attnRanks = 1, ffnRanks = 1, microbatches = 2;
  int64_t seqLen = 4096;
  int64_t sequencesPerStep =
      0; ///< all replicas; per micro-batch per replica = this / (replicas * microbatches)
  /// Activation recomputation of each side (runtime/cost/Memory.h levels, as the placement chose
  /// them): memory per level from Memory.h, the recomputed forward in the backward's FLOPs
  /// (Roofline.h), and Redispatch's second M2N in the backward's A->F bytes.
  cost::Recomputation attnRecompute = cost::Recomputation::None;
  cost::Recomputation ffnRecompute = cost::Recomputation::None;
  int64_t attnNics = 0,
          ffnNics = 0; ///< NICs of each side (all replicas); 0: the cluster's per-GPU share
  double nicBandwidth = 0,
         pcieBandwidth = 0; ///< one NIC, one GPU's PCIe link (bytes/s), for the NIC shares
  int64_t inflight = 0;     ///< W; 0: the largest of 8p, 6p, 4p, 3p, 2p that fits memory
  double reserveBytes = 4e9;
  double computeEfficiency = 1;
  sched::Schedule::Sharing sharing = sched::Schedule::Sharing::Equal; ///< Schedule::sharing
  cost::MemoryOptions memory;
  /// Sides of the always-on components (assign-groups' dense-side, shared-experts-side,
  /// embedding-side, head-side; the plan's dense_ffn side and placement.embedding_side/head_side):
  /// false = attention side (default), true = FFN side, where each token runs on its home F-rank.
  bool denseOnFfn = false, sharedOnFfn = false, embeddingOnFfn = false, headOnFfn = false;
  /// Gradient synchronisation (reduction dtype, all-reduce or distributed optimizer); its
  /// distributedOptimizer must equal memory.zero1 (the sharded optimizer state it budgets).
  cost::GradSyncOptions gradSync;
  /// Where the groups' ranks sit (Layout).
  enum class Layout : uint8_t {
    /// Attention groups of every replica first (replica-major, group g of replica r at
    /// (r p + g) dA), then the FFN groups: attention GPUs fill the first nodes, every M2N/N2M
    /// that leaves a node crosses NICs.
    Separate,
    /// Replica by replica: replica r's attention groups, then its FFN groups, from rank
    /// r (p dA + p eF); a replica that fits a node exchanges M2N/N2M over NVLink, and A- and
    /// F-workers share that node's NICs (each GPU its own share).
    Packed
  };
  Layout layout = Layout::Separate;
};
const char *toString(Config::Layout l);
bool parseLayout(const std::string &name, Config::Layout &out);

/// The roofline workload of `model` under `config` (runtime/cost: Roofline.h, Memory.h).
Workload workloadFromModel(const cost::ModelShape &model, const cost::ClusterSpec &cluster,
                           const Config &config);

/// Hardware block of a schedule for `cluster`.
sched::Hardware hardwareOf(const cost::ClusterSpec &cluster);

/// Builds and verifies the AF-Pipe schedule, ranks as Config::layout places them. Returns false
/// with `error` (one line) on invalid input or a failed check.
bool buildAfPipe(const Workload &work, const sched::Hardware &hw, const Config &config,
                 sched::Schedule &out, std::string &error, bool verify = true);

} // namespace disagmoe::afpipe

#endif
