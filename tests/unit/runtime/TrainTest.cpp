// The training step (runtime/train) on plans of mixtral_tiny's layer-0 weights built by TestSupport
// (no compiler): gradients against central finite differences of the step's own loss, the loss
// against the forward executor's logits, invariance under placement (1 or 2 groups, 1 or 2
// A-ranks), micro-batching and comm path (local threads vs one Trainer per rank over a Comm), and
// the optimizers against PyTorch's update formulas. The full 4-layer model against PyTorch's
// autograd and optimizers is tests/e2e/check_training.py.
#include "TestSupport.h"

#include "runtime/backends/cpu/BackwardKernels.h"
#include "runtime/comm/local/LocalComm.h"
#include "runtime/executor/Executor.h"
#include "runtime/io/Npy.h"
#include "runtime/train/Trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <thread>

using namespace disagmoe;
using namespace disagmoe::test;
using namespace disagmoe::train;
using json = nlohmann::json;

namespace {

TinyPlacement placement(std::vector<std::vector<int>> attention, std::vector<std::vector<int>> ffn,
                        std::vector<std::vector<int>> expertToRank) {
  TinyPlacement p;
  p.numLayers = static_cast<int64_t>(expertToRank.size());
  p.attentionGroups = std::move(attention);
  p.ffnGroups = std::move(ffn);
  p.expertToRank = std::move(expertToRank);
  return p;
}

const std::vector<int> kSplit = {2, 2, 2, 2, 3, 3, 3, 3};

std::vector<int64_t> goldenIds() {
  std::vector<int64_t> shape;
  return loadGoldenIds("ids_b2_s8.npy", shape);
}

std::vector<int64_t> nextTokens(const std::vector<int64_t> &ids, int64_t batch, int64_t seq) {
  std::vector<int64_t> t(ids.size());
  cpu::nextTokenTargets(ids.data(), batch, seq, t.data());
  return t;
}

int weightIndex(const Plan &plan, const std::string &name) {
  for (size_t i = 0; i < plan.model.weights.size(); ++i)
    if (plan.model.weights[i].name == name)
      return static_cast<int>(i);
  ADD_FAILURE() << "no weight " << name;
  return 0;
}

TrainOptions sgd(double lr = 0.1, int64_t microBatches = 1) {
  TrainOptions o;
  o.optimizer.kind = OptimizerKind::Sgd;
  o.optimizer.lr = lr;
  o.microBatches = microBatches;
  return o;
}

// All gradients of one step, by weight name.
std::map<std::string, std::vector<float>> gradients(const json &planJson,
                                                    const std::vector<int64_t> &ids, int64_t batch,
                                                    int64_t seq, int64_t microBatches = 1,
                                                    double *loss = nullptr) {
  const Plan plan = loadPlan(writePlan(planJson, "train"));
  Trainer trainer(plan, sgd(0.1, microBatches));
  const StepResult r = trainer.step(ids, nextTokens(ids, batch, seq), batch, seq);
  if (loss)
    *loss = r.loss;
  std::map<std::string, std::vector<float>> out;
  for (size_t i = 0; i < plan.model.weights.size(); ++i)
    out[plan.model.weights[i].name] = trainer.gradient(static_cast<int>(i)).data;
  return out;
}

double relDiff(const std::vector<float> &a, const std::vector<float> &b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// The step's loss with weight `name`'s element `element` moved by `delta`: the weight's .npy is
// copied with the change and the plan pointed at the copy (a zero learning rate keeps the rest).
double lossWithPerturbation(json planJson, const std::string &name, int64_t element, float delta,
                            const std::vector<int64_t> &ids, int64_t batch, int64_t seq) {
  for (json &w : planJson["model"]["weights"])
    if (w["name"] == name) {
      Tensor t = readNpyFloat32(w["file"].get<std::string>());
      t.data[element] += delta;
      const std::string path = makeTempDir("fd") + "/w.npy";
      writeNpyFloat32(path, t);
      w["file"] = path;
      w["offset"] = readNpyHeader(path).dataOffset;
    }
  const Plan plan = loadPlan(writePlan(planJson, "fd"));
  Trainer trainer(plan, sgd(0.0));
  return trainer.step(ids, nextTokens(ids, batch, seq), batch, seq).loss;
}

} // namespace

TEST(Train, GradientsMatchFiniteDifferencesOfTheLoss) {
  const json planJson = tinyPlan(placement({{0, 1}}, {{2, 3}}, {kSplit}));
  const std::vector<int64_t> ids = goldenIds();
  const auto grads = gradients(planJson, ids, 2, 8);
  // The largest-gradient element of each kind of weight. h = 1e-2 (router 2e-3: smaller steps keep
  // its top-k choice, whose probability margins are >= 2e-3); the fp32 forward's loss is exact to
  // about 1e-6, so |fd - g| <= 5e-4 + 1e-2 |g|
  const struct {
    const char *name;
    float h;
  } cases[] = {{"embed", 1e-2f},         {"l0.attn_norm", 1e-2f},  {"l0.q", 1e-2f},
               {"l0.k", 1e-2f},          {"l0.v", 1e-2f},          {"l0.o", 1e-2f},
               {"l0.ffn_norm", 1e-2f},   {"l0.router", 2e-3f},     {"l0.expert1.w1", 1e-2f},
               {"l0.expert5.w3", 1e-2f}, {"l0.expert6.w2", 1e-2f}, {"final_norm", 1e-2f},
               {"head", 1e-2f}};
  for (const auto &c : cases) {
    const std::vector<float> &g = grads.at(c.name);
    int64_t best = 0;
    for (size_t i = 0; i < g.size(); ++i)
      if (std::fabs(g[i]) > std::fabs(g[best]))
        best = static_cast<int64_t>(i);
    const double up = lossWithPerturbation(planJson, c.name, best, c.h, ids, 2, 8);
    const double down = lossWithPerturbation(planJson, c.name, best, -c.h, ids, 2, 8);
    const double fd = (up - down) / (2.0 * c.h);
    std::printf("[ fd       ] %-14s [%5lld] grad %+.6f  finite difference %+.6f\n", c.name,
                static_cast<long long>(best), g[best], fd);
    EXPECT_NEAR(fd, g[best], 5e-4 + 1e-2 * std::fabs(g[best])) << c.name;
  }
}

TEST(Train, LossEqualsTheForwardExecutorsLogitsCrossEntropy) {
  const json planJson = tinyPlan(placement({{0, 1}}, {{2, 3}}, {kSplit}));
  const Plan plan = loadPlan(writePlan(planJson, "train"));
  const std::vector<int64_t> ids = goldenIds(), targets = nextTokens(ids, 2, 8);
  const RunResult forward = Executor(plan).run(ids, 2, 8);
  double sum = 0;
  for (int64_t t = 0; t < 16; ++t) {
    if (targets[t] < 0)
      continue;
    const float *z = forward.logits.data.data() + t * 256;
    double m = -INFINITY, s = 0;
    for (int j = 0; j < 256; ++j)
      m = std::max(m, static_cast<double>(z[j]));
    for (int j = 0; j < 256; ++j)
      s += std::exp(z[j] - m);
    sum += m + std::log(s) - z[targets[t]];
  }
  Trainer trainer(plan, sgd());
  const StepResult r = trainer.step(ids, targets, 2, 8);
  EXPECT_EQ(r.targetTokens, 14);
  EXPECT_EQ(r.step, 1);
  EXPECT_NEAR(r.loss, sum / 14, 1e-12 * sum);
}

TEST(Train, GroupsAndPlacementsGiveTheSameGradients) {
  // Two layers. One group per side vs two (interleaved), 2 A-ranks each: bit-identical (the same
  // per-rank arithmetic and the same all-reduce order). 1 A-rank vs 2: the data-parallel sum is
  // split differently, so within fp32 rounding.
  const std::vector<int64_t> ids = goldenIds();
  const auto one = gradients(tinyPlan(placement({{0, 1}}, {{2, 3}}, {kSplit, kSplit})), ids, 2, 8);
  const std::vector<int> f4 = {4, 4, 4, 4, 5, 5, 5, 5}, f6 = {6, 6, 6, 6, 7, 7, 7, 7};
  const auto two =
      gradients(tinyPlan(placement({{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}, {f4, f6})), ids, 2, 8);
  const auto single = gradients(
      tinyPlan(placement({{0}}, {{1, 2}}, {{1, 1, 1, 1, 2, 2, 2, 2}, {1, 1, 1, 1, 2, 2, 2, 2}})),
      ids, 2, 8);
  ASSERT_EQ(one.size(), two.size());
  double worst = 0;
  for (const auto &[name, g] : one) {
    EXPECT_EQ(g, two.at(name)) << name << " differs between 1 and 2 groups";
    worst = std::max(worst, relDiff(single.at(name), g));
  }
  std::printf("[ invariant] 1 A-rank vs 2 A-ranks: largest |diff|/|grad| %.3g\n", worst);
  EXPECT_LE(worst, 1e-5);
}

TEST(Train, MicroBatchesAccumulateToTheSameGradients) {
  std::vector<int64_t> shape;
  const std::vector<int64_t> ids = loadGoldenIds("ids_b3_s12.npy", shape); // 3 sequences of 12
  const json planJson = tinyPlan(placement({{0, 1}}, {{2, 3}}, {kSplit}));
  double lossWhole = 0, lossSplit = 0, lossThree = 0;
  const auto whole = gradients(planJson, ids, 3, 12, 1, &lossWhole);
  const auto split = gradients(planJson, ids, 3, 12, 2, &lossSplit);
  const auto three = gradients(planJson, ids, 3, 12, 3, &lossThree);
  double worst = 0;
  for (const auto &[name, g] : whole)
    worst = std::max({worst, relDiff(split.at(name), g), relDiff(three.at(name), g)});
  std::printf(
      "[ invariant] 1 vs 2 vs 3 micro-batches: loss %.7f %.7f %.7f, largest |diff|/|grad| %.3g\n",
      lossWhole, lossSplit, lossThree, worst);
  EXPECT_NEAR(lossSplit, lossWhole, 1e-6 * lossWhole);
  EXPECT_NEAR(lossThree, lossWhole, 1e-6 * lossWhole);
  EXPECT_LE(worst, 1e-5);
}

TEST(Train, OneTrainerPerRankOverACommIsBitIdenticalToTheLocalStep) {
  const json planJson = tinyPlan(
      placement({{0, 1}, {2, 3}}, {{4}, {5}}, {std::vector<int>(8, 4), std::vector<int>(8, 5)}));
  const Plan plan = loadPlan(writePlan(planJson, "train"));
  const std::vector<int64_t> ids = goldenIds(), targets = nextTokens(ids, 2, 8);
  TrainOptions adamw;
  adamw.optimizer.kind = OptimizerKind::AdamW;
  adamw.optimizer.lr = 1e-3;
  Trainer local(plan, adamw);
  const StepResult want = local.step(ids, targets, 2, 8);

  const int world = plan.placement.worldSize;
  LocalWorld comm(world);
  std::vector<std::unique_ptr<Trainer>> trainers;
  std::vector<StepResult> got(world);
  for (int r = 0; r < world; ++r) {
    TrainOptions o = adamw;
    o.onlyRank = r;
    trainers.push_back(std::make_unique<Trainer>(plan, o));
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      auto endpoint = comm.endpoint(r);
      got[r] = trainers[r]->stepRank(*endpoint, ids, targets, 2, 8);
    });
  for (auto &t : threads)
    t.join();
  for (int r = 0; r < world; ++r)
    EXPECT_EQ(got[r].loss, want.loss) << "rank " << r;
  for (size_t i = 0; i < plan.model.weights.size(); ++i) {
    const int index = static_cast<int>(i);
    for (int r : plan.model.weights[i].ranks) {
      EXPECT_EQ(trainers[r]->state(r).grads[i].data, local.gradient(index).data)
          << plan.model.weights[i].name;
      EXPECT_EQ(trainers[r]->state(r).weights[i].data, local.weight(index).data)
          << plan.model.weights[i].name;
      // Every replica of a data-parallel weight holds the same bits.
      EXPECT_EQ(local.state(r).weights[i].data, local.weight(index).data)
          << plan.model.weights[i].name;
    }
  }
}

TEST(Train, ExpertsWithoutTokensGetZeroGradientsAndStillDecay) {
  // One sequence of two tokens: at most 4 of the 8 experts receive a token.
  const json planJson = tinyPlan(placement({{0, 1}}, {{2, 3}}, {kSplit}));
  const Plan plan = loadPlan(writePlan(planJson, "train"));
  const std::vector<int64_t> ids = {17, 42};
  TrainOptions o;
  o.optimizer.kind = OptimizerKind::AdamW;
  o.optimizer.lr = 1e-3;
  o.optimizer.weightDecay = 0.01;
  Trainer trainer(plan, o);
  trainer.step(ids, nextTokens(ids, 1, 2), 1, 2);
  int idle = 0;
  for (int64_t e = 0; e < 8; ++e) {
    const int w1 = weightIndex(plan, "l0.expert" + std::to_string(e) + ".w1");
    const auto &g = trainer.gradient(w1).data;
    if (std::any_of(g.begin(), g.end(), [](float v) { return v != 0.0f; }))
      continue;
    ++idle;
    const Tensor before = readWeight(plan.model.weights[w1]);
    const float decay = static_cast<float>(1.0 - 1e-3 * 0.01);
    for (size_t i = 0; i < g.size(); ++i)
      ASSERT_EQ(trainer.weight(w1).data[i], before.data[i] * decay) << "expert " << e;
  }
  EXPECT_GE(idle, 4);
}

TEST(Train, BadInputsAreRefusedNamingTheProblem) {
  const Plan plan = loadPlan(writePlan(tinyPlan(placement({{0, 1}}, {{2, 3}}, {kSplit})), "train"));
  Trainer trainer(plan, sgd(0.1, 3));
  const std::vector<int64_t> ids = goldenIds();
  try {
    trainer.step(ids, nextTokens(ids, 2, 8), 2, 8);
    FAIL() << "3 micro-batches of 2 sequences were accepted";
  } catch (const ExecError &e) {
    EXPECT_NE(std::string(e.what()).find("micro-batches"), std::string::npos) << e.what();
  }
  Trainer one(plan, sgd());
  std::vector<int64_t> targets = nextTokens(ids, 2, 8);
  targets[3] = 256;
  try {
    one.step(ids, targets, 2, 8);
    FAIL() << "a target outside the vocabulary was accepted";
  } catch (const ExecError &e) {
    EXPECT_NE(std::string(e.what()).find("target id 256 at [0,3]"), std::string::npos) << e.what();
  }
}

TEST(Optimizer, SgdAndAdamWFollowPyTorchsFormulas) {
  // torch/optim/sgd.py: p -= lr g. torch/optim/adamw.py (single tensor): p *= 1 - lr wd;
  // m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p -= lr/(1-b1^t) m / (sqrt(v)/sqrt(1-b2^t) + eps),
  // evaluated here in double over two steps.
  const std::vector<float> g1 = {0.5f, -2e-3f, 0.0f, 3.0f}, g2 = {-0.25f, 1e-6f, 0.0f, 3.0f};
  std::vector<float> w = {1.0f, -0.5f, 0.25f, 2.0f}, m(4, 0.0f), v(4, 0.0f);
  std::vector<double> wd(w.begin(), w.end()), md(4, 0.0), vd(4, 0.0);
  OptimizerConfig c;
  c.kind = OptimizerKind::AdamW;
  c.lr = 1e-2;
  c.weightDecay = 0.1;
  for (int step = 1; step <= 2; ++step) {
    const auto &g = step == 1 ? g1 : g2;
    adamwStep(w.data(), g.data(), m.data(), v.data(), 4, step, c);
    for (int i = 0; i < 4; ++i) {
      wd[i] *= 1 - c.lr * c.weightDecay;
      md[i] = c.beta1 * md[i] + (1 - c.beta1) * g[i];
      vd[i] = c.beta2 * vd[i] + (1 - c.beta2) * g[i] * g[i];
      const double denom = std::sqrt(vd[i]) / std::sqrt(1 - std::pow(c.beta2, step)) + c.eps;
      wd[i] -= c.lr / (1 - std::pow(c.beta1, step)) * md[i] / denom;
    }
  }
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(w[i], wd[i], 1e-6) << i;
  std::vector<float> s = {1.0f, 2.0f};
  const float sg[2] = {0.5f, -1.0f};
  sgdStep(s.data(), sg, 2, 0.1);
  EXPECT_FLOAT_EQ(s[0], 0.95f);
  EXPECT_FLOAT_EQ(s[1], 2.1f);
  EXPECT_EQ(splitMicroBatches(5, 2).size(), 2u);
  EXPECT_EQ(splitMicroBatches(5, 2)[0].end, 3);
  EXPECT_THROW(splitMicroBatches(2, 3), std::invalid_argument);
}

// DeepSeek-V3's router: the router weight trains through the sigmoid gates, the correction bias is
// a buffer (no gradient; AdamW's weight decay would otherwise shrink it), and the softmax-defined
// aux loss is refused.
TEST(Train, SigmoidRouterTrainsAndKeepsItsCorrectionBias) {
  const Plan plan = loadPlan(writePlan(
      withSigmoidRouter(tinyPlan(placement({{0, 1}}, {{2, 3}}, {kSplit})), 4, 2), "train_v3"));
  const std::vector<int64_t> ids = goldenIds();
  TrainOptions o;
  o.optimizer.kind = OptimizerKind::AdamW;
  o.optimizer.lr = 1e-3;
  o.optimizer.weightDecay = 0.1;
  Trainer trainer(plan, o);
  trainer.step(ids, nextTokens(ids, 2, 8), 2, 8);
  const int bias = weightIndex(plan, "l0.correction_bias"), router = weightIndex(plan, "l0.router");
  const Tensor before = readWeight(plan.model.weights[bias]);
  EXPECT_EQ(trainer.weight(bias).data, before.data) << "the correction bias changed";
  for (float g : trainer.gradient(bias).data)
    EXPECT_EQ(g, 0.0f);
  const auto &dRouter = trainer.gradient(router).data;
  EXPECT_TRUE(std::any_of(dRouter.begin(), dRouter.end(), [](float v) { return v != 0.0f; }));
  EXPECT_TRUE(
      std::all_of(dRouter.begin(), dRouter.end(), [](float v) { return std::isfinite(v); }));

  o.auxLossCoef = 0.01;
  try {
    Trainer aux(plan, o);
    FAIL() << "--aux-loss-coef was accepted with a sigmoid router";
  } catch (const ExecError &e) {
    EXPECT_NE(std::string(e.what()).find("scores with sigmoid (sigmoid_group_topk_renorm)"),
              std::string::npos)
        << e.what();
  }
}
