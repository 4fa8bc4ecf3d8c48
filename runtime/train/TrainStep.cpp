// One rank's training step: its micro-batches' workers (TrainWorker.h) on the forward and backward
// streams, then the all-reduce, clipping and optimizer step (TrainStep.h).
#include "runtime/train/TrainStep.h"

#include "runtime/executor/CommStream.h"
#include "runtime/executor/Event.h"
#include "runtime/executor/OpProfile.h"
#include "runtime/executor/RankWorker.h"
#include "runtime/train/GradientClipping.h"
#include "runtime/train/TrainWorker.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

namespace disagmoe::train {

namespace {

// The first model form of `plan` whose backward the training step does not have, as
// "model.components[i]: training does not support <form> yet (layer l <kind>[: detail])"; empty
// when every component is trainable.
// Checked at setup so that such a plan is refused with one line instead of failing (or reading a
// missing weight) mid-step.
std::string untrainableForm(const Plan &plan) {
  for (size_t i = 0; i < plan.model.components.size(); ++i) {
    const Component &c = plan.model.components[i];
    std::string form, detail;
    switch (c.kind) {
    case ComponentKind::DenseFfn:
      if (!c.onFfnSide)
        break; // the attention side's dense FFN / shared experts have a backward
      form = "dense_ffn components";
      detail =
          std::string(c.denseRole == DenseFfnRole::Shared ? "shared experts" : "the dense FFN") +
          " on the " + (c.onFfnSide ? "ffn" : "attention") + " side";
      break;
    case ComponentKind::Experts:
      if (isGated(c.activation))
        break; // SwiGLU and the clamped SwiGLU have a backward
      form = "non-gated experts";
      detail = "activation " +
               std::string(c.activation == ExpertActivation::Relu       ? "relu"
                           : c.activation == ExpertActivation::GeluTanh ? "gelu_tanh"
                           : c.activation == ExpertActivation::Silu     ? "silu"
                                                                        : "identity") +
               ", w1 -> act -> w2, has no backward kernel";
      break;
    default:
      break;
    }
    if (form.empty())
      continue;
    return "model.components[" + std::to_string(i) + "]: training does not support " + form +
           " yet (" + (c.layer >= 0 ? "layer " + std::to_string(c.layer) + " " : std::string()) +
           toString(c.kind) + (detail.empty() ? "" : ": " + detail) + ")";
  }
  return {};
}

} // namespace

RankState::RankState(const Plan &plan, const RankWeights &bound) : rank(bound.rank()) {
  // Forms without a backward yet are refused up front, naming the component and the form.
  if (const std::string form = untrainableForm(plan); !form.empty())
    throw ExecError(plan.path + ": " + form +
                    "; only the forward pass (disagmoe-run without --train) runs this plan");
  if (plan.placement.embeddingOnFfn || plan.placement.headOnFfn)
    throw ExecError(
        plan.path + ": placement." +
        (plan.placement.embeddingOnFfn ? "embedding_side" : "head_side") +
        ": training does not support the embedding or head on the ffn side yet; only the forward "
        "pass (disagmoe-run without --train) runs this plan");
  const size_t n = plan.model.weights.size();
  routerBias.assign(static_cast<size_t>(plan.model.numLayers),
                    std::vector<float>(static_cast<size_t>(plan.model.numExperts), 0.0f));
  buffers.assign(n, 0);
  for (const Component &c : plan.model.components)
    if (c.kind == ComponentKind::Router && c.correctionBias >= 0)
      buffers[static_cast<size_t>(c.correctionBias)] = 1;
  weights.resize(n);
  grads.resize(n);
  m.resize(n);
  v.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto &ranks = plan.model.weights[i].ranks;
    if (!std::binary_search(ranks.begin(), ranks.end(), rank))
      continue;
    weights[i] = bound.get(static_cast<int>(i));
    grads[i] = Tensor(weights[i].shape);
  }
}

std::vector<MicroBatch> splitMicroBatches(int64_t batch, int64_t count) {
  if (count < 1 || count > batch)
    throw std::invalid_argument("cannot split " + std::to_string(batch) + " sequences into " +
                                std::to_string(count) +
                                " micro-batches (need 1 <= micro-batches <= batch)");
  std::vector<MicroBatch> out;
  int64_t begin = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t size = batch / count + (i < batch % count ? 1 : 0);
    out.push_back({begin, begin + size});
    begin += size;
  }
  return out;
}

int backwardTag(ExchangeKind kind, int64_t layer, int64_t numLayers) {
  return static_cast<int>(3 * numLayers + 3 * layer + static_cast<int>(kind));
}

