// One rank's training step: forward, causal LM loss, program walked backward (TrainStep.h).
#include "runtime/train/TrainStep.h"

#include "runtime/executor/CommStream.h"
#include "runtime/executor/Event.h"
#include "runtime/executor/OpProfile.h"

#include "runtime/backends/cpu/BackwardKernels.h"
#include "runtime/backends/cpu/Kernels.h"
#include "runtime/exchange/CountedExchange.h"
#include "runtime/executor/RankWorker.h"
#include "runtime/plan/InstructionRunner.h"
#include "runtime/tensor/FreshBuffers.h"
#include "runtime/train/GradientClipping.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

namespace disagmoe::train {

namespace {

// The first model form of `plan` whose backward the training step does not have, as
// "model.components[i]: training does not support <form> yet (layer l <kind>[: detail])"; empty
// when every component is trainable.
// Checked at setup so that such a plan is refused with one line instead of failing (or reading a
// missing weight) mid-step.
std::string untrainableForm(const Plan &plan) {
  for (size_t i = 0; i < plan.model.components.size(); ++i) {
    const Component &c = plan.model.components[i];
    std::string form, detail;
    switch (c.kind) {
    case ComponentKind::DenseFfn:
      if (!c.onFfnSide)
        break; // the attention side's dense FFN / shared experts have a backward
      form = "dense_ffn components";
      detail =
          std::string(c.denseRole == DenseFfnRole::Shared ? "shared experts" : "the dense FFN") +
          " on the " + (c.onFfnSide ? "ffn" : "attention") + " side";
      break;
    case ComponentKind::Experts:
      if (isGated(c.activation))
        break; // SwiGLU and the clamped SwiGLU have a backward
      form = "non-gated experts";
      detail = "activation " +
               std::string(c.activation == ExpertActivation::Relu       ? "relu"
                           : c.activation == ExpertActivation::GeluTanh ? "gelu_tanh"
                           : c.activation == ExpertActivation::Silu     ? "silu"
                                                                        : "identity") +
               ", w1 -> act -> w2, has no backward kernel";
      break;
    default:
      break;
    }
    if (form.empty())
      continue;
    return "model.components[" + std::to_string(i) + "]: training does not support " + form +
           " yet (" + (c.layer >= 0 ? "layer " + std::to_string(c.layer) + " " : std::string()) +
           toString(c.kind) + (detail.empty() ? "" : ": " + detail) + ")";
  }
  return {};
}

} // namespace

RankState::RankState(const Plan &plan, const RankWeights &bound) : rank(bound.rank()) {
  // Forms without a backward yet are refused up front, naming the component and the form.
  if (const std::string form = untrainableForm(plan); !form.empty())
    throw ExecError(plan.path + ": " + form +
                    "; only the forward pass (disagmoe-run without --train) runs this plan");
  if (plan.placement.embeddingOnFfn || plan.placement.headOnFfn)
    throw ExecError(
        plan.path + ": placement." +
        (plan.placement.embeddingOnFfn ? "embedding_side" : "head_side") +
        ": training does not support the embedding or head on the ffn side yet; only the forward "
        "pass (disagmoe-run without --train) runs this plan");
  const size_t n = plan.model.weights.size();
  routerBias.assign(static_cast<size_t>(plan.model.numLayers),
                    std::vector<float>(static_cast<size_t>(plan.model.numExperts), 0.0f));
  weights.resize(n);
  grads.resize(n);
  m.resize(n);
  v.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto &ranks = plan.model.weights[i].ranks;
    if (!std::binary_search(ranks.begin(), ranks.end(), rank))
      continue;
    weights[i] = bound.get(static_cast<int>(i));
    grads[i] = Tensor(weights[i].shape);
  }
}

std::vector<MicroBatch> splitMicroBatches(int64_t batch, int64_t count) {
  if (count < 1 || count > batch)
    throw std::invalid_argument("cannot split " + std::to_string(batch) + " sequences into " +
                                std::to_string(count) +
                                " micro-batches (need 1 <= micro-batches <= batch)");
  std::vector<MicroBatch> out;
  int64_t begin = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t size = batch / count + (i < batch % count ? 1 : 0);
    out.push_back({begin, begin + size});
    begin += size;
  }
  return out;
}

int backwardTag(ExchangeKind kind, int64_t layer, int64_t numLayers) {
  return static_cast<int>(3 * numLayers + 3 * layer + static_cast<int>(kind));
}

namespace {

// Tags after the forward (3L) and backward (3L) exchanges: one per all-reduce set.
int allReduceTag(int64_t numLayers, int firstWeight) {
  return static_cast<int>(6 * numLayers + firstWeight);
}

// Tag of layer l's aux-loss count exchange: after the loss gather (6 L + W, Trainer.cpp) and the
// gradient norm (+1, GradientClipping.cpp).
int auxCountTag(const ModelSpec &model, int64_t layer) {
  return static_cast<int>(6 * model.numLayers + static_cast<int64_t>(model.weights.size()) + 2 +
                          layer);
}

// Tag of layer l's capacity exchange (every A-rank's token ids and top-k choices): after the aux
// ones.
int capacityTag(const ModelSpec &model, int64_t layer) {
  return static_cast<int>(7 * model.numLayers + static_cast<int64_t>(model.weights.size()) + 2 +
                          layer);
}

// Tag of layer l's load exchange for the router bias update: after the capacity ones.
int biasLoadTag(const ModelSpec &model, int64_t layer) {
  return static_cast<int>(8 * model.numLayers + static_cast<int64_t>(model.weights.size()) + 2 +
                          layer);
}

struct AttentionLayer {
  bool hasX = false, hasAttnNorm = false, hasAttention = false, hasH = false, hasFfnNorm = false,
       hasRouter = false;
  bool hasDx = false, hasDh = false, hasDFfn = false, hasDAttnNorm = false;
  std::vector<float> x, attnNorm, q, k, v, heads, h, ffnNorm, logits, gates;
  std::vector<float> qPre,
      kPre; // q/k projections before the per-head q/k RMSNorm (Qwen3), when present
  std::vector<float> mlaQ, ckv, latentPre,
      latent;           // MLA: q_proj output, kv_a output, latent before/after its norm
  std::vector<float> r; // h + dense FFN / shared experts output (DeepSeek), the residual sent on
  bool hasR = false;
  std::vector<int64_t> topIds;
  // Aux loss (StepConfig::auxLossCoef): the micro-batch's assignments per expert and token count
  // over every A-rank of the layer's group.
  std::vector<double> auxCounts;
  int64_t auxTokens = 0;
  bool hasAux = false;
  // Capacity factor: per top-k slot [n * k], 1 when the assignment is over its expert's capacity.
  std::vector<uint8_t> dropped;
  std::vector<std::vector<int64_t>>
      n2mTokens; // layer l-1's N2M token ids per F-rank (receiving side)
  std::vector<float> dx, dh, dFfn, dGates, dAttnNorm;
};

struct ExpertUse {
  size_t source, token;
  float gate;
};

struct FfnLayer {
  bool received = false, computed = false, hasDy = false, hasDx = false;
  std::vector<M2nMessage> messages;           // per A-rank of the layer's attention group
  std::vector<std::vector<ExpertUse>> uses;   // per local expert (ascending id)
  std::vector<const ExpertWeights *> experts; // the local experts
  std::vector<std::vector<float>> dy;         // per source: [count, hidden]
  std::vector<std::vector<float>> dx;         // per source
  std::vector<std::vector<std::vector<ExpertGate>>> dGates; // per source, per token
};

class TrainWorker {
public:
  TrainWorker(const Plan &plan, RankState &state, Comm &comm, const int64_t *ids,
              const int64_t *targets, int64_t batch, int64_t seqLen, float gradScale,
              std::chrono::milliseconds timeout, double auxCoef, int64_t globalTokens,
              double capacityFactor, bool biasSelection, int64_t microBatch)
      : microBatch_(microBatch), plan_(plan), model_(plan.model), placement_(plan.placement),
        state_(state), comm_(comm), ids_(ids), targets_(targets), batch_(batch), seqLen_(seqLen),
        gradScale_(gradScale), timeout_(timeout), auxCoef_(auxCoef), globalTokens_(globalTokens),
        capacityFactor_(capacityFactor), biasSelection_(biasSelection), rank_(comm.rank()),
        group_(placement_.groupOf(rank_)), index_(placement_.indexInGroup(rank_)),
        L_(model_.numLayers) {
    if (group_.role == GroupRole::Attention) {
      const int64_t da = placement_.attentionSize();
      for (int64_t s = index_; s < batch_; s += da)
        for (int64_t p = 0; p < seqLen_; ++p)
          tokens_.push_back(s * seqLen_ + p);
      attn_.resize(static_cast<size_t>(L_ + 1));
      expertLoad_.assign(static_cast<size_t>(L_),
                         std::vector<int64_t>(static_cast<size_t>(model_.numExperts), 0));
      dropped_.assign(static_cast<size_t>(L_), 0);
    } else {
      ffn_.resize(static_cast<size_t>(L_));
    }
  }

  // The micro-batch's forward (the forward stream); keeps every activation for runBackward.
  void runForward() {
    const auto &program =
        group_.role == GroupRole::Attention ? plan_.programs.attention : plan_.programs.ffn;
    for (size_t i = 0; i < program.size(); ++i)
      step(program, i, false);
  }

  // Its backward over the reversed program (the backward stream), after runForward; accumulates
  // into the rank's weight gradients.
  void runBackward() {
    const auto &program =
        group_.role == GroupRole::Attention ? plan_.programs.attention : plan_.programs.ffn;
    for (size_t i = program.size(); i-- > 0;)
      step(program, i, true);
  }

  double lossSum() const { return lossSum_; }

