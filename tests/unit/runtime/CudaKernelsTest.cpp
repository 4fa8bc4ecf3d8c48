// The cuda backend's kernels and cuBLAS GEMMs against the CPU kernels (runtime/backends/cpu) on
// random data. Tests that launch need a GPU and skip with "no CUDA device: ..." otherwise; the
// tests of argument checks and error messages run wherever nvcc built the backend.
//
// Tolerances (the CPU kernels accumulate in double):
//  - bf16 GEMM vs the double product of the bf16-rounded operands: 2 k u sum_l |a_il b_lj| with
//    u = 2^-24 (fp32 accumulation; Higham, "Accuracy and Stability of Numerical Algorithms",
//    eq. 3.5); vs the CPU's fp32 linear of the unrounded operands, in addition (2 * 2^-8 + 2^-16)
//    sum_l |a_il b_lj|, the bf16 rounding of both operands (bf16 keeps 8 significant bits: unit
//    roundoff u = 2^-8 under round-to-nearest, and (1 + u)^2 - 1 = 2u + u^2);
//  - fp32 GEMM vs cpu::linear: 2 k u sum_l |a_il b_lj|;
//  - RoPE, softmax, router, SwiGLU, permutation: the same fp32 steps as the CPU (device exp/cos/sin
//    of double within 1-2 ulp of glibc's): at most 2 fp32 ulps (4e-7 relative), ids exact;
//  - attention: fp32 dots and an online softmax vs double: 2e-5 absolute on O(1) values.
#include "runtime/backends/cpu/FamilyKernels.h"
#include "runtime/backends/cpu/Kernels.h"
#include "runtime/backends/cuda/Bf16.h"
#include "runtime/backends/cuda/CublasGemm.h"
#include "runtime/backends/cuda/CublasGroupedGemm.h"
#include "runtime/backends/cuda/CudaAttention.h"
#include "runtime/backends/cuda/CudaCast.h"
#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/CudaPermutation.h"
#include "runtime/backends/cuda/CudaRope.h"
#include "runtime/backends/cuda/CudaRouter.h"
#include "runtime/backends/cuda/CudaSoftmax.h"
#include "runtime/backends/cuda/CudaSwiglu.h"
#include "runtime/backends/cuda/DeviceBuffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace disagmoe;
using namespace disagmoe::cuda;

namespace {

// Empty when a device is usable, else why not.
std::string noDeviceReason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess)
    return std::string("no CUDA device: cudaGetDeviceCount failed: ") + cudaGetErrorName(status) +
           " (" + cudaGetErrorString(status) +
           "); the kernel tests run only where a GPU is present";
  if (count == 0)
    return "no CUDA device: cudaGetDeviceCount returned 0; the kernel tests run only where a GPU "
           "is present";
  return "";
}

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    const std::string reason = noDeviceReason();                                                   \
    if (!reason.empty())                                                                           \
      GTEST_SKIP() << reason;                                                                      \
  } while (0)

std::vector<float> randomFloats(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

// |a - b| <= ulps * 2^-23 * |b| (+ a tiny absolute floor for values near zero).
void expectUlpClose(const std::vector<float> &actual, const std::vector<float> &expected,
                    double ulps, const char *what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_LE(std::fabs(static_cast<double>(actual[i]) - expected[i]),
              ulps * 1.2e-7 * std::fabs(expected[i]) + 1e-30)
        << what << " at " << i << ": " << actual[i] << " vs " << expected[i];
}

} // namespace

// ---- argument checks and errors: no GPU needed ----------------------------------------------

TEST(CudaCheck, NamesTheCallFileLineAndCudaError) {
  try {
    DISAGMOE_CUDA_CHECK(cudaSetDevice(-1));
    FAIL() << "cudaSetDevice(-1) succeeded";
  } catch (const CudaError &e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cudaSetDevice(-1) failed at "), std::string::npos) << m;
    EXPECT_NE(m.find("CudaKernelsTest.cpp:"), std::string::npos) << m;
    EXPECT_NE(m.find("cudaError"), std::string::npos) << m; // CUDA's error name
  }
  try {
    checkCublas(CUBLAS_STATUS_INVALID_VALUE, "cublasGemmEx(...)", "Gemm.cpp", 42);
    FAIL() << "no exception";
  } catch (const CudaError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "cublasGemmEx(...) failed at Gemm.cpp:42: CUBLAS_STATUS_INVALID_VALUE"),
              std::string::npos)
        << e.what();
  }
}