namespace {

using detail::allReduceTag;
using detail::biasLoadTag;
using detail::TrainWorker;

// Sum of replicated weights' gradients over their holders: one Comm::allReduceSum per holder set,
// in ascending rank order on local/mpi (its default; see header and Comm.h), ncclAllReduce on nccl.
void allReduce(const Plan &plan, RankState &state, Comm &comm, std::chrono::milliseconds timeout) {
  std::map<std::vector<int>, std::vector<int>> sets; // holders -> weight indices (ascending)
  for (size_t i = 0; i < plan.model.weights.size(); ++i)
    if (state.holds(static_cast<int>(i)) && plan.model.weights[i].ranks.size() > 1)
      sets[plan.model.weights[i].ranks].push_back(static_cast<int>(i));
  for (const auto &[holders, indices] : sets) {
    const int tag = allReduceTag(plan.model.numLayers, indices.front());
    size_t total = 0;
    for (int i : indices)
      total += state.grads[i].data.size();
    std::vector<float> flat(total);
    size_t at = 0;
    for (int i : indices) {
      const auto &g = state.grads[i].data;
      std::copy(g.begin(), g.end(), flat.begin() + static_cast<std::ptrdiff_t>(at));
      at += g.size();
    }
    comm.allReduceSum(holders, tag, flat.data(), total, timeout);
    at = 0;
    for (int i : indices) {
      auto &g = state.grads[i].data;
      std::copy(flat.begin() + static_cast<std::ptrdiff_t>(at),
                flat.begin() + static_cast<std::ptrdiff_t>(at + g.size()), g.begin());
      at += g.size();
    }
  }
}

void optimizerStep(RankState &state, const OptimizerConfig &config) {
  ++state.step;
  for (size_t i = 0; i < state.weights.size(); ++i) {
    if (state.weights[i].empty() || (i < state.buffers.size() && state.buffers[i]))
      continue;
    float *w = state.weights[i].data.data();
    const float *g = state.grads[i].data.data();
    const int64_t n = state.weights[i].numel();
    if (config.kind == OptimizerKind::Sgd) {
      sgdStep(w, g, n, config.lr);
    } else {
      if (state.m[i].empty()) {
        state.m[i] = Tensor(state.weights[i].shape);
        state.v[i] = Tensor(state.weights[i].shape);
      }
      adamwStep(w, g, state.m[i].data.data(), state.v[i].data.data(), n, state.step, config);
    }
  }
}

// DeepSeek-V3's bias update (StepConfig::routerBiasUpdateRate) of every layer whose router this
// rank runs: the group's A-ranks exchange their step loads and add them in ascending rank order.
void updateRouterBias(const Plan &plan, RankState &state, Comm &comm,
                      std::chrono::milliseconds timeout,
                      const std::vector<std::vector<int64_t>> &load, double rate) {
  const int64_t E = plan.model.numExperts;
  for (int64_t l = 0; l < plan.model.numLayers; ++l) {
    const std::vector<int> &ranks = plan.placement.attentionGroupOfLayer(l).ranks;
    if (std::find(ranks.begin(), ranks.end(), state.rank) == ranks.end())
      continue;
    std::vector<double> mine(static_cast<size_t>(E), 0.0);
    if (static_cast<size_t>(l) < load.size())
      for (int64_t e = 0; e < E; ++e)
        mine[e] = static_cast<double>(load[l][e]);
    const int tag = biasLoadTag(plan.model, l);
    Bytes out(mine.size() * sizeof(double));
    std::memcpy(out.data(), mine.data(), out.size());
    for (int r : ranks)
      if (r != state.rank)
        comm.send(r, tag, out);
    std::vector<double> total(mine.size(), 0.0), part(mine.size());
    for (int r : ranks) {
      if (r == state.rank) {
        part = mine;
      } else {
        const Bytes in = comm.recv(r, tag, timeout);
        if (in.size() != out.size())
          throw ExecError("rank " + std::to_string(state.rank) + ": router load of layer " +
                          std::to_string(l) + " from rank " + std::to_string(r) + " has " +
                          std::to_string(in.size()) + " bytes, expected " +
                          std::to_string(out.size()));
        std::memcpy(part.data(), in.data(), in.size());
      }
      for (int64_t e = 0; e < E; ++e)
        total[e] += part[e];
    }
    double sum = 0;
    for (double c : total)
      sum += c;
    const double mean = sum / static_cast<double>(E);
    const float u = static_cast<float>(rate);
    for (int64_t e = 0; e < E; ++e) {
      const float sign = total[e] < mean ? 1.0f : total[e] > mean ? -1.0f : 0.0f;
      state.routerBias[l][e] += u * sign;
    }
  }
}

// How many micro-batches the forward stream may run ahead of the backward stream (forward of
// micro-batch i waits for the backward of i - ahead): in the plan's AF-Pipe schedule, the forward
// micro-batches this rank's group starts before its first backward compute (the 1F1B warm-up);
// without a schedule 2, 1F1B's steady state of one forward beside one backward. In [1, count].
size_t forwardsAhead(const Plan &plan, int rank, size_t count) {
  size_t ahead = 2;
  if (plan.schedule) {
    const sched::Schedule &s = *plan.schedule;
    for (size_t g = 0; g < s.groups.size(); ++g) {
      if (s.groups[g].ranks.empty())
        continue;
      const std::vector<int> &ranks = s.groups[g].ranks[0];
      if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end())
        continue;
      const sched::Program *program = s.program(s.groups[g].role);
      if (!program)
        continue;
      std::set<int> warmup;
      for (const sched::Instr &in : program->instrs) {
        if (in.group != static_cast<int>(g) || in.kind != sched::Kind::Compute)
          continue;
        if (in.phase == sched::Phase::Backward)
          break;
        if (in.phase == sched::Phase::Forward)
          warmup.insert(in.mb);
      }
      if (!warmup.empty())
        ahead = warmup.size();
    }
  }
  return std::max<size_t>(1, std::min(ahead, count));
}

