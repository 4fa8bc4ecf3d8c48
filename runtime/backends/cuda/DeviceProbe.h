// Whether this process sees a CUDA device: one cudaGetDeviceCount call (CUDA runtime API), made
// before a cuda run does anything heavy (disagmoe-run --backend cuda, runtime/tools/CudaBackend.h).
// The call never throws and needs no driver: without libcuda.so or a GPU the runtime answers with
// an error code (cudaErrorInsufficientDriver, cudaErrorNoDevice, ...), which is reported, so
// nothing else of disagmoe-run (the cpu and sim backends) depends on a driver being present.
// The header has no CUDA includes: its callers compile without the CUDA toolkit's headers.
// Source: CUDA Runtime API, "cudaGetDeviceCount" (returns cudaSuccess with the count, or an
// error; the count is not written on failure).
#pragma once

#include <string>

namespace disagmoe::cuda {

/// What cudaGetDeviceCount answered.
struct DeviceCount {
  int count = 0;     ///< devices visible to this process (0 when the call failed)
  std::string error; ///< cudaGetErrorName of a failed call (e.g. "cudaErrorNoDevice"); empty on
                     ///< success
  bool usable() const { return error.empty() && count > 0; }
};

/// Calls cudaGetDeviceCount once. Never throws; built only where the cuda backend is (nvcc found).
DeviceCount probeDevices();

/// Why `probe` offers no device, in one line: "no CUDA device (<plain words>; cudaGetDeviceCount:
/// <error name>)" for a failed call, the words saying what the two common errors mean:
///   cudaErrorInsufficientDriver: "no usable NVIDIA driver: none is installed, or it is older than
///     the CUDA runtime this build uses" (CUDA Runtime API: "the installed NVIDIA CUDA driver is
///     older than the CUDA runtime library"; also what a machine without libcuda.so answers)
///   cudaErrorNoDevice: "the NVIDIA driver sees no GPU"
/// (other errors: the name alone); "no CUDA device (cudaGetDeviceCount: 0 devices)" for a zero
/// count; "" when a device is usable. Pure logic, unit-tested everywhere.
inline std::string noDeviceReason(const DeviceCount &probe) {
  if (!probe.error.empty()) {
    std::string words;
    if (probe.error == "cudaErrorInsufficientDriver")
      words = "no usable NVIDIA driver: none is installed, or it is older than the CUDA runtime "
              "this build uses; ";
    else if (probe.error == "cudaErrorNoDevice")
      words = "the NVIDIA driver sees no GPU; ";
    return "no CUDA device (" + words + "cudaGetDeviceCount: " + probe.error + ")";
  }
  if (probe.count <= 0)
    return "no CUDA device (cudaGetDeviceCount: 0 devices)";
  return "";
}

} // namespace disagmoe::cuda
