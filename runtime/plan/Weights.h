// Weight binding: each rank reads, from the files the plan names, exactly the weights whose
// `ranks` list it, and holds them as fp32 tensors in the plan's logical layout ([in, out] for
// linear weights; on-disk [out, in] bytes marked `transposed` are transposed while loading).
#pragma once

#include "runtime/plan/Plan.h"
#include "runtime/tensor/Tensor.h"

#include <functional>
#include <stdexcept>
#include <vector>

namespace disagmoe {

/// A weight that cannot be read; the message names the weight and the file.
class WeightError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Reads one weight: `length` bytes of little-endian `spec.dtype` at `offset` of `path` (pread; a
/// strided window row by row), widens float16 (IEEE 754 binary16) and bfloat16 to float32
/// exactly, then transposes a 2-D weight marked `transposed`. Returns an fp32 tensor of
/// `spec.shape`: the cpu backend's compute dtype and training's master weights.
/// Throws WeightError if the file is missing or shorter than offset + length, or the dtype or
/// length is not one of the plan format's.
Tensor readWeight(const WeightSpec &spec);

/// Where a run's initial weights come from instead of the plan's files: weight `index` of
/// ModelSpec::weights as an fp32 tensor of its logical shape (e.g. Hugging Face safetensors,
/// runtime/train/HfWeights.h). Throws what its source throws.
using WeightSource = std::function<Tensor(int index)>;

/// The weights one rank holds, indexed like ModelSpec::weights.
class RankWeights {
public:
  RankWeights() = default;
  /// Reads every weight of `plan` that lists `rank`. `plan` must outlive this object.
  RankWeights(const Plan &plan, int rank);
  /// The same from `source` (empty: the plan's files). Throws WeightError when the source gives a
  /// tensor of another shape than the plan's.
  RankWeights(const Plan &plan, int rank, const WeightSource &source);

  int rank() const { return rank_; }
  /// The tensor of weight `index`. Throws WeightError if this rank does not hold it.
  const Tensor &get(int index) const;
  /// Total fp32 bytes held.
  uint64_t bytes() const;

private:
  int rank_ = -1;
  const Plan *plan_ = nullptr;
  std::vector<Tensor> tensors_; // empty tensor: not held here
};

} // namespace disagmoe
