// One rank's interpreter: runs its role's program (plan.programs.attention or .ffn) in order,
// executing the instructions that belong to its group and skipping the rest.
//
// Which group runs an instruction: runnerOf (runtime/plan/InstructionRunner.h), the rule the
// training step shares.
//
// Streams (docs/architecture.md, "The plan and the executor", Streams): the calling thread is the
// rank's compute stream and runs its instructions in list order; a comm worker (CommStream.h) is
// its comm stream and the only caller of `comm`. A send instruction packs its message on the
// compute stream and queues it (returns at once); a receive instruction posts its receives (all its
// senders at once) and waits on each one's event, ascending rank, where it unpacks. runRank returns
// after every queued send has been handed to `comm`. The forward pass has one compute stream: what
// overlaps is the communication (a rank computes while its sends go out and its posted receives
// arrive).
#pragma once

#include "runtime/backends/KernelBackend.h"
#include "runtime/comm/Comm.h"
#include "runtime/plan/Plan.h"
#include "runtime/plan/Weights.h"

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace disagmoe {

/// A failure while running a plan; the message names the rank and the instruction.
class ExecError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One message sent during a run.
struct ExchangeRecord {
  ExchangeKind kind = ExchangeKind::M2n;
  int64_t layer = 0;
  int src = 0, dst = 0; ///< global ranks
  int64_t tokens = 0;
  uint64_t bytes = 0; ///< the whole message: its 8-byte count message plus the payload
};

/// One expert run: layer, expert id, the rank it ran on and how many tokens it processed.
struct ExpertRecord {
  int64_t layer = 0, expert = 0;
  int rank = 0;
  int64_t tokens = 0;
};

/// Routing hook (observatory): the router's top-k expert ids of one layer on one A-rank, recorded
/// only when runRank is called with recordRouting = true.
struct RoutingRecord {
  int64_t layer = 0;
  std::vector<int64_t> tokenIds; ///< flat token ids ([batch, seq] row-major), ascending
  std::vector<int64_t> topIds;   ///< [tokens, top_k]: descending router score, ties to the lower id
};

/// What one rank produced.
struct RankResult {
  std::vector<int64_t> tokenIds; ///< the head group's A-ranks: their tokens (flat ids), ascending
  std::vector<float> hidden;     ///< [tokens, hidden]: the residual stream entering the final norm
  std::vector<float> logits;     ///< [tokens, vocab]
  std::vector<ExchangeRecord> sent;
  std::vector<ExpertRecord> experts;
  std::vector<RoutingRecord> routing; ///< empty unless recordRouting
};

/// Runs `comm.rank()`'s program over the token ids `ids` ([batch, seqLen] row-major, already
/// checked against the vocabulary and the residual capacity bounds: validateInput). Every exchange
/// sends its count before its payload and both sides check it against the exchange's
/// capacity_tokens (runtime/exchange/CountedExchange.h). Receives wait at most `recvTimeout`.
/// Throws ExecError naming the rank and the instruction (an M2N/N2M message over its bound:
/// "... exchange m2n.0 (m2n layer 0): rank R would send N tokens to rank D, above its capacity
/// bound C ..."), CommError for a timed-out receive, and
/// CommAborted when another rank failed first. With `recordRouting`, every `router` instruction
/// also appends its top-k ids to RankResult::routing. Every kernel runs on `kernels`
/// (runtime/backends/KernelBackend.h; host-memory backends only: the worker's activations are host
/// vectors).
RankResult runRank(const Plan &plan, const RankWeights &weights, Comm &comm,
                   const std::vector<int64_t> &ids, int64_t batch, int64_t seqLen,
                   std::chrono::milliseconds recvTimeout, bool recordRouting = false,
                   const kernels::KernelBackend &kernels = kernels::cpuKernels());

} // namespace disagmoe
