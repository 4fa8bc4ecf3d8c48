// Wire format of the token exchanges (docs/plan-format.md "exchanges", docs/architecture.md
// "Exchanges"). Every message of an exchange travels as two comm messages under the same tag, count
// first:
//
//   count message:           int64 count (exactly 8 bytes): the tokens of the payload that follows.
//   payload message, M2N (A-rank -> F-rank):
//                            int64 token_ids[count] (strictly ascending),
//                            float32 x[count][hidden] (the ffn-normed activations),
//                            then per token: int64 n_local, n_local x (int64 expert_id, float32
//                            gate) (only the receiver's experts, ascending expert id).
//   payload message, N2M (F-rank -> A-rank): int64 token_ids[count], float32 y[count][hidden].
//   Residual (A -> A), embedding (F -> A) and head (A -> F): the N2M layout.
//
// The receiver reads the count, checks it against the exchange's capacity bound and sizes its
// buffers from it before it takes the payload (CountedExchange.h); Comm.h's non-overtaking rule per
// (src, dst, tag) keeps each payload behind its own count. A zero-token message is still sent
// (count 0 and an empty payload), so every receive completes. Token ids are indices into the
// flattened [batch, seq] input (sequence s, position i -> s*seq + i). All fields are little-endian,
// packed without padding.
//
// packM2n / packRows give both messages concatenated (count, then payload: the bytes one exchange
// message puts on the wire), for byte accounting and tests.
#pragma once

#include "runtime/comm/Comm.h"
#include "runtime/plan/Plan.h"

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace disagmoe {

/// A malformed message (wrong size, unsorted ids, bad counts); the message says what is wrong.
class MessageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct ExpertGate {
  int64_t expert = 0;
  float gate = 0;
};

struct M2nMessage {
  std::vector<int64_t> tokenIds;               ///< [count], strictly ascending
  std::vector<float> x;                        ///< [count * hidden]
  std::vector<std::vector<ExpertGate>> routes; ///< [count], each ascending by expert
};

/// N2M and residual payloads.
struct RowsMessage {
  std::vector<int64_t> tokenIds; ///< [count], strictly ascending
  std::vector<float> rows;       ///< [count * hidden]
};

/// The count message: 8 bytes, int64 `count` (>= 0; throws MessageError otherwise).
Bytes packCount(int64_t count);
/// Throws MessageError unless `bytes` is exactly 8 bytes; returns the int64 it holds (any sign:
/// the caller checks it against the exchange's bound).
int64_t unpackCount(const Bytes &bytes);

/// The M2N payload (no count). Throws MessageError if x or routes do not match the token count.
Bytes packM2nPayload(const M2nMessage &message, int64_t hidden);
/// Reads an M2N payload of exactly `count` tokens (0 <= count, from the count message): allocates
/// count ids, count x hidden activations and count routes only after checking that `bytes` is long
/// enough for them. Throws MessageError if it is not a well-formed payload of `count` tokens.
M2nMessage unpackM2nPayload(const Bytes &bytes, int64_t count, int64_t hidden);

/// The N2M / residual / embedding / head payload (no count).
Bytes packRowsPayload(const RowsMessage &message, int64_t hidden);
/// Reads such a payload of exactly `count` tokens; throws MessageError otherwise.
RowsMessage unpackRowsPayload(const Bytes &bytes, int64_t count, int64_t hidden);

/// Count message followed by payload, concatenated (see the file comment).
Bytes packM2n(const M2nMessage &message, int64_t hidden);
/// Throws MessageError if `bytes` is not a well-formed M2N count + payload for `hidden`.
M2nMessage unpackM2n(const Bytes &bytes, int64_t hidden);

Bytes packRows(const RowsMessage &message, int64_t hidden);
/// Throws MessageError if `bytes` is not a well-formed N2M/residual count + payload for `hidden`.
RowsMessage unpackRows(const Bytes &bytes, int64_t hidden);

/// The comm tag of exchange `kind` of `layer`: distinct per (kind, layer), so a late message of one
/// exchange can never be taken for another: 3 * layer + (0 m2n, 1 n2m, 2 residual); the FFN-side
/// embedding and head messages pass layer = num_layers and get 3L and 3L + 1.
int exchangeTag(ExchangeKind kind, int64_t layer);

} // namespace disagmoe
