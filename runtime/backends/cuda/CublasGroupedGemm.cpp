// cublasGemmGroupedBatchedEx over a GroupedExpertGemm (CublasGroupedGemm.h).
#include "runtime/backends/cuda/CublasGroupedGemm.h"

#include <vector>

static_assert(CUBLAS_VERSION >= 120500, "cublasGemmGroupedBatchedEx needs cuBLAS 12.5 or later");

namespace disagmoe::cuda {

GroupedGemmBf16::GroupedGemmBf16(const GroupedExpertGemm &plan, const __nv_bfloat16 *w,
                                 const __nv_bfloat16 *x, __nv_bfloat16 *y)
    : plan_(plan) {
  checkPointerAlignment(plan_, reinterpret_cast<uintptr_t>(w), reinterpret_cast<uintptr_t>(x),
                        reinterpret_cast<uintptr_t>(y), sizeof(__nv_bfloat16));
  const size_t count = plan_.problems.size();
  if (count == 0)
    return;
  std::vector<void *> host(3 * count);
  for (size_t i = 0; i < count; ++i) {
    const GemmProblem &p = plan_.problems[i];
    host[i] = const_cast<__nv_bfloat16 *>(w + p.aOffset);
    host[count + i] = const_cast<__nv_bfloat16 *>(x + p.bOffset);
    host[2 * count + i] = y + p.cOffset;
  }
  pointers_ = DeviceBuffer<void *>(host);
}

void GroupedGemmBf16::run(CublasHandle &handle) const {
  const size_t count = plan_.problems.size();
  if (count == 0)
    return;
  const size_t groups = plan_.groups.size();
  std::vector<cublasOperation_t> transa(groups), transb(groups);
  std::vector<int> m(groups), n(groups), k(groups), lda(groups), ldb(groups), ldc(groups),
      size(groups);
  std::vector<float> alpha(groups), beta(groups);
  for (size_t i = 0; i < groups; ++i) {
    const GemmGroup &g = plan_.groups[i];
    transa[i] = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    transb[i] = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    m[i] = g.m, n[i] = g.n, k[i] = g.k;
    lda[i] = g.lda, ldb[i] = g.ldb, ldc[i] = g.ldc;
    alpha[i] = g.alpha, beta[i] = g.beta;
    size[i] = g.size;
  }
  // alpha/beta are host arrays: the grouped call refuses CUBLAS_POINTER_MODE_DEVICE.
  DISAGMOE_CUBLAS_CHECK(cublasSetPointerMode(handle.get(), CUBLAS_POINTER_MODE_HOST));
  void *const *ptrs = pointers_.data();
  DISAGMOE_CUBLAS_CHECK(cublasGemmGroupedBatchedEx(
      handle.get(), transa.data(), transb.data(), m.data(), n.data(), k.data(), alpha.data(),
      const_cast<const void *const *>(ptrs), CUDA_R_16BF, lda.data(),
      const_cast<const void *const *>(ptrs + count), CUDA_R_16BF, ldb.data(), beta.data(),
      ptrs + 2 * count, CUDA_R_16BF, ldc.data(), static_cast<int>(groups), size.data(),
      CUBLAS_COMPUTE_32F));
}

} // namespace disagmoe::cuda
