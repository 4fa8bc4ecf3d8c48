//===- PlanEmitterTest.cpp - the plan that `disagmoe compile` emits ------===//
//
// Oracle: the sample exporter's own weights (golden/w_l0_*.npy, written by PyTorch) and config.
// The plan must point each component of layer 0 at bytes in model.onnx that equal the PyTorch
// tensor of that role (so q, k, v, o and w1, w3, w2 were told apart correctly), and must place
// layers and experts as requested.
//
//===----------------------------------------------------------------------===//
#include "compiler/emit/PlanEmitter.h"
#include "compiler/pipeline/Pipeline.h"
#include "dialects/moe/MoeDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "runtime/io/Npy.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {
namespace json = llvm::json;

const std::string kSample = DISAGMOE_SAMPLE_DIR;

/// Compiles mixtral_tiny at `attn` + `ffn` ranks; `edit` (optional) changes the compiled module
/// before the plan is emitted.
json::Object compileSample(int64_t attn, int64_t ffn, int64_t groups = 1,
                           const std::function<void(mlir::ModuleOp)> &edit = {}) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  disagmoe::CompileOptions options;
  options.attnRanks = attn;
  options.ffnRanks = ffn;
  options.groups = groups;
  auto compiled = disagmoe::compileOnnx(context, kSample + "/model.onnx", options, llvm::nulls());
  if (!compiled) {
    ADD_FAILURE() << llvm::toString(compiled.takeError());
    return json::Object();
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = std::move(*compiled);
  if (edit)
    edit(*module);
  // Through the runtime's writer: what `disagmoe compile` writes to plan.json.
  llvm::Expected<disagmoe::Plan> plan = disagmoe::emitPlan(*module, kSample + "/model.onnx");
  if (!plan) {
    ADD_FAILURE() << llvm::toString(plan.takeError());
    return json::Object();
  }
  llvm::Expected<json::Value> value = json::parse(disagmoe::planToJson(*plan));
  if (!value) {
    ADD_FAILURE() << llvm::toString(value.takeError());
    return json::Object();
  }
  return std::move(*value->getAsObject());
}

/// Bytes [offset, offset + length) of `file`.
std::vector<char> fileBytes(const std::string &file, int64_t offset, int64_t length) {
  std::ifstream in(file, std::ios::binary);
  in.seekg(offset);
  std::vector<char> bytes(length);
  in.read(bytes.data(), length);
  return in ? bytes : std::vector<char>{};
}

/// The manifest entry of weight `name`.
const json::Object *weightEntry(const json::Object &plan, llvm::StringRef name) {
  for (const json::Value &w : *plan.getObject("model")->getArray("weights"))
    if (w.getAsObject()->getString("name") == name)
      return w.getAsObject();
  return nullptr;
}

/// The plan's bytes for `name` equal the raw data of the PyTorch golden `npyFile` ([in, out]).
void expectWeightMatchesGolden(const json::Object &plan, llvm::StringRef name,
                               const std::string &npyFile) {
  const json::Object *w = weightEntry(plan, name);
  ASSERT_NE(w, nullptr) << name.str();
  auto bytes =
      fileBytes(w->getString("file")->str(), *w->getInteger("offset"), *w->getInteger("length"));
  const std::string path = kSample + "/golden/" + npyFile;
  disagmoe::NpyHeader header = disagmoe::readNpyHeader(path);
  std::vector<char> golden = fileBytes(path, header.dataOffset, header.dataBytes);
  ASSERT_EQ(bytes.size(), golden.size()) << npyFile;
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), golden.begin()))
      << name.str() << " does not hold the bytes of " << npyFile;
}

const json::Object *component(const json::Object &plan, llvm::StringRef kind, int64_t layer) {
  for (const json::Value &c : *plan.getObject("model")->getArray("components")) {
    const json::Object *o = c.getAsObject();
    if (o->getString("kind") == kind && o->getInteger("layer").value_or(-1) == layer)
      return o;
  }
  return nullptr;
}

