// One rank's part of a training step over the plan `disagmoe compile` emits today (forward programs
// per role; docs/training.md). For each micro-batch the rank runs its role's program forward,
// keeping every activation, computes the causal LM loss on the head group, then walks the same
// program in REVERSE running each instruction's backward (docs/architecture.md "Exchanges",
// Backward):
//
//   head, rms_norm final_norm   dL/dlogits -> dL/dx_L (weight gradients of the head and norm)
//   n2m_recv l (next group)     send dL/dy = dL/dx_{l+1} rows to every F-rank of layer l, for the
//                               tokens that F-rank sent (zero-token messages too)
//   residual_recv l             send dL/dr_l = dL/dx_{l+1} back to A-rank i of layer l's group
//   n2m_send l (F-rank)         receive those dL/dy
//   experts l (F-rank)          per local expert (ascending id): dL/dE_e = g_e dL/dy, SwiGLU
//   backward
//                               (dW1, dW3, dW2 accumulate over every A-rank's tokens), dL/dx summed
//                               over the local experts in ascending id, dL/dg_e = <dL/dy, E_e(x)>
//   m2n_recv l (F-rank)         return dL/dx and each (expert, dL/dg_e) to every A-rank (the M2N
//   layout) residual_send l             receive dL/dh_l m2n_send l                  receive the
//   summed dL/dx (ascending F-rank) and the gate gradients router l                    gates ->
//   logits backward (through the chosen gates only), += dL/dx rms_norm ffn_norm, residual_add,
//   attention, rms_norm attn_norm, embed   as their kernels say
//
// Backward messages use their own tags (backwardTag), so they never meet forward ones. After the
// last micro-batch the gradients of weights replicated on several ranks (the attention groups' data
// parallelism) are all-reduced over exactly the ranks that hold them, in a fixed order: every
// holder sends to the lowest-ranked holder, which adds them in ascending rank order and sends the
// sum back; so every replica, and every comm backend, gets the same bits. Then the optimizer steps
// every weight the rank holds (an expert without tokens has a zero gradient and still steps).
//
// Streams (what runs concurrently on one rank; docs/architecture.md "The plan and the executor",
// Streams):
//   comm stream      a comm worker (runtime/executor/CommStream.h), the only caller of `comm`:
//   sends
//                    queued by the compute streams go out in posting order, posted receives
//                    complete as their messages arrive, each recording an event a compute stream
//                    waits on;
//   forward stream   the calling thread: the micro-batches' forwards, ascending;
//   backward stream  a second thread: their backwards, ascending; backward i starts when forward i
//                    is done (event), and forward i waits for backward i - W, W = the forward
//                    micro-batches the rank's group starts before its first backward in the plan's
//                    AF-Pipe schedule (its 1F1B warm-up), or 2 without a schedule.
// So an F-rank's backward of micro-batch i (sending gradients) runs beside its forward of i+1.
// Every micro-batch keeps its own activations. Only the backward stream writes weight gradients,
// one micro-batch after the other in ascending order, so the sums, and the bits, are those of the
// sequential order; the loss, aux loss, loads and drops are added in micro-batch order at the end.
// The all-reduce, gradient norm and optimizer run after both compute streams have ended. A failure
// on either compute stream fails the other's events and the comm stream's pending receives and is
// rethrown once every thread of the rank has ended (no thread is left running or joinable).
//
// Gradients are accumulated over micro-batches; dL/dlogits is scaled by 1/N with N the number of
// target tokens of the GLOBAL batch, so the result does not depend on how the batch is split.
#pragma once

#include "runtime/backends/KernelBackend.h"

#include "runtime/comm/Comm.h"
#include "runtime/plan/Plan.h"
#include "runtime/plan/Weights.h"
#include "runtime/tensor/Tensor.h"
#include "runtime/train/Optimizer.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::train {

