// runnerOf (runtime/plan/InstructionRunner.h), the rule of which group runs an instruction, on a
// hand-built placement: every opcode, with the embedding, the head, a dense layer's FFN and a
// layer's shared experts each on either side, against a table derived by hand from
// docs/plan-format.md ("Which ranks run an instruction", "FFN-side embedding and head", "FFN-side
// dense FFNs and shared experts"), not from the function.
#include "TestSupport.h"

#include "runtime/plan/InstructionRunner.h"
#include "runtime/plan/Plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace disagmoe;
using namespace disagmoe::test;

namespace {

// Positions in Placement::groups. The groups are listed interleaved by role so that a group's
// position differs from its index within its role (a rule mixing the two picks the wrong group).
enum Pos { A0 = 0, F0 = 1, A1 = 2, F1 = 3 };

// Which side choice a row's runner depends on.
enum class Choice { None, Embedding, Head, Dense, Shared };

struct Sides {
  bool embedding = false, head = false, dense = false, shared = false; // true: the ffn side
};

// 3 layers interleaved over p = 2 groups per side: A0 and F0 run layers 0 and 2, A1 and F1 layer 1.
// Layer 1 is dense (its dense FFN on side `dense`), layer 2 has shared experts (on side `shared`).
// Attention side: embedding_group 0 (runs layer 0), head_group L mod p = 1. FFN side: both indices
// 1, so the FFN-side embedding and head run on F1, which is neither layer 0's nor the last layer's
// FFN group.
Plan handBuilt(const Sides &s) {
  Plan plan;
  plan.path = "hand.json";
  plan.model.numLayers = 3;
  plan.model.layers.resize(3);
  plan.model.layers[1].dense = true;
  plan.model.layers[1].denseFfn = 7;
  plan.model.layers[1].denseOnFfn = s.dense;
  plan.model.layers[2].sharedFfn = 9;
  plan.model.layers[2].sharedOnFfn = s.shared;

  Placement &p = plan.placement;
  p.worldSize = 7;
  p.groups = {{GroupRole::Attention, 0, {0, 1}, {0, 2}},
              {GroupRole::Ffn, 0, {4}, {0, 2}},
              {GroupRole::Attention, 1, {2, 3}, {1}},
              {GroupRole::Ffn, 1, {5, 6}, {1}}};
  p.embeddingOnFfn = s.embedding;
  p.headOnFfn = s.head;
  p.embeddingGroup = s.embedding ? 1 : 0;
  p.headGroup = 1;
  // The lookups validation fills.
  p.attentionGroups = {A0, A1};
  p.ffnGroups = {F0, F1};
  p.layerAttention = {A0, A1, A0};
  p.layerFfn = {F0, F1, F0};
  p.groupOfRank = {A0, A0, A1, A1, F0, F1, F1};
  return plan;
}

struct Row {
  OpCode op;
  int64_t layer;
  NormRole role;
  Choice choice;
  Pos onAttention; // the runner when `choice` is on the attention side (or for Choice::None)
  Pos onFfn;       // the runner when `choice` is on the ffn side
};

// The oracle. Next group of layer l: the attention group running l+1 (layer 0 -> A1, 1 -> A0);
// after the last layer the head group (A1), or with head_side ffn the attention group running
// layer 0 (A0). embed_send, embed_recv, head_send and head_recv occur only in plans with the
// FFN-side embedding / head; their attention-side columns are what the rule names regardless.
const std::vector<Row> &table() {
  using C = Choice;
  using O = OpCode;
  using R = NormRole;
  static const std::vector<Row> rows = {
      {O::Embed, -1, R::None, C::Embedding, A0, F1},
      {O::EmbedSend, -1, R::None, C::Embedding, A0, F1},
      {O::EmbedRecv, -1, R::None, C::None, A0, A0},
      {O::RmsNorm, 0, R::AttnNorm, C::None, A0, A0},
      {O::RmsNorm, 1, R::AttnNorm, C::None, A1, A1},
      {O::RmsNorm, 2, R::AttnNorm, C::None, A0, A0},
      {O::RmsNorm, 0, R::FfnNorm, C::None, A0, A0},
      {O::RmsNorm, 1, R::FfnNorm, C::None, A1, A1},
      {O::RmsNorm, 2, R::FfnNorm, C::None, A0, A0},
      {O::Attention, 0, R::None, C::None, A0, A0},
      {O::Attention, 1, R::None, C::None, A1, A1},
      {O::Attention, 2, R::None, C::None, A0, A0},
      {O::ResidualAdd, 0, R::None, C::None, A0, A0},
      {O::ResidualAdd, 1, R::None, C::None, A1, A1},
      {O::ResidualAdd, 2, R::None, C::None, A0, A0},
      {O::Router, 0, R::None, C::None, A0, A0},
      {O::Router, 2, R::None, C::None, A0, A0},
      {O::M2nSend, 0, R::None, C::None, A0, A0},
      {O::M2nSend, 1, R::None, C::None, A1, A1},
      {O::M2nSend, 2, R::None, C::None, A0, A0},
      {O::ResidualSend, 0, R::None, C::None, A0, A0},
      {O::ResidualSend, 1, R::None, C::None, A1, A1},
      {O::ResidualSend, 2, R::None, C::None, A0, A0},
      {O::ResidualRecv, 0, R::None, C::None, A1, A1},
      {O::ResidualRecv, 1, R::None, C::None, A0, A0},
      {O::ResidualRecv, 2, R::None, C::Head, A1, A0},
      {O::N2mRecv, 0, R::None, C::None, A1, A1},
      {O::N2mRecv, 1, R::None, C::None, A0, A0},
      {O::N2mRecv, 2, R::None, C::Head, A1, A0},
      {O::RmsNorm, -1, R::FinalNorm, C::Head, A1, F1},
      {O::Head, -1, R::None, C::Head, A1, F1},
      {O::HeadSend, -1, R::None, C::Head, A1, A0},
      {O::HeadRecv, -1, R::None, C::Head, A1, F1},
      {O::M2nRecv, 0, R::None, C::None, F0, F0},
      {O::M2nRecv, 1, R::None, C::None, F1, F1},
      {O::M2nRecv, 2, R::None, C::None, F0, F0},
      {O::Experts, 0, R::None, C::None, F0, F0},
      {O::Experts, 2, R::None, C::None, F0, F0},
      {O::N2mSend, 0, R::None, C::None, F0, F0},
      {O::N2mSend, 1, R::None, C::None, F1, F1},
      {O::N2mSend, 2, R::None, C::None, F0, F0},
      {O::DenseFfn, 0, R::None, C::None, A0, A0}, // layer 0 has neither: the attention side
      {O::DenseFfn, 1, R::None, C::Dense, A1, F1},
      {O::DenseFfn, 2, R::None, C::Shared, A0, F0},
  };
  return rows;
}

bool onFfnSide(Choice c, const Sides &s) {
  switch (c) {
  case Choice::Embedding:
    return s.embedding;
  case Choice::Head:
    return s.head;
  case Choice::Dense:
    return s.dense;
  case Choice::Shared:
    return s.shared;
  case Choice::None:
    break;
  }
  return false;
}

std::string describe(const Row &row, const Sides &s) {
  std::string what = toString(row.op);
  if (row.op == OpCode::RmsNorm)
    what += std::string(" ") + toString(row.role);
  return what + " layer " + std::to_string(row.layer) + " (embedding " +
         (s.embedding ? "ffn" : "attention") + ", head " + (s.head ? "ffn" : "attention") +
         ", dense " + (s.dense ? "ffn" : "attention") + ", shared " +
         (s.shared ? "ffn" : "attention") + ")";
}

TEST(InstructionRunner, TableCoversEveryOpcode) {
  std::set<OpCode> listed;
  for (const Row &row : table())
    listed.insert(row.op);
  // OpCode::HeadRecv is the last enumerator (Plan.h).
  for (int op = 0; op <= static_cast<int>(OpCode::HeadRecv); ++op)
    EXPECT_TRUE(listed.count(static_cast<OpCode>(op)))
        << toString(static_cast<OpCode>(op)) << " has no row";
}

TEST(InstructionRunner, EveryOpcodeOnEitherSide) {
  for (int bits = 0; bits < 16; ++bits) {
    const Sides s{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0, (bits & 8) != 0};
    const Plan plan = handBuilt(s);
    for (const Row &row : table()) {
      const Pos expected = onFfnSide(row.choice, s) ? row.onFfn : row.onAttention;
      const Group &want = plan.placement.groups[expected];
      const Group &got = runnerOf(plan, {row.op, row.layer, row.role, Stream::Forward});
      // The workers compare addresses, so the very group of the placement is required.
      EXPECT_EQ(&got, &want) << describe(row, s) << ": got " << toString(got.role) << " group "
                             << got.index << ", expected " << toString(want.role) << " group "
                             << want.index;
    }
  }
}

TEST(InstructionRunner, DenseFfnSideOfEachLayer) {
  for (int bits = 0; bits < 4; ++bits) {
    const Sides s{false, false, (bits & 1) != 0, (bits & 2) != 0};
    const Plan plan = handBuilt(s);
    EXPECT_FALSE(denseFfnOnFfnSide(plan.model, 0));
    EXPECT_EQ(denseFfnOnFfnSide(plan.model, 1), s.dense);
    EXPECT_EQ(denseFfnOnFfnSide(plan.model, 2), s.shared);
  }
}

TEST(InstructionRunner, RefusesALayerOutsideThePlan) {
  const Plan plan = handBuilt({});
  const auto message = [&](OpCode op, int64_t layer, NormRole role) -> std::string {
    try {
      runnerOf(plan, {op, layer, role, Stream::Forward});
    } catch (const PlanError &e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message(OpCode::Experts, 3, NormRole::None),
            "hand.json: programs: experts of layer 3: the layer is outside [0, 3)");
  EXPECT_EQ(message(OpCode::N2mRecv, -1, NormRole::None),
            "hand.json: programs: n2m_recv of layer -1: the layer is outside [0, 3)");
  EXPECT_EQ(message(OpCode::RmsNorm, -1, NormRole::AttnNorm),
            "hand.json: programs: rms_norm of layer -1: the layer is outside [0, 3)");
  EXPECT_EQ(message(OpCode::DenseFfn, 3, NormRole::None),
            "hand.json: programs: dense_ffn of layer 3: the layer is outside [0, 3)");
  EXPECT_EQ(message(static_cast<OpCode>(99), 0, NormRole::None),
            "hand.json: programs: opcode 99 has no runner rule");
  // The global instructions have no layer (-1).
  EXPECT_EQ(message(OpCode::RmsNorm, -1, NormRole::FinalNorm), "no error");
  EXPECT_EQ(message(OpCode::Head, -1, NormRole::None), "no error");
}

// On a loaded (validated) plan every instruction of a role's program runs on a group of that role
// that lists its layer (a receive: the next layer, or after the last layer the head group).
TEST(InstructionRunner, LoadedPlanRunsEachProgramOnItsRole) {
  TinyPlacement tp;
  tp.numLayers = 3;
  tp.attentionGroups = {{0, 1}, {2, 3}};
  tp.ffnGroups = {{4}, {5}};
  tp.expertToRank = {{4, 4, 4, 4, 4, 4, 4, 4}, {5, 5, 5, 5, 5, 5, 5, 5}, {4, 4, 4, 4, 4, 4, 4, 4}};
  const Plan plan = loadPlan(writePlan(tinyPlan(tp), "instruction_runner"));
  const auto check = [&](const std::vector<Instruction> &program, GroupRole role) {
    ASSERT_FALSE(program.empty());
    for (const Instruction &ins : program) {
      const Group &g = runnerOf(plan, ins);
      EXPECT_EQ(g.role, role) << toString(ins.op) << " of layer " << ins.layer;
      if (ins.layer < 0)
        continue;
      const auto runs = [&](int64_t layer) {
        return std::find(g.layers.begin(), g.layers.end(), layer) != g.layers.end();
      };
      if (ins.op == OpCode::ResidualRecv || ins.op == OpCode::N2mRecv) // on the next group
        EXPECT_TRUE(ins.layer + 1 < tp.numLayers ? runs(ins.layer + 1)
                                                 : &g == &plan.placement.headRunner())
            << toString(ins.op) << " of layer " << ins.layer << " on group " << g.index;
      else
        EXPECT_TRUE(runs(ins.layer))
            << toString(ins.op) << " of layer " << ins.layer << " on group " << g.index;
    }
  };
  check(plan.programs.attention, GroupRole::Attention);
  check(plan.programs.ffn, GroupRole::Ffn);
}

} // namespace