TEST(CudaKernelArguments, LaunchersCheckShapesBeforeTouchingTheDevice) {
  EXPECT_THROW(cuda::rope(nullptr, 2, 1, 7, nullptr, 1e4), KernelArgumentError);
  EXPECT_THROW(cuda::topK(nullptr, 2, 4, 5, nullptr, nullptr), KernelArgumentError);
  EXPECT_THROW(cuda::softmax(nullptr, 2, 0, nullptr), KernelArgumentError);
  AttentionShape s;
  s.seqLen = 4, s.heads = 3, s.kvHeads = 2, s.qkDim = 8, s.vDim = 8;
  EXPECT_THROW(cuda::causalAttention(nullptr, nullptr, nullptr, s, 1.0f, nullptr, nullptr),
               KernelArgumentError);
  EXPECT_THROW(cuda::swigluOai(nullptr, 2, 0, 7.0f, 1.702f, nullptr), KernelArgumentError);
  // DeepSeek-V3's sigmoid group-limited router has no device kernel yet: refused in one line.
  for (RouterScoring scoring :
       {RouterScoring::SigmoidGroupTopkRenorm, RouterScoring::SigmoidGroupTopk})
    try {
      cuda::routerGates(nullptr, 2, 8, 2, scoring, nullptr, nullptr);
      ADD_FAILURE() << "no exception";
    } catch (const KernelArgumentError &e) {
      EXPECT_NE(std::string(e.what()).find("sigmoid_group_topk scorings"), std::string::npos)
          << e.what();
    }
}

// The grouped GEMM checks its pointers' alignment before any CUDA call (no GPU needed).
TEST(CudaGroupedGemm, MisalignedPointersAreRefusedBeforeTouchingTheDevice) {
  const GroupedExpertGemm plan =
      planGroupedExpertGemm({2, 0, 3}, 5, 64, 32, ExpertWeightLayout::InOut);
  const auto at = [](uintptr_t address) { return reinterpret_cast<__nv_bfloat16 *>(address); };
  try {
    GroupedGemmBf16 call(plan, at(0x10000), at(0x20002), at(0x30000));
    FAIL() << "a misaligned X was accepted";
  } catch (const GroupedGemmError &e) {
    EXPECT_EQ(std::string(e.what()),
              "grouped GEMM: X of expert 0 starts 2 bytes past a 16-byte boundary (cuBLAS asks "
              "16-byte aligned pointers when k * 2 bytes = 128 is a multiple of 16)");
  }
}

// ---- kernels against the CPU (GPU only) -----------------------------------------------------

TEST(CudaGemm, Bf16WithFp32AccumulationMatchesTheRoundedProductAndCpuLinear) {
  SKIP_WITHOUT_GPU();
  CublasHandle handle;
  struct Case {
    int64_t m, n, k;
    bool ta, tb;
  };
  for (const Case &tc : {Case{64, 96, 200, false, false}, Case{33, 17, 129, true, false},
                         Case{5, 40, 64, false, true}, Case{48, 24, 72, true, true}}) {
    const RowMajorGemm g = denseRowMajor(tc.m, tc.n, tc.k, tc.ta, tc.tb);
    std::vector<float> a = randomFloats(tc.m * tc.k, -1, 1, 1),
                       b = randomFloats(tc.k * tc.n, -1, 1, 2);
    std::vector<uint16_t> a16(a.size()), b16(b.size());
    for (size_t i = 0; i < a.size(); ++i)
      a16[i] = toBf16Bits(a[i]);
    for (size_t i = 0; i < b.size(); ++i)
      b16[i] = toBf16Bits(b[i]);
    DeviceBuffer<float> da(a), db(b), dc(tc.m * tc.n);
    DeviceBuffer<__nv_bfloat16> da16(a.size()), db16(b.size()), dc16(tc.m * tc.n);
    toBf16(da.data(), da16.data(), static_cast<int64_t>(a.size()));
    toBf16(db.data(), db16.data(), static_cast<int64_t>(b.size()));
    gemmBf16(handle, g, da16.data(), db16.data(), dc.data());
    gemmBf16(handle, g, da16.data(), db16.data(), dc16.data());
    DeviceBuffer<float> dc16f(tc.m * tc.n);
    toFloat(dc16.data(), dc16f.data(), tc.m * tc.n);
    const std::vector<float> c = dc.download(), cBf16 = dc16f.download();
    // The CPU's fp32 linear takes untransposed [m, k] x [k, n]: build those from the stored
    // operands.
    std::vector<float> aMk(tc.m * tc.k), bKn(tc.k * tc.n), cpu(tc.m * tc.n);
    for (int64_t i = 0; i < tc.m; ++i)
      for (int64_t l = 0; l < tc.k; ++l)
        aMk[i * tc.k + l] = tc.ta ? a[l * tc.m + i] : a[i * tc.k + l];
    for (int64_t l = 0; l < tc.k; ++l)
      for (int64_t j = 0; j < tc.n; ++j)
        bKn[l * tc.n + j] = tc.tb ? b[j * tc.k + l] : b[l * tc.n + j];
    cpu::linear(aMk.data(), tc.m, tc.k, bKn.data(), tc.n, cpu.data());
    const double u = std::ldexp(1.0, -24);
    for (int64_t i = 0; i < tc.m; ++i)
      for (int64_t j = 0; j < tc.n; ++j) {
        double exact = 0, magnitude = 0;
        for (int64_t l = 0; l < tc.k; ++l) {
          const double x = roundToBf16(aMk[i * tc.k + l]), y = roundToBf16(bKn[l * tc.n + j]);
          exact += x * y;
          magnitude += std::fabs(x * y);
        }
        const double accumulation = 2 * tc.k * u * magnitude;
        const float got = c[i * tc.n + j];
        ASSERT_LE(std::fabs(got - exact), accumulation)
            << "C[" << i << "," << j << "] case m=" << tc.m;
        ASSERT_LE(std::fabs(got - cpu[i * tc.n + j]),
                  accumulation +
                      (2 * std::ldexp(1.0, -8) + std::ldexp(1.0, -16)) * magnitude * 1.01)
            << "vs cpu::linear at C[" << i << "," << j << "]";
        // bf16 C: the fp32 result rounded once (half a bf16 ulp, 2^-8 relative) on top.
        ASSERT_LE(std::fabs(cBf16[i * tc.n + j] - exact),
                  accumulation + std::ldexp(1.0, -8) * std::fabs(exact))
            << "bf16 C[" << i << "," << j << "]";
      }
  }
}

