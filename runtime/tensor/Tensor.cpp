// The dense row-major fp32 Tensor: construction, element counts, shape strings (Tensor.h).
#include "runtime/tensor/Tensor.h"

namespace disagmoe {

int64_t numelOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string shapeToString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor::Tensor(std::vector<int64_t> shape_)
    : shape(std::move(shape_)), data(static_cast<size_t>(numelOf(shape)), 0.0f) {}

} // namespace disagmoe