// Runs the micro-batches' forwards on this thread (the forward stream) and their backwards, in
// ascending micro-batch order, on a second thread (the backward stream): backward i waits for the
// event "forward i done", forward i waits for "backward i - ahead done". Only the backward stream
// writes weight gradients, one micro-batch after the other, so they accumulate in the order the
// sequential step used and keep its bits. The first failure of either stream fails the other's
// events and the comm stream's pending receives (so neither waits for a deadline) and is rethrown
// once both threads have ended.
void runComputeStreams(std::vector<std::unique_ptr<TrainWorker>> &workers, CommStream &stream,
                       size_t ahead) {
  const size_t count = workers.size();
  std::vector<Event> forwardDone(count), backwardDone(count);
  std::mutex failureMutex;
  std::exception_ptr failure;
  const auto fail = [&](std::vector<Event> &mine, size_t from) {
    std::exception_ptr error = std::current_exception();
    {
      std::lock_guard<std::mutex> lock(failureMutex);
      if (!failure)
        failure = error;
      error = failure;
    }
    for (size_t j = from; j < count; ++j)
      mine[j].fail(error);
    stream.abort(error);
  };
  RankRecorder *recorder = RankRecorder::current();
  std::thread backward([&] {
    const ScopedRecorder scope(recorder);
    for (size_t i = 0; i < count; ++i) {
      try {
        forwardDone[i].wait();
        workers[i]->runBackward();
        backwardDone[i].record();
      } catch (...) {
        fail(backwardDone, i);
        return;
      }
    }
  });
  for (size_t i = 0; i < count; ++i) {
    try {
      if (i >= ahead)
        backwardDone[i - ahead].wait();
      workers[i]->runForward();
      forwardDone[i].record();
    } catch (...) {
      fail(forwardDone, i);
      break;
    }
  }
  backward.join();
  if (failure)
    std::rethrow_exception(failure);
}
} // namespace

