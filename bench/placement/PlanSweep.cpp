//===- PlanSweep.cpp - chosen splits over sequence lengths, and solve times ------===//
//
//   disagmoe-bench-plan-sweep [--cluster FILE] [--configs a.json,b.json] [--seq-lens 4096,...]
//                             [--runs N] [--exhaustive] [--time-limit S]
//
// For each config and sequence length: solves the placement with Z3 (median of --runs solve
// times), and with --exhaustive also with the exhaustive search in the same run (the peer: the
// ratio of solve times and whether the objective values agree). Prints the chosen
// attention:FFN GPU split per sequence length. Not part of ctest (bench/, README of bench).
//
//===----------------------------------------------------------------------===//
#include "frontends/config/ConfigFrontend.h"
#include "frontends/config/CostExtraction.h"
#include "passes/placement/solver/Planner.h"

#include "mlir/IR/MLIRContext.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace disagmoe;

namespace {
std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty())
      out.push_back(item);
  return out;
}

/// Recomputation of each side as "attention/FFN" initials: n(one), s(elective), f(ull).
std::string rcShort(const disagmoe::placement::Config &c) {
  auto initial = [](disagmoe::cost::Recomputation r) {
    return disagmoe::cost::recomputationName(r)[0];
  };
  return std::string(1, initial(c.attnRecompute)) + "/" + initial(c.ffnRecompute);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
} // namespace

