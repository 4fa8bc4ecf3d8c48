// One rank's interpreter of its role's program, running its group's instructions (RankWorker.h).
#include "runtime/executor/RankWorker.h"
#include "runtime/backends/RopeOfModel.h"
#include "runtime/executor/CommStream.h"
#include "runtime/executor/LocalExperts.h"
#include "runtime/executor/OpProfile.h"
#include "runtime/executor/RankContext.h"
#include "runtime/plan/InstructionRunner.h"
#include "runtime/tensor/FreshBuffers.h"
#include "runtime/tensor/RopePairs.h"

#include "runtime/exchange/CountedExchange.h"

#include <algorithm>
#include <string>

namespace disagmoe {
namespace {

constexpr int64_t kUnset = INT64_MIN;

// An activation buffer tagged with the layer it belongs to, so an instruction that runs before its
// inputs exist fails with a clear message instead of reading stale data.
struct Buffer {
  int64_t layer = kUnset;
  std::vector<float> data;
};

class Worker {
public:
  Worker(const Plan &plan, const RankWeights &weights, CommStream &comm,
         const std::vector<int64_t> &ids, int64_t batch, int64_t seqLen,
         std::chrono::milliseconds recvTimeout, bool recordRouting,
         const kernels::KernelBackend &kernels)
      : kernels_(kernels),
        weightOf_([&weights](int index) { return weights.get(index).data.data(); }), plan_(plan),
        model_(plan.model), placement_(plan.placement), weights_(weights), comm_(comm), ids_(ids),
        batch_(batch), seqLen_(seqLen), timeout_(recvTimeout), recordRouting_(recordRouting),
        ctx_(plan, comm.rank(), batch, seqLen), rank_(ctx_.rank), group_(ctx_.group),
        index_(ctx_.index), tokens_(ctx_.tokens()) {}

  RankResult run() {
    const bool attention = group_.role == GroupRole::Attention;
    const auto &program = attention ? plan_.programs.attention : plan_.programs.ffn;
    for (size_t i = 0; i < program.size(); ++i) {
      const Instruction &ins = program[i];
      if (&runnerOf(plan_, ins) != &group_) // InstructionRunner.h
        continue;
      RankRecorder *recorder = RankRecorder::current(); // --op-times-out / --trace (OpProfile.h)
      const double started = recorder ? recorder->now() : 0;
      try {
        attention ? runAttention(ins) : runFfn(ins);
        if (recorder)
          recorder->record(ins, i, false, started);
      } catch (const CommAborted &) {
        throw;
      } catch (const std::exception &e) {
        throw ExecError("rank " + std::to_string(rank_) + " (" + toString(group_.role) + " group " +
                        std::to_string(group_.index) + "): programs." + toString(group_.role) +
                        "[" + std::to_string(i) + "] " + describe(ins) + ": " + e.what());
      }
    }
    return std::move(result_);
  }

private:
  static std::string describe(const Instruction &ins) {
    std::string s = toString(ins.op);
    if (ins.op == OpCode::RmsNorm)
      s += std::string(" ") + toString(ins.role);
    if (ins.layer >= 0)
      s += " of layer " + std::to_string(ins.layer);
    return s;
  }

  // Token placement (RankContext.h).
  int64_t homeFfnIndex(int64_t l, int64_t id) const { return ctx_.homeFfnIndex(l, id); }
  bool homeOfSequence(int64_t s) const { return ctx_.homeOfSequence(s); }
  int64_t tokenCount() const { return ctx_.tokenCount(); }
  int64_t localRow(int64_t id) const { return ctx_.localRow(id); }

  const float *weight(int index) const { return weights_.get(index).data.data(); }
  const Component &component(int index) const { return model_.components[index]; }

  static void need(const Buffer &buffer, int64_t layer, const char *what) {
    need(buffer.layer, layer, what);
  }

  static void need(int64_t haveLayer, int64_t layer, const char *what) {
    if (haveLayer != layer)
      throw ExecError(std::string("needs ") + what +
                      (layer >= 0 ? " of layer " + std::to_string(layer) : std::string()) +
                      ", which has not been computed on this rank (instructions out of order)");
  }

