// plan.json loading and validation: a valid plan's lookups, and one test per class of error, each
// checking the exact one-line message "<plan path>: <field path>: <problem>".
#include "TestSupport.h"

#include "runtime/plan/Plan.h"
#include "runtime/plan/Weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace disagmoe;
using namespace disagmoe::test;
using json = nlohmann::json;

namespace {

TinyPlacement twoByTwo() {
  TinyPlacement p;
  p.attentionGroups = {{0, 1}};
  p.ffnGroups = {{2, 3}};
  p.expertToRank = {{2, 2, 2, 2, 3, 3, 3, 3}};
  return p;
}

// Loads `plan` from a fresh directory; returns the PlanError message with the path prefix removed.
std::string errorOf(const json &plan) {
  const std::string path = writePlan(plan, "plan_error");
  try {
    loadPlan(path);
  } catch (const PlanError &e) {
    const std::string message = e.what();
    if (message.rfind(path + ": ", 0) != 0)
      return "(message does not start with the path) " + message;
    return message.substr(path.size() + 2);
  }
  return "(no error)";
}

// Index of the weight named `name` in plan["model"]["weights"].
size_t weightIndex(const json &plan, const std::string &name) {
  const json &weights = plan["model"]["weights"];
  for (size_t i = 0; i < weights.size(); ++i)
    if (weights[i]["name"] == name)
      return i;
  ADD_FAILURE() << "no weight " << name;
  return 0;
}

} // namespace

TEST(Plan, LoadsAValidPlanFromItsDirectory) {
  const std::string path = writePlan(tinyPlan(twoByTwo()), "plan_ok");
  const Plan plan = loadPlan(std::filesystem::path(path).parent_path().string());
  EXPECT_EQ(plan.path, path);
  EXPECT_EQ(plan.model.hiddenSize, 64);
  EXPECT_EQ(plan.model.routerScoring, RouterScoring::SoftmaxTopkRenorm);
  EXPECT_EQ(plan.placement.attentionSize(), 2);
  EXPECT_EQ(plan.placement.ffnGroupOfLayer(0).ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(plan.placement.nextAttentionGroup(0).index, 0);
  EXPECT_EQ(plan.placement.indexInGroup(3), 1);
  EXPECT_EQ(plan.programs.attention.size(), 12u);
  EXPECT_EQ(plan.programs.ffn.size(), 3u);
  EXPECT_EQ(plan.exchange(ExchangeKind::M2n, 0).bytesPerToken, 8 + 256 + 8 + 24);
  const Component &experts = plan.model.components[plan.model.layers[0].experts];
  ASSERT_EQ(experts.experts.size(), 8u);
  EXPECT_EQ(plan.model.weights[experts.experts[5].w2].ranks, std::vector<int>{3});
  EXPECT_EQ(plan.memory.weightBytes[2], plan.memory.weightBytes[3]);
  EXPECT_EQ(plan.memory.activationBytes[0], std::optional<uint64_t>(16 * 64 * 4));
  EXPECT_EQ(plan.memory.activationBytes[1], std::nullopt);
}

TEST(Plan, RejectsAnUnknownVersionOrFormat) {
  json plan = tinyPlan(twoByTwo());
  plan["version"] = 2;
  EXPECT_EQ(errorOf(plan), "version: 2 is not supported (this runtime reads version 1)");
  plan = tinyPlan(twoByTwo());
  plan["format"] = "onnx";
  EXPECT_EQ(errorOf(plan), "format: \"onnx\" is not a disagmoe plan (expected \"disagmoe-plan\")");
}

TEST(Plan, RejectsMissingFieldsAndWrongTypes) {
  json plan = tinyPlan(twoByTwo());
  plan["model"].erase("hidden_size");
  EXPECT_EQ(errorOf(plan), "model.hidden_size: missing");
  plan = tinyPlan(twoByTwo());
  plan["model"]["weights"][3].erase("offset");
  EXPECT_EQ(errorOf(plan), "model.weights[3].offset: missing");
  plan = tinyPlan(twoByTwo());
  plan["model"]["top_k"] = "2";
  EXPECT_EQ(errorOf(plan), "model.top_k: expected an integer, got string \"2\"");
  plan = tinyPlan(twoByTwo());
  plan["model"]["top_k"] = 9;
  EXPECT_EQ(errorOf(plan), "model.top_k: 9 is out of range [1, 8]");
}

TEST(Plan, RejectsInvalidJson) {
  const std::string path = makeTempDir("plan_json") + "/plan.json";
  writeText(path, "{ \"format\": ");
  try {
    loadPlan(path);
    FAIL();
  } catch (const PlanError &e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": not valid JSON at line 1, column 13: ", 0), 0u)
        << e.what();
  }
}

