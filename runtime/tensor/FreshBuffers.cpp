// freshFloats and the DISAGMOE_DEBUG_NAN_FILL switch of NaN-filled buffers (FreshBuffers.h).
#include "runtime/tensor/FreshBuffers.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace disagmoe {
namespace {

std::atomic<bool> &flag() {
  static std::atomic<bool> on{[] {
    const char *v = std::getenv("DISAGMOE_DEBUG_NAN_FILL");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }()};
  return on;
}

} // namespace

bool debugNanFill() { return flag().load(std::memory_order_relaxed); }
void setDebugNanFill(bool on) { flag().store(on, std::memory_order_relaxed); }

std::vector<float> freshFloats(size_t n) {
  return std::vector<float>(n, debugNanFill() ? std::numeric_limits<float>::quiet_NaN() : 0.0f);
}

void freshAssign(std::vector<float> &v, size_t n) {
  v.assign(n, debugNanFill() ? std::numeric_limits<float>::quiet_NaN() : 0.0f);
}

} // namespace disagmoe
