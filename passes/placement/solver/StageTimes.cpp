//===- StageTimes.cpp -----------------------------------------------------===//
#include "passes/placement/solver/StageTimes.h"
#include "runtime/io/JsonError.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace disagmoe::placement {

namespace {
bool matches(const MeasuredStageTimes::Entry &e, const Problem &p, const Config &c) {
  return e.seqLen == p.options.seqLen && e.replicas == c.cand.replicas &&
         e.groups == c.cand.groups && e.attnRanks == c.cand.attnRanks &&
         e.ffnRanks == c.cand.ffnRanks && e.microbatches == c.cand.microbatches &&
         e.cp == c.cand.cp && e.attnRecompute == c.attnRecompute &&
         e.ffnRecompute == c.ffnRecompute && (!e.attnNics || e.attnNics == c.attnNics) &&
         (!e.ffnNics || e.ffnNics == c.ffnNics);
}

double median(std::vector<double> v) {
  if (v.empty())
    return 1.0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
} // namespace

bool MeasuredStageTimes::busyTimes(const Problem &problem, const Config &config, double &attn,
                                   double &ffn) const {
  for (const Entry &e : entries)
    if (matches(e, problem, config)) {
      attn = e.attnSeconds;
      ffn = e.ffnSeconds;
      return true;
    }
  RooflineStageTimes roofline;
  std::vector<double> ra, rf;
  for (const Entry &e : entries) {
    if (e.seqLen != problem.options.seqLen)
      continue;
    Config c;
    c.cand = Candidate{e.replicas, e.groups, e.attnRanks, e.ffnRanks, e.microbatches, e.cp};
    c.attnRecompute = e.attnRecompute;
    c.ffnRecompute = e.ffnRecompute;
    c.attnNics = e.attnNics ? e.attnNics : config.attnNics;
    c.ffnNics = e.ffnNics ? e.ffnNics : config.ffnNics;
    double a = 0, f = 0;
    roofline.busyTimes(problem, c, a, f);
    if (a > 0 && f > 0) {
      ra.push_back(e.attnSeconds / a);
      rf.push_back(e.ffnSeconds / f);
    }
  }
  if (!roofline.busyTimes(problem, config, attn, ffn))
    return false;
  attn *= median(ra);
  ffn *= median(rf);
  return true;
}

llvm::Error MeasuredStageTimes::load(const std::string &path) noexcept {
  try {
    std::ifstream in(path);
    if (!in)
      throw std::runtime_error("cannot open file");
    nlohmann::json doc = nlohmann::json::parse(in);
    if (doc.value("format", "") != "disagmoe-stage-times" || doc.value("version", 0) != 1)
      throw std::runtime_error("format/version: expected \"disagmoe-stage-times\" version 1");
    std::vector<Entry> out;
    for (size_t i = 0; i < doc.at("entries").size(); ++i) {
      const auto &j = doc["entries"][i];
      std::string at = "entries[" + std::to_string(i) + "].";
      auto integer = [&](const char *key, int64_t fallback, bool required) {
        if (!j.contains(key)) {
          if (required)
            throw std::runtime_error(at + key + ": missing");
          return fallback;
        }
        if (!j[key].is_number_integer() || j[key].get<int64_t>() < 1)
          throw std::runtime_error(at + key + ": must be an integer >= 1");
        return j[key].get<int64_t>();
      };
      auto seconds = [&](const char *key) {
        if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() > 0))
          throw std::runtime_error(at + key + ": must be a positive number of seconds");
        return j[key].get<double>();
      };
      Entry e;
      e.seqLen = integer("seq_len", 0, true);
      e.replicas = integer("replicas", 1, false);
      e.groups = integer("groups", 1, true);
      e.attnRanks = integer("attn_ranks", 1, true);
      e.ffnRanks = integer("ffn_ranks", 1, true);
      e.microbatches = integer("microbatches", 1, true);
      e.cp = integer("cp", 1, false);
      e.attnNics = integer("attn_nics", 0, false);
      e.ffnNics = integer("ffn_nics", 0, false);
      // "recompute": true/false (full/none on both sides) or a level name for both sides;
      // "attn_recompute" / "ffn_recompute" set one side.
      auto level = [&](const char *key, cost::Recomputation fallback) {
        if (!j.contains(key))
          return fallback;
        if (j[key].is_boolean())
          return j[key].get<bool>() ? cost::Recomputation::Full : cost::Recomputation::None;
        std::string name = j[key].is_string() ? j[key].get<std::string>() : "";
        for (cost::Recomputation r : {cost::Recomputation::None, cost::Recomputation::Selective,
                                      cost::Recomputation::Full, cost::Recomputation::Redispatch})
          if (name == cost::recomputationName(r))
            return r;
        throw std::runtime_error(at + key +
                                 ": expected true, false, \"none\", \"selective\", "
                                 "\"full\" or \"redispatch\"");
      };
      cost::Recomputation both = level("recompute", cost::Recomputation::None);
      e.attnRecompute = level("attn_recompute", both);
      e.ffnRecompute = level("ffn_recompute", both);
      e.attnSeconds = seconds("attention_s");
      e.ffnSeconds = seconds("ffn_s");
      out.push_back(e);
    }
    entries = std::move(out);
    return llvm::Error::success();
  } catch (const nlohmann::json::parse_error &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), jsonParseError(path, e));
  } catch (const nlohmann::json::exception &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), path + ": " + jsonReason(e));
  } catch (const std::exception &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), path + ": " + e.what());
  }
}

llvm::Error MeasuredStageTimes::save(const std::string &path) const noexcept {
  try {
    nlohmann::json doc = {{"format", "disagmoe-stage-times"}, {"version", 1}};
    doc["entries"] = nlohmann::json::array();
    for (const Entry &e : entries) {
      nlohmann::json j = {{"seq_len", e.seqLen},
                          {"replicas", e.replicas},
                          {"groups", e.groups},
                          {"attn_ranks", e.attnRanks},
                          {"ffn_ranks", e.ffnRanks},
                          {"microbatches", e.microbatches},
                          {"attn_recompute", cost::recomputationName(e.attnRecompute)},
                          {"ffn_recompute", cost::recomputationName(e.ffnRecompute)},
                          {"attention_s", e.attnSeconds},
                          {"ffn_s", e.ffnSeconds}};
      if (e.cp != 1)
        j["cp"] = e.cp;
      if (e.attnNics)
        j["attn_nics"] = e.attnNics;
      if (e.ffnNics)
        j["ffn_nics"] = e.ffnNics;
      doc["entries"].push_back(j);
    }
    std::ofstream out(path);
    out << doc.dump(1) << "\n";
    if (!out)
      throw std::runtime_error("cannot write file");
    return llvm::Error::success();
  } catch (const std::exception &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), path + ": " + e.what());
  }
}

} // namespace disagmoe::placement