TEST(CudaGemm, Fp32MatchesCpuLinear) {
  SKIP_WITHOUT_GPU();
  CublasHandle handle;
  const int64_t m = 37, n = 53, k = 300;
  std::vector<float> a = randomFloats(m * k, -1, 1, 3), b = randomFloats(k * n, -1, 1, 4),
                     cpu(m * n);
  DeviceBuffer<float> da(a), db(b), dc(m * n);
  gemmF32(handle, denseRowMajor(m, n, k), da.data(), db.data(), dc.data());
  const std::vector<float> c = dc.download();
  cpu::linear(a.data(), m, k, b.data(), n, cpu.data());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double magnitude = 0;
      for (int64_t l = 0; l < k; ++l)
        magnitude += std::fabs(static_cast<double>(a[i * k + l]) * b[l * n + j]);
      ASSERT_LE(std::fabs(c[i * n + j] - cpu[i * n + j]),
                2 * 2 * k * std::ldexp(1.0, -24) * magnitude);
    }
}

TEST(CudaCast, Bf16RoundTripMatchesTheHostRounding) {
  SKIP_WITHOUT_GPU();
  std::vector<float> x = randomFloats(1000, -1e4f, 1e4f, 5);
  x.push_back(1.0f + std::ldexp(1.0f, -8)); // a tie
  DeviceBuffer<float> dx(x), dy(x.size());
  DeviceBuffer<__nv_bfloat16> dh(x.size());
  toBf16(dx.data(), dh.data(), static_cast<int64_t>(x.size()));
  toFloat(dh.data(), dy.data(), static_cast<int64_t>(x.size()));
  const std::vector<float> y = dy.download();
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(y[i], roundToBf16(x[i])) << x[i];
}

TEST(CudaRope, MatchesTheCpuKernel) {
  SKIP_WITHOUT_GPU();
  for (double theta : {1e4, 1e6}) {
    const int64_t tokens = 9, heads = 3, headDim = 64;
    std::vector<float> x = randomFloats(tokens * heads * headDim, -2, 2, 6), expected = x;
    std::vector<int64_t> positions(tokens);
    std::mt19937 rng(8);
    for (int64_t &p : positions)
      p = rng() % 5000;
    cpu::rope(expected.data(), tokens, heads, headDim, positions.data(), theta);
    DeviceBuffer<float> dx(x);
    DeviceBuffer<int64_t> dp(positions);
    cuda::rope(dx.data(), tokens, heads, headDim, dp.data(), theta);
    const std::vector<float> got = dx.download();
    for (size_t i = 0; i < got.size();
         ++i) // 2 ulps of the operands' scale (a difference of products)
      ASSERT_LE(std::fabs(got[i] - expected[i]), 2 * 1.2e-7 * 2 * 2)
          << "theta " << theta << " at " << i;
  }
}