  // Every token exchange sends its count, then its payload, within the plan's capacity bound of the
  // exchange (CountedExchange.h); the record counts both (8 bytes of count + the payload).
  void send(ExchangeKind kind, int64_t layer, int dst, const M2nMessage &m) {
    const uint64_t bytes = sendM2n(comm_, exchangeBound(plan_, kind, layer), dst,
                                   exchangeTag(kind, layer), m, model_.hiddenSize);
    result_.sent.push_back(
        {kind, layer, rank_, dst, static_cast<int64_t>(m.tokenIds.size()), bytes});
  }
  void send(ExchangeKind kind, int64_t layer, int dst, const RowsMessage &m) {
    const uint64_t bytes = sendRows(comm_, exchangeBound(plan_, kind, layer), dst,
                                    exchangeTag(kind, layer), m, model_.hiddenSize);
    result_.sent.push_back(
        {kind, layer, rank_, dst, static_cast<int64_t>(m.tokenIds.size()), bytes});
  }

  RowsMessage recvRows(ExchangeKind kind, int64_t layer, int src) {
    return disagmoe::recvRows(comm_, exchangeBound(plan_, kind, layer), src,
                              exchangeTag(kind, layer), timeout_, model_.hiddenSize);
  }

  // One exchange message posted ahead: its count and its payload, two receives of the same
  // (src, tag) that the comm stream completes in that order (CountedExchange.h).
  struct Posted {
    std::shared_ptr<CommStream::Receive> count, payload;
  };

  // Posts the receives of one instruction from every rank of `srcs` at once (the comm stream takes
  // them in whatever order they arrive); the caller takes them in ascending rank order.
  std::vector<Posted> postAll(ExchangeKind kind, int64_t layer, const std::vector<int> &srcs) {
    std::vector<Posted> posted;
    for (int src : srcs) {
      auto count = comm_.postRecv(src, exchangeTag(kind, layer), timeout_);
      posted.push_back({count, comm_.postRecv(src, exchangeTag(kind, layer), timeout_)});
    }
    return posted;
  }

  // The count checked against the exchange's bound first, then exactly that many tokens read.
  RowsMessage takeRows(ExchangeKind kind, int64_t layer, int src, const Posted &p) {
    const int64_t count = takeCount(exchangeBound(plan_, kind, layer), src, rank_, p.count->take());
    return unpackRowsPayload(p.payload->take(), count, model_.hiddenSize);
  }
  M2nMessage takeM2n(int64_t layer, int src, const Posted &p) {
    const int64_t count =
        takeCount(exchangeBound(plan_, ExchangeKind::M2n, layer), src, rank_, p.count->take());
    return unpackM2nPayload(p.payload->take(), count, model_.hiddenSize);
  }

  // ---- attention role ------------------------------------------------------------------------