  int64_t targetTokens() const { return targetTokens_; }
  double auxLossSum() const { return auxSum_; }
  const std::vector<std::vector<int64_t>> &expertLoad() const { return expertLoad_; }
  const std::vector<int64_t> &dropped() const { return dropped_; }
  const NonFinite &firstNonFinite() const { return firstNonFinite_; }

private:
  // Records the first forward instruction whose output holds a NaN or an Inf (one pass over the
  // output; for naming the layer when the loss diverges).
  void checkFinite(const Instruction &ins) {
    const auto bad = [](const std::vector<float> &v) {
      for (float x : v)
        if (!std::isfinite(x))
          return true;
      return false;
    };
    const int64_t l = ins.layer;
    bool found = false;
    if (group_.role == GroupRole::Attention) {
      switch (ins.op) {
      case OpCode::Embed:
        found = bad(attn_[0].x);
        break;
      case OpCode::RmsNorm:
        found = bad(ins.role == NormRole::AttnNorm  ? attn_[l].attnNorm
                    : ins.role == NormRole::FfnNorm ? attn_[l].ffnNorm
                                                    : finalNorm_);
        break;
      case OpCode::Attention:
        found = bad(attnOut_);
        break;
      case OpCode::ResidualAdd:
        found = bad(attn_[l].h);
        break;
      case OpCode::Router:
        found = bad(attn_[l].logits);
        break;
      case OpCode::N2mRecv:
        found = bad(attn_[l + 1].x);
        break;
      case OpCode::Head:
        found = !std::isfinite(lossSum_);
        break;
      default:
        break;
      }
    } else if (ins.op == OpCode::Experts) {
      for (const auto &rows : ffn_[l].dy)
        found = found || bad(rows);
    }
    if (!found)
      return;
    std::string what = toString(ins.op);
    if (ins.op == OpCode::RmsNorm)
      what += std::string(" ") + toString(ins.role);
    firstNonFinite_ = {
        ins.op == OpCode::Head ? model_.numLayers : std::max<int64_t>(l, 0),
        what + (ins.layer >= 0 ? " of layer " + std::to_string(ins.layer) : std::string()) +
            " on rank " + std::to_string(rank_)};
  }

  void step(const std::vector<Instruction> &program, size_t i, bool backward) {
    const Instruction &ins = program[i];
    if (&runnerOf(plan_, ins) != &group_) // InstructionRunner.h
      return;
    const bool attention = group_.role == GroupRole::Attention;
    RankRecorder *recorder = RankRecorder::current(); // --op-times-out / --trace (OpProfile.h)
    const double started = recorder ? recorder->now() : 0;
    try {
      if (attention)
        backward ? attentionBackward(ins) : attentionForward(ins);
      else
        backward ? ffnBackward(ins) : ffnForward(ins);
      if (recorder)
        recorder->record(ins, backward, started, microBatch_);
      if (!backward && firstNonFinite_.layer < 0)
        checkFinite(ins);
    } catch (const CommAborted &) {
      throw;
    } catch (const std::exception &e) {
      std::string what = toString(ins.op);
      if (ins.op == OpCode::RmsNorm)
        what += std::string(" ") + toString(ins.role);
      if (ins.layer >= 0)
        what += " of layer " + std::to_string(ins.layer);
      throw ExecError("rank " + std::to_string(rank_) + " (" + toString(group_.role) + " group " +
                      std::to_string(group_.index) + "): programs." + toString(group_.role) + "[" +
                      std::to_string(i) + "] " + what + (backward ? " (backward)" : " (forward)") +
                      ": " + e.what());
    }
  }

  const int64_t microBatch_; // index in the step (trace)

  // p_t = softmax(z_t) of local token t, in double (as routerGatesBackward).
  void routerProbs(const float *z, std::vector<double> &p) const {
    const int64_t E = model_.numExperts;
    double m = -INFINITY, sum = 0;
    for (int64_t e = 0; e < E; ++e)
      m = std::max(m, static_cast<double>(z[e]));
    for (int64_t e = 0; e < E; ++e)
      sum += p[e] = std::exp(z[e] - m);
    for (int64_t e = 0; e < E; ++e)
      p[e] /= sum;
  }

  // Aux loss forward of layer l (StepConfig::auxLossCoef): every A-rank of the layer's group sends
  // its [counts c (E), probability sums (E), tokens] to every other and adds all of them in
  // ascending rank order, so each holds the same bits of c, sum_t p_t and T_m. The lowest A-rank
  // adds the layer's (T_m / T)-weighted aux value to the loss.
  void auxForward(int64_t l) {
    AttentionLayer &a = attn_[l];
    const int64_t E = model_.numExperts, k = model_.topK;
    std::vector<double> mine(static_cast<size_t>(2 * E + 1), 0.0), p(static_cast<size_t>(E));
    for (int64_t t = 0; t < n(); ++t) {
      for (int64_t j = 0; j < k; ++j)
        mine[a.topIds[t * k + j]] += 1;
      routerProbs(a.logits.data() + t * E, p);
      for (int64_t e = 0; e < E; ++e)
        mine[E + e] += p[e];
    }
    mine[2 * E] = static_cast<double>(n());
    const std::vector<int> &ranks = placement_.attentionGroupOfLayer(l).ranks;
    const int tag = auxCountTag(model_, l);
    Bytes out(mine.size() * sizeof(double));
    std::memcpy(out.data(), mine.data(), out.size());
    for (int r : ranks)
      if (r != rank_)
        send(r, tag, out);
    std::vector<double> total(mine.size(), 0.0), part(mine.size());
    for (int r : ranks) {
      if (r == rank_) {
        part = mine;
      } else {
        const Bytes in = recv(r, tag);
        if (in.size() != out.size())
          throw ExecError("aux-loss counts from rank " + std::to_string(r) + " have " +
                          std::to_string(in.size()) + " bytes, expected " +
                          std::to_string(out.size()));
        std::memcpy(part.data(), in.data(), in.size());
      }
      for (size_t i = 0; i < total.size(); ++i)
        total[i] += part[i];
    }
    a.auxCounts.assign(total.begin(), total.begin() + E);
    a.auxTokens = static_cast<int64_t>(total[2 * E]);
    a.hasAux = a.auxTokens > 0;
    if (!a.hasAux || index_ != 0)
      return;
    double dot = 0;
    for (int64_t e = 0; e < E; ++e)
      dot += total[e] * total[E + e];
    auxSum_ += auxCoef_ * static_cast<double>(E) * dot /
               (static_cast<double>(k) * static_cast<double>(a.auxTokens) *
                static_cast<double>(globalTokens_));
  }

  // Capacity factor (StepConfig::capacityFactor) of layer l: every A-rank of the group sends its
  // token ids and top-k choices to every other, so each sees the micro-batch's T_m tokens and marks
  // the same assignments dropped: capacity ceil(C T_m k / E) per expert, filled by every token's
  // first choice in token-id order, then every second choice, ... (GShard's priority).
  void capacityForward(int64_t l) {
    AttentionLayer &a = attn_[l];
    const int64_t E = model_.numExperts, k = model_.topK;
    const std::vector<int> &ranks = placement_.attentionGroupOfLayer(l).ranks;
    const int tag = capacityTag(model_, l);
    std::vector<int64_t> mine;
    mine.reserve(static_cast<size_t>(n() * (k + 1)));
    for (int64_t t = 0; t < n(); ++t) {
      mine.push_back(tokens_[t]);
      mine.insert(mine.end(), a.topIds.begin() + t * k, a.topIds.begin() + (t + 1) * k);
    }
    Bytes out(mine.size() * sizeof(int64_t));
    std::memcpy(out.data(), mine.data(), out.size());
    for (int r : ranks)
      if (r != rank_)
        send(r, tag, out);
    struct Choice {
      int64_t token, expert;
      bool ownRow;
      int64_t slot; // index into a.dropped when ownRow
    };
    std::vector<std::vector<Choice>> bySlot(static_cast<size_t>(k));
    for (int r : ranks) {
      std::vector<int64_t> rows;
      if (r == rank_) {
        rows = mine;
      } else {
        const Bytes in = recv(r, tag);
        if (in.size() % ((k + 1) * sizeof(int64_t)) != 0)
          throw ExecError("capacity choices from rank " + std::to_string(r) + " have " +
                          std::to_string(in.size()) + " bytes, not a multiple of " +
                          std::to_string((k + 1) * sizeof(int64_t)));
        rows.resize(in.size() / sizeof(int64_t));
        std::memcpy(rows.data(), in.data(), in.size());
      }
      for (size_t i = 0; i * (k + 1) < rows.size(); ++i)
        for (int64_t j = 0; j < k; ++j) {
          const int64_t e = rows[i * (k + 1) + 1 + j];
          if (e < 0 || e >= E)
            throw ExecError("capacity choices from rank " + std::to_string(r) + " name expert " +
                            std::to_string(e));
          bySlot[j].push_back({rows[i * (k + 1)], e, r == rank_, static_cast<int64_t>(i) * k + j});
        }
    }
    const int64_t tokens = static_cast<int64_t>(bySlot[0].size());
    const auto capacity =
        static_cast<int64_t>(std::ceil(capacityFactor_ * static_cast<double>(tokens) *
                                       static_cast<double>(k) / static_cast<double>(E)));
    std::vector<int64_t> used(static_cast<size_t>(E), 0);
    for (auto &choices : bySlot) {
      std::sort(choices.begin(), choices.end(),
                [](const Choice &x, const Choice &y) { return x.token < y.token; });
      for (const Choice &c : choices) {
        const bool over = used[c.expert] >= capacity;
        if (!over)
          ++used[c.expert];
        if (over && c.ownRow) {
          a.dropped[c.slot] = 1;
          ++dropped_[l];
        }
      }
    }
  }

  // d aux / d z_tj = alpha E / (k T_m T) * p_tj (c_j - <p_t, c>), added to dLogits [n, E].
  void auxBackward(int64_t l, std::vector<float> &dLogits) {
    const AttentionLayer &a = attn_[l];
    const int64_t E = model_.numExperts, k = model_.topK;
    const double coef = auxCoef_ * static_cast<double>(E) /
                        (static_cast<double>(k) * static_cast<double>(a.auxTokens) *
                         static_cast<double>(globalTokens_));
    std::vector<double> p(static_cast<size_t>(E));
    for (int64_t t = 0; t < n(); ++t) {
      routerProbs(a.logits.data() + t * E, p);
      double pc = 0;
      for (int64_t e = 0; e < E; ++e)
        pc += p[e] * a.auxCounts[e];
      for (int64_t e = 0; e < E; ++e)
        dLogits[t * E + e] += static_cast<float>(coef * p[e] * (a.auxCounts[e] - pc));
    }
  }