TEST(CudaSoftmax, MatchesTheCpuKernelOnWideAndNarrowRows) {
  SKIP_WITHOUT_GPU();
  for (int64_t cols : {3, 1000, 3000}) {
    const int64_t rows = 7;
    std::vector<float> x = randomFloats(rows * cols, -30, 30, 9), expected(x.size());
    cpu::softmax(x.data(), rows, cols, expected.data());
    DeviceBuffer<float> dx(x), dy(x.size());
    cuda::softmax(dx.data(), rows, cols, dy.data());
    expectUlpClose(dy.download(), expected, 2, "softmax");
    cuda::softmax(dx.data(), rows, cols, dx.data()); // in place
    expectUlpClose(dx.download(), expected, 2, "softmax in place");
  }
}

TEST(CudaTopK, MatchesTheCpuKernelWithTiesToTheLowerIndex) {
  SKIP_WITHOUT_GPU();
  const int64_t rows = 300, n = 64, k = 6;
  std::mt19937 rng(10);
  std::vector<float> x(rows * n);
  for (float &v : x)
    v = static_cast<float>(rng() % 5) * 0.5f; // five values: ties everywhere
  std::vector<int64_t> ids(rows * k);
  std::vector<float> values(rows * k);
  for (int64_t r = 0; r < rows; ++r)
    cpu::topK(x.data() + r * n, n, k, ids.data() + r * k, values.data() + r * k);
  DeviceBuffer<float> dx(x), dv(rows * k);
  DeviceBuffer<int64_t> di(rows * k);
  cuda::topK(dx.data(), rows, n, k, di.data(), dv.data());
  EXPECT_EQ(di.download(), ids);
  EXPECT_EQ(dv.download(), values);
}

TEST(CudaRouter, GatesMatchTheCpuKernelForEveryScoringWithAndWithoutBias) {
  SKIP_WITHOUT_GPU();
  const int64_t tokens = 200, experts = 16, k = 4;
  const std::vector<float> logits = randomFloats(tokens * experts, -4, 4, 12);
  const std::vector<float> bias = randomFloats(experts, -0.5f, 0.5f, 13);
  for (RouterScoring scoring :
       {RouterScoring::SoftmaxTopkRenorm, RouterScoring::SoftmaxTopk, RouterScoring::TopkSoftmax})
    for (bool withBias : {false, true}) {
      std::vector<int64_t> ids(tokens * k);
      std::vector<float> gates(tokens * k);
      cpu::routerGates(logits.data(), tokens, experts, k, scoring, ids.data(), gates.data(),
                       withBias ? bias.data() : nullptr);
      DeviceBuffer<float> dl(logits), db(bias), dg(tokens * k);
      DeviceBuffer<int64_t> di(tokens * k);
      cuda::routerGates(dl.data(), tokens, experts, k, scoring, di.data(), dg.data(),
                        withBias ? db.data() : nullptr);
      EXPECT_EQ(di.download(), ids)
          << "scoring " << static_cast<int>(scoring) << " bias " << withBias;
      expectUlpClose(dg.download(), gates, 2, "router gates");
    }
}

TEST(CudaAttention, MatchesTheCpuKernelWithGqaSinksAndWindows) {
  SKIP_WITHOUT_GPU();
  struct Case {
    int64_t seqLen, heads, kvHeads, qkDim, vDim, window;
    bool sinks;
  };
  // seqLen 300 > one key tile (256): the online softmax crosses tiles.
  for (const Case &tc : {Case{300, 4, 2, 24, 24, 0, false}, Case{300, 4, 1, 40, 32, 0, true},
                         Case{270, 6, 3, 16, 16, 100, true}, Case{5, 2, 2, 8, 8, 2, false}}) {
    const int64_t batch = 2;
    AttentionShape s;
    s.batch = batch, s.seqLen = tc.seqLen, s.heads = tc.heads, s.kvHeads = tc.kvHeads,
    s.qkDim = tc.qkDim, s.vDim = tc.vDim, s.window = tc.window;
    const int64_t rows = batch * tc.seqLen;
    const std::vector<float> q = randomFloats(rows * tc.heads * tc.qkDim, -1, 1, 14);
    const std::vector<float> k = randomFloats(rows * tc.kvHeads * tc.qkDim, -1, 1, 15);
    const std::vector<float> v = randomFloats(rows * tc.kvHeads * tc.vDim, -1, 1, 16);
    const std::vector<float> sinks = randomFloats(tc.heads, -1, 2, 17);
    const double scale = 1.0 / std::sqrt(static_cast<double>(tc.qkDim));
    std::vector<float> expected(rows * tc.heads * tc.vDim);
    for (int64_t b = 0; b < batch; ++b) // the CPU kernel runs one sequence
      cpu::causalAttentionGeneral(q.data() + b * tc.seqLen * tc.heads * tc.qkDim,
                                  k.data() + b * tc.seqLen * tc.kvHeads * tc.qkDim,
                                  v.data() + b * tc.seqLen * tc.kvHeads * tc.vDim, tc.seqLen,
                                  tc.heads, tc.kvHeads, tc.qkDim, tc.vDim, scale,
                                  tc.sinks ? sinks.data() : nullptr, tc.window,
                                  expected.data() + b * tc.seqLen * tc.heads * tc.vDim);
    DeviceBuffer<float> dq(q), dk(k), dv(v), ds(sinks), dout(expected.size());
    cuda::causalAttention(dq.data(), dk.data(), dv.data(), s, static_cast<float>(scale),
                          tc.sinks ? ds.data() : nullptr, dout.data());
    const std::vector<float> got = dout.download();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::fabs(got[i] - expected[i]), 2e-5)
          << "seqLen " << tc.seqLen << " window " << tc.window << " sinks " << tc.sinks << " at "
          << i;
  }
}

