// Applies --capacity-tokens to a plan's M2N/N2M exchange bounds (ExchangeCapacity.h).
#include "compiler/emit/ExchangeCapacity.h"

#include <cmath>
#include <map>
#include <utility>

namespace disagmoe {

llvm::Error applyExchangeCapacity(Plan &plan, int64_t tokens) {
  auto fail = [](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  const std::string flag = "--capacity-tokens " + std::to_string(tokens);
  auto bounded = [](const ExchangeSpec &e) {
    return e.kind == ExchangeKind::M2n || e.kind == ExchangeKind::N2m;
  };
  if (plan.exchanges.empty())
    return fail("the plan has no exchanges to bound (" + flag + ")");
  // (op, layer) -> bytes_per_token of the bounded exchanges.
  std::map<std::pair<std::string, int64_t>, int64_t> bytesPerToken;
  for (const ExchangeSpec &e : plan.exchanges) {
    if (!bounded(e))
      continue;
    if (tokens < 1 || tokens > e.capacityTokens)
      return fail(flag + ": expected an integer in [1, " + std::to_string(e.capacityTokens) +
                  "] (exchange " + e.id + "'s default bound, the compiled batch x seq tokens)");
    bytesPerToken[{toString(e.kind), e.layer}] = e.bytesPerToken;
  }
  // The schedule's messages must fit the smaller buffers (the runtime checks the same at load).
  if (plan.schedule)
    for (const sched::Program &program : plan.schedule->programs)
      for (const sched::Instr &in : program.instrs) {
        auto it = bytesPerToken.find({in.op, in.layer});
        if ((in.kind != sched::Kind::Send && in.kind != sched::Kind::Recv) ||
            it == bytesPerToken.end() || it->second <= 0)
          continue;
        if (in.bytes > static_cast<double>(tokens) * static_cast<double>(it->second)) {
          const auto need =
              static_cast<int64_t>(std::ceil(in.bytes / static_cast<double>(it->second)));
          return fail(flag + ": the AF-Pipe schedule's " + in.op + " message of layer " +
                      std::to_string(it->first.second) + " (" + sched::toString(in.phase) +
                      ") carries " + std::to_string(static_cast<int64_t>(std::ceil(in.bytes))) +
                      " bytes per rank pair at uniform routing, above " + std::to_string(tokens) +
                      " tokens x " + std::to_string(it->second) +
                      " bytes (use at least --capacity-tokens " + std::to_string(need) + ")");
        }
      }
  for (ExchangeSpec &e : plan.exchanges)
    if (bounded(e))
      e.capacityTokens = tokens;
  return llvm::Error::success();
}

} // namespace disagmoe
