// Observatory metrics against independent oracles: closed forms of the Gini coefficient, the
// pairwise definition, digamma identities, and Dirichlet-multinomial draws with a known alpha.
#include "compiler/observatory/metrics/RoutingMetrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace disagmoe::observatory;

namespace {

// The definition, O(n^2): G = sum_i sum_j |x_i - x_j| / (2 n^2 mean).
double giniPairwise(const std::vector<double> &x) {
  const double n = static_cast<double>(x.size());
  double sum = 0, diff = 0;
  for (double a : x) {
    sum += a;
    for (double b : x)
      diff += std::fabs(a - b);
  }
  return diff / (2 * n * n * (sum / n));
}

TEST(Gini, ClosedForms) {
  for (int n : {2, 4, 8, 32, 64}) {
    EXPECT_DOUBLE_EQ(gini(std::vector<double>(n, 7.0)), 0.0) << n;
    std::vector<double> oneHot(n, 0.0);
    oneHot[n / 2] = 3.0;
    EXPECT_NEAR(gini(oneHot), (n - 1.0) / n, 1e-12) << n;
    std::vector<double> ramp(n); // 1, 2, ..., n: G = (n - 1) / (3n)
    std::iota(ramp.begin(), ramp.end(), 1.0);
    std::reverse(ramp.begin(), ramp.end());
    EXPECT_NEAR(gini(ramp), (n - 1.0) / (3.0 * n), 1e-12) << n;
    for (int m = 1; m <= n; ++m) { // m ones and n - m zeros: G = (n - m) / n
      std::vector<double> twoPoint(n, 0.0);
      for (int i = 0; i < m; ++i)
        twoPoint[(i * 7) % n] = 1.0; // 7 is odd, so i -> 7i mod n is one-to-one for n a power of 2
      EXPECT_NEAR(gini(twoPoint), (n - m) / static_cast<double>(n), 1e-12) << n << " " << m;
    }
  }
  EXPECT_EQ(gini({}), 0.0);
  EXPECT_EQ(gini({0.0, 0.0, 0.0}), 0.0);
}

TEST(Gini, MatchesPairwiseDefinitionAndIsScaleAndOrderInvariant) {
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> draw(1.0);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> x(3 + trial % 40);
    for (double &v : x)
      v = draw(rng);
    const double g = gini(x);
    EXPECT_NEAR(g, giniPairwise(x), 1e-12);
    std::vector<double> scaled(x);
    for (double &v : scaled)
      v *= 123.0;
    EXPECT_NEAR(gini(scaled), g, 1e-12);
    std::shuffle(x.begin(), x.end(), rng);
    EXPECT_NEAR(gini(x), g, 1e-12);
  }
}

TEST(MaxOverMean, ClosedFormsAndRelabellingInvariance) {
  EXPECT_DOUBLE_EQ(maxOverMean({1, 1, 1, 5}), 2.5);
  EXPECT_DOUBLE_EQ(maxOverMean(std::vector<double>(8, 3.0)), 1.0);
  EXPECT_DOUBLE_EQ(maxOverMean({0, 0, 0, 4}), 4.0);
  EXPECT_EQ(maxOverMean({0, 0}), 0.0);

  // Relabelling experts (a permutation of ids applied to every routing decision) leaves max/mean of
  // the per-expert loads unchanged.
  std::mt19937_64 rng(11);
  const int64_t experts = 32, tokens = 5000, k = 4;
  std::vector<double> skew(experts);
  for (int64_t e = 0; e < experts; ++e)
    skew[e] = std::pow(0.85, static_cast<double>(e));
  std::discrete_distribution<int64_t> pick(skew.begin(), skew.end());
  std::vector<int64_t> ids(tokens * k);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j) {
      int64_t e;
      do {
        e = pick(rng);
      } while (std::find(ids.begin() + t * k, ids.begin() + t * k + j, e) !=
               ids.begin() + t * k + j);
      ids[t * k + j] = e;
    }
  const auto toDouble = [](const std::vector<int64_t> &c) {
    return std::vector<double>(c.begin(), c.end());
  };
  const double base = maxOverMean(toDouble(expertLoads(ids.data(), tokens, k, experts)));
  EXPECT_GT(base, 1.5);
  for (int trial = 0; trial < 10; ++trial) {
    std::vector<int64_t> perm(experts);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int64_t> relabelled(ids.size());
    for (size_t i = 0; i < ids.size(); ++i)
      relabelled[i] = perm[ids[i]];
    EXPECT_DOUBLE_EQ(maxOverMean(toDouble(expertLoads(relabelled.data(), tokens, k, experts))),
                     base);
  }
}

