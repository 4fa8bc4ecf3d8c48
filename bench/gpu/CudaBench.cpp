// disagmoe-bench-cuda: speed of the cuda backend on one GPU (run by bench/gpu/run.sh).
//  - bf16 GEMM (cuBLAS, fp32 accumulate): TFLOP/s = 2 m n k / time, and its ratio to the GPU's
//  dense
//    bf16 peak (--peak-tflops, from runtime/cost/data/hardware.json);
//  - fp32 GEMM (cuBLAS): TFLOP/s, for comparison (hardware.json has no fp32 peak);
//  - a rank's experts as one grouped GEMM (CublasGroupedGemm.h, bf16 in, fp32 compute, bf16 out)
//    against one dense bf16 cuBLAS GEMM of the same total size (rows = the routed tokens, the same
//    n and k) and against a loop of one cuBLAS GEMM per expert: issue 14's synthetic MoE (hidden
//    2048, 16 experts of 1408, top-4, 8 sequences of 4096: 131072 routed rows), with balanced and
//    skewed per-expert counts; target: grouped >= 0.70 x the dense GEMM's TFLOP/s;
//  - causal GQA attention (CudaAttention.h, fp32): time against its roofline lower bound
//    max(FLOPs / peak, bytes / HBM bandwidth) with FLOPs = 4 * heads * headDim * seqLen(seqLen+1)/2
//    per sequence (QK^T and PV, causal half) and bytes = q, k, v read once and out written once.
// Each figure is the median of --runs timed runs (cudaEvent), after warm-up runs.
// `--probe` prints the device name and exits 0, or exits 3 with a message when there is no device.
#include "runtime/backends/cuda/CublasGemm.h"
#include "runtime/backends/cuda/CublasGroupedGemm.h"
#include "runtime/backends/cuda/CudaAttention.h"
#include "runtime/backends/cuda/CudaCast.h"
#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/DeviceBuffer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace disagmoe::cuda;

namespace {

struct Options {
  double peakTflops = 0, hbmTbps = 0; // 0 = unknown: ratios are not printed
  int runs = 10;
  bool probe = false;
};

[[noreturn]] void usage(const std::string &why) {
  std::fprintf(stderr,
               "disagmoe-bench-cuda: %s\nusage: disagmoe-bench-cuda [--probe] [--peak-tflops T] "
               "[--hbm-tbps B] [--runs N]\n",
               why.c_str());
  std::exit(2);
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> double {
      if (i + 1 >= argc)
        usage(a + " needs a value");
      char *end = nullptr;
      const double v = std::strtod(argv[++i], &end);
      if (!end || *end || !(v >= 0))
        usage(a + ": '" + argv[i] + "' is not a non-negative number");
      return v;
    };
    if (a == "--probe")
      o.probe = true;
    else if (a == "--peak-tflops")
      o.peakTflops = value();
    else if (a == "--hbm-tbps")
      o.hbmTbps = value();
    else if (a == "--runs")
      o.runs = std::max(1, static_cast<int>(value()));
    else
      usage("unknown argument '" + a + "'");
  }
  return o;
}

// Median milliseconds of `runs` timed calls of `f`, after 3 untimed ones.
double medianMs(int runs, const std::function<void()> &f) {
  for (int i = 0; i < 3; ++i)
    f();
  cudaEvent_t start, stop;
  DISAGMOE_CUDA_CHECK(cudaEventCreate(&start));
  DISAGMOE_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    DISAGMOE_CUDA_CHECK(cudaEventRecord(start));
    f();
    DISAGMOE_CUDA_CHECK(cudaEventRecord(stop));
    DISAGMOE_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    DISAGMOE_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
}

// Uniform values in [-1, 1) from a fixed-seed LCG (fast enough for 10^8 elements).
DeviceBuffer<float> randomDevice(size_t n, uint64_t seed) {
  std::vector<float> host(n);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float &x : host) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(static_cast<double>(s >> 11) * 0x1.0p-52 * 2.0 - 1.0);
  }
  return DeviceBuffer<float>(host);
}

std::string ratio(double achieved, double peak) {
  if (peak <= 0)
    return "n/a (peak unknown)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", achieved / peak);
  return buf;
}