  static void need(bool have, const std::string &what) {
    if (!have)
      throw ExecError("needs " + what +
                      ", which has not been computed on this rank (instructions out of order)");
  }

  int64_t n() const { return static_cast<int64_t>(tokens_.size()); }
  int64_t localRow(int64_t id) const {
    auto it = std::lower_bound(tokens_.begin(), tokens_.end(), id);
    return it != tokens_.end() && *it == id ? it - tokens_.begin() : -1;
  }
  const float *w(int index) const { return state_.weights[index].data.data(); }
  float *grad(int index) { return state_.grads[index].data.data(); }
  const Component &component(int index) const { return model_.components[index]; }
  static bool plainExpert(const Component &c, const ExpertWeights &ew) {
    return c.activation == ExpertActivation::Swiglu && !c.fusedGateUp && ew.b1 < 0 && ew.b3 < 0 &&
           ew.b2 < 0;
  }
  cpu::FfnWeights ffnWeights(const Component &c, const ExpertWeights &ew) const {
    cpu::FfnWeights f;
    f.w1 = w(ew.w1), f.w2 = w(ew.w2), f.fusedGateUp = c.fusedGateUp;
    f.w3 = ew.w3 >= 0 ? w(ew.w3) : nullptr;
    f.b1 = ew.b1 >= 0 ? w(ew.b1) : nullptr;
    f.b3 = ew.b3 >= 0 ? w(ew.b3) : nullptr;
    f.b2 = ew.b2 >= 0 ? w(ew.b2) : nullptr;
    return f;
  }
  int denseComponent(int64_t l) const {
    const LayerComponents &lc = model_.layers[l];
    return lc.denseFfn >= 0 ? lc.denseFfn : lc.sharedFfn;
  }

  void send(int dst, int tag, Bytes message) { comm_.send(dst, tag, std::move(message)); }
  Bytes recv(int src, int tag) { return comm_.recv(src, tag, timeout_); }
  int fwdTag(ExchangeKind kind, int64_t l) const { return exchangeTag(kind, l); }
  int bwdTag(ExchangeKind kind, int64_t l) const { return backwardTag(kind, l, L_); }
  // Token exchanges: the count, then the payload, within the exchange's capacity bound
  // (CountedExchange.h); the backward ones under the forward exchange's bound, on their own tags.
  ExchangeBound bound(ExchangeKind kind, int64_t l, bool backward) const {
    return exchangeBound(plan_, kind, l, backward);
  }
  RowsMessage recvRows(int src, ExchangeKind kind, int64_t l, bool backward) {
    return disagmoe::recvRows(comm_, bound(kind, l, backward), src,
                              backward ? bwdTag(kind, l) : fwdTag(kind, l), timeout_,
                              model_.hiddenSize);
  }
  M2nMessage recvM2n(int src, ExchangeKind kind, int64_t l, bool backward) {
    return disagmoe::recvM2n(comm_, bound(kind, l, backward), src,
                             backward ? bwdTag(kind, l) : fwdTag(kind, l), timeout_,
                             model_.hiddenSize);
  }

  static void addInto(std::vector<float> &dst, const std::vector<float> &src) {
    for (size_t i = 0; i < dst.size(); ++i)
      dst[i] += src[i];
  }

  // ---- attention role: forward -----------------------------------------------------------------

  void attentionForward(const Instruction &ins) {
    const int64_t H = model_.hiddenSize, l = ins.layer;
    switch (ins.op) {
    case OpCode::Embed: {
      AttentionLayer &a = attn_[0];
      std::vector<int64_t> vocabIds = localIds();
      freshAssign(a.x, n() * H);
      cpu::embedding(w(component(model_.embedding).weight), model_.vocabSize, H, vocabIds.data(),
                     n(), a.x.data());
      a.hasX = true;
      break;
    }
    case OpCode::RmsNorm: {
      if (ins.role == NormRole::AttnNorm) {
        AttentionLayer &a = attn_[l];
        need(a.hasX, "the residual stream x of layer " + std::to_string(l));
        freshAssign(a.attnNorm, a.x.size());
        const Component &c = component(model_.layers[l].attnNorm);
        cpu::rmsNorm(a.x.data(), n(), H, w(c.weight), c.eps, a.attnNorm.data());
        a.hasAttnNorm = true;
      } else if (ins.role == NormRole::FfnNorm) {
        AttentionLayer &a = attn_[l];
        need(a.hasH, "h of layer " + std::to_string(l));
        freshAssign(a.ffnNorm, a.h.size());
        const Component &c = component(model_.layers[l].ffnNorm);
        cpu::rmsNorm(a.h.data(), n(), H, w(c.weight), c.eps, a.ffnNorm.data());
        a.hasFfnNorm = true;
      } else {
        AttentionLayer &a = attn_[L_];
        need(a.hasX, "the output of the last layer");
        freshAssign(finalNorm_, a.x.size());
        const Component &c = component(model_.finalNorm);
        cpu::rmsNorm(a.x.data(), n(), H, w(c.weight), c.eps, finalNorm_.data());
        hasFinalNorm_ = true;
      }
      break;
    }
    case OpCode::Attention:
      attentionFwd(l);
      break;
    case OpCode::ResidualAdd: {
      AttentionLayer &a = attn_[l];
      need(a.hasX && a.hasAttention, "x and the attention output of layer " + std::to_string(l));
      freshAssign(a.h, a.x.size());
      for (size_t i = 0; i < a.h.size(); ++i)
        a.h[i] = a.x[i] + attnOut_[i];
      a.hasH = true;
      break;
    }
    case OpCode::Router: {
      AttentionLayer &a = attn_[l];
      need(a.hasFfnNorm, "ffn_norm output of layer " + std::to_string(l));
      const int64_t E = model_.numExperts, k = model_.topK;
      freshAssign(a.logits, n() * E);
      const Component &rc = component(model_.layers[l].router);
      cpu::linear(a.ffnNorm.data(), n(), H, w(rc.weight), E, a.logits.data());
      if (rc.bias >= 0)
        cpu::addBias(a.logits.data(), n(), E, w(rc.bias)); // GPT-OSS
      a.topIds.assign(n() * k, 0);
      freshAssign(a.gates, n() * k);
      cpu::routerGates(a.logits.data(), n(), E, k, model_.routerScoring, a.topIds.data(),
                       a.gates.data(), biasSelection_ ? state_.routerBias[l].data() : nullptr);
      const float scale = component(model_.layers[l].router).routedScalingFactor.value_or(1.0f);
      if (scale != 1.0f) // DeepSeek's routed_scaling_factor: the experts see the scaled gates
        for (float &g : a.gates)
          g *= scale;
      for (int64_t id : a.topIds)
        ++expertLoad_[l][id];
      if (auxCoef_ > 0)
        auxForward(l);
      a.dropped.assign(static_cast<size_t>(n() * k), 0);
      if (capacityFactor_ > 0)
        capacityForward(l);
      a.hasRouter = true;
      break;
    }
    case OpCode::M2nSend: {
      AttentionLayer &a = attn_[l];
      need(a.hasFfnNorm && a.hasRouter,
           "ffn_norm and router outputs of layer " + std::to_string(l));
      const int64_t k = model_.topK;
      const std::vector<int> &owner = placement_.expertToRank[l];
      for (int f : placement_.ffnGroupOfLayer(l).ranks) {
        M2nMessage m;
        for (int64_t t = 0; t < n(); ++t) {
          std::vector<ExpertGate> route;
          for (int64_t j = 0; j < k; ++j)
            if (owner[a.topIds[t * k + j]] == f && !a.dropped[t * k + j])
              route.push_back({a.topIds[t * k + j], a.gates[t * k + j]});
          if (route.empty())
            continue;
          std::sort(route.begin(), route.end(),
                    [](const ExpertGate &x, const ExpertGate &y) { return x.expert < y.expert; });
          m.tokenIds.push_back(tokens_[t]);
          m.x.insert(m.x.end(), a.ffnNorm.begin() + t * H, a.ffnNorm.begin() + (t + 1) * H);
          m.routes.push_back(std::move(route));
        }
        sendM2n(comm_, bound(ExchangeKind::M2n, l, false), f, fwdTag(ExchangeKind::M2n, l), m, H);
      }
      break;
    }
    case OpCode::DenseFfn: {
      // Dense layer / shared experts on the attention side (RankWorker::denseFfn): r = h +
      // FFN(ffn_norm(h)).
      AttentionLayer &a = attn_[l];
      need(a.hasFfnNorm && a.hasH, "ffn_norm output and h of layer " + std::to_string(l));
      const Component &c = component(denseComponent(l));
      std::vector<float> y = freshFloats(n() * H);
      cpu::swigluExpert(a.ffnNorm.data(), n(), H, c.ffnHidden, w(c.w1), w(c.w3), w(c.w2), y.data());
      freshAssign(a.r, a.h.size());
      for (size_t i = 0; i < a.r.size(); ++i)
        a.r[i] = a.h[i] + y[i];
      a.hasR = true;
      break;
    }
    case OpCode::ResidualSend: {
      AttentionLayer &a = attn_[l];
      need(a.hasH, "h of layer " + std::to_string(l));
      sendRows(comm_, bound(ExchangeKind::Residual, l, false),
               placement_.nextAttentionGroup(l).ranks[index_], fwdTag(ExchangeKind::Residual, l),
               {tokens_, a.hasR ? a.r : a.h}, H);
      break;
    }
    case OpCode::ResidualRecv: {
      const int src = placement_.attentionGroupOfLayer(l).ranks[index_];
      RowsMessage m = recvRows(src, ExchangeKind::Residual, l, false);
      if (m.tokenIds != tokens_)
        throw ExecError("residual from rank " + std::to_string(src) +
                        " does not carry this rank's tokens");
      pending_ = std::move(m.rows);
      hasPending_ = true;
      if (!model_.layers[l].hasFfnStage()) { // a dense layer has no N2M: x_{l+1} = r_l
        attn_[l + 1].x = std::move(pending_);
        attn_[l + 1].hasX = true;
        pending_.clear();
        hasPending_ = false;
      }
      break;
    }
    case OpCode::N2mRecv: {
      need(hasPending_, "the residual of layer " + std::to_string(l) + " (residual_recv)");
      AttentionLayer &next = attn_[l + 1];
      next.n2mTokens.clear();
      for (int f : placement_.ffnGroupOfLayer(l).ranks) {
        RowsMessage m = recvRows(f, ExchangeKind::N2m, l, false);
        for (size_t i = 0; i < m.tokenIds.size(); ++i) {
          const int64_t row = localRow(m.tokenIds[i]);
          if (row < 0)
            throw ExecError("N2M from rank " + std::to_string(f) + " carries token " +
                            std::to_string(m.tokenIds[i]) + ", which does not live on this rank");
          float *dst = pending_.data() + row * H;
          for (int64_t j = 0; j < H; ++j)
            dst[j] += m.rows[i * H + j];
        }
        next.n2mTokens.push_back(std::move(m.tokenIds));
      }
      next.x = std::move(pending_);
      next.hasX = true;
      pending_.clear();
      hasPending_ = false;
      break;
    }
    case OpCode::Head: {
      need(hasFinalNorm_, "the final norm output");
      const int64_t V = model_.vocabSize;
      std::vector<float> logits = freshFloats(n() * V);
      cpu::linear(finalNorm_.data(), n(), H, w(component(model_.head).weight), V, logits.data());
      std::vector<int64_t> targets(n());
      for (int64_t t = 0; t < n(); ++t) {
        targets[t] = targets_[tokens_[t]];
        if (targets[t] >= V)
          throw ExecError("target id " + std::to_string(targets[t]) +
                          " is outside the vocabulary [0, " + std::to_string(V) + ")");
        targetTokens_ += targets[t] >= 0;
      }
      freshAssign(dLogits_, n() * V);
      lossSum_ += cpu::crossEntropyBackward(logits.data(), targets.data(), n(), V, gradScale_,
                                            dLogits_.data());
      hasLoss_ = true;
      break;
    }
    default:
      throw ExecError("not an attention instruction");
    }
  }

