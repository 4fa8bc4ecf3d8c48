// The ffn program's instructions in training, forward and backward: the F-rank's side of the
// M2N / N2M exchanges and its local experts (TrainWorker.h).
#include "runtime/train/TrainWorker.h"

#include "runtime/executor/LocalExperts.h"
#include "runtime/tensor/FreshBuffers.h"

#include <string>

namespace disagmoe::train::detail {

void TrainWorker::ffnForward(const Instruction &ins) {
  const int64_t H = model_.hiddenSize, l = ins.layer;
  FfnLayer &f = ffn_[l];
  switch (ins.op) {
  case OpCode::M2nRecv: {
    f.messages.clear();
    for (int a : placement_.attentionGroupOfLayer(l).ranks) {
      M2nMessage m = recvM2n(a, ExchangeKind::M2n, l, false);
      ctx_.checkM2nRoutes(m, l, a);
      f.messages.push_back(std::move(m));
    }
    f.received = true;
    break;
  }
  case OpCode::Experts: {
    need(f.received, "the M2N messages of layer " + std::to_string(l));
    std::vector<std::vector<float>> outputs(f.messages.size());
    for (size_t s = 0; s < f.messages.size(); ++s)
      outputs[s].assign(f.messages[s].tokenIds.size() * H, 0.0f); // accumulates g_e * E_e(x)
    f.uses.clear();
    f.experts.clear();
    // The forward worker's expert compute (LocalExperts.h), one grouped call.
    for (LocalExpertRun &run :
         runLocalExperts(kernels_, plan_, l, rank_, f.messages, weightOf_, outputs)) {
      f.uses.push_back(std::move(run.uses));
      f.experts.push_back(run.weights);
    }
    f.dy = std::move(outputs); // the N2M payloads until n2m_send
    f.computed = true;
    break;
  }
  case OpCode::N2mSend: {
    need(f.computed, "the expert outputs of layer " + std::to_string(l));
    const Group &next = placement_.nextAttentionGroup(l);
    for (size_t s = 0; s < f.messages.size(); ++s)
      sendRows(comm_, bound(ExchangeKind::N2m, l, false), next.ranks[s],
               fwdTag(ExchangeKind::N2m, l), {f.messages[s].tokenIds, f.dy[s]}, H);
    f.dy.clear();
    break;
  }
  default:
    throw ExecError("not an ffn instruction");
  }
}

void TrainWorker::ffnBackward(const Instruction &ins) {
  const int64_t H = model_.hiddenSize, l = ins.layer;
  FfnLayer &f = ffn_[l];
  switch (ins.op) {
  case OpCode::N2mSend: {
    need(f.computed, "the forward of layer " + std::to_string(l));
    const Group &next = placement_.nextAttentionGroup(l);
    f.dy.assign(f.messages.size(), {});
    for (size_t s = 0; s < f.messages.size(); ++s) {
      RowsMessage m = recvRows(next.ranks[s], ExchangeKind::N2m, l, true);
      if (m.tokenIds != f.messages[s].tokenIds)
        throw ExecError("dL/dy from rank " + std::to_string(next.ranks[s]) +
                        " does not carry the tokens this rank sent it");
      f.dy[s] = std::move(m.rows);
    }
    f.hasDy = true;
    break;
  }
  case OpCode::Experts: {
    need(f.hasDy, "dL/dy of layer " + std::to_string(l) + " (n2m_send backward)");
    f.dx.assign(f.messages.size(), {});
    f.dGates.assign(f.messages.size(), {});
    for (size_t s = 0; s < f.messages.size(); ++s) {
      f.dx[s].assign(f.messages[s].tokenIds.size() * H, 0.0f); // accumulates over local experts
      f.dGates[s].assign(f.messages[s].tokenIds.size(), {});
    }
    for (size_t e = 0; e < f.experts.size(); ++e) {
      const ExpertWeights &ew = *f.experts[e];
      std::vector<ExpertUse> uses;
      const std::vector<float> x = gatherExpertRows(f.messages, ew.expert, H, uses);
      const int64_t rows = static_cast<int64_t>(uses.size());
      std::vector<float> dy = freshFloats(rows * H), dx = freshFloats(rows * H),
                         y = freshFloats(rows * H);
      for (int64_t r = 0; r < rows; ++r) {
        const float *up = f.dy[uses[r].source].data() + uses[r].token * H;
        for (int64_t j = 0; j < H; ++j)
          dy[r * H + j] = uses[r].gate * up[j];
      }
      const Component &c = component(model_.layers[l].experts);
      kernels::FfnGrads g;
      g.w1 = grad(ew.w1), g.w2 = grad(ew.w2);
      g.w3 = ew.w3 >= 0 ? grad(ew.w3) : nullptr;
      g.b1 = ew.b1 >= 0 ? grad(ew.b1) : nullptr;
      g.b3 = ew.b3 >= 0 ? grad(ew.b3) : nullptr;
      g.b2 = ew.b2 >= 0 ? grad(ew.b2) : nullptr;
      kernels_.expertBackward(expertForm(c, ew), expertWeights(c, ew, weightOf_), x.data(),
                              dy.data(), rows, H, model_.expertHidden, dx.data(), g, y.data());
      for (int64_t r = 0; r < rows; ++r) {
        float *out = f.dx[uses[r].source].data() + uses[r].token * H;
        const float *up = f.dy[uses[r].source].data() + uses[r].token * H;
        double dot = 0;
        for (int64_t j = 0; j < H; ++j) {
          out[j] += dx[r * H + j];
          dot += static_cast<double>(up[j]) * y[r * H + j];
        }
        f.dGates[uses[r].source][uses[r].token].push_back({ew.expert, static_cast<float>(dot)});
      }
    }
    f.hasDx = true;
    break;
  }
  case OpCode::M2nRecv: {
    need(f.hasDx, "the expert gradients of layer " + std::to_string(l));
    const auto &aranks = placement_.attentionGroupOfLayer(l).ranks;
    for (size_t s = 0; s < f.messages.size(); ++s) {
      M2nMessage m{f.messages[s].tokenIds, std::move(f.dx[s]), std::move(f.dGates[s])};
      sendM2n(comm_, bound(ExchangeKind::M2n, l, true), aranks[s], bwdTag(ExchangeKind::M2n, l), m,
              H);
    }
    f = FfnLayer{};
    break;
  }
  default:
    throw ExecError("not an ffn instruction");
  }
}

} // namespace disagmoe::train::detail
