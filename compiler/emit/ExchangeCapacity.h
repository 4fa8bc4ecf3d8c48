//===- ExchangeCapacity.h - capacity bounds of a plan's M2N/N2M exchanges -*- C++ -*-===//
//
// `disagmoe compile --capacity-tokens N`: the most tokens one M2N or N2M message may carry
// (docs/plan-format.md, "exchanges", capacity_tokens). By default every exchange is bounded by the
// compiled batch's token count, batch x seq, which no message can exceed (a message carries at most
// one A-rank's tokens): routing is dropless. A smaller N shrinks the exchange buffers; a batch
// whose routing sends more than N tokens from one A-rank to one F-rank then stops at that exchange,
// naming it, the rank and the count (runtime/exchange/CountedExchange.h). Residual, embedding and
// head messages carry a count fixed by the input shape and keep their bound.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_EMIT_EXCHANGECAPACITY_H
#define DISAGMOE_COMPILER_EMIT_EXCHANGECAPACITY_H

#include "runtime/plan/Plan.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace disagmoe {

/// Sets capacity_tokens of every m2n and n2m exchange of `plan` (emitted by emitPlan and
/// emitSchedule) to `tokens`. Fails with one line naming --capacity-tokens when
/// `tokens` is outside [1, the default bound of that exchange], or when a message of the plan's
/// AF-Pipe schedule (its expected size at uniform routing, schedule `bytes`) would not fit the
/// smaller buffer, capacity_tokens x bytes_per_token, which the runtime refuses at load
/// (runtime/plan/PlanSchedule.h); the error then gives the smallest N that fits.
llvm::Error applyExchangeCapacity(Plan &plan, int64_t tokens);

} // namespace disagmoe

#endif
