// Maps a row-major GEMM onto cuBLAS's column-major call by swapping operands (GemmMapping.h).
#include "runtime/backends/cuda/GemmMapping.h"

#include <algorithm>
#include <climits>
#include <string>

namespace disagmoe::cuda {
namespace {

void require(bool ok, const std::string &field, int64_t value, const std::string &rule) {
  if (!ok)
    throw GemmShapeError("GEMM: " + field + " = " + std::to_string(value) + " (" + rule + ")");
}

int asInt(const char *field, int64_t value) {
  require(value <= INT_MAX, field, value, "cuBLAS takes int: must be <= 2147483647");
  return static_cast<int>(value);
}

} // namespace

ColumnMajorGemm toColumnMajor(const RowMajorGemm &g) {
  require(g.m >= 0, "m", g.m, "must be >= 0");
  require(g.n >= 0, "n", g.n, "must be >= 0");
  require(g.k >= 0, "k", g.k, "must be >= 0");
  const int64_t widthA = g.transA ? g.m : g.k, widthB = g.transB ? g.k : g.n;
  require(g.lda >= std::max<int64_t>(1, widthA), "lda", g.lda,
          "must be >= max(1, stored width of A = " + std::to_string(widthA) + ")");
  require(g.ldb >= std::max<int64_t>(1, widthB), "ldb", g.ldb,
          "must be >= max(1, stored width of B = " + std::to_string(widthB) + ")");
  require(g.ldc >= std::max<int64_t>(1, g.n), "ldc", g.ldc,
          "must be >= max(1, n = " + std::to_string(g.n) + ")");
  ColumnMajorGemm c;
  c.transA = g.transB; // the call's first operand is row-major B
  c.transB = g.transA;
  c.m = asInt("n", g.n);
  c.n = asInt("m", g.m);
  c.k = asInt("k", g.k);
  c.lda = asInt("ldb", g.ldb);
  c.ldb = asInt("lda", g.lda);
  c.ldc = asInt("ldc", g.ldc);
  return c;
}

RowMajorGemm denseRowMajor(int64_t m, int64_t n, int64_t k, bool transA, bool transB) {
  RowMajorGemm g;
  g.m = m, g.n = n, g.k = k, g.transA = transA, g.transB = transB;
  g.lda = std::max<int64_t>(1, transA ? m : k);
  g.ldb = std::max<int64_t>(1, transB ? k : n);
  g.ldc = std::max<int64_t>(1, n);
  return g;
}

} // namespace disagmoe::cuda