  void runAttention(const Instruction &ins) {
    const int64_t H = model_.hiddenSize, n = tokenCount(), l = ins.layer;
    switch (ins.op) {
    case OpCode::Embed: {
      const Component &c = component(model_.embedding);
      std::vector<int64_t> tokenIds(n);
      for (int64_t t = 0; t < n; ++t)
        tokenIds[t] = ids_[tokens_[t]];
      freshAssign(x_.data, n * H);
      kernels_.embedding(weight(c.weight), model_.vocabSize, H, tokenIds.data(), n, x_.data.data());
      x_.layer = 0;
      break;
    }
    case OpCode::RmsNorm: {
      if (ins.role == NormRole::AttnNorm) {
        need(x_, l, "the residual stream x");
        norm(model_.layers[l].attnNorm, x_, attnNorm_, l);
      } else if (ins.role == NormRole::FfnNorm) {
        need(h_, l, "h (after residual_add)");
        norm(model_.layers[l].ffnNorm, h_, ffnNorm_, l);
      } else {
        if (x_.layer != model_.numLayers)
          throw ExecError("needs the output of the last layer (n2m_recv of layer " +
                          std::to_string(model_.numLayers - 1) +
                          "), which has not been computed on this rank");
        result_.tokenIds = tokens_;
        result_.hidden = x_.data;
        norm(model_.finalNorm, x_, finalNorm_, -1);
      }
      break;
    }
    case OpCode::Attention:
      need(attnNorm_, l, "attn_norm output");
      attention(l);
      break;
    case OpCode::ResidualAdd: {
      need(x_, l, "the residual stream x");
      need(attnOut_, l, "attention output");
      freshAssign(h_.data, n * H);
      kernels_.add(x_.data.data(), attnOut_.data.data(), n * H, h_.data.data());
      h_.layer = l;
      break;
    }
    case OpCode::Router: {
      need(ffnNorm_, l, "ffn_norm output");
      const Component &c = component(model_.layers[l].router);
      std::vector<float> logits = freshFloats(n * model_.numExperts);
      kernels_.linear(ffnNorm_.data.data(), n, H, weight(c.weight), model_.numExperts,
                      logits.data());
      if (c.bias >= 0)
        kernels_.addBias(logits.data(), n, model_.numExperts, weight(c.bias)); // GPT-OSS
      topIds_.assign(n * model_.topK, 0);
      freshAssign(topGates_.data, n * model_.topK);
      kernels_.routerGates(logits.data(), n, model_.numExperts, model_.topK, model_.routerScoring,
                           topIds_.data(), topGates_.data.data(),
                           c.correctionBias >= 0 ? weight(c.correctionBias) : nullptr,
                           model_.routerGroups);
      const float scale = c.routedScalingFactor.value_or(1.0f);
      if (scale != 1.0f) // DeepSeek's routed_scaling_factor
        for (float &g : topGates_.data)
          g *= scale;
      topGates_.layer = l;
      if (recordRouting_)
        result_.routing.push_back({l, tokens_, topIds_});
      break;
    }
    case OpCode::DenseFfn:
      denseFfn(l);
      break;
    case OpCode::M2nSend:
      m2nSend(l);
      break;
    case OpCode::ResidualSend: {
      need(h_, l, "h (after residual_add)");
      const int dst = placement_.nextAttentionGroup(l).ranks[index_];
      send(ExchangeKind::Residual, l, dst, RowsMessage{tokens_, h_.data});
      break;
    }
    case OpCode::ResidualRecv: {
      const int src = placement_.attentionGroupOfLayer(l).ranks[index_];
      RowsMessage m = recvRows(ExchangeKind::Residual, l, src);
      if (m.tokenIds != tokens_)
        throw ExecError("residual from rank " + std::to_string(src) + " carries " +
                        std::to_string(m.tokenIds.size()) + " tokens that are not this rank's " +
                        std::to_string(n));
      pending_.data = std::move(m.rows);
      pending_.layer = l;
      // No N2M: x_{l+1} = r_l (docs/architecture.md, "Exchanges").
      if (!model_.layers[l].hasFfnStage()) {
        x_.data = std::move(pending_.data);
        x_.layer = l + 1;
        pending_ = Buffer{};
      }
      break;
    }
    case OpCode::N2mRecv:
      n2mRecv(l);
      break;
    case OpCode::EmbedRecv:
      embedRecv();
      break;
    case OpCode::HeadSend:
      headSend();
      break;
    case OpCode::Head: {
      need(finalNorm_, -1, "the final norm output");
      const Component &c = component(model_.head);
      freshAssign(result_.logits, n * model_.vocabSize);
      kernels_.linear(finalNorm_.data.data(), n, H, weight(c.weight), model_.vocabSize,
                      result_.logits.data());
      break;
    }
    default:
      throw ExecError("not an attention instruction");
    }
  }

  void norm(int componentIndex, const Buffer &in, Buffer &out, int64_t layer) {
    const Component &c = component(componentIndex);
    freshAssign(out.data, in.data.size());
    kernels_.rmsNorm(in.data.data(), tokenCount(), model_.hiddenSize, weight(c.weight), c.eps,
                     out.data.data());
    out.layer = layer;
  }

  void attention(int64_t l) {
    const Component &c = component(model_.layers[l].attention);
    if (c.kind == ComponentKind::MlaAttention)
      return mlaAttention(l, c);
    const int64_t n = tokenCount(), H = model_.hiddenSize, hd = model_.headDim;
    const int64_t qWidth = model_.numHeads * hd, kvWidth = model_.numKvHeads * hd;
    std::vector<float> q = freshFloats(n * qWidth), k = freshFloats(n * kvWidth),
                       v = freshFloats(n * kvWidth), heads = freshFloats(n * qWidth);
    const float *in = attnNorm_.data.data();
    kernels_.linear(in, n, H, weight(c.wq), qWidth, q.data());
    kernels_.linear(in, n, H, weight(c.wk), kvWidth, k.data());
    kernels_.linear(in, n, H, weight(c.wv), kvWidth, v.data());
    // Model families: projection biases (GPT-OSS), per-head q/k RMSNorm before RoPE (Qwen3).
    if (c.bq >= 0)
      kernels_.addBias(q.data(), n, qWidth, weight(c.bq));
    if (c.bk >= 0)
      kernels_.addBias(k.data(), n, kvWidth, weight(c.bk));
    if (c.bv >= 0)
      kernels_.addBias(v.data(), n, kvWidth, weight(c.bv));
    if (c.qNorm >= 0) {
      kernels_.rmsNorm(q.data(), n * model_.numHeads, hd, weight(c.qNorm), c.qkNormEps, q.data());
      kernels_.rmsNorm(k.data(), n * model_.numKvHeads, hd, weight(c.kNorm), c.qkNormEps, k.data());
    }
    if (c.ropeInterleaved) { // GPT-J's pairs, gathered into the halves' layout (RopePairs.h)
      ropeGatherRows(q.data(), n * model_.numHeads, hd);
      ropeGatherRows(k.data(), n * model_.numKvHeads, hd);
    }
    std::vector<int64_t> positions(n);
    for (int64_t t = 0; t < n; ++t)
      positions[t] = tokens_[t] % seqLen_;
    const kernels::RopeSpec ropeSpec = kernels::ropeSpecOf(model_); // plain or scaled (YaRN)
    kernels_.rope(q.data(), n, model_.numHeads, hd, positions.data(), ropeSpec);
    kernels_.rope(k.data(), n, model_.numKvHeads, hd, positions.data(), ropeSpec);
    // This rank's sequences are whole and contiguous: seqLen rows each.
    kernels::AttentionSpec spec;
    spec.sequences = n / seqLen_, spec.seqLen = seqLen_, spec.heads = model_.numHeads;
    spec.kvHeads = model_.numKvHeads, spec.qkDim = hd, spec.vDim = hd;
    spec.scale = kernels::standardAttentionScale(hd);
    spec.sinks = c.sinks >= 0 ? weight(c.sinks) : nullptr, spec.window = c.slidingWindow;
    kernels_.attention(q.data(), k.data(), v.data(), spec, heads.data());
    freshAssign(attnOut_.data, n * H);
    kernels_.linear(heads.data(), n, qWidth, weight(c.wo), H, attnOut_.data.data());
    if (c.bo >= 0)
      kernels_.addBias(attnOut_.data.data(), n, H, weight(c.bo));
    attnOut_.layer = l;
  }

