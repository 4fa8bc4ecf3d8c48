//===- Z3Placement.cpp - the placement problem as a Z3 model --------------===//
//
// Stage times are not linear in the integer choices (FLOPs / (GPUs * peak), bytes over a NIC share,
// max over groups of sums of maxima), so they are precomputed per structural candidate and Z3
// chooses among candidates under linear constraints (docs/placement.md, "Exactness"):
//   b_i            Boolean, candidate i chosen; exactly one is true. A candidate carries each
//                  side's recomputation level: the lightest allowed level whose memory fits
//                  (detail::lightestFittingLevels). That choice is exact: a lighter level never
//                  has a longer stage time and a side's memory does not depend on the other
//                  side's level; candidates that fit at no level get no Boolean (the memory
//                  constraint b_i -> mem_i <= usable with constant mem_i). solveExhaustive
//                  enumerates every level pair without this dominance, and the tests compare.
//   nA, nF         integers, NICs of each side: 1 <= nA, nF; nA + nF <= NICs of the cluster;
//                  b_i -> nA <= capA_i and nF <= capF_i (NICs of the nodes the side occupies)
//   objective      for a threshold tau: b_i -> nA >= needA_i(tau) and nF >= needF_i(tau), where
//                  need is the least NIC count whose side time is <= tau (side times are
//                  non-increasing in their NIC count, so "nA >= need" is exactly "side time <=
//                  tau"); candidates whose compute alone exceeds tau get !b_i.
// The threshold is bisected, then tightened strictly below the best found until unsatisfiable,
// which proves the optimum (a finite set of values); GPUs are then minimised at that time.
//
//===----------------------------------------------------------------------===//
#include "passes/placement/solver/Planner.h"
#include "passes/placement/solver/PlannerInternal.h"

#include <z3++.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

namespace disagmoe::placement {
using namespace detail;

namespace {
struct Z3Model {
  const Problem &problem;
  std::vector<CandidateCosts> costs; ///< one per candidate, at its recomputation levels; all fit
  z3::context ctx;
  z3::solver solver;
  z3::expr_vector chosen;
  z3::expr nA, nF;
  std::chrono::steady_clock::time_point deadline;
  bool timedOut = false;
  int64_t queries = 0;

  Z3Model(const Problem &p, std::vector<CandidateCosts> c)
      : problem(p), costs(std::move(c)), solver(ctx), chosen(ctx), nA(ctx.int_const("nA")),
        nF(ctx.int_const("nF")) {}

  void build() {
    for (size_t i = 0; i < costs.size(); ++i) {
      z3::expr b = ctx.bool_const(("b" + std::to_string(i)).c_str());
      chosen.push_back(b);
      solver.add(
          z3::implies(b, nA <= ctx.int_val(costs[i].capA) && nF <= ctx.int_val(costs[i].capF)));
    }
    solver.add(z3::atleast(chosen, 1));
    solver.add(z3::atmost(chosen, 1));
    solver.add(nA >= 1 && nF >= 1 && nA + nF <= ctx.int_val(problem.cluster.nics()));
  }

  /// One satisfiability question; fills `out` on sat.
  z3::check_result query(double tau, bool strict, int64_t maxGpus, Config &out) {
    double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timedOut = true;
      return z3::unknown;
    }
    ++queries;
    solver.push();
    bool finite = std::isfinite(tau);
    for (size_t i = 0; i < costs.size(); ++i) {
      const z3::expr &b = chosen[static_cast<int>(i)];
      const CandidateCosts *c = &costs[i];
      if (maxGpus > 0 && c->cand.gpus() > maxGpus) {
        solver.add(!b);
        continue;
      }
      if (!finite)
        continue;
      double bound = std::max(c->attnLowerBound, c->ffnLowerBound);
      if (strict ? bound >= tau : bound > tau) { // compute alone is too slow: no NIC count helps
        solver.add(!b);
        continue;
      }
      int64_t a = c->minNicsA(tau, strict), f = a ? c->minNicsF(tau, strict) : 0;
      if (!a || !f)
        solver.add(!b);
      else
        solver.add(z3::implies(b, nA >= ctx.int_val(a) && nF >= ctx.int_val(f)));
    }
    z3::params params(ctx);
    params.set("timeout", static_cast<unsigned>(std::max(1.0, left * 1000)));
    solver.set(params);
    z3::check_result result = solver.check();
    if (result == z3::sat) {
      z3::model model = solver.get_model();
      for (size_t i = 0; i < costs.size(); ++i)
        if (model.eval(chosen[static_cast<int>(i)], true).is_true()) {
          out.cand = costs[i].cand;
          out.attnRecompute = costs[i].attnRecompute;
          out.ffnRecompute = costs[i].ffnRecompute;
          break;
        }
      out.attnNics = model.eval(nA, true).get_numeral_int64();
      out.ffnNics = model.eval(nF, true).get_numeral_int64();
    } else if (result == z3::unknown) {
      timedOut = true;
    }
    solver.pop();
    return result;
  }

