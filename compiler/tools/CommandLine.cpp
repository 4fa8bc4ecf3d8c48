//===- CommandLine.cpp - one-line refusal of unknown `disagmoe` flags -----------===//
#include "compiler/tools/CommandLine.h"
#include "runtime/tools/DecimalNumber.h"
#include "runtime/tools/ParseOnly.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <limits>

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
  if (!cl::ParseCommandLineOptions(argc, argv, overview, &errs()))
    return false;
  if (!valueChecksFollow &&
      parseOnly()) { // nothing is open yet: every subcommand parses before it reads a file
    outs().flush();
    std::exit(0);
  }
  return true;
}

} // namespace disagmoe::tools
