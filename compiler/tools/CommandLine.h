//===- CommandLine.h - parsing a `disagmoe` subcommand's flags, one line per error -*- C++ -*-===//
//
// llvm::cl reports a misspelt flag over several lines ("Unknown command line argument", "Did you
// mean", then "Too many positional arguments" for its value). parseCommandLine first looks every
// "--name[=value]" up among the registered options and refuses an unknown one in one line, with the
// nearest visible option by edit distance, then hands argv to cl::ParseCommandLineOptions.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_COMPILER_TOOLS_COMMANDLINE_H
#define DISAGMOE_COMPILER_TOOLS_COMMANDLINE_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace disagmoe::tools {

/// The one-line refusal of the first unknown flag in argv[1..] ("" when every flag is known):
/// "unknown option --no-serch (did you mean --no-search? see --help)". Arguments that are not
/// flags (no leading '-', a lone "-", negative numbers) and everything after "--" are skipped.
std::string unknownOption(int argc, char **argv);

/// unknownOption, then cl::ParseCommandLineOptions; false when either refused (the error is on
/// stderr, prefixed with `command`, e.g. "disagmoe plan"). Callers exit with 2.
/// With DISAGMOE_PARSE_ONLY=1 in the environment (runtime/tools/ParseOnly.h) a successful parse
/// exits the process with 0 here, so every subcommand must call this before it opens a file: the
/// flags, their value syntax and llvm::cl's own checks (a missing required option or positional)
/// are checked, not the subcommand's later checks of values (ranges, names of layouts).
bool parseCommandLine(int argc, char **argv, llvm::StringRef overview, llvm::StringRef command);

} // namespace disagmoe::tools

#endif
