//===- MoeOps.cpp - verifiers of the `moe` dialect ------------------------===//
//
// Each verifier names the offending value (operand or attribute) and the shape it expected, so that
// an error in a raised or hand-written model points at the cause.
//
//===----------------------------------------------------------------------===//
#include "dialects/moe/MoeDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace disagmoe::moe;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

/// Shape of a ranked tensor, or std::nullopt for an unranked one (nothing to check).
std::optional<ArrayRef<int64_t>> shapeOf(Value v) {
  if (auto t = llvm::dyn_cast<RankedTensorType>(v.getType()))
    return t.getShape();
  return std::nullopt;
}

bool dimMatches(int64_t actual, int64_t expected) {
  return actual == kDyn || expected == kDyn || actual == expected;
}

/// Checks that `v` (called `what`) is a ranked tensor of `expected` shape (kDyn = any).
LogicalResult expectShape(Operation *op, Value v, StringRef what, ArrayRef<int64_t> expected) {
  auto shape = shapeOf(v);
  if (!shape)
    return success();
  auto fmt = [](ArrayRef<int64_t> s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i)
      out += (i ? "," : "") + (s[i] == kDyn ? std::string("?") : std::to_string(s[i]));
    return out + "]";
  };
  bool ok = shape->size() == expected.size();
  for (size_t i = 0; ok && i < expected.size(); ++i)
    ok = dimMatches((*shape)[i], expected[i]);
  if (!ok)
    return op->emitOpError() << what << " has shape " << fmt(*shape) << ", expected "
                             << fmt(expected);
  return success();
}

int64_t lastDim(Value v) {
  auto shape = shapeOf(v);
  return shape && !shape->empty() ? shape->back() : kDyn;
}

LogicalResult expectPositive(Operation *op, StringRef what, int64_t value) {
  if (value <= 0)
    return op->emitOpError() << "attribute '" << what << "' must be positive, got " << value;
  return success();
}
} // namespace

LogicalResult EmbeddingOp::verify() {
  int64_t hidden = lastDim(getWeight());
  if (failed(expectShape(*this, getWeight(), "weight", {kDyn, kDyn})))
    return failure();
  auto ids = shapeOf(getIds());
  auto out = shapeOf(getResult());
  if (ids && out && out->size() != ids->size() + 1)
    return emitOpError() << "result must have rank " << ids->size() + 1 << " (ids rank + hidden)";
  if (out && !dimMatches(out->back(), hidden))
    return emitOpError() << "result hidden size " << out->back() << " differs from weight's "
                         << hidden;
  return success();
}

LogicalResult RmsNormOp::verify() {
  if (getEps().convertToDouble() <= 0.0)
    return emitOpError() << "attribute 'eps' must be positive, got " << getEps().convertToDouble();
  StringRef role = getRole();
  // Empty with layer -1: raised by a match pattern, its place in the stream not assembled yet.
  bool pending = role.empty() && getLayer() == -1;
  if (!pending && role != "attn_norm" && role != "ffn_norm" && role != "final_norm")
    return emitOpError() << "attribute 'role' must be attn_norm, ffn_norm or final_norm, got '"
                         << role << "'";
  return expectShape(*this, getWeight(), "weight", {lastDim(getX())});
}