RankStepResult trainRank(const Plan &plan, RankState &state, Comm &comm,
                         const std::vector<int64_t> &ids, const std::vector<int64_t> &targets,
                         int64_t batch, int64_t seqLen, const std::vector<MicroBatch> &microBatches,
                         int64_t targetTokens, const StepConfig &config,
                         std::chrono::milliseconds recvTimeout) {
  if (static_cast<int64_t>(ids.size()) != batch * seqLen || ids.size() != targets.size())
    throw ExecError("rank " + std::to_string(state.rank) + ": ids/targets do not have " +
                    std::to_string(batch * seqLen) + " entries");
  for (Tensor &g : state.grads)
    std::fill(g.data.begin(), g.data.end(), 0.0f);
  // An empty batch of targets has no loss: scale 0 keeps every gradient zero.
  const float scale =
      targetTokens > 0 ? static_cast<float>(1.0 / static_cast<double>(targetTokens)) : 0.0f;
  RankStepResult result;
  // The comm stream: the only caller of `comm` from here on (CommStream.h).
  CommStream stream(comm);
  const size_t count = microBatches.size();
  std::vector<std::unique_ptr<TrainWorker>> workers;
  for (size_t i = 0; i < count; ++i) {
    const MicroBatch &mb = microBatches[i];
    workers.push_back(std::make_unique<TrainWorker>(
        plan, state, stream, ids.data() + mb.begin * seqLen, targets.data() + mb.begin * seqLen,
        mb.end - mb.begin, seqLen, scale, recvTimeout, config.auxLossCoef, batch * seqLen,
        config.capacityFactor, config.routerBiasUpdateRate > 0, static_cast<int64_t>(i),
        config.kernels ? *config.kernels : kernels::cpuKernels()));
  }
  runComputeStreams(workers, stream, forwardsAhead(plan, state.rank, count));
  // Per-micro-batch results in micro-batch order, as the sequential step added them.
  for (const auto &worker : workers) {
    result.lossSum += worker->lossSum();
    result.targetTokens += worker->targetTokens();
    result.auxLossSum += worker->auxLossSum();
    const auto &drops = worker->dropped();
    if (result.dropped.empty())
      result.dropped = drops;
    else
      for (size_t l = 0; l < drops.size(); ++l)
        result.dropped[l] += drops[l];
    const auto &load = worker->expertLoad();
    if (result.expertLoad.empty())
      result.expertLoad = load;
    else
      for (size_t l = 0; l < load.size(); ++l)
        for (size_t e = 0; e < load[l].size(); ++e)
          result.expertLoad[l][e] += load[l][e];
    if (result.firstNonFinite.layer < 0)
      result.firstNonFinite = worker->firstNonFinite();
  }
  workers.clear(); // the activations
  allReduce(plan, state, stream, recvTimeout);
  result.gradNorm = globalGradNorm(plan, state, stream, recvTimeout);
  if (config.clipNorm > 0)
    result.clipCoef = clipGradients(state, result.gradNorm, config.clipNorm);
  optimizerStep(state, config.optimizer);
  if (config.routerBiasUpdateRate > 0)
    updateRouterBias(plan, state, stream, recvTimeout, result.expertLoad,
                     config.routerBiasUpdateRate);
  stream.flush(); // every send handed on before the rank reports done
  return result;
}

std::vector<std::string> weightKeys(const ModelSpec &model) {
  std::vector<std::string> keys(model.weights.size());
  const auto set = [&](int index, const std::string &key) {
    if (index >= 0 && keys[index].empty())
      keys[index] = key;
  };
  for (const Component &c : model.components) {
    const std::string L = "l" + std::to_string(c.layer) + "_";
    switch (c.kind) {
    case ComponentKind::Embedding:
      set(c.weight, "embed");
      break;
    case ComponentKind::Head:
      set(c.weight, "head");
      break;
    case ComponentKind::RmsNorm:
      set(c.weight, c.role == NormRole::FinalNorm  ? "final_norm"
                    : c.role == NormRole::AttnNorm ? L + "attn_norm"
                                                   : L + "ffn_norm");
      break;
    case ComponentKind::Attention:
      set(c.wq, L + "q");
      set(c.wk, L + "k");
      set(c.wv, L + "v");
      set(c.wo, L + "o");
      set(c.bq, L + "q_bias");
      set(c.bk, L + "k_bias");
      set(c.bv, L + "v_bias");
      set(c.bo, L + "o_bias");
      set(c.sinks, L + "sinks");
      set(c.qNorm, L + "q_norm");
      set(c.kNorm, L + "k_norm");
      break;
    case ComponentKind::Router:
      set(c.weight, L + "router");
      set(c.bias, L + "router_bias");
      break;
    case ComponentKind::DenseFfn: {
      const std::string D = L + (c.denseRole == DenseFfnRole::Shared ? "shared_" : "dense_");
      set(c.w1, D + "w1");
      set(c.w3, D + "w3");
      set(c.w2, D + "w2");
      break;
    }
    case ComponentKind::MlaAttention:
      set(c.wq, L + "q");
      set(c.wkvA, L + "kv_a");
      set(c.kvNorm, L + "kv_norm");
      set(c.wkvB, L + "kv_b");
      set(c.wo, L + "o");
      break;
    case ComponentKind::Experts:
      for (const ExpertWeights &e : c.experts) {
        const std::string E = L + "expert" + std::to_string(e.expert) + "_";
        set(e.w1, E + "w1");
        set(e.w3, E + "w3");
        set(e.w2, E + "w2");
        set(e.b1, E + "b1");
        set(e.b3, E + "b3");
        set(e.b2, E + "b2");
      }
      break;
    }
  }
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i].empty())
      keys[i] = "weight" + std::to_string(i);
  return keys;
}

} // namespace disagmoe::train