TEST(SendMatrix, CountsEveryAssignmentOnceBySourceAndExpertRank) {
  // 4 sequences of 3 tokens, top-2 over 8 experts, EP 2: experts 0-3 on rank 0, 4-7 on rank 1;
  // sequences 0 and 2 on rank 0, 1 and 3 on rank 1.
  const std::vector<int64_t> ids = {0, 4, 1, 2, 7, 6,  // seq 0: 0,4 | 1,2 | 7,6
                                    3, 5, 5, 6, 0, 1,  // seq 1
                                    4, 5, 6, 7, 4, 7,  // seq 2
                                    0, 1, 2, 3, 3, 2}; // seq 3
  const SendMatrix m = SendMatrix::fromRouting(ids.data(), 4, 3, 2, 8, 2);
  EXPECT_EQ(m.at(0, 0), 3); // seq 0: 0,1,2; seq 2: none
  EXPECT_EQ(m.at(0, 1), 9); // seq 0: 4,7,6; seq 2: all six
  EXPECT_EQ(m.at(1, 0), 9); // seq 1: 3,0,1; seq 3: all six
  EXPECT_EQ(m.at(1, 1), 3); // seq 1: 5,5,6
  EXPECT_EQ(m.received(), (std::vector<double>{12, 12}));
  // EP = experts: S's column sums are the per-expert loads.
  const SendMatrix full = SendMatrix::fromRouting(ids.data(), 4, 3, 2, 8, 8);
  const auto loads = expertLoads(ids.data(), 12, 2, 8);
  for (int e = 0; e < 8; ++e)
    EXPECT_EQ(full.received()[e], static_cast<double>(loads[e]));
  // A later batch: sequence numbering continues, so its first sequence lands on rank 1 when odd.
  const SendMatrix shifted = SendMatrix::fromRouting(ids.data(), 4, 3, 2, 8, 2, 1);
  EXPECT_EQ(shifted.at(1, 1), 9); // seqs 0 and 2 now on rank 1: 3 + 6
  EXPECT_EQ(shifted.at(0, 1), 3); // seqs 1 and 3 on rank 0: 5,5,6
  EXPECT_EQ(expertRank(5, 8, 4), 2);
  EXPECT_EQ(expertRank(63, 64, 32), 31);
}

TEST(Digamma, Identities) {
  const double gamma = 0.57721566490153286;
  EXPECT_NEAR(digamma(1.0), -gamma, 1e-13);
  EXPECT_NEAR(digamma(0.5), -gamma - 2 * std::log(2.0), 1e-13);
  double harmonic = 0;
  for (int n = 1; n <= 100; ++n) {
    harmonic += 1.0 / n;
    EXPECT_NEAR(digamma(n + 1.0), harmonic - gamma, 1e-12) << n;
  }
  for (double x : {1e-4, 0.1, 2.5, 30.0, 1e5}) // psi(x + 1) = psi(x) + 1/x
    EXPECT_NEAR(digamma(x + 1), digamma(x) + 1 / x, 1e-9 * std::max(1.0, 1 / x)) << x;
}

