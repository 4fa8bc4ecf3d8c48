// The plan verifier on deliberately broken schedules: each must fail with a precise message.
#include "Uniform.h"

#include "runtime/plan/Schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace disagmoe;
using namespace disagmoe::sched;

namespace {

Schedule validSchedule(int groups = 2, int microbatches = 4, int ranks = 2) {
  afpipe::Config c = simtest::uniformConfig(groups, microbatches);
  c.attnRanks = ranks;
  c.ffnRanks = ranks;
  c.inflight = 2 * groups;
  Schedule s;
  std::string error;
  EXPECT_TRUE(afpipe::buildAfPipe(simtest::uniformWorkload(4, 1e-3, 1e-4, 1e3),
                                  simtest::uniformHardware(8), c, s, error))
      << error;
  return s;
}

int programOf(const Schedule &s, const std::string &role) {
  for (size_t p = 0; p < s.programs.size(); ++p)
    if (s.programs[p].role == role)
      return static_cast<int>(p);
  return -1;
}

/// Index of the instruction matching the predicate.
template <typename F> int find(const Program &p, F pred) {
  for (size_t i = 0; i < p.instrs.size(); ++i)
    if (pred(p.instrs[i]))
      return static_cast<int>(i);
  return -1;
}

bool isRecv(const Instr &i, const char *op, Phase ph, int mb, int layer, int group) {
  return i.kind == Kind::Recv && i.op == op && i.phase == ph && i.mb == mb && i.layer == layer &&
         i.group == group;
}

/// Swaps two instructions of a program, keeping every dependency on the same instruction.
void swapInstrs(Program &p, int a, int b) {
  std::swap(p.instrs[a], p.instrs[b]);
  for (Instr &i : p.instrs)
    for (int &d : i.after)
      d = d == a ? b : d == b ? a : d;
}

/// Removes an instruction and every dependency on it.
void eraseInstr(Program &p, int k) {
  p.instrs.erase(p.instrs.begin() + k);
  for (Instr &i : p.instrs) {
    i.after.erase(std::remove(i.after.begin(), i.after.end(), k), i.after.end());
    for (int &d : i.after)
      if (d > k)
        --d;
  }
}

} // namespace

TEST(ScheduleVerify, AfPipeSchedulesVerify) {
  for (int p : {1, 2})
    for (int ranks : {1, 2, 3})
      EXPECT_EQ(verifySchedule(validSchedule(p, 2 * p + 1, ranks)), "");
}

TEST(ScheduleVerify, SwappedReceiveOrderIsNamed) {
  Schedule s = validSchedule();
  Program &ffn = s.programs[programOf(s, "ffn")];
  int g = ffn.instrs[0].group; // ffn 0
  int a = find(ffn, [&](const Instr &i) { return isRecv(i, "m2n", Phase::Forward, 0, 0, g); });
  int b = find(ffn, [&](const Instr &i) { return isRecv(i, "m2n", Phase::Forward, 1, 0, g); });
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  swapInstrs(ffn, a, b);
  std::string e = verifySchedule(s);
  // Attention 0 holds ranks 0-1, ffn 0 ranks 4-5 (two groups of two A-ranks first).
  EXPECT_NE(e.find("rank 0 (attention 0) -> rank 4 (ffn 0): message #0:"), std::string::npos) << e;
  EXPECT_NE(e.find("send m2n forward mb 0 layer 0 to ffn 0 is matched by"), std::string::npos) << e;
  EXPECT_NE(e.find("recv m2n forward mb 1 layer 0 from attention 0"), std::string::npos) << e;
  EXPECT_NE(e.find("receives must be posted in the order of the sends"), std::string::npos) << e;
}

