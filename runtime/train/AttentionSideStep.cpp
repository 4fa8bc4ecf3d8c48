// The attention program's instructions in training, forward (keeping what the backward reads)
// and backward: embedding, norms, residuals, router, dense FFN, head and loss, and the
// attention side of the M2N / N2M / residual exchanges (TrainWorker.h).
#include "runtime/train/TrainWorker.h"

#include "runtime/executor/LocalExperts.h"

#include "runtime/tensor/FreshBuffers.h"

#include <algorithm>
#include <string>

namespace disagmoe::train::detail {

void TrainWorker::attentionForward(const Instruction &ins) {
  const int64_t H = model_.hiddenSize, l = ins.layer;
  switch (ins.op) {
  case OpCode::Embed: {
    AttentionLayer &a = attn_[0];
    std::vector<int64_t> vocabIds = localIds();
    freshAssign(a.x, n() * H);
    kernels_.embedding(w(component(model_.embedding).weight), model_.vocabSize, H, vocabIds.data(),
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
      kernels_.rmsNorm(a.x.data(), n(), H, w(c.weight), c.eps, a.attnNorm.data());
      a.hasAttnNorm = true;
    } else if (ins.role == NormRole::FfnNorm) {
      AttentionLayer &a = attn_[l];
      need(a.hasH, "h of layer " + std::to_string(l));
      freshAssign(a.ffnNorm, a.h.size());
      const Component &c = component(model_.layers[l].ffnNorm);
      kernels_.rmsNorm(a.h.data(), n(), H, w(c.weight), c.eps, a.ffnNorm.data());
      a.hasFfnNorm = true;
    } else {
      AttentionLayer &a = attn_[L_];
      need(a.hasX, "the output of the last layer");
      freshAssign(finalNorm_, a.x.size());
      const Component &c = component(model_.finalNorm);
      kernels_.rmsNorm(a.x.data(), n(), H, w(c.weight), c.eps, finalNorm_.data());
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
    kernels_.add(a.x.data(), attnOut_.data(), static_cast<int64_t>(a.h.size()), a.h.data());
    a.hasH = true;
    break;
  }
  case OpCode::Router: {
    AttentionLayer &a = attn_[l];
    need(a.hasFfnNorm, "ffn_norm output of layer " + std::to_string(l));
    const int64_t E = model_.numExperts, k = model_.topK;
    freshAssign(a.logits, n() * E);
    const Component &rc = component(model_.layers[l].router);
    kernels_.linear(a.ffnNorm.data(), n(), H, w(rc.weight), E, a.logits.data());
    if (rc.bias >= 0)
      kernels_.addBias(a.logits.data(), n(), E, w(rc.bias)); // GPT-OSS
    a.topIds.assign(n() * k, 0);
    freshAssign(a.gates, n() * k);
    // The choice's bias: the export's e_score_correction_bias (a buffer) plus, with
    // --router-bias-update-rate, this run's balancing offset to it.
    const float *correction = rc.correctionBias >= 0 ? w(rc.correctionBias) : nullptr;
    const float *update = biasSelection_ ? state_.routerBias[l].data() : nullptr;
    std::vector<float> both;
    if (correction && update) {
      both.resize(static_cast<size_t>(E));
      for (int64_t e = 0; e < E; ++e)
        both[e] = correction[e] + update[e];
    }
    kernels_.routerGates(a.logits.data(), n(), E, k, model_.routerScoring, a.topIds.data(),
                         a.gates.data(),
                         !both.empty() ? both.data()
                         : correction  ? correction
                                       : update,
                         model_.routerGroups);
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
    need(a.hasFfnNorm && a.hasRouter, "ffn_norm and router outputs of layer " + std::to_string(l));
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
    kernels_.expertForward(denseFfnForm(), denseFfnWeights(c, weightOf_), a.ffnNorm.data(), n(), H,
                           c.ffnHidden, y.data());
    freshAssign(a.r, a.h.size());
    kernels_.add(a.h.data(), y.data(), static_cast<int64_t>(a.r.size()), a.r.data());
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
    kernels_.linear(finalNorm_.data(), n(), H, w(component(model_.head).weight), V, logits.data());
    std::vector<int64_t> targets(n());
    for (int64_t t = 0; t < n(); ++t) {
      targets[t] = targets_[tokens_[t]];
      if (targets[t] >= V)
        throw ExecError("target id " + std::to_string(targets[t]) +
                        " is outside the vocabulary [0, " + std::to_string(V) + ")");
      targetTokens_ += targets[t] >= 0;
    }
    freshAssign(dLogits_, n() * V);
    lossSum_ += kernels_.crossEntropyBackward(logits.data(), targets.data(), n(), V, gradScale_,
                                              dLogits_.data());
    hasLoss_ = true;
    break;
  }
  default:
    throw ExecError("not an attention instruction");
  }
}

void TrainWorker::attentionBackward(const Instruction &ins) {
  const int64_t H = model_.hiddenSize, l = ins.layer;
  switch (ins.op) {
  case OpCode::Head: {
    need(hasLoss_, "the loss (head forward)");
    freshAssign(dFinalNorm_, n() * H);
    const int weight = component(model_.head).weight;
    kernels_.linearBackward(finalNorm_.data(), dLogits_.data(), n(), H, w(weight), model_.vocabSize,
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
      kernels_.rmsNormBackward(a.x.data(), dFinalNorm_.data(), n(), H, w(c.weight), c.eps,
                               a.dx.data(), grad(c.weight));
      a.hasDx = true;
    } else if (ins.role == NormRole::FfnNorm) {
      AttentionLayer &a = attn_[l];
      need(a.hasDFfn && a.hasDh, "dL/d(ffn_norm output) and dL/dh of layer " + std::to_string(l));
      const Component &c = component(model_.layers[l].ffnNorm);
      std::vector<float> part = freshFloats(a.h.size());
      kernels_.rmsNormBackward(a.h.data(), a.dFfn.data(), n(), H, w(c.weight), c.eps, part.data(),
                               grad(c.weight));
      addInto(a.dh, part);
    } else {
      AttentionLayer &a = attn_[l];
      need(a.hasDAttnNorm && a.hasDx, "dL/d(attn_norm output) of layer " + std::to_string(l));
      const Component &c = component(model_.layers[l].attnNorm);
      std::vector<float> part = freshFloats(a.x.size());
      kernels_.rmsNormBackward(a.x.data(), a.dAttnNorm.data(), n(), H, w(c.weight), c.eps,
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
    kernels::FfnGrads g;
    g.w1 = grad(c.w1), g.w3 = grad(c.w3), g.w2 = grad(c.w2);
    kernels_.expertBackward(denseFfnForm(), denseFfnWeights(c, weightOf_), a.ffnNorm.data(),
                            a.dh.data(), n(), H, c.ffnHidden, dx.data(), g, nullptr);
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
    kernels_.routerGatesBackward(a.logits.data(), n(), E, model_.topK, model_.routerScoring,
                                 a.topIds.data(), a.dGates.data(), dLogits.data());
    if (a.hasAux)
      auxBackward(l, dLogits);
    const Component &rc = component(model_.layers[l].router);
    const int weight = rc.weight;
    kernels_.linearBackward(a.ffnNorm.data(), dLogits.data(), n(), H, w(weight), E, part.data(),
                            grad(weight));
    if (rc.bias >= 0)
      kernels_.biasBackward(dLogits.data(), n(), E, grad(rc.bias));
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
    kernels_.embeddingBackward(a.dx.data(), vocabIds.data(), n(), H,
                               grad(component(model_.embedding).weight));
    break;
  }
  default:
    throw ExecError("not an attention instruction");
  }
}

std::vector<int64_t> TrainWorker::localIds() const {
  std::vector<int64_t> v(tokens_.size());
  for (size_t t = 0; t < tokens_.size(); ++t)
    v[t] = ids_[tokens_[t]];
  return v;
}

} // namespace disagmoe::train::detail
