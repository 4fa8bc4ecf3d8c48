// disagmoe-run's Hugging Face flags, shared by the forward run (disagmoe-run.cpp) and --train
// (DistributedRun.cpp):
//   --init-weights PATH        the initial weights from HF safetensors (runtime/train/HfWeights.h)
//                              instead of the plan's ONNX file
//   --export-hf DIR            after the run (training: the trained weights; forward: the weights
//   it
//                              ran with), a Hugging Face checkpoint directory
//                              (runtime/train/HfExport.h)
//   --export-dtype fp32|bf16   the exported tensors' dtype (default fp32)
//   --export-shard-bytes N     the shard size limit in bytes (default 5000000000, transformers'
//                              "5GB")
// Errors: std::invalid_argument, one line naming the flag.
#pragma once

#include "runtime/plan/Plan.h"
#include "runtime/plan/Weights.h"
#include "runtime/train/HfExport.h"
#include "runtime/train/HfWeights.h"

#include <functional>
#include <memory>
#include <ostream>
#include <string>

namespace disagmoe::tools {

struct HfFlags {
  std::string initWeights, exportDir;
  train::HfExportOptions exportOptions;
  bool dtypeGiven = false, shardGiven = false;

  /// Takes `flag` ("--export-dtype") with `value` when it is one of the four; false otherwise.
  /// Throws std::invalid_argument for a bad value.
  bool take(const std::string &flag, const std::string &value);
  /// Before any work: --export-dtype / --export-shard-bytes need --export-hf; the export directory
  /// must be absent or empty (train::hfExportRefusal); --init-weights must exist (neither path is
  /// looked at under DISAGMOE_PARSE_ONLY=1, ParseOnly.h). Throws std::invalid_argument.
  void check() const;
};

/// Right after the plan is read, before any work: where --init-weights or --export-hf is given,
/// the plan's model has a Hugging Face naming (train::hfTensors) and, for --export-hf, a
/// config.json (train::hfConfigJson), so a run that cannot read or write its weights fails before
/// it computes anything. Throws std::invalid_argument naming the
/// flag and the component.
void checkHfNaming(const HfFlags &flags, const Plan &plan);

/// Opens --init-weights for `plan` (nullptr without it) and prints one line to `out` (when not
/// null): "initial weights: PATH (mixtral naming, 291 tensors in 1 file: F32 291)". Throws
/// train::HfWeightsError / train::HfMapError.
std::unique_ptr<train::HfWeights> openInitWeights(const HfFlags &flags, const Plan &plan,
                                                  std::ostream *out);

/// Writes --export-hf from `weightOf` (the reference need only live until the next call) and
/// prints one line to `out`: "Hugging Face checkpoint (mixtral, F32, 291 tensors, 1234 bytes in 1
/// file) written to DIR/". Does nothing without --export-hf.
void exportHfIfAsked(const HfFlags &flags, const Plan &plan,
                     const std::function<const Tensor &(int)> &weightOf, std::ostream &out);

} // namespace disagmoe::tools
