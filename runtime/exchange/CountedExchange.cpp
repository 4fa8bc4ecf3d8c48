// Token exchanges as a count then a payload, both checked against capacity (CountedExchange.h).
#include "runtime/exchange/CountedExchange.h"

#include <utility>

namespace disagmoe {
namespace {

// The count and its payload; a deadline after the count is a failure of the exchange, not a timeout
// a polling caller could retry (it would take the next payload for a count).
template <typename Message, typename Unpack>
Message recvCounted(Comm &comm, const ExchangeBound &bound, int src, int tag,
                    std::chrono::milliseconds timeout, Unpack unpack) {
  const int64_t count = takeCount(bound, src, comm.rank(), comm.recv(src, tag, timeout));
  Bytes payload;
  try {
    payload = comm.recv(src, tag, timeout);
  } catch (const CommAborted &) {
    throw;
  } catch (const CommError &e) {
    throw CommError(bound.describe() + ": the count " + std::to_string(count) + " from rank " +
                    std::to_string(src) + " arrived but its payload did not: " + e.what());
  }
  return unpack(payload, count);
}

// Both back to back from this thread, so no other message of (this rank, dst, tag) falls between.
uint64_t sendCounted(Comm &comm, int dst, int tag, int64_t count, Bytes payload) {
  const uint64_t bytes = sizeof(int64_t) + payload.size();
  comm.send(dst, tag, packCount(count));
  comm.send(dst, tag, std::move(payload));
  return bytes;
}

} // namespace

std::string ExchangeBound::describe() const {
  return "exchange " + id + " (" + toString(kind) + " layer " + std::to_string(layer) +
         (backward ? ", backward" : "") + ")";
}

ExchangeBound exchangeBound(const Plan &plan, ExchangeKind kind, int64_t layer, bool backward) {
  const bool single = kind == ExchangeKind::Embedding || kind == ExchangeKind::Head;
  for (const ExchangeSpec &e : plan.exchanges)
    if (e.kind == kind && (single || e.layer == layer))
      return {e.id, e.kind, e.layer, e.capacityTokens, backward};
  throw PlanError(plan.path + ": exchanges: no " + toString(kind) + " exchange for layer " +
                  std::to_string(layer));
}

void checkSendCount(const ExchangeBound &bound, int rank, int dst, int64_t count) {
  if (count > bound.capacityTokens)
    throw CapacityError(
        bound.describe() + ": rank " + std::to_string(rank) + " would send " +
        std::to_string(count) + " tokens to rank " + std::to_string(dst) +
        ", above its capacity bound " + std::to_string(bound.capacityTokens) +
        " (capacity_tokens; recompile with a larger --capacity-tokens, or without it for dropless "
        "bounds)");
}

void checkReceivedCount(const ExchangeBound &bound, int src, int rank, int64_t count) {
  if (count < 0 || count > bound.capacityTokens)
    throw CapacityError(
        bound.describe() + ": rank " + std::to_string(src) + " announced " + std::to_string(count) +
        " tokens for rank " + std::to_string(rank) +
        (count < 0 ? std::string(", a negative count")
                   : ", above its capacity bound " + std::to_string(bound.capacityTokens)));
}

int64_t takeCount(const ExchangeBound &bound, int src, int rank, const Bytes &countMessage) {
  int64_t count = 0;
  try {
    count = unpackCount(countMessage);
  } catch (const MessageError &e) {
    throw MessageError(bound.describe() + ": from rank " + std::to_string(src) + ": " + e.what());
  }
  checkReceivedCount(bound, src, rank, count);
  return count;
}

uint64_t sendM2n(Comm &comm, const ExchangeBound &bound, int dst, int tag,
                 const M2nMessage &message, int64_t hidden) {
  const auto count = static_cast<int64_t>(message.tokenIds.size());
  checkSendCount(bound, comm.rank(), dst,
                 count); // before packing: an oversized message is never built
  return sendCounted(comm, dst, tag, count, packM2nPayload(message, hidden));
}

uint64_t sendRows(Comm &comm, const ExchangeBound &bound, int dst, int tag,
                  const RowsMessage &message, int64_t hidden) {
  const auto count = static_cast<int64_t>(message.tokenIds.size());
  checkSendCount(bound, comm.rank(), dst, count);
  return sendCounted(comm, dst, tag, count, packRowsPayload(message, hidden));
}

M2nMessage recvM2n(Comm &comm, const ExchangeBound &bound, int src, int tag,
                   std::chrono::milliseconds timeout, int64_t hidden) {
  return recvCounted<M2nMessage>(comm, bound, src, tag, timeout,
                                 [&](const Bytes &payload, int64_t count) {
                                   return unpackM2nPayload(payload, count, hidden);
                                 });
}

RowsMessage recvRows(Comm &comm, const ExchangeBound &bound, int src, int tag,
                     std::chrono::milliseconds timeout, int64_t hidden) {
  return recvCounted<RowsMessage>(comm, bound, src, tag, timeout,
                                  [&](const Bytes &payload, int64_t count) {
                                    return unpackRowsPayload(payload, count, hidden);
                                  });
}

const ExchangeSpec *staticExchangeOverCapacity(const Plan &plan, int64_t tokensPerAttentionRank) {
  for (const ExchangeSpec &e : plan.exchanges)
    if (e.kind != ExchangeKind::M2n && e.kind != ExchangeKind::N2m &&
        tokensPerAttentionRank > e.capacityTokens)
      return &e;
  return nullptr;
}

} // namespace disagmoe