  // DeepSeek-V2's multi-head latent attention (MoeOps.td, moe.mla_attention).
  void mlaAttention(int64_t l, const Component &c) {
    const int64_t n = tokenCount(), H = model_.hiddenSize, heads = model_.numHeads;
    const int64_t nope = model_.qkNopeHeadDim, rope = model_.qkRopeHeadDim, vd = model_.vHeadDim;
    const int64_t rank = model_.kvLoraRank, qd = nope + rope;
    const float *in = attnNorm_.data.data();
    std::vector<float> q = freshFloats(n * heads * qd), ckv = freshFloats(n * (rank + rope)),
                       latent = freshFloats(n * rank), kv = freshFloats(n * heads * (nope + vd));
    kernels_.linear(in, n, H, weight(c.wq), heads * qd, q.data());
    kernels_.linear(in, n, H, weight(c.wkvA), rank + rope, ckv.data());
    for (int64_t t = 0; t < n; ++t)
      std::copy_n(ckv.data() + t * (rank + rope), rank, latent.data() + t * rank);
    kernels_.rmsNorm(latent.data(), n, rank, weight(c.kvNorm), c.kvNormEps, latent.data());
    kernels_.linear(latent.data(), n, rank, weight(c.wkvB), heads * (nope + vd), kv.data());
    // The decoupled RoPE part: q_pe per head, k_pe shared by all heads.
    std::vector<float> qPe = freshFloats(n * heads * rope), kPe = freshFloats(n * rope);
    for (int64_t t = 0; t < n; ++t) { // DeepSeek-V2's rope dims are GPT-J pairs (RopePairs.h)
      for (int64_t h = 0; h < heads; ++h)
        ropeGather(q.data() + (t * heads + h) * qd + nope, qPe.data() + (t * heads + h) * rope,
                   rope, c.ropeInterleaved);
      ropeGather(ckv.data() + t * (rank + rope) + rank, kPe.data() + t * rope, rope,
                 c.ropeInterleaved);
    }
    std::vector<int64_t> positions(n);
    for (int64_t t = 0; t < n; ++t)
      positions[t] = tokens_[t] % seqLen_;
    kernels_.rope(qPe.data(), n, heads, rope, positions.data(), model_.ropeTheta);
    kernels_.rope(kPe.data(), n, 1, rope, positions.data(), model_.ropeTheta);
    // Q = [q_nope | q_pe], K = [k_nope | k_pe], V per head.
    std::vector<float> Q = freshFloats(n * heads * qd), K = freshFloats(n * heads * qd),
                       V = freshFloats(n * heads * vd), o = freshFloats(n * heads * vd);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t th = t * heads + h;
        std::copy_n(q.data() + th * qd, nope, Q.data() + th * qd);
        std::copy_n(qPe.data() + th * rope, rope, Q.data() + th * qd + nope);
        std::copy_n(kv.data() + th * (nope + vd), nope, K.data() + th * qd);
        std::copy_n(kPe.data() + t * rope, rope, K.data() + th * qd + nope);
        std::copy_n(kv.data() + th * (nope + vd) + nope, vd, V.data() + th * vd);
      }
    kernels::AttentionSpec spec;
    spec.sequences = n / seqLen_, spec.seqLen = seqLen_, spec.heads = heads, spec.kvHeads = heads;
    spec.qkDim = qd, spec.vDim = vd, spec.scale = c.softmaxScale;
    kernels_.attention(Q.data(), K.data(), V.data(), spec, o.data());
    freshAssign(attnOut_.data, n * H);
    kernels_.linear(o.data(), n, heads * vd, weight(c.wo), H, attnOut_.data.data());
    attnOut_.layer = l;
  }

