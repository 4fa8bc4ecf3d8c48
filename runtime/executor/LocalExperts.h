// A rank's local experts of one layer over the tokens its M2N messages brought, computed through
// the kernel interface (runtime/backends/KernelBackend.h); shared by the forward worker
// (RankWorker.cpp) and the training worker (runtime/train/FfnSideStep.cpp), so both pick the same
// kernel form for an expert and sum its outputs in the same order.
//
// Layout (runtime/backends/cuda/DispatchPlan.h's, which a grouped GEMM takes): local expert i's
// tokens are rows offsets[i] .. offsets[i] + counts[i] - 1 of one [rows, hidden] matrix, experts in
// the component's order (ascending id), each expert's tokens in message order (senders ascending,
// then token order). Each token's output accumulates g_e * E_e(x) in ascending expert id, as
// HF Mixtral's MixtralSparseMoeBlock loops over experts (modeling_mixtral.py).
#pragma once

#include "runtime/backends/KernelBackend.h"
#include "runtime/exchange/Messages.h"
#include "runtime/plan/Plan.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace disagmoe {

/// A weight's fp32 values by index into ModelSpec::weights (in the backend's memory space).
using WeightOf = std::function<const float *(int index)>;

/// The kernel form of expert `ew` of component `c` (KernelTypes.h ExpertForm): a plain SwiGLU
/// (no biases, separate gate and up) is Swiglu; biases, a fused gate/up or GPT-OSS's clamped
/// SwiGLU are GatedFamily; relu/gelu_tanh/silu/identity experts are NonGated.
kernels::ExpertForm expertForm(const Component &c, const ExpertWeights &ew);

/// The form of a dense FFN / shared experts component (SwiGLU, no biases).
kernels::ExpertForm denseFfnForm();

/// The weights of expert `ew` of `c` (nullable biases and w3 where the plan has none).
kernels::FfnWeights expertWeights(const Component &c, const ExpertWeights &ew,
                                  const WeightOf &weight);

/// The weights of a dense FFN / shared experts component (w1, w3, w2).
kernels::FfnWeights denseFfnWeights(const Component &c, const WeightOf &weight);

/// One token of one message routed to a local expert, with its gate.
struct ExpertUse {
  size_t source, token; ///< message index, token index within it
  float gate;
};

/// The rows (x, [uses, hidden]) of every token of `messages` routed to `expert`, in message
/// order; appends one ExpertUse per row to `uses`.
std::vector<float> gatherExpertRows(const std::vector<M2nMessage> &messages, int64_t expert,
                                    int64_t hidden, std::vector<ExpertUse> &uses);

/// One local expert's run: its weights and the tokens it took.
struct LocalExpertRun {
  const ExpertWeights *weights = nullptr;
  std::vector<ExpertUse> uses;
};

/// Every expert of layer `layer` that `placement.expertToRank` puts on `rank`, in the component's
/// order, over the tokens of `messages` routed to it, in one KernelBackend::expertsForward call;
/// then outputs[source][token * hidden ..] += gate * E(x) per expert in that order (outputs:
/// [messages][count * hidden], already sized). Returns the runs in that order.
std::vector<LocalExpertRun> runLocalExperts(const kernels::KernelBackend &kernels, const Plan &plan,
                                            int64_t layer, int rank,
                                            const std::vector<M2nMessage> &messages,
                                            const WeightOf &weight,
                                            std::vector<std::vector<float>> &outputs);

} // namespace disagmoe
