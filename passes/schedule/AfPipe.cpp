//===- AfPipe.cpp - the AF-Pipe schedule -------------------------------------------===//
#include "passes/schedule/AfPipe.h"

#include "runtime/cost/Roofline.h"
#include "runtime/sim/GradSync.h"
#include "runtime/sim/ScheduleBuilder.h"

#include <algorithm>
#include <cmath>

namespace disagmoe::afpipe {

using namespace sched;

sched::Hardware hardwareOf(const cost::ClusterSpec &cl) {
  Hardware hw;
  hw.name = cl.name;
  hw.peakFlops = cl.gpu.peakFlops;
  hw.hbmBandwidth = cl.gpu.hbmBandwidth;
  hw.hbmBytes = cl.gpu.hbmBytes;
  hw.nvlinkBandwidth = cl.nvlinkBandwidth > 0 ? cl.nvlinkBandwidth : cl.gpu.nvlinkBandwidth;
  hw.nicBandwidth = cl.perGpuNetworkBandwidth();
  hw.gpusPerNode = cl.gpusPerNode;
  return hw;
}

Workload workloadFromModel(const cost::ModelShape &m, const cost::ClusterSpec &cl,
                           const Config &c) {
  Workload w;
  const int64_t L = m.numLayers(), p = std::max<int64_t>(1, c.groups), E = m.numExperts();
  const double r = static_cast<double>(c.replicas), dA = static_cast<double>(c.attnRanks);
  const double seqsPerMb =
      static_cast<double>(c.sequencesPerStep) / (r * static_cast<double>(c.microbatches));
  const double seqsPerRank = seqsPerMb / dA;
  const double tokA = seqsPerRank * static_cast<double>(c.seqLen); // tokens per A-rank
  const double tokG = seqsPerMb * static_cast<double>(c.seqLen);   // tokens per group
  using cost::Recomputation;
  // Backward = 2 forwards; Full (and Redispatch, which re-runs the expert forward) adds one more;
  // Selective adds its elementwise recompute below (Roofline.h).
  const Recomputation rA = c.attnRecompute, rF = c.ffnRecompute;
  const bool fullA = rA == Recomputation::Full || rA == Recomputation::Redispatch;
  const bool fullF = rF == Recomputation::Full || rF == Recomputation::Redispatch;
  const double bwdMultA = fullA ? 3.0 : 2.0, bwdMultF = fullF ? 3.0 : 2.0;
  const double h = static_cast<double>(m.hidden), pair = 8 + cost::kBf16Bytes * h;
  const int64_t expertsBusiest = E > 0 ? (E + c.ffnRanks - 1) / c.ffnRanks : 0;
  const double share = E > 0 ? static_cast<double>(expertsBusiest) / static_cast<double>(E) : 0;
  const double eF = static_cast<double>(c.ffnRanks);
  const cost::MemoryOptions &mo = c.memory;
  auto staticOf = [&](double params, double dp) {
    return params * (mo.weightBytes + mo.gradientBytes +
                     mo.optimizerBytes / (mo.zero1 && dp > 1 ? dp : 1.0));
  };
  const double dpA = r * dA, dpF = r;
  for (int64_t l = 0; l < L; ++l) {
    LayerWork lw;
    const cost::LayerShape &ls = m.layers[l];
    lw.moe = ls.isMoe();
    cost::AttentionFlops af = cost::attentionSideForwardFlops(m, l, seqsPerRank, c.seqLen);
    // An FFN-side dense FFN / shared experts leave the A-ranks: FLOPs, parameters (3 h I) and
    // the SwiGLU activations (Memory.h: 8I per token at None, nothing more at Full) go to the
    // F-ranks, where the busiest runs ceil(sequences / D_F) home sequences.
    const double I = static_cast<double>(ls.sharedHidden + ls.denseHidden);
    lw.alwaysOnFfn = I > 0 && (lw.moe ? c.sharedOnFfn : c.denseOnFfn);
    const double alwaysOnParams = lw.alwaysOnFfn ? 3.0 * h * I : 0.0;
    double fa = af.total() - (lw.alwaysOnFfn ? af.sharedAndDense : 0.0);
    lw.attnFwdFlops = fa;
    lw.attnBwdFlops =
        bwdMultA * fa +
        (rA == Recomputation::Selective ? cost::selectiveRecomputeFlopsAttention(m, l, tokA) : 0.0);
    // Memory.h's attention-side bytes include the shared/dense SwiGLU (8I at None, 4I at
    // Selective): taken out when those run on the F-ranks.
    const double alwaysOnKept = rA == Recomputation::None        ? 8.0 * I
                                : rA == Recomputation::Selective ? 4.0 * I
                                                                 : 0.0;
    lw.attnActivationBytes = (cost::attentionActivationBytesPerToken(m, l, rA, rF) -
                              (lw.alwaysOnFfn ? alwaysOnKept : 0.0)) *
                             tokA;
    lw.attnGradParams = m.attentionSideParams(l) - alwaysOnParams;
    lw.attnStaticBytes = staticOf(m.attentionSideParams(l) - alwaysOnParams, dpA);
    const double homeSeqs = std::ceil(seqsPerMb / eF),
                 homeTok = homeSeqs * static_cast<double>(c.seqLen);
    if (lw.alwaysOnFfn) {
      lw.alwaysOnFwdFlops =
          cost::attentionSideForwardFlops(m, l, homeSeqs, c.seqLen).sharedAndDense;
      lw.alwaysOnBwdFlops = bwdMultF * lw.alwaysOnFwdFlops;
      lw.alwaysOnActivationBytes = (fullF                            ? 2.0 * h
                                    : rF == Recomputation::Selective ? 2.0 * h + 4.0 * I
                                                                     : 8.0 * I) *
                                   homeTok;
      lw.alwaysOnGradParams = alwaysOnParams;
      lw.ffnStaticBytes =
          staticOf(alwaysOnParams, dpF * eF); // replicated on every F-rank of the group
    }
    if (!lw.moe && lw.alwaysOnFfn) {
      // A dense layer's own M2N/N2M: each token to its home F-rank only (d = 1, no routing).
      lw.m2nBytes = tokA * (pair + 8) / eF;
      lw.n2mBytes = tokA * pair / eF;
      lw.n2mBwdBytes = tokA * pair / eF;
      lw.m2nBwdBytes = tokA * pair / eF;
    }
    if (lw.moe) {
      double ff = cost::routedExpertForwardFlops(m, l, tokG) * share;
      const double pairs =
          tokG * static_cast<double>(ls.topK) * share; // (token, expert) pairs, busiest F-rank
      lw.ffnFwdFlops = ff;
      lw.ffnBwdFlops =
          bwdMultF * ff +
          (rF == Recomputation::Selective ? cost::selectiveRecomputeFlopsExpert(m, l, pairs) : 0.0);
      double d = cost::expectedDistinctRanks(ls.experts, ls.topK, c.ffnRanks);
      // Tokens the busiest F-rank receives: each reaches a given rank with probability d / D_F.
      lw.ffnActivationBytes = cost::expertActivationBytes(m, l, rF, tokG * d / eF, pairs);
      // FFN-side shared experts: the home F-rank also gets the token when none of its experts
      // live there, with probability 1 - d / D_F under uniform routing.
      if (lw.alwaysOnFfn)
        d += 1.0 - d / eF;
      double k = static_cast<double>(ls.topK);
      lw.m2nBytes = tokA * (d * (pair + 8) + 12 * k) / eF;
      lw.n2mBytes = tokA * d * pair / eF;
      lw.n2mBwdBytes = tokA * d * pair / eF;
      lw.m2nBwdBytes = tokA * (d * pair + 4 * k) / eF;
      // Redispatch: the F-rank kept nothing, so the A-rank sends the layer's M2N again before the
      // expert backward, in the same A->F direction (Memory.h, Recomputation::Redispatch).
      if (rF == Recomputation::Redispatch)
        lw.m2nBwdBytes += lw.m2nBytes;
      double expertParams = static_cast<double>(expertsBusiest) * m.expertParams(l);
      lw.ffnGradParams = expertParams;
      lw.ffnStaticBytes += staticOf(expertParams, dpF);
    }
    lw.residualBytes = tokA * pair;
    w.layers.push_back(lw);
  }
  double fh = cost::headForwardFlops(m, tokA);
  w.headFwdFlops = fh;
  w.headBwdFlops = 2 * fh;                                           // the head is not recomputed
  w.headActivationBytes = 2.0 * tokA * static_cast<double>(m.vocab); // bf16 logits
  double vocabRows = static_cast<double>(m.vocab) * h;
  w.headGradParams = vocabRows + h;
  w.headStaticBytes = staticOf(vocabRows + h, dpA);
  w.embedGradParams = vocabRows;
  w.embedStaticBytes = staticOf(vocabRows, dpA);
  // FFN-side embedding / head: replicated on every F-rank of their group; x_0 / x_L cross once.
  w.embeddingOnFfn = c.embeddingOnFfn;
  w.headOnFfn = c.headOnFfn;
  if (c.embeddingOnFfn) {
    w.embedStaticBytes = staticOf(vocabRows, dpF * eF);
    w.embeddingBytes = tokA * pair / eF;
  }
  if (c.headOnFfn) {
    const double homeTok = std::ceil(seqsPerMb / eF) * static_cast<double>(c.seqLen);
    w.headFwdFlops = cost::headForwardFlops(m, homeTok);
    w.headBwdFlops = 2 * w.headFwdFlops;
    w.headActivationBytes = 2.0 * homeTok * static_cast<double>(m.vocab);
    w.headStaticBytes = staticOf(vocabRows + h, dpF * eF);
    w.headBytes = tokA * pair / eF;
  }
  // Model FLOPs of a step (3 x forward, no recomputation), as the planner counts them.
  const double B = static_cast<double>(c.sequencesPerStep), T = B * static_cast<double>(c.seqLen);
  double flops = 3.0 * cost::headForwardFlops(m, T);
  for (int64_t l = 0; l < L; ++l) {
    flops += 3.0 * cost::attentionSideForwardFlops(m, l, B, c.seqLen).total();
    if (m.layers[l].isMoe())
      flops += 3.0 * cost::routedExpertForwardFlops(m, l, T);
  }
  w.modelFlops = flops;
  (void)p;
  (void)cl;
  return w;
}

const char *toString(Config::Layout l) {
  return l == Config::Layout::Packed ? "packed" : "separate";
}

bool parseLayout(const std::string &name, Config::Layout &out) {
  for (Config::Layout l : {Config::Layout::Separate, Config::Layout::Packed})
    if (name == toString(l)) {
      out = l;
      return true;
    }
  return false;
}

namespace {
bool buildWithWindow(const Workload &w, const Hardware &hw, const Config &c, int W, Schedule &out,
                     std::string &error) {
  const int L = static_cast<int>(w.layers.size());
  const int p = static_cast<int>(c.groups), m = static_cast<int>(c.microbatches);
  const int R = static_cast<int>(c.replicas), dA = static_cast<int>(c.attnRanks),
            eF = static_cast<int>(c.ffnRanks);
  if (L < 1 || p < 1 || p > L || R < 1 || dA < 1 || eF < 1) {
    error = "afpipe: need 1 <= groups <= layers and at least one replica, A-rank and F-rank";
    return false;
  }
  if (m < 2 * p) {
    error = "afpipe: " + std::to_string(m) +
            " micro-batches cannot fill the ring of 2p = " + std::to_string(2 * p) +
            " stages (need at least 2p)";
    return false;
  }
  Schedule base;
  base.kind = "afpipe";
  base.replicas = R;
  base.microBatches = m;
  base.virtualStages = (L + p - 1) / p;
  base.pipelineStages = 2 * p;
  base.hw = hw;
  base.capacityBytes = hw.hbmBytes > c.reserveBytes ? hw.hbmBytes - c.reserveBytes : 0;
  base.modelFlops = w.modelFlops;
  base.computeEfficiency = c.computeEfficiency;
  base.sharing = c.sharing;
  sim::ScheduleBuilder b(base);
  // At most per micro-batch: 17 instructions per layer (forward 8, backward 9), 6 around the head
  // and 4 for an FFN-side embedding; per layer 3 gathers and 3 reductions; 2 more of each for the
  // embedding and the head, and one optimizer per group.
  b.reserve(static_cast<size_t>(m) * (17 * static_cast<size_t>(L) + 10) + 6 * L + 4 + 2 * p);
  const int headGroup = L % p;
  const int M = R * p * dA;
  // Per-rank NIC bandwidth of each side: its NICs shared by its GPUs (0: the cluster's share).
  auto share = [&](int64_t nics, int gpus) {
    if (nics <= 0 || c.nicBandwidth <= 0)
      return 0.0;
    double bw = static_cast<double>(nics) / gpus * c.nicBandwidth;
    return c.pcieBandwidth > 0 ? std::min(bw, c.pcieBandwidth) : bw;
  };
  double bwA = share(c.attnNics, M), bwF = share(c.ffnNics, R * p * eF);
  const bool packed = c.layout == Config::Layout::Packed;
  // Packed: A- and F-workers share nodes, so each GPU has its own NIC share (every NIC used).
  if (packed)
    bwA = bwF = 0;
  const int replicaSpan = p * (dA + eF); // Packed: the ranks of one replica
  auto attnRank = [&](int r, int g, int i) {
    return packed ? r * replicaSpan + g * dA + i : (r * p + g) * dA + i;
  };
  auto ffnRank = [&](int r, int g, int i) {
    return packed ? r * replicaSpan + p * dA + g * eF + i : M + (r * p + g) * eF + i;
  };
  std::vector<int> A(p), F(p);
  for (int g = 0; g < p; ++g) {
    std::vector<std::vector<int>> ra(R);
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < dA; ++i)
        ra[r].push_back(attnRank(r, g, i));
    double sa = 0;
    for (int l = g; l < L; l += p)
      sa += w.layers[l].attnStaticBytes;
    if (g == 0 && !w.embeddingOnFfn)
      sa += w.embedStaticBytes;
    if (g == headGroup && !w.headOnFfn)
      sa += w.headStaticBytes;
    A[g] = b.addGroup("attention", g, ra, sa, bwA);
    if (g == headGroup && !w.headOnFfn) // the logits live from the head's forward to its backward
      b.schedule().groups[A[g]].headLogitsBytes = w.headActivationBytes;
  }
  for (int g = 0; g < p; ++g) {
    std::vector<std::vector<int>> rf(R);
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < eF; ++i)
        rf[r].push_back(ffnRank(r, g, i));
    double sf = 0;
    for (int l = g; l < L; l += p)
      sf += w.layers[l].ffnStaticBytes;
    if (g == 0 && w.embeddingOnFfn)
      sf += w.embedStaticBytes;
    if (g == headGroup && w.headOnFfn)
      sf += w.headStaticBytes;
    F[g] = b.addGroup("ffn", g, rf, sf, bwF);
    if (g == headGroup && w.headOnFfn)
      b.schedule().groups[F[g]].headLogitsBytes = w.headActivationBytes;
  }
  // Weights all-gathered ahead of their first forward (distributed optimizer; GradSync.h).
  sim::GradSync sync(b, c.gradSync);
  std::vector<int> attnGather(L, -1), ffnGather(L, -1), denseGather(L, -1);
  for (int l = 0; l < L; ++l) {
    const LayerWork &lw = w.layers[l];
    attnGather[l] = sync.gather(A[l % p], Peers::All, "attention", l, lw.attnGradParams);
    if (lw.moe)
      ffnGather[l] = sync.gather(F[l % p], Peers::Same, "experts", l, lw.ffnGradParams);
    if (lw.alwaysOnFfn)
      denseGather[l] = sync.gather(F[l % p], Peers::All, "dense_ffn", l, lw.alwaysOnGradParams);
  }
  const int embedGather =
      sync.gather(w.embeddingOnFfn ? F[0] : A[0], Peers::All, "embedding", -1, w.embedGradParams);
  const int headGather = sync.gather(w.headOnFfn ? F[headGroup] : A[headGroup], Peers::All, "head",
                                     L, w.headGradParams);
  // Every micro-batch's forward waits for the weights it reads (not only the first: a later one
  // that is ready earlier would otherwise run on stale weights).
  auto withGather = [](std::vector<int> deps, int gather, int /*j*/) {
    if (gather >= 0)
      deps.push_back(gather);
    return deps;
  };
  // Priorities: the tick at which an uncontended ring would run the instruction (micro-batch j
  // enters at tick j, each stage takes a tick forward; backward from the loss in reverse).
  auto fwdPrio = [&](int j, int layer) { return static_cast<double>(j + 2 * layer); };
  auto bwdPrio = [&](int j, int layer) { return static_cast<double>(j + 2 * (L - layer)); };
  const Stream FWD = Stream::Forward, BWD = Stream::Backward, COMM = Stream::Comm;
  const Phase PF = Phase::Forward, PB = Phase::Backward;
  // Handles per micro-batch: the first forward and last backward compute of each group (window).
  std::vector<std::vector<int>> firstFwd(2 * p, std::vector<int>(m, -1)),
      lastBwd(2 * p, std::vector<int>(m, -1));
  std::vector<int> lastAttnBwd(L, -1), lastFfnBwd(L, -1);
  int lastHeadBwd = -1, lastEmbedBwd = -1;
  for (int j = 0; j < m; ++j) {
    // ---- forward ----
    std::vector<int> attnFwd(L), ffnFwd(L, -1), denseFwd(L, -1);
    int prevResRecv = -1, prevN2mRecv = -1;
    if (w.embeddingOnFfn) {
      // FFN-side embedding: each home F-rank of FFN group 0 sends x_0 of its sequences to A-group
      // 0.
      b.send(F[0], A[0], Peers::All, "embedding", PF, j, -1, w.embeddingBytes, COMM, fwdPrio(j, 0),
             withGather({}, embedGather, j));
      prevResRecv = b.recv(A[0], F[0], Peers::All, "embedding", PF, j, -1, w.embeddingBytes, COMM,
                           fwdPrio(j, 0));
    }
    for (int l = 0; l < L; ++l) {
      const LayerWork &lw = w.layers[l];
      int ga = A[l % p], gf = F[l % p];
      int gn = l + 1 < L ? A[(l + 1) % p] : A[headGroup];
      std::vector<int> deps;
      if (prevResRecv >= 0)
        deps.push_back(prevResRecv);
      if (prevN2mRecv >= 0)
        deps.push_back(prevN2mRecv);
      deps = withGather(deps, attnGather[l], j);
      if (l == 0 && !w.embeddingOnFfn)
        deps = withGather(deps, embedGather, j);
      attnFwd[l] = b.compute(ga, FWD, PF, "attention", j, l, lw.attnFwdFlops, 0,
                             lw.attnActivationBytes, fwdPrio(j, l), deps);
      if (firstFwd[l % p][j] < 0)
        firstFwd[l % p][j] = attnFwd[l];
      b.send(ga, gn, Peers::Same, "residual", PF, j, l, lw.residualBytes, COMM, fwdPrio(j, l),
             {attnFwd[l]});
      prevResRecv =
          b.recv(gn, ga, Peers::Same, "residual", PF, j, l, lw.residualBytes, COMM, fwdPrio(j, l));
      prevN2mRecv = -1;
      if (lw.moe || lw.alwaysOnFfn) {
        b.send(ga, gf, Peers::All, "m2n", PF, j, l, lw.m2nBytes, COMM, fwdPrio(j, l), {attnFwd[l]});
        int rcv = b.recv(gf, ga, Peers::All, "m2n", PF, j, l, lw.m2nBytes, COMM, fwdPrio(j, l));
        // An FFN-side dense FFN / shared experts start the N2M vector before the routed experts.
        if (lw.alwaysOnFfn)
          rcv = denseFwd[l] = b.compute(gf, FWD, PF, "dense_ffn", j, l, lw.alwaysOnFwdFlops, 0,
                                        lw.alwaysOnActivationBytes, fwdPrio(j, l),
                                        withGather({rcv}, denseGather[l], j));
        ffnFwd[l] = lw.moe ? b.compute(gf, FWD, PF, "experts", j, l, lw.ffnFwdFlops, 0,
                                       lw.ffnActivationBytes, fwdPrio(j, l),
                                       withGather({rcv}, ffnGather[l], j))
                           : denseFwd[l];
        if (firstFwd[p + l % p][j] < 0)
          firstFwd[p + l % p][j] = lw.alwaysOnFfn ? denseFwd[l] : ffnFwd[l];
        b.send(gf, gn, Peers::All, "n2m", PF, j, l, lw.n2mBytes, COMM, fwdPrio(j, l), {ffnFwd[l]});
        prevN2mRecv = b.recv(gn, gf, Peers::All, "n2m", PF, j, l, lw.n2mBytes, COMM, fwdPrio(j, l));
      }
    }
    // ---- head: loss and its backward ----
    int gh = A[headGroup];
    std::vector<int> deps{prevResRecv};
    if (prevN2mRecv >= 0)
      deps.push_back(prevN2mRecv);
    if (w.headOnFfn) {
      // FFN-side head: x_L from A-group L mod p to the home F-ranks of FFN group L mod p.
      b.send(gh, F[headGroup], Peers::All, "head", PF, j, L, w.headBytes, COMM, fwdPrio(j, L),
             deps);
      deps = {
          b.recv(F[headGroup], gh, Peers::All, "head", PF, j, L, w.headBytes, COMM, fwdPrio(j, L))};
    }
    const int headRunner = w.headOnFfn ? F[headGroup] : gh;
    int hf = b.compute(headRunner, FWD, PF, "head", j, L, w.headFwdFlops, 0, 0, fwdPrio(j, L),
                       withGather(deps, headGather, j));
    int hb =
        b.compute(headRunner, BWD, PB, "head", j, L, w.headBwdFlops, 0, 0, bwdPrio(j, L), {hf});
    lastHeadBwd = hb;
    int gradSource = hb; // the instruction producing dL/dx_{l+1} on group N
    if (w.headOnFfn) {   // dL/dx_L back to the attention group
      b.send(F[headGroup], gh, Peers::All, "head", PB, j, L, w.headBytes, COMM, bwdPrio(j, L),
             {hb});
      gradSource =
          b.recv(gh, F[headGroup], Peers::All, "head", PB, j, L, w.headBytes, COMM, bwdPrio(j, L));
    }
    // ---- backward ----
    for (int l = L - 1; l >= 0; --l) {
      const LayerWork &lw = w.layers[l];
      int ga = A[l % p], gf = F[l % p];
      int gn = l + 1 < L ? A[(l + 1) % p] : A[headGroup];
      b.send(gn, ga, Peers::Same, "residual", PB, j, l, lw.residualBytes, COMM, bwdPrio(j, l),
             {gradSource});
      std::vector<int> deps{
          b.recv(ga, gn, Peers::Same, "residual", PB, j, l, lw.residualBytes, COMM, bwdPrio(j, l))};
      if (lw.moe || lw.alwaysOnFfn) {
        b.send(gn, gf, Peers::All, "n2m", PB, j, l, lw.n2mBwdBytes, COMM, bwdPrio(j, l),
               {gradSource});
        int rcv = b.recv(gf, gn, Peers::All, "n2m", PB, j, l, lw.n2mBwdBytes, COMM, bwdPrio(j, l));
        int fb = lw.moe ? b.compute(gf, BWD, PB, "experts", j, l, lw.ffnBwdFlops, 0, 0,
                                    bwdPrio(j, l), {rcv, ffnFwd[l]})
                        : rcv;
        if (lw.alwaysOnFfn) // reverse of the forward: the dense FFN / shared experts last
          fb = b.compute(gf, BWD, PB, "dense_ffn", j, l, lw.alwaysOnBwdFlops, 0, 0, bwdPrio(j, l),
                         {fb, denseFwd[l]});
        lastBwd[p + l % p][j] = fb; // the lowest layer comes last
        lastFfnBwd[l] = fb;
        b.send(gf, ga, Peers::All, "m2n", PB, j, l, lw.m2nBwdBytes, COMM, bwdPrio(j, l), {fb});
        deps.push_back(
            b.recv(ga, gf, Peers::All, "m2n", PB, j, l, lw.m2nBwdBytes, COMM, bwdPrio(j, l)));
      }
      deps.push_back(attnFwd[l]);
      int ab =
          b.compute(ga, BWD, PB, "attention", j, l, lw.attnBwdFlops, 0, 0, bwdPrio(j, l), deps);
      lastBwd[l % p][j] = ab;
      lastAttnBwd[l] = ab;
      if (l == 0)
        lastEmbedBwd = ab;
      gradSource = ab;
    }
    if (w.embeddingOnFfn) { // dL/dx_0 back to the embedding's home F-ranks
      b.send(A[0], F[0], Peers::All, "embedding", PB, j, -1, w.embeddingBytes, COMM, bwdPrio(j, 0),
             {lastEmbedBwd});
      lastEmbedBwd = b.recv(F[0], A[0], Peers::All, "embedding", PB, j, -1, w.embeddingBytes, COMM,
                            bwdPrio(j, 0));
    }
  }
  // Window: a group starts micro-batch j after micro-batch j - W finished its backward there.
  for (int g = 0; g < 2 * p; ++g)
    for (int j = W; j < m; ++j)
      if (firstFwd[g][j] >= 0 && lastBwd[g][j - W] >= 0)
        b.after(firstFwd[g][j], lastBwd[g][j - W]);
  // ---- update: gradients synchronised while the tail runs (GradSync.h), then the optimizer ----
  std::vector<std::vector<int>> groupReduces(2 * p);
  auto keep = [](std::vector<int> &v, int h) {
    if (h >= 0)
      v.push_back(h);
  };
  for (int l = L - 1; l >= 0; --l) {
    const LayerWork &lw = w.layers[l];
    keep(groupReduces[l % p],
         sync.reduce(A[l % p], Peers::All, "attention", l, lw.attnGradParams, lastAttnBwd[l]));
    if (lw.moe)
      keep(groupReduces[p + l % p],
           sync.reduce(F[l % p], Peers::Same, "experts", l, lw.ffnGradParams, lastFfnBwd[l]));
    if (lw.alwaysOnFfn) // replicated on every F-rank of the group
      keep(groupReduces[p + l % p],
           sync.reduce(F[l % p], Peers::All, "dense_ffn", l, lw.alwaysOnGradParams, lastFfnBwd[l]));
  }
  const int headSlot = w.headOnFfn ? p + headGroup : headGroup,
            embedSlot = w.embeddingOnFfn ? p : 0;
  keep(groupReduces[headSlot], sync.reduce(w.headOnFfn ? F[headGroup] : A[headGroup], Peers::All,
                                           "head", L, w.headGradParams, lastHeadBwd));
  keep(groupReduces[embedSlot], sync.reduce(w.embeddingOnFfn ? F[0] : A[0], Peers::All, "embedding",
                                            -1, w.embedGradParams, lastEmbedBwd));
  for (int g = 0; g < 2 * p; ++g) {
    int gid = g < p ? A[g] : F[g - p];
    std::vector<int> deps = groupReduces[g];
    for (int j = 0; j < m; ++j)
      if (lastBwd[g][j] >= 0)
        deps.push_back(lastBwd[g][j]);
    if (g == headSlot)
      deps.push_back(lastHeadBwd);
    // Adam reads and writes every byte of weights, gradients and optimizer state once.
    b.compute(gid, FWD, Phase::Update, "optimizer", -1, -1, 0,
              2 * b.schedule().groups[gid].staticBytes, 0, 1e18, deps);
  }
  return b.build(/*listScheduleCompute=*/true, /*orderCommByReadiness=*/true, out, error);
}
} // namespace