TEST(ScheduleVerify, MissingReceiveIsNamed) {
  Schedule s = validSchedule();
  Program &attn = s.programs[programOf(s, "attention")];
  // The last N2M of the last micro-batch into the head group (attention 0, since L mod p = 0).
  int k = find(attn, [&](const Instr &i) {
    return isRecv(i, "n2m", Phase::Forward, 3, 3, attn.instrs[0].group);
  });
  ASSERT_GE(k, 0);
  eraseInstr(attn, k);
  std::string e = verifySchedule(s);
  EXPECT_NE(e.find("rank 6 (ffn 1) -> rank 0 (attention 0):"), std::string::npos) << e;
  EXPECT_NE(e.find("send n2m forward mb 3 layer 3 to attention 0 has no matching receive"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("the receive of n2m forward mb 3 layer 3 is missing"), std::string::npos) << e;
}

TEST(ScheduleVerify, MissingReceiveInTheMiddleIsNamed) {
  Schedule s = validSchedule();
  Program &ffn = s.programs[programOf(s, "ffn")];
  int g = ffn.instrs[0].group;
  int k = find(ffn, [&](const Instr &i) { return isRecv(i, "m2n", Phase::Forward, 1, 0, g); });
  ASSERT_GE(k, 0);
  eraseInstr(ffn, k);
  std::string e = verifySchedule(s);
  EXPECT_NE(e.find("message #1: attention["), std::string::npos) << e;
  EXPECT_NE(e.find("send m2n forward mb 1 layer 0 to ffn 0 is matched by"), std::string::npos) << e;
  EXPECT_NE(e.find("(ffn 0 posts no receive for m2n forward mb 1 layer 0)"), std::string::npos)
      << e;
}

TEST(ScheduleVerify, SizeMismatchIsNamed) {
  Schedule s = validSchedule();
  Program &ffn = s.programs[programOf(s, "ffn")];
  int g = ffn.instrs[0].group;
  int k = find(ffn, [&](const Instr &i) { return isRecv(i, "m2n", Phase::Forward, 2, 2, g); });
  ASSERT_GE(k, 0);
  ffn.instrs[k].bytes = 4096;
  std::string e = verifySchedule(s);
  EXPECT_NE(e.find("send m2n forward mb 2 layer 2 to ffn 0 sends 100000 bytes per rank pair but"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("recv m2n forward mb 2 layer 2 from attention 0 expects 4096 bytes"),
            std::string::npos)
      << e;
}

TEST(ScheduleVerify, OversizeMemoryIsNamed) {
  Schedule s = validSchedule();
  // Two groups per side: 2p = 4 micro-batches in flight, each with 2 layers x 1 MB per rank.
  int inflight = 0;
  double peak = peakMemory(s, 0, &inflight);
  EXPECT_EQ(inflight, 4);
  s.capacityBytes = peak - 1;
  std::string e = verifySchedule(s);
  EXPECT_NE(e.find("rank 0 (attention 0): peak memory"), std::string::npos) << e;
  EXPECT_NE(e.find("4 micro-batches in flight x 2.00 MB of activations) exceeds the usable"),
            std::string::npos)
      << e;
  s.capacityBytes = peak;
  EXPECT_EQ(verifySchedule(s), "");
}

TEST(ScheduleVerify, InflightFollowsTheWindow) {
  for (int p : {1, 2, 3}) {
    Schedule s = validSchedule(p, 4 * p + 1, 1);
    for (size_t g = 0; g < s.groups.size(); ++g) {
      int inflight = 0;
      peakMemory(s, static_cast<int>(g), &inflight);
      EXPECT_EQ(inflight, 2 * p) << "group " << g << " p " << p;
    }
  }
}

TEST(ScheduleVerify, CycleIsADeadlock) {
  Schedule s = validSchedule();
  Program &attn = s.programs[programOf(s, "attention")];
  int g = attn.instrs[0].group;
  int f = find(attn, [&](const Instr &i) {
    return i.kind == Kind::Compute && i.op == "attention" && i.phase == Phase::Forward &&
           i.mb == 0 && i.layer == 0 && i.group == g;
  });
  int b = find(attn, [&](const Instr &i) {
    return i.kind == Kind::Compute && i.op == "attention" && i.phase == Phase::Backward &&
           i.mb == 0 && i.layer == 0 && i.group == g;
  });
  attn.instrs[f].after.push_back(b);
  std::string e = verifySchedule(s);
  EXPECT_NE(e.find("the schedule does not complete (rank 0 would wait forever)"), std::string::npos)
      << e;
}

TEST(ScheduleVerify, RankWithoutWorkIsNamed) {
  Schedule s = validSchedule();
  Group idle;
  idle.role = "ffn";
  idle.index = 2;
  idle.ranks = {{8}};
  s.groups.push_back(idle);
  std::string e = verifySchedule(s);
  EXPECT_EQ(e, "rank 8 (ffn 2) has no compute instruction: it would be left without work");
  VerifyOptions o;
  o.worldSize = 10;
  s.groups.pop_back();
  EXPECT_EQ(verifySchedule(s, o), "rank 8 is in no schedule group: it would be left without work");
}

TEST(ScheduleVerify, WaitsOnlyOnItsOwnGroup) {
  Schedule s = validSchedule();
  Program &attn = s.programs[programOf(s, "attention")];
  int other = find(attn, [&](const Instr &i) { return i.group != attn.instrs[0].group; });
  attn.instrs[0].after.push_back(other);
  std::string e = verifySchedule(s);
  EXPECT_NE(
      e.find("an instruction of another group (a rank can only wait on its own instructions)"),
      std::string::npos)
      << e;
}

TEST(ScheduleVerify, JsonRoundTrip) {
  Schedule s = validSchedule();
  std::string text = scheduleToJson(s);
  Schedule back;
  std::string error;
  ASSERT_TRUE(scheduleFromJson(text, back, error)) << error;
  EXPECT_EQ(scheduleToJson(back), text);
  EXPECT_EQ(verifySchedule(back), "");
  // A broken field is named.
  std::string bad = text;
  bad.replace(bad.find("\"stream\":\"comm\""), 15, "\"stream\":\"bogus\"");
  EXPECT_FALSE(scheduleFromJson(bad, back, error));
  EXPECT_NE(error.find(".stream: \"bogus\" is not one of forward, backward, comm"),
            std::string::npos)
      << error;
}
