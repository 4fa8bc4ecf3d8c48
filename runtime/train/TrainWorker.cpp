// One micro-batch's walk of its role's program, forward then in reverse, one instruction at a
// time on the group that runs it; failures name the rank and the instruction (TrainWorker.h).
#include "runtime/train/TrainWorker.h"

#include "runtime/executor/OpProfile.h"
#include "runtime/plan/InstructionRunner.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace disagmoe::train::detail {

TrainWorker::TrainWorker(const Plan &plan, RankState &state, Comm &comm, const int64_t *ids,
                         const int64_t *targets, int64_t batch, int64_t seqLen, float gradScale,
                         std::chrono::milliseconds timeout, double auxCoef, int64_t globalTokens,
                         double capacityFactor, bool biasSelection, int64_t microBatch,
                         const kernels::KernelBackend &kernels)
    : microBatch_(microBatch), kernels_(kernels),
      weightOf_([&state](int index) { return state.weights[index].data.data(); }), plan_(plan),
      model_(plan.model), placement_(plan.placement), state_(state), comm_(comm), ids_(ids),
      targets_(targets), batch_(batch), seqLen_(seqLen), gradScale_(gradScale), timeout_(timeout),
      auxCoef_(auxCoef), globalTokens_(globalTokens), capacityFactor_(capacityFactor),
      biasSelection_(biasSelection), ctx_(plan, comm.rank(), batch, seqLen), rank_(ctx_.rank),
      group_(ctx_.group), index_(ctx_.index), L_(model_.numLayers), tokens_(ctx_.tokens()) {
  if (group_.role == GroupRole::Attention) {
    attn_.resize(static_cast<size_t>(L_ + 1));
    expertLoad_.assign(static_cast<size_t>(L_),
                       std::vector<int64_t>(static_cast<size_t>(model_.numExperts), 0));
    dropped_.assign(static_cast<size_t>(L_), 0);
  } else {
    ffn_.resize(static_cast<size_t>(L_));
  }
}

void TrainWorker::runForward() {
  const auto &program =
      group_.role == GroupRole::Attention ? plan_.programs.attention : plan_.programs.ffn;
  for (size_t i = 0; i < program.size(); ++i)
    step(program, i, false);
}

void TrainWorker::runBackward() {
  const auto &program =
      group_.role == GroupRole::Attention ? plan_.programs.attention : plan_.programs.ffn;
  for (size_t i = program.size(); i-- > 0;)
    step(program, i, true);
}

// Records the first forward instruction whose output holds a NaN or an Inf (one pass over the
// output; for naming the layer when the loss diverges).
void TrainWorker::checkFinite(const Instruction &ins) {
  const auto bad = [](const std::vector<float> &v) {
    for (float x : v)
      if (!std::isfinite(x))
        return true;
    return false;
  };
  const int64_t l = ins.layer;
  bool found = false;
  if (group_.role == GroupRole::Attention) {
    switch (ins.op) {
    case OpCode::Embed:
      found = bad(attn_[0].x);
      break;
    case OpCode::RmsNorm:
      found = bad(ins.role == NormRole::AttnNorm  ? attn_[l].attnNorm
                  : ins.role == NormRole::FfnNorm ? attn_[l].ffnNorm
                                                  : finalNorm_);
      break;
    case OpCode::Attention:
      found = bad(attnOut_);
      break;
    case OpCode::ResidualAdd:
      found = bad(attn_[l].h);
      break;
    case OpCode::Router:
      found = bad(attn_[l].logits);
      break;
    case OpCode::N2mRecv:
      found = bad(attn_[l + 1].x);
      break;
    case OpCode::Head:
      found = !std::isfinite(lossSum_);
      break;
    default:
      break;
    }
  } else if (ins.op == OpCode::Experts) {
    for (const auto &rows : ffn_[l].dy)
      found = found || bad(rows);
  }
  if (!found)
    return;
  std::string what = toString(ins.op);
  if (ins.op == OpCode::RmsNorm)
    what += std::string(" ") + toString(ins.role);
  firstNonFinite_ = {
      ins.op == OpCode::Head ? model_.numLayers : std::max<int64_t>(l, 0),
      what + (ins.layer >= 0 ? " of layer " + std::to_string(ins.layer) : std::string()) +
          " on rank " + std::to_string(rank_)};
}

void TrainWorker::step(const std::vector<Instruction> &program, size_t i, bool backward) {
  const Instruction &ins = program[i];
  if (&runnerOf(plan_, ins) != &group_) // InstructionRunner.h
    return;
  const bool attention = group_.role == GroupRole::Attention;
  RankRecorder *recorder = RankRecorder::current(); // --op-times-out / --trace (OpProfile.h)
  const double started = recorder ? recorder->now() : 0;
  try {
    if (attention)
      backward ? attentionBackward(ins) : attentionForward(ins);
    else
      backward ? ffnBackward(ins) : ffnForward(ins);
    if (recorder)
      recorder->record(ins, backward, started, microBatch_);
    if (!backward && firstNonFinite_.layer < 0)
      checkFinite(ins);
  } catch (const CommAborted &) {
    throw;
  } catch (const std::exception &e) {
    std::string what = toString(ins.op);
    if (ins.op == OpCode::RmsNorm)
      what += std::string(" ") + toString(ins.role);
    if (ins.layer >= 0)
      what += " of layer " + std::to_string(ins.layer);
    throw ExecError("rank " + std::to_string(rank_) + " (" + toString(group_.role) + " group " +
                    std::to_string(group_.index) + "): programs." + toString(group_.role) + "[" +
                    std::to_string(i) + "] " + what + (backward ? " (backward)" : " (forward)") +
                    ": " + e.what());
  }
}

} // namespace disagmoe::train::detail