  std::vector<int64_t> localIds() const {
    std::vector<int64_t> v(tokens_.size());
    for (size_t t = 0; t < tokens_.size(); ++t)
      v[t] = ids_[tokens_[t]];
    return v;
  }

  std::vector<int64_t> positions() const {
    std::vector<int64_t> p(tokens_.size());
    for (size_t t = 0; t < tokens_.size(); ++t)
      p[t] = tokens_[t] % seqLen_;
    return p;
  }

  // The forward of RankWorker's attention, keeping q, k (after RoPE), v and the heads' output.
  void attentionFwd(int64_t l) {
    AttentionLayer &a = attn_[l];
    need(a.hasAttnNorm, "attn_norm output of layer " + std::to_string(l));
    const Component &c = component(model_.layers[l].attention);
    if (c.kind == ComponentKind::MlaAttention)
      return mlaFwd(a, c);
    const int64_t H = model_.hiddenSize, hd = model_.headDim;
    const int64_t qW = model_.numHeads * hd, kvW = model_.numKvHeads * hd;
    freshAssign(a.q, n() * qW);
    freshAssign(a.k, n() * kvW);
    freshAssign(a.v, n() * kvW);
    freshAssign(a.heads, n() * qW);
    cpu::linear(a.attnNorm.data(), n(), H, w(c.wq), qW, a.q.data());
    cpu::linear(a.attnNorm.data(), n(), H, w(c.wk), kvW, a.k.data());
    cpu::linear(a.attnNorm.data(), n(), H, w(c.wv), kvW, a.v.data());
    if (c.bq >= 0)
      cpu::addBias(a.q.data(), n(), qW, w(c.bq)); // GPT-OSS projection biases
    if (c.bk >= 0)
      cpu::addBias(a.k.data(), n(), kvW, w(c.bk));
    if (c.bv >= 0)
      cpu::addBias(a.v.data(), n(), kvW, w(c.bv));
    if (c.qNorm >= 0) { // Qwen3: RMSNorm over head_dim of every q and k head, before RoPE
      a.qPre = a.q;
      a.kPre = a.k;
      cpu::rmsNorm(a.q.data(), n() * model_.numHeads, hd, w(c.qNorm), c.qkNormEps, a.q.data());
      cpu::rmsNorm(a.k.data(), n() * model_.numKvHeads, hd, w(c.kNorm), c.qkNormEps, a.k.data());
    }
    const std::vector<int64_t> pos = positions();
    cpu::rope(a.q.data(), n(), model_.numHeads, hd, pos.data(), model_.ropeTheta);
    cpu::rope(a.k.data(), n(), model_.numKvHeads, hd, pos.data(), model_.ropeTheta);
    const bool variant = c.sinks >= 0 || c.slidingWindow > 0;
    for (int64_t s = 0; s < n(); s += seqLen_)
      if (variant)
        cpu::causalAttentionVariant(a.q.data() + s * qW, a.k.data() + s * kvW, a.v.data() + s * kvW,
                                    seqLen_, model_.numHeads, model_.numKvHeads, hd,
                                    c.sinks >= 0 ? w(c.sinks) : nullptr, c.slidingWindow,
                                    a.heads.data() + s * qW);
      else
        cpu::causalAttention(a.q.data() + s * qW, a.k.data() + s * kvW, a.v.data() + s * kvW,
                             seqLen_, model_.numHeads, model_.numKvHeads, hd,
                             a.heads.data() + s * qW);
    freshAssign(attnOut_, n() * H);
    cpu::linear(a.heads.data(), n(), qW, w(c.wo), H, attnOut_.data());
    if (c.bo >= 0)
      cpu::addBias(attnOut_.data(), n(), H, w(c.bo));
    a.hasAttention = true;
  }

  // ---- attention role: backward ----------------------------------------------------------------

