// The cuda backend's RMSNorm: launch configuration (host logic, runs everywhere) and the kernel
// against the CPU kernel on the PyTorch-checked layer-0 golden input (GPU only; skips otherwise).
#include "runtime/backends/cuda/CudaRmsNorm.h"
#include "runtime/backends/cpu/Kernels.h"
#include "runtime/io/Npy.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace disagmoe;

TEST(CudaRmsNorm, BlockSizeIsAPowerOfTwoCoveringTheRowWithinCudaLimits) {
  EXPECT_EQ(cuda::rmsNormBlockSize(1), 32);
  EXPECT_EQ(cuda::rmsNormBlockSize(32), 32);
  EXPECT_EQ(cuda::rmsNormBlockSize(33), 64);
  EXPECT_EQ(cuda::rmsNormBlockSize(64), 64);
  EXPECT_EQ(cuda::rmsNormBlockSize(2880), 1024); // GPT-OSS hidden: threads stride over the row
  EXPECT_THROW(cuda::rmsNormBlockSize(0), std::invalid_argument);
}

TEST(CudaRmsNorm, MatchesTheGoldenOnTheGpu) {
  if (cuda::deviceCount() == 0)
    GTEST_SKIP() << "no CUDA device: the cuda kernel test runs only where a GPU is present";
  Tensor x = readNpyFloat32(test::goldenPath("l0_x.npy"));
  Tensor w = readNpyFloat32(test::goldenPath("w_l0_attn_norm.npy"));
  Tensor expected = readNpyFloat32(test::goldenPath("l0_attn_norm.npy"));
  const int64_t hidden = x.shape.back(), tokens = x.numel() / hidden;
  std::vector<float> y(x.data.size());
  std::string error;
  ASSERT_TRUE(cuda::rmsNorm(x.data.data(), w.data.data(), y.data(), tokens, hidden, 1e-5f, error))
      << error;
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(y[i]) - expected.data[i]));
  EXPECT_LE(worst, 1e-5);
}
