//===- PlannerFlags.cpp - the flags `disagmoe plan` and `simulate` share ---===//
#include "compiler/tools/PlannerFlags.h"
#include "compiler/tools/ProblemInputs.h"

#include "runtime/cost/GradSync.h"
#include "runtime/cost/Hardware.h"
#include "runtime/tools/ParseOnly.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <utility>

namespace cl = llvm::cl;

namespace disagmoe::tools {
namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}
} // namespace

PlannerFlags::PlannerFlags(cl::OptionCategory &category, int64_t defaultGlobalTokens,
                           bool allowSelective)
    : globalTokensHelp_("Tokens per training step (default 2^" +
                        std::to_string(__builtin_ctzll(defaultGlobalTokens)) + ")"),
      config("config", cl::desc("Model config.json (samples/configs/)"), cl::Required,
             cl::cat(category)),
      cluster("cluster", cl::desc("Cluster YAML (samples/clusters/)"), cl::Required,
              cl::cat(category)),
      seqLen("seq-len", cl::desc("Tokens per sequence"), cl::Required, cl::cat(category)),
      globalTokens("global-tokens", cl::desc(globalTokensHelp_), cl::init(defaultGlobalTokens),
                   cl::cat(category)),
      hardware("hardware", cl::desc("GPU/NIC catalog JSON"),
               cl::init(cost::defaultHardwareCatalogPath()), cl::cat(category)),
      recompute("recompute",
                cl::desc(allowSelective ? "Activation recomputation: auto (each side's level "
                                          "chosen), on (full), selective, off"
                                        : "Activation recomputation: auto, on, off"),
                cl::init("auto"), cl::cat(category)),
      groups("groups", cl::desc("Fix the groups per side p"), cl::init(0), cl::cat(category)),
      attnGpus("attn-gpus", cl::desc("Fix the attention GPUs"), cl::init(0), cl::cat(category)),
      ffnGpus("ffn-gpus", cl::desc("Fix the FFN GPUs"), cl::init(0), cl::cat(category)),
      microbatches("micro-batches", cl::desc("Fix the micro-batches per step"), cl::init(0),
                   cl::cat(category)),
      microbatchesAlias("microbatches", cl::desc("Alias for --micro-batches"),
                        cl::aliasopt(microbatches), cl::NotHidden, cl::cat(category)),
      replicas("replicas", cl::desc("Fix the pipeline replicas"), cl::init(0), cl::cat(category)),
      reserveGb("reserve-gb", cl::desc("Per-GPU memory not usable by the model (GB)"),
                cl::init(4.0), cl::cat(category)),
      timeLimit("time-limit",
                cl::desc("Seconds of the Z3 solve only (default 60); --search-budget bounds the "
                         "simulated search after it"),
                cl::init(60.0), cl::cat(category)),
      noSearch("no-search",
               cl::desc("Take Z3's roofline optimum as is (no search on simulated times)"),
               cl::cat(category)),
      searchSeeds(
          "search-seeds",
          cl::desc("Roofline candidates the simulated search starts from beside Z3's (default 16)"),
          cl::init(16), cl::cat(category)),
      searchBudget("search-budget",
                   cl::desc("Wall seconds of the simulated search, seeds and climb (default 60; "
                            "--time-limit bounds Z3 only)"),
                   cl::init(60.0), cl::cat(category)),
      gradReduce("grad-reduce",
                 cl::desc("Gradient reduction dtype on the wire: fp32 (default), bf16"),
                 cl::init("fp32"), cl::cat(category)),
      allowSelective_(allowSelective) {}

llvm::Error PlannerFlags::fill(placement::PlannerOptions &o) const {
  for (const auto &[flag, v] : {std::pair<const char *, int64_t>{"--groups", groups},
                                {"--attn-gpus", attnGpus},
                                {"--ffn-gpus", ffnGpus},
                                {"--micro-batches", microbatches},
                                {"--replicas", replicas}})
    if (v < 0)
      return fail(std::string(flag) + " must be >= 0 (0: chosen by the planner), got " +
                  std::to_string(v));
  if (globalTokens < 1)
    return fail("--global-tokens must be >= 1, got " + std::to_string(globalTokens));
  if (seqLen < 1 || seqLen > globalTokens)
    return fail("--seq-len must be in [1, --global-tokens = " + std::to_string(globalTokens) +
                (globalTokens.getNumOccurrences() ? "" : " (the default)") + "], got " +
                std::to_string(seqLen));
  // A step is a whole number of sequences.
  if (globalTokens % seqLen)
    return fail("--global-tokens " + std::to_string(globalTokens) +
                " is not a multiple of --seq-len " + std::to_string(seqLen));
  if (reserveGb < 0)
    return fail("--reserve-gb must be >= 0");
  if (!(timeLimit > 0))
    return fail("--time-limit must be > 0 seconds");
  if (searchSeeds < 0)
    return fail("--search-seeds must be >= 0");
  if (!(searchBudget > 0))
    return fail("--search-budget must be > 0 seconds");
  // Options of a search --no-search skips would be ignored without a word: refused instead.
  for (const auto &[flag, given] :
       {std::pair<const char *, bool>{"--search-budget", searchBudget.getNumOccurrences() > 0},
        {"--search-seeds", searchSeeds.getNumOccurrences() > 0}})
    if (noSearch && given)
      return fail(std::string(flag) +
                  " tunes the simulated search, which --no-search skips: give one of them");
  llvm::Expected<placement::Recompute> mode = parseRecompute(recompute, allowSelective_);
  if (!mode)
    return mode.takeError();
  if (!cost::parseReduceDtype(gradReduce, o.gradSync.reduceBytes))
    return fail("--grad-reduce: unknown dtype '" + gradReduce + "' (fp32, bf16)");
  o.recompute = *mode;
  o.seqLen = seqLen;
  o.globalTokens = globalTokens;
  o.fixedGroups = groups;
  o.fixedAttnGpus = attnGpus;
  o.fixedFfnGpus = ffnGpus;
  o.fixedMicrobatches = microbatches;
  o.fixedReplicas = replicas;
  o.reserveBytes = reserveGb * 1e9;
  o.timeLimitSeconds = timeLimit;
  return llvm::Error::success();
}

void exitIfParseOnly() {
  if (!parseOnly())
    return;
  llvm::outs().flush();
  std::exit(0);
}

} // namespace disagmoe::tools
