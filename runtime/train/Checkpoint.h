// Training checkpoints as one safetensors file (runtime/io/Safetensors.h), written atomically:
//
//   tensors   "<key>"              fp32 master weight (keys of weightKeys: embed, l0_q, l0_expert3_w1, ...)
//             "<key>.exp_avg"      AdamW first moment  (only once AdamW has stepped)
//             "<key>.exp_avg_sq"   AdamW second moment
//   metadata  format "disagmoe-train-checkpoint", version "1", step (optimizer steps taken),
//             data_position (the token batcher's position; 0 without token data), optimizer
//             ("sgd" or "adamw"), model (family, layers, experts), data (the token file)
//
// Resuming restores exactly these, so a resumed run computes the same bits as an uninterrupted
// one (the gradients of the next step do not depend on the previous ones). Every weight must be
// held in this process (the local comm). Errors: CheckpointError naming the file and the field.
#pragma once

#include "runtime/plan/Plan.h"
#include "runtime/train/Trainer.h"

#include <stdexcept>
#include <string>

namespace disagmoe::train {

class CheckpointError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct CheckpointInfo {
  int64_t step = 0;
  int64_t dataPosition = 0;
  std::string data; ///< the token file it was trained on ("" for a fixed batch)
};

void saveCheckpoint(const std::string& path, const Plan& plan, const Trainer& trainer, const CheckpointInfo& info);

/// Loads `path` into `trainer` (weights, moments, step count) and returns its step and data
/// position. Refuses (CheckpointError) a file that is not a safetensors checkpoint of this format,
/// of another optimizer or model, with a missing, extra or misshapen tensor, or a bad number.
CheckpointInfo loadCheckpoint(const std::string& path, const Plan& plan, Trainer& trainer);

} // namespace disagmoe::train
