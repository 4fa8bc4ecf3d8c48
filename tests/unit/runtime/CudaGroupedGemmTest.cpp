// The grouped expert GEMM's descriptors (runtime/backends/cuda/GroupedGemm.h), tested on every
// machine (no nvcc, no GPU). The oracle is independent of how the descriptors were derived: it
// executes them the way cuBLAS documents cublasGemmGroupedBatchedEx (a loop over the groups and
// their problems, each a column-major GEMM through the pointer arrays), and compares with a direct
// row-major per-expert matmul Y_e = alpha * X_e W_e + beta * Y_e of the same data. The data are
// small integers, so every product and sum is exact in double and the two must agree exactly.
#include "runtime/backends/cuda/DispatchPlan.h"
#include "runtime/backends/cuda/GroupedGemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace disagmoe::cuda;

namespace {

// cublasGemmGroupedBatchedEx as the cuBLAS documentation defines it, on the host in double:
//   idx = 0; for each group i, for each of its group_size[i] problems:
//     C[idx] = alpha[i] op(A[idx]) op(B[idx]) + beta[i] C[idx]   (m[i] x n[i], inner k[i]); ++idx
// with column-major storage: element (r, c) of a stored matrix M of leading dimension ld is
// M[r + c * ld], and op(M)(r, c) = M(c, r) when transposed. As in BLAS, C is not read when beta
// is 0. Aarray/Barray/Carray are the problems' offsets from the W, X and Y bases, in problem
// order. `writes` counts the stores to each element of Y (the C matrices must not overlap).
void executeAsCublasDocuments(const GroupedExpertGemm &g, const std::vector<double> &w,
                              const std::vector<double> &x, std::vector<double> &y,
                              std::vector<int> &writes) {
  size_t idx = 0;
  for (const GemmGroup &grp : g.groups)
    for (int j = 0; j < grp.size; ++j, ++idx) {
      ASSERT_LT(idx, g.problems.size());
      const GemmProblem &p = g.problems[idx];
      const double *a = w.data() + p.aOffset;
      const double *b = x.data() + p.bOffset;
      double *c = y.data() + p.cOffset;
      // Every element the problem touches lies inside the buffers.
      const int64_t aCols = grp.transA ? grp.m : grp.k, bCols = grp.transB ? grp.k : grp.n;
      ASSERT_LE(p.aOffset + (aCols - 1) * grp.lda + (grp.transA ? grp.k : grp.m),
                static_cast<int64_t>(w.size()));
      ASSERT_LE(p.bOffset + (bCols - 1) * grp.ldb + (grp.transB ? grp.n : grp.k),
                static_cast<int64_t>(x.size()));
      ASSERT_LE(p.cOffset + static_cast<int64_t>(grp.n - 1) * grp.ldc + grp.m,
                static_cast<int64_t>(y.size()));
      for (int r = 0; r < grp.m; ++r)
        for (int col = 0; col < grp.n; ++col) {
          double sum = 0;
          for (int l = 0; l < grp.k; ++l) {
            const double av = grp.transA ? a[l + static_cast<int64_t>(r) * grp.lda]
                                         : a[r + static_cast<int64_t>(l) * grp.lda];
            const double bv = grp.transB ? b[col + static_cast<int64_t>(l) * grp.ldb]
                                         : b[l + static_cast<int64_t>(col) * grp.ldb];
            sum += av * bv;
          }
          double &out = c[r + static_cast<int64_t>(col) * grp.ldc];
          out = grp.beta == 0.0f ? grp.alpha * sum : grp.alpha * sum + grp.beta * out;
          ++writes[static_cast<size_t>(&out - y.data())];
        }
    }
  EXPECT_EQ(idx, g.problems.size()) << "group sizes must add up to the problem count";
}

// The direct row-major product: expert e's rows [first, first + counts[e]) of X [rows, in] times
// W_e ([in, out] or [out, in] at e * in * out), into the same rows of Y [rows, out].
std::vector<double> directPerExpert(const std::vector<int64_t> &counts, int64_t in, int64_t out,
                                    ExpertWeightLayout layout, const std::vector<double> &w,
                                    const std::vector<double> &x, const std::vector<double> &y0,
                                    double alpha, double beta) {
  std::vector<double> y = y0;
  int64_t first = 0;
  for (size_t e = 0; e < counts.size(); ++e) {
    const double *we = w.data() + static_cast<int64_t>(e) * in * out;
    for (int64_t row = first; row < first + counts[e]; ++row)
      for (int64_t c = 0; c < out; ++c) {
        double sum = 0;
        for (int64_t l = 0; l < in; ++l)
          sum += x[row * in + l] *
                 (layout == ExpertWeightLayout::InOut ? we[l * out + c] : we[c * in + l]);
        y[row * out + c] = beta == 0 ? alpha * sum : alpha * sum + beta * y0[row * out + c];
      }
    first += counts[e];
  }
  return y;
}

std::vector<double> randomIntegers(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-4, 4);
  std::vector<double> v(n);
  for (double &d : v)
    d = dist(rng);
  return v;
}

