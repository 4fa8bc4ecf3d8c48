// One wording for every JSON file that does not parse, whichever reader read it (plan.json, a run
// config, --routing-profile, a hardware catalog, stage times, op times, a Hugging Face index, a
// safetensors header, a model config):
//   "<file>: not valid JSON at line L, column C: <what the parser says>"
// nlohmann::json's exceptions read "[json.exception.parse_error.101] parse error at line 2, column
// 1: syntax error while parsing object key - unexpected end of input; expected string literal";
// the bracketed id means nothing to a user, so jsonReason keeps only what follows it, and
// jsonParseError rewords it as above. Header-only: the runtime, the cost model and the planner
// each read JSON files with nlohmann (the model-config reader uses llvm::json and the same words).
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

/// "<file>: not valid JSON at line L, column C: <reason>" (`file` may be "FILE: header" and the
/// like). Without a position in the parser's message: "<file>: not valid JSON: <reason>".
inline std::string jsonParseError(const std::string &file, const nlohmann::json::exception &e) {
  std::string reason = jsonReason(e);
  const std::string at = "parse error at ";
  if (reason.rfind(at, 0) == 0) {
    const size_t colon = reason.find(": ", at.size());
    if (colon != std::string::npos && reason.compare(at.size(), 5, "line ") == 0)
      return file + ": not valid JSON at " + reason.substr(at.size(), colon - at.size()) + ": " +
             reason.substr(colon + 2);
  }
  if (reason.rfind("parse error: ", 0) == 0)
    reason.erase(0, 13);
  return file + ": not valid JSON: " + reason;
}

} // namespace disagmoe
