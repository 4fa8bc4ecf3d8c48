//===- StageTimes.h - measured per-stage times as a stage-time source -*- C++ -*-===//
//
// A file of measured busy times per micro-batch (format "disagmoe-stage-times", version 1;
// docs/placement.md) scores configurations in the local search. Entries match a configuration on
// seq_len, replicas, groups, attn_ranks, ffn_ranks, microbatches, cp (optional, default 1: the
// context-parallel degree), each side's recomputation level
// ("recompute": true/false or "none"/"selective"/"full" for both, "attn_recompute"/"ffn_recompute"
// for one) and, when given,
// attn_nics / ffn_nics; a configuration without an entry gets the roofline's times scaled by the
// median measured/roofline ratio of each side over the file's entries (so measured overheads carry
// over to neighbours). The simulation backend (AF-Pipe issue) plugs in the same way.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_PLACEMENT_SOLVER_STAGETIMES_H
#define DISAGMOE_PASSES_PLACEMENT_SOLVER_STAGETIMES_H

#include "passes/placement/solver/Planner.h"

namespace disagmoe::placement {

class MeasuredStageTimes : public StageTimeSource {
public:
  struct Entry {
    int64_t seqLen = 0, replicas = 1, groups = 1, attnRanks = 1, ffnRanks = 1, microbatches = 1;
    int64_t cp = 1;                    ///< context-parallel degree
    int64_t attnNics = 0, ffnNics = 0; ///< 0: any
    cost::Recomputation attnRecompute = cost::Recomputation::None;
    cost::Recomputation ffnRecompute = cost::Recomputation::None;
    double attnSeconds = 0, ffnSeconds = 0;
  };
  std::string name() const override { return "measured"; }
  bool busyTimes(const Problem &problem, const Config &config, double &attn,
                 double &ffn) const override;
  /// Reads `path` into `entries`. Never throws: fails with one line naming the file and the field
  /// at fault (or why the file cannot be opened or parsed); `entries` is then left unchanged.
  llvm::Error load(const std::string &path) noexcept;
  /// Writes `entries` to `path`. Never throws: fails with one line naming the file.
  llvm::Error save(const std::string &path) const noexcept;
  std::vector<Entry> entries;
};

} // namespace disagmoe::placement

#endif