/// The parameters one rank holds, their gradients and optimizer state, indexed like
/// ModelSpec::weights (empty tensors for weights the rank does not hold).
struct RankState {
  int rank = -1;
  std::vector<Tensor> weights; ///< fp32 master weights
  std::vector<Tensor> grads;   ///< of the last step, after the all-reduce
  std::vector<Tensor> m, v;    ///< AdamW moments (allocated by the first AdamW step)
  /// [numLayers][numExperts] DeepSeek-V3 selection bias of the routers this rank runs (attention
  /// ranks; zero at start; StepConfig::routerBiasUpdateRate). Not a parameter: no gradient.
  std::vector<std::vector<float>> routerBias;
  /// [weights] 1 for a buffer the optimizer leaves alone (the routers' correction_bias, HF's
  /// e_score_correction_bias: it only biases the choice, so its gradient is zero and AdamW's weight
  /// decay must not shrink it).
  std::vector<char> buffers;
  int64_t step = 0; ///< optimizer steps taken

  RankState() = default;
  /// Copies the weights `bound` holds (RankWeights of `plan` for `bound.rank()`). Throws ExecError,
  /// one line "<plan.json>: model.components[i]: training does not support <form> yet (layer l
  /// <kind>: ...); only the forward pass ... runs this plan" (or
  /// "placement.embedding_side|head_side:
  /// ..."), for a form without a backward: a dense_ffn on the FFN side, the embedding or head on
  /// the FFN side. Every other family form (q/k norm, biases, sinks, sliding window, router bias
  /// and scaling, fused / clamped / biased experts, attention-side dense FFN and shared experts,
  /// MLA) trains.
  RankState(const Plan &plan, const RankWeights &bound);
  bool holds(int weight) const { return !weights[weight].empty(); }
};

/// One micro-batch: rows [begin, end) of the global [batch, seqLen] ids and targets.
struct MicroBatch {
  int64_t begin = 0, end = 0;
};

/// Splits `batch` sequences into `count` micro-batches of consecutive sequences, the first
/// `batch % count` one sequence longer. Throws std::invalid_argument unless 1 <= count <= batch.
std::vector<MicroBatch> splitMicroBatches(int64_t batch, int64_t count);

/// The first forward output of a step that held a NaN or an Inf (layer -1: none). `layer` is the
/// instruction's layer (numLayers for the head); `where` names instruction, layer and rank.
struct NonFinite {
  int64_t layer = -1;
  std::string where;
};

/// What one rank's step produced.
struct RankStepResult {
  /// Sum of this rank's token cross-entropies over all micro-batches (head-group A-ranks only; 0
  /// elsewhere), added in micro-batch order.
  double lossSum = 0;
  int64_t targetTokens = 0; ///< target tokens among this rank's (head group only)
  double gradNorm = 0; ///< global L2 norm of all gradients before clipping (GradientClipping.h)
  double clipCoef = 1; ///< factor the gradients were scaled by (1: not clipped)
  NonFinite firstNonFinite; ///< this rank's first non-finite forward output, if any
  /// This rank's share of the load-balancing auxiliary loss (StepConfig::auxLossCoef; the lowest
  /// A-rank of each layer's attention group adds that layer's value, so the sum over ranks is the
  /// loss).
  double auxLossSum = 0;
  /// [numLayers][numExperts]: token-expert assignments of this rank's tokens (the top-k choices,
  /// before any drop), summed over the micro-batches.
  std::vector<std::vector<int64_t>> expertLoad;
  /// [numLayers]: this rank's token-expert assignments dropped by the capacity factor.
  std::vector<int64_t> dropped;
};