  // Dense layers and shared experts (DeepSeek): h <- h + FFN(ffn_norm output), on the attention
  // side, before the residual route (r_l = h_l + shared_l(norm(h_l)); docs/architecture.md,
  // "Exchanges").
  void denseFfn(int64_t l) {
    need(ffnNorm_, l, "ffn_norm output");
    need(h_, l, "h (after residual_add)");
    const LayerComponents &lc = model_.layers[l];
    const Component &c = component(lc.denseFfn >= 0 ? lc.denseFfn : lc.sharedFfn);
    const int64_t n = tokenCount(), H = model_.hiddenSize;
    std::vector<float> y = freshFloats(n * H);
    kernels_.expertForward(denseFfnForm(), denseFfnWeights(c, weightOf_), ffnNorm_.data.data(), n,
                           H, c.ffnHidden, y.data());
    kernels_.add(h_.data.data(), y.data(), n * H, h_.data.data());
  }

  // To every F-rank of layer l's ffn group (ascending), the tokens with at least one expert there,
  // and, when the layer's dense FFN or shared experts run on the FFN side, every token whose home
  // F-rank (homeFfnIndex) it is, even with no expert there (n_local = 0; a dense layer: all
  // tokens).
  void m2nSend(int64_t l) {
    need(ffnNorm_, l, "ffn_norm output");
    const bool routed = !model_.layers[l].dense, home = denseFfnOnFfnSide(model_, l);
    if (routed)
      need(topGates_, l, "router output");
    const int64_t n = tokenCount(), H = model_.hiddenSize, k = routed ? model_.topK : 0;
    const std::vector<int> &owner = placement_.expertToRank[l];
    const std::vector<int> &franks = placement_.ffnGroupOfLayer(l).ranks;
    for (size_t fi = 0; fi < franks.size(); ++fi) {
      const int f = franks[fi];
      M2nMessage m;
      for (int64_t t = 0; t < n; ++t) {
        std::vector<ExpertGate> route;
        for (int64_t j = 0; j < k; ++j)
          if (owner[topIds_[t * k + j]] == f)
            route.push_back({topIds_[t * k + j], topGates_.data[t * k + j]});
        if (route.empty() && !(home && homeFfnIndex(l, tokens_[t]) == static_cast<int64_t>(fi)))
          continue;
        std::sort(route.begin(), route.end(),
                  [](const ExpertGate &a, const ExpertGate &b) { return a.expert < b.expert; });
        m.tokenIds.push_back(tokens_[t]);
        m.x.insert(m.x.end(), ffnNorm_.data.begin() + t * H, ffnNorm_.data.begin() + (t + 1) * H);
        m.routes.push_back(std::move(route));
      }
      send(ExchangeKind::M2n, l, f, m);
    }
  }

  // A-rank side of the FFN-side embedding: x_0 of this rank's tokens from every F-rank of the
  // embedding's group (ascending); each token must arrive exactly once.
  void embedRecv() {
    const int64_t H = model_.hiddenSize, n = tokenCount();
    x_.data.assign(n * H, 0.0f);
    std::vector<char> seen(n, 0);
    const std::vector<int> &senders = placement_.embeddingRunner().ranks;
    auto posted = postAll(ExchangeKind::Embedding, model_.numLayers, senders);
    for (size_t fi = 0; fi < senders.size(); ++fi) {
      const int f = senders[fi];
      RowsMessage m = takeRows(ExchangeKind::Embedding, model_.numLayers, f, posted[fi]);
      for (size_t i = 0; i < m.tokenIds.size(); ++i) {
        const int64_t row = localRow(m.tokenIds[i]);
        if (row < 0 || seen[row])
          throw ExecError("embedding from rank " + std::to_string(f) + " carries token " +
                          std::to_string(m.tokenIds[i]) +
                          (row < 0 ? ", which does not live on this rank" : " twice"));
        seen[row] = 1;
        std::copy_n(m.rows.begin() + i * H, H, x_.data.begin() + row * H);
      }
    }
    for (int64_t t = 0; t < n; ++t)
      if (!seen[t])
        throw ExecError("no embedding row arrived for token " + std::to_string(tokens_[t]));
    x_.layer = 0;
  }