  void attentionBackward(const Instruction &ins) {
    const int64_t H = model_.hiddenSize, l = ins.layer;
    switch (ins.op) {
    case OpCode::Head: {
      need(hasLoss_, "the loss (head forward)");
      freshAssign(dFinalNorm_, n() * H);
      const int weight = component(model_.head).weight;
      cpu::linearBackward(finalNorm_.data(), dLogits_.data(), n(), H, w(weight), model_.vocabSize,
                          dFinalNorm_.data(), grad(weight));
      hasDFinalNorm_ = true;
      break;
    }
    case OpCode::RmsNorm: {
      if (ins.role == NormRole::FinalNorm) {
        need(hasDFinalNorm_, "dL/d(final norm output) (head backward)");
        AttentionLayer &a = attn_[L_];
        const Component &c = component(model_.finalNorm);
        freshAssign(a.dx, a.x.size());
        cpu::rmsNormBackward(a.x.data(), dFinalNorm_.data(), n(), H, w(c.weight), c.eps,
                             a.dx.data(), grad(c.weight));
        a.hasDx = true;
      } else if (ins.role == NormRole::FfnNorm) {
        AttentionLayer &a = attn_[l];
        need(a.hasDFfn && a.hasDh, "dL/d(ffn_norm output) and dL/dh of layer " + std::to_string(l));
        const Component &c = component(model_.layers[l].ffnNorm);
        std::vector<float> part = freshFloats(a.h.size());
        cpu::rmsNormBackward(a.h.data(), a.dFfn.data(), n(), H, w(c.weight), c.eps, part.data(),
                             grad(c.weight));
        addInto(a.dh, part);
      } else {
        AttentionLayer &a = attn_[l];
        need(a.hasDAttnNorm && a.hasDx, "dL/d(attn_norm output) of layer " + std::to_string(l));
        const Component &c = component(model_.layers[l].attnNorm);
        std::vector<float> part = freshFloats(a.x.size());
        cpu::rmsNormBackward(a.x.data(), a.dAttnNorm.data(), n(), H, w(c.weight), c.eps,
                             part.data(), grad(c.weight));
        addInto(a.dx, part);
      }
      break;
    }
    case OpCode::N2mRecv: {
      // dL/dy of every F-rank's N2M vectors is dL/dx_{l+1} at its tokens.
      AttentionLayer &next = attn_[l + 1];
      need(next.hasDx, "dL/dx of layer " + std::to_string(l + 1));
      const auto &franks = placement_.ffnGroupOfLayer(l).ranks;
      if (next.n2mTokens.size() != franks.size())
        throw ExecError("no N2M of this layer was received");
      for (size_t fi = 0; fi < franks.size(); ++fi) {
        RowsMessage m;
        m.tokenIds = next.n2mTokens[fi];
        m.rows.reserve(m.tokenIds.size() * H);
        for (int64_t id : m.tokenIds) {
          const int64_t row = localRow(id);
          m.rows.insert(m.rows.end(), next.dx.begin() + row * H, next.dx.begin() + (row + 1) * H);
        }
        sendRows(comm_, bound(ExchangeKind::N2m, l, true), franks[fi], bwdTag(ExchangeKind::N2m, l),
                 m, H);
      }
      break;
    }
    case OpCode::ResidualRecv: {
      AttentionLayer &next = attn_[l + 1];
      need(next.hasDx, "dL/dx of layer " + std::to_string(l + 1));
      sendRows(comm_, bound(ExchangeKind::Residual, l, true),
               placement_.attentionGroupOfLayer(l).ranks[index_], bwdTag(ExchangeKind::Residual, l),
               {tokens_, next.dx}, H);
      break;
    }
    case OpCode::ResidualSend: {
      AttentionLayer &a = attn_[l];
      const int src = placement_.nextAttentionGroup(l).ranks[index_];
      RowsMessage m = recvRows(src, ExchangeKind::Residual, l, true);
      if (m.tokenIds != tokens_)
        throw ExecError("residual gradient from rank " + std::to_string(src) +
                        " does not carry this rank's tokens");
      a.dh = std::move(m.rows);
      a.hasDh = true;
      break;
    }
    case OpCode::M2nSend: {
      AttentionLayer &a = attn_[l];
      need(a.hasRouter, "the router output of layer " + std::to_string(l));
      const int64_t k = model_.topK;
      a.dFfn.assign(n() * H, 0.0f);   // accumulates over F-ranks
      freshAssign(a.dGates, n() * k); // every kept slot is set by the F-rank holding its expert
      for (size_t i = 0; i < a.dropped.size(); ++i)
        if (a.dropped[i])
          a.dGates[i] = 0.0f; // a dropped expert's output is zero whatever its gate
      for (int f : placement_.ffnGroupOfLayer(l).ranks) {
        M2nMessage m = recvM2n(f, ExchangeKind::M2n, l, true);
        for (size_t i = 0; i < m.tokenIds.size(); ++i) {
          const int64_t row = localRow(m.tokenIds[i]);
          if (row < 0)
            throw ExecError("gradient from rank " + std::to_string(f) + " carries token " +
                            std::to_string(m.tokenIds[i]) + ", which does not live on this rank");
          float *dst = a.dFfn.data() + row * H;
          for (int64_t j = 0; j < H; ++j)
            dst[j] += m.x[i * H + j];
          for (const ExpertGate &eg : m.routes[i]) {
            int64_t slot = -1;
            for (int64_t j = 0; j < k; ++j)
              if (a.topIds[row * k + j] == eg.expert)
                slot = row * k + j;
            if (slot < 0)
              throw ExecError("gate gradient from rank " + std::to_string(f) + " for expert " +
                              std::to_string(eg.expert) + ", which token " +
                              std::to_string(m.tokenIds[i]) + " was not routed to");
            a.dGates[slot] = eg.gate;
          }
        }
      }
      a.hasDFfn = true;
      break;
    }
    case OpCode::DenseFfn: {
      // dL/dy = dL/dr = dh (r = h + y); adds the FFN's input gradient into dL/d(ffn_norm output)
      // (zero first on a dense layer, which has no m2n_send to start it).
      AttentionLayer &a = attn_[l];
      need(a.hasDh && a.hasR, "dL/dr and the dense FFN forward of layer " + std::to_string(l));
      if (!a.hasDFfn) {
        a.dFfn.assign(n() * H, 0.0f);
        a.hasDFfn = true;
      }
      const Component &c = component(denseComponent(l));
      std::vector<float> dx = freshFloats(n() * H);
      cpu::swigluExpertBackward(a.ffnNorm.data(), a.dh.data(), n(), H, c.ffnHidden, w(c.w1),
                                w(c.w3), w(c.w2), dx.data(), grad(c.w1), grad(c.w3), grad(c.w2),
                                nullptr);
      addInto(a.dFfn, dx);
      break;
    }
    case OpCode::Router: {
      AttentionLayer &a = attn_[l];
      need(a.hasDFfn, "the gate gradients of layer " + std::to_string(l) + " (m2n_send backward)");
      const int64_t E = model_.numExperts;
      std::vector<float> dLogits = freshFloats(n() * E), part = freshFloats(n() * H);
      const float scale = component(model_.layers[l].router).routedScalingFactor.value_or(1.0f);
      if (scale != 1.0f) // g = scale * g', so dL/dg' = scale * dL/dg
        for (float &g : a.dGates)
          g *= scale;
      cpu::routerGatesBackward(a.logits.data(), n(), E, model_.topK, model_.routerScoring,
                               a.topIds.data(), a.dGates.data(), dLogits.data());
      if (a.hasAux)
        auxBackward(l, dLogits);
      const Component &rc = component(model_.layers[l].router);
      const int weight = rc.weight;
      cpu::linearBackward(a.ffnNorm.data(), dLogits.data(), n(), H, w(weight), E, part.data(),
                          grad(weight));
      if (rc.bias >= 0)
        cpu::biasBackward(dLogits.data(), n(), E, grad(rc.bias));
      addInto(a.dFfn, part);
      break;
    }
    case OpCode::ResidualAdd: {
      AttentionLayer &a = attn_[l];
      need(a.hasDh, "dL/dh of layer " + std::to_string(l));
      a.dx = a.dh; // h = x + attn(x): dL/dx gets dL/dh, the attention output gets dL/dh too
      a.hasDx = true;
      break;
    }
    case OpCode::Attention:
      attentionBwd(l);
      break;
    case OpCode::Embed: {
      AttentionLayer &a = attn_[0];
      need(a.hasDx, "dL/dx of layer 0");
      const std::vector<int64_t> vocabIds = localIds();
      cpu::embeddingBackward(a.dx.data(), vocabIds.data(), n(), H,
                             grad(component(model_.embedding).weight));
      break;
    }
    default:
      throw ExecError("not an attention instruction");
    }
  }

  // DeepSeek-V2's multi-head latent attention, as RankWorker::mlaAttention, keeping q_proj's and
  // kv_a's outputs, the latent before and after its norm, and Q, K, V, the heads' output.
  void mlaFwd(AttentionLayer &a, const Component &c) {
    const int64_t H = model_.hiddenSize, heads = model_.numHeads, nope = model_.qkNopeHeadDim;
    const int64_t rope = model_.qkRopeHeadDim, vd = model_.vHeadDim, rank = model_.kvLoraRank,
                  qd = nope + rope;
    freshAssign(a.mlaQ, n() * heads * qd);
    freshAssign(a.ckv, n() * (rank + rope));
    freshAssign(a.latentPre, n() * rank);
    freshAssign(a.latent, n() * rank);
    std::vector<float> kv = freshFloats(n() * heads * (nope + vd));
    cpu::linear(a.attnNorm.data(), n(), H, w(c.wq), heads * qd, a.mlaQ.data());
    cpu::linear(a.attnNorm.data(), n(), H, w(c.wkvA), rank + rope, a.ckv.data());
    for (int64_t t = 0; t < n(); ++t)
      std::copy_n(a.ckv.data() + t * (rank + rope), rank, a.latentPre.data() + t * rank);
    cpu::rmsNorm(a.latentPre.data(), n(), rank, w(c.kvNorm), c.kvNormEps, a.latent.data());
    cpu::linear(a.latent.data(), n(), rank, w(c.wkvB), heads * (nope + vd), kv.data());
    std::vector<float> qPe = freshFloats(n() * heads * rope), kPe = freshFloats(n() * rope);
    for (int64_t t = 0; t < n(); ++t) {
      for (int64_t h = 0; h < heads; ++h)
        ropeGather(a.mlaQ.data() + (t * heads + h) * qd + nope, qPe.data() + (t * heads + h) * rope,
                   rope, c.ropeInterleaved);
      ropeGather(a.ckv.data() + t * (rank + rope) + rank, kPe.data() + t * rope, rope,
                 c.ropeInterleaved);
    }
    const std::vector<int64_t> pos = positions();
    cpu::rope(qPe.data(), n(), heads, rope, pos.data(), model_.ropeTheta);
    cpu::rope(kPe.data(), n(), 1, rope, pos.data(), model_.ropeTheta);
    freshAssign(a.q, n() * heads * qd);
    freshAssign(a.k, n() * heads * qd);
    freshAssign(a.v, n() * heads * vd);
    freshAssign(a.heads, n() * heads * vd);
    for (int64_t t = 0; t < n(); ++t)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t th = t * heads + h;
        std::copy_n(a.mlaQ.data() + th * qd, nope, a.q.data() + th * qd);
        std::copy_n(qPe.data() + th * rope, rope, a.q.data() + th * qd + nope);
        std::copy_n(kv.data() + th * (nope + vd), nope, a.k.data() + th * qd);
        std::copy_n(kPe.data() + t * rope, rope, a.k.data() + th * qd + nope);
        std::copy_n(kv.data() + th * (nope + vd) + nope, vd, a.v.data() + th * vd);
      }
    for (int64_t s = 0; s < n(); s += seqLen_)
      cpu::causalAttentionGeneral(a.q.data() + s * heads * qd, a.k.data() + s * heads * qd,
                                  a.v.data() + s * heads * vd, seqLen_, heads, heads, qd, vd,
                                  c.softmaxScale, nullptr, 0, a.heads.data() + s * heads * vd);
    freshAssign(attnOut_, n() * H);
    cpu::linear(a.heads.data(), n(), heads * vd, w(c.wo), H, attnOut_.data());
    a.hasAttention = true;
  }

  // The decoupled RoPE part's layout: interleaved [x0, x1, x2, ...] -> [x0, x2, ..., x1, x3, ...].
  static void ropeGather(const float *src, float *dst, int64_t rope, bool interleaved) {
    if (!interleaved)
      return void(std::copy_n(src, rope, dst));
    for (int64_t i = 0; i < rope / 2; ++i) {
      dst[i] = src[2 * i];
      dst[rope / 2 + i] = src[2 * i + 1];
    }
  }
  // Its transpose (a permutation): scatters dst's gradient back to src's positions.
  static void ropeScatter(const float *dDst, float *dSrc, int64_t rope, bool interleaved) {
    if (!interleaved)
      return void(std::copy_n(dDst, rope, dSrc));
    for (int64_t i = 0; i < rope / 2; ++i) {
      dSrc[2 * i] = dDst[i];
      dSrc[2 * i + 1] = dDst[rope / 2 + i];
    }
  }

