// Max/mean, Gini, EP send matrix and Dirichlet alpha fit of expert counts (RoutingMetrics.h).
#include "compiler/observatory/metrics/RoutingMetrics.h"

#include <algorithm>
#include <cmath>

namespace disagmoe::observatory {

double maxOverMean(const std::vector<double> &x) {
  if (x.empty())
    return 0;
  double sum = 0, mx = 0;
  for (double v : x) {
    sum += v;
    mx = std::max(mx, v);
  }
  return sum > 0 ? mx / (sum / static_cast<double>(x.size())) : 0;
}

double gini(const std::vector<double> &x) {
  // With x sorted ascending and ranks i = 1..n, sum_i sum_j |x_i - x_j| = 2 sum_i (2i - n - 1)
  // x_(i), so G = sum_i (2i - n - 1) x_(i) / (n sum x): the same value as the pairwise formula, in
  // O(n log n).
  const size_t n = x.size();
  if (n == 0)
    return 0;
  std::vector<double> s(x);
  std::sort(s.begin(), s.end());
  double sum = 0, weighted = 0;
  for (size_t i = 0; i < n; ++i) {
    sum += s[i];
    weighted += (2.0 * static_cast<double>(i + 1) - static_cast<double>(n) - 1.0) * s[i];
  }
  return sum > 0 ? weighted / (static_cast<double>(n) * sum) : 0;
}

int expertRank(int64_t expert, int64_t experts, int ep) {
  return static_cast<int>(expert * ep / experts);
}

std::vector<double> SendMatrix::received() const {
  std::vector<double> r(ep, 0.0);
  for (int s = 0; s < ep; ++s)
    for (int d = 0; d < ep; ++d)
      r[d] += static_cast<double>(at(s, d));
  return r;
}

SendMatrix SendMatrix::fromRouting(const int64_t *topIds, int64_t sequences, int64_t seqLen,
                                   int64_t topK, int64_t experts, int ep, int64_t firstSequence) {
  SendMatrix m(ep);
  std::vector<int> rankOf(experts);
  for (int64_t e = 0; e < experts; ++e)
    rankOf[e] = expertRank(e, experts, ep);
  for (int64_t s = 0; s < sequences; ++s) {
    int64_t *row = m.counts.data() + static_cast<size_t>(sourceRank(firstSequence + s, ep)) * ep;
    const int64_t *ids = topIds + s * seqLen * topK;
    for (int64_t i = 0; i < seqLen * topK; ++i)
      ++row[rankOf[ids[i]]];
  }
  return m;
}

std::vector<int64_t> expertLoads(const int64_t *topIds, int64_t tokens, int64_t topK,
                                 int64_t experts) {
  std::vector<int64_t> c(experts, 0);
  for (int64_t i = 0; i < tokens * topK; ++i)
    ++c[topIds[i]];
  return c;
}

double digamma(double x) {
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  const double f = 1 / (x * x);
  // psi(x) ~ ln x - 1/(2x) - sum B_2n / (2n x^2n)
  const double series =
      f * (-1.0 / 12 +
           f * (1.0 / 120 +
                f * (-1.0 / 252 + f * (1.0 / 240 + f * (-1.0 / 132 + f * (691.0 / 32760))))));
  return result + std::log(x) - 0.5 / x + series;
}

double dirichletMultinomialLogLikelihood(const std::vector<std::vector<int64_t>> &counts,
                                         double alpha) {
  double ll = 0;
  for (const auto &row : counts) {
    const double k = static_cast<double>(row.size());
    double n = 0, terms = 0;
    for (int64_t c : row) {
      n += static_cast<double>(c);
      terms += std::lgamma(static_cast<double>(c) + alpha) - std::lgamma(alpha);
    }
    if (n == 0)
      continue;
    ll += std::lgamma(k * alpha) - std::lgamma(n + k * alpha) + terms;
  }
  return ll;
}

namespace {

// d/dalpha of the log-likelihood: sum_b [K psi(K a) - K psi(N_b + K a) + sum_e (psi(c_be + a) -
// psi(a))]. psi(c + a) - psi(a) is summed exactly as sum_{j<c} 1/(a + j) for small c, which keeps
// the score accurate near its root at large alpha.
double score(const std::vector<std::vector<int64_t>> &counts, const std::vector<int64_t> &totals,
             double a) {
  const double psiA = digamma(a);
  double d = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    if (totals[b] == 0)
      continue;
    const double k = static_cast<double>(counts[b].size());
    double sum = 0;
    for (int64_t c : counts[b]) {
      if (c == 0)
        continue;
      if (c <= 16) {
        for (int64_t j = 0; j < c; ++j)
          sum += 1 / (a + static_cast<double>(j));
      } else {
        sum += digamma(static_cast<double>(c) + a) - psiA;
      }
    }
    d += sum + k * (digamma(k * a) - digamma(static_cast<double>(totals[b]) + k * a));
  }
  return d;
}

} // namespace

AlphaFit fitSymmetricDirichletAlpha(const std::vector<std::vector<int64_t>> &counts) {
  AlphaFit fit;
  std::vector<int64_t> totals(counts.size(), 0);
  for (size_t b = 0; b < counts.size(); ++b) {
    for (int64_t c : counts[b])
      totals[b] += c;
    if (totals[b] > 0)
      ++fit.batches;
  }
  if (fit.batches == 0)
    return fit;
  double lo = std::log(kMinAlpha), hi = std::log(kMaxAlpha);
  if (score(counts, totals, kMaxAlpha) >= 0) {
    fit.alpha = kMaxAlpha;
    fit.atUpperBound = true;
  } else if (score(counts, totals, kMinAlpha) <= 0) {
    fit.alpha = kMinAlpha;
    fit.atLowerBound = true;
  } else {
    // The score falls through zero once between the bounds: bisect in log(alpha) to 1e-10 relative.
    for (int i = 0; i < 200 && hi - lo > 1e-10; ++i) {
      const double mid = 0.5 * (lo + hi);
      (score(counts, totals, std::exp(mid)) > 0 ? lo : hi) = mid;
    }
    fit.alpha = std::exp(0.5 * (lo + hi));
  }
  fit.logLikelihood = dirichletMultinomialLogLikelihood(counts, fit.alpha);
  return fit;
}

RoutingClass classify(double realTextGini) {
  if (realTextGini < 0)
    return RoutingClass::Unclassified;
  if (realTextGini < kResilientMaxGini)
    return RoutingClass::DataResilient;
  if (realTextGini >= kConcentratedMinGini)
    return RoutingClass::PersistentlyConcentrated;
  return RoutingClass::Intermediate;
}

std::string toString(RoutingClass c) {
  switch (c) {
  case RoutingClass::DataResilient:
    return "data-resilient";
  case RoutingClass::Intermediate:
    return "intermediate";
  case RoutingClass::PersistentlyConcentrated:
    return "persistently concentrated";
  case RoutingClass::Unclassified:
    return "unclassified";
  }
  return "unclassified";
}

} // namespace disagmoe::observatory