/// What one step does after the backward: clip to `clipNorm` (0: no clipping; GradientClipping.h),
/// then step the optimizer with `optimizer` (its lr already the schedule's for this step).
struct StepConfig {
  OptimizerConfig optimizer;
  double clipNorm = 0;
  /// alpha >= 0 of the Switch-Transformer load-balancing loss (Fedus et al. 2021, eq. 4), per MoE
  /// layer l and micro-batch m of T_m tokens (every A-rank of the layer's group together):
  ///   aux_{l,m} = alpha * E * sum_i f_i P_i,  f_i = c_i / (k T_m),  P_i = (1/T_m) sum_t
  ///   softmax(z_t)_i
  /// with c_i the token-expert assignments to expert i among the top-k choices (before any drop;
  /// sum_i f_i = 1, Megatron-core's switch_load_balancing_loss_func normalisation; HF Mixtral's
  /// load_balancing_loss_func is k times this) and z_t the router logits (bias included) whatever
  /// the scoring. The step's aux loss is sum_l sum_m (T_m / T) aux_{l,m} (T: the global batch's
  /// tokens), so with one micro-batch it is the global batch's value and micro-batches weigh by
  /// size (as the CE loss does). Its gradient, alpha E / (k T_m T) * p_tj (c_j - sum_i p_ti c_i)
  /// per logit z_tj (f is piecewise constant), is added to the router's. 0: no aux loss and no
  /// count exchange.
  double auxLossCoef = 0;
  /// C > 0: capacity factor (Switch / GShard). Per MoE layer and micro-batch of T_m tokens each
  /// expert takes at most ceil(C T_m k / E) token-expert assignments; they are granted first to
  /// every token's first choice in token order (sequence-major position in the micro-batch), then
  /// to every second choice, ... (GShard, Lepikhin et al. 2020, Algorithm 1's priority). A dropped
  /// assignment is not sent to its expert: its output is zero and its gate gets no gradient (the
  /// other gates keep their values, renormalised before the drop). 0: dropless (the default).
  double capacityFactor = 0;
  /// u > 0: DeepSeek-V3's auxiliary-loss-free balancing (DeepSeek-V3 report §2.1.2). Each router
  /// ranks the experts by score + b (Kernels.h routerGates `selectionBias`; the gates use the
  /// unbiased scores), and after the optimizer step every layer's b is updated from the step's
  /// load c_i (top-k assignments of the global batch, all micro-batches, before any drop):
  ///   b_i += u * sign(mean_j c_j - c_i)   (fp32; sign(0) = 0)
  /// The A-ranks of a layer's group add their counts in ascending rank order, so all hold the same
  /// b. 0: no bias (the default).
  double routerBiasUpdateRate = 0;
  /// The kernels of every instruction (runtime/backends/KernelBackend.h; a host-memory backend:
  /// the workers' activations are host vectors). Null: the cpu backend (kernels::cpuKernels()).
  const kernels::KernelBackend *kernels = nullptr;
};

/// Tags of the backward exchanges: distinct from the forward ones (exchangeTag, < 3 * numLayers).
int backwardTag(ExchangeKind kind, int64_t layer, int64_t numLayers);

/// Runs `comm.rank()`'s part of one training step: every micro-batch forward and backward
/// (gradients zeroed first, then accumulated), the all-reduce of replicated weights' gradients and
/// the global gradient norm (and clipping), the optimizer step. `targets` [batch*seqLen]: the
/// target id of every position, negative for none. `targetTokens`: the number of non-negative
/// targets in the global batch (the loss's N). Throws ExecError naming the rank and the
/// instruction, CommError / CommAborted like runRank.
RankStepResult trainRank(const Plan &plan, RankState &state, Comm &comm,
                         const std::vector<int64_t> &ids, const std::vector<int64_t> &targets,
                         int64_t batch, int64_t seqLen, const std::vector<MicroBatch> &microBatches,
                         int64_t targetTokens, const StepConfig &config,
                         std::chrono::milliseconds recvTimeout);

/// File stem of weight `index` by the first component that uses it: "embed", "l{l}_attn_norm",
/// "l{l}_q" (k, v, o), "l{l}_ffn_norm", "l{l}_router", "l{l}_expert{e}_w1" (w3, w2), "final_norm",
/// "head" (the keys of samples/models/mixtral_tiny/golden/train).
std::vector<std::string> weightKeys(const ModelSpec &model);

} // namespace disagmoe::train