TEST(PlanEmitter, HyperParametersEqualTheExportersConfig) {
  json::Object plan = compileSample(2, 2);
  const json::Object *m = plan.getObject("model");
  ASSERT_NE(m, nullptr);
  // samples/models/mixtral_tiny/golden/config.json
  EXPECT_EQ(m->getInteger("vocab_size"), 256);
  EXPECT_EQ(m->getInteger("hidden_size"), 64);
  EXPECT_EQ(m->getInteger("num_layers"), 4);
  EXPECT_EQ(m->getInteger("num_heads"), 4);
  EXPECT_EQ(m->getInteger("num_kv_heads"), 2);
  EXPECT_EQ(m->getInteger("head_dim"), 16);
  EXPECT_EQ(m->getInteger("num_experts"), 8);
  EXPECT_EQ(m->getInteger("top_k"), 2);
  EXPECT_EQ(m->getInteger("expert_hidden"), 128);
  EXPECT_EQ(m->getString("router_scoring"), "softmax_topk_renorm");
  EXPECT_DOUBLE_EQ(*m->getNumber("rope_theta"), 10000.0);
  EXPECT_NEAR(*m->getNumber("rms_norm_eps"), 1e-5, 1e-12);
  EXPECT_EQ(plan.getInteger("version"), disagmoe::kPlanVersion);
}

TEST(PlanEmitter, Layer0WeightsPointAtThePyTorchTensors) {
  json::Object plan = compileSample(2, 2);
  const json::Object *attn = component(plan, "attention", 0);
  ASSERT_NE(attn, nullptr);
  expectWeightMatchesGolden(plan, *attn->getString("wq"), "w_l0_q.npy");
  expectWeightMatchesGolden(plan, *attn->getString("wk"), "w_l0_k.npy");
  expectWeightMatchesGolden(plan, *attn->getString("wv"), "w_l0_v.npy");
  expectWeightMatchesGolden(plan, *attn->getString("wo"), "w_l0_o.npy");
  expectWeightMatchesGolden(plan, *component(plan, "router", 0)->getString("weight"),
                            "w_l0_router.npy");
  const json::Object *experts = component(plan, "experts", 0);
  ASSERT_NE(experts, nullptr);
  for (const json::Value &e : *experts->getArray("experts")) {
    const json::Object *o = e.getAsObject();
    std::string prefix = "w_l0_expert" + std::to_string(*o->getInteger("expert"));
    expectWeightMatchesGolden(plan, *o->getString("w1"), prefix + "_w1.npy");
    expectWeightMatchesGolden(plan, *o->getString("w3"), prefix + "_w3.npy");
    expectWeightMatchesGolden(plan, *o->getString("w2"), prefix + "_w2.npy");
  }
  for (const json::Value &c : *plan.getObject("model")->getArray("components")) {
    const json::Object *o = c.getAsObject();
    if (o->getString("kind") == "embedding")
      expectWeightMatchesGolden(plan, *o->getString("weight"), "w_embed.npy");
    if (o->getString("kind") == "head")
      expectWeightMatchesGolden(plan, *o->getString("weight"), "w_head.npy");
  }
}

TEST(PlanEmitter, ExpertsAreSplitContiguouslyOverTheFRanks) {
  json::Object plan = compileSample(1, 3);
  const json::Object *placement = plan.getObject("placement");
  EXPECT_EQ(placement->getInteger("world_size"), 4);
  // floor(e * 3 / 8) + first F-rank (1): 0,0,0,1,1,1,2,2 -> ranks 1,1,1,2,2,2,3,3
  const std::vector<int64_t> expected = {1, 1, 1, 2, 2, 2, 3, 3};
  for (const json::Value &layer : *placement->getArray("expert_to_rank")) {
    std::vector<int64_t> got;
    for (const json::Value &r : *layer.getAsArray())
      got.push_back(*r.getAsInteger());
    EXPECT_EQ(got, expected);
  }
  // Expert weights live only on their F-rank; attention weights on every A-rank.
  const json::Object *experts = component(plan, "experts", 2);
  const json::Object *e5 = (*experts->getArray("experts"))[5].getAsObject();
  const json::Array *ranks = weightEntry(plan, *e5->getString("w2"))->getArray("ranks");
  ASSERT_EQ(ranks->size(), 1u);
  EXPECT_EQ((*ranks)[0].getAsInteger(), 2);
}

