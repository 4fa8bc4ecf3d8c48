// The answer to --backend cuda (CudaBackend.h).
#include "runtime/tools/CudaBackend.h"

#ifdef DISAGMOE_HAVE_CUDA
#include "runtime/backends/cuda/DeviceProbe.h"
#endif

namespace disagmoe::tools {

std::string cudaBackendRefusal() {
#ifndef DISAGMOE_HAVE_CUDA
  return "backend \"cuda\" is not built in this version (available: cpu, sim)";
#else
  const cuda::DeviceCount probe = cuda::probeDevices();
  if (!probe.usable())
    return "--backend cuda: " + cuda::noDeviceReason(probe);
  return "--backend cuda: running plans on the cuda backend is not implemented in this version (" +
         std::to_string(probe.count) + " CUDA device" + (probe.count == 1 ? "" : "s") +
         " found; the cuda kernels are built, but ranks execute on the cpu backend only: use "
         "--backend cpu)";
#endif
}

} // namespace disagmoe::tools