  // A-rank side of the FFN-side head: x_L of its tokens to their home F-rank (sequence mod D_F).
  void headSend() {
    need(x_, model_.numLayers, "the output of the last layer (x_L)");
    const int64_t H = model_.hiddenSize, n = tokenCount();
    const std::vector<int> &franks = placement_.headRunner().ranks;
    const int64_t df = static_cast<int64_t>(franks.size());
    for (int64_t j = 0; j < df; ++j) {
      RowsMessage m;
      for (int64_t t = 0; t < n; ++t)
        if ((tokens_[t] / seqLen_) % df == j) {
          m.tokenIds.push_back(tokens_[t]);
          m.rows.insert(m.rows.end(), x_.data.begin() + t * H, x_.data.begin() + (t + 1) * H);
        }
      send(ExchangeKind::Head, model_.numLayers, franks[j], m);
    }
  }

  // x_{l+1} = r_l + sum over F-ranks in ascending rank order of their N2M vectors.
  void n2mRecv(int64_t l) {
    need(pending_, l, "the residual (residual_recv)");
    const int64_t H = model_.hiddenSize;
    const std::vector<int> &senders = placement_.ffnGroupOfLayer(l).ranks;
    auto posted = postAll(ExchangeKind::N2m, l, senders);
    for (size_t fi = 0; fi < senders.size(); ++fi) {
      const int f = senders[fi];
      RowsMessage m = takeRows(ExchangeKind::N2m, l, f, posted[fi]);
      for (size_t i = 0; i < m.tokenIds.size(); ++i) {
        const int64_t row = localRow(m.tokenIds[i]);
        if (row < 0)
          throw ExecError("N2M from rank " + std::to_string(f) + " carries token " +
                          std::to_string(m.tokenIds[i]) + ", which does not live on this rank");
        kernels_.accumulate(m.rows.data() + i * H, 1.0f, H, pending_.data.data() + row * H);
      }
    }
    x_.data = std::move(pending_.data);
    x_.layer = l + 1;
    pending_ = Buffer{};
  }

  // ---- ffn role ------------------------------------------------------------------------------

  void runFfn(const Instruction &ins) {
    switch (ins.op) {
    case OpCode::M2nRecv:
      m2nRecv(ins.layer);
      break;
    case OpCode::Experts:
      experts(ins.layer);
      break;
    case OpCode::DenseFfn:
      ffnSideDenseFfn(ins.layer);
      break;
    case OpCode::N2mSend:
      n2mSend(ins.layer);
      break;
    case OpCode::Embed:
      ffnEmbed();
      break;
    case OpCode::EmbedSend:
      embedSend();
      break;
    case OpCode::HeadRecv:
      headRecv();
      break;
    case OpCode::RmsNorm: { // the final norm, on the head's FFN group
      need(edgeLayer_, model_.numLayers, "x_L (head_recv)");
      const Component &c = component(model_.finalNorm);
      edgeNorm_.resize(edgeX_.size());
      kernels_.rmsNorm(edgeX_.data(), static_cast<int64_t>(edgeTokens_.size()), model_.hiddenSize,
                       weight(c.weight), c.eps, edgeNorm_.data());
      result_.tokenIds = edgeTokens_;
      result_.hidden = edgeX_;
      normed_ = true;
      break;
    }
    case OpCode::Head: {
      if (!normed_)
        throw ExecError("needs the final norm output, which has not been computed on this rank");
      const Component &c = component(model_.head);
      result_.logits.assign(edgeTokens_.size() * model_.vocabSize, 0.0f);
      kernels_.linear(edgeNorm_.data(), static_cast<int64_t>(edgeTokens_.size()), model_.hiddenSize,
                      weight(c.weight), model_.vocabSize, result_.logits.data());
      break;
    }
    default:
      throw ExecError("not an ffn instruction");
    }
  }

  // ---- FFN-side embedding and head (placement.embedding_side / head_side "ffn") ----------------

