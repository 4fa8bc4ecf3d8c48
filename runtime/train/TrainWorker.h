// Private to runtime/train (not for other includers): one micro-batch's worker of a rank's training
// step (TrainStep.h says what the step computes), its kept activations, and the tags of the step's
// exchanges. Its member functions are split by responsibility:
//   TrainWorker.cpp        the walk of the program, forward then reversed, and failure naming
//   AttentionSideStep.cpp  the attention program's instructions, forward and backward
//   SelfAttentionStep.cpp  the attention instruction itself (grouped-query attention and MLA)
//   RouterBalancing.cpp    the router's aux loss and capacity factor
//   FfnSideStep.cpp        the ffn program's instructions, forward and backward
// TrainStep.cpp runs the workers of a step on its streams, then all-reduces and steps the
// optimizer.
#pragma once

#include "runtime/backends/KernelBackend.h"
#include "runtime/comm/Comm.h"
#include "runtime/exchange/CountedExchange.h"
#include "runtime/executor/LocalExperts.h"
#include "runtime/executor/RankContext.h"
#include "runtime/executor/RankWorker.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/TrainStep.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace disagmoe::train::detail {

// The tags of the step's other exchanges, together so that they stay disjoint.
// Tags after the forward (3L) and backward (3L) exchanges: one per all-reduce set.
inline int allReduceTag(int64_t numLayers, int firstWeight) {
  return static_cast<int>(6 * numLayers + firstWeight);
}

// Tag of layer l's aux-loss count exchange: after the loss gather (6 L + W, Trainer.cpp) and the
// gradient norm (+1, GradientClipping.cpp).
inline int auxCountTag(const ModelSpec &model, int64_t layer) {
  return static_cast<int>(6 * model.numLayers + static_cast<int64_t>(model.weights.size()) + 2 +
                          layer);
}

// Tag of layer l's capacity exchange (every A-rank's token ids and top-k choices): after the aux
// ones.
inline int capacityTag(const ModelSpec &model, int64_t layer) {
  return static_cast<int>(7 * model.numLayers + static_cast<int64_t>(model.weights.size()) + 2 +
                          layer);
}

// Tag of layer l's load exchange for the router bias update: after the capacity ones.
inline int biasLoadTag(const ModelSpec &model, int64_t layer) {
  return static_cast<int>(8 * model.numLayers + static_cast<int64_t>(model.weights.size()) + 2 +
                          layer);
}

// What the attention program keeps of layer l (x of layer L: the final norm's input) for the
// backward, and the gradients it accumulates.
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

// What the ffn program keeps of layer l between its forward and backward.
struct FfnLayer {
  bool received = false, computed = false, hasDy = false, hasDx = false;
  std::vector<M2nMessage> messages;           // per A-rank of the layer's attention group
  std::vector<std::vector<ExpertUse>> uses;   // per local expert (ascending id)
  std::vector<const ExpertWeights *> experts; // the local experts
  std::vector<std::vector<float>> dy;         // per source: [count, hidden]
  std::vector<std::vector<float>> dx;         // per source
  std::vector<std::vector<std::vector<ExpertGate>>> dGates; // per source, per token
};

// One micro-batch of one rank: runs its role's program forward, keeping every activation, then
// backward, accumulating into the rank's weight gradients (RankState::grads).
class TrainWorker {
public:
  TrainWorker(const Plan &plan, RankState &state, Comm &comm, const int64_t *ids,
              const int64_t *targets, int64_t batch, int64_t seqLen, float gradScale,
              std::chrono::milliseconds timeout, double auxCoef, int64_t globalTokens,
              double capacityFactor, bool biasSelection, int64_t microBatch,
              const kernels::KernelBackend &kernels);

  // The micro-batch's forward (the forward stream); keeps every activation for runBackward.
  void runForward();
  // Its backward over the reversed program (the backward stream), after runForward; accumulates
  // into the rank's weight gradients.
  void runBackward();

  double lossSum() const { return lossSum_; }
  int64_t targetTokens() const { return targetTokens_; }
  double auxLossSum() const { return auxSum_; }
  const std::vector<std::vector<int64_t>> &expertLoad() const { return expertLoad_; }
  const std::vector<int64_t> &dropped() const { return dropped_; }
  const NonFinite &firstNonFinite() const { return firstNonFinite_; }

private:
  // TrainWorker.cpp
  void checkFinite(const Instruction &ins);
  void step(const std::vector<Instruction> &program, size_t i, bool backward);

  // AttentionSideStep.cpp
  void attentionForward(const Instruction &ins);
  void attentionBackward(const Instruction &ins);
  std::vector<int64_t> localIds() const;

  // SelfAttentionStep.cpp
  std::vector<int64_t> positions() const;
  kernels::AttentionSpec attentionSpec(const Component &c) const;
  void attentionFwd(int64_t l);
  void attentionBwd(int64_t l);
  void mlaFwd(AttentionLayer &a, const Component &c);
  void mlaBwd(AttentionLayer &a, const Component &c);

  // RouterBalancing.cpp
  void routerProbs(const float *z, std::vector<double> &p) const;
  void auxForward(int64_t l);
  void capacityForward(int64_t l);
  void auxBackward(int64_t l, std::vector<float> &dLogits);

  // FfnSideStep.cpp
  void ffnForward(const Instruction &ins);
  void ffnBackward(const Instruction &ins);

  // Shared by both sides.
  static void need(bool have, const std::string &what) {
    if (!have)
      throw ExecError("needs " + what +
                      ", which has not been computed on this rank (instructions out of order)");
  }

  // Token placement (RankContext.h, shared with the forward worker).
  int64_t n() const { return ctx_.tokenCount(); }
  int64_t localRow(int64_t id) const { return ctx_.localRow(id); }
  const float *w(int index) const { return state_.weights[index].data.data(); }
  float *grad(int index) { return state_.grads[index].data.data(); }
  const Component &component(int index) const { return model_.components[index]; }
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

  void addInto(std::vector<float> &dst, const std::vector<float> &src) const {
    kernels_.accumulate(src.data(), 1.0f, static_cast<int64_t>(dst.size()), dst.data());
  }

  const int64_t microBatch_;              // index in the step (trace)
  const kernels::KernelBackend &kernels_; // every kernel call (KernelBackend.h)
  const WeightOf weightOf_;               // state_.weights by index, for LocalExperts.h

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
  const RankContext ctx_;    // this rank's group, position and tokens of the micro-batch
  const int rank_;
  const Group &group_;
  const int64_t index_;
  const int64_t L_;

  // The attention side (A-ranks): this rank's tokens of the micro-batch, ascending, and what the
  // program keeps of them.
  const std::vector<int64_t> &tokens_; // ctx_.tokens()
  std::vector<AttentionLayer> attn_;   // [L + 1]: x of layer L is the final norm's input
  std::vector<float> attnOut_, pending_, finalNorm_, dFinalNorm_, dLogits_;
  bool hasPending_ = false, hasFinalNorm_ = false, hasLoss_ = false, hasDFinalNorm_ = false;
  double lossSum_ = 0, auxSum_ = 0;
  int64_t targetTokens_ = 0;
  std::vector<std::vector<int64_t>> expertLoad_; // [L][E], this rank's tokens (attention ranks)
  std::vector<int64_t> dropped_;                 // [L], this rank's assignments over capacity
  NonFinite firstNonFinite_;
  std::vector<FfnLayer> ffn_; // [L]: the ffn side (F-ranks)
};

} // namespace disagmoe::train::detail
