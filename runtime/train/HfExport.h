// A plan's weights written as a Hugging Face checkpoint directory (disagmoe-run --export-hf DIR),
// the layout transformers' save_pretrained writes and from_pretrained reads:
//
//   DIR/config.json                        the family's configuration (HfConfig.h)
//   DIR/model.safetensors                  every tensor, when they fit in one shard; else
//   DIR/model-00001-of-0000N.safetensors   shards, each tensor whole in one, filled in parameter
//   ...                                    order, a new shard started when the next tensor would
//                                          take the current one past `shardBytes` (a tensor larger
//                                          than the limit alone in its shard: huggingface_hub's
//                                          split_torch_state_dict_into_shards)
//   DIR/model.safetensors.index.json       with shards: {"metadata": {"total_size": <bytes of
//                                          all tensors>}, "weight_map": {"<tensor>": "<shard>"}},
//                                          keys sorted, two-space indent
//
// Tensors carry Hugging Face's names and layouts (HfNameMap.h: nn.Linear weights [out, in], GPT-OSS
// experts stacked), stored as F32 or BF16 (round to nearest even), each shard's metadata
// {"format": "pt"} (which from_pretrained checks). Atomic: everything is written into a temporary
// directory beside DIR (DIR.tmp.<pid>.<n>), which is renamed to DIR at the end; DIR must not exist
// or be an empty directory, so a failed export leaves no DIR and no half-written one.
// Errors: HfExportError "DIR: <what>" (and HfMapError for a plan the family's naming cannot hold).
#pragma once

#include "runtime/io/Safetensors.h"
#include "runtime/plan/Plan.h"
#include "runtime/tensor/Tensor.h"

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace disagmoe::train {

class HfExportError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct HfExportOptions {
  SafetensorsDtype dtype = SafetensorsDtype::F32; ///< F32 or BF16
  /// Shard size limit in bytes (transformers' default max_shard_size "5GB" = 5e9 bytes).
  uint64_t shardBytes = 5000000000ull;
};

/// What an export wrote.
struct HfExportSummary {
  std::vector<std::string> files; ///< the safetensors files, in order (names within DIR)
  uint64_t tensorBytes = 0;       ///< total_size
  size_t tensors = 0;
};

/// "" when DIR may be the target of an export (absent, or an empty directory), else why not
/// ("exists and is not empty", "exists and is not a directory"): checked before a run starts.
std::string hfExportRefusal(const std::string &dir);

/// Writes DIR (see above) from `weightOf(index)`: plan weight `index` (ModelSpec::weights) in the
/// runtime's layout, fp32. Throws HfExportError, HfMapError.
HfExportSummary exportHf(const Plan &plan, const std::function<const Tensor &(int)> &weightOf,
                         const std::string &dir, const HfExportOptions &options);

} // namespace disagmoe::train