  // The embedding rows x_0 of this F-rank's home sequences (s mod D_F), tokens ascending.
  void ffnEmbed() {
    const Component &c = component(model_.embedding);
    const int64_t H = model_.hiddenSize;
    edgeTokens_.clear();
    std::vector<int64_t> ids;
    for (int64_t s = 0; s < batch_; ++s)
      if (homeOfSequence(s))
        for (int64_t p = 0; p < seqLen_; ++p) {
          edgeTokens_.push_back(s * seqLen_ + p);
          ids.push_back(ids_[s * seqLen_ + p]);
        }
    edgeX_.assign(edgeTokens_.size() * H, 0.0f);
    kernels_.embedding(weight(c.weight), model_.vocabSize, H, ids.data(),
                       static_cast<int64_t>(ids.size()), edgeX_.data());
    edgeLayer_ = 0;
  }

  // To every A-rank i of layer 0's attention group (ascending): the rows of its sequences (s mod
  // D_A = i).
  void embedSend() {
    need(edgeLayer_, 0, "the embedding rows (embed)");
    const int64_t H = model_.hiddenSize, da = placement_.attentionSize();
    const std::vector<int> &aranks = placement_.attentionGroupOfLayer(0).ranks;
    for (size_t i = 0; i < aranks.size(); ++i) {
      RowsMessage m;
      for (size_t t = 0; t < edgeTokens_.size(); ++t)
        if ((edgeTokens_[t] / seqLen_) % da == static_cast<int64_t>(i)) {
          m.tokenIds.push_back(edgeTokens_[t]);
          m.rows.insert(m.rows.end(), edgeX_.begin() + t * H, edgeX_.begin() + (t + 1) * H);
        }
      send(ExchangeKind::Embedding, model_.numLayers, aranks[i], m);
    }
  }

