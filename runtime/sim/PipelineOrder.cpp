//===- PipelineOrder.cpp - 1F1B and DualPipe unit orders, live activations ----------===//
#include "runtime/sim/PipelineOrder.h"

#include <algorithm>
#include <deque>
#include <map>

namespace disagmoe::sim {

int oneFOneBWarmup(int pp, int vpp, int m, int s) {
  const int w = vpp == 1 ? pp - s - 1 : (pp - s - 1) * 2 + (vpp - 1) * pp;
  return std::min(w, m * vpp);
}

std::vector<std::pair<bool, int>> oneFOneB(int pp, int vpp, int m, int s) {
  const int units = m * vpp, warmup = oneFOneBWarmup(pp, vpp, m, s);
  std::vector<std::pair<bool, int>> order;
  for (int k = 0; k < warmup; ++k)
    order.push_back({true, k});
  for (int i = 0; i < units - warmup; ++i) {
    order.push_back({true, warmup + i});
    order.push_back({false, i});
  }
  for (int i = units - warmup; i < units; ++i)
    order.push_back({false, i});
  return order;
}

std::pair<int, int> oneFOneBUnit(int pp, int vpp, int k, bool forward) {
  // Megatron's interleaving: groups of pp micro-batches walk the chunks (forward 0 .. vpp-1,
  // backward vpp-1 .. 0).
  const int inGroup = k % (pp * vpp);
  int c = inGroup / pp;
  if (!forward)
    c = vpp - 1 - c;
  const int j = vpp == 1 ? k : (k / (pp * vpp)) * pp + (k % pp);
  return {j, c};
}

double oneFOneBLiveBytes(int pp, int vpp, int m, int s, bool overlapped,
                         const std::vector<double> &chunkBytes, int *peakUnits) {
  const std::vector<std::pair<bool, int>> order = oneFOneB(pp, vpp, m, s);
  const int warmup = oneFOneBWarmup(pp, vpp, m, s);
  std::map<std::pair<int, int>, double> live;
  double bytes = 0, peak = 0;
  int peakN = 0, freedUpTo = 0; // backward units 0 .. freedUpTo - 1 are done
  auto freeUnit = [&](int k) {
    auto it = live.find(oneFOneBUnit(pp, vpp, k, false));
    if (it != live.end()) {
      bytes -= it->second;
      live.erase(it);
    }
  };
  for (auto [forward, k] : order) {
    if (!forward) {
      if (!overlapped) // one stream: done before whatever follows it
        freeUnit(k), freedUpTo = k + 1;
      continue;
    }
    if (overlapped) // forward unit k waits for backward unit k - warm-up - 2 (Baselines.cpp)
      for (; freedUpTo <= k - warmup - 2; ++freedUpTo)
        freeUnit(freedUpTo);
    const std::pair<int, int> u = oneFOneBUnit(pp, vpp, k, true);
    live[u] = chunkBytes[u.second];
    bytes += chunkBytes[u.second];
    if (bytes > peak) {
      peak = bytes;
      peakN = static_cast<int>(live.size());
    }
  }
  if (peakUnits)
    *peakUnits = peakN;
  return peak;
}

std::vector<PipeCell> dualPipeCells(int pp, int n, int s) {
  using K = PipeOp::Kind;
  const int H = pp / 2, h = std::min(s, pp - 1 - s);
  const bool middle = h == H - 1;
  auto F = [](int p) { return PipeOp{K::Forward, p, false}; };
  auto B = [](int p, bool split = false) { return PipeOp{K::Backward, p, split}; };
  const PipeOp W{K::Weight, 0, false};
  auto waitF = [](int p) { return PipeOp{K::Wait, p, false}; };
  std::vector<PipeCell> cells;
  // Step 1: nF0.
  for (int i = 0; i < (H - h - 1) * 2; ++i)
    cells.push_back({F(0)});
  // Step 2: nF0F1.
  // The next F0's receive is posted before each F1, which waits for it too.
  for (int i = 0; i < h + 1; ++i) {
    cells.push_back({F(0)});
    cells.push_back({F(1), waitF(0)});
  }
  // Step 3: nB1W1F1, the backward split (zero bubble).
  for (int i = 0; i < H - h - 1; ++i) {
    cells.push_back({B(1, true)});
    cells.push_back({W, waitF(1)}); // F1's receive is posted before the W
    cells.push_back({F(1)});
  }
  // Step 4 (main): nF0B1F1B0, forward and backward overlapped; the middle ranks do not overlap
  // the first pair.
  for (int i = 0; i < n - pp + h + 1; ++i) {
    if (i == 0 && middle) {
      cells.push_back({F(0)});
      cells.push_back({B(1)});
    } else {
      cells.push_back({F(0), B(1)});
    }
    cells.push_back({F(1), B(0)});
  }
  // Step 5: nB1F1B0.
  for (int i = 0; i < H - h - 1; ++i) {
    cells.push_back({B(1)});
    cells.push_back({F(1), B(0)});
  }
  // Step 6: nB1B0, the second half of them split.
  bool split = false;
  for (int i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1)
      split = true;
    cells.push_back({B(1, split)});
    if (i == (h + 1) / 2 && h % 2 == 0)
      split = true;
    cells.push_back({B(0, split)});
  }
  // Step 7: nWB0, split.
  for (int i = 0; i < H - h - 1; ++i) {
    cells.push_back({W});
    cells.push_back({B(0, true)});
  }
  // Step 8: nW.
  for (int i = 0; i < h + 1; ++i)
    cells.push_back({W});
  return cells;
}

double dualPipeLiveBytes(const std::vector<PipeCell> &cells, const double unitBytes[2],
                         int *peakUnits) {
  int live[2] = {0, 0};
  std::deque<int> deferred; // phases of split backwards awaiting their W
  double peak = 0;
  int peakN = 0;
  for (const PipeCell &cell : cells) {
    for (const PipeOp &op : cell)
      if (op.kind == PipeOp::Forward)
        ++live[op.phase];
    const double bytes = live[0] * unitBytes[0] + live[1] * unitBytes[1];
    if (bytes > peak) {
      peak = bytes;
      peakN = live[0] + live[1];
    }
    // The cell's backwards and weight gradients are done before the next cell starts.
    for (const PipeOp &op : cell) {
      if (op.kind == PipeOp::Backward) {
        if (op.split)
          deferred.push_back(op.phase);
        else
          --live[op.phase];
      } else if (op.kind == PipeOp::Weight && !deferred.empty()) {
        --live[deferred.front()];
        deferred.pop_front();
      }
    }
  }
  if (peakUnits)
    *peakUnits = peakN;
  return peak;
}

} // namespace disagmoe::sim
