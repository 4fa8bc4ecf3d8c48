// One cudaGetDeviceCount call, its error reported by name (DeviceProbe.h).
#include "runtime/backends/cuda/DeviceProbe.h"

#include <cuda_runtime.h>

namespace disagmoe::cuda {

DeviceCount probeDevices() {
  DeviceCount probe;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    probe.error = cudaGetErrorName(status);
    cudaGetLastError(); // reset the last-error state, so that a later call does not report it
    return probe;
  }
  probe.count = count;
  return probe;
}

} // namespace disagmoe::cuda
