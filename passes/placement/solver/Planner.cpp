//===- Planner.cpp - candidates, roofline evaluation, exhaustive search, local search ----===//
#include "passes/placement/solver/Planner.h"
#include "passes/placement/solver/PlannerInternal.h"

#include "runtime/cost/Roofline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

namespace disagmoe::placement {
using namespace detail;

namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0)
      d.push_back(i);
  return d;
}

std::vector<int64_t> groupLayers(int64_t layers, int64_t p, int64_t g) {
  std::vector<int64_t> out;
  for (int64_t l = g; l < layers; l += p)
    out.push_back(l);
  return out;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string gb(double bytes) {
  std::ostringstream os;
  os.precision(1);
  os << std::fixed << bytes / 1e9 << " GB";
  return os.str();
}
} // namespace

std::vector<cost::Recomputation> detail::recomputeChoices(const PlannerOptions &o, bool ffnSide) {
  using cost::Recomputation;
  switch (o.recompute) {
  case Recompute::Never:
    return {Recomputation::None};
  case Recompute::Always:
    return {Recomputation::Full};
  case Recompute::Selective:
    return {Recomputation::Selective};
  default:
    if (ffnSide)
      return {Recomputation::None, Recomputation::Selective, Recomputation::Full,
              Recomputation::Redispatch};
    return {Recomputation::None, Recomputation::Selective, Recomputation::Full};
  }
}

double detail::usableBytes(const Problem &problem) {
  return problem.cluster.gpu.hbmBytes - problem.options.reserveBytes;
}

llvm::Expected<std::vector<Candidate>> enumerateCandidates(const Problem &problem) noexcept {
  std::vector<Candidate> out;
  const cost::ModelShape &m = problem.model;
  const PlannerOptions &o = problem.options;
  std::string invalid = m.validate();
  if (!invalid.empty())
    return fail("model: " + invalid);
  const int64_t W = problem.cluster.gpus(), L = m.numLayers(), E = m.numExperts();
  if (W < 2 || problem.cluster.nics() < 2)
    return fail("cluster: needs at least 2 GPUs and 2 NICs (one attention and one FFN side), has " +
                std::to_string(W) + " GPUs and " + std::to_string(problem.cluster.nics()) +
                " NICs");
  if (o.seqLen < 1 || o.globalTokens < 1)
    return fail("--seq-len and --global-tokens must be at least 1");
  if (o.globalTokens % o.seqLen)
    return fail("--global-tokens " + std::to_string(o.globalTokens) +
                " is not a multiple of --seq-len " + std::to_string(o.seqLen) +
                " (a step holds whole sequences)");
  const int64_t B = o.globalTokens / o.seqLen;
  auto name = [](const char *flag, int64_t v) {
    return std::string(flag) + " " + std::to_string(v);
  };
  // Contradictory fixed options, named.
  if (o.fixedAttnGpus && o.fixedFfnGpus && o.fixedAttnGpus + o.fixedFfnGpus > W)
    return fail(name("--attn-gpus", o.fixedAttnGpus) + " and " +
                name("--ffn-gpus", o.fixedFfnGpus) + " exceed the cluster's " + std::to_string(W) +
                " GPUs");
  if (o.fixedGroups > L)
    return fail(name("--groups", o.fixedGroups) + " exceeds the model's " + std::to_string(L) +
                " layers");
  for (auto [flag, v] : {std::pair<const char *, int64_t>{"--attn-gpus", o.fixedAttnGpus},
                         {"--ffn-gpus", o.fixedFfnGpus}})
    if (v && o.fixedGroups && v % o.fixedGroups)
      return fail(name(flag, v) + " is not a multiple of " + name("--groups", o.fixedGroups) +
                  " (every group of a side has the same size)");
  if (o.fixedMicrobatches && o.fixedGroups && o.fixedMicrobatches < 2 * o.fixedGroups)
    return fail(name("--micro-batches", o.fixedMicrobatches) + " is below 2 x " +
                name("--groups", o.fixedGroups) +
                " (the ring of 2p stages needs 2p micro-batches)");
  if (o.fixedMicrobatches && B % o.fixedMicrobatches)
    return fail(name("--micro-batches", o.fixedMicrobatches) + " does not divide the " +
                std::to_string(B) + " sequences of a step (--global-tokens / --seq-len)");
  // Context-parallel degrees: powers of two up to 8 that divide a node's GPUs (the ring stays on
  // NVLink) and split a sequence into 2*cp load-balanced chunks.
  const int64_t node = problem.cluster.gpusPerNode;
  if (o.fixedCp && (o.fixedCp != 1 && o.fixedCp != 2 && o.fixedCp != 4 && o.fixedCp != 8))
    return fail(name("--cp", o.fixedCp) + " is not one of 1, 2, 4, 8");
  if (o.fixedCp && node % o.fixedCp)
    return fail(name("--cp", o.fixedCp) + " does not divide the cluster's " + std::to_string(node) +
                " GPUs per node (a CP group stays within a node)");
  if (o.fixedCp > 1 && o.seqLen % (2 * o.fixedCp))
    return fail(name("--cp", o.fixedCp) + " needs --seq-len " + std::to_string(o.seqLen) +
                " to be a multiple of 2 x cp (load-balanced causal chunks)");
  std::vector<int64_t> cps;
  for (int64_t cp : {1, 2, 4, 8})
    if (node % cp == 0 && (cp == 1 || o.seqLen % (2 * cp) == 0) && (!o.fixedCp || cp == o.fixedCp))
      cps.push_back(cp);
  for (int64_t r : divisors(B)) {
    if (2 * r > W)
      break;
    if (o.fixedReplicas && r != o.fixedReplicas)
      continue;
    for (int64_t p = 1; p <= L && 2 * r * p <= W; ++p) {
      if (o.fixedGroups && p != o.fixedGroups)
        continue;
      for (int64_t eF = 1; eF <= E && r * p * (1 + eF) <= W; ++eF) {
        for (int64_t dA = 1; r * p * (dA + eF) <= W; ++dA) {
          for (int64_t cp : cps) {
            if (dA % cp || B % (r * dA / cp))
              continue;
            Candidate c{r, p, dA, eF, 1, cp};
            if (o.fixedAttnGpus && c.attnGpus() != o.fixedAttnGpus)
              continue;
            if (o.fixedFfnGpus && c.ffnGpus() != o.fixedFfnGpus)
              continue;
            const int64_t most = B / (r * dA / cp); // one sequence per CP group per micro-batch
            for (int64_t mb : divisors(most)) {
              if (mb < 2 * p || (o.fixedMicrobatches && mb != o.fixedMicrobatches))
                continue;
              if (!o.fixedMicrobatches && !o.allMicrobatchCounts && mb != most)
                continue;
              c.microbatches = mb;
              out.push_back(c);
            }
          }
        }
      }
    }
  }
  if (out.empty()) {
    std::string fixed;
    if (o.fixedGroups)
      fixed += " " + name("--groups", o.fixedGroups);
    if (o.fixedAttnGpus)
      fixed += " " + name("--attn-gpus", o.fixedAttnGpus);
    if (o.fixedFfnGpus)
      fixed += " " + name("--ffn-gpus", o.fixedFfnGpus);
    if (o.fixedMicrobatches)
      fixed += " " + name("--micro-batches", o.fixedMicrobatches);
    if (o.fixedReplicas)
      fixed += " " + name("--replicas", o.fixedReplicas);
    if (o.fixedCp)
      fixed += " " + name("--cp", o.fixedCp);
    return fail(
        "no configuration satisfies the integer constraints (" + std::to_string(B) +
        " sequences per step split evenly over replicas x A-ranks / cp x micro-batches, at least "
        "2p micro-batches, at most " +
        std::to_string(E) + " F-ranks per group, at most " + std::to_string(W) + " GPUs)" +
        (fixed.empty() ? "" : " with" + fixed));
  }
  return out;
}

