//===- ConfigFrontendTest.cpp - config.json -> moe IR -> ModelShape --------===//
//
// Oracles: the parameter totals of docs/reference/models.json ("computed_params", arithmetic
// from the published configs by an independent script), and the IR's own moe.param shapes.
//
//===----------------------------------------------------------------------===//
#include "frontends/config/ConfigFrontend.h"
#include "frontends/config/CostExtraction.h"

#include "dialects/moe/MoeDialect.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace disagmoe;

namespace {
const std::string kConfigs = std::string(DISAGMOE_SOURCE_DIR) + "/samples/configs/";

struct Expected {
  const char *file;
  double totalB;  ///< models.json computed_params.total_B
  double activeB; ///< models.json computed_params.active_excl_input_embedding_B
  int64_t layers, experts, topK;
};

class Configs : public ::testing::TestWithParam<Expected> {};
} // namespace

TEST_P(Configs, ImportsVerifiesAndCountsTheReferenceParameters) {
  const Expected &e = GetParam();
  mlir::MLIRContext context;
  auto imported = configfe::importModelConfig(context, kConfigs + e.file, 1, 64);
  ASSERT_TRUE(static_cast<bool>(imported)) << llvm::toString(imported.takeError());
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*imported);
  cost::ModelShape shape;
  llvm::Error extracted = configfe::extractModelShape(*module, shape);
  ASSERT_FALSE(static_cast<bool>(extracted)) << llvm::toString(std::move(extracted));
  EXPECT_EQ(shape.numLayers(), e.layers);
  EXPECT_EQ(shape.numExperts(), e.experts);
  EXPECT_EQ(shape.topK(), e.topK);
  // Two counts: the IR's parameter tensors, and the cost model's closed forms over the shape.
  double ir = configfe::countIrParameters(*module);
  EXPECT_NEAR(shape.totalParams() / ir, 1.0, 1e-9);
  // Biases, sinks and q/k norms are not modelled: within 0.5% of the reference totals.
  EXPECT_NEAR(ir / 1e9 / e.totalB, 1.0, 5e-3) << e.file << ": " << ir / 1e9 << "B";
  EXPECT_NEAR(shape.activeParams() / 1e9 / e.activeB, 1.0, 1e-2) << e.file;
}

INSTANTIATE_TEST_SUITE_P(
    ReferenceModels, Configs,
    ::testing::Values(Expected{"deepseek-moe-16b.json", 16.38, 2.62, 28, 64, 6},
                      Expected{"qwen3-30b-a3b.json", 30.53, 3.04, 48, 128, 8},
                      Expected{"qwen3-235b.json", 235.09, 21.57, 94, 128, 8},
                      Expected{"gpt-oss-120b.json", 116.83, 5.13, 36, 128, 4},
                      Expected{"gpt-oss-20b.json", 20.91, 3.61, 24, 32, 4},
                      Expected{"mixtral-8x7b.json", 46.7, 12.75, 32, 8, 2},
                      Expected{"mixtral-8x22b.json", 140.62, 38.96, 56, 8, 2}));

TEST(ConfigFrontend, LayerStructureFollowsTheConfig) {
  mlir::MLIRContext context;
  cost::ModelShape ds, oss;
  auto a = configfe::importModelConfig(context, kConfigs + "deepseek-moe-16b.json", 2, 16);
  ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
  llvm::Error extracted = configfe::extractModelShape(**a, ds);
  ASSERT_FALSE(static_cast<bool>(extracted)) << llvm::toString(std::move(extracted));
  // first_k_dense_replace = 1: layer 0 is a dense FFN of 10944, the rest MoE with 2 x 1408 shared.
  EXPECT_FALSE(ds.layers[0].isMoe());
  EXPECT_EQ(ds.layers[0].denseHidden, 10944);
  EXPECT_EQ(ds.layers[1].sharedHidden, 2 * 1408);
  EXPECT_EQ(ds.layers[1].expertHidden, 1408);
  auto b = configfe::importModelConfig(context, kConfigs + "gpt-oss-120b.json", 1, 16);
  ASSERT_TRUE(static_cast<bool>(b)) << llvm::toString(b.takeError());
  extracted = configfe::extractModelShape(**b, oss);
  ASSERT_FALSE(static_cast<bool>(extracted)) << llvm::toString(std::move(extracted));
  // layer_types: sliding (window 128) on even layers, full attention on odd ones.
  EXPECT_EQ(oss.layers[0].window, 128);
  EXPECT_EQ(oss.layers[1].window, 0);
  EXPECT_EQ(oss.layers[34].window, 128);
  EXPECT_EQ(oss.layers[35].window, 0);
  EXPECT_EQ(oss.layers[0].heads * oss.layers[0].headDim, 4096); // q width != hidden 2880
}

TEST(ConfigFrontend, RefusesWhatMoeAttentionCannotExpress) {
  mlir::MLIRContext context;
  auto mla = configfe::importModelConfig(context, kConfigs + "deepseek-v3.json", 1, 16);
  ASSERT_FALSE(static_cast<bool>(mla));
  std::string error = llvm::toString(mla.takeError());
  EXPECT_NE(error.find("kv_lora_rank: multi-head latent attention"), std::string::npos) << error;
  auto missing = configfe::importModelConfig(context, kConfigs + "nope.json", 1, 16);
  ASSERT_FALSE(static_cast<bool>(missing));
  error = llvm::toString(missing.takeError());
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
}
