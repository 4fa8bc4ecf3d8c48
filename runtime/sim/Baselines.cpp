//===- Baselines.cpp - Megatron EP + (interleaved) 1F1B, with and without overlap; DualPipe
//----===//
#include "runtime/sim/Baselines.h"

#include "runtime/cost/Roofline.h"
#include "runtime/sim/GradSync.h"
#include "runtime/sim/PipelineOrder.h"
#include "runtime/sim/ScheduleBuilder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>

namespace disagmoe::sim {

using namespace sched;

const char *toString(Baseline b) {
  switch (b) {
  case Baseline::Megatron:
    return "megatron";
  case Baseline::MegatronOverlap:
    return "megatron-overlap";
  case Baseline::DualPipe:
    return "dualpipe";
  }
  return "?";
}

bool parseBaseline(const std::string &name, Baseline &out) {
  for (Baseline b : {Baseline::Megatron, Baseline::MegatronOverlap, Baseline::DualPipe})
    if (name == toString(b)) {
      out = b;
      return true;
    }
  return false;
}

namespace {

/// Per-rank work of one layer per micro-batch.
struct LayerCost {
  bool moe = false;
  double attnFwd = 0, attnBwd = 0, expFwd = 0, expBwd = 0, a2aBytes = 0, act = 0;
  /// Weight-gradient share of the backward (the W of a split backward): one forward's FLOPs of
  /// every weight matmul (projections, router, shared/dense FFN; the experts); the attention
  /// scores have no weights. The input gradient (B) is the rest.
  double attnW = 0, expW = 0;
  double attnParams = 0, expertParams = 0; ///< per rank
};

/// What a rank of each stage computes and sends per micro-batch (shared by the builder, the memory
/// model and the lower bound).
struct Costs {
  std::vector<LayerCost> lc;
  double T = 0, h = 0, headFwd = 0, vocabRows = 0, p2pBytes = 0;
  std::vector<std::vector<int>> chunk; ///< layers of each virtual stage
};

Costs costsOf(const cost::ModelShape &model, const BaselineConfig &c) {
  Costs k;
  const bool dual = c.kind == Baseline::DualPipe;
  const int L = static_cast<int>(model.numLayers());
  const int pp = static_cast<int>(c.pp), vpp = dual ? 1 : static_cast<int>(c.vpp),
            ep = static_cast<int>(c.ep);
  const int R = static_cast<int>(c.replicas), m = static_cast<int>(c.microbatches);
  const double seqsPerRank =
      static_cast<double>(c.sequencesPerStep) / (static_cast<double>(R) * m * ep);
  const double T = seqsPerRank * static_cast<double>(c.seqLen);
  const double h = static_cast<double>(model.hidden);
  const int64_t E = model.numExperts();
  const double share = E > 0 ? static_cast<double>((E + ep - 1) / ep) / static_cast<double>(E) : 0;
  const double bwdMult = c.recompute ? 3.0 : 2.0;
  k.lc.resize(L);
  for (int l = 0; l < L; ++l) {
    const cost::LayerShape &ls = model.layers[l];
    LayerCost &x = k.lc[l];
    x.moe = ls.isMoe();
    const cost::AttentionFlops af =
        cost::attentionSideForwardFlops(model, l, seqsPerRank, c.seqLen);
    x.attnFwd = af.total();
    x.attnBwd = bwdMult * x.attnFwd;
    x.attnW = af.projections + af.router + af.sharedAndDense;
    x.act = cost::attentionActivationBytesPerToken(model, l, c.recompute) * T;
    x.attnParams = model.attentionSideParams(l);
    if (x.moe) {
      x.expFwd = cost::routedExpertForwardFlops(model, l, T * ep) * share;
      x.expBwd = bwdMult * x.expFwd;
      x.expW = x.expFwd;
      // Each token goes to its top-k experts and comes back: bf16 rows, spread evenly over the EP
      // group.
      x.a2aBytes = T * static_cast<double>(ls.topK) * cost::kBf16Bytes * h / ep;
      x.act += cost::expertActivationBytesPerPair(model, l, c.recompute) * T * ls.topK * share * ep;
      x.expertParams = static_cast<double>((E + ep - 1) / ep) * model.expertParams(l);
    }
  }
  k.T = T;
  k.h = h;
  k.headFwd = cost::headForwardFlops(model, T);
  k.vocabRows = static_cast<double>(model.vocab) * h;
  k.p2pBytes = 8 + T * cost::kBf16Bytes * h;
  // Chunks: VS virtual stages of contiguous layers (the first ones one layer longer).
  const int VS = pp * vpp;
  k.chunk.resize(VS);
  for (int v = 0, l = 0; v < VS; ++v) {
    int n = L / VS + (v < L % VS ? 1 : 0);
    for (int j = 0; j < n; ++j)
      k.chunk[v].push_back(l++);
  }
  return k;
}

/// Why `c` cannot be built, or "".
std::string checkConfig(const cost::ModelShape &model, const BaselineConfig &c) {
  const int L = static_cast<int>(model.numLayers());
  const bool dual = c.kind == Baseline::DualPipe;
  const int64_t pp = c.pp, vpp = dual ? 1 : c.vpp, m = c.microbatches;
  if (pp < 1 || vpp < 1 || c.ep < 1 || c.replicas < 1 || m < 1 || L < pp * vpp)
    return std::string(toString(c.kind)) +
           ": need pp, vpp, ep, replicas, micro-batches >= 1 and a layer per chunk";
  if (vpp > 1 && m % pp)
    return std::string(toString(c.kind)) + ": interleaved 1F1B needs micro-batches (" +
           std::to_string(m) + ") divisible by pp (" + std::to_string(pp) + ")";
  if (c.gradSync.distributedOptimizer != c.memory.zero1)
    return std::string(toString(c.kind)) +
           ": the distributed optimizer and the sharded optimizer state (zero1) must be chosen "
           "together";
  if (dual && (m % 2 || pp % 2))
    return "dualpipe: needs an even number of stages and of micro-batches";
  if (dual && m < 2 * pp)
    return "dualpipe: needs at least 2 pp micro-batches (" + std::to_string(m) + " < 2 x " +
           std::to_string(pp) + "; dualpipe.py: num_chunks >= num_ranks * 2)";
  return "";
}

/// Seconds of one all-to-all of `bytes` per rank pair on an EP group of `ep` contiguous ranks,
/// alone on its links (the simulator's flow model, Simulator.h: the busiest rank's peers over the
/// NIC and over NVLink, the slower class setting the pace). No concurrent flow makes it faster.
double allToAllSeconds(const Hardware &hw, int64_t ep, double bytes) {
  if (ep < 2 || bytes <= 0)
    return 0;
  const int64_t n = std::max<int64_t>(1, hw.gpusPerNode);
  double nic = 0, nvl = 0;
  for (int64_t a = 0; a < ep; ++a) {
    double x = 0, y = 0;
    for (int64_t q = 0; q < ep; ++q)
      if (q != a)
        (q / n == a / n ? y : x) += 1;
    nic = std::max(nic, x);
    nvl = std::max(nvl, y);
  }
  double t = 0;
  if (nic > 0)
    t = std::max(t, nic * bytes / hw.nicBandwidth);
  if (nvl > 0)
    t = std::max(t, nvl * bytes / hw.nvlinkBandwidth);
  return t;
}

} // namespace

double baselineLowerBound(const cost::ModelShape &model, const Hardware &hw,
                          const BaselineConfig &c) {
  if (!checkConfig(model, c).empty())
    return 0;
  const Costs k = costsOf(model, c);
  const bool dual = c.kind == Baseline::DualPipe, single = c.kind == Baseline::Megatron;
  const int pp = static_cast<int>(c.pp), VS = static_cast<int>(k.chunk.size()),
            m = static_cast<int>(c.microbatches);
  const double rate = hw.peakFlops * c.computeEfficiency;
  // Per virtual stage and micro-batch: its forward chain (compute and all-to-alls one after
  // another), which also bounds its backward's input-gradient chain from below (each backward
  // computes at least the forward's FLOPs), and its total compute (+ exchanges on one stream).
  std::vector<double> chain(VS, 0), work(VS, 0);
  for (int v = 0; v < VS; ++v) {
    for (int l : k.chunk[v]) {
      const LayerCost &x = k.lc[l];
      const double a2a = x.moe ? 2 * allToAllSeconds(hw, c.ep, x.a2aBytes) : 0;
      chain[v] += (x.attnFwd + x.expFwd) / rate + a2a;
      work[v] += (x.attnFwd + x.attnBwd + x.expFwd + x.expBwd) / rate + (single ? 2 * a2a : 0);
    }
    if (v == VS - 1) {
      chain[v] += k.headFwd / rate;
      work[v] += 3 * k.headFwd / rate;
    }
  }
  std::vector<double> prefix(VS + 1, 0);
  for (int v = 0; v < VS; ++v)
    prefix[v + 1] = prefix[v] + chain[v];
  // Stage s: its first unit waits for the chunks before it (in the nearer direction for
  // DualPipe), then it computes all its units, then the input gradients flow back the same way.
  double lb = 0;
  for (int s = 0; s < pp; ++s) {
    double w = 0;
    for (int v = 0; v < VS; ++v)
      if (v % pp == s || (dual && pp - 1 - v == s))
        w += (dual ? m / 2.0 : m) * work[v];
    // DualPipe may end a rank on a deferred weight gradient, after which nothing flows back.
    const int before = dual ? std::min(s, pp - 1 - s) : s;
    lb = std::max(lb, (dual ? 1 : 2) * prefix[before] + w);
  }
  return lb;
}

namespace {
/// Weights, gradients, optimizer state and one micro-batch's head logits of a rank of stage s.
double stageStaticBytes(const cost::ModelShape &model, const BaselineConfig &c, const Costs &k,
                        int s) {
  const bool dual = c.kind == Baseline::DualPipe;
  const int pp = static_cast<int>(c.pp), VS = static_cast<int>(k.chunk.size());
  const double ep = static_cast<double>(c.ep), R = static_cast<double>(c.replicas);
  const cost::MemoryOptions &mo = c.memory;
  auto staticOf = [&](double params, double dp) {
    return params * (mo.weightBytes + mo.gradientBytes +
                     mo.optimizerBytes / (mo.zero1 && dp > 1 ? dp : 1.0));
  };
  double st = 0;
  for (int d = 0; d < (dual ? 2 : 1); ++d)
    for (int vs = 0; vs < VS; ++vs) {
      if ((dual && d == 1 ? pp - 1 - vs % pp : vs % pp) != s)
        continue;
      for (int l : k.chunk[vs])
        st += staticOf(k.lc[l].attnParams, ep * R) + staticOf(k.lc[l].expertParams, R);
      if (vs == 0)
        st += staticOf(k.vocabRows, ep * R);
      if (vs == VS - 1)
        st += staticOf(k.vocabRows + k.h, ep * R) + 2.0 * k.T * model.vocab; // one mb's logits
    }
  return st;
}

std::string gbOf(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}
} // namespace

std::vector<BaselineStageMemory> baselineMemory(const cost::ModelShape &model,
                                                const BaselineConfig &c) {
  std::vector<BaselineStageMemory> out;
  if (!checkConfig(model, c).empty())
    return out;
  const Costs k = costsOf(model, c);
  const bool dual = c.kind == Baseline::DualPipe;
  const int pp = static_cast<int>(c.pp), vpp = dual ? 1 : static_cast<int>(c.vpp),
            m = static_cast<int>(c.microbatches);
  auto chunkBytes = [&](int vs) {
    double a = 0;
    for (int l : k.chunk[vs])
      a += k.lc[l].act;
    return a;
  };
  for (int s = 0; s < pp; ++s) {
    BaselineStageMemory x;
    x.staticBytes = stageStaticBytes(model, c, k, s);
    int units = 0;
    if (dual) {
      // Phase 0: the direction in which rank s comes first (dualpipe.py).
      const int d0 = s >= pp / 2 ? 1 : 0;
      const int vsOf[2] = {s, pp - 1 - s};
      const double unit[2] = {chunkBytes(vsOf[d0]), chunkBytes(vsOf[1 - d0])};
      x.activationBytes = dualPipeLiveBytes(dualPipeCells(pp, m / 2, s), unit, &units);
    } else {
      std::vector<double> perChunk(vpp);
      for (int c2 = 0; c2 < vpp; ++c2)
        perChunk[c2] = chunkBytes(c2 * pp + s);
      x.activationBytes =
          oneFOneBLiveBytes(pp, vpp, m, s, c.kind == Baseline::MegatronOverlap, perChunk, &units);
    }
    x.liveUnits = units;
    out.push_back(x);
  }
  return out;
}

std::string baselineMemoryRefusal(const cost::ModelShape &model, const Hardware &hw,
                                  const BaselineConfig &c) {
  const double usable = hw.hbmBytes > c.reserveBytes ? hw.hbmBytes - c.reserveBytes : 0;
  const std::vector<BaselineStageMemory> mem = baselineMemory(model, c);
  for (size_t s = 0; s < mem.size(); ++s)
    if (mem[s].total() > usable)
      return std::string(toString(c.kind)) + " (ep " + std::to_string(c.ep) + ", pp " +
             std::to_string(c.pp) + ", " + std::to_string(c.replicas) + " replicas): stage " +
             std::to_string(s) + ": peak memory " + gbOf(mem[s].total()) + " (" +
             gbOf(mem[s].staticBytes) + " weights, gradients, optimizer state and head logits + " +
             std::to_string(mem[s].liveUnits) + " (micro-batch, chunk) units live, " +
             gbOf(mem[s].activationBytes) + " of activations) exceeds the usable " + gbOf(usable);
  return "";
}

bool buildBaseline(const cost::ModelShape &model, const Hardware &hw, const BaselineConfig &c,
                   Schedule &out, std::string &error, bool verify) {
  const int L = static_cast<int>(model.numLayers());
  const bool dual = c.kind == Baseline::DualPipe;
  const int pp = static_cast<int>(c.pp), vpp = dual ? 1 : static_cast<int>(c.vpp),
            ep = static_cast<int>(c.ep);
  const int R = static_cast<int>(c.replicas), m = static_cast<int>(c.microbatches);
  if (std::string why = checkConfig(model, c); !why.empty()) {
    error = why;
    return false;
  }
  if (std::string why = baselineMemoryRefusal(model, hw, c); !why.empty()) {
    error = why;
    return false;
  }
  const Costs k = costsOf(model, c);
  const std::vector<LayerCost> &lc = k.lc;
  const double h = k.h, headFwd = k.headFwd, vocabRows = k.vocabRows, p2pBytes = k.p2pBytes;
  const std::vector<std::vector<int>> &chunk = k.chunk;
  const int VS = pp * vpp;
  auto stageOf = [&](int d, int vs) { return dual && d == 1 ? pp - 1 - vs % pp : vs % pp; };

  Schedule base;
  base.kind = toString(c.kind);
  base.replicas = R;
  base.microBatches = m;
  base.virtualStages = vpp;
  base.pipelineStages = pp;
  base.hw = hw;
  // Memory was checked above from the units live (baselineMemory); the verifier's micro-batch bound
  // would count every chunk of a live micro-batch.
  base.capacityBytes = 0;
  base.computeEfficiency = c.computeEfficiency;
  {
    const double B = static_cast<double>(c.sequencesPerStep),
                 Tall = B * static_cast<double>(c.seqLen);
    double flops = 3.0 * cost::headForwardFlops(model, Tall);
    for (int l = 0; l < L; ++l) {
      flops += 3.0 * cost::attentionSideForwardFlops(model, l, B, c.seqLen).total();
      if (model.layers[l].isMoe())
        flops += 3.0 * cost::routedExpertForwardFlops(model, l, Tall);
    }
    base.modelFlops = flops;
  }
  ScheduleBuilder b(base);
  // At most per micro-batch: 4 instructions per layer each way and 5 per chunk (receive, send, head
  // or weight gradient); per chunk and direction 2 gathers and 2 reductions; one optimizer per
  // stage.
  b.reserve(static_cast<size_t>(m) * (5 * static_cast<size_t>(pp * vpp) + 8 * L) +
            4 * static_cast<size_t>(pp * vpp) * (dual ? 2 : 1) + pp);
  std::vector<int> G(pp);
  for (int s = 0; s < pp; ++s) {
    std::vector<std::vector<int>> ranks(R);
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < ep; ++i)
        ranks[r].push_back((r * pp + s) * ep + i);
    const double st = stageStaticBytes(model, c, k, s);
    G[s] = b.addGroup("stage", s, ranks, st);
  }
  const bool single = c.kind == Baseline::Megatron;
  const Stream FWD = Stream::Forward, BWD = single ? Stream::Forward : Stream::Backward,
               COMM = single ? Stream::Forward : Stream::Comm;
  const int dirs = dual ? 2 : 1, mPerDir = m / dirs;
  // Handles: last forward instruction of (d, mb, vs), last backward, first forward.
  auto key = [&](int d, int j, int vs) { return (d * mPerDir + j) * VS + vs; };
  std::vector<int> fwdFirst(dirs * mPerDir * VS, -1), fwdLast(dirs * mPerDir * VS, -1),
      bwdLast(dirs * mPerDir * VS, -1);
  std::vector<std::vector<int>> lastBwdOfChunk(dirs, std::vector<int>(VS, -1));
  double counter = 0;
  auto mbId = [&](int d, int j) { return d * mPerDir + j; };
  // A unit's handles: the first instruction of its chain, its first compute, and its end (the
  // last instruction before its pipeline send: what the next DualPipe cell waits for).
  struct Unit {
    int first = -1, firstCompute = -1, end = -1;
  };
  auto emitForward = [&](int d, int j, int vs, double prio) {
    const int g = G[stageOf(d, vs)], mb = mbId(d, j);
    int prev = -1;
    Unit u;
    auto chain = [&](int h) {
      if (prev >= 0)
        b.after(h, prev);
      if (u.first < 0)
        u.first = h;
      prev = h;
      return h;
    };
    double k = 0;
    auto pr = [&] { return single || dual ? prio + (k += 1e-3) : (counter += 1); };
    if (vs > 0) {
      int from = G[stageOf(d, vs - 1)];
      chain(b.recv(g, from, Peers::Same, "p2p", Phase::Forward, mb, vs, p2pBytes, COMM, pr()));
    }
    for (int l : chunk[vs]) {
      const LayerCost &x = lc[l];
      int a =
          chain(b.compute(g, FWD, Phase::Forward, "attention", mb, l, x.attnFwd, 0, x.act, pr()));
      if (u.firstCompute < 0)
        u.firstCompute = a;
      if (x.moe) {
        chain(b.allToAll(g, "dispatch", Phase::Forward, mb, l, x.a2aBytes, COMM, pr()));
        chain(b.compute(g, FWD, Phase::Forward, "experts", mb, l, x.expFwd, 0, 0, pr()));
        chain(b.allToAll(g, "combine", Phase::Forward, mb, l, x.a2aBytes, COMM, pr()));
      }
    }
    if (vs == VS - 1) {
      u.end = chain(b.compute(g, FWD, Phase::Forward, "head", mb, L, headFwd, 0, 0, pr()));
    } else {
      u.end = prev;
      chain(b.send(g, G[stageOf(d, vs + 1)], Peers::Same, "p2p", Phase::Forward, mb, vs + 1,
                   p2pBytes, COMM, pr()));
    }
    fwdFirst[key(d, j, vs)] = u.firstCompute;
    fwdLast[key(d, j, vs)] = prev;
    return u;
  };
  // `split`: the input gradient only (DualPipe's zero-bubble B); emitWeight adds its W later.
  auto emitBackward = [&](int d, int j, int vs, double prio, bool split) {
    const int g = G[stageOf(d, vs)], mb = mbId(d, j);
    int prev = fwdLast[key(d, j, vs)];
    Unit u;
    auto chain = [&](int h) {
      if (prev >= 0)
        b.after(h, prev);
      if (u.first < 0)
        u.first = h;
      prev = h;
      return h;
    };
    double k = 0;
    auto pr = [&] { return single || dual ? prio + (k += 1e-3) : (counter += 1); };
    int lastCompute = -1;
    if (vs == VS - 1)
      u.firstCompute = chain(b.compute(g, BWD, Phase::Backward, "head", mb, L,
                                       split ? headFwd : 2 * headFwd, 0, 0, pr()));
    else
      chain(b.recv(g, G[stageOf(d, vs + 1)], Peers::Same, "p2p", Phase::Backward, mb, vs, p2pBytes,
                   COMM, pr()));
    for (int k2 = static_cast<int>(chunk[vs].size()) - 1; k2 >= 0; --k2) {
      int l = chunk[vs][k2];
      const LayerCost &x = lc[l];
      if (x.moe) {
        chain(b.allToAll(g, "combine", Phase::Backward, mb, l, x.a2aBytes, COMM, pr()));
        int e = chain(b.compute(g, BWD, Phase::Backward, "experts", mb, l,
                                split ? x.expBwd - x.expW : x.expBwd, 0, 0, pr()));
        if (u.firstCompute < 0)
          u.firstCompute = e;
        chain(b.allToAll(g, "dispatch", Phase::Backward, mb, l, x.a2aBytes, COMM, pr()));
      }
      lastCompute = chain(b.compute(g, BWD, Phase::Backward, "attention", mb, l,
                                    split ? x.attnBwd - x.attnW : x.attnBwd, 0, 0, pr()));
      if (u.firstCompute < 0)
        u.firstCompute = lastCompute;
    }
    u.end = lastCompute;
    if (vs > 0)
      chain(b.send(g, G[stageOf(d, vs - 1)], Peers::Same, "p2p", Phase::Backward, mb, vs - 1,
                   p2pBytes, COMM, pr()));
    bwdLast[key(d, j, vs)] = lastCompute; // the window waits for the compute, not its send
    if (!split)
      lastBwdOfChunk[d][vs] = prev;
    return u;
  };
  // The weight gradient of a split backward: one instruction after its input gradient.
  auto emitWeight = [&](int d, int j, int vs, double prio) {
    const int g = G[stageOf(d, vs)], mb = mbId(d, j);
    double flops = vs == VS - 1 ? headFwd : 0;
    for (int l : chunk[vs])
      flops += lc[l].attnW + lc[l].expW;
    Unit u;
    u.first = u.firstCompute = u.end =
        b.compute(g, BWD, Phase::Backward, "weight_grad", mb, chunk[vs].front(), flops, 0, 0,
                  prio + 1e-3, {bwdLast[key(d, j, vs)]});
    lastBwdOfChunk[d][vs] = u.end;
    return u;
  };
  if (dual) {
    // DualPipe's cells (PipelineOrder.h) per rank, one after another: each op of a cell starts
    // once the previous cell's ops are done (their pipeline sends are buffered); the ops of an
    // F&B cell run side by side on the forward and backward streams.
    for (int s = 0; s < pp; ++s) {
      const std::vector<PipeCell> cells = dualPipeCells(pp, mPerDir, s);
      const int flip = s >= pp / 2 ? 1 : 0; // dualpipe.py: phase ^= is_in_second_half
      int fCount[2] = {0, 0}, bCount[2] = {0, 0};
      std::deque<std::pair<int, int>> deferred; // (direction, micro-batch) awaiting their W
      std::vector<int> prevEnds, waitingFor[2];
      for (size_t pos = 0; pos < cells.size(); ++pos) {
        const double prio = static_cast<double>(pos);
        std::vector<int> ends;
        std::vector<Unit> units;
        std::vector<int> waits; // phases whose next forward's input this cell also waits for
        for (const PipeOp &op : cells[pos]) {
          Unit u;
          if (op.kind == PipeOp::Wait) {
            waits.push_back(op.phase);
            continue;
          }
          if (op.kind == PipeOp::Weight) {
            auto [d, j] = deferred.front();
            deferred.pop_front();
            u = emitWeight(d, j, d == 0 ? s : pp - 1 - s, prio);
          } else {
            const int d = op.phase ^ flip, vs = d == 0 ? s : pp - 1 - s;
            if (op.kind == PipeOp::Forward) {
              u = emitForward(d, fCount[op.phase]++, vs, prio);
              if (u.first != u.firstCompute) // its receive: earlier cells that waited for it
                for (int h2 : waitingFor[op.phase])
                  b.after(h2, u.first);
              waitingFor[op.phase].clear();
            } else {
              const int j = bCount[op.phase]++;
              u = emitBackward(d, j, vs, prio, op.split);
              if (op.split)
                deferred.push_back({d, j});
            }
          }
          units.push_back(u);
          ends.push_back(u.end);
        }
        // A cell starts once the previous one is done and all its inputs have arrived
        // (dualpipe.py's _commit_and_wait_comm): the dependencies go on each op's first compute,
        // its receive being posted early (a receive that waited for compute would hold up the
        // comm stream's order).
        for (const Unit &u : units) {
          const int start = u.firstCompute >= 0 ? u.firstCompute : u.first;
          for (int p : waits)
            waitingFor[p].push_back(start);
          for (int e : prevEnds)
            b.after(start, e);
          for (const Unit &v : units)
            if (&v != &u && v.first != v.firstCompute && v.first >= 0)
              b.after(start, v.first);
        }
        prevEnds = ends;
      }
    }
  } else {
    // Per stage, Megatron's unit order; unit k -> (micro-batch, chunk).
    for (int s = 0; s < pp; ++s) {
      std::vector<std::pair<bool, int>> order = oneFOneB(pp, vpp, m, s);
      std::vector<int> fwdUnitFirst(m * vpp, -1), bwdUnitLast(m * vpp, -1);
      for (size_t pos = 0; pos < order.size(); ++pos) {
        auto [forward, k] = order[pos];
        auto [j, c2] = oneFOneBUnit(pp, vpp, k, forward);
        const int vs = c2 * pp + s;
        double prio = static_cast<double>(pos);
        if (forward) {
          emitForward(0, j, vs, prio);
          // The head of the forward unit: its first compute.
          fwdUnitFirst[k] = fwdFirst[key(0, j, vs)];
        } else {
          emitBackward(0, j, vs, prio, false);
          bwdUnitLast[k] = bwdLast[key(0, j, vs)];
        }
      }
      // 1F1B's in-flight bound for the overlapped streams, which do not serialise it: forward unit
      // warm-up + i + 1 runs beside backward unit i, so forward unit warm-up + 1 + i waits for
      // backward unit i - 1 (PipelineOrder.h, oneFOneBLiveBytes).
      if (!single) {
        const int nw = oneFOneBWarmup(pp, vpp, m, s) + 1;
        for (int i = 1; nw + i < m * vpp; ++i)
          if (fwdUnitFirst[nw + i] >= 0 && bwdUnitLast[i - 1] >= 0)
            b.after(fwdUnitFirst[nw + i], bwdUnitLast[i - 1]);
      }
    }
  }
  // Per chunk: its weights all-gathered before micro-batch 0's forward (distributed optimizer),
  // its gradients synchronised after its last backward (GradSync.h), then the optimizer per stage.
  GradSync sync(b, c.gradSync, COMM);
  std::vector<std::vector<int>> stageDeps(pp);
  for (int d = 0; d < dirs; ++d)
    for (int vs = 0; vs < VS; ++vs) {
      int s = stageOf(d, vs), g = G[s];
      double attn = 0, exp = 0;
      for (int l : chunk[vs]) {
        attn += lc[l].attnParams;
        exp += lc[l].expertParams;
      }
      if (vs == 0)
        attn += vocabRows;
      if (vs == VS - 1)
        attn += vocabRows + h;
      // Every micro-batch's first forward of the chunk waits (not only micro-batch 0's).
      for (int gather : {sync.gather(g, Peers::All, "attention", chunk[vs].front(), attn),
                         sync.gather(g, Peers::Same, "experts", chunk[vs].front(), exp)})
        for (int j = 0; j < mPerDir && gather >= 0; ++j)
          if (fwdFirst[key(d, j, vs)] >= 0)
            b.after(fwdFirst[key(d, j, vs)], gather);
      int after = lastBwdOfChunk[d][vs];
      stageDeps[s].push_back(after);
      for (int reduce : {sync.reduce(g, Peers::All, "attention", chunk[vs].front(), attn, after),
                         sync.reduce(g, Peers::Same, "experts", chunk[vs].front(), exp, after)})
        if (reduce >= 0)
          stageDeps[s].push_back(reduce);
    }
  for (int s = 0; s < pp; ++s)
    b.compute(G[s], Stream::Forward, Phase::Update, "optimizer", -1, -1, 0,
              2 * b.schedule().groups[G[s]].staticBytes, 0, 2e18, stageDeps[s]);
  if (!b.build(/*listScheduleCompute=*/dual, /*orderCommByReadiness=*/!single, out, error))
    return false;
  if (verify) {
    std::string e = verifySchedule(out);
    if (!e.empty()) {
      error = std::string(toString(c.kind)) + ": " + e;
      return false;
    }
  }
  return true;
}

} // namespace disagmoe::sim
