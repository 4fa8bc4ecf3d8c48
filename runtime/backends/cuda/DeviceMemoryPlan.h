// Device memory of one rank on the cuda backend (issue 14: "peak device memory per rank is reported
// beside the plan's memory model"): the bytes it allocates once (weights, gradients, optimizer
// state) and per training window (the activations the training worker keeps for the backward of
// every micro-batch in flight), and its peak. Pure C++ (no CUDA headers): unit-tested everywhere.
//
// Bytes per element, by what the backend keeps (issue 14's numerics: bf16 compute with fp32 master
// weights; fp32 router, norms' statistics, softmax and loss; --precision fp32 keeps all in fp32):
//   weights      fp32 master copy, 4 per parameter; with bf16 compute also a bf16 copy, 2 more
//                (uploaded once, Rajbhandari et al. 2020 "ZeRO" §3.1: mixed precision keeps an
//                fp32 master and a 16-bit working copy);
//   gradients    fp32, 4 per parameter (training only; they are reduced in fp32,
//                docs/architecture.md "Training semantics and numerics");
//   optimizer    AdamW: fp32 m and v, 8 per parameter; SGD (runtime/train/Optimizer.h: no
//                momentum): 0; forward only: 0;
//   activations  inflight * (keptCompute * c + keptFp32 * 4), c = 2 (bf16) or 4 (fp32): the
//                training worker keeps them from a micro-batch's forward to its backward
//                (runtime/train/TrainWorker.h AttentionLayer / FfnLayer); forward only: 0 (each
//                buffer is overwritten by the next layer's);
//   transient    the largest temporary one instruction allocates and frees, transientCompute * c
//                + transientFp32 * 4.
// peak = weights + gradients + optimizer + activations + transient.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace disagmoe::cuda {

/// --precision: bf16 compute (fp32 master weights) or fp32 throughout (the checking mode).
enum class DevicePrecision { Bf16, Fp32 };

/// What a rank runs: a forward pass, or training with the step's optimizer.
enum class DeviceWorkload { Forward, TrainSgd, TrainAdamW };

/// Raised for a negative count; the message names the field.
class DeviceMemoryError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// Element counts of one rank (filled from the plan by the caller).
struct RankMemoryInput {
  int64_t parameters = 0;       ///< elements of every weight the rank holds
  int64_t keptCompute = 0;      ///< activation elements kept per micro-batch, compute dtype
  int64_t keptFp32 = 0;         ///< ... kept in fp32 whatever the precision (router logits, gates)
  int64_t inflight = 1;         ///< micro-batches whose activations are held at once (>= 1)
  int64_t transientCompute = 0; ///< largest temporary of one instruction, compute dtype
  int64_t transientFp32 = 0;    ///< ... in fp32
};

/// Bytes of one rank on its device (see the file comment for each term).
struct DeviceMemoryPlan {
  uint64_t weights = 0, gradients = 0, optimizer = 0, activations = 0, transient = 0;
  uint64_t peak() const { return weights + gradients + optimizer + activations + transient; }
};

/// The plan of one rank. Throws DeviceMemoryError for a negative count or inflight < 1.
DeviceMemoryPlan planDeviceMemory(const RankMemoryInput &in, DevicePrecision precision,
                                  DeviceWorkload workload);

/// Activation elements one A-rank's training worker keeps per token for one grouped-query
/// attention MoE layer (runtime/train/TrainWorker.h AttentionLayer, forward to backward):
///   compute dtype: x, attn_norm, h, ffn_norm (4 * hidden), q and the attention heads
///                  (2 * heads * headDim), k and v (2 * kvHeads * headDim);
///   fp32:          router logits (experts) and gates (topK), and the top-k ids (int64: 2 * topK
///                  fp32-sized elements).
struct KeptPerToken {
  int64_t compute = 0, fp32 = 0;
};
KeptPerToken attentionLayerKeptPerToken(int64_t hidden, int64_t heads, int64_t kvHeads,
                                        int64_t headDim, int64_t experts, int64_t topK);

} // namespace disagmoe::cuda
