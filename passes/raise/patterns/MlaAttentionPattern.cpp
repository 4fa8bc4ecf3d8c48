//===- MlaAttentionPattern.cpp - DeepSeek-V2 multi-head latent attention -> moe.mla_attention
//---===//
//
// Anchor: a Softmax over Q K^T whose q projection's input x has two projections: q_proj and
// kv_a_proj_with_mqa, the latter split into [c | k_pe] with c RMS-normalised into kv_b_proj
// (DeepSeek-V2, arXiv:2405.04434 section 2.1, q_lora_rank null). Sizes come from the norm, the
// splits and the softmax scale; RoPE (optionally after DeepSeek-V2's de-interleave) on the rope
// dims only; causal mask, no sliding window.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>
#include <deque>
#include <tuple>

using namespace mlir;

namespace disagmoe::raise {

static std::optional<SmallVector<double>> splitSizes(NodeOp split) {
  if (split.getInputs().size() >= 2)
    return constantValues(split.getInputs()[1]);
  if (auto attr = split.getOnnxAttrs().getAs<ArrayAttr>("split")) {
    SmallVector<double> out;
    for (Attribute a : attr)
      out.push_back(static_cast<double>(llvm::cast<IntegerAttr>(a).getInt()));
    return out;
  }
  return std::nullopt;
}

std::optional<MlaMatch> ComponentMatcher::matchMla(Value x) {
  auto projs = projections(x);
  if (projs.size() == 1) {
    // DeepSeek-V3's low-rank query (q_lora_rank set): the q projection reads
    // q_a_layernorm(q_a_proj(x)), with kv_a_proj_with_mqa (split) beside q_a_proj on x.
    NodeOp qa = findUpstream(x, "MatMul", 12);
    auto beside = qa && weightOf(qa.getInputs()[1]) ? projections(qa.getInputs()[0])
                                                    : SmallVector<std::pair<NodeOp, WeightOp>>{};
    if (beside.size() == 2 && llvm::any_of(beside, [](auto p) {
          return !consumers(p.first.getOutputs()[0], "Split").empty();
        }))
      return fail(qa, "MLA: a low-rank query (q_a_proj -> q_a_layernorm -> q_b_proj, "
                      "DeepSeek-V3's q_lora_rank) is not supported yet: moe.mla_attention has "
                      "one q_proj (q_lora_rank null, as DeepSeek-V2-Lite)");
  }
  if (projs.size() != 2)
    return std::nullopt;
  MlaMatch m;
  m.input = x;
  NodeOp qProj, kvaProj, kvbProj, kvaSplit;
  std::optional<NormMatch> kvNorm;
  for (auto &[mm, w] : projs) {
    NodeOp split = single(consumers(mm.getOutputs()[0], "Split"));
    if (!split || split.getOutputs().size() != 2)
      continue;
    auto norm = normOn(split.getOutputs()[0]);
    if (error)
      return std::nullopt;
    if (!norm)
      continue;
    auto b = projections(norm->output);
    if (b.size() != 1)
      return fail(split, "MLA: the normalised latent KV feeds no single kv_b projection");
    kvaProj = mm, m.wkvA = w, kvaSplit = split, kvNorm = norm, kvbProj = b[0].first,
    m.wkvB = b[0].second;
  }
  if (!kvaProj)
    return std::nullopt;
  for (auto &[mm, w] : projs)
    if (mm != kvaProj)
      qProj = mm, m.wq = w;
  NodeOp softmax = findDownstream(qProj.getOutputs()[0], "Softmax");
  NodeOp pv = softmax ? findDownstream(softmax.getOutputs()[0], "MatMul") : NodeOp();
  NodeOp scores = softmax ? findUpstream(softmax.getInputs()[0], "MatMul", 24) : NodeOp();
  m.softmax = softmax;
  if (!softmax || !pv || !scores)
    return fail(qProj, "MLA: no softmax(Q K^T) V downstream of q_proj");
  if (!isLastAxisSoftmax(softmax))
    return fail(softmax, "MLA: the Softmax is not over the keys (the last axis)");
  if (!dependsOn(scores.getInputs()[0], qProj.getOutputs()[0]) ||
      !dependsOn(scores.getInputs()[1], kvbProj.getOutputs()[0]) ||
      !dependsOn(scores.getInputs()[1], kvaSplit.getOutputs()[1]) ||
      !dependsOn(pv.getInputs()[1], kvbProj.getOutputs()[0]))
    return fail(scores, "MLA: the scores are not q . [k_nope from kv_b | k_pe from kv_a] with the "
                        "values from kv_b");
  NodeOp oProj = findDownstream(pv.getOutputs()[0], "MatMul", /*needWeight=*/true);
  if (!oProj)
    return fail(pv, "MLA: no output projection MatMul(., Wo)");
  m.wo = weightOf(oProj.getInputs()[1]);
  m.output = oProj.getOutputs()[0];
  m.kvNorm = kvNorm->weight;
  m.kvNormEps = shortestF32(kvNorm->eps);

  // Sizes: kv_lora_rank from the norm, rope from kv_a's width, q_head_dim from the softmax scale.
  double scale = 0;
  for (NodeOp node : between(scores, softmax)) {
    auto c = node.getInputs().size() == 2 ? scalarConstant(node.getInputs()[1]) : std::nullopt;
    if (c && node.getOpType() == "Div" && *c > 0)
      scale = 1.0 / *c;
    else if (c && node.getOpType() == "Mul" && *c > 0)
      scale = *c;
  }
  if (scale <= 0)
    return fail(scores, "MLA: no constant softmax scale");
  m.softmaxScale = shortestF32(scale);
  const int64_t qHeadDim = static_cast<int64_t>(std::llround(1.0 / (scale * scale)));
  auto normShape = staticShape(m.kvNorm.getResult());
  m.rank = normShape.size() == 1 ? normShape[0] : 0;
  m.rope = outWidth(m.wkvA) - m.rank;
  m.nope = qHeadDim - m.rope;
  if (m.rank <= 0 || m.rope <= 0 || m.nope <= 0 || outWidth(m.wq) % qHeadDim != 0)
    return fail(scores, "MLA: softmax scale " + std::to_string(scale) +
                            " does not fit the q/kv_a projection widths");
  m.heads = outWidth(m.wq) / qHeadDim;
  if (outWidth(m.wkvB) % m.heads != 0)
    return fail(kvbProj, "MLA: kv_b's width is not a multiple of the heads");
  m.v = outWidth(m.wkvB) / m.heads - m.nope;
  auto woShape = staticShape(m.wo.getResult());
  if (m.v <= 0 || woShape.size() != 2 || woShape[0] != m.heads * m.v)
    return fail(oProj, "MLA: o_proj's rows are not heads * v_head_dim");
  // The splits agree: q -> [nope, rope], kv_a -> [rank, rope], kv_b -> [nope, v].
  auto kvaSizes = splitSizes(kvaSplit);
  if (!kvaSizes || *kvaSizes != SmallVector<double>{double(m.rank), double(m.rope)})
    return fail(kvaSplit, "MLA: kv_a is not split into [kv_lora_rank, qk_rope_head_dim]");
  for (auto [proj, first, second] :
       {std::tuple<NodeOp, int64_t, int64_t>{qProj, m.nope, m.rope}, {kvbProj, m.nope, m.v}}) {
    NodeOp split = findDownstream(proj.getOutputs()[0], "Split", false, 16);
    auto sizes = split ? splitSizes(split) : std::nullopt;
    if (!sizes || *sizes != SmallVector<double>{double(first), double(second)})
      return fail(proj, "MLA: the per-head split is not [" + std::to_string(first) + ", " +
                            std::to_string(second) + "]");
  }
  bool causal = false;
  for (NodeOp node : between(scores, softmax))
    if (node.getOpType() == "Add")
      for (Value operand : node.getInputs()) {
        std::string whyNot;
        auto mask = ctx.masks.of(operand, &whyNot);
        if (!mask && !whyNot.empty())
          return fail(node, "MLA: the mask added before the Softmax is not causal: " + whyNot);
        if (mask || isCausalMask(operand)) {
          causal = true;
          if ((mask ? mask->window : slidingWindowOf(operand)) > 0)
            return fail(node, "MLA: sliding windows are not supported with MLA");
        }
      }
  if (error) // a structural mask that contradicts itself (isCausalMask, slidingWindowOf)
    return std::nullopt;
  if (!causal)
    return fail(softmax, "MLA: no causal mask added before the Softmax");
  NodeOp cos = findUpstream(scores.getInputs()[0], "Cos", 512);
  auto invFreq = cos ? findInverseFrequencies(cos.getInputs()[0], m.rope / 2) : std::nullopt;
  if (!invFreq || invFreq->size() < 2 || (*invFreq)[1] <= 0 || (*invFreq)[1] >= 1)
    return fail(scores, "MLA: no rotary embedding with qk_rope_head_dim/2 = " +
                            std::to_string(m.rope / 2) + " inverse frequencies");
  const std::optional<double> theta = ropeTheta(*invFreq, m.rope);
  m.ropeTheta = theta.value_or(0.0);
  for (auto [side, name] : {std::pair{scores.getInputs()[0], "q"}, {scores.getInputs()[1], "k"}})
    if (auto why = rotateHalfMismatch(side, m.rope))
      return fail(scores, std::string("MLA: RoPE on ") + name + ": " + *why);
  if (!theta)
    return fail(cos, "MLA: the inverse frequencies are not theta^(-2i/qk_rope_head_dim) for one "
                     "theta (scaled RoPE such as YaRN is not supported)");
  // DeepSeek-V2's de-interleave of the rope dims: view(.., d/2, 2) -> Transpose(last two).
  RopePairs qPairs, kPairs;
  if (auto why = ropePairsMismatch(scores.getInputs()[0], m.rope, qPairs))
    return fail(scores, "MLA: RoPE on q: " + *why);
  if (auto why = ropePairsMismatch(scores.getInputs()[1], m.rope, kPairs))
    return fail(scores, "MLA: RoPE on k: " + *why);
  if (qPairs.interleaved != kPairs.interleaved)
    return fail(scores, "MLA: the rope dims of only one of q and k are de-interleaved");
  if (qPairs.inverses != kPairs.inverses)
    return fail(scores, "MLA: the rope dims of only one of q and k are interleaved back after "
                        "RoPE (q . k changes)");
  m.interleaved = qPairs.interleaved;
  return m;
}

namespace {

struct MlaAttentionPattern : ComponentPattern<NodeOp> {
  using ComponentPattern::ComponentPattern;