  void mlaBwd(AttentionLayer &a, const Component &c) {
    const int64_t H = model_.hiddenSize, heads = model_.numHeads, nope = model_.qkNopeHeadDim;
    const int64_t rope = model_.qkRopeHeadDim, vd = model_.vHeadDim, rank = model_.kvLoraRank,
                  qd = nope + rope;
    std::vector<float> dO = freshFloats(n() * heads * vd), dQ = freshFloats(n() * heads * qd),
                       dK = freshFloats(n() * heads * qd), dV = freshFloats(n() * heads * vd);
    cpu::linearBackward(a.heads.data(), a.dh.data(), n(), heads * vd, w(c.wo), H, dO.data(),
                        grad(c.wo));
    for (int64_t s = 0; s < n(); s += seqLen_)
      cpu::causalAttentionGeneralBackward(a.q.data() + s * heads * qd, a.k.data() + s * heads * qd,
                                          a.v.data() + s * heads * vd, dO.data() + s * heads * vd,
                                          seqLen_, heads, heads, qd, vd, c.softmaxScale, nullptr, 0,
                                          dQ.data() + s * heads * qd, dK.data() + s * heads * qd,
                                          dV.data() + s * heads * vd, nullptr);
    // Split Q, K, V's gradients back: q_nope / q_pe, k_nope + value (kv_b's output), k_pe summed
    // over the heads that share it.
    std::vector<float> dq = freshFloats(n() * heads * qd),
                       dkv = freshFloats(n() * heads * (nope + vd));
    std::vector<float> dqPe = freshFloats(n() * heads * rope),
                       dkPe(static_cast<size_t>(n() * rope), 0.0f);
    for (int64_t t = 0; t < n(); ++t)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t th = t * heads + h;
        std::copy_n(dQ.data() + th * qd, nope, dq.data() + th * qd);
        std::copy_n(dQ.data() + th * qd + nope, rope, dqPe.data() + th * rope);
        std::copy_n(dK.data() + th * qd, nope, dkv.data() + th * (nope + vd));
        std::copy_n(dV.data() + th * vd, vd, dkv.data() + th * (nope + vd) + nope);
        for (int64_t j = 0; j < rope; ++j)
          dkPe[t * rope + j] += dK[th * qd + nope + j];
      }
    const std::vector<int64_t> pos = positions();
    cpu::ropeBackward(dqPe.data(), n(), heads, rope, pos.data(), model_.ropeTheta);
    cpu::ropeBackward(dkPe.data(), n(), 1, rope, pos.data(), model_.ropeTheta);
    std::vector<float> dckv = freshFloats(n() * (rank + rope)), dLatent = freshFloats(n() * rank);
    for (int64_t t = 0; t < n(); ++t) {
      for (int64_t h = 0; h < heads; ++h)
        ropeScatter(dqPe.data() + (t * heads + h) * rope, dq.data() + (t * heads + h) * qd + nope,
                    rope, c.ropeInterleaved);
      ropeScatter(dkPe.data() + t * rope, dckv.data() + t * (rank + rope) + rank, rope,
                  c.ropeInterleaved);
    }
    cpu::linearBackward(a.latent.data(), dkv.data(), n(), rank, w(c.wkvB), heads * (nope + vd),
                        dLatent.data(), grad(c.wkvB));
    cpu::rmsNormBackward(a.latentPre.data(), dLatent.data(), n(), rank, w(c.kvNorm), c.kvNormEps,
                         dLatent.data(), grad(c.kvNorm));
    for (int64_t t = 0; t < n(); ++t)
      std::copy_n(dLatent.data() + t * rank, rank, dckv.data() + t * (rank + rope));
    std::vector<float> part = freshFloats(n() * H);
    freshAssign(a.dAttnNorm, n() * H);
    cpu::linearBackward(a.attnNorm.data(), dq.data(), n(), H, w(c.wq), heads * qd,
                        a.dAttnNorm.data(), grad(c.wq));
    cpu::linearBackward(a.attnNorm.data(), dckv.data(), n(), H, w(c.wkvA), rank + rope, part.data(),
                        grad(c.wkvA));
    addInto(a.dAttnNorm, part);
    a.hasDAttnNorm = true;
  }

  void attentionBwd(int64_t l) {
    AttentionLayer &a = attn_[l];
    need(a.hasDh && a.hasAttention,
         "dL/dh and the attention forward of layer " + std::to_string(l));
    const Component &c = component(model_.layers[l].attention);
    if (c.kind == ComponentKind::MlaAttention)
      return mlaBwd(a, c);
    const int64_t H = model_.hiddenSize, hd = model_.headDim;
    const int64_t qW = model_.numHeads * hd, kvW = model_.numKvHeads * hd;
    std::vector<float> dHeads = freshFloats(n() * qW), dq = freshFloats(n() * qW),
                       dk = freshFloats(n() * kvW), dv = freshFloats(n() * kvW),
                       part = freshFloats(n() * H);
    cpu::linearBackward(a.heads.data(), a.dh.data(), n(), qW, w(c.wo), H, dHeads.data(),
                        grad(c.wo));
    if (c.bo >= 0)
      cpu::biasBackward(a.dh.data(), n(), H, grad(c.bo));
    for (int64_t s = 0; s < n(); s += seqLen_)
      cpu::causalAttentionVariantBackward(
          a.q.data() + s * qW, a.k.data() + s * kvW, a.v.data() + s * kvW, dHeads.data() + s * qW,
          seqLen_, model_.numHeads, model_.numKvHeads, hd, c.sinks >= 0 ? w(c.sinks) : nullptr,
          c.slidingWindow, dq.data() + s * qW, dk.data() + s * kvW, dv.data() + s * kvW,
          c.sinks >= 0 ? grad(c.sinks) : nullptr);
    const std::vector<int64_t> pos = positions();
    cpu::ropeBackward(dq.data(), n(), model_.numHeads, hd, pos.data(), model_.ropeTheta);
    cpu::ropeBackward(dk.data(), n(), model_.numKvHeads, hd, pos.data(), model_.ropeTheta);
    if (c.qNorm >= 0) { // through the per-head q/k RMSNorm (dx may alias dy)
      cpu::rmsNormBackward(a.qPre.data(), dq.data(), n() * model_.numHeads, hd, w(c.qNorm),
                           c.qkNormEps, dq.data(), grad(c.qNorm));
      cpu::rmsNormBackward(a.kPre.data(), dk.data(), n() * model_.numKvHeads, hd, w(c.kNorm),
                           c.qkNormEps, dk.data(), grad(c.kNorm));
    }
    if (c.bq >= 0)
      cpu::biasBackward(dq.data(), n(), qW, grad(c.bq));
    if (c.bk >= 0)
      cpu::biasBackward(dk.data(), n(), kvW, grad(c.bk));
    if (c.bv >= 0)
      cpu::biasBackward(dv.data(), n(), kvW, grad(c.bv));
    freshAssign(a.dAttnNorm, n() * H);
    cpu::linearBackward(a.attnNorm.data(), dq.data(), n(), H, w(c.wq), qW, a.dAttnNorm.data(),
                        grad(c.wq));
    cpu::linearBackward(a.attnNorm.data(), dk.data(), n(), H, w(c.wk), kvW, part.data(),
                        grad(c.wk));
    addInto(a.dAttnNorm, part);
    cpu::linearBackward(a.attnNorm.data(), dv.data(), n(), H, w(c.wv), kvW, part.data(),
                        grad(c.wv));
    addInto(a.dAttnNorm, part);
    a.hasDAttnNorm = true;
  }

  // ---- ffn role
  // ----------------------------------------------------------------------------------

  void ffnForward(const Instruction &ins) {
    const int64_t H = model_.hiddenSize, l = ins.layer;
    FfnLayer &f = ffn_[l];
    switch (ins.op) {
    case OpCode::M2nRecv: {
      f.messages.clear();
      for (int a : placement_.attentionGroupOfLayer(l).ranks) {
        M2nMessage m = recvM2n(a, ExchangeKind::M2n, l, false);
        for (const auto &route : m.routes)
          for (const ExpertGate &eg : route)
            if (eg.expert < 0 || eg.expert >= model_.numExperts ||
                placement_.expertToRank[l][eg.expert] != rank_)
              throw ExecError("M2N from rank " + std::to_string(a) + " routes a token to expert " +
                              std::to_string(eg.expert) + ", which is not on this rank");
        f.messages.push_back(std::move(m));
      }
      f.received = true;
      break;
    }
    case OpCode::Experts: {
      need(f.received, "the M2N messages of layer " + std::to_string(l));
      const Component &c = component(model_.layers[l].experts);
      std::vector<std::vector<float>> outputs(f.messages.size());
      for (size_t s = 0; s < f.messages.size(); ++s)
        outputs[s].assign(f.messages[s].tokenIds.size() * H, 0.0f); // accumulates g_e * E_e(x)
      f.uses.clear();
      f.experts.clear();
      for (const ExpertWeights &ew : c.experts) {
        if (placement_.expertToRank[l][ew.expert] != rank_)
          continue;
        std::vector<ExpertUse> uses;
        std::vector<float> x = gatherUses(f, ew.expert, uses);
        const int64_t rows = static_cast<int64_t>(uses.size());
        std::vector<float> y = freshFloats(rows * H);
        if (plainExpert(c, ew))
          cpu::swigluExpert(x.data(), rows, H, model_.expertHidden, w(ew.w1), w(ew.w3), w(ew.w2),
                            y.data());
        else // biases, fused gate/up, GPT-OSS's clamped SwiGLU (FamilyKernels.h)
          cpu::ffnForward(x.data(), rows, H, model_.expertHidden, ffnWeights(c, ew),
                          c.activation == ExpertActivation::SwigluOai, c.swigluLimit, c.swigluAlpha,
                          y.data());
        for (int64_t r = 0; r < rows; ++r) {
          float *out = outputs[uses[r].source].data() + uses[r].token * H;
          for (int64_t j = 0; j < H; ++j)
            out[j] += uses[r].gate * y[r * H + j];
        }
        f.uses.push_back(std::move(uses));
        f.experts.push_back(&ew);
      }
      f.dy = std::move(outputs); // the N2M payloads until n2m_send
      f.computed = true;
      break;
    }
    case OpCode::N2mSend: {
      need(f.computed, "the expert outputs of layer " + std::to_string(l));
      const Group &next = placement_.nextAttentionGroup(l);
      for (size_t s = 0; s < f.messages.size(); ++s)
        sendRows(comm_, bound(ExchangeKind::N2m, l, false), next.ranks[s],
                 fwdTag(ExchangeKind::N2m, l), {f.messages[s].tokenIds, f.dy[s]}, H);
      f.dy.clear();
      break;
    }
    default:
      throw ExecError("not an ffn instruction");
    }
  }

  // The rows of every token routed to `expert`, over all sources in ascending order.
  std::vector<float> gatherUses(const FfnLayer &f, int64_t expert,
                                std::vector<ExpertUse> &uses) const {
    const int64_t H = model_.hiddenSize;
    std::vector<float> x;
    for (size_t s = 0; s < f.messages.size(); ++s)
      for (size_t t = 0; t < f.messages[s].tokenIds.size(); ++t)
        for (const ExpertGate &eg : f.messages[s].routes[t])
          if (eg.expert == expert) {
            uses.push_back({s, t, eg.gate});
            x.insert(x.end(), f.messages[s].x.begin() + t * H,
                     f.messages[s].x.begin() + (t + 1) * H);
          }
    return x;
  }

  void ffnBackward(const Instruction &ins) {
    const int64_t H = model_.hiddenSize, l = ins.layer;
    FfnLayer &f = ffn_[l];
    switch (ins.op) {
    case OpCode::N2mSend: {
      need(f.computed, "the forward of layer " + std::to_string(l));
      const Group &next = placement_.nextAttentionGroup(l);
      f.dy.assign(f.messages.size(), {});
      for (size_t s = 0; s < f.messages.size(); ++s) {
        RowsMessage m = recvRows(next.ranks[s], ExchangeKind::N2m, l, true);
        if (m.tokenIds != f.messages[s].tokenIds)
          throw ExecError("dL/dy from rank " + std::to_string(next.ranks[s]) +
                          " does not carry the tokens this rank sent it");
        f.dy[s] = std::move(m.rows);
      }
      f.hasDy = true;
      break;
    }
    case OpCode::Experts: {
      need(f.hasDy, "dL/dy of layer " + std::to_string(l) + " (n2m_send backward)");
      f.dx.assign(f.messages.size(), {});
      f.dGates.assign(f.messages.size(), {});
      for (size_t s = 0; s < f.messages.size(); ++s) {
        f.dx[s].assign(f.messages[s].tokenIds.size() * H, 0.0f); // accumulates over local experts
        f.dGates[s].assign(f.messages[s].tokenIds.size(), {});
      }
      for (size_t e = 0; e < f.experts.size(); ++e) {
        const ExpertWeights &ew = *f.experts[e];
        std::vector<ExpertUse> uses;
        const std::vector<float> x = gatherUses(f, ew.expert, uses);
        const int64_t rows = static_cast<int64_t>(uses.size());
        std::vector<float> dy = freshFloats(rows * H), dx = freshFloats(rows * H),
                           y = freshFloats(rows * H);
        for (int64_t r = 0; r < rows; ++r) {
          const float *up = f.dy[uses[r].source].data() + uses[r].token * H;
          for (int64_t j = 0; j < H; ++j)
            dy[r * H + j] = uses[r].gate * up[j];
        }
        const Component &c = component(model_.layers[l].experts);
        if (plainExpert(c, ew)) {
          cpu::swigluExpertBackward(x.data(), dy.data(), rows, H, model_.expertHidden, w(ew.w1),
                                    w(ew.w3), w(ew.w2), dx.data(), grad(ew.w1), grad(ew.w3),
                                    grad(ew.w2), y.data());
        } else {
          cpu::FfnGrads g;
          g.w1 = grad(ew.w1), g.w2 = grad(ew.w2);
          g.w3 = ew.w3 >= 0 ? grad(ew.w3) : nullptr;
          g.b1 = ew.b1 >= 0 ? grad(ew.b1) : nullptr;
          g.b3 = ew.b3 >= 0 ? grad(ew.b3) : nullptr;
          g.b2 = ew.b2 >= 0 ? grad(ew.b2) : nullptr;
          cpu::ffnBackward(x.data(), dy.data(), rows, H, model_.expertHidden, ffnWeights(c, ew),
                           c.activation == ExpertActivation::SwigluOai, c.swigluLimit,
                           c.swigluAlpha, dx.data(), g, y.data());
        }
        for (int64_t r = 0; r < rows; ++r) {
          float *out = f.dx[uses[r].source].data() + uses[r].token * H;
          const float *up = f.dy[uses[r].source].data() + uses[r].token * H;
          double dot = 0;
          for (int64_t j = 0; j < H; ++j) {
            out[j] += dx[r * H + j];
            dot += static_cast<double>(up[j]) * y[r * H + j];
          }
          f.dGates[uses[r].source][uses[r].token].push_back({ew.expert, static_cast<float>(dot)});
        }
      }
      f.hasDx = true;
      break;
    }
    case OpCode::M2nRecv: {
      need(f.hasDx, "the expert gradients of layer " + std::to_string(l));
      const auto &aranks = placement_.attentionGroupOfLayer(l).ranks;
      for (size_t s = 0; s < f.messages.size(); ++s) {
        M2nMessage m{f.messages[s].tokenIds, std::move(f.dx[s]), std::move(f.dGates[s])};
        sendM2n(comm_, bound(ExchangeKind::M2n, l, true), aranks[s], bwdTag(ExchangeKind::M2n, l),
                m, H);
      }
      f = FfnLayer{};
      break;
    }
    default:
      throw ExecError("not an ffn instruction");
    }
  }

  const Plan &plan_;
  const ModelSpec &model_;
  const Placement &placement_;
  RankState &state_;
  Comm &comm_;
  const int64_t *ids_;
  const int64_t *targets_;
  const int64_t batch_, seqLen_;
  const float gradScale_;
  const std::chrono::milliseconds timeout_;
  const double auxCoef_;
  const int64_t globalTokens_;
  const double capacityFactor_;
  const bool biasSelection_; // rank the experts by score + state_.routerBias[l]
  const int rank_;
  const Group &group_;
  const int64_t index_;
  const int64_t L_;

  std::vector<int64_t> tokens_;
  std::vector<AttentionLayer> attn_; // [L + 1]: x of layer L is the final norm's input
  std::vector<float> attnOut_, pending_, finalNorm_, dFinalNorm_, dLogits_;
  bool hasPending_ = false, hasFinalNorm_ = false, hasLoss_ = false, hasDFinalNorm_ = false;
  double lossSum_ = 0, auxSum_ = 0;
  int64_t targetTokens_ = 0;
  std::vector<std::vector<int64_t>> expertLoad_; // [L][E], this rank's tokens (attention ranks)
  std::vector<int64_t> dropped_;                 // [L], this rank's assignments over capacity
  NonFinite firstNonFinite_;
  std::vector<FfnLayer> ffn_;
};

