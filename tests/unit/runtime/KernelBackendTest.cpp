// The kernel interface (runtime/backends/KernelBackend.h) on the cpu backend, and the expert form
// rule the forward and training workers share (runtime/executor/LocalExperts.h). Oracle: the
// already-tested cpu kernels called directly, bit for bit (the interface promises the cpu results
// stay identical), and the plan's component fields for the form rule.
#include "runtime/backends/KernelBackend.h"
#include "runtime/backends/cpu/FamilyKernels.h"
#include "runtime/backends/cpu/Kernels.h"
#include "runtime/executor/LocalExperts.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace disagmoe;

namespace {

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

TEST(KernelBackend, CpuIsHostMemory) {
  EXPECT_STREQ(kernels::cpuKernels().name(), "cpu");
  EXPECT_EQ(kernels::cpuKernels().space(), kernels::MemorySpace::Host);
}

// Three sequences in one call equal three direct calls of the variant kernel (sinks, window).
TEST(KernelBackend, AttentionOverSequencesIsThePerSequenceKernel) {
  const int64_t seqs = 3, seqLen = 5, heads = 4, kvHeads = 2, hd = 8, window = 3;
  const int64_t qW = heads * hd, kvW = kvHeads * hd, n = seqs * seqLen;
  const auto q = randomFloats(n * qW, 1), k = randomFloats(n * kvW, 2),
             v = randomFloats(n * kvW, 3), sinks = randomFloats(heads, 4);
  std::vector<float> want(n * qW), got(n * qW, NAN);
  for (int64_t s = 0; s < n; s += seqLen)
    cpu::causalAttentionVariant(q.data() + s * qW, k.data() + s * kvW, v.data() + s * kvW, seqLen,
                                heads, kvHeads, hd, sinks.data(), window, want.data() + s * qW);
  kernels::AttentionSpec spec;
  spec.sequences = seqs, spec.seqLen = seqLen, spec.heads = heads, spec.kvHeads = kvHeads;
  spec.qkDim = spec.vDim = hd, spec.scale = kernels::standardAttentionScale(hd);
  spec.sinks = sinks.data(), spec.window = window;
  kernels::cpuKernels().attention(q.data(), k.data(), v.data(), spec, got.data());
  EXPECT_TRUE(sameBits(want, got));
}

// A grouped call over experts with 2, 0 and 3 tokens equals the per-expert kernels of each form.
TEST(KernelBackend, ExpertsForwardIsThePerExpertKernels) {
  const int64_t H = 6, I = 4;
  const std::vector<int64_t> counts = {2, 0, 3};
  const auto x = randomFloats(5 * H, 5);
  std::vector<std::vector<float>> w1, w3, w2, b2;
  for (int e = 0; e < 3; ++e) {
    w1.push_back(randomFloats(H * I, 10 + e));
    w3.push_back(randomFloats(H * I, 20 + e));
    w2.push_back(randomFloats(I * H, 30 + e));
    b2.push_back(randomFloats(H, 40 + e));
  }
  std::vector<float> want(5 * H, NAN), got(5 * H, NAN);
  std::vector<kernels::ExpertProblem> problems;
  int64_t row = 0;
  for (int e = 0; e < 3; ++e) {
    kernels::ExpertProblem p;
    p.weights.w1 = w1[e].data(), p.weights.w3 = w3[e].data(), p.weights.w2 = w2[e].data();
    if (e == 2) { // a biased, clamped expert (GPT-OSS form)
      p.form.kind = kernels::ExpertForm::Kind::GatedFamily;
      p.form.oai = true, p.form.limit = 0.5f, p.form.alpha = 1.702f;
      p.weights.b2 = b2[e].data();
      cpu::ffnForward(x.data() + row * H, counts[e], H, I, p.weights, true, 0.5f, 1.702f,
                      want.data() + row * H);
    } else {
      cpu::swigluExpert(x.data() + row * H, counts[e], H, I, w1[e].data(), w3[e].data(),
                        w2[e].data(), want.data() + row * H);
    }
    p.x = x.data() + row * H, p.rows = counts[e], p.y = got.data() + row * H;
    problems.push_back(p);
    row += counts[e];
  }
  kernels::cpuKernels().expertsForward(problems.data(), 3, H, I);
  EXPECT_TRUE(sameBits(want, got));
}

TEST(KernelBackend, NonGatedExpertHasNoBackward) {
  kernels::ExpertForm form;
  form.kind = kernels::ExpertForm::Kind::NonGated;
  float v = 0;
  EXPECT_THROW(kernels::cpuKernels().expertBackward(form, {}, &v, &v, 0, 1, 1, &v, {}, nullptr),
               kernels::KernelError);
}

// out += scale * x, one rounding per product and sum (the gate-weighted combine).
TEST(KernelBackend, AccumulateIsOneProductAndOneSum) {
  const auto x = randomFloats(7, 6);
  auto out = randomFloats(7, 7);
  std::vector<float> want(7);
  for (int i = 0; i < 7; ++i) {
    const float product = 0.3f * x[i];
    want[i] = out[i] + product;
  }
  kernels::cpuKernels().accumulate(x.data(), 0.3f, 7, out.data());
  EXPECT_TRUE(sameBits(want, out));
}

// The form rule of LocalExperts.h from the component's fields.
TEST(ExpertForm, FollowsTheComponentsActivationBiasesAndFusion) {
  Component c;
  c.kind = ComponentKind::Experts;
  ExpertWeights plain;
  plain.w1 = 0, plain.w3 = 1, plain.w2 = 2;
  EXPECT_EQ(expertForm(c, plain).kind, kernels::ExpertForm::Kind::Swiglu);

  ExpertWeights biased = plain;
  biased.b2 = 3;
  EXPECT_EQ(expertForm(c, biased).kind, kernels::ExpertForm::Kind::GatedFamily);
  EXPECT_FALSE(expertForm(c, biased).oai);

  Component oai = c;
  oai.activation = ExpertActivation::SwigluOai, oai.fusedGateUp = true;
  oai.swigluLimit = 7.0f, oai.swigluAlpha = 1.702f;
  const kernels::ExpertForm f = expertForm(oai, plain);
  EXPECT_EQ(f.kind, kernels::ExpertForm::Kind::GatedFamily);
  EXPECT_TRUE(f.oai);
  EXPECT_EQ(f.limit, 7.0f);
  EXPECT_EQ(f.alpha, 1.702f);

  Component gelu = c;
  gelu.activation = ExpertActivation::GeluTanh;
  EXPECT_EQ(expertForm(gelu, plain).kind, kernels::ExpertForm::Kind::NonGated);
  EXPECT_EQ(expertForm(gelu, plain).activation, kernels::PlainActivation::GeluTanh);

  EXPECT_EQ(denseFfnForm().kind, kernels::ExpertForm::Kind::Swiglu);
}