LogicalResult AttentionOp::verify() {
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads(), headDim = getHeadDim();
  if (failed(expectPositive(*this, "num_heads", heads)) ||
      failed(expectPositive(*this, "num_kv_heads", kvHeads)) ||
      failed(expectPositive(*this, "head_dim", headDim)))
    return failure();
  if (heads % kvHeads != 0)
    return emitOpError() << "num_heads " << heads << " is not a multiple of num_kv_heads "
                         << kvHeads;
  if (!(getRopeTheta().convertToDouble() > 0.0)) // NaN too
    return emitOpError() << "attribute 'rope_theta' must be positive";
  int64_t hidden = lastDim(getX());
  if (failed(expectShape(*this, getWq(), "wq", {hidden, heads * headDim})) ||
      failed(expectShape(*this, getWk(), "wk", {hidden, kvHeads * headDim})) ||
      failed(expectShape(*this, getWv(), "wv", {hidden, kvHeads * headDim})) ||
      failed(expectShape(*this, getWo(), "wo", {heads * headDim, hidden})))
    return failure();
  // Optional parts of the model families.
  for (auto [name, value, size] :
       {std::tuple<StringRef, Value, int64_t>{"bq", getBq(), heads * headDim},
        {"bk", getBk(), kvHeads * headDim},
        {"bv", getBv(), kvHeads * headDim},
        {"bo", getBo(), hidden},
        {"q_norm", getQNorm(), headDim},
        {"k_norm", getKNorm(), headDim},
        {"sinks", getSinks(), heads}})
    if (value && failed(expectShape(*this, value, name, {size})))
      return failure();
  if (static_cast<bool>(getQNorm()) != static_cast<bool>(getKNorm()))
    return emitOpError() << "q_norm and k_norm must be given together";
  if (getQNorm() && !getQkNormEps())
    return emitOpError() << "qk_norm needs the attribute 'qk_norm_eps'";
  if (auto eps = getQkNormEps(); eps && eps->convertToDouble() <= 0.0)
    return emitOpError() << "attribute 'qk_norm_eps' must be positive, got "
                         << eps->convertToDouble();
  if (auto window = getSlidingWindow(); window && *window <= 0)
    return emitOpError() << "attribute 'sliding_window' must be positive, got " << *window;
  if (auto invFreq = getRopeInvFreq()) {
    if (static_cast<int64_t>(invFreq->size()) != headDim / 2)
      return emitOpError() << "attribute 'rope_inv_freq' has " << invFreq->size()
                           << " values, expected head_dim / 2 = " << headDim / 2;
    for (double f : *invFreq)
      if (!(f > 0.0) || !std::isfinite(f))
        return emitOpError() << "attribute 'rope_inv_freq' must hold positive finite values, got "
                             << f;
  }
  if (auto m = getRopeAttentionFactor(); m && !(m->convertToDouble() > 0.0))
    return emitOpError() << "attribute 'rope_attention_factor' must be positive, got "
                         << m->convertToDouble();
  return success();
}

LogicalResult MlaAttentionOp::verify() {
  int64_t heads = getNumHeads(), nope = getQkNopeHeadDim(), rope = getQkRopeHeadDim(),
          v = getVHeadDim(), rank = getKvLoraRank();
  for (auto [name, value] : {std::pair<StringRef, int64_t>{"num_heads", heads},
                             {"qk_nope_head_dim", nope},
                             {"qk_rope_head_dim", rope},
                             {"v_head_dim", v},
                             {"kv_lora_rank", rank}})
    if (failed(expectPositive(*this, name, value)))
      return failure();
  if (rope % 2 != 0)
    return emitOpError() << "qk_rope_head_dim " << rope << " must be even (rotate-half RoPE)";
  for (auto [name, value] :
       {std::pair<StringRef, double>{"kv_norm_eps", getKvNormEps().convertToDouble()},
        {"rope_theta", getRopeTheta().convertToDouble()},
        {"softmax_scale", getSoftmaxScale().convertToDouble()}})
    if (!(value > 0.0))
      return emitOpError() << "attribute '" << name << "' must be positive";
  int64_t hidden = lastDim(getX());
  if (failed(expectShape(*this, getWq(), "wq", {hidden, heads * (nope + rope)})) ||
      failed(expectShape(*this, getWkvA(), "wkv_a", {hidden, rank + rope})) ||
      failed(expectShape(*this, getKvNorm(), "kv_norm", {rank})) ||
      failed(expectShape(*this, getWkvB(), "wkv_b", {rank, heads * (nope + v)})) ||
      failed(expectShape(*this, getWo(), "wo", {heads * v, hidden})))
    return failure();
  return success();
}

