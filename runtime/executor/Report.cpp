// disagmoe-run's summaries of placement, exchanges, memory and throughput (Report.h).
#include "runtime/executor/Report.h"

#include <cstdarg>
#include <cstdio>
#include <tuple>

namespace disagmoe {
namespace {

std::string joinRanks(const std::vector<int> &ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

std::string row(const char *format, ...) __attribute__((format(printf, 1, 2)));
std::string row(const char *format, ...) {
  va_list args, copy;
  va_start(args, format);
  va_copy(copy, args);
  const int size = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string text(static_cast<size_t>(size > 0 ? size : 0) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, args);
  va_end(args);
  text.back() = '\n';
  return text;
}

} // namespace

std::string formatPlacement(const Plan &plan, const RunResult &run) {
  const Placement &p = plan.placement;
  std::string out;
  const Group &embed = p.embeddingRunner();
  out += std::string("embedding: group ") + (p.embeddingOnFfn ? "F" : "A") +
         std::to_string(embed.index) + " ranks " + joinRanks(embed.ranks) + "\n";
  for (int64_t l = 0; l < plan.model.numLayers; ++l) {
    const Group &a = p.attentionGroupOfLayer(l);
    out += "layer " + std::to_string(l) + " attention: group A" + std::to_string(a.index) +
           " ranks " + joinRanks(a.ranks) + "\n";
    // Runs of consecutive expert ids on one rank: "0-3 -> rank 2".
    std::string line;
    int64_t first = -1, last = -1;
    int rank = -1;
    const auto flush = [&] {
      if (first < 0)
        return;
      line += (line.empty() ? "" : ", ") + std::to_string(first) +
              (last > first ? "-" + std::to_string(last) : "") + " -> rank " + std::to_string(rank);
    };
    for (const ExpertRecord &e : run.experts) {
      if (e.layer != l)
        continue;
      if (e.rank != rank || e.expert != last + 1) {
        flush();
        first = e.expert;
        rank = e.rank;
      }
      last = e.expert;
    }
    flush();
    const Group &f = p.ffnGroupOfLayer(l);
    const LayerComponents &lc = plan.model.layers[l];
    if (!lc.dense)
      out += "layer " + std::to_string(l) + " experts " + line + " (group F" +
             std::to_string(f.index) + ")\n";
    // Dense FFN / shared experts: on the side their dense_ffn names (docs/plan-format.md).
    for (auto [index, onFfn, what] :
         {std::tuple<int, bool, const char *>{lc.denseFfn, lc.denseOnFfn, "dense FFN"},
          {lc.sharedFfn, lc.sharedOnFfn, "shared experts"}})
      if (index >= 0)
        out += "layer " + std::to_string(l) + " " + what + ": group " + (onFfn ? "F" : "A") +
               std::to_string(onFfn ? f.index : a.index) + " ranks " +
               joinRanks(onFfn ? f.ranks : a.ranks) + "\n";
  }
  const Group &head = p.headRunner();
  out += std::string("final norm and head: group ") + (p.headOnFfn ? "F" : "A") +
         std::to_string(head.index) + " ranks " + joinRanks(head.ranks) + "\n";
  return out;
}

std::string formatExchanges(const Plan &plan, const RunResult &run) {
  std::string out =
      row("%-6s %-9s %-10s %10s %12s", "layer", "exchange", "src->dst", "tokens", "bytes");
  uint64_t grand = 0;
  for (int64_t l = 0; l < plan.model.numLayers; ++l) {
    uint64_t layerTotal = 0;
    for (ExchangeKind kind : {ExchangeKind::M2n, ExchangeKind::N2m, ExchangeKind::Residual}) {
      uint64_t kindTotal = 0;
      int64_t kindTokens = 0;
      for (const ExchangeRecord &e : run.exchanges) {
        if (e.layer != l || e.kind != kind)
          continue;
        std::string pair = std::to_string(e.src) + "->" + std::to_string(e.dst);
        out += row("%-6lld %-9s %-10s %10lld %12llu", static_cast<long long>(l), toString(kind),
                   pair.c_str(), static_cast<long long>(e.tokens),
                   static_cast<unsigned long long>(e.bytes));
        kindTotal += e.bytes;
        kindTokens += e.tokens;
      }
      out +=
          row("%-6lld %-9s %-10s %10lld %12llu", static_cast<long long>(l), toString(kind), "total",
              static_cast<long long>(kindTokens), static_cast<unsigned long long>(kindTotal));
      layerTotal += kindTotal;
    }
    out += row("%-6lld %-9s %-10s %10s %12llu", static_cast<long long>(l), "all", "total", "",
               static_cast<unsigned long long>(layerTotal));
    grand += layerTotal;
  }
  // FFN-side embedding and head: x_0 F -> A before layer 0, x_L A -> F after the last layer.
  for (ExchangeKind kind : {ExchangeKind::Embedding, ExchangeKind::Head})
    for (const ExchangeRecord &e : run.exchanges) {
      if (e.kind != kind)
        continue;
      std::string pair = std::to_string(e.src) + "->" + std::to_string(e.dst);
      out += row("%-6s %-9s %-10s %10lld %12llu", "-", toString(kind), pair.c_str(),
                 static_cast<long long>(e.tokens), static_cast<unsigned long long>(e.bytes));
      grand += e.bytes;
    }
  out += row("%-6s %-9s %-10s %10s %12llu", "all", "all", "total", "",
             static_cast<unsigned long long>(grand));
  return out;
}

std::string formatAllToAllComparison(const Plan &plan, const RunResult &run) {
  // Conventional expert-parallel all-to-all on the same routing: every token-expert assignment is
  // one copy in dispatch (id, activations, expert id and gate) and one in combine (id, output),
  // versus one M2N copy per distinct destination F-rank plus the N2M and residual messages
  // (passes/exchange/ExchangeVolume.h has the formulas). Messages a rank sends to itself (the
  // residual route when both layers run on one attention group) never reach the network and are
  // left out; the baseline counts every assignment as crossing, as between disjoint GPU groups.
  const int64_t tokens = run.batch * run.seqLen, k = plan.model.topK,
                hidden = plan.model.hiddenSize;
  const uint64_t assignments = static_cast<uint64_t>(tokens * k);
  const uint64_t allToAll =
      assignments * static_cast<uint64_t>((8 + 4 * hidden + 12) + (8 + 4 * hidden));
  std::string out = row("%-6s %14s %14s %14s %16s %8s", "layer", "assignments", "m2n copies",
                        "disagmoe bytes", "all-to-all bytes", "ratio");
  uint64_t ours = 0, theirs = 0;
  for (int64_t l = 0; l < plan.model.numLayers; ++l) {
    uint64_t bytes = 0;
    int64_t copies = 0;
    for (const ExchangeRecord &e : run.exchanges) {
      if (e.layer != l || e.src == e.dst)
        continue;
      bytes += e.bytes;
      if (e.kind == ExchangeKind::M2n)
        copies += e.tokens;
    }
    out += row("%-6lld %14llu %14lld %14llu %16llu %8.3f", static_cast<long long>(l),
               static_cast<unsigned long long>(assignments), static_cast<long long>(copies),
               static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(allToAll),
               allToAll ? static_cast<double>(bytes) / static_cast<double>(allToAll) : 0.0);
    ours += bytes;
    theirs += allToAll;
  }
  out += row("%-6s %14s %14s %14llu %16llu %8.3f", "all", "", "",
             static_cast<unsigned long long>(ours), static_cast<unsigned long long>(theirs),
             theirs ? static_cast<double>(ours) / static_cast<double>(theirs) : 0.0);
  return out;
}

std::string formatMemory(const Plan &plan) {
  std::string out;
  for (size_t r = 0; r < plan.memory.weightBytes.size(); ++r) {
    const Group &g = plan.placement.groupOf(static_cast<int>(r));
    const auto &activations = plan.memory.activationBytes[r];
    out += row(
        "rank %zu (%s group %lld): weights %llu bytes%s", r, toString(g.role),
        static_cast<long long>(g.index),
        static_cast<unsigned long long>(plan.memory.weightBytes[r]),
        activations
            ? (", activations " + std::to_string(*activations) + " bytes (plan estimate)").c_str()
            : "");
  }
  return out;
}

std::string formatThroughput(const RunResult &run) {
  const int64_t tokens = run.batch * run.seqLen;
  const double rate = run.wallSeconds > 0 ? static_cast<double>(tokens) / run.wallSeconds : 0.0;
  return row("%lld tokens in %.4f s: %.1f tokens/s", static_cast<long long>(tokens),
             run.wallSeconds, rate);
}

} // namespace disagmoe
