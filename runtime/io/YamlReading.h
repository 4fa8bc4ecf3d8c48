// What the project's YAML readers share (the cluster reader in runtime/cost, the run-config reader
// in runtime/tools), header-only:
//  - yamlReason: yaml-cpp's what() is "yaml-cpp: error at line 3, column 1: <msg>" with the mark
//    0-based; said 1-based, as an editor shows it, without the library's prefix;
//  - duplicateKey: yaml-cpp keeps every entry of a mapping that repeats a key, and a lookup by key
//    (node["nodes"]) returns the first while a walk over the entries ends on the last, so a file
//    giving `nodes: 2` and later `nodes: 4` would be read one way here and another there.
#pragma once

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>

namespace disagmoe {

/// "line L, column C: <msg>" (1-based), or the message alone when the exception has no mark.
inline std::string yamlReason(const YAML::Exception &e) {
  if (e.mark.is_null())
    return e.msg;
  return "line " + std::to_string(e.mark.line + 1) + ", column " +
         std::to_string(e.mark.column + 1) + ": " + e.msg;
}

/// "" when every key of mapping `map` is given once; otherwise "KEY: given twice (lines A and B)"
/// (1-based lines) for the first key seen again.
inline std::string duplicateKey(const YAML::Node &map) {
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (seen.insert(key).second)
      continue;
    for (auto first = map.begin(); first != it; ++first)
      if (first->first.Scalar() == key)
        return key + ": given twice (lines " + std::to_string(first->first.Mark().line + 1) +
               " and " + std::to_string(it->first.Mark().line + 1) + ")";
  }
  return "";
}

} // namespace disagmoe