LogicalResult RouterOp::verify() {
  int64_t experts = getNumExperts(), k = getTopK();
  if (failed(expectPositive(*this, "num_experts", experts)) ||
      failed(expectPositive(*this, "top_k", k)))
    return failure();
  if (k > experts)
    return emitOpError() << "top_k " << k << " exceeds num_experts " << experts;
  StringRef scoring = getScoring();
  const bool sigmoid = scoring == "sigmoid_group_topk_renorm" || scoring == "sigmoid_group_topk";
  if (scoring != "softmax_topk_renorm" && scoring != "softmax_topk" && scoring != "topk_softmax" &&
      !sigmoid)
    return emitOpError() << "unknown router scoring '" << scoring << "'";
  if (!sigmoid && (getCorrectionBias() || getNGroup() || getTopkGroup()))
    return emitOpError() << "correction_bias, n_group and topk_group belong to the sigmoid "
                            "scorings (DeepSeek-V3's router), not '"
                         << scoring << "'";
  // DeepSeek-V3's groups (runtime/plan/RouterScoring.h RouterGroups).
  const int64_t groups = getNGroup().value_or(1), kept = getTopkGroup().value_or(1);
  if (groups < 1 || experts % groups != 0)
    return emitOpError() << "n_group " << groups << " does not divide num_experts " << experts;
  if (groups > 1 && experts / groups < 2)
    return emitOpError() << "n_group " << groups << " leaves groups of one expert (a group's "
                         << "score is the sum of its top 2)";
  if (kept < 1 || kept > groups)
    return emitOpError() << "topk_group " << kept << " is outside [1, n_group = " << groups << "]";
  if (k > kept * (experts / groups))
    return emitOpError() << "top_k " << k << " exceeds the " << kept * (experts / groups)
                         << " experts of the topk_group = " << kept << " kept groups";
  if (failed(expectShape(*this, getWeight(), "weight", {lastDim(getX()), experts})) ||
      failed(expectShape(*this, getIds(), "result ids", {kDyn, k})) ||
      failed(expectShape(*this, getGates(), "result gates", {kDyn, k})))
    return failure();
  if (getBias() && failed(expectShape(*this, getBias(), "bias", {experts})))
    return failure();
  if (getCorrectionBias() &&
      failed(expectShape(*this, getCorrectionBias(), "correction_bias", {experts})))
    return failure();
  if (auto f = getRoutedScalingFactor(); f && !(f->convertToDouble() > 0.0))
    return emitOpError() << "attribute 'routed_scaling_factor' must be positive, got "
                         << f->convertToDouble();
  return success();
}