TEST(Plan, RejectsAbsurdlyDeepJsonBeforeParsingIt) {
  // nlohmann-json would overflow the stack freeing 100000 nested arrays.
  const std::string path = makeTempDir("plan_json") + "/plan.json";
  writeText(path, std::string(100000, '[') + std::string(100000, ']'));
  try {
    loadPlan(path);
    FAIL();
  } catch (const PlanError &e) {
    EXPECT_EQ(std::string(e.what()), path + ": invalid plan: JSON nested deeper than 64 levels");
  }
}

TEST(Plan, RejectsWeightLengthThatDoesNotMatchItsShape) {
  json plan = tinyPlan(twoByTwo());
  const size_t i = weightIndex(plan, "l0.expert0.w1");
  plan["model"]["weights"][i]["length"] = 4096;
  EXPECT_EQ(errorOf(plan),
            "model.weights[" + std::to_string(i) +
                "].length: 4096 does not match shape [64,128] float32 (32768 bytes)");
}

TEST(Plan, RejectsWeightsOutsideTheirFile) {
  json plan = tinyPlan(twoByTwo());
  const size_t i = weightIndex(plan, "l0.q");
  plan["model"]["weights"][i]["offset"] = 129;
  const std::string file = goldenPath("w_l0_q.npy");
  EXPECT_EQ(errorOf(plan),
            "model.weights[" + std::to_string(i) +
                "].offset: weight \"l0.q\": offset 129 + length 16384 exceeds the size of \"" +
                file + "\" (16512 bytes)");
  plan = tinyPlan(twoByTwo());
  plan["model"]["weights"][i]["file"] = "missing.bin";
  const std::string message = errorOf(plan);
  EXPECT_EQ(message.rfind("model.weights[" + std::to_string(i) +
                              "].file: weight \"l0.q\": cannot open \"",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("missing.bin\": No such file or directory"), std::string::npos) << message;
}

TEST(Plan, ReadsAStridedWindowOfAWiderMatrix) {
  // A [3, 5] float matrix 0..14 on disk; the window [3, 2] of its columns 1..2 (normalize-onnx's
  // SplitPackedQkv references a packed [in, out] projection's q, k and v blocks so).
  const std::string dir = makeTempDir("strided_weight");
  const std::string file = dir + "/w.bin";
  {
    std::ofstream out(file, std::ios::binary);
    for (int i = 0; i < 15; ++i) {
      const float v = static_cast<float>(i);
      out.write(reinterpret_cast<const char *>(&v), sizeof v);
    }
  }
  WeightSpec spec;
  spec.name = "w[1:3]";
  spec.dtype = "float32";
  spec.shape = {3, 2};
  spec.file = spec.path = file;
  spec.offset = 4;
  spec.length = 24;
  spec.rowStride = 20;
  const Tensor t = readWeight(spec);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t.data, (std::vector<float>{1, 2, 6, 7, 11, 12}));
}

