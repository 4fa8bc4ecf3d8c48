// Host logic of the grouped expert GEMM (issue 14): a rank's local experts as one
// cublasGemmGroupedBatchedEx call over their variable token counts. Pure C++ (no CUDA headers), so
// it is unit-tested on machines without nvcc or a GPU; the device call is CublasGroupedGemm.h.
//
// Data, all row-major, element offsets (not bytes):
//   X [rows, in]   the permuted activations as DispatchPlan.h / CudaPermutation.h lay them out:
//                  local expert e's tokens are rows offsets[e] .. offsets[e] + counts[e] - 1,
//                  offsets the exclusive prefix sum of counts, experts ascending.
//   W [E, in, out] ExpertWeightLayout::InOut, the plan's logical layout of linear weights
//                  (runtime/plan/Weights.h; cpu::linear and cpu::swigluExpert compute y = x W,
//                  w1/w3 [hidden, expertHidden], w2 [expertHidden, hidden]);
//     or [E, out, in] ExpertWeightLayout::OutIn (torch.nn.Linear's weight, the on-disk bytes of a
//                  weight the plan marks `transposed`). Expert e's matrix starts at e * in * out.
//   Y [rows, out]  Y[offsets[e] + r] = alpha * X[offsets[e] + r] W_e + beta * Y[offsets[e] + r].
// E = counts.size() is the number of experts in the weight stack (the rank's local experts, in
// ascending global id: a DispatchPlan built over local expert indices gives exactly these counts).
//
// Column-major view (cuBLAS is column-major): a row-major [r, c] matrix with row stride c is the
// column-major [c, r] matrix (its transpose) with leading dimension c. So Y_e = X_e W_e is
// Y_e^T = W_e^T X_e^T, and each expert with count_e > 0 is one cuBLAS problem
//   A = W_e: InOut stores W_e^T column-major [out, in], ld out  -> transa = N, lda = out;
//            OutIn stores W_e column-major [in, out], ld in     -> transa = T, lda = in;
//   B = X_e: column-major X_e^T [in, count_e], ld in           -> transb = N, ldb = in;
//   C = Y_e: column-major Y_e^T [out, count_e], ld out         -> ldc = out;
//   m = out, n = count_e, k = in.
// cuBLAS requires one (trans, m, n, k, ld, alpha, beta) per group, and n = count_e varies: one
// group per distinct non-zero count, groups in order of first appearance (ascending expert id),
// each group's problems in ascending expert id; Aarray/Barray/Carray list the problems group by
// group (`problems` below, in that order). Experts with zero tokens are no problem at all.
//
// Source: cuBLAS documentation (CUDA 12.5 and later), "cublasGemmGroupedBatchedEx()": the call is
// functionally a loop over groups i and their group_size[i] problems idx of
//   gemmEx(transa[i], transb[i], m[i], n[i], k[i], alpha[i], Aarray[idx], lda[i], Barray[idx],
//          ldb[i], beta[i], Carray[idx], ldc[i]),
// C matrices must not overlap; transa/transb/m/n/k/lda/ldb/ldc/alpha/beta/group_size are host
// arrays of length group_count, Aarray/Barray/Carray device arrays of problem_count pointers;
// alpha/beta host scalars of the scale type (CUBLAS_POINTER_MODE_DEVICE is not supported).
// Supported for bf16 A/B: CUBLAS_COMPUTE_32F, scale type fp32, Ctype CUDA_R_16BF only (unlike
// cublasGemmEx, no bf16-in/fp32-out form); fp32 A/B/C with CUBLAS_COMPUTE_32F also.
// Pointer alignment for bf16 (same section): ideally 16 bytes; at least 16 bytes when
// (k * sizeof(Atype)) % 16 == 0, 4 bytes when (k * sizeof(Atype)) % 4 == 0.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace disagmoe::cuda {

struct DispatchPlan;

