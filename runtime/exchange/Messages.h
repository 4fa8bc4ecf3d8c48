// Wire format of the token exchanges (docs/plan-format.md "exchanges", DESIGN.md "Exchanges").
// All fields little-endian, packed without padding:
//
//   M2N (A-rank -> F-rank):  int64 count, int64 token_ids[count] (strictly ascending),
//                            float32 x[count][hidden] (the ffn-normed activations),
//                            then per token: int64 n_local, n_local x (int64 expert_id, float32 gate)
//                            (only the receiver's experts, ascending expert id).
//   N2M (F-rank -> A-rank):  int64 count, int64 token_ids[count], float32 y[count][hidden].
//   Residual (A -> A):       the N2M layout, carrying h (the residual stream after attention).
//
// A zero-token message (count 0) is still sent, so every receive completes. Token ids are indices
// into the flattened [batch, seq] input (sequence s, position i -> s*seq + i).
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

Bytes packM2n(const M2nMessage& message, int64_t hidden);
/// Throws MessageError if `bytes` is not a well-formed M2N message for `hidden`.
M2nMessage unpackM2n(const Bytes& bytes, int64_t hidden);

Bytes packRows(const RowsMessage& message, int64_t hidden);
/// Throws MessageError if `bytes` is not a well-formed N2M/residual message for `hidden`.
RowsMessage unpackRows(const Bytes& bytes, int64_t hidden);

/// The comm tag of exchange `kind` of `layer`: distinct per (kind, layer), so a late message of one
/// exchange can never be taken for another: 3 * layer + (0 m2n, 1 n2m, 2 residual); the FFN-side
/// embedding and head messages pass layer = num_layers and get 3L and 3L + 1.
int exchangeTag(ExchangeKind kind, int64_t layer);

} // namespace disagmoe
