// disagmoe-run's command line through CLI11 (RunArgs.h).
#include "runtime/tools/RunArgs.h"

#include <CLI/CLI.hpp>

#include <deque>
#include <map>

namespace disagmoe::tools {

std::string trainOnlyRefusal(const std::string &flag) {
  return flag + " needs --train (see --help)";
}
namespace {

// "unknown option --lr-mn (did you mean --lr-min? see --help)"
std::string unknownOption(const std::string &name) {
  const std::string near = suggestRunFlag(name.rfind("--", 0) == 0 ? name.substr(2) : name);
  return "unknown option " + name +
         (near.empty() ? " (see --help)" : " (did you mean --" + near + "? see --help)");
}

} // namespace

RunArgs parseRunArgs(int argc, char **argv, RunMode mode) {
  RunArgs out;
  // "--output=" is refused as written (CLI11 would report a missing value).
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) == 0 && a.size() > 2 && a.back() == '=' && a.find('=') == a.size() - 1)
      throw RunArgsError(a.substr(0, a.size() - 1) + ": empty value");
  }
  CLI::App app{"disagmoe-run", "disagmoe-run"};
  app.set_help_flag(); // --help is disagmoe-run's own text
  app.allow_extras(true);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("plan", out.plan);
  std::deque<std::string> values; // stable addresses for CLI11
  std::map<const CLI::Option *, std::pair<const RunFlag *, const std::string *>> flagOf;
  for (const RunFlag &f : runFlags()) {
    const std::string name = std::string("--") + f.name;
    values.emplace_back();
    CLI::Option *o = f.takesValue ? app.add_option(name, values.back()) : app.add_flag(name);
    flagOf[o] = {&f, &values.back()};
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ArgumentMismatch &e) { // "--batch: 1 required TEXT missing"
    const std::string what = e.what();
    throw RunArgsError(what.substr(0, what.find(':')) + " needs a value");
  } catch (const CLI::ParseError &e) {
    throw RunArgsError(e.what());
  }
  for (const std::string &extra : app.remaining()) {
    if (extra.rfind("--", 0) == 0)
      throw RunArgsError(unknownOption(extra.substr(0, extra.find('='))));
    if (!out.plan.empty())
      throw RunArgsError("unexpected argument \"" + extra + "\" (the plan is \"" + out.plan +
                         "\")");
    out.plan = extra; // "-x": CLI11 leaves a single-dash word to us
  }
  std::map<const RunFlag *, bool> seen;
  for (const CLI::Option *o : app.parse_order()) {
    const auto it = flagOf.find(o);
    if (it == flagOf.end() || seen[it->second.first])
      continue;
    seen[it->second.first] = true;
    const RunFlag &f = *it->second.first;
    const std::string name = std::string("--") + f.name;
    if (f.mode != RunMode::Any && f.mode != mode)
      throw RunArgsError(mode == RunMode::Forward
                             ? trainOnlyRefusal(name)
                             : name + " applies to the forward run only (not to --train or "
                                      "--comm mpi runs)");
    if (f.takesValue && it->second.second->empty())
      throw RunArgsError(name + ": empty value");
    out.flags.push_back({name, f.takesValue ? *it->second.second : std::string()});
  }
  return out;
}

} // namespace disagmoe::tools