// Per-batch expert counts drawn from a Dirichlet-multinomial with a known symmetric alpha:
// p ~ Dirichlet(alpha * 1_K) by normalised Gamma(alpha, 1) draws, then N categorical draws from p.
std::vector<std::vector<int64_t>> drawDirichletMultinomial(double alpha, int experts, int batches,
                                                           int perBatch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gammaDraw(alpha, 1.0);
  std::vector<std::vector<int64_t>> counts(batches, std::vector<int64_t>(experts, 0));
  std::vector<double> p(experts);
  for (auto &row : counts) {
    double sum = 0;
    do {
      sum = 0;
      for (double &v : p)
        sum += (v = gammaDraw(rng));
    } while (sum <= 0);
    std::discrete_distribution<int> pick(p.begin(), p.end());
    for (int i = 0; i < perBatch; ++i)
      ++row[pick(rng)];
  }
  return counts;
}

TEST(DirichletAlpha, RecoversKnownAlphaWithinFivePercent) {
  // 16 experts, 2000 batches of 400 assignments: many zero counts at alpha = 0.1.
  for (double alpha : {0.1, 1.0, 10.0}) {
    const auto counts = drawDirichletMultinomial(alpha, 16, 2000, 400, 20260529);
    int zeros = 0;
    for (const auto &row : counts)
      zeros += static_cast<int>(std::count(row.begin(), row.end(), 0));
    const AlphaFit fit = fitSymmetricDirichletAlpha(counts);
    std::printf("[ alpha    ] true %-5g fitted %.4f (%.2f%%), %d zero counts\n", alpha, fit.alpha,
                100 * (fit.alpha / alpha - 1), zeros);
    EXPECT_FALSE(fit.atUpperBound || fit.atLowerBound);
    EXPECT_NEAR(fit.alpha / alpha, 1.0, 0.05) << alpha;
    if (alpha == 0.1)
      EXPECT_GT(zeros, 10000);
    // The fit is a maximum: nearby alphas have lower likelihood.
    EXPECT_GT(fit.logLikelihood, dirichletMultinomialLogLikelihood(counts, fit.alpha * 1.02));
    EXPECT_GT(fit.logLikelihood, dirichletMultinomialLogLikelihood(counts, fit.alpha / 1.02));
  }
}

TEST(DirichletAlpha, UnderdispersedCountsHitTheUpperBoundAndEmptyBatchesAreSkipped) {
  // Exactly balanced batches are less dispersed than any multinomial: alpha -> infinity.
  std::vector<std::vector<int64_t>> balanced(50, std::vector<int64_t>(8, 25));
  balanced.push_back(std::vector<int64_t>(8, 0));
  const AlphaFit fit = fitSymmetricDirichletAlpha(balanced);
  EXPECT_TRUE(fit.atUpperBound);
  EXPECT_EQ(fit.batches, 50);
  // Every batch on one expert: alpha -> 0.
  std::vector<std::vector<int64_t>> collapsed(20, std::vector<int64_t>(8, 0));
  for (size_t b = 0; b < collapsed.size(); ++b)
    collapsed[b][b % 8] = 100;
  EXPECT_TRUE(fitSymmetricDirichletAlpha(collapsed).atLowerBound);
}

TEST(Classify, DocumentedThresholds) {
  EXPECT_EQ(classify(0.105), RoutingClass::DataResilient); // DODOCO: MHA on wikitext
  EXPECT_EQ(classify(0.150), RoutingClass::DataResilient); // Mamba-2
  EXPECT_EQ(classify(0.20), RoutingClass::Intermediate);
  EXPECT_EQ(classify(0.24), RoutingClass::PersistentlyConcentrated);
  EXPECT_EQ(classify(0.38), RoutingClass::PersistentlyConcentrated);
  EXPECT_EQ(classify(-1), RoutingClass::Unclassified);
  EXPECT_EQ(toString(RoutingClass::PersistentlyConcentrated), "persistently concentrated");
}

} // namespace