bool buildAfPipe(const Workload &w, const Hardware &hw, const Config &c, Schedule &out,
                 std::string &error, bool verify) {
  const int L = static_cast<int>(w.layers.size()), p = static_cast<int>(c.groups);
  if (L < 1 || p < 1 || p > L || c.replicas < 1 || c.attnRanks < 1 || c.ffnRanks < 1) {
    error = "afpipe: need 1 <= groups <= layers and at least one replica, A-rank and F-rank";
    return false;
  }
  if (c.microbatches < 2 * p) {
    error = "afpipe: " + std::to_string(c.microbatches) +
            " micro-batches cannot fill the ring of 2p = " + std::to_string(2 * p) +
            " stages (need at least 2p)";
    return false;
  }
  if (c.gradSync.distributedOptimizer != c.memory.zero1) {
    error = "afpipe: the distributed optimizer (gradient reduce-scatter + weight all-gather) and "
            "the sharded optimizer state (zero1) must be chosen together";
    return false;
  }
  if (c.inflight < 0) {
    error = "afpipe: inflight must be >= 1 (0: chosen by memory)";
    return false;
  }
  // The window: given, or the largest of 8p, 6p, 4p, 3p, 2p micro-batches whose activations fit
  // memory (the ring needs 2p; more hides the backward's longer trip, docs/results.md).
  std::vector<int> windows;
  if (c.inflight > 0)
    windows.push_back(static_cast<int>(c.inflight));
  else
    windows = {8 * p, 6 * p, 4 * p, 3 * p, 2 * p};
  // Windows whose closed-form bound already exceeds memory are not built: a group holds its
  // weights, gradients and optimizer state, the head's logits and at most min(W, m) micro-batches'
  // activations (sched::peakMemory counts what the built schedule keeps live, never more).
  if (windows.size() > 1 && hw.hbmBytes > c.reserveBytes) {
    const double capacity = hw.hbmBytes - c.reserveBytes;
    auto bound = [&](int W) {
      double worst = 0;
      for (int g = 0; g < p; ++g) {
        double sa = 0, sf = 0, aa = 0, af = 0;
        for (int l = g; l < L; l += p) {
          const LayerWork &lw = w.layers[l];
          sa += lw.attnStaticBytes;
          sf += lw.ffnStaticBytes;
          aa += lw.attnActivationBytes;
          af += lw.ffnActivationBytes + lw.alwaysOnActivationBytes;
        }
        if (g == 0)
          (w.embeddingOnFfn ? sf : sa) += w.embedStaticBytes;
        if (g == L % p)
          (w.headOnFfn ? sf : sa) += w.headStaticBytes + w.headActivationBytes;
        const double n = std::min<double>(W, static_cast<double>(c.microbatches));
        worst = std::max({worst, sa + n * aa, sf + n * af});
      }
      return worst;
    };
    while (windows.size() > 1 && bound(windows.front()) > capacity)
      windows.erase(windows.begin());
  }
  for (size_t k = 0; k < windows.size(); ++k) {
    if (!buildWithWindow(w, hw, c, windows[k], out, error))
      return false;
    bool fits = true;
    for (size_t g = 0; g < out.groups.size() && out.capacityBytes > 0; ++g)
      fits &= peakMemory(out, static_cast<int>(g)) <= out.capacityBytes;
    if (fits || k + 1 == windows.size())
      break;
  }
  if (verify) {
    std::string e = verifySchedule(out);
    if (!e.empty()) {
      error = "afpipe: " + e;
      return false;
    }
  }
  return true;
}

} // namespace disagmoe::afpipe