// The CPU FFN with identity projections isolates its activation: hidden = 2 * inner, W1 = [I; 0]
// (gate = first half of x), W3 = [0; I] (up = second half), W2 = [I | 0] (out[:, :inner] = act).
TEST(CudaSwiglu, MatchesTheCpuFfnActivations) {
  SKIP_WITHOUT_GPU();
  const int64_t rows = 33, inner = 48, hidden = 2 * inner;
  const std::vector<float> x = randomFloats(rows * hidden, -12, 12, 18);
  std::vector<float> w1(hidden * inner, 0.0f), w3(hidden * inner, 0.0f), w2(inner * hidden, 0.0f),
      fused(hidden * hidden, 0.0f);
  for (int64_t i = 0; i < inner; ++i) {
    w1[i * inner + i] = 1, w3[(inner + i) * inner + i] = 1, w2[i * hidden + i] = 1;
    fused[i * hidden + 2 * i] = 1,
                           fused[(inner + i) * hidden + 2 * i + 1] = 1; // interleave gate/up
  }
  for (bool oai : {false, true}) {
    cpu::FfnWeights w;
    w.w1 = oai ? fused.data() : w1.data(), w.w3 = oai ? nullptr : w3.data(), w.w2 = w2.data(),
    w.fusedGateUp = oai;
    std::vector<float> cpuOut(rows * hidden);
    cpu::ffnForward(x.data(), rows, hidden, inner, w, oai, 7.0f, 1.702f, cpuOut.data());
    std::vector<float> expected(rows * inner), gate(rows * inner), up(rows * inner),
        gateUp(rows * hidden);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < inner; ++i) {
        expected[r * inner + i] = cpuOut[r * hidden + i];
        gate[r * inner + i] = x[r * hidden + i], up[r * inner + i] = x[r * hidden + inner + i];
        gateUp[r * hidden + 2 * i] = gate[r * inner + i],
                                gateUp[r * hidden + 2 * i + 1] = up[r * inner + i];
      }
    DeviceBuffer<float> dOut(rows * inner);
    if (oai) {
      DeviceBuffer<float> dgu(gateUp);
      cuda::swigluOai(dgu.data(), rows, inner, 7.0f, 1.702f, dOut.data());
    } else {
      DeviceBuffer<float> dg(gate), du(up);
      cuda::swiglu(dg.data(), du.data(), dOut.data(), rows * inner);
    }
    expectUlpClose(dOut.download(), expected, 4, oai ? "swigluOai" : "swiglu");
  }
}

