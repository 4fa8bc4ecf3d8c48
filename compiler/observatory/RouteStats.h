// `disagmoe route-stats`: runs a compiled plan's forward pass (cpu backend, local comm, through the
// executor's routing hook) over the token streams of the data conditions, and writes the routing
// observatory's results (docs/observatory.md): route-stats.json, route-stats.csv and a routing
// profile (docs/routing-profile.md).
//
// Routing is dropless and per token (no capacity), and attention stays inside a sequence, so a
// token's experts do not depend on which other sequences share its batch: the forward runs once per
// stream in chunks of `runBatch` sequences, and the per-batch metrics of every global batch size
// (GBS, in sequences) and EP degree are computed from per-sequence expert counts.
//
// Plain C++17 with exceptions inside; the entry point catches everything and reports one line as an
// llvm::Error, so the MLIR side (compiled without exceptions) can call it.
#pragma once

#include "compiler/observatory/DataConditions.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace disagmoe::observatory {

struct RouteStatsOptions {
  std::string planDir;   ///< a plan compiled for [runBatch, seqLen]
  std::string modelPath; ///< recorded in the outputs
  std::vector<DataSpec> data;
  std::vector<int> ep{4, 8, 16, 32}; ///< refused above the model's experts, unless epDefault
  bool epDefault = false;            ///< ep is the default list: drop degrees above the experts
  std::vector<int64_t> gbs{64, 128, 256, 512, 1024, 2048}; ///< sequences per global batch
  int64_t seqLen = 64;
  int64_t runBatch = 64;    ///< sequences per executor run
  int jobs = 2;             ///< executor runs in flight at once
  int64_t tokens = 1 << 20; ///< per condition (fewer when a file is shorter)
  uint64_t seed = 1;
  int classifyEp = 8;      ///< EP degree of the classification (clamped to the model's experts)
  int64_t classifyGbs = 0; ///< 0: the smallest GBS
  std::string outDir;
  std::string profileData; ///< condition whose loads go to routing-profile.json ("" = first text:)
};

struct ConditionSummary {
  std::string name;
  DataKind kind = DataKind::Mock;
  int64_t tokens = 0;
  std::vector<double> giniByLayer;        ///< at the classification EP and GBS (-1: no full batch)
  std::vector<double> maxOverMeanByLayer; ///< per-expert, at the classification GBS
  std::vector<double> alphaByLayer;       ///< at the classification GBS
  double meanGini = -1;
};

struct RouteStatsSummary {
  int64_t experts = 0, topK = 0, layers = 0;
  int classifyEp = 0;
  int64_t classifyGbs = 0;
  std::vector<ConditionSummary> conditions;
  double realGini = -1, mockGini = -1;
  std::string classification;
  double forwardSeconds = 0, totalSeconds = 0;
  int64_t forwardTokens = 0;
};

/// Refuses EP degrees above the model's expert count (and below 1), naming them. Returns "" if
/// fine.
std::string checkEpDegrees(const std::vector<int> &ep, int64_t experts);

/// Runs everything and writes the outputs into options.outDir. Progress lines go to `log`. Never
/// throws: fails with one line naming the option, file or condition at fault (bad options, a plan
/// or data file that cannot be read or written, a stream shorter than one sequence), or the
/// runtime's exception message.
llvm::Error runRouteStats(const RouteStatsOptions &options, RouteStatsSummary &summary,
                          std::ostream &log) noexcept;

} // namespace disagmoe::observatory
