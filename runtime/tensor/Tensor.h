// A dense, row-major fp32 tensor: the CPU runtime's only type for weights and activations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe {

/// Number of elements of `shape` (1 for a scalar shape `[]`).
int64_t numelOf(const std::vector<int64_t> &shape);

/// "[64,128]", the form used in every error message.
std::string shapeToString(const std::vector<int64_t> &shape);

/// Row-major fp32 tensor. `data.size() == numelOf(shape)` always holds for tensors the runtime
/// builds.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;

  Tensor() = default;
  /// Zero-filled tensor of `shape`.
  explicit Tensor(std::vector<int64_t> shape);

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  bool empty() const { return data.empty(); }
};

} // namespace disagmoe