std::string messageOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const GroupedGemmError &e) {
    return e.what();
  } catch (const std::exception &e) {
    return std::string("(not a GroupedGemmError) ") + e.what();
  }
  return "(no exception)";
}

} // namespace

TEST(CudaGroupedGemm, DescriptorsOfUnevenCountsSkipEmptyExpertsAndGroupEqualCounts) {
  // Experts 0 and 3 have 3 tokens each (one group of 2 problems), expert 2 has 5, 1 has none.
  const GroupedExpertGemm g =
      planGroupedExpertGemm({3, 0, 5, 3}, 11, /*in=*/4, /*out=*/6, ExpertWeightLayout::InOut);
  ASSERT_EQ(g.groupCount(), 2);
  ASSERT_EQ(g.problemCount(), 3);
  for (const GemmGroup &grp : g.groups) {
    EXPECT_FALSE(grp.transA); // W_e [in, out] row-major is W_e^T [out, in] column-major
    EXPECT_FALSE(grp.transB);
    EXPECT_EQ(grp.m, 6);
    EXPECT_EQ(grp.k, 4);
    EXPECT_EQ(grp.lda, 6);
    EXPECT_EQ(grp.ldb, 4);
    EXPECT_EQ(grp.ldc, 6);
    EXPECT_EQ(grp.alpha, 1.0f);
    EXPECT_EQ(grp.beta, 0.0f);
  }
  EXPECT_EQ(g.groups[0].n, 3);
  EXPECT_EQ(g.groups[0].size, 2);
  EXPECT_EQ(g.groups[1].n, 5);
  EXPECT_EQ(g.groups[1].size, 1);
  // Group 0: experts 0 (rows 0..2) and 3 (rows 8..10); group 1: expert 2 (rows 3..7).
  const int64_t expert[] = {0, 3, 2}, aOffset[] = {0, 72, 48}, bOffset[] = {0, 32, 12},
                cOffset[] = {0, 48, 18};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(g.problems[i].expert, expert[i]) << i;
    EXPECT_EQ(g.problems[i].aOffset, aOffset[i]) << i;
    EXPECT_EQ(g.problems[i].bOffset, bOffset[i]) << i;
    EXPECT_EQ(g.problems[i].cOffset, cOffset[i]) << i;
  }
  // [out, in] weights: op(A) = A^T of the column-major [in, out] view, lda = in.
  const GroupedExpertGemm t =
      planGroupedExpertGemm({3, 0, 5, 3}, 11, 4, 6, ExpertWeightLayout::OutIn);
  for (const GemmGroup &grp : t.groups) {
    EXPECT_TRUE(grp.transA);
    EXPECT_EQ(grp.lda, 4);
  }
  EXPECT_EQ(t.xElements(), 44);
  EXPECT_EQ(t.wElements(), 96);
  EXPECT_EQ(t.yElements(), 66);
}

