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
  if (role != "attn_norm" && role != "ffn_norm" && role != "final_norm")
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
  if (getRopeTheta().convertToDouble() <= 0.0)
    return emitOpError() << "attribute 'rope_theta' must be positive";
  int64_t hidden = lastDim(getX());
  if (failed(expectShape(*this, getWq(), "wq", {hidden, heads * headDim})) ||
      failed(expectShape(*this, getWk(), "wk", {hidden, kvHeads * headDim})) ||
      failed(expectShape(*this, getWv(), "wv", {hidden, kvHeads * headDim})) ||
      failed(expectShape(*this, getWo(), "wo", {heads * headDim, hidden})))
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
  if (scoring != "softmax_topk_renorm" && scoring != "softmax_topk" && scoring != "topk_softmax")
    return emitOpError() << "unknown router scoring '" << scoring << "'";
  if (failed(expectShape(*this, getWeight(), "weight", {lastDim(getX()), experts})) ||
      failed(expectShape(*this, getIds(), "result ids", {kDyn, k})) ||
      failed(expectShape(*this, getGates(), "result gates", {kDyn, k})))
    return failure();
  return success();
}

LogicalResult ExpertsOp::verify() {
  int64_t experts = getNumExperts(), inner = getExpertHidden();
  if (failed(expectPositive(*this, "num_experts", experts)) ||
      failed(expectPositive(*this, "expert_hidden", inner)))
    return failure();
  for (auto [name, list] : {std::pair<StringRef, OperandRange>{"w1", getW1()},
                            {"w3", getW3()}, {"w2", getW2()}})
    if (static_cast<int64_t>(list.size()) != experts)
      return emitOpError() << "has " << list.size() << " " << name << " weights for "
                           << experts << " experts";
  int64_t hidden = lastDim(getX());
  for (int64_t e = 0; e < experts; ++e) {
    std::string idx = "[" + std::to_string(e) + "]";
    if (failed(expectShape(*this, getW1()[e], "w1" + idx, {hidden, inner})) ||
        failed(expectShape(*this, getW3()[e], "w3" + idx, {hidden, inner})) ||
        failed(expectShape(*this, getW2()[e], "w2" + idx, {inner, hidden})))
      return failure();
  }
  auto ids = shapeOf(getIds()), gates = shapeOf(getGates());
  if (ids && gates && (ids->size() != 2 || *ids != *gates))
    return emitOpError() << "ids and gates must both be [tokens, top_k]";
  return success();
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
  if (getX().getType() != getXOut().getType() || getIds().getType() != getIdsOut().getType() ||
      getGates().getType() != getGatesOut().getType())
    return emitOpError() << "results must have the types of the sent values";
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

#define GET_OP_CLASSES
#include "dialects/moe/MoeOps.cpp.inc"
