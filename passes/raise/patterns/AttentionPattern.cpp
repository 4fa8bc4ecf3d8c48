//===- AttentionPattern.cpp - causal GQA attention with RoPE -> moe.attention ---------===//
//
// Anchor: a Softmax over Q K^T (a MatMul of two activations, not a router's logits). From it the
// q projection's input x (the attention norm's output) is found; the attention is then read from
// x: three projections MatMul(x, W) (q, k, v by the MatMul they reach), [bias Adds], the head
// split, [per-head q/k RMSNorms], RoPE from an inverse-frequency constant, the constant scale
// 1/sqrt(head_dim), the additive causal or sliding-window mask, [sinks concatenated to the
// scores], softmax(.) V and the output projection MatMul(., Wo) [+ bias].
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

#include <cmath>

using namespace mlir;

namespace disagmoe::raise {

/// A weight read through data movement and broadcasting only (Reshape, Expand, ...), or null.
static WeightOp broadcastWeight(Value v) {
  while (auto node = producer(v, {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity",
                                  "Expand", "Tile"}))
    v = node.getInputs()[0];
  return weightOf(v);
}

/// The operand of `concat` that reads `sink` (through the ops broadcastWeight walks).
static Value operandOf(NodeOp concat, WeightOp sink) {
  for (Value operand : concat.getInputs())
    if (broadcastWeight(operand) == sink)
      return operand;
  return nullptr;
}

/// The static shape that the sink logits have where they are broadcast to the scores' shape (the
/// input of the Expand or Tile nearest the Concat); empty if there is no broadcast or the shape is
/// not static.
static SmallVector<int64_t> sinkLayout(Value operand) {
  for (Value v = operand; v;) {
    NodeOp node = producer(
        v, {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Expand", "Tile"});
    if (!node)
      return {};
    if (node.getOpType() == "Expand" || node.getOpType() == "Tile")
      return staticShape(node.getInputs()[0]);
    v = node.getInputs()[0];
  }
  return {};
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::optional<AttentionMatch> ComponentMatcher::matchAttention(Value x) {
  auto projs = projections(x);
  if (projs.size() != 3)
    return std::nullopt;
  // The score MatMul Q K^T feeds [Div(scale)] -> [Add(mask)] -> Softmax; the PV MatMul reads the
  // Softmax. Classify each projection by which of the two it reaches.
  NodeOp softmax;
  for (auto &proj : projs)
    if (!softmax)
      softmax = findDownstream(proj.first.getOutputs()[0], "Softmax");
  if (!softmax)
    return fail(projs[0].first, "attention: no Softmax downstream of the q/k/v projections");
  if (!isLastAxisSoftmax(softmax))
    return fail(softmax, "attention: the Softmax is not over the keys (the last axis)");
  NodeOp pv = findDownstream(softmax.getOutputs()[0], "MatMul");
  if (!pv)
    return fail(softmax, "attention: the Softmax feeds no MatMul with V");
  NodeOp scores = findUpstream(softmax.getInputs()[0], "MatMul", 24);
  if (!scores)
    return fail(softmax, "attention: no Q K^T MatMul before the Softmax");

  AttentionMatch m;
  m.input = x;
  m.softmax = softmax;
  NodeOp qProj, kProj, vProj;
  for (auto &[mm, w] : projs) {
    Value out = mm.getOutputs()[0];
    if (dependsOn(pv.getInputs()[1], out))
      vProj = mm, m.wv = w;
    else if (dependsOn(scores.getInputs()[0], out))
      qProj = mm, m.wq = w;
    else if (dependsOn(scores.getInputs()[1], out))
      kProj = mm, m.wk = w;
  }
  if (!qProj || !kProj || !vProj)
    return fail(scores, "attention: cannot tell the q, k and v projections apart");
  // Projection biases: Add(x W, b) with b [out] right after the MatMul.
  auto [qAdd, bq] = biasAfter(qProj.getOutputs()[0], outWidth(m.wq));
  auto [kAdd, bk] = biasAfter(kProj.getOutputs()[0], outWidth(m.wk));
  auto [vAdd, bv] = biasAfter(vProj.getOutputs()[0], outWidth(m.wv));
  m.bq = bq, m.bk = bk, m.bv = bv;
  Value qOut = qAdd ? qAdd.getOutputs()[0] : qProj.getOutputs()[0];
  Value kOut = kAdd ? kAdd.getOutputs()[0] : kProj.getOutputs()[0];

  // Output projection: the first MatMul with a weight after PV.
  NodeOp oProj = findDownstream(pv.getOutputs()[0], "MatMul", /*needWeight=*/true);
  if (!oProj)
    return fail(pv, "attention: no output projection MatMul(., Wo) after softmax(QK^T)V");
  m.wo = weightOf(oProj.getInputs()[1]);
  m.output = oProj.getOutputs()[0];
  auto [oAdd, bo] = biasAfter(m.output, outWidth(m.wo));
  if (oAdd)
    m.bo = bo, m.output = oAdd.getOutputs()[0];

  // head_dim from the softmax scale: Div(scores, sqrt(head_dim)) or Mul(scores, 1/sqrt(d)).
  double scale = 0;
  for (NodeOp node : between(scores, softmax)) {
    auto c = node.getInputs().size() == 2 ? scalarConstant(node.getInputs()[1]) : std::nullopt;
    if (c && node.getOpType() == "Div")
      scale = *c;
    else if (c && node.getOpType() == "Mul" && *c > 0)
      scale = 1.0 / *c;
  }
  if (scale <= 0)
    return fail(scores, "attention: no constant softmax scale 1/sqrt(head_dim)");
  m.headDim = static_cast<int64_t>(std::llround(scale * scale));
  auto qShape = staticShape(m.wq.getResult()), kShape = staticShape(m.wk.getResult());
  if (m.headDim <= 0 || qShape.size() != 2 || kShape.size() != 2 || qShape[1] % m.headDim != 0 ||
      kShape[1] % m.headDim != 0)
    return fail(scores, "attention: scale " + std::to_string(scale) +
                            " does not give a head_dim dividing the projection widths");
  m.heads = qShape[1] / m.headDim;
  m.kvHeads = kShape[1] / m.headDim;
  if (!checkHeadsInReshape(qOut, m.heads, m.headDim) ||
      !checkHeadsInReshape(kOut, m.kvHeads, m.headDim))
    return fail(qProj, "attention: the head split (Reshape to [b, s, heads, head_dim]) "
                       "disagrees with the softmax scale");

  // q/k norm (Qwen3): an RMSNorm over head_dim on the per-head view of q and of k.
  std::optional<NormMatch> qNorm, kNorm;
  if (NodeOp r = single(consumers(qOut, "Reshape")))
    qNorm = normOn(r.getOutputs()[0]);
  if (NodeOp r = single(consumers(kOut, "Reshape")))
    kNorm = normOn(r.getOutputs()[0]);
  if (error)
    return std::nullopt;
  // Only a norm on the path into the scores counts.
  if (qNorm && !dependsOn(scores.getInputs()[0], qNorm->output))
    qNorm.reset();
  if (kNorm && !dependsOn(scores.getInputs()[1], kNorm->output))
    kNorm.reset();
  if (static_cast<bool>(qNorm) != static_cast<bool>(kNorm))
    return fail(qNorm ? qProj : kProj, "attention: an RMSNorm on only one of q and k");
  if (qNorm) {
    for (NormMatch *n : {&*qNorm, &*kNorm})
      if (staticShape(n->weight.getResult()) != SmallVector<int64_t>{m.headDim})
        return fail(qProj, "attention: the q/k RMSNorm weight is not [head_dim = " +
                               std::to_string(m.headDim) + "]");
    if (qNorm->eps != kNorm->eps)
      return fail(kProj, "attention: q and k RMSNorms have different epsilons");
    m.qNorm = qNorm->weight, m.kNorm = kNorm->weight, m.qkNormEps = shortestF32(qNorm->eps);
  }

  // Causal mask: an additive mask on the scores before the Softmax that hides key j > query i,
  // optionally also key j <= query i - w (sliding window). Recognised by its values (the fold
  // stage makes a mask a constant at the compiled shape, whatever ops built it), else by the
  // structure of the Trilu / position-comparison forms.
  bool causal = false;
  for (NodeOp node : between(scores, softmax))
    if (node.getOpType() == "Add")
      for (Value operand : node.getInputs()) {
        std::string whyNot;
        if (auto mask = ctx.masks.of(operand, &whyNot)) {
          causal = true;
          m.slidingWindow = mask->window;
        } else if (!whyNot.empty()) {
          return fail(node, "attention: the mask added before the Softmax is neither causal nor "
                            "a sliding window: " +
                                whyNot);
        } else if (isCausalMask(operand)) {
          causal = true;
          m.slidingWindow = slidingWindowOf(operand);
        }
      }
  if (error) // a structural mask that contradicts itself (isCausalMask, slidingWindowOf)
    return std::nullopt;
  if (!causal)
    return fail(softmax, "attention: no causal mask (Trilu(upper=1), or -inf where key "
                         "position > query position) added before the Softmax; only causal "
                         "decoders are supported");

  // Sinks (GPT-OSS): Concat(scores, sinks broadcast) -> [Sub(max)] -> Softmax -> Slice(drop the
  // last column) -> PV.
  for (NodeOp node : between(scores, softmax)) {
    if (node.getOpType() != "Concat")
      continue;
    WeightOp sink;
    for (Value operand : node.getInputs())
      if (WeightOp w = broadcastWeight(operand))
        sink = w;
    // Constant folding may store the sinks already reshaped, e.g. [1, heads, 1, 1]: the same
    // bytes, read as [heads].
    auto shape = sink ? staticShape(sink.getResult()) : SmallVector<int64_t>{};
    bool perHead = !shape.empty() && llvm::count(shape, m.heads) == 1 &&
                   llvm::all_of(shape, [&](int64_t d) { return d == 1 || d == m.heads; });
    if (!perHead || (m.heads == 1 && shape.size() != 1))
      return fail(node, "attention: the scores are concatenated with something that is not "
                        "one sink logit per head [" +
                            std::to_string(m.heads) + "]");
    // Broadcast against the scores [b, heads, q, k], the logits must lie on the heads axis (third
    // from the last) where the layout is known: [1, heads, 1, 1] from a sequence as long as the
    // heads count would pass the check above as well.
    if (auto layout = sinkLayout(operandOf(node, sink)); !layout.empty()) {
      const size_t r = layout.size();
      bool onHeads = r >= 3 && layout[r - 3] == m.heads;
      for (size_t i = 0; i < r; ++i)
        onHeads = onHeads && (i == r - 3 || layout[i] == 1);
      if (!onHeads)
        return fail(node, "attention: the sink logits are broadcast from " + shapeString(layout) +
                              ", not [1, heads = " + std::to_string(m.heads) +
                              ", 1, 1]: not one logit per head");
    }
    if (shape.size() != 1)
      sink = reshapedRef(sink, {m.heads});
    if (!findUpstream(pv.getInputs()[0], "Slice", 8))
      return fail(node, "attention: sink logits join the softmax but its output does not drop "
                        "their column (no Slice before the PV MatMul)");
    m.sinks = sink;
  }

  // RoPE: the rotated q reaches a Cos whose angles come from an inverse-frequency constant.
  NodeOp cos = findUpstream(scores.getInputs()[0], "Cos", 512);
  if (!cos)
    return fail(scores, "attention: no rotary embedding (Cos/Sin) on q; only RoPE attention "
                        "is supported");
  auto invFreq = findInverseFrequencies(cos.getInputs()[0], m.headDim / 2);
  if (!invFreq || invFreq->size() < 2 || (*invFreq)[1] <= 0 || (*invFreq)[1] >= 1)
    return fail(cos, "RoPE: no inverse-frequency constant with head_dim/2 = " +
                         std::to_string(m.headDim / 2) + " values");
  // inv_freq[i] = theta^(-2i/d) (RoFormer, eq. 15), so log theta = -d/(2i) * log inv_freq[i].
  // Average over i, then keep 6 significant digits: the constant is fp32 (relative precision
  // 6e-8), so further digits are rounding noise of the export, not part of the model. A float16 /
  // bfloat16 export's frequencies are rounded to its dtype (roundedRopeTheta).
  std::optional<double> theta = ropeTheta(*invFreq, m.headDim);
  if (theta) {
    m.ropeTheta = *theta;
  } else {
    // A scaled RoPE (YaRN, linear or NTK scaling: transformers' rope_init_fns) is whatever
    // frequencies its constant holds; kept one by one. rope_theta reports the base of frequency
    // 1 (YaRN and NTK-by-parts keep the highest frequencies unscaled).
    for (double f : *invFreq)
      if (!(f > 0.0) || !std::isfinite(f))
        return fail(cos, "RoPE: an inverse frequency " + std::to_string(f) +
                             " that is not positive and finite");
    m.ropeInvFreq.assign(invFreq->begin(), invFreq->end());
    m.ropeTheta = thetaOf(ArrayRef<double>(*invFreq).take_front(2), m.headDim);
  }
  // YaRN's attention factor: cos and sin each times one scalar constant (GptOssRotaryEmbedding:
  // emb.cos() * attention_scaling) before they meet q and k.
  NodeOp sin = findUpstream(scores.getInputs()[0], "Sin", 512);
  const std::optional<double> cosFactor = trigScale(cos), sinFactor = sin ? trigScale(sin) : 1.0;
  if (!cosFactor || !sinFactor || *cosFactor != *sinFactor)
    return fail(cos, "RoPE: cos and sin are not scaled by one constant factor (YaRN's attention "
                     "factor multiplies both)");
  if (*cosFactor != 1.0) {
    if (!(*cosFactor > 0.0) || !std::isfinite(*cosFactor))
      return fail(cos, "RoPE: cos and sin scaled by " + std::to_string(*cosFactor) +
                           ", not a positive factor");
    m.ropeAttentionFactor = *cosFactor;
  }
  for (auto [side, name] : {std::pair{scores.getInputs()[0], "q"}, {scores.getInputs()[1], "k"}})
    if (auto why = rotateHalfMismatch(side, m.headDim))
      return fail(scores, std::string("RoPE on ") + name + ": " + *why);
  RopePairs qPairs, kPairs;
  if (auto why = ropePairsMismatch(scores.getInputs()[0], m.headDim, qPairs))
    return fail(scores, "RoPE on q: " + *why);
  if (auto why = ropePairsMismatch(scores.getInputs()[1], m.headDim, kPairs))
    return fail(scores, "RoPE on k: " + *why);
  if (qPairs.interleaved != kPairs.interleaved)
    return fail(scores, std::string("RoPE: only ") + (qPairs.interleaved ? "q" : "k") +
                            " rotates GPT-J's interleaved pairs (the other the halves)");
  if (qPairs.inverses != kPairs.inverses)
    return fail(scores, std::string("RoPE: only ") +
                            (qPairs.inverses > kPairs.inverses ? "q" : "k") +
                            " is interleaved back after the rotation (q . k changes)");
  m.ropeInterleaved = qPairs.interleaved;
  return m;
}

/// Every inverse frequency equals theta^(-2i/dim) to fp32 precision (so the frequencies are

/// The input of the projection MatMul(x, W) that feeds the scores' operand `side`, walking up
/// through the head split, RoPE and norms; null if none within a few dozen nodes.
static Value projectionInputAbove(Value side) {
  llvm::SmallVector<Value> work{side};
  llvm::DenseSet<Value> seen;
  for (int budget = 256; !work.empty() && budget-- > 0;) {
    Value v = work.front();
    work.erase(work.begin());
    if (!seen.insert(v).second)
      continue;
    NodeOp node = producer(v);
    if (!node)
      continue;
    if (node.getOpType() == "MatMul" && weightOf(node.getInputs()[1]))
      return node.getInputs()[0];
    for (Value in : node.getInputs())
      work.push_back(in);
  }
  return nullptr;
}

namespace {

struct AttentionPattern : ComponentPattern<NodeOp> {
  using ComponentPattern::ComponentPattern;

  LogicalResult matchAndRewrite(NodeOp softmax, PatternRewriter &rewriter) const override {
    Value x = attentionInputOf(softmax);
    if (!x)
      return failure();
    ComponentMatcher m(ctx);
    auto a = m.matchAttention(x);
    if (!a || a->softmax != softmax) {
      if (m.error)
        ctx.recordFailure(softmax, *m.error);
      return failure();
    }
    auto opt = [](WeightOp w) { return w ? w.getResult() : Value(); };
    Operation *last = a->output.getDefiningOp();
    rewriter.setInsertionPoint(last);
    auto op = rewriter.create<moe::AttentionOp>(
        last->getLoc(), ctx.actType, x, a->wq.getResult(), a->wk.getResult(), a->wv.getResult(),
        a->wo.getResult(), opt(a->bq), opt(a->bk), opt(a->bv), opt(a->bo), opt(a->qNorm),
        opt(a->kNorm), opt(a->sinks), rewriter.getI64IntegerAttr(-1),
        rewriter.getI64IntegerAttr(a->heads), rewriter.getI64IntegerAttr(a->kvHeads),
        rewriter.getI64IntegerAttr(a->headDim), rewriter.getF64FloatAttr(a->ropeTheta),
        a->qNorm ? rewriter.getF64FloatAttr(a->qkNormEps) : FloatAttr(),
        a->slidingWindow > 0 ? rewriter.getI64IntegerAttr(a->slidingWindow) : IntegerAttr(),
        a->ropeInterleaved ? rewriter.getUnitAttr() : UnitAttr(),
        a->ropeInvFreq.empty() ? DenseF64ArrayAttr()
                               : rewriter.getDenseF64ArrayAttr(a->ropeInvFreq),
        a->ropeAttentionFactor != 1.0 ? rewriter.getF64FloatAttr(a->ropeAttentionFactor)
                                      : FloatAttr());
    ctx.inheritOrder(op, softmax);
    replaceComponent(rewriter, a->output, op.getResult());
    return success();
  }
};

} // namespace

Value attentionInputOf(NodeOp softmax) {
  if (softmax.getOpType() != "Softmax" || softmax.getInputs().empty())
    return nullptr;
  // Q K^T: a MatMul of two activations (a router's Softmax reads MatMul(x, Wg)).
  NodeOp scores = findUpstream(softmax.getInputs()[0], "MatMul", 24);
  if (!scores || weightOf(scores.getInputs()[1]) || weightOf(scores.getInputs()[0]))
    return nullptr;
  return projectionInputAbove(scores.getInputs()[0]);
}

void populateAttentionPattern(RewritePatternSet &patterns, MatchContext &ctx) {
  patterns.add<AttentionPattern>(patterns.getContext(), ctx);
}

} // namespace disagmoe::raise