LogicalResult ExpertsOp::verify() {
  int64_t experts = getNumExperts(), inner = getExpertHidden();
  if (failed(expectPositive(*this, "num_experts", experts)) ||
      failed(expectPositive(*this, "expert_hidden", inner)))
    return failure();
  const bool fused = getFusedGateUp();
  StringRef activation = getActivation().value_or("swiglu");
  const bool gated = activation == "swiglu" || activation == "swiglu_oai";
  if (!gated && activation != "relu" && activation != "gelu_tanh" && activation != "silu" &&
      activation != "identity")
    return emitOpError() << "attribute 'activation' must be swiglu, swiglu_oai, relu, gelu_tanh, "
                            "silu or identity, got '"
                         << activation << "'";
  if (!gated && (fused || !getW3().empty() || !getB3().empty()))
    return emitOpError() << "activation '" << activation
                         << "' is not gated: w3, b3 and fused_gate_up must be absent";
  if (!gated && (getSwigluLimit() || getSwigluAlpha()))
    return emitOpError() << "activation '" << activation
                         << "' takes no 'swiglu_limit' or 'swiglu_alpha'";
  if (activation == "swiglu_oai" && (!getSwigluLimit() || !getSwigluAlpha()))
    return emitOpError() << "activation swiglu_oai needs 'swiglu_limit' and 'swiglu_alpha'";
  if (auto limit = getSwigluLimit(); limit && !(limit->convertToDouble() > 0.0))
    return emitOpError() << "attribute 'swiglu_limit' must be positive";
  const int64_t gateWidth = fused ? 2 * inner : inner;
  for (auto [name, list, allowEmpty] :
       {std::tuple<StringRef, OperandRange, bool>{"w1", getW1(), false},
        {"w3", getW3(), fused || !gated},
        {"w2", getW2(), false},
        {"b1", getB1(), true},
        {"b3", getB3(), true},
        {"b2", getB2(), true}}) {
    if (fused && name == "w3" && !list.empty())
      return emitOpError() << "with fused_gate_up, w3 must be empty (w1 holds gate and up)";
    if (fused && name == "b3" && !list.empty())
      return emitOpError() << "with fused_gate_up, b3 must be empty (b1 holds gate and up)";
    if (list.empty() && allowEmpty)
      continue;
    if (static_cast<int64_t>(list.size()) != experts)
      return emitOpError() << "has " << list.size() << " " << name << " weights for " << experts
                           << " experts";
  }
  int64_t hidden = lastDim(getX());
  for (int64_t e = 0; e < experts; ++e) {
    std::string idx = "[" + std::to_string(e) + "]";
    if (failed(expectShape(*this, getW1()[e], "w1" + idx, {hidden, gateWidth})) ||
        (!fused && gated && failed(expectShape(*this, getW3()[e], "w3" + idx, {hidden, inner}))) ||
        failed(expectShape(*this, getW2()[e], "w2" + idx, {inner, hidden})))
      return failure();
    if ((!getB1().empty() && failed(expectShape(*this, getB1()[e], "b1" + idx, {gateWidth}))) ||
        (!getB3().empty() && failed(expectShape(*this, getB3()[e], "b3" + idx, {inner}))) ||
        (!getB2().empty() && failed(expectShape(*this, getB2()[e], "b2" + idx, {hidden}))))
      return failure();
  }
  auto ids = shapeOf(getIds()), gates = shapeOf(getGates());
  if (ids && gates && (ids->size() != 2 || *ids != *gates))
    return emitOpError() << "ids and gates must both be [tokens, top_k]";
  return success();
}

LogicalResult DenseFfnOp::verify() {
  StringRef role = getRole();
  // Empty with layer -1: raised by a match pattern, dense or shared not decided yet.
  bool pending = role.empty() && getLayer() == -1;
  if (!pending && role != "dense" && role != "shared")
    return emitOpError() << "attribute 'role' must be dense or shared, got '" << role << "'";
  int64_t inner = getFfnHidden();
  if (failed(expectPositive(*this, "ffn_hidden", inner)))
    return failure();
  if (!pending && getLayer() < 0)
    return emitOpError() << "attribute 'layer' must be >= 0, got " << getLayer();
  if (auto side = getSide(); side && *side != "attention" && *side != "ffn")
    return emitOpError() << "attribute 'side' must be attention or ffn, got '" << *side << "'";
  if (auto n = getNumSharedExperts()) {
    if (role != "shared")
      return emitOpError() << "attribute 'num_shared_experts' is only for role shared";
    if (failed(expectPositive(*this, "num_shared_experts", *n)))
      return failure();
  }
  int64_t hidden = lastDim(getX());
  if (failed(expectShape(*this, getW1(), "w1", {hidden, inner})) ||
      failed(expectShape(*this, getW3(), "w3", {hidden, inner})) ||
      failed(expectShape(*this, getW2(), "w2", {inner, hidden})))
    return failure();
  return expectShape(*this, getResult(), "result", llvm::to_vector(*shapeOf(getX())));
}

LogicalResult HeadOp::verify() {
  return expectShape(*this, getWeight(), "weight", {lastDim(getX()), lastDim(getResult())});
}

