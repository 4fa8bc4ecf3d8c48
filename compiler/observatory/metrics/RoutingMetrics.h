// Routing metrics of the observatory (docs/observatory.md has the formulas): per-expert max/mean,
// Gini coefficient, the send-count matrix S[src][dst] of an expert-parallel (EP) layout, and the
// maximum-likelihood symmetric Dirichlet alpha of a Dirichlet-multinomial fitted to per-batch
// expert counts. Plain C++17, no MLIR and no exceptions across the interface, so it is
// unit-testable alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::observatory {

/// max_e x_e / mean_e x_e; 0 when every x_e is 0 or x is empty. Invariant to relabelling experts.
double maxOverMean(const std::vector<double> &x);

/// Gini coefficient G = sum_i sum_j |x_i - x_j| / (2 n^2 mean(x)) of non-negative values
/// (0: all equal; (n-1)/n: one holds everything); 0 when every x_i is 0 or x is empty.
double gini(const std::vector<double> &x);

/// Expert-to-rank map of EP degree `ep` over `experts` experts: contiguous blocks,
/// rank(e) = floor(e * ep / experts) (experts/ep per rank when ep divides experts).
int expertRank(int64_t expert, int64_t experts, int ep);

/// Source rank of a token: sequences are dealt round-robin over the EP ranks (data parallel within
/// the EP group), so sequence s lives on rank s mod ep (docs/architecture.md, "Exchanges", token
/// ownership).
inline int sourceRank(int64_t sequence, int ep) { return static_cast<int>(sequence % ep); }

/// Send-count matrix of one layer and batch: S[src][dst] = number of (token, expert) assignments
/// whose token lives on rank src and whose expert lives on rank dst.
struct SendMatrix {
  int ep = 0;
  std::vector<int64_t> counts; ///< [ep * ep], row-major (src, dst)

  explicit SendMatrix(int ep = 0) : ep(ep), counts(static_cast<size_t>(ep) * ep, 0) {}
  int64_t at(int src, int dst) const { return counts[static_cast<size_t>(src) * ep + dst]; }
  /// Column sums: the load each rank receives.
  std::vector<double> received() const;
  /// S from the top-k ids of `sequences` sequences of `seqLen` tokens ([sequences * seqLen * topK],
  /// flat token order), the first of which is global sequence `firstSequence`.
  static SendMatrix fromRouting(const int64_t *topIds, int64_t sequences, int64_t seqLen,
                                int64_t topK, int64_t experts, int ep, int64_t firstSequence = 0);
};

/// Per-expert loads c_e (assignments per expert) of [tokens * topK] top-k ids.
std::vector<int64_t> expertLoads(const int64_t *topIds, int64_t tokens, int64_t topK,
                                 int64_t experts);

/// Digamma psi(x) for x > 0 (recurrence to x >= 10, then the asymptotic series; |error| < 1e-13).
double digamma(double x);

/// Log-likelihood of counts under a symmetric Dirichlet-multinomial with parameter alpha, without
/// the multinomial coefficient (which does not depend on alpha):
///   sum_b [ lnG(K a) - lnG(N_b + K a) + sum_e ( lnG(c_be + a) - lnG(a) ) ].
double dirichletMultinomialLogLikelihood(const std::vector<std::vector<int64_t>> &counts,
                                         double alpha);

struct AlphaFit {
  double alpha = 0;          ///< the maximiser (clamped to [kMinAlpha, kMaxAlpha])
  double logLikelihood = 0;  ///< at alpha
  bool atUpperBound = false; ///< counts are no more dispersed than multinomial: alpha >= kMaxAlpha
  bool atLowerBound = false; ///< every batch puts all its mass on one expert: alpha <= kMinAlpha
  int batches = 0;           ///< batches with at least one assignment
};

constexpr double kMinAlpha = 1e-6;
constexpr double kMaxAlpha = 1e6;

/// Maximum-likelihood symmetric alpha of a Dirichlet-multinomial fitted to per-batch expert counts
/// (`counts[b][e]`, every row the same length K >= 2; rows summing to 0 are skipped). Works on the
/// counts only: no logarithm of an empirical share is ever taken, so zero counts are fine. The
/// score d/dalpha of the log-likelihood is bisected in log(alpha) over [kMinAlpha, kMaxAlpha].
AlphaFit fitSymmetricDirichletAlpha(const std::vector<std::vector<int64_t>> &counts);

/// DODOCO's architecture classes (docs/observatory.md, "Classification").
enum class RoutingClass { DataResilient, Intermediate, PersistentlyConcentrated, Unclassified };

constexpr double kResilientMaxGini = 0.16; ///< real-text Gini below this: data-resilient
constexpr double kConcentratedMinGini =
    0.24; ///< real-text Gini at or above this: persistently concentrated

/// Class from the mean real-text Gini (negative when there is no real-text condition).
RoutingClass classify(double realTextGini);
std::string toString(RoutingClass c);

} // namespace disagmoe::observatory