int main(int argc, char **argv) {
  std::string src = DISAGMOE_SOURCE_DIR;
  std::string cluster = src + "/samples/clusters/h800-16x8.yaml";
  std::vector<std::string> configs = {src + "/samples/configs/deepseek-moe-16b.json",
                                      src + "/samples/configs/gpt-oss-120b.json",
                                      src + "/samples/configs/qwen3-235b.json"};
  std::vector<int64_t> seqLens = {4096, 8192, 16384, 32768};
  int runs = 3;
  bool exhaustive = false, splits = false;
  double timeLimit = 60;
  int64_t globalTokens = int64_t(1) << 24;
  double optimizerBytes = 12;
  bool noMemoryLimit = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--cluster")
      cluster = next();
    else if (a == "--configs")
      configs = split(next());
    else if (a == "--seq-lens") {
      seqLens.clear();
      for (auto &s : split(next()))
        seqLens.push_back(std::stoll(s));
    } else if (a == "--runs")
      runs = std::stoi(next());
    else if (a == "--exhaustive")
      exhaustive = true;
    else if (a == "--splits")
      splits = true;
    else if (a == "--time-limit")
      timeLimit = std::stod(next());
    else if (a == "--global-tokens")
      globalTokens = std::stoll(next());
    else if (a == "--optimizer-bytes")
      optimizerBytes = std::stod(next());
    else if (a == "--no-memory-limit")
      noMemoryLimit = true;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  cost::HardwareCatalog catalog;
  std::string error;
  placement::Problem base;
  if (!cost::loadHardwareCatalog(cost::defaultHardwareCatalogPath(), catalog, error) ||
      !cost::loadCluster(cluster, catalog, base.cluster, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::printf("cluster %s: %d GPUs (%s), %d NICs; %lld tokens per step; %d runs, medians\n",
              base.cluster.name.c_str(), base.cluster.gpus(), base.cluster.gpu.name.c_str(),
              base.cluster.nics(), static_cast<long long>(globalTokens), runs);
  std::printf("%-22s %6s %9s %7s %5s %4s %4s %3s %4s %5s %5s %3s %10s %7s %6s %9s %s\n", "config",
              "seq", "A:F GPUs", "A share", "r", "p", "dA", "cp", "eF", "m", "nA:nF", "rc",
              "step (s)", "MFU", "cands", "Z3 (s)", "exhaustive");
  mlir::MLIRContext context;
  for (const std::string &cfg : configs) {
    auto module = configfe::importModelConfig(context, cfg, 1, 16);
    placement::Problem problem = base;
    llvm::Error failure =
        module ? configfe::extractModelShape(**module, problem.model) : module.takeError();
    if (failure) {
      std::fprintf(stderr, "%s\n", llvm::toString(std::move(failure)).c_str());
      return 1;
    }
    std::string name = cfg.substr(cfg.find_last_of('/') + 1);
    for (int64_t s : seqLens) {
      problem.options.seqLen = s;
      problem.options.globalTokens = globalTokens;
      problem.options.timeLimitSeconds = timeLimit;
      problem.options.memory.optimizerBytes = optimizerBytes;
      if (noMemoryLimit) // the pure compute-communication roofline: lift the HBM limit
        problem.options.reserveBytes = -1e18;
      std::vector<double> times;
      placement::Solution sol;
      for (int r = 0; r < runs; ++r) {
        sol = placement::solveZ3(problem);
        times.push_back(sol.seconds);
      }
      if (!sol.ok) {
        std::printf("%-22s %6lld  %s\n", name.c_str(), static_cast<long long>(s),
                    sol.error.c_str());
        continue;
      }
      const placement::Config &c = sol.config;
      std::string ex = "-";
      if (exhaustive) {
        std::vector<double> et;
        placement::Solution e;
        for (int r = 0; r < runs; ++r) {
          e = placement::solveExhaustive(problem, /*everyNicPair=*/false);
          et.push_back(e.seconds);
        }
        std::ostringstream os;
        os.precision(3);
        os << median(et) << " s, Z3/exhaustive time " << median(times) / median(et) << ", "
           << (e.eval.stepTime == sol.eval.stepTime && e.config.cand.gpus() == c.cand.gpus()
                   ? "same objective"
                   : "OBJECTIVE DIFFERS");
        ex = os.str();
      }
      char split[32], nics[32];
      std::snprintf(split, sizeof split, "%lld:%lld", static_cast<long long>(c.cand.attnGpus()),
                    static_cast<long long>(c.cand.ffnGpus()));
      std::snprintf(nics, sizeof nics, "%lld:%lld", static_cast<long long>(c.attnNics),
                    static_cast<long long>(c.ffnNics));
      std::printf("%-22s %6lld %9s %7.3f %5lld %4lld %4lld %3lld %4lld %5lld %5s %3s %10.4f %7.3f "
                  "%6lld %9.3f %s%s\n",
                  name.c_str(), static_cast<long long>(s), split,
                  static_cast<double>(c.cand.attnGpus()) / c.cand.gpus(),
                  static_cast<long long>(c.cand.replicas), static_cast<long long>(c.cand.groups),
                  static_cast<long long>(c.cand.attnRanks), static_cast<long long>(c.cand.cp),
                  static_cast<long long>(c.cand.ffnRanks),
                  static_cast<long long>(c.cand.microbatches), nics, rcShort(c).c_str(),
                  sol.eval.stepTime, sol.eval.mfu, static_cast<long long>(sol.candidates),
                  median(times), ex.c_str(), sol.optimal ? "" : (" [" + sol.note + "]").c_str());
      std::printf("    (%lld Z3 queries)\n", static_cast<long long>(sol.queries));
      if (splits)
        for (const placement::Solution &r : placement::bestPerAttentionGpus(problem)) {
          const placement::Config &k = r.config;
          std::printf("    M=%-4lld F=%-4lld r=%lld p=%lld dA=%lld cp=%lld eF=%lld m=%lld rc=%s "
                      "nics=%lld:%lld step=%.4f "
                      "Ua=%.4g (comp %.4g) Uf=%.4g (comp %.4g) D=%.3g memA=%.1f memF=%.1f GB\n",
                      (long long)k.cand.attnGpus(), (long long)k.cand.ffnGpus(),
                      (long long)k.cand.replicas, (long long)k.cand.groups,
                      (long long)k.cand.attnRanks, (long long)k.cand.cp, (long long)k.cand.ffnRanks,
                      (long long)k.cand.microbatches, rcShort(k).c_str(), (long long)k.attnNics,
                      (long long)k.ffnNics, r.eval.stepTime, r.eval.attnBusy, r.eval.attnCompute,
                      r.eval.ffnBusy, r.eval.ffnCompute, r.eval.gradSync,
                      r.eval.attnMemory.total() / 1e9, r.eval.ffnMemory.total() / 1e9);
        }
      std::fflush(stdout);
    }
  }
  return 0;
}
