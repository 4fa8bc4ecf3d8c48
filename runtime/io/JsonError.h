// One-line reasons from nlohmann::json's exceptions. Their what() reads
// "[json.exception.parse_error.101] parse error at line 2, column 1: syntax error while parsing
// object key - unexpected end of input; expected string literal"; the bracketed id means nothing
// to a user, so jsonReason keeps only what follows it. Header-only: the runtime, the cost model and
// the planner each read JSON files with nlohmann.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace disagmoe {

/// e.what() without its leading "[json.exception.<kind>.<id>] ".
inline std::string jsonReason(const nlohmann::json::exception &e) {
  std::string what = e.what();
  const size_t close = what.find("] ");
  if (what.rfind("[json.exception.", 0) == 0 && close != std::string::npos)
    what.erase(0, close + 2);
  return what;
}

} // namespace disagmoe