  // F-rank side of the FFN-side head: x_L of its home tokens from every A-rank of the group that
  // formed it (ascending rank), kept in ascending token order.
  void headRecv() {
    const int64_t H = model_.hiddenSize;
    std::vector<std::pair<int64_t, std::vector<float>>> rows;
    const std::vector<int> &senders = placement_.nextAttentionGroup(model_.numLayers - 1).ranks;
    auto posted = postAll(ExchangeKind::Head, model_.numLayers, senders);
    for (size_t ai = 0; ai < senders.size(); ++ai) {
      const int a = senders[ai];
      RowsMessage m = takeRows(ExchangeKind::Head, model_.numLayers, a, posted[ai]);
      for (size_t t = 0; t < m.tokenIds.size(); ++t) {
        if (m.tokenIds[t] < 0 || m.tokenIds[t] >= batch_ * seqLen_ ||
            !homeOfSequence(m.tokenIds[t] / seqLen_))
          throw ExecError("head message from rank " + std::to_string(a) + " carries token " +
                          std::to_string(m.tokenIds[t]) + ", whose head does not run on this rank");
        rows.push_back({m.tokenIds[t],
                        std::vector<float>(m.rows.begin() + t * H, m.rows.begin() + (t + 1) * H)});
      }
    }
    std::sort(rows.begin(), rows.end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    edgeTokens_.clear();
    edgeX_.clear();
    for (auto &[id, row] : rows) {
      if (!edgeTokens_.empty() && edgeTokens_.back() == id)
        throw ExecError("token " + std::to_string(id) + " arrived twice for the head");
      edgeTokens_.push_back(id);
      edgeX_.insert(edgeX_.end(), row.begin(), row.end());
    }
    edgeLayer_ = model_.numLayers;
  }

  // From every A-rank of layer l's attention group, ascending rank order.
  void m2nRecv(int64_t l) {
    received_.clear();
    const std::vector<int> &senders = placement_.attentionGroupOfLayer(l).ranks;
    auto posted = postAll(ExchangeKind::M2n, l, senders);
    for (size_t ai = 0; ai < senders.size(); ++ai) {
      const int a = senders[ai];
      M2nMessage m = takeM2n(l, a, posted[ai]);
      ctx_.checkM2nRoutes(m, l, a);
      received_.push_back(std::move(m));
    }
    receivedLayer_ = l;
    // Each token's N2M vector accumulates from zero: the FFN-side dense FFN / shared experts
    // (dense_ffn), then g_e * E_e(x) in ascending expert id (experts), in program order.
    outputs_.assign(received_.size(), {});
    for (size_t s = 0; s < received_.size(); ++s)
      outputs_[s].assign(received_[s].tokenIds.size() * model_.hiddenSize, 0.0f);
  }

  // FFN side of a dense layer's FFN or a layer's shared experts: FFN(x) of every received token
  // whose home F-rank this is, added onto its N2M vector (tokens in message order, senders
  // ascending).
  void ffnSideDenseFfn(int64_t l) {
    need(receivedLayer_, l, "the M2N messages (m2n_recv)");
    const LayerComponents &lc = model_.layers[l];
    const Component &c = component(lc.denseFfn >= 0 ? lc.denseFfn : lc.sharedFfn);
    const int64_t H = model_.hiddenSize, myIndex = index_;
    std::vector<std::pair<size_t, size_t>> rows; // (sender, token) of this rank's home tokens
    std::vector<float> x;
    for (size_t s = 0; s < received_.size(); ++s)
      for (size_t t = 0; t < received_[s].tokenIds.size(); ++t)
        if (homeFfnIndex(l, received_[s].tokenIds[t]) == myIndex) {
          rows.push_back({s, t});
          x.insert(x.end(), received_[s].x.begin() + t * H, received_[s].x.begin() + (t + 1) * H);
        }
    const int64_t count = static_cast<int64_t>(rows.size());
    std::vector<float> y = freshFloats(count * H);
    kernels_.expertForward(denseFfnForm(), denseFfnWeights(c, weightOf_), x.data(), count, H,
                           c.ffnHidden, y.data());
    for (int64_t r = 0; r < count; ++r)
      kernels_.accumulate(y.data() + r * H, 1.0f, H,
                          outputs_[rows[r].first].data() + rows[r].second * H);
    denseLayer_ = l;
  }

  // Each local expert in ascending id over all its tokens (grouped across senders); every token's
  // output accumulates g_e * E_e(x) in ascending expert id onto its dense FFN part
  // (LocalExperts.h).
  void experts(int64_t l) {
    need(receivedLayer_, l, "the M2N messages (m2n_recv)");
    for (const LocalExpertRun &run :
         runLocalExperts(kernels_, plan_, l, rank_, received_, weightOf_, outputs_))
      result_.experts.push_back(
          {l, run.weights->expert, rank_, static_cast<int64_t>(run.uses.size())});
    expertsLayer_ = l;
  }

  // Back to the A-rank with the same index in the group that receives layer l's output.
  void n2mSend(int64_t l) {
    if (!model_.layers[l].dense)
      need(expertsLayer_, l, "the expert outputs (experts)");
    if (denseFfnOnFfnSide(model_, l))
      need(denseLayer_, l, "the FFN-side dense FFN / shared experts (dense_ffn)");
    const Group &next = placement_.nextAttentionGroup(l);
    for (size_t s = 0; s < received_.size(); ++s) {
      send(ExchangeKind::N2m, l, next.ranks[s], RowsMessage{received_[s].tokenIds, outputs_[s]});
    }
  }

  const kernels::KernelBackend &kernels_; // every kernel call (KernelBackend.h)
  const WeightOf weightOf_;               // weights_ by index, for LocalExperts.h
  const Plan &plan_;
  const ModelSpec &model_;
  const Placement &placement_;
  const RankWeights &weights_;
  CommStream &comm_; // the rank's comm stream: the only caller of its Comm
  const std::vector<int64_t> &ids_;
  const int64_t batch_, seqLen_;
  const std::chrono::milliseconds timeout_;
  const bool recordRouting_;
  const RankContext ctx_; // this rank's group, position and tokens
  const int rank_;
  const Group &group_;
  const int64_t index_;

  // attention role
  const std::vector<int64_t> &tokens_; // flat ids of this rank's tokens, ascending (ctx_)
  Buffer x_, attnNorm_, attnOut_, h_, ffnNorm_, topGates_, pending_, finalNorm_;
  std::vector<int64_t> topIds_; // [tokens, top_k], valid with topGates_
  // ffn role
  std::vector<M2nMessage> received_;        // per A-rank of the attention group, ascending
  std::vector<std::vector<float>> outputs_; // per received message: [count, hidden]
  int64_t receivedLayer_ = kUnset, expertsLayer_ = kUnset, denseLayer_ = kUnset;
  // FFN-side embedding (x_0 rows) or head (x_L rows, then their final norm): tokens ascending
  std::vector<int64_t> edgeTokens_;
  std::vector<float> edgeX_, edgeNorm_;
  int64_t edgeLayer_ = kUnset;
  bool normed_ = false;

  RankResult result_;
};

} // namespace

RankResult runRank(const Plan &plan, const RankWeights &weights, Comm &comm,
                   const std::vector<int64_t> &ids, int64_t batch, int64_t seqLen,
                   std::chrono::milliseconds recvTimeout, bool recordRouting,
                   const kernels::KernelBackend &kernels) {
  // The compute stream is this thread; the comm stream is its own worker (CommStream.h).
  CommStream stream(comm);
  RankResult result =
      Worker(plan, weights, stream, ids, batch, seqLen, recvTimeout, recordRouting, kernels).run();
  stream.flush(); // every send handed on before the rank reports done
  return result;
}

} // namespace disagmoe