LogicalResult StageOp::verify() {
  StringRef side = getSide();
  if (side != "attention" && side != "ffn" && side != "embedding" && side != "head")
    return emitOpError() << "unknown side '" << side << "'";
  if (getGroup() && *getGroup() < 0)
    return emitOpError() << "attribute 'group' must be >= 0, got " << *getGroup();
  if (auto on = getOn()) {
    if (side != "embedding" && side != "head")
      return emitOpError() << "attribute 'on' is only for embedding and head stages, not '" << side
                           << "'";
    if (*on != "attention" && *on != "ffn")
      return emitOpError() << "attribute 'on' must be attention or ffn, got '" << *on << "'";
  }
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "region has " << body.getNumArguments() << " arguments for "
                         << getInputs().size() << " inputs";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(body.getArgumentTypes(), getInputs().getTypes())))
    if (std::get<0>(pair) != std::get<1>(pair))
      return emitOpError() << "region argument #" << i << " type differs from input #" << i;
  auto yield = llvm::dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError() << "region must end with moe.yield";
  if (yield.getValues().getTypes() != getOutputs().getTypes())
    return emitOpError() << "moe.yield types differ from the stage's result types";
  return success();
}

namespace {
LogicalResult verifyRoute(Operation *op, int64_t layer, int64_t src, int64_t dst) {
  if (layer < 0)
    return op->emitOpError() << "attribute 'layer' must be >= 0, got " << layer;
  if (src < 0 || dst < 0)
    return op->emitOpError() << "group indices must be >= 0, got src_group " << src
                             << ", dst_group " << dst;
  return success();
}
} // namespace

LogicalResult M2NOp::verify() {
  if (failed(verifyRoute(*this, getLayer(), getSrcGroup(), getDstGroup())))
    return failure();
  if (static_cast<bool>(getIds()) != static_cast<bool>(getGates()) ||
      static_cast<bool>(getIds()) != static_cast<bool>(getIdsOut()) ||
      static_cast<bool>(getGates()) != static_cast<bool>(getGatesOut()))
    return emitOpError() << "takes and returns both ids and gates (routed layer) or neither (dense "
                            "layer with an FFN-side dense FFN)";
  if (getX().getType() != getXOut().getType() ||
      (getIds() && (getIds().getType() != getIdsOut().getType() ||
                    getGates().getType() != getGatesOut().getType())))
    return emitOpError() << "results must have the types of the sent values";
  return success();
}

LogicalResult HomeTransferOp::verify() {
  if (getKind() != "embedding" && getKind() != "head")
    return emitOpError() << "attribute 'kind' must be embedding or head, got '" << getKind() << "'";
  if (getSrcGroup() < 0 || getDstGroup() < 0)
    return emitOpError() << "groups must be >= 0, got src_group " << getSrcGroup() << ", dst_group "
                         << getDstGroup();
  if (getX().getType() != getResult().getType())
    return emitOpError() << "result must have the type of the sent value";
  return success();
}

LogicalResult N2MOp::verify() {
  if (failed(verifyRoute(*this, getLayer(), getSrcGroup(), getDstGroup())))
    return failure();
  if (getY().getType() != getResult().getType())
    return emitOpError() << "result must have the type of the sent value";
  return success();
}

LogicalResult ResidualOp::verify() {
  if (failed(verifyRoute(*this, getLayer(), getSrcGroup(), getDstGroup())))
    return failure();
  if (getH().getType() != getResult().getType())
    return emitOpError() << "result must have the type of the sent value";
  return success();
}

// `(type, type, ...)` that may also be `()`: the w3 list of experts with a fused gate/up
// projection is empty.
static ParseResult parseParenTypes(OpAsmParser &parser, SmallVectorImpl<Type> &types) {
  if (parser.parseLParen())
    return failure();
  if (succeeded(parser.parseOptionalRParen()))
    return success();
  if (parser.parseTypeList(types))
    return failure();
  return parser.parseRParen();
}

static void printParenTypes(OpAsmPrinter &printer, Operation *, TypeRange types) {
  printer << "(";
  llvm::interleaveComma(types, printer);
  printer << ")";
}

#define GET_OP_CLASSES
#include "dialects/moe/MoeOps.cpp.inc"