void benchGemms(const Options &o) {
  CublasHandle handle;
  struct Shape {
    const char *what;
    int64_t m, n, k;
  };
  const Shape shapes[] = {{"square 4096", 4096, 4096, 4096},
                          {"square 8192", 8192, 8192, 8192},
                          {"expert w1: 8192 tokens x 4096 -> 14336", 8192, 14336, 4096},
                          {"expert w2: 8192 tokens x 14336 -> 4096", 8192, 4096, 14336}};
  std::printf("bf16 GEMM (cuBLAS, fp32 accumulate, fp32 C), median of %d runs; peak %.1f TFLOP/s\n",
              o.runs, o.peakTflops);
  for (const Shape &s : shapes) {
    DeviceBuffer<float> a = randomDevice(s.m * s.k, 1), b = randomDevice(s.k * s.n, 2);
    DeviceBuffer<__nv_bfloat16> a16(a.size()), b16(b.size());
    toBf16(a.data(), a16.data(), static_cast<int64_t>(a.size()));
    toBf16(b.data(), b16.data(), static_cast<int64_t>(b.size()));
    a = DeviceBuffer<float>(), b = DeviceBuffer<float>();
    DeviceBuffer<float> c(s.m * s.n);
    const RowMajorGemm g = denseRowMajor(s.m, s.n, s.k);
    const double ms =
        medianMs(o.runs, [&] { gemmBf16(handle, g, a16.data(), b16.data(), c.data()); });
    const double tflops = 2.0 * s.m * s.n * s.k / (ms * 1e-3) / 1e12;
    std::printf("  %-40s m=%-6lld n=%-6lld k=%-6lld %9.3f ms %8.1f TFLOP/s  ratio to peak %s\n",
                s.what, static_cast<long long>(s.m), static_cast<long long>(s.n),
                static_cast<long long>(s.k), ms, tflops, ratio(tflops, o.peakTflops).c_str());
  }
  const int64_t n = 4096;
  DeviceBuffer<float> a = randomDevice(n * n, 3), b = randomDevice(n * n, 4), c(n * n);
  const double ms = medianMs(
      o.runs, [&] { gemmF32(handle, denseRowMajor(n, n, n), a.data(), b.data(), c.data()); });
  std::printf("fp32 GEMM (cuBLAS, no TF32) m=n=k=%lld: %.3f ms, %.1f TFLOP/s (no fp32 peak in "
              "hardware.json)\n",
              static_cast<long long>(n), ms, 2.0 * n * n * n / (ms * 1e-3) / 1e12);
}

// Per-expert token counts summing to `rows`: balanced (rows / E each) or skewed (expert e's share
// proportional to 1 / (e + 1), Zipf-like: max/mean = 16 / H_16 = 4.7 for 16 experts),
// each rounded down to a multiple of 8 rows (cuBLAS's bf16 alignment rule, GroupedGemm.h) with the
// remainder on expert 0.
std::vector<int64_t> expertCounts(int64_t rows, int64_t experts, bool skewed) {
  std::vector<double> share(static_cast<size_t>(experts), 1.0);
  if (skewed)
    for (int64_t e = 0; e < experts; ++e)
      share[e] = 1.0 / static_cast<double>(e + 1);
  double total = 0;
  for (double w : share)
    total += w;
  std::vector<int64_t> counts(static_cast<size_t>(experts));
  int64_t used = 0;
  for (int64_t e = 0; e < experts; ++e) {
    counts[e] = static_cast<int64_t>(static_cast<double>(rows) * share[e] / total) / 8 * 8;
    used += counts[e];
  }
  counts[0] += rows - used;
  return counts;
}

void benchExperts(const Options &o) {
  CublasHandle handle;
  const int64_t hidden = 2048, inner = 1408, experts = 16, rows = 8 * 4096 * 4;
  struct Projection {
    const char *what;
    int64_t in, out;
  };
  const Projection projections[] = {{"w1 (hidden -> expert hidden)", hidden, inner},
                                    {"w2 (expert hidden -> hidden)", inner, hidden}};
  std::printf("experts as one grouped bf16 GEMM (cublasGemmGroupedBatchedEx, fp32 compute, bf16 "
              "Y) vs one dense bf16 GEMM of the same total size (bf16 C) and a loop of per-expert "
              "GEMMs; %lld experts, %lld routed rows, median of %d runs\n",
              static_cast<long long>(experts), static_cast<long long>(rows), o.runs);
  for (const Projection &p : projections) {
    DeviceBuffer<__nv_bfloat16> x(rows * p.in), w(experts * p.in * p.out), y(rows * p.out);
    {
      DeviceBuffer<float> xf = randomDevice(x.size(), 11), wf = randomDevice(w.size(), 12);
      toBf16(xf.data(), x.data(), static_cast<int64_t>(x.size()));
      toBf16(wf.data(), w.data(), static_cast<int64_t>(w.size()));
    }
    const double flops = 2.0 * rows * p.in * p.out;
    // The peer: one GEMM over all rows with expert 0's weight (same m, n, k in one call).
    const RowMajorGemm dense = denseRowMajor(rows, p.out, p.in);
    const double denseMs =
        medianMs(o.runs, [&] { gemmBf16(handle, dense, x.data(), w.data(), y.data()); });
    const double denseTflops = flops / (denseMs * 1e-3) / 1e12;
    std::printf("  %-30s dense    %9.3f ms %8.1f TFLOP/s  ratio to peak %s\n", p.what, denseMs,
                denseTflops, ratio(denseTflops, o.peakTflops).c_str());
    for (bool skewed : {false, true}) {
      const std::vector<int64_t> counts = expertCounts(rows, experts, skewed);
      const GroupedExpertGemm plan =
          planGroupedExpertGemm(counts, rows, p.in, p.out, ExpertWeightLayout::InOut);
      const GroupedGemmBf16 grouped(plan, w.data(), x.data(), y.data());
      const double groupedMs = medianMs(o.runs, [&] { grouped.run(handle); });
      const double loopMs = medianMs(o.runs, [&] {
        int64_t row = 0;
        for (int64_t e = 0; e < experts; ++e) {
          if (counts[e] > 0)
            gemmBf16(handle, denseRowMajor(counts[e], p.out, p.in), x.data() + row * p.in,
                     w.data() + e * p.in * p.out, y.data() + row * p.out);
          row += counts[e];
        }
      });
      const double groupedTflops = flops / (groupedMs * 1e-3) / 1e12;
      const double loopTflops = flops / (loopMs * 1e-3) / 1e12;
      std::printf("  %-30s %-8s grouped %9.3f ms %8.1f TFLOP/s = %.3f x dense (target >= 0.70, "
                  "%d cuBLAS groups); loop of %lld GEMMs %9.3f ms %8.1f TFLOP/s = %.3f x dense\n",
                  p.what, skewed ? "skewed" : "balanced", groupedMs, groupedTflops,
                  groupedTflops / denseTflops, plan.groupCount(), static_cast<long long>(experts),
                  loopMs, loopTflops, loopTflops / denseTflops);
    }
  }
}

