// Trainer: weights, gradients and optimizer state, trainRank on every rank per step (Trainer.h).
#include "runtime/train/Trainer.h"

#include "runtime/exchange/CountedExchange.h"
#include "runtime/executor/Heartbeat.h"
#include "runtime/executor/OpProfile.h"

#include "runtime/comm/local/LocalComm.h"
#include "runtime/executor/RankWorker.h"
#include "runtime/io/Npy.h"
#include "runtime/plan/Weights.h"
#include "runtime/tools/DecimalNumber.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

namespace disagmoe::train {

int64_t countTargets(const std::vector<int64_t> &targets) {
  int64_t n = 0;
  for (int64_t t : targets)
    n += t >= 0;
  return n;
}

Trainer::Trainer(const Plan &plan, TrainOptions options) : plan_(plan), options_(options) {
  const int world = plan.placement.worldSize;
  if (options.onlyRank >= world)
    throw ExecError("rank " + std::to_string(options.onlyRank) +
                    " is outside the plan's world of " + std::to_string(world) + " ranks");
  try {
    options.schedule.validate(options.optimizer.lr);
  } catch (const std::invalid_argument &e) {
    throw ExecError(std::string("learning-rate schedule: ") + e.what());
  }
  if (!(options.routerBiasUpdateRate >= 0) || !std::isfinite(options.routerBiasUpdateRate))
    throw ExecError("router bias update rate must be a finite number >= 0 (0: none), got " +
                    tools::decimalText(options.routerBiasUpdateRate));
  if (!(options.capacityFactor >= 0) || !std::isfinite(options.capacityFactor))
    throw ExecError("capacity factor must be a finite number >= 0 (0: dropless), got " +
                    tools::decimalText(options.capacityFactor));
  if (!(options.auxLossCoef >= 0) || !std::isfinite(options.auxLossCoef))
    throw ExecError("aux loss coefficient must be a finite number >= 0, got " +
                    tools::decimalText(options.auxLossCoef));
  // The Switch aux loss (RouterBalancing.cpp) is defined on softmax probabilities of the logits.
  if (options.auxLossCoef > 0 && isSigmoidScoring(plan.model.routerScoring))
    throw ExecError("aux loss coefficient: the load-balancing loss is defined on softmax router "
                    "probabilities, and this plan's router scores with sigmoid (" +
                    std::string(plan.model.routerScoring == RouterScoring::SigmoidGroupTopkRenorm
                                    ? "sigmoid_group_topk_renorm"
                                    : "sigmoid_group_topk") +
                    "); balance it with --router-bias-update-rate (DeepSeek-V3's "
                    "auxiliary-loss-free bias update) instead");
  if (!(options.clipGradNorm >= 0))
    throw ExecError("clip norm must be >= 0 (0: no clipping), got " +
                    tools::decimalText(options.clipGradNorm));
  states_.resize(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r)
    if (options.onlyRank < 0 || options.onlyRank == r)
      states_[r] = RankState(plan, RankWeights(plan, r, options.weights));
}

void Trainer::checkInput(const std::vector<int64_t> &ids, const std::vector<int64_t> &targets,
                         int64_t batch, int64_t seqLen,
                         const std::vector<MicroBatch> &microBatches) const {
  const auto shape = "[" + std::to_string(batch) + "," + std::to_string(seqLen) + "]";
  if (batch < 1 || seqLen < 1)
    throw ExecError("input shape " + shape + " is empty");
  if (static_cast<int64_t>(ids.size()) != batch * seqLen)
    throw ExecError("input has " + std::to_string(ids.size()) + " ids, shape " + shape + " needs " +
                    std::to_string(batch * seqLen));
  if (targets.size() != ids.size())
    throw ExecError("targets have " + std::to_string(targets.size()) + " entries, the input " +
                    std::to_string(ids.size()));
  const int64_t V = plan_.model.vocabSize;
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto at = "[" + std::to_string(i / seqLen) + "," + std::to_string(i % seqLen) + "]";
    if (ids[i] < 0 || ids[i] >= V)
      throw ExecError("input id " + std::to_string(ids[i]) + " at " + at +
                      " is outside the vocabulary [0, " + std::to_string(V) + ")");
    if (targets[i] >= V)
      throw ExecError("target id " + std::to_string(targets[i]) + " at " + at +
                      " is outside the vocabulary [0, " + std::to_string(V) + ")");
  }
  const int64_t da = plan_.placement.attentionSize();
  for (const MicroBatch &mb : microBatches) {
    const int64_t perRank = (mb.end - mb.begin + da - 1) / da * seqLen;
    if (const ExchangeSpec *e = staticExchangeOverCapacity(plan_, perRank)) // M2N/N2M: per message
      throw ExecError("micro-batch of " + std::to_string(mb.end - mb.begin) + " sequences of " +
                      std::to_string(seqLen) + " puts " + std::to_string(perRank) +
                      " tokens on an attention rank, above capacity_tokens " +
                      std::to_string(e->capacityTokens) + " of exchange \"" + e->id + "\"");
  }
}

