// Row-major bf16 and fp32 GEMMs through cublasGemmEx / cublasSgemm (CublasGemm.h).
#include "runtime/backends/cuda/CublasGemm.h"

namespace disagmoe::cuda {
namespace {

cublasOperation_t op(bool transpose) { return transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }

// The column-major call computes C^T = op(B)^T op(A)^T: its first operand is the row-major B.
void gemmEx(CublasHandle &handle, const RowMajorGemm &g, const void *a, const void *b, void *c,
            cudaDataType cType, float alpha, float beta) {
  const ColumnMajorGemm cm = toColumnMajor(g);
  if (cm.m == 0 || cm.n == 0)
    return;
  DISAGMOE_CUBLAS_CHECK(cublasGemmEx(handle.get(), op(cm.transA), op(cm.transB), cm.m, cm.n, cm.k,
                                     &alpha, b, CUDA_R_16BF, cm.lda, a, CUDA_R_16BF, cm.ldb, &beta,
                                     c, cType, cm.ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

} // namespace

CublasHandle::CublasHandle() {
  DISAGMOE_CUBLAS_CHECK(cublasCreate(&handle_));
  DISAGMOE_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
}

CublasHandle::~CublasHandle() {
  if (handle_)
    cublasDestroy(handle_);
}

void CublasHandle::setStream(cudaStream_t stream) {
  DISAGMOE_CUBLAS_CHECK(cublasSetStream(handle_, stream));
}

void gemmBf16(CublasHandle &handle, const RowMajorGemm &g, const __nv_bfloat16 *a,
              const __nv_bfloat16 *b, float *c, float alpha, float beta) {
  gemmEx(handle, g, a, b, c, CUDA_R_32F, alpha, beta);
}

void gemmBf16(CublasHandle &handle, const RowMajorGemm &g, const __nv_bfloat16 *a,
              const __nv_bfloat16 *b, __nv_bfloat16 *c, float alpha, float beta) {
  gemmEx(handle, g, a, b, c, CUDA_R_16BF, alpha, beta);
}

void gemmF32(CublasHandle &handle, const RowMajorGemm &g, const float *a, const float *b, float *c,
             float alpha, float beta) {
  const ColumnMajorGemm cm = toColumnMajor(g);
  if (cm.m == 0 || cm.n == 0)
    return;
  DISAGMOE_CUBLAS_CHECK(cublasSgemm(handle.get(), op(cm.transA), op(cm.transB), cm.m, cm.n, cm.k,
                                    &alpha, b, cm.lda, a, cm.ldb, &beta, c, cm.ldc));
}

} // namespace disagmoe::cuda