void benchAttention(const Options &o) {
  struct Shape {
    const char *what;
    AttentionShape s;
  };
  auto make = [](int64_t batch, int64_t seq, int64_t heads, int64_t kv, int64_t d) {
    AttentionShape s;
    s.batch = batch, s.seqLen = seq, s.heads = heads, s.kvHeads = kv, s.qkDim = d, s.vDim = d;
    return s;
  };
  const Shape shapes[] = {{"Mixtral-like 32q/8kv x128, seq 4096", make(1, 4096, 32, 8, 128)},
                          {"same, batch 4 x seq 1024", make(4, 1024, 32, 8, 128)}};
  std::printf("causal GQA attention (fp32 kernel), median of %d runs; roofline bound = max(FLOPs / "
              "%.1f TFLOP/s, "
              "bytes / %.2f TB/s)\n",
              o.runs, o.peakTflops, o.hbmTbps);
  for (const Shape &sh : shapes) {
    const AttentionShape &s = sh.s;
    const int64_t rows = s.batch * s.seqLen;
    DeviceBuffer<float> q = randomDevice(rows * s.heads * s.qkDim, 5),
                        k = randomDevice(rows * s.kvHeads * s.qkDim, 6),
                        v = randomDevice(rows * s.kvHeads * s.vDim, 7),
                        out(rows * s.heads * s.vDim);
    const float scale = 1.0f / std::sqrt(static_cast<float>(s.qkDim));
    const double ms = medianMs(o.runs, [&] {
      causalAttention(q.data(), k.data(), v.data(), s, scale, nullptr, out.data());
    });
    const double pairs = static_cast<double>(s.batch) * s.heads * (s.seqLen * (s.seqLen + 1) / 2.0);
    const double flops = pairs * 2.0 * (s.qkDim + s.vDim);
    const double bytes = 4.0 * (q.size() + k.size() + v.size() + out.size());
    const double computeMs = o.peakTflops > 0 ? flops / (o.peakTflops * 1e12) * 1e3 : 0;
    const double memoryMs = o.hbmTbps > 0 ? bytes / (o.hbmTbps * 1e12) * 1e3 : 0;
    const double boundMs = std::max(computeMs, memoryMs);
    std::printf("  %-40s %9.3f ms  %.1f TFLOP/s  bound %.3f ms (compute %.3f, memory %.3f)  "
                "bound/time %s\n",
                sh.what, ms, flops / (ms * 1e-3) / 1e12, boundMs, computeMs, memoryMs,
                ratio(boundMs, ms).c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  const Options o = parse(argc, argv);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("disagmoe-bench-cuda: no CUDA device (%s); nothing to measure\n",
                status != cudaSuccess ? cudaGetErrorString(status)
                                      : "cudaGetDeviceCount returned 0");
    return 3;
  }
  cudaDeviceProp prop{};
  try {
    DISAGMOE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device 0: %s (sm_%d%d, %d SMs, %.1f GiB)\n", prop.name, prop.major, prop.minor,
                prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
    if (o.probe)
      return 0;
    benchGemms(o);
    benchExperts(o);
    benchAttention(o);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "disagmoe-bench-cuda: %s\n", e.what());
    return 1;
  }
  return 0;
}
