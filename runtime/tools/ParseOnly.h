// DISAGMOE_PARSE_ONLY=1: every CLI of the project (disagmoe and its subcommands, disagmoe-run,
// disagmoe-opt) parses its command line, applies the checks that need no file (an unknown flag, a
// value of the wrong syntax, contradictory flags), then exits 0 without opening any input or
// writing anything; a refused command line fails as it always does, with its one line. It lets
// tests/e2e/check_doc_commands.py run every command line of the docs through the real parsers
// with placeholder paths. Header-only, so that both the compiler and the runtime tools use it.
#pragma once

#include <cstdlib>
#include <cstring>

namespace disagmoe::tools {

/// True when the environment variable DISAGMOE_PARSE_ONLY is "1".
inline bool parseOnly() {
  const char *v = std::getenv("DISAGMOE_PARSE_ONLY");
  return v && std::strcmp(v, "1") == 0;
}

} // namespace disagmoe::tools