TEST(CudaGroupedGemm, ExecutedAsCublasDocumentsItEqualsTheDirectPerExpertProduct) {
  struct Case {
    std::vector<int64_t> counts;
    int64_t in, out;
    float alpha, beta;
  };
  const std::vector<Case> cases = {
      {{3, 0, 5, 3}, 4, 6, 1.0f, 0.0f},
      {{1, 17, 0, 64, 9, 0, 0, 2}, 33, 20, 1.0f, 0.0f}, // uneven, zero-token experts
      {{0, 0, 7}, 8, 8, 1.0f, 0.0f},                    // only the last expert has tokens
      {{2, 2, 2, 2}, 5, 3, 1.0f, 0.0f},                 // one group of four problems
      {{12}, 16, 24, 1.0f, 0.0f},                       // a single expert
      {{4, 0, 9, 1}, 6, 10, 0.5f, 2.0f},                // alpha, beta: Y = 0.5 X W + 2 Y
      {{0, 0}, 3, 5, 1.0f, 0.0f},                       // no tokens: no problem at all
  };
  unsigned seed = 1;
  for (const Case &tc : cases)
    for (ExpertWeightLayout layout : {ExpertWeightLayout::InOut, ExpertWeightLayout::OutIn}) {
      const int64_t rows = std::accumulate(tc.counts.begin(), tc.counts.end(), int64_t{0});
      const GroupedExpertGemm g =
          planGroupedExpertGemm(tc.counts, rows, tc.in, tc.out, layout, tc.alpha, tc.beta);
      const std::vector<double> w = randomIntegers(g.wElements(), seed++),
                                x = randomIntegers(g.xElements(), seed++);
      // beta == 0: Y starts as NaN, which must never be read and must be overwritten everywhere.
      std::vector<double> y0 =
          tc.beta == 0.0f
              ? std::vector<double>(g.yElements(), std::numeric_limits<double>::quiet_NaN())
              : randomIntegers(g.yElements(), seed++);
      std::vector<double> y = y0;
      std::vector<int> writes(y.size(), 0);
      executeAsCublasDocuments(g, w, x, y, writes);
      const std::vector<double> expected =
          directPerExpert(tc.counts, tc.in, tc.out, layout, w, x, y0, tc.alpha, tc.beta);
      const std::string what = "case in=" + std::to_string(tc.in) +
                               " out=" + std::to_string(tc.out) + " layout " +
                               (layout == ExpertWeightLayout::InOut ? "InOut" : "OutIn");
      int nonzero = 0;
      for (int64_t c : tc.counts)
        nonzero += c > 0;
      EXPECT_EQ(g.problemCount(), nonzero) << what;
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_EQ(writes[i], 1) << what << ": Y element " << i << " written " << writes[i]
                                << " times";
        ASSERT_EQ(y[i], expected[i]) << what << ": Y[" << i / tc.out << "," << i % tc.out << "]";
      }
    }
}

TEST(CudaGroupedGemm, ADispatchPlansCountsAndOffsetsAreTheProblemsRows) {
  // 10 tokens, top-2 over 5 local experts (id -1: an expert on another rank).
  const int64_t tokens = 10, k = 2, experts = 5, in = 8, out = 16;
  std::mt19937 rng(3);
  std::vector<int64_t> ids(tokens * k);
  std::vector<float> gates(tokens * k, 0.5f);
  for (int64_t t = 0; t < tokens; ++t) {
    ids[t * k] = static_cast<int64_t>(rng() % 3); // experts 0..2
    ids[t * k + 1] = t % 4 == 0 ? -1 : 3;         // expert 3 or remote; expert 4 gets nothing
  }
  const DispatchPlan dispatch = planDispatch(ids.data(), gates.data(), tokens, k, experts);
  const GroupedExpertGemm g = planGroupedExpertGemm(dispatch, in, out, ExpertWeightLayout::InOut);
  EXPECT_EQ(g.rows, dispatch.rows());
  EXPECT_EQ(g.numExperts, experts);
  int64_t covered = 0;
  for (const GemmProblem &p : g.problems) {
    const size_t e = static_cast<size_t>(p.expert);
    EXPECT_GT(dispatch.counts[e], 0);
    EXPECT_EQ(p.bOffset, dispatch.offsets[e] * in) << "expert " << e;
    EXPECT_EQ(p.cOffset, dispatch.offsets[e] * out) << "expert " << e;
    EXPECT_EQ(g.groups[static_cast<size_t>(p.group)].n, dispatch.counts[e]) << "expert " << e;
    covered += dispatch.counts[e];
  }
  EXPECT_EQ(covered, dispatch.rows());
  for (const GemmProblem &p : g.problems)
    EXPECT_NE(p.expert, 4);
}