  LogicalResult matchAndRewrite(NodeOp softmax, PatternRewriter &rewriter) const override {
    Value x = attentionInputOf(softmax);
    if (!x)
      return failure();
    ComponentMatcher m(ctx);
    auto a = m.matchMla(x);
    if (!a || a->softmax != softmax) {
      if (m.error)
        ctx.recordFailure(softmax, *m.error);
      return failure();
    }
    Operation *last = a->output.getDefiningOp();
    rewriter.setInsertionPoint(last);
    auto op = rewriter.create<moe::MlaAttentionOp>(
        last->getLoc(), ctx.actType, x, a->wq.getResult(), a->wkvA.getResult(),
        a->kvNorm.getResult(), a->wkvB.getResult(), a->wo.getResult(),
        rewriter.getI64IntegerAttr(-1), rewriter.getI64IntegerAttr(a->heads),
        rewriter.getI64IntegerAttr(a->nope), rewriter.getI64IntegerAttr(a->rope),
        rewriter.getI64IntegerAttr(a->v), rewriter.getI64IntegerAttr(a->rank),
        rewriter.getF64FloatAttr(a->kvNormEps), rewriter.getF64FloatAttr(a->ropeTheta),
        rewriter.getF64FloatAttr(a->softmaxScale),
        a->interleaved ? rewriter.getUnitAttr() : UnitAttr());
    ctx.inheritOrder(op, softmax);
    replaceComponent(rewriter, a->output, op.getResult());
    return success();
  }
};

} // namespace

void populateMlaAttentionPattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<MlaAttentionPattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
