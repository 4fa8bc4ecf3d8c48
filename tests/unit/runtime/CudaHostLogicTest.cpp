// Host logic of the cuda backend, tested on every machine (no nvcc, no GPU needed): the row-major
// to column-major GEMM mapping against the definition of a GEMM, launch geometry and argument
// checks, the expert permutation's plan against a brute-force construction, and bf16 rounding
// against hand-computed bit patterns.
#include "runtime/backends/cuda/Bf16.h"
#include "runtime/backends/cuda/DeviceProbe.h"
#include "runtime/backends/cuda/DispatchPlan.h"
#include "runtime/backends/cuda/GemmMapping.h"
#include "runtime/backends/cuda/LaunchGeometry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace disagmoe::cuda;

namespace {

// cuBLAS's column-major GEMM by its definition: C(i, j) = sum_l op(A)(i, l) op(B)(l, j), element
// (r, c) of a stored column-major X at X[r + c * ld], op(X)(i, l) = X(l, i) when transposed.
void columnMajorReference(const ColumnMajorGemm &c, const double *a, const double *b, double *out) {
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j) {
      double sum = 0;
      for (int l = 0; l < c.k; ++l) {
        const double x = c.transA ? a[l + static_cast<int64_t>(i) * c.lda]
                                  : a[i + static_cast<int64_t>(l) * c.lda];
        const double y = c.transB ? b[j + static_cast<int64_t>(l) * c.ldb]
                                  : b[l + static_cast<int64_t>(j) * c.ldb];
        sum += x * y;
      }
      out[i + static_cast<int64_t>(j) * c.ldc] = sum;
    }
}

std::string messageOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "(no exception)";
}

} // namespace

TEST(CudaGemmMapping, ColumnMajorCallComputesTheRowMajorProduct) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  struct Case {
    int64_t m, n, k;
    bool ta, tb;
    int64_t padA, padB, padC;
  };
  const Case cases[] = {{3, 5, 4, false, false, 0, 0, 0}, {3, 5, 4, true, false, 2, 0, 1},
                        {3, 5, 4, false, true, 0, 3, 0},  {3, 5, 4, true, true, 1, 1, 2},
                        {1, 7, 1, false, false, 0, 0, 0}, {6, 1, 9, true, true, 0, 0, 3}};
  for (const Case &tc : cases) {
    RowMajorGemm g = denseRowMajor(tc.m, tc.n, tc.k, tc.ta, tc.tb);
    g.lda += tc.padA, g.ldb += tc.padB, g.ldc += tc.padC;
    const int64_t rowsA = tc.ta ? tc.k : tc.m, rowsB = tc.tb ? tc.n : tc.k;
    std::vector<double> a(rowsA * g.lda), b(rowsB * g.ldb), c(tc.m * g.ldc, -7.0);
    for (double &x : a)
      x = dist(rng);
    for (double &x : b)
      x = dist(rng);
    columnMajorReference(toColumnMajor(g), b.data(), a.data(), c.data()); // operands swapped
    for (int64_t i = 0; i < tc.m; ++i)
      for (int64_t j = 0; j < tc.n; ++j) {
        double expected = 0; // the row-major definition
        for (int64_t l = 0; l < tc.k; ++l)
          expected += (tc.ta ? a[l * g.lda + i] : a[i * g.lda + l]) *
                      (tc.tb ? b[j * g.ldb + l] : b[l * g.ldb + j]);
        EXPECT_NEAR(c[i * g.ldc + j], expected, 1e-12)
            << "m=" << tc.m << " n=" << tc.n << " k=" << tc.k << " transA=" << tc.ta
            << " transB=" << tc.tb;
      }
    for (int64_t i = 0; i < tc.m; ++i) // padding of C untouched
      for (int64_t j = tc.n; j < g.ldc; ++j)
        EXPECT_EQ(c[i * g.ldc + j], -7.0);
  }
}

TEST(CudaGemmMapping, SwapsOperandsAndDimensions) {
  const ColumnMajorGemm c = toColumnMajor(denseRowMajor(2, 3, 4, true, false));
  EXPECT_EQ(c.m, 3);
  EXPECT_EQ(c.n, 2);
  EXPECT_EQ(c.k, 4);
  EXPECT_FALSE(c.transA); // row-major B untransposed
  EXPECT_TRUE(c.transB);  // row-major A transposed
  EXPECT_EQ(c.lda, 3);    // ldb of B [4, 3]
  EXPECT_EQ(c.ldb, 2);    // lda of A stored [4, 2]
  EXPECT_EQ(c.ldc, 3);
}