// Dispatch and combine around per-expert "experts" y = (e + 1) * x, against the CPU executor's
// order (experts ascending, each adding gate * y to its tokens' outputs, from zero).
TEST(CudaPermutation, DispatchAndCombineMatchTheCpuExecutorOrder) {
  SKIP_WITHOUT_GPU();
  const int64_t tokens = 50, hidden = 300, experts = 8, k = 2;
  const std::vector<float> x = randomFloats(tokens * hidden, -3, 3, 19);
  const std::vector<float> logits = randomFloats(tokens * experts, -4, 4, 20);
  std::vector<int64_t> ids(tokens * k);
  std::vector<float> gates(tokens * k);
  cpu::routerGates(logits.data(), tokens, experts, k, RouterScoring::SoftmaxTopkRenorm, ids.data(),
                   gates.data());
  for (int64_t t = 0; t < tokens; t += 7)
    ids[t * k + 1] = -1; // routes to experts of other ranks
  const DispatchPlan plan = planDispatch(ids.data(), gates.data(), tokens, k, experts);
  const DevicePermutation dp = DevicePermutation::upload(plan);
  DeviceBuffer<float> dx(x), dperm(plan.rows() * hidden);
  dispatchRows(dx.data(), hidden, dp.sourceRow.data(), plan.rows(), dperm.data());
  const std::vector<float> permuted = dperm.download();
  std::vector<float> y(permuted.size());
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t p = plan.offsets[e]; p < plan.offsets[e + 1]; ++p)
      for (int64_t j = 0; j < hidden; ++j) {
        ASSERT_EQ(permuted[p * hidden + j], x[plan.sourceRow[p] * hidden + j]);
        y[p * hidden + j] = static_cast<float>(e + 1) * permuted[p * hidden + j];
      }
  std::vector<float> expected(tokens * hidden, 0.0f);
  for (int64_t e = 0; e < experts; ++e) // RankWorker::experts: out += gate * y, experts ascending
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t j = 0; j < k; ++j)
        if (ids[t * k + j] == e) {
          int64_t row = plan.offsets[e];
          while (plan.sourceRow[row] != t)
            ++row;
          for (int64_t c = 0; c < hidden; ++c) {
            volatile float product =
                gates[t * k + j] * y[row * hidden + c]; // rounded: no FMA on any host
            expected[t * hidden + c] += product;
          }
        }
  DeviceBuffer<float> dy(y), dout(tokens * hidden);
  combineRows(dy.data(), hidden, dp.combineStart.data(), dp.combineRow.data(),
              dp.combineGate.data(), tokens, dout.data());
  EXPECT_EQ(dout.download(), expected); // same fp32 operations in the same order: bit for bit

  DeviceBuffer<__nv_bfloat16> dx16(x.size()), dperm16(plan.rows() * hidden);
  DeviceBuffer<float> dback(plan.rows() * hidden);
  toBf16(dx.data(), dx16.data(), static_cast<int64_t>(x.size()));
  dispatchRows(dx16.data(), hidden, dp.sourceRow.data(), plan.rows(), dperm16.data());
  toFloat(dperm16.data(), dback.data(), plan.rows() * hidden);
  const std::vector<float> back = dback.download();
  for (int64_t p = 0; p < plan.rows(); ++p)
    for (int64_t j = 0; j < hidden; ++j)
      ASSERT_EQ(back[p * hidden + j], roundToBf16(x[plan.sourceRow[p] * hidden + j]));
}

