// Shared helpers of the runtime unit tests: golden files, temporary directories and a builder of
// plan.json files for the tiny Mixtral sample whose weights point straight into the golden .npy
// files (an .npy's data begins at its header length, so `offset` = NpyHeader::dataOffset).
#pragma once

#include "runtime/tensor/Tensor.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace disagmoe::test {

/// DISAGMOE_GOLDEN_DIR + "/" + name.
std::string goldenPath(const std::string &name);
Tensor loadGolden(const std::string &name);
std::vector<int64_t> loadGoldenIds(const std::string &name, std::vector<int64_t> &shape);

/// max_i |a[i] - b[i]|; fails the calling test if sizes differ.
double maxAbsDiff(const std::vector<float> &a, const std::vector<float> &b);

/// The fp32 error model of tests/numerics/error_model.py (docs/training.md, "Numerics: error
/// model"): two evaluations of a computation whose longest dependency chain has `chain` roundings
/// differ normwise by at most 2 sqrt(2D/3) u (||a - b||_2 / ||b||_2) and per element by at most
/// 6 sqrt(2D/3) u max|b|, u = 2^-24.
struct Fp32Bound {
  explicit Fp32Bound(int64_t chain);
  /// Passes when a is within both bounds of b (same size, all finite); the message gives the
  /// measured errors and the bounds in units of u.
  ::testing::AssertionResult check(const std::vector<float> &a, const std::vector<float> &b) const;
  int64_t chain;
  double normwise, element;
};

/// A fresh, empty directory under the test temp dir.
std::string makeTempDir(const std::string &stem);
void writeText(const std::string &path, const std::string &text);

/// Placement of a tiny-model plan: attention and ffn groups by index, layers interleaved
/// (layer l on attention group l % pA and ffn group l % pF), head group numLayers % pA.
struct TinyPlacement {
  int64_t numLayers = 1;
  std::vector<std::vector<int>> attentionGroups;
  std::vector<std::vector<int>> ffnGroups;
  /// [numLayers][8]: global F-rank of each expert.
  std::vector<std::vector<int>> expertToRank;
};

/// A complete, valid plan.json of mixtral_tiny with `placement`. Every layer uses the layer-0
/// golden weights (the goldens hold only layer 0), read in place from the golden .npy files.
nlohmann::json tinyPlan(const TinyPlacement &placement);

/// `plan` (a tinyPlan) with DeepSeek-V3's router: router_scoring sigmoid_group_topk_renorm,
/// model.n_group / topk_group, and on every router a correction_bias [num_experts] of 8 floats
/// read from the layer-0 attn_norm weight's file, held by the router's ranks (memory updated).
nlohmann::json withSigmoidRouter(nlohmann::json plan, int64_t nGroup, int64_t topkGroup);

/// Writes `plan` to DIR/plan.json in a new temp dir and returns the plan.json path.
std::string writePlan(const nlohmann::json &plan, const std::string &stem);

} // namespace disagmoe::test
