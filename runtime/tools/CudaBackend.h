// `disagmoe-run --backend cuda` (issue 14): what this build and this machine allow. Three answers,
// each one line without the "disagmoe-run: " prefix:
//  - built without the cuda backend (no nvcc; DISAGMOE_HAVE_CUDA undefined):
//      backend "cuda" is not built in this version (available: cpu, sim)
//  - built with it, no usable device (runtime/backends/cuda/DeviceProbe.h, one cudaGetDeviceCount):
//      --backend cuda: no CUDA device (cudaGetDeviceCount: <error name, or "0 devices">)
//  - built with it and a device present: the ranks do not execute on the GPU yet, which is said:
//      --backend cuda: running plans on the cuda backend is not implemented in this version (...)
// The probe runs at argument parsing, before the plan or any input is read.
#pragma once

#include <string>

namespace disagmoe::tools {

/// Why `--backend cuda` cannot run in this build on this machine (today it never can): the
/// one-line message above. Never throws.
std::string cudaBackendRefusal();

} // namespace disagmoe::tools
