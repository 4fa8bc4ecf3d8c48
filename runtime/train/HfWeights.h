// A run's initial weights from Hugging Face safetensors (disagmoe-run --init-weights PATH): the
// tensors are found by the names HfNameMap.h gives the plan's weights, checked all at once when
// opened (every name present, none extra, every shape Hugging Face's), and read one plan weight at
// a time (only the weights a rank holds are read; a GPT-OSS expert is its slice of the stacked
// tensor), converted from F32 / BF16 / F16 to fp32 and transposed from [out, in] to the runtime's
// [in, out].
//
// PATH is one of
//   FILE.safetensors                  one file holding every tensor
//   model.safetensors.index.json      the shards' index as transformers writes it:
//                                     {"metadata": {...}, "weight_map": {"<tensor>": "<shard>"}},
//                                     shard names relative to the index's directory
//   DIR                               a directory holding model.safetensors.index.json (preferred)
//                                     or model.safetensors
// Errors: HfWeightsError, one line naming the tensor and the file:
//   "ckpt/model.safetensors: tensor \"model.layers.0.self_attn.q_proj.weight\": missing (the
//    plan's l0_q, Hugging Face shape [64,64])"
//   "ckpt/model.safetensors: tensor \"model.layers.9.mlp.gate.weight\": not a weight of this
//    qwen3_moe plan"
//   "ckpt/model-00001-of-00002.safetensors: tensor \"lm_head.weight\": shape [255,64], the plan's
//    head needs [256,64] (Hugging Face layout [out, in])"
//   "ck/step-00000002.safetensors: a disagmoe training checkpoint (__metadata__.format
//    disagmoe-train-checkpoint), not Hugging Face weights: continue its run with --resume ..."
#pragma once

#include "runtime/plan/Plan.h"
#include "runtime/plan/Weights.h"
#include "runtime/train/HfNameMap.h"

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace disagmoe {
struct SafetensorsHeader;
}

namespace disagmoe::train {

class HfWeightsError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class HfWeights {
public:
  /// Opens PATH and checks it against `plan` (family: the plan's model.family, HfNameMap.h).
  /// Throws HfWeightsError (and HfMapError for a plan the family's naming cannot hold). `plan`
  /// must outlive this object.
  HfWeights(const Plan &plan, const std::string &path);
  ~HfWeights();

  /// Plan weight `index` in the runtime's layout (its WeightSpec::shape), fp32.
  Tensor read(int index) const;
  /// A WeightSource reading through this object (which must outlive it).
  WeightSource source() const;

  /// The files read: one, or the shards in index order.
  const std::vector<std::string> &files() const { return files_; }
  HfFamily family() const { return family_; }
  /// Of the tensors read: how many were stored as F32, BF16, F16 (as "F32 291, BF16 0").
  std::string dtypeSummary() const;

private:
  struct Where {
    size_t tensor = 0; ///< into tensors_
    size_t part = 0;   ///< slice along the first axis (stacked tensors), else 0
  };
  const Plan &plan_;
  HfFamily family_;
  std::vector<HfTensor> tensors_;
  std::vector<Where> where_; // [weights]
  std::vector<std::string> files_;
  std::vector<std::unique_ptr<SafetensorsHeader>> headers_; // [files_]
  std::vector<size_t> fileOf_;                              // [tensors_] into headers_
};

} // namespace disagmoe::train
