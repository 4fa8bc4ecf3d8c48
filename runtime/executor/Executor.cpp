// Forward pass of a plan on the cpu backend and local comm, one thread per rank (Executor.h).
#include "runtime/executor/Executor.h"

#include "runtime/comm/local/LocalComm.h"
#include "runtime/exchange/CountedExchange.h"
#include "runtime/executor/Heartbeat.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>

namespace disagmoe {

Executor::Executor(const Plan &plan, ExecutorOptions options) : plan_(plan), options_(options) {
  for (int r = 0; r < plan.placement.worldSize; ++r)
    weights_.emplace_back(plan, r, options_.weights);
}

void validateShape(const Plan &plan, int64_t batch, int64_t seqLen) {
  const std::string shape = "[" + std::to_string(batch) + "," + std::to_string(seqLen) + "]";
  if (batch < 1 || seqLen < 1)
    throw ExecError("input shape " + shape + " is empty");
  // Overflow-safe: a wrapped product would pass the capacity check below and then fail to allocate.
  const int64_t da = plan.placement.attentionSize();
  int64_t total = 0, perRank = 0;
  if (__builtin_mul_overflow(batch, seqLen, &total) ||
      __builtin_mul_overflow(batch / da + (batch % da != 0), seqLen, &perRank))
    throw ExecError("input " + shape + " has more than 2^63 - 1 tokens");
  // A residual message carries all of an attention rank's tokens (embedding and head messages at
  // most those); M2N/N2M counts depend on the routing and are checked per message
  // (CountedExchange.h).
  if (const ExchangeSpec *e = staticExchangeOverCapacity(plan, perRank))
    throw ExecError("input " + shape + " puts " + std::to_string(perRank) +
                    " tokens on an attention rank, above capacity_tokens " +
                    std::to_string(e->capacityTokens) + " of exchange \"" + e->id +
                    "\" (compile the plan for this shape with --batch/--seq-len)");
}

void validateInput(const Plan &plan, const std::vector<int64_t> &ids, int64_t batch,
                   int64_t seqLen) {
  validateShape(plan, batch, seqLen);
  if (static_cast<int64_t>(ids.size()) != batch * seqLen)
    throw ExecError("input has " + std::to_string(ids.size()) + " ids, shape [" +
                    std::to_string(batch) + "," + std::to_string(seqLen) + "] needs " +
                    std::to_string(batch * seqLen));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= plan.model.vocabSize)
      throw ExecError("input id " + std::to_string(ids[i]) + " at [" + std::to_string(i / seqLen) +
                      "," + std::to_string(i % seqLen) + "] is outside the vocabulary [0, " +
                      std::to_string(plan.model.vocabSize) + ")");
}

RunResult Executor::run(const std::vector<int64_t> &ids, int64_t batch, int64_t seqLen) const {
  validateInput(plan_, ids, batch, seqLen);
  const int world = plan_.placement.worldSize;
  LocalWorld comm(world);
  std::vector<RankResult> results(world);
  std::mutex failureMutex;
  std::exception_ptr firstFailure;
  // A rank that stops answering without waiting for anyone is named after the heartbeat deadline
  // (Heartbeat.h); the receive deadline covers a rank waiting on a dead peer.
  const FaultInjection fault = FaultInjection::fromEnvironment();
  HeartbeatMonitor monitor(world, options_.heartbeatDeadline, [&](const std::string &message) {
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
        results[r] = runRank(plan_, weights_[r], *endpoint, ids, batch, seqLen,
                             options_.recvTimeout, options_.recordRouting);
      } catch (const CommAborted &) {
        // Secondary: another rank failed first and reported the cause.
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
  const auto stop = std::chrono::steady_clock::now();
  if (firstFailure)
    std::rethrow_exception(firstFailure);

  RunResult out;
  out.batch = batch;
  out.seqLen = seqLen;
  out.wallSeconds = std::chrono::duration<double>(stop - start).count();
  const int64_t H = plan_.model.hiddenSize, V = plan_.model.vocabSize;
  out.hidden = Tensor({batch, seqLen, H});
  out.logits = Tensor({batch, seqLen, V});
  for (const RankResult &r : results) {
    for (size_t i = 0; i < r.tokenIds.size(); ++i) {
      std::copy_n(r.hidden.begin() + i * H, H, out.hidden.data.begin() + r.tokenIds[i] * H);
      std::copy_n(r.logits.begin() + i * V, V, out.logits.data.begin() + r.tokenIds[i] * V);
    }
    out.exchanges.insert(out.exchanges.end(), r.sent.begin(), r.sent.end());
    out.experts.insert(out.experts.end(), r.experts.begin(), r.experts.end());
  }
  if (options_.recordRouting) {
    const int64_t k = plan_.model.topK;
    out.routing.assign(plan_.model.numLayers, std::vector<int64_t>(batch * seqLen * k, -1));
    for (const RankResult &r : results)
      for (const RoutingRecord &rec : r.routing)
        for (size_t i = 0; i < rec.tokenIds.size(); ++i)
          std::copy_n(rec.topIds.begin() + i * k, k,
                      out.routing[rec.layer].begin() + rec.tokenIds[i] * k);
  }
  std::sort(out.exchanges.begin(), out.exchanges.end(),
            [](const ExchangeRecord &a, const ExchangeRecord &b) {
              return std::make_tuple(a.layer, static_cast<int>(a.kind), a.src, a.dst) <
                     std::make_tuple(b.layer, static_cast<int>(b.kind), b.src, b.dst);
            });
  std::sort(out.experts.begin(), out.experts.end(),
            [](const ExpertRecord &a, const ExpertRecord &b) {
              return std::make_pair(a.layer, a.expert) < std::make_pair(b.layer, b.expert);
            });
  return out;
}

} // namespace disagmoe