// Sum of replicated weights' gradients over their holders: one Comm::allReduceSum per holder set,
// in ascending rank order on local/mpi (its default; see header and Comm.h), ncclAllReduce on nccl.
void allReduce(const Plan &plan, RankState &state, Comm &comm, std::chrono::milliseconds timeout) {
  std::map<std::vector<int>, std::vector<int>> sets; // holders -> weight indices (ascending)
  for (size_t i = 0; i < plan.model.weights.size(); ++i)
    if (state.holds(static_cast<int>(i)) && plan.model.weights[i].ranks.size() > 1)
      sets[plan.model.weights[i].ranks].push_back(static_cast<int>(i));
  for (const auto &[holders, indices] : sets) {
    const int tag = allReduceTag(plan.model.numLayers, indices.front());
    size_t total = 0;
    for (int i : indices)
      total += state.grads[i].data.size();
    std::vector<float> flat(total);
    size_t at = 0;
    for (int i : indices) {
      const auto &g = state.grads[i].data;
      std::copy(g.begin(), g.end(), flat.begin() + static_cast<std::ptrdiff_t>(at));
      at += g.size();
    }
    comm.allReduceSum(holders, tag, flat.data(), total, timeout);
    at = 0;
    for (int i : indices) {
      auto &g = state.grads[i].data;
      std::copy(flat.begin() + static_cast<std::ptrdiff_t>(at),
                flat.begin() + static_cast<std::ptrdiff_t>(at + g.size()), g.begin());
      at += g.size();
    }
  }
}

void optimizerStep(RankState &state, const OptimizerConfig &config) {
  ++state.step;
  for (size_t i = 0; i < state.weights.size(); ++i) {
    if (state.weights[i].empty())
      continue;
    float *w = state.weights[i].data.data();
    const float *g = state.grads[i].data.data();
    const int64_t n = state.weights[i].numel();
    if (config.kind == OptimizerKind::Sgd) {
      sgdStep(w, g, n, config.lr);
    } else {
      if (state.m[i].empty()) {
        state.m[i] = Tensor(state.weights[i].shape);
        state.v[i] = Tensor(state.weights[i].shape);
      }
      adamwStep(w, g, state.m[i].data.data(), state.v[i].data.data(), n, state.step, config);
    }
  }
}

