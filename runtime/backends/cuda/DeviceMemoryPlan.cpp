// Device memory of one rank (DeviceMemoryPlan.h).
#include "runtime/backends/cuda/DeviceMemoryPlan.h"

#include <string>

namespace disagmoe::cuda {

namespace {

uint64_t count(int64_t v, const char *field) {
  if (v < 0)
    throw DeviceMemoryError(std::string("device memory: ") + field + " is negative (" +
                            std::to_string(v) + ")");
  return static_cast<uint64_t>(v);
}

} // namespace

DeviceMemoryPlan planDeviceMemory(const RankMemoryInput &in, DevicePrecision precision,
                                  DeviceWorkload workload) {
  if (in.inflight < 1)
    throw DeviceMemoryError("device memory: inflight must be >= 1 (" + std::to_string(in.inflight) +
                            ")");
  const uint64_t p = count(in.parameters, "parameters");
  const uint64_t c = precision == DevicePrecision::Bf16 ? 2 : 4; // compute dtype bytes
  const bool training = workload != DeviceWorkload::Forward;
  DeviceMemoryPlan m;
  m.weights = 4 * p + (precision == DevicePrecision::Bf16 ? 2 * p : 0);
  m.gradients = training ? 4 * p : 0;
  m.optimizer = workload == DeviceWorkload::TrainAdamW ? 8 * p : 0;
  const uint64_t kept =
      count(in.keptCompute, "keptCompute") * c + count(in.keptFp32, "keptFp32") * 4;
  m.activations = training ? static_cast<uint64_t>(in.inflight) * kept : 0;
  m.transient = count(in.transientCompute, "transientCompute") * c +
                count(in.transientFp32, "transientFp32") * 4;
  return m;
}

KeptPerToken attentionLayerKeptPerToken(int64_t hidden, int64_t heads, int64_t kvHeads,
                                        int64_t headDim, int64_t experts, int64_t topK) {
  KeptPerToken k;
  k.compute = 4 * hidden + 2 * heads * headDim + 2 * kvHeads * headDim;
  k.fp32 = experts + topK + 2 * topK;
  return k;
}

} // namespace disagmoe::cuda