/// Raised for counts or sizes the grouped GEMM cannot take; a one-line message naming the value.
class GroupedGemmError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// How each expert's weight matrix is stored (see the file comment).
enum class ExpertWeightLayout {
  InOut, ///< W_e [in, out] row-major: the plan's logical layout (Weights.h)
  OutIn, ///< W_e [out, in] row-major: torch.nn.Linear's weight
};

/// One cuBLAS group: the problems in it share every field (cuBLAS's int arguments).
struct GemmGroup {
  bool transA = false, transB = false; ///< CUBLAS_OP_T when true, CUBLAS_OP_N when false
  int m = 0, n = 0, k = 0;             ///< m = out, n = the experts' token count, k = in
  int lda = 0, ldb = 0, ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
  int size = 0; ///< group_size: problems of this group
};

/// One problem (one expert with tokens): where its matrices start, in elements from the bases.
struct GemmProblem {
  int64_t expert = 0;  ///< index into the weight stack (0 .. E - 1)
  int64_t group = 0;   ///< index into GroupedExpertGemm::groups
  int64_t aOffset = 0; ///< from W's base: expert * in * out
  int64_t bOffset = 0; ///< from X's base: offsets[expert] * in
  int64_t cOffset = 0; ///< from Y's base: offsets[expert] * out
};

/// The descriptors of one grouped GEMM Y = alpha * X_e W_e + beta * Y over a rank's experts.
struct GroupedExpertGemm {
  int64_t numExperts = 0, rows = 0, in = 0, out = 0;
  ExpertWeightLayout layout = ExpertWeightLayout::InOut;
  std::vector<GemmGroup> groups;     ///< group_count entries
  std::vector<GemmProblem> problems; ///< problem_count entries, group by group (Aarray's order)

  int groupCount() const { return static_cast<int>(groups.size()); }
  int problemCount() const { return static_cast<int>(problems.size()); }
  /// Elements of X, W and Y the call reads or writes: rows * in, E * in * out, rows * out.
  int64_t xElements() const { return rows * in; }
  int64_t wElements() const { return numExperts * in * out; }
  int64_t yElements() const { return rows * out; }
};

/// Builds the descriptors from the per-expert token counts (counts[e] rows of X for expert e,
/// contiguous, ascending e), X's row count `rows`, the sizes `in` (X's width, W_e's input size)
/// and `out` (W_e's output size, Y's width) and the weight layout.
/// Throws GroupedGemmError when a count is negative, the counts do not add up to `rows`, in or out
/// is < 1, or a count, in, out or a leading dimension exceeds INT32_MAX (cuBLAS takes int).
GroupedExpertGemm planGroupedExpertGemm(const std::vector<int64_t> &counts, int64_t rows,
                                        int64_t in, int64_t out, ExpertWeightLayout layout,
                                        float alpha = 1.0f, float beta = 0.0f);

/// The same from a DispatchPlan's counts and rows (its experts are the weight stack's experts).
GroupedExpertGemm planGroupedExpertGemm(const DispatchPlan &dispatch, int64_t in, int64_t out,
                                        ExpertWeightLayout layout, float alpha = 1.0f,
                                        float beta = 0.0f);

/// The alignment in bytes cuBLAS asks of every matrix pointer of a group with this k and element
/// size (see the file comment): 16 when (k * elementBytes) % 16 == 0, 4 when % 4 == 0, else
/// elementBytes.
int64_t requiredPointerAlignment(int64_t k, int64_t elementBytes);

/// Checks every problem's A, B and C address (base + offset * elementBytes) against
/// requiredPointerAlignment of its group. Throws GroupedGemmError naming the matrix, the expert,
/// the address's misalignment and the rule, before anything reaches the device.
void checkPointerAlignment(const GroupedExpertGemm &g, uintptr_t w, uintptr_t x, uintptr_t y,
                           int64_t elementBytes);

} // namespace disagmoe::cuda
