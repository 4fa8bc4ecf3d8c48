// The cuda backend's device-memory planner (runtime/backends/cuda/DeviceMemoryPlan.h), host logic:
// each term against its closed form worked out by hand below for a small rank.
#include "runtime/backends/cuda/DeviceMemoryPlan.h"

#include <gtest/gtest.h>

using namespace disagmoe::cuda;

namespace {

// 1000 parameters; 300 compute-dtype and 50 fp32 elements kept per micro-batch; 3 in flight; a
// transient of 40 compute-dtype and 10 fp32 elements.
RankMemoryInput smallRank() {
  RankMemoryInput in;
  in.parameters = 1000, in.keptCompute = 300, in.keptFp32 = 50, in.inflight = 3;
  in.transientCompute = 40, in.transientFp32 = 10;
  return in;
}

} // namespace

TEST(DeviceMemoryPlan, Bf16AdamWTraining) {
  const DeviceMemoryPlan m =
      planDeviceMemory(smallRank(), DevicePrecision::Bf16, DeviceWorkload::TrainAdamW);
  EXPECT_EQ(m.weights, 6000u);         // 1000 * (4 fp32 master + 2 bf16 copy)
  EXPECT_EQ(m.gradients, 4000u);       // 1000 * 4
  EXPECT_EQ(m.optimizer, 8000u);       // 1000 * (4 m + 4 v)
  EXPECT_EQ(m.activations, 3u * 800u); // 3 * (300 * 2 + 50 * 4)
  EXPECT_EQ(m.transient, 120u);        // 40 * 2 + 10 * 4
  EXPECT_EQ(m.peak(), 6000u + 4000u + 8000u + 2400u + 120u);
}

TEST(DeviceMemoryPlan, Fp32SgdTraining) {
  const DeviceMemoryPlan m =
      planDeviceMemory(smallRank(), DevicePrecision::Fp32, DeviceWorkload::TrainSgd);
  EXPECT_EQ(m.weights, 4000u); // fp32 only: no working copy
  EXPECT_EQ(m.gradients, 4000u);
  EXPECT_EQ(m.optimizer, 0u);           // plain SGD keeps no state
  EXPECT_EQ(m.activations, 3u * 1400u); // 3 * (300 * 4 + 50 * 4)
  EXPECT_EQ(m.transient, 200u);         // 40 * 4 + 10 * 4
  EXPECT_EQ(m.peak(), 4000u + 4000u + 4200u + 200u);
}

TEST(DeviceMemoryPlan, ForwardKeepsNothingForABackward) {
  const DeviceMemoryPlan m =
      planDeviceMemory(smallRank(), DevicePrecision::Bf16, DeviceWorkload::Forward);
  EXPECT_EQ(m.weights, 6000u);
  EXPECT_EQ(m.gradients + m.optimizer + m.activations, 0u);
  EXPECT_EQ(m.peak(), 6120u);
}

TEST(DeviceMemoryPlan, RefusesNegativeCountsAndAnEmptyWindow) {
  RankMemoryInput in = smallRank();
  in.keptFp32 = -1;
  EXPECT_THROW(planDeviceMemory(in, DevicePrecision::Bf16, DeviceWorkload::TrainSgd),
               DeviceMemoryError);
  in = smallRank();
  in.inflight = 0;
  EXPECT_THROW(planDeviceMemory(in, DevicePrecision::Bf16, DeviceWorkload::TrainSgd),
               DeviceMemoryError);
}

// Mixtral-tiny-like layer: hidden 64, 4 heads and 2 kv heads of 16, 8 experts, top-2.
TEST(DeviceMemoryPlan, AttentionLayerKeptPerTokenCountsTheWorkersTensors) {
  const KeptPerToken k = attentionLayerKeptPerToken(64, 4, 2, 16, 8, 2);
  EXPECT_EQ(k.compute, 4 * 64 + 2 * 64 + 2 * 32); // x, attn_norm, h, ffn_norm; q, heads; k, v
  EXPECT_EQ(k.fp32, 8 + 2 + 4);                   // logits, gates, top-k ids (int64)
}
