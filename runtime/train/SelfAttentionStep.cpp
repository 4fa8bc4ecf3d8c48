// The attention instruction in training: forward and backward of grouped-query attention (with
// biases, q/k norm, sinks, sliding window) and of DeepSeek-V2's multi-head latent attention
// (TrainWorker.h).
#include "runtime/train/TrainWorker.h"

#include "runtime/backends/RopeOfModel.h"

#include "runtime/tensor/FreshBuffers.h"
#include "runtime/tensor/RopePairs.h"

#include <algorithm>
#include <string>

namespace disagmoe::train::detail {

std::vector<int64_t> TrainWorker::positions() const {
  std::vector<int64_t> p(tokens_.size());
  for (size_t t = 0; t < tokens_.size(); ++t)
    p[t] = tokens_[t] % seqLen_;
  return p;
}

// The forward of RankWorker's attention, keeping q, k (after RoPE), v and the heads' output.
// The attention call of component c over this rank's whole sequences (seqLen rows each): GQA
// with the families' sinks and window, or MLA's [nope | rope] q/k heads and its own scale.
kernels::AttentionSpec TrainWorker::attentionSpec(const Component &c) const {
  kernels::AttentionSpec spec;
  spec.sequences = n() / seqLen_, spec.seqLen = seqLen_;
  if (c.kind == ComponentKind::MlaAttention) {
    spec.heads = spec.kvHeads = model_.numHeads;
    spec.qkDim = model_.qkNopeHeadDim + model_.qkRopeHeadDim, spec.vDim = model_.vHeadDim;
    spec.scale = c.softmaxScale;
    return spec;
  }
  spec.heads = model_.numHeads, spec.kvHeads = model_.numKvHeads;
  spec.qkDim = spec.vDim = model_.headDim;
  spec.scale = kernels::standardAttentionScale(model_.headDim);
  spec.sinks = c.sinks >= 0 ? w(c.sinks) : nullptr, spec.window = c.slidingWindow;
  return spec;
}

void TrainWorker::attentionFwd(int64_t l) {
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
  kernels_.linear(a.attnNorm.data(), n(), H, w(c.wq), qW, a.q.data());
  kernels_.linear(a.attnNorm.data(), n(), H, w(c.wk), kvW, a.k.data());
  kernels_.linear(a.attnNorm.data(), n(), H, w(c.wv), kvW, a.v.data());
  if (c.bq >= 0)
    kernels_.addBias(a.q.data(), n(), qW, w(c.bq)); // GPT-OSS projection biases
  if (c.bk >= 0)
    kernels_.addBias(a.k.data(), n(), kvW, w(c.bk));
  if (c.bv >= 0)
    kernels_.addBias(a.v.data(), n(), kvW, w(c.bv));
  if (c.qNorm >= 0) { // Qwen3: RMSNorm over head_dim of every q and k head, before RoPE
    a.qPre = a.q;
    a.kPre = a.k;
    kernels_.rmsNorm(a.q.data(), n() * model_.numHeads, hd, w(c.qNorm), c.qkNormEps, a.q.data());
    kernels_.rmsNorm(a.k.data(), n() * model_.numKvHeads, hd, w(c.kNorm), c.qkNormEps, a.k.data());
  }
  if (c.ropeInterleaved) { // GPT-J's pairs, gathered into the halves' layout (RopePairs.h)
    ropeGatherRows(a.q.data(), n() * model_.numHeads, hd);
    ropeGatherRows(a.k.data(), n() * model_.numKvHeads, hd);
  }
  const std::vector<int64_t> pos = positions();
  const kernels::RopeSpec ropeSpec = kernels::ropeSpecOf(model_); // plain or scaled (YaRN)
  kernels_.rope(a.q.data(), n(), model_.numHeads, hd, pos.data(), ropeSpec);
  kernels_.rope(a.k.data(), n(), model_.numKvHeads, hd, pos.data(), ropeSpec);
  kernels_.attention(a.q.data(), a.k.data(), a.v.data(), attentionSpec(c), a.heads.data());
  freshAssign(attnOut_, n() * H);
  kernels_.linear(a.heads.data(), n(), qW, w(c.wo), H, attnOut_.data());
  if (c.bo >= 0)
    kernels_.addBias(attnOut_.data(), n(), H, w(c.bo));
  a.hasAttention = true;
}

void TrainWorker::attentionBwd(int64_t l) {
  AttentionLayer &a = attn_[l];
  need(a.hasDh && a.hasAttention, "dL/dh and the attention forward of layer " + std::to_string(l));
  const Component &c = component(model_.layers[l].attention);
  if (c.kind == ComponentKind::MlaAttention)
    return mlaBwd(a, c);
  const int64_t H = model_.hiddenSize, hd = model_.headDim;
  const int64_t qW = model_.numHeads * hd, kvW = model_.numKvHeads * hd;
  std::vector<float> dHeads = freshFloats(n() * qW), dq = freshFloats(n() * qW),
                     dk = freshFloats(n() * kvW), dv = freshFloats(n() * kvW),
                     part = freshFloats(n() * H);
  kernels_.linearBackward(a.heads.data(), a.dh.data(), n(), qW, w(c.wo), H, dHeads.data(),
                          grad(c.wo));
  if (c.bo >= 0)
    kernels_.biasBackward(a.dh.data(), n(), H, grad(c.bo));
  kernels_.attentionBackward(a.q.data(), a.k.data(), a.v.data(), dHeads.data(), attentionSpec(c),
                             dq.data(), dk.data(), dv.data(),
                             c.sinks >= 0 ? grad(c.sinks) : nullptr);
  const std::vector<int64_t> pos = positions();
  const kernels::RopeSpec ropeSpec = kernels::ropeSpecOf(model_);
  kernels_.ropeBackward(dq.data(), n(), model_.numHeads, hd, pos.data(), ropeSpec);
  kernels_.ropeBackward(dk.data(), n(), model_.numKvHeads, hd, pos.data(), ropeSpec);
  if (c.ropeInterleaved) {
    ropeScatterRows(dq.data(), n() * model_.numHeads, hd);
    ropeScatterRows(dk.data(), n() * model_.numKvHeads, hd);
  }
  if (c.qNorm >= 0) { // through the per-head q/k RMSNorm (dx may alias dy)
    kernels_.rmsNormBackward(a.qPre.data(), dq.data(), n() * model_.numHeads, hd, w(c.qNorm),
                             c.qkNormEps, dq.data(), grad(c.qNorm));
    kernels_.rmsNormBackward(a.kPre.data(), dk.data(), n() * model_.numKvHeads, hd, w(c.kNorm),
                             c.qkNormEps, dk.data(), grad(c.kNorm));
  }
  if (c.bq >= 0)
    kernels_.biasBackward(dq.data(), n(), qW, grad(c.bq));
  if (c.bk >= 0)
    kernels_.biasBackward(dk.data(), n(), kvW, grad(c.bk));
  if (c.bv >= 0)
    kernels_.biasBackward(dv.data(), n(), kvW, grad(c.bv));
  freshAssign(a.dAttnNorm, n() * H);
  kernels_.linearBackward(a.attnNorm.data(), dq.data(), n(), H, w(c.wq), qW, a.dAttnNorm.data(),
                          grad(c.wq));
  kernels_.linearBackward(a.attnNorm.data(), dk.data(), n(), H, w(c.wk), kvW, part.data(),
                          grad(c.wk));
  addInto(a.dAttnNorm, part);
  kernels_.linearBackward(a.attnNorm.data(), dv.data(), n(), H, w(c.wv), kvW, part.data(),
                          grad(c.wv));
  addInto(a.dAttnNorm, part);
  a.hasDAttnNorm = true;
}

// DeepSeek-V2's multi-head latent attention, as RankWorker::mlaAttention, keeping q_proj's and
// kv_a's outputs, the latent before and after its norm, and Q, K, V, the heads' output.
void TrainWorker::mlaFwd(AttentionLayer &a, const Component &c) {
  const int64_t H = model_.hiddenSize, heads = model_.numHeads, nope = model_.qkNopeHeadDim;
  const int64_t rope = model_.qkRopeHeadDim, vd = model_.vHeadDim, rank = model_.kvLoraRank,
                qd = nope + rope;
  freshAssign(a.mlaQ, n() * heads * qd);
  freshAssign(a.ckv, n() * (rank + rope));
  freshAssign(a.latentPre, n() * rank);
  freshAssign(a.latent, n() * rank);
  std::vector<float> kv = freshFloats(n() * heads * (nope + vd));
  kernels_.linear(a.attnNorm.data(), n(), H, w(c.wq), heads * qd, a.mlaQ.data());
  kernels_.linear(a.attnNorm.data(), n(), H, w(c.wkvA), rank + rope, a.ckv.data());
  for (int64_t t = 0; t < n(); ++t)
    std::copy_n(a.ckv.data() + t * (rank + rope), rank, a.latentPre.data() + t * rank);
  kernels_.rmsNorm(a.latentPre.data(), n(), rank, w(c.kvNorm), c.kvNormEps, a.latent.data());
  kernels_.linear(a.latent.data(), n(), rank, w(c.wkvB), heads * (nope + vd), kv.data());
  std::vector<float> qPe = freshFloats(n() * heads * rope), kPe = freshFloats(n() * rope);
  for (int64_t t = 0; t < n(); ++t) {
    for (int64_t h = 0; h < heads; ++h)
      ropeGather(a.mlaQ.data() + (t * heads + h) * qd + nope, qPe.data() + (t * heads + h) * rope,
                 rope, c.ropeInterleaved);
    ropeGather(a.ckv.data() + t * (rank + rope) + rank, kPe.data() + t * rope, rope,
               c.ropeInterleaved);
  }
  const std::vector<int64_t> pos = positions();
  kernels_.rope(qPe.data(), n(), heads, rope, pos.data(), model_.ropeTheta);
  kernels_.rope(kPe.data(), n(), 1, rope, pos.data(), model_.ropeTheta);
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
  kernels_.attention(a.q.data(), a.k.data(), a.v.data(), attentionSpec(c), a.heads.data());
  freshAssign(attnOut_, n() * H);
  kernels_.linear(a.heads.data(), n(), heads * vd, w(c.wo), H, attnOut_.data());
  a.hasAttention = true;
}

void TrainWorker::mlaBwd(AttentionLayer &a, const Component &c) {
  const int64_t H = model_.hiddenSize, heads = model_.numHeads, nope = model_.qkNopeHeadDim;
  const int64_t rope = model_.qkRopeHeadDim, vd = model_.vHeadDim, rank = model_.kvLoraRank,
                qd = nope + rope;
  std::vector<float> dO = freshFloats(n() * heads * vd), dQ = freshFloats(n() * heads * qd),
                     dK = freshFloats(n() * heads * qd), dV = freshFloats(n() * heads * vd);
  kernels_.linearBackward(a.heads.data(), a.dh.data(), n(), heads * vd, w(c.wo), H, dO.data(),
                          grad(c.wo));
  kernels_.attentionBackward(a.q.data(), a.k.data(), a.v.data(), dO.data(), attentionSpec(c),
                             dQ.data(), dK.data(), dV.data(), nullptr);
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
  kernels_.ropeBackward(dqPe.data(), n(), heads, rope, pos.data(), model_.ropeTheta);
  kernels_.ropeBackward(dkPe.data(), n(), 1, rope, pos.data(), model_.ropeTheta);
  std::vector<float> dckv = freshFloats(n() * (rank + rope)), dLatent = freshFloats(n() * rank);
  for (int64_t t = 0; t < n(); ++t) {
    for (int64_t h = 0; h < heads; ++h)
      ropeScatter(dqPe.data() + (t * heads + h) * rope, dq.data() + (t * heads + h) * qd + nope,
                  rope, c.ropeInterleaved);
    ropeScatter(dkPe.data() + t * rope, dckv.data() + t * (rank + rope) + rank, rope,
                c.ropeInterleaved);
  }
  kernels_.linearBackward(a.latent.data(), dkv.data(), n(), rank, w(c.wkvB), heads * (nope + vd),
                          dLatent.data(), grad(c.wkvB));
  kernels_.rmsNormBackward(a.latentPre.data(), dLatent.data(), n(), rank, w(c.kvNorm), c.kvNormEps,
                           dLatent.data(), grad(c.kvNorm));
  for (int64_t t = 0; t < n(); ++t)
    std::copy_n(dLatent.data() + t * rank, rank, dckv.data() + t * (rank + rope));
  std::vector<float> part = freshFloats(n() * H);
  freshAssign(a.dAttnNorm, n() * H);
  kernels_.linearBackward(a.attnNorm.data(), dq.data(), n(), H, w(c.wq), heads * qd,
                          a.dAttnNorm.data(), grad(c.wq));
  kernels_.linearBackward(a.attnNorm.data(), dckv.data(), n(), H, w(c.wkvA), rank + rope,
                          part.data(), grad(c.wkvA));
  addInto(a.dAttnNorm, part);
  a.hasDAttnNorm = true;
}

} // namespace disagmoe::train::detail
