//===- PlanJson.cpp - `disagmoe plan --json` ------------------------------------===//
#include "compiler/tools/PlanJson.h"

#include "runtime/io/FileKind.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace disagmoe::tools {
namespace {
json::Object memoryJson(const cost::MemoryBreakdown &b) {
  return json::Object{{"weights", b.weights},
                      {"gradients", b.gradients},
                      {"optimizer", b.optimizer},
                      {"activations", b.activations},
                      {"total", b.total()}};
}

json::Object trialJson(const search::Trial &t) {
  json::Object o{{"origin", t.origin},
                 {"description", search::describe(t.config, t.layout)},
                 {"layout", afpipe::toString(t.layout)},
                 {"predicted_step_s", t.predicted},
                 {"ok", t.ok}};
  if (t.ok) {
    o["simulated_step_s"] = t.simulated;
    o["inflight_microbatches"] = t.inflight;
    o["peak_memory_bytes"] = t.peakMemory;
  } else {
    o["error"] = t.error;
  }
  return o;
}
} // namespace

json::Object configJson(const placement::Config &c, const placement::Evaluation &e) {
  return json::Object{{"attn_gpus", c.cand.attnGpus()},
                      {"ffn_gpus", c.cand.ffnGpus()},
                      {"attn_nics", c.attnNics},
                      {"ffn_nics", c.ffnNics},
                      {"groups", c.cand.groups},
                      {"replicas", c.cand.replicas},
                      {"attn_ranks_per_group", c.cand.attnRanks},
                      {"ffn_ranks_per_group", c.cand.ffnRanks},
                      {"microbatches", c.cand.microbatches},
                      {"cp", c.cand.cp},
                      {"attn_recompute", cost::recomputationName(c.attnRecompute)},
                      {"ffn_recompute", cost::recomputationName(c.ffnRecompute)},
                      {"step_s", e.stepTime},
                      {"bubble_factor", e.bubbleFactor},
                      {"attn_busy_s", e.attnBusy},
                      {"ffn_busy_s", e.ffnBusy},
                      {"attn_compute_s", e.attnCompute},
                      {"ffn_compute_s", e.ffnCompute},
                      {"attn_comm_s", e.attnComm},
                      {"ffn_comm_s", e.ffnComm},
                      {"grad_sync_s", e.gradSync},
                      {"mfu", e.mfu},
                      {"attn_flops_per_microbatch", e.attnFlops},
                      {"ffn_flops_per_microbatch", e.ffnFlops},
                      {"attn_exchange_bytes_per_microbatch", e.attnBytes},
                      {"ffn_exchange_bytes_per_microbatch", e.ffnBytes},
                      {"fits_memory", e.fitsMemory},
                      {"memory_bytes", json::Object{{"attention", memoryJson(e.attnMemory)},
                                                    {"ffn", memoryJson(e.ffnMemory)}}}};
}

std::vector<std::string> compileArgsOf(const placement::Config &w,
                                       const placement::PlannerOptions &o) {
  const int64_t seqsPerMb = o.globalTokens / o.seqLen / (w.cand.replicas * w.cand.microbatches);
  return {"--groups",        std::to_string(w.cand.groups),
          "--attn-ranks",    std::to_string(w.cand.attnRanks),
          "--ffn-ranks",     std::to_string(w.cand.ffnRanks),
          "--micro-batches", std::to_string(w.cand.microbatches),
          "--batch",         std::to_string(seqsPerMb),
          "--seq-len",       std::to_string(o.seqLen)};
}

json::Object searchJson(const search::SearchResult &found, const placement::Problem &problem,
                        const std::vector<std::string> &compileArgs) {
  json::Object o{{"ok", found.ok},
                 {"configurations", static_cast<int64_t>(found.trials.size())},
                 {"seconds", found.seconds},
                 {"budget_hit", found.budgetHit}};
  if (!found.ok) {
    o["error"] = found.error;
    return o;
  }
  json::Array args;
  for (const std::string &a : compileArgs)
    args.push_back(a);
  o["z3_optimum"] = trialJson(found.seed);
  json::Object chosen = trialJson(found.best);
  chosen["config"] = configJson(found.best.config, placement::evaluate(problem, found.best.config));
  o["chosen"] = std::move(chosen);
  o["why"] = found.why;
  o["gradient_sync"] = problem.options.gradSync.describe();
  o["compile_args"] = std::move(args);
  o["data_parallel_replicas"] = found.best.config.cand.replicas;
  o["simulated_only"] = json::Array{"recomputation", "window", "layout"};
  return o;
}

std::string writeJson(const std::string &path, json::Value doc) {
  if (path != "-")
    if (const std::string why = outputRefusal(path); !why.empty())
      return path + ": " + why;
  // llvm::writeToOutput writes a temporary file beside `path` and renames it ("-": stdout).
  Error e = writeToOutput(path, [&](raw_ostream &os) {
    os << formatv("{0:2}", doc) << "\n";
    return Error::success();
  });
  if (e)
    return path + ": cannot write: " + toString(std::move(e));
  return "";
}

} // namespace disagmoe::tools