TEST(Plan, ReadsFloat16AndBfloat16WeightsAsFloat32) {
  // A [3, 5] matrix 0..14 (plus -0.5 and 1/3 rounded to the dtype at [0][0], [0][1]) stored as
  // float16 and as bfloat16; its [3, 2] window of columns 1..2 and its whole transposed [5, 3].
  // Bit patterns from IEEE 754 binary16 (bias 15) and bfloat16 (a float32's high half), written
  // out by hand: 1/3 is 0x3555 in binary16 (0.333251953125) and 0x3EAB in bfloat16 (0.333984375).
  auto f16 = [](int i) -> uint16_t {
    if (i == 0)
      return 0xB800; // -0.5
    if (i == 1)
      return 0x3555;
    int e = 0;
    while ((i >> (e + 1)) != 0)
      ++e;
    return static_cast<uint16_t>(((e + 15) << 10) | (((i << 10) >> e) & 0x3ff));
  };
  auto bf16 = [](int i) -> uint16_t {
    if (i == 0)
      return 0xBF00; // -0.5
    if (i == 1)
      return 0x3EAB;
    const float v = static_cast<float>(i);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return static_cast<uint16_t>(bits >> 16); // small integers are exact in bfloat16
  };
  const std::string dir = makeTempDir("half_weight");
  for (const std::string dtype : {"float16", "bfloat16"}) {
    const std::string file = dir + "/" + dtype + ".bin";
    {
      std::ofstream out(file, std::ios::binary);
      for (int i = 0; i < 15; ++i) {
        const uint16_t b = dtype == "float16" ? f16(i) : bf16(i);
        out.write(reinterpret_cast<const char *>(&b), sizeof b);
      }
    }
    const float third = dtype == "float16" ? 0.333251953125f : 0.333984375f;
    WeightSpec spec;
    spec.name = "w";
    spec.dtype = dtype;
    spec.shape = {3, 2};
    spec.file = spec.path = file;
    spec.offset = 2;
    spec.length = 12;
    spec.rowStride = 10;
    Tensor t = readWeight(spec);
    EXPECT_EQ(t.data, (std::vector<float>{third, 2, 6, 7, 11, 12})) << dtype;
    spec.shape = {5, 3};
    spec.offset = 0;
    spec.length = 30;
    spec.rowStride = 0;
    spec.transposed = true;
    t = readWeight(spec);
    EXPECT_EQ(t.shape, (std::vector<int64_t>{5, 3})) << dtype;
    EXPECT_EQ(t.data,
              (std::vector<float>{-0.5f, 5, 10, third, 6, 11, 2, 7, 12, 3, 8, 13, 4, 9, 14}))
        << dtype;
    spec.length = 60; // float32's length for 15 elements
    EXPECT_THROW(readWeight(spec), WeightError) << dtype;
  }
}

TEST(Plan, ChecksAWeightsLengthAgainstItsDtype) {
  json plan = tinyPlan(twoByTwo());
  const size_t i = weightIndex(plan, "l0.q");
  plan["model"]["weights"][i]["dtype"] = "float64";
  EXPECT_EQ(errorOf(plan), "model.weights[" + std::to_string(i) +
                               "].dtype: \"float64\" is not supported (version 1 reads float32, "
                               "float16 or bfloat16)");
  plan["model"]["weights"][i]["dtype"] = "float16"; // the file's float32 length is twice float16's
  EXPECT_EQ(errorOf(plan), "model.weights[" + std::to_string(i) +
                               "].length: 16384 does not match shape [64,64] float16 (8192 bytes)");
  plan["model"]["weights"][i]["length"] = 8192;
  for (auto &entry : plan["memory"]["ranks"]) // weight_bytes sums `length` (the bytes read)
    for (const auto &r : plan["model"]["weights"][i]["ranks"])
      if (entry["rank"] == r)
        entry["weight_bytes"] = entry["weight_bytes"].get<int64_t>() - 8192;
  EXPECT_EQ(errorOf(plan), "(no error)");
}