StepResult Trainer::step(const std::vector<int64_t> &ids, const std::vector<int64_t> &targets,
                         int64_t batch, int64_t seqLen) {
  if (options_.onlyRank >= 0)
    throw ExecError("this trainer holds rank " + std::to_string(options_.onlyRank) +
                    " only; use stepRank with a comm of every rank");
  std::vector<MicroBatch> mbs;
  try {
    mbs = splitMicroBatches(batch, options_.microBatches);
  } catch (const std::invalid_argument &e) {
    throw ExecError(e.what());
  }
  checkInput(ids, targets, batch, seqLen, mbs);
  const int64_t N = countTargets(targets);
  const int world = plan_.placement.worldSize;
  LocalWorld comm(world);
  const StepConfig config = stepConfig();
  std::vector<RankStepResult> results(world);
  std::mutex failureMutex;
  std::exception_ptr firstFailure;
  // A rank that stops answering without waiting for anyone is named after the heartbeat deadline
  // (Heartbeat.h); the receive deadline covers a rank waiting on a dead peer.
  const FaultInjection fault = FaultInjection::fromEnvironment();
  HeartbeatMonitor monitor(world, options_.recvTimeout / 2, [&](const std::string &message) {
    {
      std::lock_guard<std::mutex> lock(failureMutex);
      if (!firstFailure)
        firstFailure = std::make_exception_ptr(CommError(message));
    }
    comm.abort(message);
  });
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      const FinishedGuard finished{monitor, r};
      try {
        // Beats on every message; DISAGMOE_FAULT_INJECT (tests) makes a rank die or go silent.
        std::unique_ptr<Comm> endpoint =
            std::make_unique<MonitoredComm>(comm.endpoint(r), monitor, fault);
        std::unique_ptr<RankRecorder> recorder;
        if (options_.profile)
          recorder = std::make_unique<RankRecorder>(*options_.profile, plan_, r);
        const ScopedRecorder scope(recorder.get());
        results[r] = trainRank(plan_, states_[r], *endpoint, ids, targets, batch, seqLen, mbs, N,
                               config, options_.recvTimeout);
        // After the last backward instruction: all-reduce, grad norm, clipping and optimizer step.
        if (recorder)
          recorder->recordOther("all_reduce + optimizer", "optimizer", "update",
                                recorder->lastEnd());
      } catch (const CommAborted &) {
      } catch (const std::exception &e) {
        {
          std::lock_guard<std::mutex> lock(failureMutex);
          if (!firstFailure)
            firstFailure = std::current_exception();
        }
        comm.abort("rank " + std::to_string(r) + " failed: " + e.what());
      }
    });
  }
  for (auto &t : threads)
    t.join();
  if (options_.profile)
    ++options_.profile->step;
  if (firstFailure)
    std::rethrow_exception(firstFailure);
  return finish(results, N, start);
}

StepConfig Trainer::stepConfig() const {
  StepConfig c;
  c.optimizer = options_.optimizer;
  c.optimizer.lr = options_.schedule.lrAt(options_.optimizer.lr, steps_ + 1);
  c.clipNorm = options_.clipGradNorm;
  c.auxLossCoef = options_.auxLossCoef;
  c.capacityFactor = options_.capacityFactor;
  c.routerBiasUpdateRate = options_.routerBiasUpdateRate;
  return c;
}