// The pieces composed into one MoE FFN layer on the GPU: dispatch, per-expert bf16 GEMMs (gate,
// up), SwiGLU, the activations rounded to bf16, the down GEMM, combine; against the CPU's
// swigluExpert on the same bf16-rounded x and weights, combined in the executor's order.
// The GPU rounds the activations to bf16 before W2 (relative 2^-8 each), so each output may differ
// by 2^-8 sum_e g_e (|act_e| |W2_e|)[t, j]; the test allows 2^-7 times that sum (+1e-5), a factor 2
// for the fp32 GEMMs' own rounding and the gate/up differences that SwiGLU carries forward.
TEST(CudaMoeLayer, DispatchBf16ExpertsAndCombineMatchTheCpuWithinTheBf16Bound) {
  SKIP_WITHOUT_GPU();
  const int64_t tokens = 64, hidden = 128, inner = 192, experts = 4, k = 2;
  std::vector<float> x = randomFloats(tokens * hidden, -1, 1, 21);
  for (float &v : x)
    v = roundToBf16(v);
  std::vector<std::vector<float>> w1(experts), w3(experts), w2(experts);
  for (int64_t e = 0; e < experts; ++e) {
    w1[e] = randomFloats(hidden * inner, -0.1f, 0.1f, 30 + e);
    w3[e] = randomFloats(hidden * inner, -0.1f, 0.1f, 40 + e);
    w2[e] = randomFloats(inner * hidden, -0.1f, 0.1f, 50 + e);
    for (auto *w : {&w1[e], &w3[e], &w2[e]})
      for (float &v : *w)
        v = roundToBf16(v);
  }
  const std::vector<float> logits = randomFloats(tokens * experts, -2, 2, 22);
  std::vector<int64_t> ids(tokens * k);
  std::vector<float> gates(tokens * k);
  cpu::routerGates(logits.data(), tokens, experts, k, RouterScoring::SoftmaxTopkRenorm, ids.data(),
                   gates.data());
  const DispatchPlan plan = planDispatch(ids.data(), gates.data(), tokens, k, experts);

  // CPU: each expert over its tokens (ascending), out += g * y in ascending expert id.
  std::vector<float> expected(tokens * hidden, 0.0f), tolerance(tokens * hidden, 1e-5f);
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t rows = plan.counts[e];
    std::vector<float> xe(rows * hidden), ye(rows * hidden), gate(rows * inner), up(rows * inner),
        act(rows * inner), bound(rows * hidden), absW2(w2[e].size());
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(x.begin() + plan.sourceRow[plan.offsets[e] + r] * hidden, hidden,
                  xe.begin() + r * hidden);
    cpu::swigluExpert(xe.data(), rows, hidden, inner, w1[e].data(), w3[e].data(), w2[e].data(),
                      ye.data());
    cpu::linear(xe.data(), rows, hidden, w1[e].data(), inner, gate.data());
    cpu::linear(xe.data(), rows, hidden, w3[e].data(), inner, up.data());
    for (size_t i = 0; i < act.size(); ++i)
      act[i] = std::fabs(gate[i] / (1.0f + std::exp(-gate[i])) * up[i]);
    for (size_t i = 0; i < absW2.size(); ++i)
      absW2[i] = std::fabs(w2[e][i]);
    cpu::linear(act.data(), rows, inner, absW2.data(), hidden, bound.data());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t t = plan.sourceRow[plan.offsets[e] + r];
      float g = 0;
      for (int64_t j = 0; j < k; ++j)
        if (ids[t * k + j] == e)
          g = gates[t * k + j];
      for (int64_t c = 0; c < hidden; ++c) {
        expected[t * hidden + c] += g * ye[r * hidden + c];
        tolerance[t * hidden + c] += 2 * std::ldexp(1.0f, -8) * g * bound[r * hidden + c];
      }
    }
  }

  CublasHandle handle;
  const DevicePermutation dp = DevicePermutation::upload(plan);
  const int64_t rows = plan.rows();
  DeviceBuffer<float> dx(x), dperm(rows * hidden), dgate(rows * inner), dup(rows * inner),
      dy(rows * hidden), dout(tokens * hidden);
  DeviceBuffer<__nv_bfloat16> dperm16(rows * hidden), dact16(rows * inner);
  dispatchRows(dx.data(), hidden, dp.sourceRow.data(), rows, dperm.data());
  toBf16(dperm.data(), dperm16.data(), rows * hidden);
  std::vector<DeviceBuffer<__nv_bfloat16>> w16;
  for (int64_t e = 0; e < experts; ++e)
    for (const auto *w : {&w1[e], &w3[e], &w2[e]}) {
      DeviceBuffer<float> wf(*w);
      w16.emplace_back(w->size());
      toBf16(wf.data(), w16.back().data(), static_cast<int64_t>(w->size()));
      DISAGMOE_CUDA_CHECK(cudaDeviceSynchronize()); // wf is freed at the end of this iteration
    }
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t m = plan.counts[e], first = plan.offsets[e];
    const __nv_bfloat16 *xe = dperm16.data() + first * hidden;
    gemmBf16(handle, denseRowMajor(m, inner, hidden), xe, w16[3 * e].data(),
             dgate.data() + first * inner);
    gemmBf16(handle, denseRowMajor(m, inner, hidden), xe, w16[3 * e + 1].data(),
             dup.data() + first * inner);
  }
  cuda::swiglu(dgate.data(), dup.data(), dgate.data(), rows * inner);
  toBf16(dgate.data(), dact16.data(), rows * inner);
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t m = plan.counts[e], first = plan.offsets[e];
    gemmBf16(handle, denseRowMajor(m, hidden, inner), dact16.data() + first * inner,
             w16[3 * e + 2].data(), dy.data() + first * hidden);
  }
  combineRows(dy.data(), hidden, dp.combineStart.data(), dp.combineRow.data(),
              dp.combineGate.data(), tokens, dout.data());
  const std::vector<float> got = dout.download();
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - expected[i]), tolerance[i])
        << "out[" << i / hidden << ", " << i % hidden << "]";
}

