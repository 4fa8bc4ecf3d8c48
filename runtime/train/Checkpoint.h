// Training checkpoints as one safetensors file (runtime/io/Safetensors.h), written atomically
// (a temporary file beside it, then a rename):
//
//   tensors   "<key>"              fp32 master weight (keys of weightKeys: embed, l0_q,
//   l0_expert3_w1, ...)
//             "<key>.exp_avg"      AdamW first moment  (only once AdamW has stepped)
//             "<key>.exp_avg_sq"   AdamW second moment
//             "l<l>_router_selection_bias"  fp32 [numExperts], DeepSeek-V3's selection bias of
//             layer
//                                  l's router (only with a router bias update rate;
//                                  RankState::routerBias)
//   metadata  format "disagmoe-train-checkpoint", version "2", step (optimizer steps taken),
//             data_position (the token batcher's position; 0 without token data), optimizer
//             ("sgd" or "adamw"), model (family, layers, experts), data (the token file),
//             config (optional: the run's options as a JSON object, disagmoe-run's RunConfig.h),
//             producer ("disagmoe 0.6.0 (commit abc1234)", runtime/version/Version.h; not read),
//             and
//             "crc32.<tensor>" for every tensor: the CRC-32 (ISO-HDLC / IEEE 802.3 polynomial, as
//             zlib's crc32 and Python's zlib.crc32) of its little-endian data bytes, 8 lower-case
//             hex digits. Version 1 files (no checksums, no selection bias) still load.
//
// Resuming restores exactly these, so a resumed run computes the same bits as an uninterrupted
// one (the gradients of the next step do not depend on the previous ones). Every tensor is
// checked against its CRC-32 before anything is restored. With one process per rank (--comm mpi)
// saveCheckpointGathered sends each rank's tensors (those whose lowest holder it is) to rank 0,
// which writes the same file as the local comm would; every process then loads the whole file
// on --resume (a shared file system, as for the plan's weights).
// Errors: CheckpointError "<file>: <field>: <what>".
#pragma once

#include "runtime/comm/Comm.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/Trainer.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace disagmoe::train {

class CheckpointError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// __metadata__.format of every checkpoint this file writes (HfWeights names such a file given to
/// --init-weights as a disagmoe checkpoint).
inline constexpr const char *kCheckpointFormat = "disagmoe-train-checkpoint";

struct CheckpointInfo {
  int64_t step = 0;
  int64_t dataPosition = 0;
  std::string data; ///< the token file it was trained on ("" for a fixed batch)
  /// The run's options as a JSON object text (__metadata__.config; "" when the file has none).
  std::string config;
};

/// Writes every tensor of `trainer` (all of them must be held in this process: the local comm).
void saveCheckpoint(const std::string &path, const Plan &plan, const Trainer &trainer,
                    const CheckpointInfo &info);

/// One process per rank: every rank sends rank 0 the tensors whose lowest holder it is (message tag
/// `tag`, unused by the step); rank 0 writes the file, byte-identical to saveCheckpoint's for the
/// same state. Every rank calls it at the same point. Throws CheckpointError (rank 0's write) or
/// CommError (a receive past `timeout`).
void saveCheckpointGathered(const std::string &path, const Plan &plan, const Trainer &trainer,
                            const CheckpointInfo &info, Comm &comm, int tag,
                            std::chrono::milliseconds timeout);

/// One process per rank: every rank sends rank 0 the weights whose lowest holder it is (tag `tag`,
/// unused by the step; the same messages as saveCheckpointGathered's, weights only). On rank 0,
/// returns every weight of the plan in plan.model.weights order (what --export-hf writes under
/// --comm mpi); on the other ranks an empty vector. Every rank calls it at the same point. Throws
/// CheckpointError when no rank sent a weight, CommError for a receive past `timeout`.
std::vector<Tensor> gatherWeights(const Plan &plan, const Trainer &trainer, Comm &comm, int tag,
                                  std::chrono::milliseconds timeout);

/// Loads `path` into `trainer` (weights, moments and selection bias of the ranks it holds, step
/// count) and returns its step and data position. Refuses (CheckpointError) a file that is not a
/// safetensors checkpoint of this format, of another optimizer or model, with a missing, extra or
/// misshapen tensor, a tensor whose bytes disagree with its CRC-32 ("tensor \"l0_q\": CRC-32 of its
/// bytes is ..., __metadata__.crc32.l0_q says ... (the file is corrupt)"), or a bad number.
CheckpointInfo loadCheckpoint(const std::string &path, const Plan &plan, Trainer &trainer);

/// CRC-32 (zlib's crc32) of `bytes` bytes at `data`, as 8 lower-case hex digits.
std::string crc32Hex(const void *data, size_t bytes);

} // namespace disagmoe::train