TEST(Plan, RejectsStridedWindowsOutsideTheirFileOrTransposed) {
  json plan = tinyPlan(twoByTwo());
  const size_t i = weightIndex(plan, "l0.q");
  const int64_t offset = plan["model"]["weights"][i]["offset"];
  plan["model"]["weights"][i]["row_stride"] = 512; // the last of 64 rows ends 63 * 512 + 256 in
  EXPECT_EQ(errorOf(plan), "model.weights[" + std::to_string(i) +
                               "].offset: weight \"l0.q\": offset " + std::to_string(offset) +
                               " + extent 32512 exceeds the size of \"" + goldenPath("w_l0_q.npy") +
                               "\" (16512 bytes)");
  plan["model"]["weights"][i]["row_stride"] = 128;
  EXPECT_EQ(errorOf(plan), "model.weights[" + std::to_string(i) +
                               "].row_stride: 128 bytes is less than a row's 256");
  plan["model"]["weights"][i]["row_stride"] = 256;
  plan["model"]["weights"][i]["transposed"] = true;
  EXPECT_EQ(errorOf(plan),
            "model.weights[" + std::to_string(i) +
                "].row_stride: only a 2-D weight read as stored can have a row stride");
}

TEST(Plan, RejectsShapesInconsistentWithHyperParameters) {
  json plan = tinyPlan(twoByTwo());
  plan["model"]["components"][2]["wq"] = "l0.k";
  EXPECT_EQ(errorOf(plan),
            "model.components[2].wq: weight \"l0.k\" has shape [64,32], expected [64,64] "
            "(hidden_size, num_heads*head_dim)");
  plan = tinyPlan(twoByTwo());
  plan["model"]["num_kv_heads"] = 3;
  EXPECT_EQ(errorOf(plan), "model.num_kv_heads: 3 does not divide num_heads 4");
}

TEST(Plan, RejectsExpertsPlacedOutsideTheLayersFfnGroup) {
  json plan = tinyPlan(twoByTwo());
  plan["placement"]["expert_to_rank"][0][5] = 1;
  EXPECT_EQ(errorOf(plan), "placement.expert_to_rank[0][5]: rank 1 is not in ffn group 0, which "
                           "runs layer 0 (ranks 2,3)");
}

TEST(Plan, RejectsWeightsMissingOnARankThatNeedsThem) {
  json plan = tinyPlan(twoByTwo());
  const size_t i = weightIndex(plan, "l0.router");
  plan["model"]["weights"][i]["ranks"] = {0};
  json &rank1 = plan["memory"]["ranks"][1];
  rank1["weight_bytes"] = rank1["weight_bytes"].get<int64_t>() - 2048;
  EXPECT_EQ(errorOf(plan),
            "model.weights[" + std::to_string(i) +
                "].ranks: rank 1 runs layer 0 router but does not hold weight \"l0.router\"");
}

TEST(Plan, RejectsGroupsThatDoNotCoverTheWorld) {
  json plan = tinyPlan(twoByTwo());
  plan["placement"]["world_size"] = 5;
  plan["memory"]["ranks"].push_back({{"rank", 4}, {"weight_bytes", 0}});
  EXPECT_EQ(errorOf(plan), "placement.groups: rank 4 is in no group");
  plan = tinyPlan(twoByTwo());
  plan["placement"]["groups"][1]["ranks"] = {1, 3};
  EXPECT_EQ(errorOf(plan),
            "placement.groups[1].ranks[0]: rank 1 is already in placement.groups[0]");
}

TEST(Plan, RejectsProgramsThatDoNotMatchSendsWithReceives) {
  json plan = tinyPlan(twoByTwo());
  json &attention = plan["programs"]["attention"];
  for (size_t i = 0; i < attention.size(); ++i)
    if (attention[i]["op"] == "n2m_recv") {
      attention.erase(i);
      break;
    }
  EXPECT_EQ(errorOf(plan), "programs.attention: no n2m_recv for layer 0");
  plan = tinyPlan(twoByTwo());
  plan["programs"]["ffn"][1]["stream"] = "comm";
  EXPECT_EQ(errorOf(plan),
            "programs.ffn[1].stream: experts runs on the forward stream, not \"comm\"");
  plan = tinyPlan(twoByTwo());
  plan["programs"]["ffn"][0]["op"] = "embed";
  EXPECT_EQ(errorOf(plan), "programs.ffn[0].op: \"embed\" is not an ffn instruction");
}

