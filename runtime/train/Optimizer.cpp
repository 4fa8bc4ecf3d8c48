// SGD and AdamW steps on fp32 master weights, as PyTorch 1.13's single-tensor ones (Optimizer.h).
#include "runtime/train/Optimizer.h"

#include <cmath>
#include <stdexcept>

namespace disagmoe::train {

OptimizerKind parseOptimizerKind(const std::string &name) {
  if (name == "sgd")
    return OptimizerKind::Sgd;
  if (name == "adamw")
    return OptimizerKind::AdamW;
  throw std::invalid_argument("unknown optimizer \"" + name + "\" (expected sgd or adamw)");
}

const char *toString(OptimizerKind kind) { return kind == OptimizerKind::Sgd ? "sgd" : "adamw"; }

void sgdStep(float *w, const float *g, int64_t n, double lr) {
  // param.add_(grad, alpha=-lr): fp32 multiply-add with alpha rounded to fp32.
  const float alpha = static_cast<float>(-lr);
  for (int64_t i = 0; i < n; ++i)
    w[i] = w[i] + alpha * g[i];
}

void adamwStep(float *w, const float *g, float *m, float *v, int64_t n, int64_t step,
               const OptimizerConfig &c) {
  // The scalars as PyTorch forms them (Python floats, i.e. double), the tensor ops in fp32.
  const float decay = static_cast<float>(1.0 - c.lr * c.weightDecay);
  const float b1 = static_cast<float>(c.beta1), oneMinusB1 = static_cast<float>(1.0 - c.beta1);
  const float b2 = static_cast<float>(c.beta2), oneMinusB2 = static_cast<float>(1.0 - c.beta2);
  const double bias1 = 1.0 - std::pow(c.beta1, static_cast<double>(step));
  const double bias2 = 1.0 - std::pow(c.beta2, static_cast<double>(step));
  const float stepSize = static_cast<float>(c.lr / bias1);
  const float bias2Sqrt = static_cast<float>(std::sqrt(bias2));
  const float eps = static_cast<float>(c.eps);
  for (int64_t i = 0; i < n; ++i) {
    w[i] *= decay;
    m[i] = m[i] * b1 + oneMinusB1 * g[i];
    v[i] = v[i] * b2 + oneMinusB2 * g[i] * g[i];
    const float denom = std::sqrt(v[i]) / bias2Sqrt + eps;
    w[i] = w[i] + (-stepSize) * (m[i] / denom);
  }
}

} // namespace disagmoe::train