std::pair<int64_t, int64_t> nicCaps(const Problem &problem, const Candidate &c) {
  const cost::ClusterSpec &cl = problem.cluster;
  int64_t g = cl.gpusPerNode, n = cl.nicsPerNode, N = cl.nics();
  int64_t M = c.attnGpus(), F = c.ffnGpus();
  int64_t attnNodes = ceilDiv(M, g);
  int64_t ffnNodes = ceilDiv(M + F, g) - M / g;
  return {std::min(N - 1, n * attnNodes), std::min(N - 1, n * ffnNodes)};
}

double CandidateCosts::attnBandwidth(int64_t nics) const {
  return std::min(static_cast<double>(nics) / groupsTotal * nicBandwidth, attnPcieCap);
}
double CandidateCosts::ffnBandwidth(int64_t nics) const {
  return std::min(static_cast<double>(nics) / groupsTotal * nicBandwidth, ffnPcieCap);
}

namespace {
using Groups = std::vector<std::vector<CandidateCosts::Term>>;

double busy(const Groups &groups, const std::vector<double> *extra, double bw) {
  double worst = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    double sum = extra ? (*extra)[g] : 0.0;
    for (const CandidateCosts::Term &t : groups[g])
      sum += t.count * std::max(t.compute, t.bytes / bw);
    worst = std::max(worst, sum);
  }
  return worst;
}

/// Merges a group's equal layers into counted terms and drops groups equal to an earlier one
/// (the busy time is a max over groups of sums, so neither changes it beyond rounding order;
/// every solver evaluates the compressed form, so they agree exactly).
void compress(Groups &groups, std::vector<double> *extra) {
  Groups outGroups;
  std::vector<double> outExtra;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<CandidateCosts::Term> terms = groups[g];
    std::sort(terms.begin(), terms.end(), [](const auto &a, const auto &b) {
      return a.compute != b.compute ? a.compute < b.compute : a.bytes < b.bytes;
    });
    std::vector<CandidateCosts::Term> merged;
    for (const auto &t : terms) {
      if (!merged.empty() && merged.back().compute == t.compute && merged.back().bytes == t.bytes)
        merged.back().count += t.count;
      else
        merged.push_back(t);
    }
    double e = extra ? (*extra)[g] : 0.0;
    bool seen = false;
    for (size_t h = 0; h < outGroups.size() && !seen; ++h) {
      const auto &o = outGroups[h];
      seen = (!extra || outExtra[h] == e) && o.size() == merged.size() &&
             std::equal(o.begin(), o.end(), merged.begin(), [](const auto &a, const auto &b) {
               return a.compute == b.compute && a.bytes == b.bytes && a.count == b.count;
             });
    }
    if (!seen) {
      outGroups.push_back(std::move(merged));
      outExtra.push_back(e);
    }
  }
  groups = std::move(outGroups);
  if (extra)
    *extra = std::move(outExtra);
}

