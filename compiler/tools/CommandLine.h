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
#include "llvm/Support/CommandLine.h"

#include <map>
#include <string>
#include <type_traits>

namespace disagmoe::tools {

/// The one-line refusal of the first unknown flag in argv[1..] ("" when every flag is known):
/// "unknown option --no-serch (did you mean --no-search? see --help)". Arguments that are not
/// flags (no leading '-', a lone "-", negative numbers) and everything after "--" are skipped.
std::string unknownOption(int argc, char **argv);

/// unknownOption, then cl::ParseCommandLineOptions; false when either refused (the error is on
/// stderr, prefixed with `command`, e.g. "disagmoe plan"; llvm::cl's own errors in one line of
/// ours: "disagmoe compile: missing -o, which is required (see disagmoe compile --help)", "...
/// missing <model.onnx> (see ...)"). Callers exit with 2. With DISAGMOE_PARSE_ONLY=1 in the
/// environment (runtime/tools/ParseOnly.h) a successful parse exits the process with 0 here, so
/// every subcommand must call this before it opens a file: the flags, their value syntax and
/// llvm::cl's own checks (a missing required option or positional) are checked, not the
/// subcommand's later checks of values (ranges, names of layouts) — unless `valueChecksFollow`:
/// then parseCommandLine returns and the subcommand calls exitIfParseOnly() (PlannerFlags.h) after
/// checking its values, before it opens a file.
bool parseCommandLine(int argc, char **argv, llvm::StringRef overview, llvm::StringRef command,
                      bool valueChecksFollow = false);

/// The first value of a numeric flag (NumberOpt, NumberList) in argv[1..] that is not a plain
/// decimal number, as a one-line refusal ("" when none): "--lr: expected a decimal number, got
/// \"0x10\"".
std::string nonDecimalValue(int argc, char **argv);

/// The numeric flags (NumberOpt, NumberList) registered now, each with whether it takes an integer.
/// parseCommandLine refuses a value of one of them that is not a plain decimal number
/// (runtime/tools/DecimalNumber.h) before llvm::cl parses it: llvm::cl reads "0x10" and "010"
/// (octal 8) as integers, and std::strtod reads "0x10" as 16.0.
std::map<const llvm::cl::Option *, bool> &numberOptions();

/// cl::opt<T> for a numeric T whose value must be a plain decimal number (see numberOptions):
/// "disagmoe plan: --seq-len: expected a decimal integer, got "0x10"".
template <class T> class NumberOpt : public llvm::cl::opt<T> {
public:
  template <class... Mods> explicit NumberOpt(const Mods &...mods) : llvm::cl::opt<T>(mods...) {
    numberOptions()[this] = std::is_integral_v<T>;
  }
  ~NumberOpt() { numberOptions().erase(this); }
  using llvm::cl::opt<T>::operator=;
};

/// cl::list<T> of numbers, each a plain decimal number (see numberOptions).
template <class T> class NumberList : public llvm::cl::list<T> {
public:
  template <class... Mods> explicit NumberList(const Mods &...mods) : llvm::cl::list<T>(mods...) {
    numberOptions()[this] = std::is_integral_v<T>;
  }
  ~NumberList() { numberOptions().erase(this); }
};

} // namespace disagmoe::tools

#endif
