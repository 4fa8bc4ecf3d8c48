// A rank's local experts of one layer through the kernel interface (LocalExperts.h).
#include "runtime/executor/LocalExperts.h"

#include "runtime/tensor/FreshBuffers.h"

namespace disagmoe {

namespace {

// The kernel's name for a plan's non-gated expert activation (isGated(a) is false).
kernels::PlainActivation plainActivation(ExpertActivation a) {
  switch (a) {
  case ExpertActivation::Relu:
    return kernels::PlainActivation::Relu;
  case ExpertActivation::GeluTanh:
    return kernels::PlainActivation::GeluTanh;
  case ExpertActivation::Silu:
    return kernels::PlainActivation::Silu;
  default:
    return kernels::PlainActivation::Identity;
  }
}

} // namespace

kernels::ExpertForm expertForm(const Component &c, const ExpertWeights &ew) {
  kernels::ExpertForm f;
  if (!isGated(c.activation)) { // onnxruntime's non-gated experts: w1 -> act -> w2
    f.kind = kernels::ExpertForm::Kind::NonGated;
    f.activation = plainActivation(c.activation);
  } else if (c.activation == ExpertActivation::Swiglu && !c.fusedGateUp && ew.b1 < 0 && ew.b3 < 0 &&
             ew.b2 < 0) {
    f.kind = kernels::ExpertForm::Kind::Swiglu;
  } else { // the families' expert forms (biases, GPT-OSS's clamped SwiGLU on fused gate/up)
    f.kind = kernels::ExpertForm::Kind::GatedFamily;
    f.oai = c.activation == ExpertActivation::SwigluOai;
    f.limit = c.swigluLimit;
    f.alpha = c.swigluAlpha;
  }
  return f;
}

kernels::ExpertForm denseFfnForm() { return {}; }

kernels::FfnWeights expertWeights(const Component &c, const ExpertWeights &ew,
                                  const WeightOf &weight) {
  kernels::FfnWeights f;
  f.w1 = weight(ew.w1), f.w2 = weight(ew.w2), f.fusedGateUp = c.fusedGateUp;
  f.w3 = ew.w3 >= 0 ? weight(ew.w3) : nullptr;
  f.b1 = ew.b1 >= 0 ? weight(ew.b1) : nullptr;
  f.b3 = ew.b3 >= 0 ? weight(ew.b3) : nullptr;
  f.b2 = ew.b2 >= 0 ? weight(ew.b2) : nullptr;
  return f;
}

kernels::FfnWeights denseFfnWeights(const Component &c, const WeightOf &weight) {
  kernels::FfnWeights f;
  f.w1 = weight(c.w1), f.w3 = weight(c.w3), f.w2 = weight(c.w2);
  return f;
}

std::vector<float> gatherExpertRows(const std::vector<M2nMessage> &messages, int64_t expert,
                                    int64_t hidden, std::vector<ExpertUse> &uses) {
  std::vector<float> x;
  for (size_t s = 0; s < messages.size(); ++s)
    for (size_t t = 0; t < messages[s].tokenIds.size(); ++t)
      for (const ExpertGate &eg : messages[s].routes[t])
        if (eg.expert == expert) {
          uses.push_back({s, t, eg.gate});
          x.insert(x.end(), messages[s].x.begin() + t * hidden,
                   messages[s].x.begin() + (t + 1) * hidden);
        }
  return x;
}

std::vector<LocalExpertRun> runLocalExperts(const kernels::KernelBackend &kernels, const Plan &plan,
                                            int64_t layer, int rank,
                                            const std::vector<M2nMessage> &messages,
                                            const WeightOf &weight,
                                            std::vector<std::vector<float>> &outputs) {
  const ModelSpec &model = plan.model;
  const int64_t H = model.hiddenSize;
  const Component &c = model.components[model.layers[layer].experts];
  // Gather every local expert's rows into one matrix (its offset per expert), then one call.
  std::vector<LocalExpertRun> runs;
  std::vector<int64_t> offsets;
  std::vector<float> x;
  for (const ExpertWeights &ew : c.experts) {
    if (plan.placement.expertToRank[layer][ew.expert] != rank)
      continue;
    LocalExpertRun run{&ew, {}};
    const std::vector<float> rows = gatherExpertRows(messages, ew.expert, H, run.uses);
    offsets.push_back(static_cast<int64_t>(x.size()) / H);
    x.insert(x.end(), rows.begin(), rows.end());
    runs.push_back(std::move(run));
  }
  std::vector<float> y = freshFloats(x.size());
  std::vector<kernels::ExpertProblem> problems;
  for (size_t i = 0; i < runs.size(); ++i) {
    const ExpertWeights &ew = *runs[i].weights;
    problems.push_back({expertForm(c, ew), expertWeights(c, ew, weight), x.data() + offsets[i] * H,
                        static_cast<int64_t>(runs[i].uses.size()), y.data() + offsets[i] * H});
  }
  kernels.expertsForward(problems.data(), static_cast<int64_t>(problems.size()), H,
                         model.expertHidden);
  for (size_t i = 0; i < runs.size(); ++i)
    for (size_t r = 0; r < runs[i].uses.size(); ++r) {
      const ExpertUse &u = runs[i].uses[r];
      kernels.accumulate(y.data() + (offsets[i] + static_cast<int64_t>(r)) * H, u.gate, H,
                         outputs[u.source].data() + u.token * H);
    }
  return runs;
}

} // namespace disagmoe