template <typename F> int64_t minNics(F side, int64_t cap, double tau, bool strict) {
  auto ok = [&](int64_t n) { return strict ? side(n) < tau : side(n) <= tau; };
  if (cap < 1 || !ok(cap))
    return 0;
  int64_t lo = 1, hi = cap; // side is non-increasing in n: find the first n with ok(n)
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (ok(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}
} // namespace

double CandidateCosts::attnBusy(int64_t nics) const {
  return busy(attnLayers, &attnExtra, attnBandwidth(nics));
}
double CandidateCosts::ffnBusy(int64_t nics) const {
  return busy(ffnLayers, nullptr, ffnBandwidth(nics));
}
int64_t CandidateCosts::minNicsA(double tau, bool strict) const {
  return minNics([&](int64_t n) { return sideA(n); }, capA, tau, strict);
}
int64_t CandidateCosts::minNicsF(double tau, bool strict) const {
  return minNics([&](int64_t n) { return sideF(n); }, capF, tau, strict);
}

void detail::candidateMemory(const Problem &problem, const Candidate &c,
                             cost::Recomputation attnRecompute, cost::Recomputation ffnRecompute,
                             cost::MemoryBreakdown &attn, cost::MemoryBreakdown &ffn) {
  const cost::ModelShape &m = problem.model;
  const PlannerOptions &o = problem.options;
  const int64_t L = m.numLayers(), p = c.groups, E = m.numExperts(), k = m.topK();
  const double B = static_cast<double>(o.globalTokens / o.seqLen);
  const double tokens = B / static_cast<double>(c.replicas * c.microbatches) *
                        static_cast<double>(o.seqLen); // per micro-batch and replica
  const int64_t headGroup = L % p;
  // AF-Pipe's window: min(m, 2p) micro-batches in flight per group, each holding all the group's
  // layers at the peak (runtime/cost/Memory.h).
  const int64_t inflight = std::min<int64_t>(c.microbatches, 2 * p);
  const int64_t expertsPerRank = (E + c.ffnRanks - 1) / c.ffnRanks; // the busiest F-rank's
  const double share = E ? static_cast<double>(expertsPerRank) / static_cast<double>(E) : 0.0;
  // The busiest F-rank computes tokens * k * share pairs and receives each token that has one of
  // its experts once (scaled by the load imbalance, at most every token).
  const double pairs = tokens * static_cast<double>(k) * share * o.expertImbalance;
  const double received =
      std::min(tokens, tokens * cost::rankHitProbability(E, k, expertsPerRank) * o.expertImbalance);
  attn = {};
  ffn = {};
  for (int64_t g = 0; g < p; ++g) {
    std::vector<int64_t> layers = groupLayers(L, p, g);
    cost::MemoryBreakdown ma = cost::attentionGpuMemory(
        m, layers, g == 0, g == headGroup, c.replicas * c.attnRanks,
        tokens / static_cast<double>(c.attnRanks), inflight, attnRecompute, ffnRecompute, o.memory);
    // With context parallelism tokens / attnRanks is already s/cp per A-rank (a micro-batch holds
    // attnRanks / cp sequences); the ring adds its K/V and dK/dV buffers.
    ma.activations += cost::contextParallelBufferBytes(m, layers, o.seqLen, c.cp);
    cost::MemoryBreakdown mf = cost::ffnGpuMemory(m, layers, expertsPerRank, c.replicas, received,
                                                  pairs, inflight, ffnRecompute, o.memory);
    if (ma.total() > attn.total())
      attn = ma;
    if (mf.total() > ffn.total())
      ffn = mf;
  }
}

bool detail::lightestFittingLevels(const Problem &problem, const Candidate &cand,
                                   cost::Recomputation &attnRecompute,
                                   cost::Recomputation &ffnRecompute) {
  const double usable = usableBytes(problem);
  cost::MemoryBreakdown a, f;
  bool fitA = false, fitF = false;
  // The FFN side's memory depends only on its level; the attention side's on both (Redispatch
  // makes a Full attention side keep the M2N payload), never less with a heavier FFN level.
  for (cost::Recomputation r : recomputeChoices(problem.options, true)) {
    candidateMemory(problem, cand, cost::Recomputation::None, r, a, f);
    if (f.total() <= usable) {
      fitF = true;
      ffnRecompute = r;
      break;
    }
  }
  if (!fitF)
    return false;
  for (cost::Recomputation r : recomputeChoices(problem.options, false)) {
    candidateMemory(problem, cand, r, ffnRecompute, a, f);
    if (a.total() <= usable) {
      fitA = true;
      attnRecompute = r;
      break;
    }
  }
  return fitA;
}

CandidateCosts detail::buildCosts(const Problem &problem, const Candidate &c,
                                  cost::Recomputation attnRecompute,
                                  cost::Recomputation ffnRecompute) {
  using cost::Recomputation;
  const cost::ModelShape &m = problem.model;
  const cost::ClusterSpec &cl = problem.cluster;
  const PlannerOptions &o = problem.options;
  CandidateCosts out;
  out.cand = c;
  out.attnRecompute = attnRecompute;
  out.ffnRecompute = ffnRecompute;
  const int64_t L = m.numLayers(), p = c.groups, E = m.numExperts(), k = m.topK();
  const double peak = cl.gpu.peakFlops;
  const double B = static_cast<double>(o.globalTokens / o.seqLen);
  const double seqs = B / static_cast<double>(c.replicas * c.microbatches); // per micro-batch
  const double tokens = seqs * static_cast<double>(o.seqLen);
  const int64_t v = ceilDiv(L, p), headGroup = L % p;
  // Training FLOPs: forward + backward (3 x forward), plus what recomputation repeats.
  auto attnTraining = [&](int64_t l) {
    double fwd = cost::attentionSideForwardFlops(m, l, seqs, o.seqLen).total();
    double again = attnRecompute == Recomputation::Full ? fwd
                   : attnRecompute == Recomputation::Selective
                       ? cost::selectiveRecomputeFlopsAttention(m, l, tokens)
                       : 0.0;
    // Redispatch with a Selective attention side: the second norm is recomputed once more to
    // send the M2N again (4 FLOP per element, Roofline.h).
    if (ffnRecompute == Recomputation::Redispatch && attnRecompute == Recomputation::Selective &&
        m.layers[l].isMoe())
      again += 4.0 * static_cast<double>(m.hidden) * tokens;
    return 3.0 * fwd + again;
  };
  // Seconds per micro-batch of layer l's attention-side compute on one A-rank. With context
  // parallelism the attention core (the score FLOPs, 1 forward + 2 backward, + 1 forward again at
  // Full) runs as ring passes whose K/V transfers over NVLink overlap with it
  // (cost::ringAttentionSeconds); the rest is spread over the A-ranks as without CP.
  const double nvlink = cl.nvlinkBandwidth;
  auto attnSeconds = [&](int64_t l, double trainingFlops) {
    const double perGpu = static_cast<double>(c.attnRanks) * peak;
    if (c.cp <= 1)
      return trainingFlops / perGpu;
    double scores = cost::attentionSideForwardFlops(m, l, seqs, o.seqLen).scores;
    double passes = attnRecompute == Recomputation::Full ? 2.0 : 1.0; // forward ring passes
    double chunk = cost::kvRingChunkBytes(m, l, o.seqLen, c.cp) / nvlink;
    double forward = cost::ringAttentionSeconds(scores / perGpu, chunk, c.cp);
    double backward = cost::ringAttentionSeconds(2 * scores / perGpu, 2 * chunk, c.cp);
    return (trainingFlops - (passes + 2) * scores) / perGpu + passes * forward + backward;
  };
  auto expertTraining = [&](int64_t l) {
    double fwd = cost::routedExpertForwardFlops(m, l, tokens);
    double again = ffnRecompute == Recomputation::Full || ffnRecompute == Recomputation::Redispatch
                       ? fwd
                   : ffnRecompute == Recomputation::Selective
                       ? cost::selectiveRecomputeFlopsExpert(m, l, tokens * static_cast<double>(k))
                       : 0.0;
    return (3.0 * fwd + again) * o.expertImbalance;
  };
  out.groupsTotal = static_cast<double>(c.replicas * p);
  out.nicBandwidth = cl.nic.bandwidth;
  out.attnPcieCap = static_cast<double>(c.attnRanks) * cl.gpu.pcieBandwidth;
  out.ffnPcieCap = static_cast<double>(c.ffnRanks) * cl.gpu.pcieBandwidth;
  out.K =
      static_cast<double>(c.microbatches) + static_cast<double>(2 * p - 1) / static_cast<double>(v);
  const double bwGpu = cl.perGpuNetworkBandwidth();
  // Gradient synchronisation over n replicas (runtime/cost/GradSync.h: all-reduce, or the
  // distributed optimizer's reduce-scatter + all-gather), over the NIC share of a GPU.
  auto syncTime = [&](double params, int64_t n) {
    return o.gradSync.wireBytes(params, static_cast<double>(n)) / bwGpu;
  };
  const double usable = usableBytes(problem);
  const int64_t expertsPerRank = (E + c.ffnRanks - 1) / c.ffnRanks; // the busiest F-rank's
  const double ffnShare = static_cast<double>(expertsPerRank) / static_cast<double>(E);
  out.attnLayers.resize(p);
  out.ffnLayers.resize(p);
  out.attnExtra.assign(p, 0.0);
  double worstA = -1, worstF = -1;
  for (int64_t g = 0; g < p; ++g) {
    std::vector<int64_t> layers = groupLayers(L, p, g);
    double flopsA = 0, flopsF = 0, bytesA = 0, bytesF = 0, paramsA = 0, paramsF = 0;
    for (int64_t l : layers) {
      double fa = attnTraining(l);
      cost::ExchangeBytes x = cost::exchangeBytes(m, l, tokens, c.ffnRanks, p > 1);
      if (ffnRecompute == Recomputation::Redispatch) { // the M2N sent again for the F backward
        x.attnSend += x.m2n;
        x.ffnRecv += x.m2n;
      }
      out.attnLayers[g].push_back({attnSeconds(l, fa), x.attnMax(), 1.0});
      flopsA += fa;
      bytesA += x.attnMax();
      paramsA += m.attentionSideParams(l);
      if (m.layers[l].isMoe()) {
        double ff = expertTraining(l);
        out.ffnLayers[g].push_back({ff * ffnShare / peak, x.ffnMax(), 1.0});
        flopsF += ff;
        bytesF += x.ffnMax();
        paramsF += static_cast<double>(expertsPerRank) * m.expertParams(l);
      }
    }
    if (g == headGroup) {
      // Never recomputed: the head's backward follows its forward at once (the loss), and its
      // logits of one micro-batch are counted as activations (Memory.h).
      double fh = 3.0 * cost::headForwardFlops(m, tokens);
      out.attnExtra[g] = fh / (static_cast<double>(c.attnRanks) * peak);
      flopsA += fh;
      paramsA += static_cast<double>(m.vocab) * m.hidden + m.hidden;
    }
    if (g == 0 && !(m.tiedEmbeddings && headGroup == 0))
      paramsA += static_cast<double>(m.vocab) * m.hidden;
    if (flopsA > worstA) {
      worstA = flopsA;
      out.attnFlopsBusiest = flopsA;
      out.attnBytesBusiest = bytesA;
    }
    if (flopsF > worstF) {
      worstF = flopsF;
      out.ffnFlopsBusiest = flopsF;
      out.ffnBytesBusiest = bytesF;
    }
    out.D = std::max(
        {out.D, syncTime(paramsA, c.replicas * c.attnRanks), syncTime(paramsF, c.replicas)});
  }
  candidateMemory(problem, c, attnRecompute, ffnRecompute, out.attnMemory, out.ffnMemory);
  out.fits = out.attnMemory.total() <= usable && out.ffnMemory.total() <= usable;
  compress(out.attnLayers, &out.attnExtra);
  compress(out.ffnLayers, nullptr);
  out.attnLowerBound =
      out.K * busy(out.attnLayers, &out.attnExtra, std::numeric_limits<double>::infinity()) + out.D;
  out.ffnLowerBound =
      out.K * busy(out.ffnLayers, nullptr, std::numeric_limits<double>::infinity()) + out.D;
  auto caps = nicCaps(problem, c);
  out.capA = caps.first;
  out.capF = caps.second;
  return out;
}

Evaluation detail::evaluateCosts(const Problem &problem, const CandidateCosts &c, int64_t nA,
                                 int64_t nF) {
  const cost::ModelShape &m = problem.model;
  const PlannerOptions &o = problem.options;
  Evaluation e;
  double bwA = c.attnBandwidth(nA), bwF = c.ffnBandwidth(nF);
  e.attnBusy = c.attnBusy(nA);
  e.ffnBusy = c.ffnBusy(nF);
  e.stepTime = std::max(c.sideA(nA), c.sideF(nF));
  e.bubbleFactor = c.K;
  e.gradSync = c.D;
  e.attnBandwidth = bwA;
  e.ffnBandwidth = bwF;
  e.attnFlops = c.attnFlopsBusiest;
  e.ffnFlops = c.ffnFlopsBusiest;
  e.attnBytes = c.attnBytesBusiest;
  e.ffnBytes = c.ffnBytesBusiest;
  e.attnCompute = busy(c.attnLayers, &c.attnExtra, std::numeric_limits<double>::infinity());
  e.ffnCompute = busy(c.ffnLayers, nullptr, std::numeric_limits<double>::infinity());
  e.attnComm = c.attnBytesBusiest / bwA;
  e.ffnComm = c.ffnBytesBusiest / bwF;
  e.attnMemory = c.attnMemory;
  e.ffnMemory = c.ffnMemory;
  e.fitsMemory = c.fits;
  const double B = static_cast<double>(o.globalTokens / o.seqLen);
  double modelFlops = 3.0 * cost::headForwardFlops(m, B * static_cast<double>(o.seqLen));
  for (int64_t l = 0; l < m.numLayers(); ++l) {
    modelFlops += 3.0 * cost::attentionSideForwardFlops(m, l, B, o.seqLen).total();
    if (m.layers[l].isMoe())
      modelFlops += 3.0 * cost::routedExpertForwardFlops(m, l, B * static_cast<double>(o.seqLen));
  }
  e.mfu = modelFlops /
          (e.stepTime * static_cast<double>(c.cand.gpus()) * problem.cluster.gpu.peakFlops);
  return e;
}

Evaluation evaluate(const Problem &problem, const Config &config) {
  CandidateCosts c = buildCosts(problem, config.cand, config.attnRecompute, config.ffnRecompute);
  return evaluateCosts(problem, c, config.attnNics, config.ffnNics);
}

std::string fixedOptions(const PlannerOptions &o) {
  std::string out;
  const auto add = [&](const char *flag, int64_t v) {
    if (v)
      out += std::string(out.empty() ? "" : " ") + flag + " " + std::to_string(v);
  };
  add("--groups", o.fixedGroups);
  add("--attn-gpus", o.fixedAttnGpus);
  add("--ffn-gpus", o.fixedFfnGpus);
  add("--micro-batches", o.fixedMicrobatches);
  add("--replicas", o.fixedReplicas);
  if (!o.cpPinnedByTool)
    add("--cp", o.fixedCp);
  const char *recompute = o.recompute == Recompute::Never       ? "off"
                          : o.recompute == Recompute::Always    ? "on"
                          : o.recompute == Recompute::Selective ? "selective"
                                                                : nullptr;
  if (recompute)
    out += std::string(out.empty() ? "" : " ") + "--recompute " + recompute;
  return out;
}

// "1 group", "2 groups".
static std::string counted(int64_t n, const std::string &noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string explainInfeasible(const Problem &problem, const std::vector<Candidate> &cands) {
  // The least over every candidate and pair of levels of the larger side's memory.
  double best = std::numeric_limits<double>::infinity();
  struct Side {
    cost::MemoryBreakdown mem;
    cost::Recomputation level = cost::Recomputation::None;
  } bestA, bestF;
  Candidate bestCand;
  for (const Candidate &c : cands) {
    Side a, f;
    double need = std::numeric_limits<double>::infinity();
    cost::MemoryBreakdown ma, mf;
    for (cost::Recomputation rf : recomputeChoices(problem.options, true))
      for (cost::Recomputation ra : recomputeChoices(problem.options, false)) {
        candidateMemory(problem, c, ra, rf, ma, mf);
        double n = std::max(ma.total(), mf.total());
        if (n < need) {
          need = n;
          a = {ma, ra};
          f = {mf, rf};
        }
      }
    if (need < best) {
      best = need;
      bestA = a;
      bestF = f;
      bestCand = c;
    }
  }
  bool attn = bestA.mem.total() >= bestF.mem.total();
  const cost::MemoryBreakdown &mb = attn ? bestA.mem : bestF.mem;
  double dominant = std::max({mb.weights, mb.gradients, mb.optimizer, mb.activations});
  const Candidate &c = bestCand;
  std::ostringstream os;
  const std::string fixed = fixedOptions(problem.options);
  os << "the model does not fit: the smallest per-GPU memory any configuration "
     << (fixed.empty() ? "" : "allowed by " + fixed + " ") << "needs is "
     << gb(best + problem.options.reserveBytes) << " (" << gb(best) << " of model state + "
     << gb(problem.options.reserveBytes) << " reserved), the " << problem.cluster.gpu.name
     << " has " << gb(problem.cluster.gpu.hbmBytes) << "; the dominant term is the "
     << mb.dominant() << " of an " << (attn ? "attention" : "FFN") << " GPU (" << gb(dominant)
     << ") with " << counted(c.replicas, "replica") << ", " << counted(c.groups, "group") << ", "
     << counted(c.attnRanks, "A-rank") << " and " << counted(c.ffnRanks, "F-rank") << " per group, "
     << cost::recomputationName((attn ? bestA : bestF).level) << " recomputation";
  return os.str();
}

Solution solveExhaustive(const Problem &problem, bool everyNicPair) noexcept {
  auto start = std::chrono::steady_clock::now();
  Solution s;
  llvm::Expected<std::vector<Candidate>> enumerated = enumerateCandidates(problem);
  if (!enumerated) {
    s.error = llvm::toString(enumerated.takeError());
    return s;
  }
  const std::vector<Candidate> cands = std::move(*enumerated);
  s.candidates = static_cast<int64_t>(cands.size());
  const int64_t N = problem.cluster.nics();
  const double usable = usableBytes(problem);
  const std::vector<cost::Recomputation> levelsA = recomputeChoices(problem.options, false);
  const std::vector<cost::Recomputation> levelsF = recomputeChoices(problem.options, true);
  for (const Candidate &c : cands) {
    // Every pair of levels whose memory fits (no dominance assumed: this is the oracle).
    std::vector<cost::Recomputation> fitF;
    cost::MemoryBreakdown a, f;
    for (cost::Recomputation r : levelsF) {
      candidateMemory(problem, c, cost::Recomputation::None, r, a, f);
      if (f.total() <= usable)
        fitF.push_back(r);
    }
    for (cost::Recomputation rf : fitF)
      for (cost::Recomputation ra : levelsA) {
        candidateMemory(problem, c, ra, rf, a, f);
        if (a.total() > usable)
          continue;
        CandidateCosts costs = buildCosts(problem, c, ra, rf);
        if (!costs.fits)
          continue;
        // Every NIC split: no monotonicity assumed, this is the oracle.
        for (int64_t nA = 1; nA <= costs.capA; ++nA) {
          double a = costs.sideA(nA);
          int64_t lastF = std::min(costs.capF, N - nA);
          for (int64_t nF = everyNicPair ? 1 : lastF; nF >= 1 && nF <= lastF; ++nF) {
            double step = std::max(a, costs.sideF(nF));
            if (s.ok && (step > s.eval.stepTime ||
                         (step == s.eval.stepTime && c.gpus() >= s.config.cand.gpus())))
              continue;
            s.ok = true;
            s.config = Config{c, ra, rf, nA, nF};
            s.eval.stepTime = step;
          }
        }
      }
  }
  if (!s.ok)
    s.error = explainInfeasible(problem, cands);
  else {
    s.eval = evaluate(problem, s.config);
    s.optimal = true;
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

std::vector<Solution> rankByRoofline(const Problem &problem, size_t limit) noexcept {
  std::vector<Solution> out;
  llvm::Expected<std::vector<Candidate>> enumerated = enumerateCandidates(problem);
  if (!enumerated) {
    llvm::consumeError(enumerated.takeError());
    return out;
  }
  const int64_t N = problem.cluster.nics();
  const double usable = usableBytes(problem);
  const std::vector<cost::Recomputation> levelsA = recomputeChoices(problem.options, false);
  const std::vector<cost::Recomputation> levelsF = recomputeChoices(problem.options, true);
  for (const Candidate &c : *enumerated) {
    Solution best;
    cost::MemoryBreakdown a, f;
    for (cost::Recomputation rf : levelsF)
      for (cost::Recomputation ra : levelsA) {
        candidateMemory(problem, c, ra, rf, a, f);
        if (a.total() > usable || f.total() > usable)
          continue;
        CandidateCosts costs = buildCosts(problem, c, ra, rf);
        if (!costs.fits)
          continue;
        // The FFN side takes every NIC the attention side leaves (up to its cap): the side times
        // are non-increasing in their NICs, so no split leaves one idle.
        for (int64_t nA = 1; nA <= costs.capA; ++nA) {
          int64_t nF = std::min(costs.capF, N - nA);
          if (nF < 1)
            break;
          double step = std::max(costs.sideA(nA), costs.sideF(nF));
          if (best.ok && step >= best.eval.stepTime)
            continue;
          best.ok = true;
          best.config = Config{c, ra, rf, nA, nF};
          best.eval.stepTime = step;
        }
      }
    if (best.ok)
      out.push_back(best);
  }
  std::stable_sort(out.begin(), out.end(), [](const Solution &x, const Solution &y) {
    return x.eval.stepTime < y.eval.stepTime;
  });
  if (out.size() > limit)
    out.resize(limit);
  for (Solution &s : out)
    s.eval = evaluate(problem, s.config);
  return out;
}

std::vector<Solution> bestPerAttentionGpus(const Problem &problem) noexcept {
  std::vector<Solution> out;
  llvm::Expected<std::vector<Candidate>> cands = enumerateCandidates(problem);
  if (!cands) {
    llvm::consumeError(cands.takeError()); // contradictory options: no attention GPU count
    return out;
  }
  std::vector<int64_t> counts;
  for (const Candidate &c : *cands)
    counts.push_back(c.attnGpus());
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (int64_t M : counts) {
    Problem fixed = problem;
    fixed.options.fixedAttnGpus = M;
    Solution s = solveExhaustive(fixed, false);
    if (s.ok)
      out.push_back(s);
  }
  return out;
}

bool RooflineStageTimes::busyTimes(const Problem &problem, const Config &config, double &attn,
                                   double &ffn) const {
  Evaluation e = evaluate(problem, config);
  attn = e.attnBusy;
  ffn = e.ffnBusy;
  return true;
}

double stepTimeWith(const Problem &problem, const Config &config, const StageTimeSource &source,
                    bool &ok) {
  double a = 0, f = 0;
  ok = source.busyTimes(problem, config, a, f);
  if (!ok)
    return std::numeric_limits<double>::infinity();
  CandidateCosts c = buildCosts(problem, config.cand, config.attnRecompute, config.ffnRecompute);
  return std::max(c.K * a + c.D, c.K * f + c.D);
}

namespace {
bool validConfig(const Problem &problem, const Config &c) {
  std::vector<Candidate> one;
  const PlannerOptions &o = problem.options;
  const int64_t B = o.globalTokens / o.seqLen, E = problem.model.numExperts();
  const Candidate &k = c.cand;
  if (k.replicas < 1 || k.groups < 1 || k.attnRanks < 1 || k.ffnRanks < 1 || k.microbatches < 1)
    return false;
  if (k.groups > problem.model.numLayers() || k.gpus() > problem.cluster.gpus())
    return false;
  const int64_t node = problem.cluster.gpusPerNode;
  if (k.cp < 1 || k.cp > 8 || (k.cp & (k.cp - 1)) || node % k.cp || k.attnRanks % k.cp ||
      (k.cp > 1 && o.seqLen % (2 * k.cp)) || (o.fixedCp && k.cp != o.fixedCp))
    return false;
  if (k.ffnRanks > E || (B * k.cp) % (k.replicas * k.attnRanks * k.microbatches) ||
      k.microbatches < 2 * k.groups)
    return false;
  if ((o.fixedGroups && k.groups != o.fixedGroups) ||
      (o.fixedAttnGpus && k.attnGpus() != o.fixedAttnGpus) ||
      (o.fixedFfnGpus && k.ffnGpus() != o.fixedFfnGpus) ||
      (o.fixedMicrobatches && k.microbatches != o.fixedMicrobatches) ||
      (o.fixedReplicas && k.replicas != o.fixedReplicas))
    return false;
  std::vector<cost::Recomputation> levelsA = recomputeChoices(o, false);
  std::vector<cost::Recomputation> levelsF = recomputeChoices(o, true);
  if (std::find(levelsA.begin(), levelsA.end(), c.attnRecompute) == levelsA.end() ||
      std::find(levelsF.begin(), levelsF.end(), c.ffnRecompute) == levelsF.end())
    return false;
  auto caps = nicCaps(problem, k);
  return c.attnNics >= 1 && c.ffnNics >= 1 && c.attnNics <= caps.first &&
         c.ffnNics <= caps.second && c.attnNics + c.ffnNics <= problem.cluster.nics();
}

std::vector<Config> neighbours(const Problem &problem, const Config &c) {
  std::vector<Config> out;
  auto add = [&](Config n) { out.push_back(n); };
  const int64_t node = problem.cluster.nicsPerNode;
  for (int64_t d : {-1, 1}) {
    Config n = c;
    n.cand.groups += d;
    add(n);
    n = c;
    n.cand.attnRanks += d;
    add(n);
    n = c;
    n.cand.attnRanks = d > 0 ? c.cand.attnRanks * 2 : c.cand.attnRanks / 2;
    add(n);
    n = c;
    n.cand.ffnRanks = d > 0 ? c.cand.ffnRanks * 2 : c.cand.ffnRanks / 2;
    add(n);
    n = c;
    n.cand.ffnRanks += d;
    add(n);
    n = c;
    n.cand.attnRanks = d > 0 ? c.cand.attnRanks * 2 : c.cand.attnRanks / 2;
    n.cand.microbatches = d > 0 ? c.cand.microbatches / 2 : c.cand.microbatches * 2;
    add(n);
    n = c;
    n.cand.microbatches = d > 0 ? c.cand.microbatches * 2 : c.cand.microbatches / 2;
    add(n);
    n = c;
    n.cand.replicas = d > 0 ? c.cand.replicas * 2 : c.cand.replicas / 2;
    add(n);
    // CP doubled or halved, alone and with the micro-batch count following it.
    n = c;
    n.cand.cp = d > 0 ? c.cand.cp * 2 : c.cand.cp / 2;
    add(n);
    n.cand.microbatches = d > 0 ? c.cand.microbatches * 2 : c.cand.microbatches / 2;
    add(n);
    for (int64_t step : {int64_t(1), node}) {
      n = c;
      n.attnNics += d * step;
      add(n);
      n = c;
      n.ffnNics += d * step;
      add(n);
      n = c;
      n.attnNics += d * step;
      n.ffnNics -= d * step;
      add(n);
    }
  }
  // Each side's recomputation level one step lighter or heavier.
  auto shift = [](cost::Recomputation r, int d, int most) {
    return static_cast<cost::Recomputation>(std::clamp(static_cast<int>(r) + d, 0, most));
  };
  for (int d : {-1, 1}) {
    Config n = c;
    n.attnRecompute = shift(c.attnRecompute, d, 2);
    add(n);
    n = c;
    n.ffnRecompute = shift(c.ffnRecompute, d, 3);
    add(n);
  }
  return out;
}
} // namespace

LocalSearchResult localSearch(const Problem &problem, const Config &start,
                              const StageTimeSource &source, int64_t maxMoves) noexcept {
  LocalSearchResult r;
  r.config = start;
  bool ok = false;
  r.stepTime = stepTimeWith(problem, start, source, ok);
  for (; r.moves < maxMoves;) {
    Config best = r.config;
    double bestTime = r.stepTime;
    for (const Config &n : neighbours(problem, r.config)) {
      if (!validConfig(problem, n))
        continue;
      CandidateCosts costs = buildCosts(problem, n.cand, n.attnRecompute, n.ffnRecompute);
      if (!costs.fits)
        continue;
      ++r.evaluated;
      double t = stepTimeWith(problem, n, source, ok);
      if (!ok)
        continue;
      if (t < bestTime || (t == bestTime && n.cand.gpus() < best.cand.gpus())) {
        best = n;
        bestTime = t;
      }
    }
    if (bestTime == r.stepTime && best.cand.gpus() == r.config.cand.gpus())
      break;
    r.config = best;
    r.stepTime = bestTime;
    ++r.moves;
  }
  return r;
}

ShareBound explainShareBound(const Problem &problem, int64_t attnGpus, int64_t gpus,
                             double chosenStep) noexcept {
  ShareBound out;
  llvm::Expected<std::vector<Candidate>> enumerated = enumerateCandidates(problem);
  if (!enumerated) {
    out.reason = ShareBound::Reason::Divisibility;
    out.text = "divisibility: " + llvm::toString(enumerated.takeError());
    return out;
  }
  const std::vector<Candidate> cands = std::move(*enumerated);
  const int64_t N = problem.cluster.nics();
  const double inf = std::numeric_limits<double>::infinity();
  out.bestFitStep = out.bestUnlimitedStep = inf;
  // Best step over the NIC splits that give the FFN side every NIC the attention side leaves
  // (exact: the FFN side time is non-increasing in its NICs; solveExhaustive(.., false) does so).
  auto best = [&](const CandidateCosts &k) {
    double b = inf;
    for (int64_t nA = 1; nA <= k.capA; ++nA) {
      int64_t nF = std::min(k.capF, N - nA);
      if (nF >= 1)
        b = std::min(b, std::max(k.sideA(nA), k.sideF(nF)));
    }
    return b;
  };
  const cost::Recomputation lightA = recomputeChoices(problem.options, false).front();
  const cost::Recomputation lightF = recomputeChoices(problem.options, true).front();
  for (const Candidate &c : cands) {
    if (c.attnGpus() * gpus < attnGpus * c.gpus()) // share below attnGpus / gpus
      continue;
    ++out.candidates;
    CandidateCosts u = buildCosts(problem, c, lightA, lightF);
    double bu = best(u);
    if (bu < out.bestUnlimitedStep) {
      out.bestUnlimitedStep = bu;
      out.bestUnlimitedBytes = std::max(u.attnMemory.total(), u.ffnMemory.total());
    }
    cost::Recomputation ra, rf;
    if (!lightestFittingLevels(problem, c, ra, rf))
      continue;
    ++out.fitting;
    out.bestFitStep = std::min(out.bestFitStep, best(buildCosts(problem, c, ra, rf)));
  }
  std::ostringstream os;
  os.precision(4);
  os << "attention share >= " << attnGpus << "/" << gpus << ": ";
  if (!out.candidates) {
    out.reason = ShareBound::Reason::Divisibility;
    os << "divisibility binds: no configuration satisfies the integer constraints";
  } else if (out.bestUnlimitedStep < chosenStep) {
    out.reason = ShareBound::Reason::Memory;
    os << "memory binds: the fastest of the " << out.candidates
       << " configurations with that share (" << out.bestUnlimitedStep
       << " s per step against the chosen " << chosenStep << " s, recomputation "
       << cost::recomputationName(lightA) << "/" << cost::recomputationName(lightF) << ") needs "
       << gb(out.bestUnlimitedBytes + problem.options.reserveBytes) << " per GPU, the "
       << problem.cluster.gpu.name << " has " << gb(problem.cluster.gpu.hbmBytes) << "; "
       << out.fitting << " fit";
    if (out.fitting)
      os << ", the fastest of them " << out.bestFitStep << " s";
  } else {
    out.reason = ShareBound::Reason::Slower;
    os << "not bound: even with the memory limit lifted the fastest of the " << out.candidates
       << " configurations with that share takes " << out.bestUnlimitedStep
       << " s per step against the chosen " << chosenStep << " s";
  }
  out.text = os.str();
  return out;
}

} // namespace disagmoe::placement
