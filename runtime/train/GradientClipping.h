// Gradient clipping by the global L2 norm over every weight of the model, across all ranks
// (torch.nn.utils.clip_grad_norm_ in PyTorch 1.13, norm_type 2):
//
//   total = sqrt(sum over weights w of ||g_w||^2)      each weight counted once, however replicated
//   coef  = max_norm / (total + 1e-6);  if coef < 1:  g *= coef   (every gradient, fp32)
//
// Each rank sums the squares (in double, weight index order) of the gradients it is the LOWEST
// holder of (after the all-reduce every holder has the same gradient); rank 0 adds the partial
// sums in ascending rank order and sends the total back, so every rank and comm backend computes
// the same bits.
#pragma once

#include "runtime/comm/Comm.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/TrainStep.h"

#include <chrono>

namespace disagmoe::train {

/// Tag of the norm gather: after the all-reduce tags (6 L + weight index) and the loss gather's.
int gradNormTag(const ModelSpec &model);

/// The global gradient L2 norm over all ranks (every rank returns the same value). Throws
/// CommError / ExecError like the all-reduce.
double globalGradNorm(const Plan &plan, const RankState &state, Comm &comm,
                      std::chrono::milliseconds timeout);

/// Scales every gradient this rank holds by PyTorch's clip coefficient when `totalNorm` exceeds
/// `maxNorm` (> 0); returns the coefficient applied (1 when none).
double clipGradients(RankState &state, double totalNorm, double maxNorm);

} // namespace disagmoe::train
