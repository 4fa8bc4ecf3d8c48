// Token exchanges on the wire: the count before the payload, both checked against the plan's
// capacity bound of the exchange (docs/plan-format.md "exchanges"; docs/architecture.md
// "Exchanges", "Sizes").
//
// Routing is dropless, so how many tokens an M2N message carries depends on the data. The plan
// bounds every message of an exchange by its `capacity_tokens`; the executor's buffers and the
// memory check are sized by that bound. Each message therefore travels as two comm messages under
// the exchange's tag (Messages.h): an 8-byte count, then the payload of exactly that many tokens.
//
//   sender:   count > capacity_tokens -> CapacityError "exchange m2n.0 (m2n layer 0): rank 1 would
//             send 7 tokens to rank 2, above its capacity bound 6 (...)"; nothing is sent.
//   receiver: takes the count first; a count < 0 or > capacity_tokens (a corrupt or oversized count
//             from a peer) -> CapacityError "exchange m2n.0 (m2n layer 0): rank 1 announced 7
//             tokens for rank 2, above its capacity bound 6"; otherwise it takes the payload and
//             reads exactly `count` tokens from it (Messages.h unpack*Payload), MessageError if
//             malformed.
//
// Ordering: Comm.h guarantees that messages of one (src, dst, tag) arrive in send order, so a
// payload is never taken for another message's count, provided one thread sends the two back to
// back (every exchange of a rank is sent from its comm stream). The backward exchanges of training
// use the same bound as the forward exchange of the same kind and layer (the same tokens,
// reversed).
//
// The rank failing here throws; the executor's abort path (Executor.cpp, Trainer.cpp: the local
// world is aborted; DistributedRun.cpp: MPI_Abort) stops every other rank, so a refusal never
// hangs.
#pragma once

#include "runtime/comm/Comm.h"
#include "runtime/exchange/Messages.h"
#include "runtime/plan/Plan.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace disagmoe {

/// A message count above its exchange's capacity bound (either side), or a negative count.
class CapacityError : public MessageError {
public:
  using MessageError::MessageError;
};

/// The identity and bound of one exchange, as errors name it.
struct ExchangeBound {
  std::string id; ///< the plan's exchanges[].id, e.g. "m2n.0"
  ExchangeKind kind = ExchangeKind::M2n;
  int64_t layer = 0; ///< the plan's exchanges[].layer
  int64_t capacityTokens = 0;
  bool backward = false; ///< the reverse direction (training's gradient exchanges)

  /// "exchange m2n.0 (m2n layer 0)" or "exchange m2n.0 (m2n layer 0, backward)".
  std::string describe() const;
};

/// The bound of exchange `kind` of `layer` in `plan` (embedding / head: the plan's single exchange
/// of that kind, whatever `layer`). Throws PlanError if the plan has none (validation rules it
/// out).
ExchangeBound exchangeBound(const Plan &plan, ExchangeKind kind, int64_t layer,
                            bool backward = false);

/// Throws CapacityError naming the exchange, `rank`, `dst` and `count` if `count` > the bound.
void checkSendCount(const ExchangeBound &bound, int rank, int dst, int64_t count);
/// Throws CapacityError naming the exchange, `src`, `rank` and `count` if `count` < 0 or > the
/// bound.
void checkReceivedCount(const ExchangeBound &bound, int src, int rank, int64_t count);

/// The receiver's first step: reads a count message from `src` (Messages.h unpackCount) and checks
/// it (checkReceivedCount). For callers that post their receives ahead (the executor's comm stream
/// takes the count and the payload as two posted receives of the same (src, tag), in that order);
/// the payload then goes to unpackM2nPayload / unpackRowsPayload with this count.
int64_t takeCount(const ExchangeBound &bound, int src, int rank, const Bytes &countMessage);

/// Sends `message` (its tokenIds.size() tokens) to `dst` under `tag`: the count, then the payload.
/// Returns the bytes put on the wire (8 + payload). Throws CapacityError (nothing sent),
/// MessageError for a malformed message, CommError from the comm.
uint64_t sendM2n(Comm &comm, const ExchangeBound &bound, int dst, int tag,
                 const M2nMessage &message, int64_t hidden);
uint64_t sendRows(Comm &comm, const ExchangeBound &bound, int dst, int tag,
                  const RowsMessage &message, int64_t hidden);

/// Receives one message from `src` under `tag`: the count (waiting at most `timeout`), checked
/// against the bound, then the payload (at most `timeout` more). Throws CapacityError,
/// MessageError, CommAborted, CommError. A deadline that passes after the count was taken is
/// reported as a plain CommError naming the exchange, never as a retryable timeout: the pair is
/// then half-read.
M2nMessage recvM2n(Comm &comm, const ExchangeBound &bound, int src, int tag,
                   std::chrono::milliseconds timeout, int64_t hidden);
RowsMessage recvRows(Comm &comm, const ExchangeBound &bound, int src, int tag,
                     std::chrono::milliseconds timeout, int64_t hidden);

/// The first exchange whose message counts the input shape alone fixes (residual: all of an
/// A-rank's tokens; embedding and head: at most that) with capacity_tokens below
/// `tokensPerAttentionRank`, or null. M2N and N2M counts depend on the routing and are checked per
/// message instead.
const ExchangeSpec *staticExchangeOverCapacity(const Plan &plan, int64_t tokensPerAttentionRank);

} // namespace disagmoe
