//===- CommandLine.cpp - one-line refusal of unknown `disagmoe` flags -----------===//
#include "compiler/tools/CommandLine.h"
#include "runtime/tools/DecimalNumber.h"
#include "runtime/tools/ParseOnly.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <unistd.h>

using namespace llvm;

namespace disagmoe::tools {
namespace {
bool isNumber(StringRef s) {
  double v;
  return !s.getAsDouble(v);
}
} // namespace

std::map<const cl::Option *, bool> &numberOptions() {
  static std::map<const cl::Option *, bool> options;
  return options;
}

std::string nonDecimalValue(int argc, char **argv) {
  StringMap<cl::Option *> &options = cl::getRegisteredOptions();
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    if (arg == "--")
      break;
    if (!arg.starts_with("-") || arg == "-" || isNumber(arg))
      continue;
    auto [name, value] = arg.ltrim('-').split('=');
    const auto option = options.find(name);
    if (option == options.end())
      continue;
    const auto number = numberOptions().find(option->second);
    if (number == numberOptions().end())
      continue;
    if (!arg.contains('=')) {
      if (i + 1 >= argc)
        continue; // llvm::cl reports the missing value
      value = argv[++i];
    }
    SmallVector<StringRef, 4> items;
    if (option->second->getMiscFlags() & cl::CommaSeparated)
      value.split(items, ',');
    else
      items.push_back(value);
    for (StringRef item : items) {
      const std::string_view text(item.data(), item.size());
      if (number->second ? !isDecimalInteger(text) : !isDecimalReal(text))
        return "--" + name.str() + ": expected a decimal " +
               (number->second ? "integer" : "number") + ", got \"" + value.str() + "\"";
    }
  }
  return "";
}

std::string unknownOption(int argc, char **argv) {
  StringMap<cl::Option *> &options = cl::getRegisteredOptions();
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    if (arg == "--")
      break;
    if (!arg.starts_with("-") || arg == "-" || isNumber(arg))
      continue;
    StringRef name = arg.ltrim('-').split('=').first;
    if (name.empty() || options.count(name))
      continue;
    std::string best;
    unsigned bestDistance = std::numeric_limits<unsigned>::max();
    for (const auto &entry : options) {
      if (entry.second->getOptionHiddenFlag() != cl::NotHidden)
        continue;
      unsigned d = name.edit_distance(entry.first(), /*AllowReplacements=*/true, bestDistance);
      if (d < bestDistance) {
        bestDistance = d;
        best = entry.first().str();
      }
    }
    std::string line = "unknown option --" + name.str();
    // A suggestion only when it is plausibly the same word (at most a third of it differs).
    if (!best.empty() && bestDistance <= std::max<size_t>(2, name.size() / 3))
      return line + " (did you mean --" + best + "? see --help)";
    return line + " (see --help)";
  }
  return "";
}

namespace {

// LLVM's parse errors ("disagmoe: for the -o option: must be specified at least once!", or "Not
// enough positional command line arguments specified!" and a "Must specify ... See: ..." line) as
// one line in our words; the first error only.
std::string oneLineParseError(StringRef text, StringRef program, StringRef command) {
  SmallVector<StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  if (lines.empty())
    return "cannot parse the command line (see " + command.str() + " --help)";
  StringRef first = lines.front().trim();
  if (first.consume_front(program))
    first = first.ltrim(": ");
  const std::string help = " (see " + command.str() + " --help)";
  if (first.starts_with("Not enough positional command line arguments")) {
    std::string names;
    for (const cl::Option *o : cl::SubCommand::getTopLevel().PositionalOpts)
      if (o->getNumOccurrencesFlag() == cl::Required || o->getNumOccurrencesFlag() == cl::OneOrMore)
        names += (names.empty() ? "" : " ") + o->HelpStr.str();
    return "missing " + (names.empty() ? std::string("a positional argument") : names) + help;
  }
  StringRef flag = first;
  if (flag.consume_front("for the ")) {
    const size_t end = flag.find(" option: ");
    if (end != StringRef::npos) {
      const std::string name = flag.take_front(end).str();
      StringRef why = flag.drop_front(end + 9).rtrim("!");
      if (why == "must be specified at least once")
        return "missing " + name + ", which is required" + help;
      if (why == "may only occur zero or one times")
        return name + " is given more than once" + help;
      return name + ": " + why.str() + help;
    }
  }
  return first.rtrim("!").str() + help;
}

} // namespace

bool parseCommandLine(int argc, char **argv, StringRef overview, StringRef command,
                      bool valueChecksFollow) {
  if (const std::string why = unknownOption(argc, argv); !why.empty()) {
    errs() << command << ": " << why << "\n";
    return false;
  }
  if (const std::string why = nonDecimalValue(argc, argv); !why.empty()) {
    errs() << command << ": " << why << "\n";
    return false;
  }
  // llvm::cl writes some errors (a missing required option) to stderr itself, not to the stream
  // it is given: stderr is captured while it parses, then said in one line (oneLineParseError).
  std::string llvmErrors;
  raw_string_ostream captured(llvmErrors);
  errs().flush();
  std::FILE *spill = std::tmpfile();
  const int savedStderr = spill ? ::dup(2) : -1;
  if (savedStderr >= 0)
    ::dup2(::fileno(spill), 2);
  const bool parsed = cl::ParseCommandLineOptions(argc, argv, overview, &captured);
  errs().flush();
  captured.flush();
  if (savedStderr >= 0) {
    ::dup2(savedStderr, 2);
    ::close(savedStderr);
    std::rewind(spill);
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, spill)) > 0;)
      llvmErrors.append(buffer, n);
  }
  if (spill)
    std::fclose(spill);
  if (!parsed) {
    errs() << command << ": "
           << oneLineParseError(llvmErrors, sys::path::filename(argv[0]), command) << "\n";
    return false;
  }
  errs() << llvmErrors; // a successful parse's warnings, if any
  if (!valueChecksFollow &&
      parseOnly()) { // nothing is open yet: every subcommand parses before it reads a file
    outs().flush();
    std::exit(0);
  }
  return true;
}

} // namespace disagmoe::tools