// DeepSeek-V3's bias update (StepConfig::routerBiasUpdateRate) of every layer whose router this
// rank runs: the group's A-ranks exchange their step loads and add them in ascending rank order.
void updateRouterBias(const Plan &plan, RankState &state, Comm &comm,
                      std::chrono::milliseconds timeout,
                      const std::vector<std::vector<int64_t>> &load, double rate) {
  const int64_t E = plan.model.numExperts;
  for (int64_t l = 0; l < plan.model.numLayers; ++l) {
    const std::vector<int> &ranks = plan.placement.attentionGroupOfLayer(l).ranks;
    if (std::find(ranks.begin(), ranks.end(), state.rank) == ranks.end())
      continue;
    std::vector<double> mine(static_cast<size_t>(E), 0.0);
    if (static_cast<size_t>(l) < load.size())
      for (int64_t e = 0; e < E; ++e)
        mine[e] = static_cast<double>(load[l][e]);
    const int tag = biasLoadTag(plan.model, l);
    Bytes out(mine.size() * sizeof(double));
    std::memcpy(out.data(), mine.data(), out.size());
    for (int r : ranks)
      if (r != state.rank)
        comm.send(r, tag, out);
    std::vector<double> total(mine.size(), 0.0), part(mine.size());
    for (int r : ranks) {
      if (r == state.rank) {
        part = mine;
      } else {
        const Bytes in = comm.recv(r, tag, timeout);
        if (in.size() != out.size())
          throw ExecError("rank " + std::to_string(state.rank) + ": router load of layer " +
                          std::to_string(l) + " from rank " + std::to_string(r) + " has " +
                          std::to_string(in.size()) + " bytes, expected " +
                          std::to_string(out.size()));
        std::memcpy(part.data(), in.data(), in.size());
      }
      for (int64_t e = 0; e < E; ++e)
        total[e] += part[e];
    }
    double sum = 0;
    for (double c : total)
      sum += c;
    const double mean = sum / static_cast<double>(E);
    const float u = static_cast<float>(rate);
    for (int64_t e = 0; e < E; ++e) {
      const float sign = total[e] < mean ? 1.0f : total[e] > mean ? -1.0f : 0.0f;
      state.routerBias[l][e] += u * sign;
    }
  }
}

// How many micro-batches the forward stream may run ahead of the backward stream (forward of
// micro-batch i waits for the backward of i - ahead): in the plan's AF-Pipe schedule, the forward
// micro-batches this rank's group starts before its first backward compute (the 1F1B warm-up);
// without a schedule 2, 1F1B's steady state of one forward beside one backward. In [1, count].
size_t forwardsAhead(const Plan &plan, int rank, size_t count) {
  size_t ahead = 2;
  if (plan.schedule) {
    const sched::Schedule &s = *plan.schedule;
    for (size_t g = 0; g < s.groups.size(); ++g) {
      if (s.groups[g].ranks.empty())
        continue;
      const std::vector<int> &ranks = s.groups[g].ranks[0];
      if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end())
        continue;
      const sched::Program *program = s.program(s.groups[g].role);
      if (!program)
        continue;
      std::set<int> warmup;
      for (const sched::Instr &in : program->instrs) {
        if (in.group != static_cast<int>(g) || in.kind != sched::Kind::Compute)
          continue;
        if (in.phase == sched::Phase::Backward)
          break;
        if (in.phase == sched::Phase::Forward)
          warmup.insert(in.mb);
      }
      if (!warmup.empty())
        ahead = warmup.size();
    }
  }
  return std::max<size_t>(1, std::min(ahead, count));
}

// Runs the micro-batches' forwards on this thread (the forward stream) and their backwards, in
// ascending micro-batch order, on a second thread (the backward stream): backward i waits for the
// event "forward i done", forward i waits for "backward i - ahead done". Only the backward stream
// writes weight gradients, one micro-batch after the other, so they accumulate in the order the
// sequential step used and keep its bits. The first failure of either stream fails the other's
// events and the comm stream's pending receives (so neither waits for a deadline) and is rethrown
// once both threads have ended.
void runComputeStreams(std::vector<std::unique_ptr<TrainWorker>> &workers, CommStream &stream,
                       size_t ahead) {
  const size_t count = workers.size();
  std::vector<Event> forwardDone(count), backwardDone(count);
  std::mutex failureMutex;
  std::exception_ptr failure;
  const auto fail = [&](std::vector<Event> &mine, size_t from) {
    std::exception_ptr error = std::current_exception();
    {
      std::lock_guard<std::mutex> lock(failureMutex);
      if (!failure)
        failure = error;
      error = failure;
    }
    for (size_t j = from; j < count; ++j)
      mine[j].fail(error);
    stream.abort(error);
  };
  RankRecorder *recorder = RankRecorder::current();
  std::thread backward([&] {
    const ScopedRecorder scope(recorder);
    for (size_t i = 0; i < count; ++i) {
      try {
        forwardDone[i].wait();
        workers[i]->runBackward();
        backwardDone[i].record();
      } catch (...) {
        fail(backwardDone, i);
        return;
      }
    }
  });
  for (size_t i = 0; i < count; ++i) {
    try {
      if (i >= ahead)
        backwardDone[i - ahead].wait();
      workers[i]->runForward();
      forwardDone[i].record();
    } catch (...) {
      fail(forwardDone, i);
      break;
    }
  }
  backward.join();
  if (failure)
    std::rethrow_exception(failure);
}
} // namespace

RankStepResult trainRank(const Plan &plan, RankState &state, Comm &comm,
                         const std::vector<int64_t> &ids, const std::vector<int64_t> &targets,
                         int64_t batch, int64_t seqLen, const std::vector<MicroBatch> &microBatches,
                         int64_t targetTokens, const StepConfig &config,
                         std::chrono::milliseconds recvTimeout) {
  if (static_cast<int64_t>(ids.size()) != batch * seqLen || ids.size() != targets.size())
    throw ExecError("rank " + std::to_string(state.rank) + ": ids/targets do not have " +
                    std::to_string(batch * seqLen) + " entries");
  for (Tensor &g : state.grads)
    std::fill(g.data.begin(), g.data.end(), 0.0f);
  // An empty batch of targets has no loss: scale 0 keeps every gradient zero.
  const float scale =
      targetTokens > 0 ? static_cast<float>(1.0 / static_cast<double>(targetTokens)) : 0.0f;
  RankStepResult result;
  // The comm stream: the only caller of `comm` from here on (CommStream.h).
  CommStream stream(comm);
  const size_t count = microBatches.size();
  std::vector<std::unique_ptr<TrainWorker>> workers;
  for (size_t i = 0; i < count; ++i) {
    const MicroBatch &mb = microBatches[i];
    workers.push_back(std::make_unique<TrainWorker>(
        plan, state, stream, ids.data() + mb.begin * seqLen, targets.data() + mb.begin * seqLen,
        mb.end - mb.begin, seqLen, scale, recvTimeout, config.auxLossCoef, batch * seqLen,
        config.capacityFactor, config.routerBiasUpdateRate > 0, static_cast<int64_t>(i)));
  }
  runComputeStreams(workers, stream, forwardsAhead(plan, state.rank, count));
  // Per-micro-batch results in micro-batch order, as the sequential step added them.
  for (const auto &worker : workers) {
    result.lossSum += worker->lossSum();
    result.targetTokens += worker->targetTokens();
    result.auxLossSum += worker->auxLossSum();
    const auto &drops = worker->dropped();
    if (result.dropped.empty())
      result.dropped = drops;
    else
      for (size_t l = 0; l < drops.size(); ++l)
        result.dropped[l] += drops[l];
    const auto &load = worker->expertLoad();
    if (result.expertLoad.empty())
      result.expertLoad = load;
    else
      for (size_t l = 0; l < load.size(); ++l)
        for (size_t e = 0; e < load[l].size(); ++e)
          result.expertLoad[l][e] += load[l][e];
    if (result.firstNonFinite.layer < 0)
      result.firstNonFinite = worker->firstNonFinite();
  }
  workers.clear(); // the activations
  allReduce(plan, state, stream, recvTimeout);
  result.gradNorm = globalGradNorm(plan, state, stream, recvTimeout);
  if (config.clipNorm > 0)
    result.clipCoef = clipGradients(state, result.gradNorm, config.clipNorm);
  optimizerStep(state, config.optimizer);
  if (config.routerBiasUpdateRate > 0)
    updateRouterBias(plan, state, stream, recvTimeout, result.expertLoad,
                     config.routerBiasUpdateRate);
  stream.flush(); // every send handed on before the rank reports done
  return result;
}

std::vector<std::string> weightKeys(const ModelSpec &model) {
  std::vector<std::string> keys(model.weights.size());
  const auto set = [&](int index, const std::string &key) {
    if (index >= 0 && keys[index].empty())
      keys[index] = key;
  };
  for (const Component &c : model.components) {
    const std::string L = "l" + std::to_string(c.layer) + "_";
    switch (c.kind) {
    case ComponentKind::Embedding:
      set(c.weight, "embed");
      break;
    case ComponentKind::Head:
      set(c.weight, "head");
      break;
    case ComponentKind::RmsNorm:
      set(c.weight, c.role == NormRole::FinalNorm  ? "final_norm"
                    : c.role == NormRole::AttnNorm ? L + "attn_norm"
                                                   : L + "ffn_norm");
      break;
    case ComponentKind::Attention:
      set(c.wq, L + "q");
      set(c.wk, L + "k");
      set(c.wv, L + "v");
      set(c.wo, L + "o");
      set(c.bq, L + "q_bias");
      set(c.bk, L + "k_bias");
      set(c.bv, L + "v_bias");
      set(c.bo, L + "o_bias");
      set(c.sinks, L + "sinks");
      set(c.qNorm, L + "q_norm");
      set(c.kNorm, L + "k_norm");
      break;
    case ComponentKind::Router:
      set(c.weight, L + "router");
      set(c.bias, L + "router_bias");
      break;
    case ComponentKind::DenseFfn: {
      const std::string D = L + (c.denseRole == DenseFfnRole::Shared ? "shared_" : "dense_");
      set(c.w1, D + "w1");
      set(c.w3, D + "w3");
      set(c.w2, D + "w2");
      break;
    }
    case ComponentKind::MlaAttention:
      set(c.wq, L + "q");
      set(c.wkvA, L + "kv_a");
      set(c.kvNorm, L + "kv_norm");
      set(c.wkvB, L + "kv_b");
      set(c.wo, L + "o");
      break;
    case ComponentKind::Experts:
      for (const ExpertWeights &e : c.experts) {
        const std::string E = L + "expert" + std::to_string(e.expert) + "_";
        set(e.w1, E + "w1");
        set(e.w3, E + "w3");
        set(e.w2, E + "w2");
        set(e.b1, E + "b1");
        set(e.b3, E + "b3");
        set(e.b2, E + "b2");
      }
      break;
    }
  }
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i].empty())
      keys[i] = "weight" + std::to_string(i);
  return keys;
}

} // namespace disagmoe::train