TEST(CudaGroupedGemm, RefusesBadCountsAndSizesInOneLine) {
  const auto plan = [](std::vector<int64_t> counts, int64_t rows, int64_t in, int64_t out) {
    return [=] { planGroupedExpertGemm(counts, rows, in, out, ExpertWeightLayout::InOut); };
  };
  EXPECT_EQ(messageOf(plan({2, -1}, 1, 4, 4)),
            "grouped GEMM: counts[1] = -1 (token counts must be >= 0)");
  EXPECT_EQ(messageOf(plan({2, 3}, 6, 4, 4)),
            "grouped GEMM: the counts of 2 experts add up to 5 rows, the activation has 6");
  EXPECT_EQ(messageOf(plan({2}, 2, 0, 4)),
            "grouped GEMM: in = 0 (the activation's width must be >= 1)");
  EXPECT_EQ(messageOf(plan({2}, 2, 4, -3)),
            "grouped GEMM: out = -3 (the output's width must be >= 1)");
  EXPECT_EQ(messageOf(plan({}, -1, 4, 4)), "grouped GEMM: rows = -1 (must be >= 0)");
  EXPECT_EQ(messageOf(plan({2}, 2, 4, int64_t{1} << 31)),
            "grouped GEMM: out = 2147483648 exceeds 2147483647 (cuBLAS takes int dimensions)");
  EXPECT_EQ(messageOf(plan({0, int64_t{1} << 31}, int64_t{1} << 31, 4, 4)),
            "grouped GEMM: counts[1] = 2147483648 exceeds 2147483647 (cuBLAS takes int "
            "dimensions)");
  // Nothing to do is not an error.
  EXPECT_EQ(planGroupedExpertGemm({}, 0, 4, 4, ExpertWeightLayout::InOut).problemCount(), 0);
}

TEST(CudaGroupedGemm, PointerAlignmentFollowsTheDocumentedRule) {
  EXPECT_EQ(requiredPointerAlignment(8, 2), 16); // k * 2 bytes = 16
  EXPECT_EQ(requiredPointerAlignment(4096, 2), 16);
  EXPECT_EQ(requiredPointerAlignment(6, 2), 4); // 12 bytes
  EXPECT_EQ(requiredPointerAlignment(3, 2), 2); // 6 bytes: neither rule applies
  EXPECT_EQ(requiredPointerAlignment(3, 4), 4);
  const uintptr_t base = 0x10000; // cudaMalloc returns 256-byte aligned memory
  // in = 8 (16 bytes a row), out = 8: every matrix starts on a 16-byte boundary.
  const GroupedExpertGemm ok = planGroupedExpertGemm({1, 3, 2}, 6, 8, 8, ExpertWeightLayout::InOut);
  EXPECT_NO_THROW(checkPointerAlignment(ok, base, base, base, 2));
  EXPECT_EQ(messageOf([&] { checkPointerAlignment(ok, base, base + 2, base, 2); }),
            "grouped GEMM: X of expert 0 starts 2 bytes past a 16-byte boundary (cuBLAS asks "
            "16-byte aligned pointers when k * 2 bytes = 16 is a multiple of 16)");
  // out = 6: expert 1's rows of Y start 1 * 6 * 2 = 12 bytes into Y.
  const GroupedExpertGemm odd = planGroupedExpertGemm({1, 3}, 4, 8, 6, ExpertWeightLayout::InOut);
  EXPECT_EQ(messageOf([&] { checkPointerAlignment(odd, base, base, base, 2); }),
            "grouped GEMM: Y of expert 1 starts 12 bytes past a 16-byte boundary (cuBLAS asks "
            "16-byte aligned pointers when k * 2 bytes = 16 is a multiple of 16)");
}