TEST(PlanEmitter, InterleavedGroupsHoldEveryPthLayer) {
  json::Object plan = compileSample(2, 2, /*groups=*/2);
  const json::Array *groups = plan.getObject("placement")->getArray("groups");
  ASSERT_EQ(groups->size(), 4u);
  for (const json::Value &g : *groups) {
    const json::Object *o = g.getAsObject();
    int64_t index = *o->getInteger("index");
    std::vector<int64_t> layers;
    for (const json::Value &l : *o->getArray("layers"))
      layers.push_back(*l.getAsInteger());
    EXPECT_EQ(layers, (std::vector<int64_t>{index, index + 2})) << "group " << index;
  }
}

TEST(PlanEmitter, SavePlanReportsUnwritableDirectories) {
  llvm::Error error = disagmoe::savePlan(disagmoe::Plan(), "/proc/disagmoe-cannot-write-here");
  ASSERT_TRUE(static_cast<bool>(error));
  const std::string message = llvm::toString(std::move(error));
  EXPECT_NE(message.find("/proc/disagmoe-cannot-write-here"), std::string::npos) << message;
}
} // namespace

// moe.router's DeepSeek-V3 parts reach the plan: the sigmoid scoring, n_group / topk_group and the
// correction bias, a weight [experts] held by the A-ranks running the router. (mixtral_tiny's
// routers, edited after compile: the 8 floats at the start of the router weight's bytes serve as
// the bias.)
TEST(PlanEmitter, SigmoidRouterGroupsAndCorrectionBias) {
  json::Object plan = compileSample(2, 2, 1, [](mlir::ModuleOp module) {
    module.walk([](disagmoe::moe::RouterOp r) {
      auto w = r.getWeight().getDefiningOp<disagmoe::onnxir::WeightOp>();
      mlir::OpBuilder b(w);
      b.setInsertionPointAfter(w);
      auto bias = b.create<disagmoe::onnxir::WeightOp>(
          w.getLoc(), mlir::RankedTensorType::get({8}, b.getF32Type()),
          b.getStringAttr("l" + std::to_string(r.getLayer()) + ".e_score_correction_bias"),
          w.getFileAttr(), w.getOffsetAttr(), b.getI64IntegerAttr(32), mlir::ElementsAttr(),
          mlir::UnitAttr(), mlir::IntegerAttr(), mlir::TypeAttr());
      r.getCorrectionBiasMutable().assign(bias.getResult());
      r.setScoring("sigmoid_group_topk_renorm");
      r.setNGroupAttr(b.getI64IntegerAttr(4));
      r.setTopkGroupAttr(b.getI64IntegerAttr(2));
    });
  });
  const json::Object *m = plan.getObject("model");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->getString("router_scoring"), "sigmoid_group_topk_renorm");
  EXPECT_EQ(m->getInteger("n_group"), 4);
  EXPECT_EQ(m->getInteger("topk_group"), 2);
  EXPECT_EQ(m->getBoolean("norm_topk_prob"), true);
  for (int64_t layer = 0; layer < 4; ++layer) {
    const json::Object *router = component(plan, "router", layer);
    ASSERT_NE(router, nullptr);
    const std::string name = "l" + std::to_string(layer) + ".e_score_correction_bias";
    EXPECT_EQ(router->getString("correction_bias"), name);
    const json::Object *bias = weightEntry(plan, name);
    const json::Object *weight = weightEntry(plan, *router->getString("weight"));
    ASSERT_NE(bias, nullptr);
    ASSERT_NE(weight, nullptr);
    EXPECT_EQ(*bias->get("shape"), json::Value(json::Array{8}));
    EXPECT_EQ(*bias->get("ranks"), *weight->get("ranks")) << "held where the router runs";
  }
}
