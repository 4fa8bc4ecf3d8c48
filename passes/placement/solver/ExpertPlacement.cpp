//===- ExpertPlacement.cpp ------------------------------------------------===//
#include "passes/placement/solver/ExpertPlacement.h"

#include <algorithm>
#include <numeric>
#include <queue>

namespace disagmoe::placement {

double ExpertPlacement::maxLoad() const {
  return rankLoad.empty() ? 0.0 : *std::max_element(rankLoad.begin(), rankLoad.end());
}
double ExpertPlacement::meanLoad() const {
  return rankLoad.empty() ? 0.0
                          : std::accumulate(rankLoad.begin(), rankLoad.end(), 0.0) /
                                static_cast<double>(rankLoad.size());
}
double ExpertPlacement::imbalance() const {
  double mean = meanLoad();
  return mean > 0 ? maxLoad() / mean : 1.0;
}

std::string ExpertPlacement::check(const std::vector<int64_t> &loads, int64_t ranks,
                                   int64_t slots) const {
  if (ranksOf.size() != loads.size())
    return "expert count differs";
  std::vector<double> load(ranks, 0.0);
  std::vector<int64_t> used(ranks, 0);
  for (size_t e = 0; e < loads.size(); ++e) {
    const auto &rs = ranksOf[e];
    if (rs.empty())
      return "expert " + std::to_string(e) + " has no rank";
    for (size_t i = 0; i < rs.size(); ++i) {
      if (rs[i] < 0 || rs[i] >= ranks)
        return "expert " + std::to_string(e) + " on a rank out of range";
      if (i && rs[i] <= rs[i - 1])
        return "expert " + std::to_string(e) + ": replicas not on distinct ascending ranks";
      load[rs[i]] += static_cast<double>(loads[e]) / static_cast<double>(rs.size());
      ++used[rs[i]];
    }
  }
  for (int64_t r = 0; r < ranks; ++r) {
    if (used[r] > slots)
      return "rank " + std::to_string(r) + " holds " + std::to_string(used[r]) + " replicas > " +
             std::to_string(slots) + " slots";
    double diff = load[r] - rankLoad[r];
    if (diff > 1e-6 * (1 + load[r]) || diff < -1e-6 * (1 + load[r]))
      return "rank " + std::to_string(r) + " load differs from its experts' loads";
  }
  return "";
}

ExpertPlacement placeContiguous(const std::vector<int64_t> &loads, int64_t ranks) {
  ExpertPlacement p;
  int64_t E = static_cast<int64_t>(loads.size());
  p.ranksOf.resize(E);
  p.rankLoad.assign(ranks, 0.0);
  for (int64_t e = 0; e < E; ++e) {
    int64_t r = e * ranks / E;
    p.ranksOf[e] = {r};
    p.rankLoad[r] += static_cast<double>(loads[e]);
  }
  return p;
}

namespace {
struct Item {
  int64_t expert;
  double load;
};

/// LPT over items (sorted by decreasing load), respecting slots and distinct ranks per expert.
ExpertPlacement lpt(const std::vector<Item> &itemsIn, int64_t experts, int64_t ranks,
                    int64_t slots) {
  std::vector<Item> items = itemsIn;
  std::stable_sort(items.begin(), items.end(),
                   [](const Item &a, const Item &b) { return a.load > b.load; });
  ExpertPlacement p;
  p.ranksOf.resize(experts);
  p.rankLoad.assign(ranks, 0.0);
  std::vector<int64_t> used(ranks, 0);
  for (const Item &it : items) {
    int64_t best = -1;
    for (int64_t r = 0; r < ranks; ++r) {
      if (used[r] >= slots)
        continue;
      auto &rs = p.ranksOf[it.expert];
      if (std::find(rs.begin(), rs.end(), r) != rs.end())
        continue;
      if (best < 0 || p.rankLoad[r] < p.rankLoad[best])
        best = r;
    }
    if (best < 0)
      continue; // no room: the caller checks capacity first
    p.ranksOf[it.expert].push_back(best);
    p.rankLoad[best] += it.load;
    ++used[best];
  }
  for (auto &rs : p.ranksOf)
    std::sort(rs.begin(), rs.end());
  return p;
}

std::vector<int64_t> replicaCounts(const std::vector<int64_t> &loads, int64_t extra) {
  std::vector<int64_t> count(loads.size(), 1);
  using Entry = std::pair<double, int64_t>;
  std::priority_queue<Entry> heap;
  for (size_t e = 0; e < loads.size(); ++e)
    heap.push({static_cast<double>(loads[e]), static_cast<int64_t>(e)});
  for (int64_t i = 0; i < extra && !heap.empty(); ++i) {
    auto [load, e] = heap.top();
    heap.pop();
    ++count[e];
    heap.push({static_cast<double>(loads[e]) / static_cast<double>(count[e]), e});
  }
  return count;
}
} // namespace

ExpertPlacement placeGreedyLpt(const std::vector<int64_t> &loads, int64_t ranks, int64_t slots) {
  std::vector<Item> items;
  for (size_t e = 0; e < loads.size(); ++e)
    items.push_back({static_cast<int64_t>(e), static_cast<double>(loads[e])});
  return lpt(items, static_cast<int64_t>(loads.size()), ranks, slots);
}

double maxLoadLowerBound(const std::vector<int64_t> &loads, int64_t ranks, int64_t extra) {
  std::vector<int64_t> count = replicaCounts(loads, extra);
  double total = 0, hottest = 0;
  for (size_t e = 0; e < loads.size(); ++e) {
    total += static_cast<double>(loads[e]);
    hottest = std::max(hottest, static_cast<double>(loads[e]) / static_cast<double>(count[e]));
  }
  return std::max(total / static_cast<double>(ranks), hottest);
}

ExpertPlacement placeBalanced(const std::vector<int64_t> &loads, int64_t ranks, int64_t slots,
                              int64_t extraReplicas) {
  const int64_t E = static_cast<int64_t>(loads.size());
  extraReplicas = std::max<int64_t>(0, std::min(extraReplicas, ranks * slots - E));
  std::vector<int64_t> count = replicaCounts(loads, extraReplicas);
  for (int64_t &c : count)
    c = std::min(c, ranks);
  std::vector<Item> items;
  for (int64_t e = 0; e < E; ++e)
    for (int64_t i = 0; i < count[e]; ++i)
      items.push_back({e, static_cast<double>(loads[e]) / static_cast<double>(count[e])});
  ExpertPlacement p = lpt(items, E, ranks, slots);

  // Local refinement: rank contents as replica lists.
  std::vector<std::vector<Item>> on(ranks);
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r : p.ranksOf[e])
      on[r].push_back(
          {e, static_cast<double>(loads[e]) / static_cast<double>(p.ranksOf[e].size())});
  auto holds = [&](int64_t r, int64_t e) {
    for (const Item &it : on[r])
      if (it.expert == e)
        return true;
    return false;
  };
  for (int iter = 0; iter < 100000; ++iter) {
    int64_t top = std::max_element(p.rankLoad.begin(), p.rankLoad.end()) - p.rankLoad.begin();
    double peak = p.rankLoad[top];
    bool improved = false;
    for (size_t i = 0; i < on[top].size() && !improved; ++i) {
      const Item it = on[top][i];
      for (int64_t r = 0; r < ranks && !improved; ++r) {
        if (r == top || holds(r, it.expert))
          continue;
        // Move.
        if (static_cast<int64_t>(on[r].size()) < slots && p.rankLoad[r] + it.load < peak) {
          on[r].push_back(it);
          on[top].erase(on[top].begin() + static_cast<long>(i));
          p.rankLoad[r] += it.load;
          p.rankLoad[top] -= it.load;
          improved = true;
          break;
        }
        // Swap with a lighter replica whose expert is not on `top`.
        for (size_t j = 0; j < on[r].size(); ++j) {
          const Item other = on[r][j];
          double delta = it.load - other.load;
          if (delta <= 0 || holds(top, other.expert) || p.rankLoad[r] + delta >= peak)
            continue;
          on[top][i] = other;
          on[r][j] = it;
          p.rankLoad[top] -= delta;
          p.rankLoad[r] += delta;
          improved = true;
          break;
        }
      }
    }
    if (!improved)
      break;
  }
  for (auto &rs : p.ranksOf)
    rs.clear();
  for (int64_t r = 0; r < ranks; ++r)
    for (const Item &it : on[r])
      p.ranksOf[it.expert].push_back(r);
  for (auto &rs : p.ranksOf)
    std::sort(rs.begin(), rs.end());
  return p;
}

} // namespace disagmoe::placement
