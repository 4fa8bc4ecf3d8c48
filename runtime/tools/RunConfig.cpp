// Run config files and the resumed-options comparison (RunConfig.h).
#include "runtime/tools/RunConfig.h"

#include "runtime/io/FileKind.h"
#include "runtime/io/JsonError.h"
#include "runtime/io/YamlReading.h"
#include "runtime/tools/RunFlags.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace disagmoe::tools {
namespace {

[[noreturn]] void fail(const std::string &file, const std::string &what) {
  throw ConfigError(file + ": " + what);
}

bool endsWith(const std::string &s, const std::string &tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string readText(const std::string &file) {
  if (const std::string why = inputRefusal(file); !why.empty())
    fail(file, why);
  std::ifstream in(file, std::ios::binary);
  if (!in)
    fail(file, std::string("cannot open: ") + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One key of the file: a switch is given when `on`; `notScalar` names a value of the wrong kind
// ("a list"), refused once the key itself is known to be an option.
struct Entry {
  std::string key, value;
  bool on = true;
  std::string notScalar;
};

std::string kindOf(const YAML::Node &n) {
  return n.IsSequence() ? "a list" : n.IsMap() ? "a mapping" : "no value";
}

std::vector<Entry> readYaml(const std::string &file) {
  YAML::Node root;
  try {
    root = YAML::Load(readText(file));
  } catch (const YAML::Exception &e) {
    fail(file, yamlReason(e));
  }
  if (root.IsNull())
    return {};
  if (!root.IsMap())
    fail(file, "expected a mapping of options (key: value) at the top level");
  if (const std::string twice = duplicateKey(root); !twice.empty())
    fail(file, twice);
  std::vector<Entry> out;
  for (const auto &kv : root) {
    const std::string key = kv.first.Scalar();
    const YAML::Node &v = kv.second;
    const RunFlag *flag = findRunFlag(key);
    if (flag && !flag->takesValue) {
      // YAML 1.2's core schema (and JSON): only true/false, not YAML 1.1's yes/on/y, which
      // yaml-cpp's bool conversion would take.
      static const std::set<std::string> yes{"true", "True", "TRUE"}, no{"false", "False", "FALSE"};
      const bool isTrue = v.IsScalar() && yes.count(v.Scalar());
      if (!isTrue && !(v.IsScalar() && no.count(v.Scalar())))
        fail(file, "key \"" + key + "\": expected true or false, got " +
                       (v.IsScalar() ? "\"" + v.Scalar() + "\"" : kindOf(v)));
      out.push_back({key, "", isTrue, ""});
      continue;
    }
    if (!v.IsScalar())
      out.push_back({key, "", true, kindOf(v)});
    else
      out.push_back({key, v.Scalar(), true, ""});
  }
  return out;
}

std::vector<Entry> readJson(const std::string &file) {
  nlohmann::json root;
  // nlohmann keeps the last of a key given twice; refuse it like the YAML reader (duplicateKey).
  // The callback sees each object's keys in order; one set of seen keys per open object.
  std::vector<std::set<std::string>> open;
  const auto once = [&](int, nlohmann::json::parse_event_t event, nlohmann::json &parsed) {
    if (event == nlohmann::json::parse_event_t::object_start)
      open.emplace_back();
    else if (event == nlohmann::json::parse_event_t::object_end)
      open.pop_back();
    else if (event == nlohmann::json::parse_event_t::key && !open.empty() &&
             !open.back().insert(parsed.get<std::string>()).second)
      fail(file, parsed.get<std::string>() + ": given twice");
    return true;
  };
  try {
    root = nlohmann::json::parse(readText(file), once);
  } catch (const nlohmann::json::parse_error &e) {
    throw ConfigError(jsonParseError(file, e));
  }
  if (!root.is_object())
    fail(file, "expected an object of options ({\"key\": value}) at the top level");
  std::vector<Entry> out;
  for (const auto &[key, v] : root.items()) {
    const RunFlag *flag = findRunFlag(key);
    if (flag && !flag->takesValue) {
      if (!v.is_boolean())
        fail(file, "key \"" + key + "\": expected true or false, got " + v.dump());
      out.push_back({key, "", v.get<bool>(), ""});
    } else if (v.is_string()) {
      out.push_back({key, v.get<std::string>(), true, ""});
    } else if (v.is_number()) {
      out.push_back({key, v.dump(), true, ""});
    } else {
      const std::string kind = v.is_array()    ? "a list"
                               : v.is_object() ? "an object"
                               : v.is_null()   ? "null"
                                               : "a boolean";
      out.push_back({key, "", true, kind});
    }
  }
  return out;
}

// Flag name -> the config file that gave it (expandRunConfig, withConfigOrigin): one process
// expands one command line.
std::map<std::string, std::string> &configOrigins() {
  static std::map<std::string, std::string> origins;
  return origins;
}

} // namespace

std::string withConfigOrigin(const std::string &message) {
  if (message.rfind("--", 0) != 0)
    return message;
  const size_t colon = message.find(": ");
  if (colon == std::string::npos)
    return message;
  const std::string flag = message.substr(2, colon - 2);
  const auto it = configOrigins().find(flag);
  if (it == configOrigins().end())
    return message;
  return it->second + ": key \"" + flag + "\": " + message.substr(colon + 2);
}

std::vector<std::string> expandRunConfig(const std::vector<std::string> &args) {
  std::vector<std::string> files, rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config") {
      if (i + 1 >= args.size())
        throw ConfigError("--config needs a value");
      files.push_back(args[++i]);
    } else if (args[i].rfind("--config=", 0) == 0) {
      files.push_back(args[i].substr(9));
    } else {
      rest.push_back(args[i]);
    }
  }
  if (files.empty())
    return args;
  // Whether the command line gives the plan (a positional argument): every flag but the switches
  // takes the next argument unless written --flag=value.
  bool positional = false;
  for (size_t i = 0; i < rest.size(); ++i) {
    const std::string &a = rest[i];
    if (a.rfind("--", 0) != 0) {
      positional = positional || a != "-h";
      continue;
    }
    const RunFlag *flag = findRunFlag(a.substr(2));
    if (flag && flag->takesValue && a.find('=') == std::string::npos)
      ++i;
  }
  std::vector<std::string> out;
  for (const std::string &file : files) {
    if (file.empty())
      throw ConfigError("--config: empty value");
    std::vector<Entry> entries;
    if (endsWith(file, ".yaml") || endsWith(file, ".yml"))
      entries = readYaml(file);
    else if (endsWith(file, ".json"))
      entries = readJson(file);
    else
      fail(file, "expected a .yaml, .yml or .json file (the format follows the extension)");
    for (const Entry &e : entries) {
      if (e.key == "config")
        fail(file, "key \"config\": a run config cannot include another");
      if (e.key != "plan" && !findRunFlag(e.key)) {
        const std::string near = suggestRunFlag(e.key);
        fail(file, "unknown key \"" + e.key + "\"" +
                       (near.empty() ? std::string(" (keys are disagmoe-run's flags without --)")
                                     : " (did you mean \"" + near + "\"?)"));
      }
      if (!e.notScalar.empty())
        fail(file, "key \"" + e.key + "\": expected a number or a string, got " + e.notScalar);
      if (e.key == "plan") {
        if (!positional)
          out.insert(out.begin(), e.value);
      } else if (!findRunFlag(e.key)->takesValue) {
        if (e.on)
          out.push_back("--" + e.key);
      } else {
        out.push_back("--" + e.key + "=" + e.value);
        configOrigins()[e.key] = file;
      }
    }
  }
  // A flag the command line gives again is the command line's (it overrides the file).
  for (const std::string &a : rest)
    if (a.rfind("--", 0) == 0)
      configOrigins().erase(
          a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2));
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

void checkResumedConfig(const std::string &checkpoint, const std::string &saved,
                        const std::string &current, std::ostream *warn) {
  const std::string where = "--resume " + checkpoint + ": ";
  if (saved.empty()) {
    if (warn)
      *warn << "disagmoe-run: warning: " << where
            << "the checkpoint records no run options (written by an older version): the "
               "plan, data, batch shape and schedule are not compared\n";
    return;
  }
  nlohmann::json before, now = nlohmann::json::parse(current);
  try {
    before = nlohmann::json::parse(saved);
  } catch (const nlohmann::json::parse_error &e) {
    throw ConfigError(checkpoint + ": __metadata__.config: not valid JSON: " + jsonReason(e));
  }
  if (!before.is_object())
    throw ConfigError(checkpoint + ": __metadata__.config: not a JSON object");
  const auto text = [](const nlohmann::json &j, const std::string &key) {
    if (!j.contains(key))
      return std::string("not given");
    return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
  };
  static const char *const kKept[] = {
      "plan-identity", "data",        "data-format", "data-tokens", "input",
      "targets",       "seed",        "batch",       "seq-len",     "micro-batches",
      "warmup-steps",  "total-steps", "lr-min",      "optimizer"};
  for (const char *key : kKept) {
    if (before.value(key, nlohmann::json()) == now.value(key, nlohmann::json()))
      continue;
    std::string what = "--" + std::string(key) + " is " + text(now, key) + " here, " +
                       text(before, key) + " in the checkpoint";
    if (std::string(key) == "plan-identity")
      what = "the plan differs from the checkpoint's: " + text(now, "plan") + " (plan.json " +
             text(now, key) + ") here, " + text(before, "plan") + " (plan.json " +
             text(before, key) + ") in the checkpoint";
    else if (std::string(key) == "data-tokens")
      what = "the token file " + text(now, "data") + " holds " + text(now, key) + " tokens here, " +
             text(before, key) + " in the checkpoint";
    throw ConfigError(where + what +
                      " (a resumed run keeps the checkpoint's plan, data, batch shape and "
                      "schedule; start a new run to change them)");
  }
  static const char *const kWarned[] = {"lr",
                                        "weight-decay",
                                        "beta1",
                                        "beta2",
                                        "eps",
                                        "clip-grad",
                                        "aux-loss-coef",
                                        "capacity-factor",
                                        "router-bias-update-rate"};
  for (const char *key : kWarned)
    if (before.value(key, nlohmann::json()) != now.value(key, nlohmann::json()) && warn)
      *warn << "disagmoe-run: warning: " << where << "--" << key << " is " << text(now, key)
            << " here, " << text(before, key) << " in the checkpoint; continuing with "
            << text(now, key) << "\n";
}

} // namespace disagmoe::tools