  double stepOf(const Config &c) {
    for (const CandidateCosts &k : costs)
      if (k.cand.replicas == c.cand.replicas && k.cand.groups == c.cand.groups &&
          k.cand.attnRanks == c.cand.attnRanks && k.cand.ffnRanks == c.cand.ffnRanks &&
          k.cand.microbatches == c.cand.microbatches && k.cand.cp == c.cand.cp &&
          k.attnRecompute == c.attnRecompute && k.ffnRecompute == c.ffnRecompute)
        return std::max(k.sideA(c.attnNics), k.sideF(c.ffnNics));
    return std::numeric_limits<double>::infinity();
  }
};
} // namespace

Solution solveZ3(const Problem &problem) noexcept {
  auto start = std::chrono::steady_clock::now();
  Solution s;
  llvm::Expected<std::vector<Candidate>> enumerated = enumerateCandidates(problem);
  if (!enumerated) {
    s.error = llvm::toString(enumerated.takeError());
    return s;
  }
  const std::vector<Candidate> cands = std::move(*enumerated);
  s.candidates = static_cast<int64_t>(cands.size());
  try {
    // Each candidate at its lightest fitting recomputation levels (candidates that fit at none
    // are dropped). Exact presolve: a configuration found by a proportional NIC split bounds the
    // optimum from above; candidates whose compute-only time exceeds that bound cannot be optimal.
    std::vector<CandidateCosts> kept;
    {
      const int64_t N = problem.cluster.nics();
      double ub = std::numeric_limits<double>::infinity();
      std::vector<CandidateCosts> all;
      for (const Candidate &c : cands) {
        cost::Recomputation ra, rf;
        if (!lightestFittingLevels(problem, c, ra, rf))
          continue;
        CandidateCosts k = buildCosts(problem, c, ra, rf);
        double total = k.attnBytesBusiest + k.ffnBytesBusiest;
        int64_t nA =
            total > 0 ? static_cast<int64_t>(std::llround(N * k.attnBytesBusiest / total)) : 1;
        nA = std::max<int64_t>(1, std::min({nA, k.capA, N - 1}));
        int64_t nF = std::min(k.capF, N - nA);
        if (nF >= 1)
          ub = std::min(ub, std::max(k.sideA(nA), k.sideF(nF)));
        all.push_back(std::move(k));
      }
      for (CandidateCosts &k : all)
        if (std::max(k.attnLowerBound, k.ffnLowerBound) <= ub)
          kept.push_back(std::move(k));
    }
    if (kept.empty()) {
      s.error = explainInfeasible(problem, cands);
      return s;
    }
    Z3Model z(problem, std::move(kept));
    z.deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(problem.options.timeLimitSeconds));
    z.build();
    Config found;
    z3::check_result r = z.query(std::numeric_limits<double>::infinity(), false, 0, found);
    if (r == z3::unsat) {
      s.error = explainInfeasible(problem, cands);
      return s;
    }
    if (r == z3::sat) {
      s.ok = true;
      s.config = found;
      double hi = z.stepOf(found), lo = std::numeric_limits<double>::infinity();
      for (const CandidateCosts &k : z.costs) // no configuration beats its compute-only time
        lo = std::min(lo, std::max(k.attnLowerBound, k.ffnLowerBound));
      lo = std::min(lo, hi) * (1 - 1e-12);
      bool proven = false, probe = true;
      while (!z.timedOut) {
        // Alternate a strict probe below the best found (unsat proves it optimal) with a
        // bisection step between the lower bound and the best found.
        bool strict = probe || (hi - lo) <= 1e-9 * hi;
        double tau = strict ? hi : 0.5 * (lo + hi);
        probe = !probe;
        Config c;
        r = z.query(tau, strict, 0, c);
        if (r == z3::sat) {
          s.config = c;
          hi = z.stepOf(c);
        } else if (r == z3::unsat) {
          if (strict) {
            proven = true;
            break;
          }
          lo = tau;
        }
      }
      // MFU tie-break: fewest GPUs at the optimal step time (bisection on the GPU count).
      if (proven) {
        int64_t loG = 1, hiG = s.config.cand.gpus();
        while (loG < hiG && !z.timedOut) {
          int64_t mid = loG + (hiG - loG) / 2;
          Config c;
          r = z.query(hi, false, mid, c);
          if (r == z3::sat) {
            s.config = c;
            hiG = c.cand.gpus();
          } else if (r == z3::unsat) {
            loG = mid + 1;
          }
        }
      }
      s.optimal = proven && !z.timedOut;
      s.eval = evaluate(problem, s.config);
    } else {
      s.error = "Z3 found no configuration within the time limit of " +
                std::to_string(problem.options.timeLimitSeconds) + " s";
    }
    s.queries = z.queries;
    if (s.ok && !s.optimal) {
      std::ostringstream os;
      os << "Z3 time limit of " << problem.options.timeLimitSeconds
         << " s reached: this is the best configuration found so far, not proven optimal";
      s.note = os.str();
    }
  } catch (const z3::exception &e) {
    s.ok = false;
    s.error = std::string("Z3: ") + e.msg();
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

} // namespace disagmoe::placement
