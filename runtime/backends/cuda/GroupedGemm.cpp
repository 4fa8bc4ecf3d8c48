// The descriptors of a rank's grouped expert GEMM (GroupedGemm.h).
#include "runtime/backends/cuda/GroupedGemm.h"

#include "runtime/backends/cuda/DispatchPlan.h"

#include <climits>
#include <map>
#include <string>

namespace disagmoe::cuda {
namespace {

[[noreturn]] void fail(const std::string &what) { throw GroupedGemmError("grouped GEMM: " + what); }

void requireInt(const std::string &field, int64_t value) {
  if (value > INT_MAX)
    fail(field + " = " + std::to_string(value) +
         " exceeds 2147483647 (cuBLAS takes int dimensions)");
}

} // namespace

GroupedExpertGemm planGroupedExpertGemm(const std::vector<int64_t> &counts, int64_t rows,
                                        int64_t in, int64_t out, ExpertWeightLayout layout,
                                        float alpha, float beta) {
  if (in < 1)
    fail("in = " + std::to_string(in) + " (the activation's width must be >= 1)");
  if (out < 1)
    fail("out = " + std::to_string(out) + " (the output's width must be >= 1)");
  requireInt("in", in);
  requireInt("out", out);
  if (rows < 0)
    fail("rows = " + std::to_string(rows) + " (must be >= 0)");
  int64_t total = 0;
  for (size_t e = 0; e < counts.size(); ++e) {
    if (counts[e] < 0)
      fail("counts[" + std::to_string(e) + "] = " + std::to_string(counts[e]) +
           " (token counts must be >= 0)");
    requireInt("counts[" + std::to_string(e) + "]", counts[e]);
    total += counts[e]; // each <= INT_MAX: no overflow for any realistic number of experts
  }
  if (total != rows)
    fail("the counts of " + std::to_string(counts.size()) + " experts add up to " +
         std::to_string(total) + " rows, the activation has " + std::to_string(rows));

  GroupedExpertGemm g;
  g.numExperts = static_cast<int64_t>(counts.size());
  g.rows = rows, g.in = in, g.out = out, g.layout = layout;
  // One group per distinct non-zero count, in order of first appearance.
  std::map<int64_t, size_t> groupOfCount;
  std::vector<std::vector<GemmProblem>> members;
  int64_t offset = 0;
  for (size_t e = 0; e < counts.size(); ++e) {
    const int64_t n = counts[e];
    if (n == 0)
      continue;
    auto [it, inserted] = groupOfCount.emplace(n, g.groups.size());
    if (inserted) {
      GemmGroup group;
      group.transA = layout == ExpertWeightLayout::OutIn;
      group.transB = false;
      group.m = static_cast<int>(out);
      group.n = static_cast<int>(n);
      group.k = static_cast<int>(in);
      group.lda = static_cast<int>(layout == ExpertWeightLayout::OutIn ? in : out);
      group.ldb = static_cast<int>(in);
      group.ldc = static_cast<int>(out);
      group.alpha = alpha, group.beta = beta;
      g.groups.push_back(group);
      members.emplace_back();
    }
    GemmProblem p;
    p.expert = static_cast<int64_t>(e);
    p.group = static_cast<int64_t>(it->second);
    p.aOffset = p.expert * in * out;
    p.bOffset = offset * in;
    p.cOffset = offset * out;
    members[it->second].push_back(p);
    ++g.groups[it->second].size;
    offset += n;
  }
  for (const std::vector<GemmProblem> &m : members)
    g.problems.insert(g.problems.end(), m.begin(), m.end());
  return g;
}

GroupedExpertGemm planGroupedExpertGemm(const DispatchPlan &dispatch, int64_t in, int64_t out,
                                        ExpertWeightLayout layout, float alpha, float beta) {
  return planGroupedExpertGemm(dispatch.counts, dispatch.rows(), in, out, layout, alpha, beta);
}

int64_t requiredPointerAlignment(int64_t k, int64_t elementBytes) {
  if ((k * elementBytes) % 16 == 0)
    return 16;
  if ((k * elementBytes) % 4 == 0)
    return 4;
  return elementBytes;
}

void checkPointerAlignment(const GroupedExpertGemm &g, uintptr_t w, uintptr_t x, uintptr_t y,
                           int64_t elementBytes) {
  for (const GemmProblem &p : g.problems) {
    const GemmGroup &group = g.groups[static_cast<size_t>(p.group)];
    const int64_t align = requiredPointerAlignment(group.k, elementBytes);
    const struct {
      const char *name;
      uintptr_t address;
    } matrices[] = {{"W", w + static_cast<uintptr_t>(p.aOffset * elementBytes)},
                    {"X", x + static_cast<uintptr_t>(p.bOffset * elementBytes)},
                    {"Y", y + static_cast<uintptr_t>(p.cOffset * elementBytes)}};
    for (const auto &m : matrices)
      if (m.address % static_cast<uintptr_t>(align) != 0)
        fail(std::string(m.name) + " of expert " + std::to_string(p.expert) + " starts " +
             std::to_string(m.address % static_cast<uintptr_t>(align)) + " bytes past a " +
             std::to_string(align) + "-byte boundary (cuBLAS asks " + std::to_string(align) +
             "-byte aligned pointers when k * " + std::to_string(elementBytes) +
             " bytes = " + std::to_string(group.k * elementBytes) +
             (align == 16  ? " is a multiple of 16)"
              : align == 4 ? " is a multiple of 4)"
                           : "; at least the element size)"));
  }
}

} // namespace disagmoe::cuda