TEST(Plan, RejectsExchangesWithWrongGroupsOrSizes) {
  json plan = tinyPlan(twoByTwo());
  plan["exchanges"][0]["bytes_per_token"] = 272;
  EXPECT_EQ(
      errorOf(plan),
      "exchanges[0].bytes_per_token: 272, expected 296 (8 token id + 4*hidden x + 8 n_local + "
      "12*top_k expert/gate pairs)");
  plan = tinyPlan(twoByTwo());
  plan["exchanges"][1]["src_group"] = 1;
  EXPECT_EQ(errorOf(plan), "exchanges[1].src_group: 1, but n2m of layer 0 leaves ffn group 0");
  plan = tinyPlan(twoByTwo());
  plan["exchanges"].erase(2);
  EXPECT_EQ(errorOf(plan), "exchanges: no residual exchange for layer 0");
}

TEST(Plan, RejectsMemoryThatDisagreesWithTheManifest) {
  json plan = tinyPlan(twoByTwo());
  const uint64_t stated = plan["memory"]["ranks"][2]["weight_bytes"].get<uint64_t>();
  plan["memory"]["ranks"][2]["weight_bytes"] = stated + 4;
  EXPECT_EQ(errorOf(plan), "memory.ranks[2].weight_bytes: " + std::to_string(stated + 4) +
                               ", but model.weights puts " + std::to_string(stated) +
                               " bytes on rank 2");
}

TEST(Plan, ReadsTheSigmoidGroupLimitedRouter) {
  const std::string path = writePlan(withSigmoidRouter(tinyPlan(twoByTwo()), 4, 2), "plan_v3");
  const Plan plan = loadPlan(path);
  EXPECT_EQ(plan.model.routerScoring, RouterScoring::SigmoidGroupTopkRenorm);
  EXPECT_EQ(plan.model.routerGroups.nGroup, 4);
  EXPECT_EQ(plan.model.routerGroups.topkGroup, 2);
  const Component &router = plan.model.components[plan.model.layers[0].router];
  ASSERT_GE(router.correctionBias, 0);
  EXPECT_EQ(plan.model.weights[router.correctionBias].name, "l0.correction_bias");
  EXPECT_EQ(plan.model.weights[router.correctionBias].shape, (std::vector<int64_t>{8}));
}

TEST(Plan, RejectsGroupsTheRouterCannotForm) {
  const json plan = tinyPlan(twoByTwo()); // 8 experts, top-2
  EXPECT_EQ(errorOf(withSigmoidRouter(plan, 3, 1)),
            "model.n_group: 3 does not divide num_experts 8");
  EXPECT_EQ(errorOf(withSigmoidRouter(plan, 8, 2)),
            "model.n_group: groups of 1 expert: a group's score is the sum of its top 2");
  EXPECT_EQ(errorOf(withSigmoidRouter(plan, 4, 5)), "model.topk_group: 5 is out of range [1, 4]");
  json wide = withSigmoidRouter(plan, 4, 1);
  wide["model"]["top_k"] = 3;
  EXPECT_EQ(errorOf(wide), "model.topk_group: top_k 3 exceeds the 2 experts of the 1 kept "
                           "group(s) of 2");
  json softmax = withSigmoidRouter(plan, 4, 2);
  softmax["model"]["router_scoring"] = "softmax_topk";
  EXPECT_EQ(errorOf(softmax), "model.n_group: group-limited routing is defined for the "
                              "sigmoid_group_topk scorings only, not softmax_topk");
  json badBias = withSigmoidRouter(plan, 4, 2);
  badBias["model"]["weights"].back()["shape"] = {2, 4};
  EXPECT_NE(errorOf(badBias).find(".correction_bias: weight \"l0.correction_bias\" has shape "
                                  "[2,4], expected [8] (num_experts)"),
            std::string::npos)
      << errorOf(badBias);
}