TEST(CudaGemmMapping, RejectsBadShapesNamingTheField) {
  RowMajorGemm g = denseRowMajor(4, 5, 6);
  g.lda = 5; // A [4, 6] needs lda >= 6
  EXPECT_NE(messageOf([&] { toColumnMajor(g); }).find("lda = 5"), std::string::npos);
  g = denseRowMajor(4, 5, 6, false, true);
  g.ldb = 5; // B stored [5, 6]
  EXPECT_NE(messageOf([&] { toColumnMajor(g); }).find("ldb = 5"), std::string::npos);
  g = denseRowMajor(4, 5, 6);
  g.ldc = 4;
  EXPECT_NE(messageOf([&] { toColumnMajor(g); }).find("ldc = 4"), std::string::npos);
  EXPECT_THROW(toColumnMajor(denseRowMajor(-1, 5, 6)), GemmShapeError);
  EXPECT_NE(messageOf([] {
              toColumnMajor(denseRowMajor(int64_t{INT_MAX} + 1, 1, 1));
            }).find("m = 2147483648"),
            std::string::npos);
  EXPECT_NO_THROW(toColumnMajor(denseRowMajor(0, 0, 0)));
}

TEST(CudaLaunchGeometry, RowBlocksAndGrids) {
  EXPECT_EQ(rowBlockSize(1), 32);
  EXPECT_EQ(rowBlockSize(33), 64);
  EXPECT_EQ(rowBlockSize(1024), 1024);
  EXPECT_EQ(rowBlockSize(5000), 1024);
  EXPECT_THROW(rowBlockSize(0), KernelArgumentError);
  EXPECT_EQ(blocksFor(0, 256), 0);
  EXPECT_EQ(blocksFor(256, 256), 1);
  EXPECT_EQ(blocksFor(257, 256), 2);
  EXPECT_THROW(blocksFor(int64_t{1} << 45, 256), KernelArgumentError);
  EXPECT_THROW(blocksFor(10, 0), KernelArgumentError);
  EXPECT_THROW(checkRows("softmax", -1, 4), KernelArgumentError);
  EXPECT_NE(messageOf([] { checkRows("softmax", 3, 0); }).find("softmax: cols = 0"),
            std::string::npos);
}

TEST(CudaLaunchGeometry, ChecksRopeAndTopK) {
  EXPECT_NE(messageOf([] { checkRope(4, 2, 7, 1e4); }).find("rope: headDim = 7"),
            std::string::npos);
  EXPECT_THROW(checkRope(4, 0, 8, 1e4), KernelArgumentError);
  EXPECT_THROW(checkRope(4, 2, 8, 0.0), KernelArgumentError);
  EXPECT_NO_THROW(checkRope(0, 2, 8, 1e4));
  EXPECT_NE(messageOf([] { checkTopK(3, 8, 9); }).find("topK: k = 9 (must be in [1, n = 8])"),
            std::string::npos);
  EXPECT_THROW(checkTopK(3, 8, 0), KernelArgumentError);
  EXPECT_NO_THROW(checkTopK(0, 8, 8));
}

TEST(CudaLaunchGeometry, ChecksAttentionShapes) {
  AttentionShape s;
  s.batch = 2, s.seqLen = 300, s.heads = 8, s.kvHeads = 2, s.qkDim = 128, s.vDim = 128;
  EXPECT_NO_THROW(checkAttention(s));
  EXPECT_EQ(attentionSharedBytes(s), (128 + kAttentionKeyTile) * 4);
  AttentionShape bad = s;
  bad.kvHeads = 3;
  EXPECT_NE(
      messageOf([&] { checkAttention(bad); }).find("heads = 8 (must be a multiple of kvHeads = 3)"),
      std::string::npos);
  bad = s;
  bad.vDim = kAttentionMaxVDim + 1;
  EXPECT_NE(messageOf([&] { checkAttention(bad); }).find("vDim = 513"), std::string::npos);
  bad = s;
  bad.qkDim = 12 * 1024; // 48 KiB of query row alone
  EXPECT_NE(messageOf([&] { checkAttention(bad); }).find("48 KiB"), std::string::npos);
  bad = s;
  bad.window = -1;
  EXPECT_THROW(checkAttention(bad), KernelArgumentError);
  bad = s;
  bad.heads = 70000, bad.kvHeads = 1;
  EXPECT_THROW(checkAttention(bad), KernelArgumentError);
}