// `results`: the loss sums in ascending rank order (both step and stepRank add them so).
StepResult Trainer::finish(const std::vector<RankStepResult> &results, int64_t N,
                           std::chrono::steady_clock::time_point start) {
  StepResult out;
  double total = 0;
  for (const RankStepResult &r : results)
    total += r.lossSum;
  out.loss = N > 0 ? total / static_cast<double>(N) : 0.0;
  out.capacityLimited = options_.capacityFactor > 0;
  for (const RankStepResult &r : results) {
    out.auxLoss += r.auxLossSum;
    if (out.dropped.empty())
      out.dropped = r.dropped;
    else
      for (size_t l = 0; l < r.dropped.size(); ++l)
        out.dropped[l] += r.dropped[l];
    if (out.expertLoad.empty())
      out.expertLoad = r.expertLoad;
    else
      for (size_t l = 0; l < r.expertLoad.size(); ++l)
        for (size_t e = 0; e < r.expertLoad[l].size(); ++e)
          out.expertLoad[l][e] += r.expertLoad[l][e];
  }
  out.targetTokens = N;
  out.lr = options_.schedule.lrAt(options_.optimizer.lr, steps_ + 1);
  // Every rank computed the same norm and coefficient (GradientClipping.h).
  out.gradNorm = results.front().gradNorm;
  out.clipCoef = results.front().clipCoef;
  for (const RankStepResult &r : results) // ascending rank: the lower rank wins ties
    if (r.firstNonFinite.layer >= 0 &&
        (out.firstNonFinite.layer < 0 || r.firstNonFinite.layer < out.firstNonFinite.layer))
      out.firstNonFinite = r.firstNonFinite;
  out.step = ++steps_;
  out.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

StepResult Trainer::stepRank(Comm &comm, const std::vector<int64_t> &ids,
                             const std::vector<int64_t> &targets, int64_t batch, int64_t seqLen) {
  const int me = comm.rank();
  if (comm.worldSize() != plan_.placement.worldSize)
    throw ExecError("the comm has " + std::to_string(comm.worldSize()) + " ranks, the plan " +
                    std::to_string(plan_.placement.worldSize));
  if (states_[me].rank != me)
    throw ExecError("this trainer does not hold rank " + std::to_string(me));
  std::vector<MicroBatch> mbs;
  try {
    mbs = splitMicroBatches(batch, options_.microBatches);
  } catch (const std::invalid_argument &e) {
    throw ExecError(e.what());
  }
  checkInput(ids, targets, batch, seqLen, mbs);
  const int64_t N = countTargets(targets);
  const auto start = std::chrono::steady_clock::now();
  const RankStepResult mine = trainRank(plan_, states_[me], comm, ids, targets, batch, seqLen, mbs,
                                        N, stepConfig(), options_.recvTimeout);
  // Loss gather: the tag after the all-reduce tags (TrainStep.cpp: 6 L + weight index).
  const int tag = static_cast<int>(6 * plan_.model.numLayers +
                                   static_cast<int64_t>(plan_.model.weights.size()));
  // Message: [loss sum, aux loss sum, expert load (L * E), dropped (L)] as doubles, added in
  // ascending rank order.
  const int64_t L = plan_.model.numLayers, E = plan_.model.numExperts;
  const auto flatten = [&](const RankStepResult &r) {
    std::vector<double> v(static_cast<size_t>(2 + L * E + L), 0.0);
    v[0] = r.lossSum, v[1] = r.auxLossSum;
    for (size_t l = 0; l < r.expertLoad.size(); ++l)
      for (size_t e = 0; e < r.expertLoad[l].size(); ++e)
        v[2 + l * E + e] = static_cast<double>(r.expertLoad[l][e]);
    for (size_t l = 0; l < r.dropped.size(); ++l)
      v[2 + L * E + l] = static_cast<double>(r.dropped[l]);
    return v;
  };
  std::vector<double> total = flatten(mine);
  const auto toBytes = [](const std::vector<double> &v) {
    Bytes b(v.size() * sizeof(double));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  const auto fromBytes = [&](const Bytes &b, int src) {
    if (b.size() != total.size() * sizeof(double))
      throw ExecError("loss message from rank " + std::to_string(src) + " is malformed");
    std::vector<double> v(total.size());
    std::memcpy(v.data(), b.data(), b.size());
    return v;
  };
  if (me == 0) {
    for (int r = 1; r < comm.worldSize(); ++r) {
      const std::vector<double> part = fromBytes(comm.recv(r, tag, options_.recvTimeout), r);
      for (size_t i = 0; i < total.size(); ++i)
        total[i] += part[i];
    }
    for (int r = 1; r < comm.worldSize(); ++r)
      comm.send(r, tag, toBytes(total));
  } else {
    comm.send(0, tag, toBytes(total));
    total = fromBytes(comm.recv(0, tag, options_.recvTimeout), 0);
  }
  RankStepResult gathered = mine;
  gathered.lossSum = total[0];
  gathered.auxLossSum = total[1];
  gathered.expertLoad.assign(static_cast<size_t>(L),
                             std::vector<int64_t>(static_cast<size_t>(E), 0));
  for (int64_t l = 0; l < L; ++l)
    for (int64_t e = 0; e < E; ++e)
      gathered.expertLoad[l][e] = static_cast<int64_t>(total[2 + l * E + e]);
  gathered.dropped.assign(static_cast<size_t>(L), 0);
  for (int64_t l = 0; l < L; ++l)
    gathered.dropped[l] = static_cast<int64_t>(total[2 + L * E + l]);
  return finish({gathered}, N, start);
}

std::string expertLoadLine(const StepResult &r) {
  std::string s = "step " + std::to_string(r.step) + " expert load:";
  for (size_t l = 0; l < r.expertLoad.size(); ++l) {
    s += " l" + std::to_string(l) + " [";
    for (size_t e = 0; e < r.expertLoad[l].size(); ++e)
      s += (e ? " " : "") + std::to_string(r.expertLoad[l][e]);
    s += "]";
  }
  if (r.capacityLimited) {
    s += " | dropped per layer [";
    for (size_t l = 0; l < r.dropped.size(); ++l)
      s += (l ? " " : "") + std::to_string(r.dropped[l]);
    s += "]";
  }
  return s + "\n";
}

std::string expertLoadSummary(const StepResult &r) {
  int64_t lo = 0, hi = 0, idle = 0, total = 0, slots = 0, experts = 0;
  size_t hiLayer = 0, hiExpert = 0;
  bool any = false;
  for (size_t l = 0; l < r.expertLoad.size(); ++l) {
    experts = std::max<int64_t>(experts, static_cast<int64_t>(r.expertLoad[l].size()));
    for (size_t e = 0; e < r.expertLoad[l].size(); ++e) {
      const int64_t c = r.expertLoad[l][e];
      if (!any || c < lo)
        lo = c;
      if (!any || c > hi)
        hi = c, hiLayer = l, hiExpert = e;
      any = true;
      idle += c == 0;
      total += c;
      ++slots;
    }
  }
  std::string s = "step " + std::to_string(r.step) + " expert load (" +
                  std::to_string(r.expertLoad.size()) + " layer" +
                  (r.expertLoad.size() == 1 ? "" : "s") + " x " + std::to_string(experts) +
                  " experts): ";
  if (!any || total == 0) {
    s += "no token routed";
  } else {
    char text[200];
    const double mean = static_cast<double>(total) / static_cast<double>(slots);
    std::snprintf(text, sizeof text,
                  "tokens per expert %lld-%lld, busiest %lld = %.2f x the mean (layer %zu expert "
                  "%zu), %lld idle expert slot%s",
                  static_cast<long long>(lo), static_cast<long long>(hi),
                  static_cast<long long>(hi), static_cast<double>(hi) / mean, hiLayer, hiExpert,
                  static_cast<long long>(idle), idle == 1 ? "" : "s");
    s += text;
  }
  if (r.capacityLimited) {
    int64_t dropped = 0;
    for (const int64_t d : r.dropped)
      dropped += d;
    s += " | dropped " + std::to_string(dropped);
  }
  return s + " (--verbose: every count)\n";
}

std::string droppedJson(const StepResult &r) {
  std::string s = "[";
  for (size_t l = 0; l < r.dropped.size(); ++l)
    s += (l ? ", " : "") + std::to_string(r.dropped[l]);
  return s + "]";
}

std::string expertLoadJson(const StepResult &r) {
  std::string s = "[";
  for (size_t l = 0; l < r.expertLoad.size(); ++l) {
    s += l ? ", [" : "[";
    for (size_t e = 0; e < r.expertLoad[l].size(); ++e)
      s += (e ? ", " : "") + std::to_string(r.expertLoad[l][e]);
    s += "]";
  }
  return s + "]";
}

const RankState *Trainer::holder(int index) const {
  for (int r : plan_.model.weights.at(static_cast<size_t>(index)).ranks)
    if (states_[r].rank == r)
      return &states_[r];
  return nullptr;
}

bool Trainer::holds(int index) const { return holder(index) != nullptr; }

const Tensor &Trainer::weight(int index) const {
  const RankState *s = holder(index);
  if (!s)
    throw ExecError("weight \"" + plan_.model.weights[index].name +
                    "\" is not held in this process");
  return s->weights[index];
}

const Tensor &Trainer::gradient(int index) const {
  const RankState *s = holder(index);
  if (!s)
    throw ExecError("weight \"" + plan_.model.weights[index].name +
                    "\" is not held in this process");
  return s->grads[index];
}

const Tensor &Trainer::firstMoment(int index) const {
  const RankState *s = holder(index);
  if (!s)
    throw ExecError("weight \"" + plan_.model.weights[index].name +
                    "\" is not held in this process");
  return s->m[index];
}

const Tensor &Trainer::secondMoment(int index) const {
  const RankState *s = holder(index);
  if (!s)
    throw ExecError("weight \"" + plan_.model.weights[index].name +
                    "\" is not held in this process");
  return s->v[index];
}

void Trainer::restore(int index, const Tensor &weight, const Tensor *m, const Tensor *v) {
  const auto &spec = plan_.model.weights.at(static_cast<size_t>(index));
  for (int r : spec.ranks) {
    RankState &st = states_[r];
    if (st.rank != r)
      continue;
    const auto check = [&](const Tensor &t, const char *what) {
      if (t.shape != st.weights[index].shape)
        throw ExecError(std::string(what) + " of weight \"" + spec.name + "\" has shape " +
                        shapeToString(t.shape) + ", the plan's is " +
                        shapeToString(st.weights[index].shape));
    };
    check(weight, "value");
    st.weights[index] = weight;
    if (m)
      check(*m, "AdamW first moment");
    if (v)
      check(*v, "AdamW second moment");
    st.m[index] = m ? *m : Tensor();
    st.v[index] = v ? *v : Tensor();
  }
}

void Trainer::restoreSteps(int64_t steps) {
  steps_ = steps;
  for (RankState &st : states_)
    st.step = steps;
}

void Trainer::restoreRouterBias(int64_t layer, const std::vector<float> &bias) {
  if (static_cast<int64_t>(bias.size()) != plan_.model.numExperts)
    throw ExecError("router selection bias of layer " + std::to_string(layer) + " has " +
                    std::to_string(bias.size()) + " entries, the model " +
                    std::to_string(plan_.model.numExperts) + " experts");
  for (int r : plan_.placement.attentionGroupOfLayer(layer).ranks)
    if (states_[r].rank == r)
      states_[r].routerBias[layer] = bias;
}

void Trainer::save(const std::string &dir, bool gradients) const {
  std::filesystem::create_directories(dir);
  const std::vector<std::string> keys = weightKeys(plan_.model);
  for (size_t i = 0; i < plan_.model.weights.size(); ++i) {
    const int lowest = plan_.model.weights[i].ranks.front();
    if (states_[lowest].rank != lowest)
      continue;
    writeNpyFloat32(dir + "/" + keys[i] + ".npy",
                    gradients ? states_[lowest].grads[i] : states_[lowest].weights[i]);
  }
  if (gradients || options_.routerBiasUpdateRate <= 0)
    return;
  const int64_t E = plan_.model.numExperts;
  for (int64_t l = 0; l < plan_.model.numLayers; ++l) {
    const int lowest = plan_.placement.attentionGroupOfLayer(l).ranks.front();
    if (states_[lowest].rank != lowest)
      continue;
    Tensor bias({E});
    std::copy(states_[lowest].routerBias[l].begin(), states_[lowest].routerBias[l].end(),
              bias.data.begin());
    writeNpyFloat32(dir + "/l" + std::to_string(l) + "_router_selection_bias.npy", bias);
  }
}

void Trainer::saveWeights(const std::string &dir) const { save(dir, false); }
void Trainer::saveGradients(const std::string &dir) const { save(dir, true); }

} // namespace disagmoe::train
