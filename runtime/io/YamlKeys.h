// yaml-cpp keeps every entry of a mapping that repeats a key, and a lookup by key (node["nodes"])
// returns the first while a walk over the entries ends on the last: a file giving `nodes: 2` and
// later `nodes: 4` would be read one way here and another there. duplicateKey finds such a key so
// that the readers refuse it. Header-only: the cluster reader (runtime/cost) and the run-config
// reader (runtime/tools) use it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>

namespace disagmoe {

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
