// The executor: runs a validated plan's forward pass with the cpu backend and the local comm
// backend: one thread per global rank, each running its role's program (RankWorker.h).
//
// Usage:
//   Plan plan = loadPlan("out/plan");              // throws PlanError
//   Executor exec(plan);                           // binds each rank's weights; throws WeightError
//   RunResult r = exec.run(ids, batch, seqLen);    // throws ExecError / CommError
//   r.logits: [batch, seqLen, vocab] fp32
#pragma once

#include "runtime/executor/OpProfile.h"
#include "runtime/executor/RankWorker.h"
#include "runtime/plan/Plan.h"
#include "runtime/plan/Weights.h"
#include "runtime/tensor/Tensor.h"

#include <chrono>
#include <vector>

namespace disagmoe {

struct ExecutorOptions {
  /// How long a receive waits for its message before the run fails naming the peer.
  std::chrono::milliseconds recvTimeout{60000};
  /// A rank that neither sends, receives nor waits in a receive for this long is declared silent
  /// and the run fails naming it (Heartbeat.h); 0: no watchdog. Shorter than recvTimeout, so the
  /// silent rank is named before its peers' receives time out.
  std::chrono::milliseconds heartbeatDeadline{30000};
  /// Routing hook for the observatory (docs/observatory.md): fill RunResult::routing.
  bool recordRouting = false;
  /// Non-null: every executed instruction of every rank is timed into it (OpProfile.h; step 0).
  OpProfile *profile = nullptr;
  /// Non-empty: the weights come from here instead of the plan's files (Weights.h).
  WeightSource weights;
};

struct RunResult {
  int64_t batch = 0, seqLen = 0;
  Tensor logits; ///< [batch, seqLen, vocab]: the head's output
  Tensor hidden; ///< [batch, seqLen, hidden]: the residual stream after the last layer (final
                 ///< norm's input)
  std::vector<ExchangeRecord> exchanges; ///< every message, sorted by (layer, kind, src, dst)
  std::vector<ExpertRecord> experts;     ///< every expert run, sorted by (layer, expert)
  /// With ExecutorOptions::recordRouting: per layer, [batch * seqLen * top_k] router top-k expert
  /// ids in flat token order (token s*seqLen+i, then the k ids by descending score); otherwise
  /// empty.
  std::vector<std::vector<int64_t>> routing;
  double wallSeconds = 0; ///< the ranks' run, from thread start to the last join
};

/// Checks the shape [batch, seqLen] alone against the plan, before any id or buffer is allocated:
/// batch, seqLen >= 1, batch * seqLen and ceil(batch / D_A) * seqLen representable in int64
/// (checked without overflowing), and ceil(batch / D_A) * seqLen <= capacity_tokens of the
/// residual, embedding and head exchanges (the bound that makes every later allocation of the run
/// proportional to the plan's compiled capacity). Throws ExecError naming the shape and the bound.
void validateShape(const Plan &plan, int64_t batch, int64_t seqLen);

/// Checks token ids `ids` ([batch, seqLen] row-major) against the plan before any rank starts:
/// a non-empty shape, ids in [0, vocab), and at most capacity_tokens tokens per attention rank
/// (ceil(batch / D_A) * seqLen) for the residual, embedding and head exchanges, whose counts the
/// shape fixes. M2N/N2M counts depend on the routing: runRank checks them per message.
/// Throws ExecError naming the offending id or exchange.
void validateInput(const Plan &plan, const std::vector<int64_t> &ids, int64_t batch,
                   int64_t seqLen);

class Executor {
public:
  /// Binds the weights of every rank of `plan` (which must outlive the executor).
  explicit Executor(const Plan &plan, ExecutorOptions options = {});

  /// Runs one forward pass over `ids` ([batch, seqLen] row-major token ids). Throws ExecError if
  /// the shape is empty, an id is outside the vocabulary, or an attention rank would hold more
  /// tokens than a residual/embedding/head exchange's capacity_tokens; otherwise the first rank
  /// failure (ExecError, e.g. an M2N message above its exchange's bound, or CommError). The other
  /// ranks are aborted, never left waiting.
  RunResult run(const std::vector<int64_t> &ids, int64_t batch, int64_t seqLen) const;

private:
  const Plan &plan_;
  ExecutorOptions options_;
  std::vector<RankWeights> weights_; // [worldSize]
};

} // namespace disagmoe
