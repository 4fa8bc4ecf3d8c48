//===- PlanRoundTripTest.cpp - emit, parse, write: byte-identical ---------===//
//
// The plan schema is owned once by runtime/plan (PlanSchema.cpp), read by parsePlan and written by
// writePlan. Oracle: the emitted plan itself. For every committed sample the frontend imports, the
// plan `disagmoe compile` would write is parsed back (with the runtime's full validation) and
// written again; the two texts must be byte-identical, so a field written and not read (or read
// under another key, or rounded on the way) fails here, naming the sample and the first line that
// differs.
//
//===----------------------------------------------------------------------===//
#include "compiler/emit/ExchangeCapacity.h"
#include "compiler/emit/PlanEmitter.h"
#include "compiler/emit/ScheduleEmitter.h"
#include "compiler/pipeline/Pipeline.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::string kSamples = DISAGMOE_SAMPLES_ROOT;

/// Samples that the frontend refuses by design (a traced dispatch baked to the example's experts),
/// or does not import yet (issue 12: deepseek_v3_tiny, whose low-rank query (q_lora_rank)
/// moe.mla_attention does not represent, refused in one line as e2e.onnxruntime_oracle checks):
/// they have no plan to round-trip.
bool refusedByDesign(const std::string &model) {
  return model.find("/moe_infer") != std::string::npos ||
         model.find("/deepseek_v3_tiny/") != std::string::npos;
}

std::vector<std::string> sampleModels() {
  std::vector<std::string> models;
  for (const auto &entry : std::filesystem::recursive_directory_iterator(kSamples))
    if (entry.path().filename() == "model.onnx" && !refusedByDesign(entry.path().string()))
      models.push_back(entry.path().string());
  std::sort(models.begin(), models.end());
  return models;
}

/// The first line where `a` and `b` differ, for the failure message.
std::string firstDifference(const std::string &a, const std::string &b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ea = !std::getline(sa, la), eb = !std::getline(sb, lb);
    if (ea && eb)
      return "identical";
    if (ea != eb || la != lb)
      return "line " + std::to_string(line) + ": emitted '" + la + "', rewritten '" + lb + "'";
  }
}

/// Compiles `model` with `options` to the plan `disagmoe compile` writes, parses that text back,
/// writes it again, and compares.
void expectRoundTrip(const std::string &model, const disagmoe::CompileOptions &options,
                     int64_t capacityTokens = 0) {
  SCOPED_TRACE(model);
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  auto compiled = disagmoe::compileOnnx(context, model, options, llvm::nulls());
  ASSERT_TRUE(static_cast<bool>(compiled)) << llvm::toString(compiled.takeError());
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*compiled);
  llvm::Expected<disagmoe::Plan> plan = disagmoe::emitPlan(*module, model);
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  llvm::Expected<std::string> note = disagmoe::emitSchedule(*module, *plan);
  ASSERT_TRUE(static_cast<bool>(note)) << llvm::toString(note.takeError());
  if (capacityTokens > 0) {
    llvm::Error e = disagmoe::applyExchangeCapacity(*plan, capacityTokens);
    ASSERT_FALSE(static_cast<bool>(e)) << llvm::toString(std::move(e));
  }
  const std::string emitted = disagmoe::planToJson(*plan);
  const std::string planPath =
      (std::filesystem::temp_directory_path() / "disagmoe-roundtrip" / "plan.json").string();
  disagmoe::Plan parsed;
  try {
    parsed = disagmoe::parsePlan(emitted, planPath);
  } catch (const disagmoe::PlanError &e) {
    FAIL() << "the emitted plan does not load: " << e.what();
  }
  const std::string rewritten = disagmoe::planToJson(parsed);
  EXPECT_TRUE(emitted == rewritten) << firstDifference(emitted, rewritten);
}

TEST(PlanRoundTrip, EverySampleAtTwoPlusTwoRanks) {
  const std::vector<std::string> models = sampleModels();
  ASSERT_GE(models.size(), 20u) << "samples missing under " << kSamples;
  for (const std::string &model : models)
    expectRoundTrip(model, disagmoe::CompileOptions());
}

// The optional placement forms: interleaved groups, the embedding and head on the FFN side (their
// exchanges and instructions), dense layers and shared experts on the FFN side, bounded capacity.
TEST(PlanRoundTrip, SidesGroupsAndCapacity) {
  disagmoe::CompileOptions edges;
  edges.groups = 2;
  edges.embeddingSide = "ffn";
  edges.headSide = "ffn";
  expectRoundTrip(kSamples + "/mixtral_tiny/model.onnx", edges);
  disagmoe::CompileOptions ffnSide;
  ffnSide.denseSide = "ffn";
  ffnSide.sharedExpertsSide = "ffn";
  expectRoundTrip(kSamples + "/deepseek_moe_tiny/model.onnx", ffnSide);
  expectRoundTrip(kSamples + "/qwen3_moe_tiny/model.onnx", disagmoe::CompileOptions(), 12);
}

// The float16 / bfloat16 exports (samples/models/mixtral_dtypes) keep every weight in its stored
// dtype in the plan: the dtype's name and 2 bytes an element (the ONNX initializers' size), and the
// dtype survives parsing (the rest of the text round-trips in EverySampleAtTwoPlusTwoRanks).
TEST(PlanRoundTrip, LowPrecisionWeightsKeepTheirStoredDtype) {
  for (const auto &[form, dtype] :
       {std::pair<std::string, std::string>{"hf_bf16_opset17", "bfloat16"},
        {"hf_fp16_opset17", "float16"}}) {
    SCOPED_TRACE(form);
    const std::string model = kSamples + "/mixtral_dtypes/" + form + "/model.onnx";
    mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
    auto compiled =
        disagmoe::compileOnnx(context, model, disagmoe::CompileOptions(), llvm::nulls());
    ASSERT_TRUE(static_cast<bool>(compiled)) << llvm::toString(compiled.takeError());
    mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*compiled);
    llvm::Expected<disagmoe::Plan> plan = disagmoe::emitPlan(*module, model);
    ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
    ASSERT_FALSE(plan->model.weights.empty());
    for (const disagmoe::WeightSpec &w : plan->model.weights) {
      int64_t elements = 1;
      for (int64_t d : w.shape)
        elements *= d;
      EXPECT_EQ(w.dtype, dtype) << w.name;
      EXPECT_EQ(w.length, static_cast<uint64_t>(2 * elements)) << w.name;
    }
    disagmoe::Plan parsed;
    try {
      parsed = disagmoe::parsePlan(disagmoe::planToJson(*plan), "/tmp/plan.json");
    } catch (const disagmoe::PlanError &e) {
      FAIL() << "the emitted plan does not load: " << e.what();
    }
    ASSERT_EQ(parsed.model.weights.size(), plan->model.weights.size());
    for (const disagmoe::WeightSpec &w : parsed.model.weights)
      EXPECT_EQ(w.dtype, dtype) << w.name;
  }
}

} // namespace
