// Optimizers of the training step, on fp32 master weights (on the CPU backend the weights are fp32
// already, so the master weights are the weights themselves). Both follow PyTorch 1.13's
// single-tensor implementations (torch/optim/sgd.py, torch/optim/adamw.py) operation for
// operation, so one step from the same gradient gives the same weights within fp32 rounding.
#pragma once

#include <cstdint>
#include <string>

namespace disagmoe::train {

enum class OptimizerKind { Sgd, AdamW };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Sgd;
  double lr = 0.1;
  // AdamW only (PyTorch's defaults).
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
};

/// "sgd" or "adamw"; throws std::invalid_argument otherwise.
OptimizerKind parseOptimizerKind(const std::string &name);
const char *toString(OptimizerKind kind);

/// Plain SGD without momentum or weight decay: w -= lr * g.
void sgdStep(float *w, const float *g, int64_t n, double lr);

/// One AdamW step (decoupled weight decay), `step` >= 1 the step number after this update:
///   w *= 1 - lr * wd
///   m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2
///   w -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
/// m and v (the fp32 moment buffers, zero before the first step) are updated in place. A zero
/// gradient (an expert that received no token) still decays the weight.
void adamwStep(float *w, const float *g, float *m, float *v, int64_t n, int64_t step,
               const OptimizerConfig &config);

} // namespace disagmoe::train