// Brute force: experts ascending, then tokens ascending, each route one row.
TEST(CudaDispatchPlan, MatchesABruteForcePermutationAndCombineOrder) {
  const int64_t tokens = 37, k = 3, experts = 8;
  std::mt19937 rng(11);
  std::vector<int64_t> ids(tokens * k);
  std::vector<float> gates(tokens * k);
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<int64_t> pool(experts);
    for (int64_t e = 0; e < experts; ++e)
      pool[e] = e;
    std::shuffle(pool.begin(), pool.end(), rng);
    for (int64_t j = 0; j < k; ++j) {
      ids[t * k + j] = (rng() % 4 == 0) ? -1 : pool[j]; // about a quarter on other ranks
      gates[t * k + j] = static_cast<float>(rng() % 1000) / 1000.0f;
    }
  }
  const DispatchPlan plan = planDispatch(ids.data(), gates.data(), tokens, k, experts);
  std::vector<int32_t> expectedSource;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> rowsOfToken(tokens); // (expert, row)
  for (int64_t e = 0; e < experts; ++e) {
    int64_t count = 0;
    EXPECT_EQ(plan.offsets[e], static_cast<int64_t>(expectedSource.size()));
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t j = 0; j < k; ++j)
        if (ids[t * k + j] == e) {
          rowsOfToken[t].push_back({e, static_cast<int64_t>(expectedSource.size())});
          expectedSource.push_back(static_cast<int32_t>(t));
          ++count;
        }
    EXPECT_EQ(plan.counts[e], count) << "expert " << e;
  }
  EXPECT_EQ(plan.offsets[experts], static_cast<int64_t>(expectedSource.size()));
  EXPECT_EQ(plan.sourceRow, expectedSource);
  ASSERT_EQ(plan.combineStart.size(), static_cast<size_t>(tokens + 1));
  for (int64_t t = 0; t < tokens; ++t) {
    ASSERT_EQ(plan.combineStart[t + 1] - plan.combineStart[t],
              static_cast<int32_t>(rowsOfToken[t].size()));
    for (size_t i = 0; i < rowsOfToken[t].size();
         ++i) { // ascending expert id (pushed in that order)
      const int32_t r = plan.combineStart[t] + static_cast<int32_t>(i);
      EXPECT_EQ(plan.combineRow[r], rowsOfToken[t][i].second);
      float gate = -1;
      for (int64_t j = 0; j < k; ++j)
        if (ids[t * k + j] == rowsOfToken[t][i].first)
          gate = gates[t * k + j];
      EXPECT_EQ(plan.combineGate[r], gate);
    }
  }
}

TEST(CudaDispatchPlan, RejectsBadRoutesNamingTokenAndSlot) {
  const std::vector<int64_t> outside = {0, 1, 2, 8};
  const std::vector<float> gates(4, 0.5f);
  EXPECT_NE(messageOf([&] {
              planDispatch(outside.data(), gates.data(), 2, 2, 8);
            }).find("token 1 slot 1 names expert 8, outside [0, 8)"),
            std::string::npos);
  const std::vector<int64_t> twice = {3, 3};
  EXPECT_NE(messageOf([&] {
              planDispatch(twice.data(), gates.data(), 1, 2, 8);
            }).find("token 0 names expert 3 twice"),
            std::string::npos);
  EXPECT_THROW(planDispatch(twice.data(), gates.data(), -1, 2, 8), DispatchError);
  const DispatchPlan empty = planDispatch(nullptr, nullptr, 0, 2, 4);
  EXPECT_EQ(empty.rows(), 0);
  EXPECT_EQ(empty.offsets, std::vector<int64_t>(5, 0));
  EXPECT_EQ(empty.combineStart, std::vector<int32_t>(1, 0));
}

TEST(CudaBf16, RoundsToNearestEven) {
  EXPECT_EQ(toBf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(toBf16Bits(-2.0f), 0xc000);
  EXPECT_EQ(toBf16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);     // halfway, even below
  EXPECT_EQ(toBf16Bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82); // halfway, even above
  EXPECT_EQ(toBf16Bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)),
            0x3f81); // above halfway
  EXPECT_EQ(toBf16Bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(toBf16Bits(std::numeric_limits<float>::max()), 0x7f80); // rounds up to infinity
  EXPECT_TRUE(std::isnan(roundToBf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(roundToBf16(3.140625f), 3.140625f); // exactly representable: 1.1001001b * 2
}

// disagmoe-run --backend cuda names cudaGetDeviceCount's answer (DeviceProbe.h).
TEST(CudaDeviceProbe, NoDeviceReasonNamesTheErrorOrTheZeroCount) {
  EXPECT_EQ(noDeviceReason({0, "cudaErrorInsufficientDriver"}),
            "no CUDA device (no usable NVIDIA driver: none is installed, or it is older than the "
            "CUDA runtime this build uses; cudaGetDeviceCount: cudaErrorInsufficientDriver)");
  EXPECT_EQ(
      noDeviceReason({0, "cudaErrorNoDevice"}),
      "no CUDA device (the NVIDIA driver sees no GPU; cudaGetDeviceCount: cudaErrorNoDevice)");
  EXPECT_EQ(noDeviceReason({0, "cudaErrorUnknown"}),
            "no CUDA device (cudaGetDeviceCount: cudaErrorUnknown)");
  EXPECT_EQ(noDeviceReason({0, ""}), "no CUDA device (cudaGetDeviceCount: 0 devices)");
  EXPECT_EQ(noDeviceReason({2, ""}), "");
  EXPECT_TRUE((DeviceCount{1, ""}).usable());
  EXPECT_FALSE((DeviceCount{0, "cudaErrorNoDevice"}).usable());
}
