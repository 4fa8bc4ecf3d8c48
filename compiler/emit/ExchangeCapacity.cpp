// Applies --capacity-tokens to a plan's M2N/N2M exchange bounds (ExchangeCapacity.h).
#include "compiler/emit/ExchangeCapacity.h"

#include <cmath>
#include <map>
#include <utility>

namespace json = llvm::json;

namespace disagmoe {

bool applyExchangeCapacity(json::Object &plan, int64_t tokens, std::string &error) {
  const std::string flag = "--capacity-tokens " + std::to_string(tokens);
  json::Array *exchanges = plan.getArray("exchanges");
  if (!exchanges) {
    error = "the plan has no exchanges to bound (" + flag + ")";
    return false;
  }
  // (kind, layer) -> bytes_per_token of the bounded exchanges.
  std::map<std::pair<std::string, int64_t>, int64_t> bounded;
  for (json::Value &v : *exchanges) {
    json::Object &e = *v.getAsObject();
    const std::string kind = e.getString("kind").value_or("").str();
    if (kind != "m2n" && kind != "n2m")
      continue;
    const int64_t current = e.getInteger("capacity_tokens").value_or(0);
    if (tokens < 1 || tokens > current) {
      error = flag + ": expected an integer in [1, " + std::to_string(current) + "] (exchange " +
              e.getString("id").value_or("").str() +
              "'s default bound, the compiled batch x seq tokens)";
      return false;
    }
    bounded[{kind, e.getInteger("layer").value_or(-1)}] =
        e.getInteger("bytes_per_token").value_or(0);
  }
  // The schedule's messages must fit the smaller buffers (the runtime checks the same at load).
  if (const json::Object *schedule = plan.getObject("schedule"))
    if (const json::Object *programs = schedule->getObject("programs"))
      for (const auto &role : *programs)
        if (const json::Array *instrs = role.second.getAsArray())
          for (const json::Value &iv : *instrs) {
            const json::Object &in = *iv.getAsObject();
            const std::string op = in.getString("op").value_or("").str();
            const std::string kind = in.getString("kind").value_or("").str();
            auto it = bounded.find({op, in.getInteger("layer").value_or(-1)});
            if ((kind != "send" && kind != "recv") || it == bounded.end() || it->second <= 0)
              continue;
            const double bytes = in.getNumber("bytes").value_or(0);
            if (bytes > static_cast<double>(tokens) * static_cast<double>(it->second)) {
              const auto need =
                  static_cast<int64_t>(std::ceil(bytes / static_cast<double>(it->second)));
              error = flag + ": the AF-Pipe schedule's " + op + " message of layer " +
                      std::to_string(it->first.second) + " (" +
                      in.getString("phase").value_or("").str() + ") carries " +
                      std::to_string(static_cast<int64_t>(std::ceil(bytes))) +
                      " bytes per rank pair at uniform routing, above " + std::to_string(tokens) +
                      " tokens x " + std::to_string(it->second) +
                      " bytes (use at least --capacity-tokens " + std::to_string(need) + ")";
              return false;
            }
          }
  for (json::Value &v : *exchanges) {
    json::Object &e = *v.getAsObject();
    const std::string kind = e.getString("kind").value_or("").str();
    if (kind == "m2n" || kind == "n2m")
      e["capacity_tokens"] = tokens;
  }
  return true;
}

} // namespace disagmoe
