// disagmoe-run's summaries of placement, exchanges, memory and throughput (Report.h).
#include "runtime/executor/Report.h"

#include <algorithm>
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

namespace {
/// "5" or "3-7".
std::string span(uint64_t lo, uint64_t hi) {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

/// Layer list as ranges: "0-3", "0,2,4-5".
std::string layerRanges(const std::vector<int64_t> &layers) {
  std::string s;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1)
      ++j;
    s += (s.empty() ? "" : ",") + std::to_string(layers[i]) +
         (j > i ? "-" + std::to_string(layers[j]) : "");
    i = j + 1;
  }
  return s;
}
} // namespace

std::string formatSummary(const Plan &plan, const RunResult &run) {
  const Placement &p = plan.placement;
  std::string sides;
  for (GroupRole role : {GroupRole::Attention, GroupRole::Ffn}) {
    const bool ffn = role == GroupRole::Ffn;
    std::vector<const Group *> groups;
    size_t ranks = 0;
    std::vector<int64_t> layers;
    for (const Group &g : p.groups)
      if (g.role == role) {
        groups.push_back(&g);
        ranks += g.ranks.size();
        layers.insert(layers.end(), g.layers.begin(), g.layers.end());
      }
    if (groups.empty())
      continue;
    std::sort(layers.begin(), layers.end());
    layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
    std::string text = std::string(toString(role)) + " side: " + std::to_string(groups.size()) +
                       " group" + (groups.size() == 1 ? "" : "s") + " of " +
                       std::to_string(groups.front()->ranks.size()) + " ranks";
    if (groups.size() == 1)
      text +=
          std::string(" (") + (ffn ? "F" : "A") + "0 ranks " + joinRanks(groups[0]->ranks) + ")";
    else
      text += ", " + std::to_string(ranks) + " ranks in all";
    if (!ffn)
      text += (layers.size() == 1 ? ", layer " : ", layers ") + layerRanges(layers);
    if (ffn) {
      // Experts per rank per MoE layer, from where they ran.
      int64_t moeLayers = 0;
      uint64_t lo = ~0ull, hi = 0;
      for (int64_t l = 0; l < plan.model.numLayers; ++l) {
        if (plan.model.layers[l].dense)
          continue;
        ++moeLayers;
        std::vector<uint64_t> perRank(static_cast<size_t>(p.worldSize), 0);
        for (const ExpertRecord &e : run.experts)
          if (e.layer == l && e.rank >= 0 && e.rank < p.worldSize)
            ++perRank[static_cast<size_t>(e.rank)];
        for (const int r : p.ffnGroupOfLayer(l).ranks)
          lo = std::min(lo, perRank[static_cast<size_t>(r)]),
          hi = std::max(hi, perRank[static_cast<size_t>(r)]);
      }
      text += ", " + std::to_string(plan.model.numExperts) + " experts x " +
              std::to_string(moeLayers) + " MoE layer" + (moeLayers == 1 ? "" : "s");
      if (moeLayers)
        text += ", " + span(lo, hi) + " per rank per layer";
    }
    const auto side = [&](bool onFfn) { return onFfn == ffn; };
    if (side(p.embeddingOnFfn) && side(p.headOnFfn))
      text += ", embedding and head";
    else if (side(p.embeddingOnFfn))
      text += ", embedding";
    else if (side(p.headOnFfn))
      text += ", final norm and head";
    uint64_t wlo = ~0ull, whi = 0;
    for (size_t r = 0; r < plan.memory.weightBytes.size(); ++r)
      if (p.groupOf(static_cast<int>(r)).role == role)
        wlo = std::min<uint64_t>(wlo, plan.memory.weightBytes[r]),
        whi = std::max<uint64_t>(whi, plan.memory.weightBytes[r]);
    if (wlo <= whi)
      text += "; weights " + span(wlo, whi) + " bytes per rank";
    sides += text + "\n";
  }
  uint64_t m2n = 0, n2m = 0, residual = 0, other = 0;
  std::vector<uint64_t> perLayer(static_cast<size_t>(plan.model.numLayers), 0);
  std::vector<uint64_t> crossing(static_cast<size_t>(plan.model.numLayers), 0);
  for (const ExchangeRecord &e : run.exchanges) {
    (e.kind == ExchangeKind::M2n        ? m2n
     : e.kind == ExchangeKind::N2m      ? n2m
     : e.kind == ExchangeKind::Residual ? residual
                                        : other) += e.bytes;
    if (e.layer >= 0 && e.layer < plan.model.numLayers &&
        (e.kind == ExchangeKind::M2n || e.kind == ExchangeKind::N2m ||
         e.kind == ExchangeKind::Residual)) {
      perLayer[static_cast<size_t>(e.layer)] += e.bytes;
      if (e.src != e.dst)
        crossing[static_cast<size_t>(e.layer)] += e.bytes;
    }
  }
  uint64_t lo = ~0ull, hi = 0, ours = 0;
  for (size_t l = 0; l < perLayer.size(); ++l)
    lo = std::min(lo, perLayer[l]), hi = std::max(hi, perLayer[l]), ours += crossing[l];
  std::string exchange = "exchange bytes: m2n " + std::to_string(m2n) + ", n2m " +
                         std::to_string(n2m) + ", residual " + std::to_string(residual);
  if (other)
    exchange += ", embedding/head " + std::to_string(other);
  exchange += ", all " + std::to_string(m2n + n2m + residual + other);
  if (!perLayer.empty())
    exchange += " (" + std::to_string(perLayer.size()) + " layers, " + span(lo, hi) + " each)";
  // formatAllToAllComparison's baseline, summed over the layers.
  const uint64_t assignments = static_cast<uint64_t>(run.batch * run.seqLen * plan.model.topK);
  const uint64_t allToAll = assignments *
                            static_cast<uint64_t>((8 + 4 * plan.model.hiddenSize + 12) +
                                                  (8 + 4 * plan.model.hiddenSize)) *
                            static_cast<uint64_t>(plan.model.numLayers);
  char ratio[64];
  std::snprintf(ratio, sizeof ratio, "%.3f",
                allToAll ? static_cast<double>(ours) / static_cast<double>(allToAll) : 0.0);
  return sides + exchange + "\n" +
         "against an expert-parallel all-to-all of the same routing: " + std::to_string(ours) +
         " vs " + std::to_string(allToAll) + " bytes, ratio " + ratio + "\n" +
         "(--verbose: per-layer placement, per-rank memory and per-pair exchange tables)\n";
}

std::string formatThroughput(const RunResult &run) {
  const int64_t tokens = run.batch * run.seqLen;
  const double rate = run.wallSeconds > 0 ? static_cast<double>(tokens) / run.wallSeconds : 0.0;
  return row("%lld tokens in %.4f s: %.1f tokens/s", static_cast<long long>(tokens),
             run.wallSeconds, rate);
}

} // namespace disagmoe
