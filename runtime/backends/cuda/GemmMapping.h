// Host logic of the cuda backend's GEMMs: how a row-major product maps onto cuBLAS's column-major
// API. Pure C++ (no CUDA headers), so it is unit-tested on machines without nvcc or a GPU.
//
// The row-major product C[m, n] = op(A) op(B), op(A) [m, k], op(B) [k, n], is the column-major
// product C^T[n, m] = op(B)^T op(A)^T: a row-major matrix of row stride ld is the column-major
// transpose with the same leading dimension. So cuBLAS is called with the operands swapped
// (A' = B, B' = A), m' = n, n' = m, k' = k, and each operand's "transpose" flag kept as is
// (row-major B untransposed is column-major B^T, which is what op(B)^T needs).
// Source: cuBLAS documentation, "cublasGemmEx" (column-major, op(A) m x k, lda >= max(1, rows of
// the stored A)); the identity (XY)^T = Y^T X^T.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace disagmoe::cuda {

/// A row-major GEMM C = alpha * op(A) op(B) + beta * C. Shapes in elements: op(A) is [m, k]
/// (A stored [m, k], or [k, m] when transA), op(B) is [k, n] (B stored [k, n], or [n, k] when
/// transB), C is [m, n]. lda/ldb/ldc are the stored row strides (elements, >= the stored width).
struct RowMajorGemm {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
};

/// The arguments of one column-major cublasGemmEx / cublasSgemm call (int, as cuBLAS takes them).
/// `aIsRowMajorB` is always true: the call's first operand is the row-major B (see above).
struct ColumnMajorGemm {
  bool transA = false, transB = false; ///< CUBLAS_OP_T when true, CUBLAS_OP_N when false
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0;
  bool aIsRowMajorB = true;
};

/// Raised for a GEMM whose shape or strides are invalid; the message names the field.
class GemmShapeError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// Validates `g` (dims >= 0; every dimension and leading dimension <= INT32_MAX, as cuBLAS takes
/// int; lda >= stored width of A, ldb >= stored width of B, ldc >= n, each >= 1) and maps it to
/// the column-major call. Throws GemmShapeError naming the offending field and its value.
ColumnMajorGemm toColumnMajor(const RowMajorGemm &g);

/// The common case: dense row-major C[m, n] = A[m, k] B[k, n] (lda = k, ldb = n, ldc = n).
RowMajorGemm denseRowMajor(int64_t m, int64_t n, int64_t k, bool transA = false,
                           bool transB = false);

} // namespace disagmoe::cuda