// A rank's experts as one cublasGemmGroupedBatchedEx (CublasGroupedGemm.h): bf16 X and W, fp32
// accumulation, bf16 Y, uneven counts with zero-token experts, both weight layouts; against the
// CPU's fp32 cpu::linear of each expert's rows with the unrounded fp32 operands.
// Bound, per output y = sum_l x_l w_l over k = in terms, S = sum_l |x_l w_l|:
//  - bf16 rounding of the inputs: x^ = x (1 + d1), w^ = w (1 + d2), |d| <= u_bf16 = 2^-8 (8
//    significant bits, round to nearest), so |sum x^ w^ - sum x w| <= (2^-7 + 2^-16) S;
//  - the GPU's fp32 accumulation of the (exact in fp32) bf16 products: gamma_k S^ with
//    S^ <= (1 + 2^-7 + 2^-16) S, gamma_k = k u / (1 - k u) (Higham, "Accuracy and Stability of
//    Numerical Algorithms", eq. 3.5), u = 2^-23 rather than 2^-24: tensor cores may truncate when
//    they accumulate (Fasi, Higham, Mikaitis, Pranesh 2021, "Numerical behavior of NVIDIA tensor
//    cores");
//  - the CPU's fp32 dot product: gamma_k S with u = 2^-24;
//  - Y rounded to bf16 once: 2^-8 |y_gpu|, |y_gpu| <= |y_cpu| + the errors above.
// Also against the exact double product of the bf16-rounded operands (the first term gone).
// Y starts as bf16 NaN everywhere (every row must be written) with guard elements after it that
// must stay untouched.
TEST(CudaGroupedGemm, Bf16ExpertsMatchTheCpuWithinTheBf16Bound) {
  SKIP_WITHOUT_GPU();
  CublasHandle handle;
  const std::vector<int64_t> counts = {5, 0, 37, 1, 0, 64, 12};
  const int64_t experts = static_cast<int64_t>(counts.size()), in = 128, out = 96, guard = 256;
  int64_t rows = 0;
  for (int64_t c : counts)
    rows += c;
  const std::vector<float> x = randomFloats(rows * in, -1, 1, 61),
                           w = randomFloats(experts * in * out, -0.1f, 0.1f, 62);
  const auto bits = [](const std::vector<float> &v) {
    std::vector<__nv_bfloat16> b(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const uint16_t h = toBf16Bits(v[i]);
      std::memcpy(&b[i], &h, sizeof h);
    }
    return b;
  };
  const DeviceBuffer<__nv_bfloat16> dx(bits(x)), dw(bits(w));
  const double uBf16 = std::ldexp(1.0, -8);
  const auto gamma = [&](double u) { return in * u / (1 - in * u); };
  for (ExpertWeightLayout layout : {ExpertWeightLayout::InOut, ExpertWeightLayout::OutIn}) {
    const GroupedExpertGemm plan = planGroupedExpertGemm(counts, rows, in, out, layout);
    DeviceBuffer<__nv_bfloat16> dy(rows * out + guard);
    DISAGMOE_CUDA_CHECK(cudaMemset(dy.data(), 0xff, dy.bytes())); // bf16 0xffff: NaN
    const GroupedGemmBf16 call(plan, dw.data(), dx.data(), dy.data());
    call.run(handle);
    DISAGMOE_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<__nv_bfloat16> raw = dy.download();
    std::vector<uint16_t> y(raw.size());
    std::memcpy(y.data(), raw.data(), y.size() * sizeof(uint16_t));
    for (int64_t i = rows * out; i < rows * out + guard; ++i)
      ASSERT_EQ(y[i], 0xffff) << "guard element " << i - rows * out << " was written";
    int64_t first = 0;
    for (int64_t e = 0; e < experts; ++e) {
      const int64_t n = counts[e];
      if (n == 0)
        continue;
      // W_e as [in, out] for cpu::linear, whichever layout the device read.
      std::vector<float> we(in * out), cpuY(n * out);
      for (int64_t l = 0; l < in; ++l)
        for (int64_t c = 0; c < out; ++c)
          we[l * out + c] = layout == ExpertWeightLayout::InOut ? w[e * in * out + l * out + c]
                                                                : w[e * in * out + c * in + l];
      cpu::linear(x.data() + first * in, n, in, we.data(), out, cpuY.data());
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < out; ++c) {
          double magnitude = 0, exactRounded = 0, magnitudeRounded = 0;
          for (int64_t l = 0; l < in; ++l) {
            const float xv = x[(first + r) * in + l], wv = we[l * out + c];
            magnitude += std::fabs(static_cast<double>(xv) * wv);
            const double p = static_cast<double>(roundToBf16(xv)) * roundToBf16(wv);
            exactRounded += p;
            magnitudeRounded += std::fabs(p);
          }
          const double got = fromBf16Bits(y[(first + r) * out + c]);
          const double ref = cpuY[r * out + c];
          ASSERT_TRUE(std::isfinite(got)) << "Y[" << first + r << "," << c << "] not written";
          const double errors =
              (2 * uBf16 + uBf16 * uBf16) * magnitude +
              gamma(std::ldexp(1.0, -23)) * (1 + 2 * uBf16 + uBf16 * uBf16) * magnitude +
              gamma(std::ldexp(1.0, -24)) * magnitude;
          ASSERT_LE(std::fabs(got - ref), errors + uBf16 * (std::fabs(ref) + errors))
              << "expert " << e << " Y[" << first + r << "," << c << "] vs cpu::linear";
          const double accumulation = gamma(std::ldexp(1.0, -23)) * magnitudeRounded;
          ASSERT_LE(std::fabs(got - exactRounded),
                    accumulation + uBf16 * (std::fabs(exactRounded) + accumulation))
              << "expert " << e << " Y[" << first + r << "," << c << "] vs the rounded product";
        }
      first += n;
    }
  }
}
