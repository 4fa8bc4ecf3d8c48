//===- ClampedSwiGlu.cpp - GPT-OSS's clamped SwiGLU expert, shared by the experts patterns ---===//
//
// gate_up = rows W13 [+ b13]; g = Clip(gate_up[..., ::2], max = limit), u = Clip(gate_up[...,
// 1::2], -limit, limit); ((u + 1) * g * Sigmoid(alpha g)) W2 [+ b2] (openai/gpt-oss, and
// transformers' GptOssExperts). Read from the expert's Sigmoid.
//
//===----------------------------------------------------------------------===//
#include "passes/raise/patterns/ComponentMatcher.h"

using namespace mlir;

namespace disagmoe::raise {

std::optional<std::pair<ExpertMatch, ExpertForm>>
ComponentMatcher::matchOaiExpert(NodeOp sigmoid, Value &rows, OaiActivation *activation) {
  NodeOp scaled = producer(sigmoid.getInputs()[0], {"Mul"});
  if (!scaled)
    return std::nullopt;
  NodeOp gateClip;
  double alpha = 0;
  for (Value in : scaled.getInputs())
    if (NodeOp c = producer(in, {"Clip"}))
      if (auto a =
              otherOperand(scaled, in) ? scalarConstant(*otherOperand(scaled, in)) : std::nullopt)
        gateClip = c, alpha = *a;
  if (!gateClip)
    return std::nullopt;
  auto clipBound = [](NodeOp clip, unsigned i) -> std::optional<double> {
    if (clip.getInputs().size() <= i)
      return std::nullopt;
    return scalarConstant(clip.getInputs()[i]);
  };
  auto limit = clipBound(gateClip, 2);
  if (!limit || clipBound(gateClip, 1))
    return fail(gateClip, "experts: the clamped SwiGLU's gate must be Clip(max = limit) only"),
           std::nullopt;
  NodeOp gateSlice = producer(gateClip.getInputs()[0], {"Slice"});
  if (!gateSlice || !isStrideTwoSlice(gateSlice, 0))
    return fail(gateClip, "experts: the gate is not the even columns of a fused gate_up "
                          "projection (Slice start 0, step 2)"),
           std::nullopt;
  Value fused = gateSlice.getInputs()[0];
  NodeOp glu = single(consumers(sigmoid.getOutputs()[0], "Mul"));
  if (!glu || otherOperand(glu, sigmoid.getOutputs()[0]) != gateClip.getOutputs()[0])
    return fail(sigmoid, "experts: expected glu = gate * Sigmoid(alpha * gate)"), std::nullopt;
  NodeOp out = single(consumers(glu.getOutputs()[0], "Mul"));
  NodeOp plusOne = out ? producer(*otherOperand(out, glu.getOutputs()[0]), {"Add"}) : NodeOp();
  NodeOp upClip;
  if (plusOne)
    for (Value in : plusOne.getInputs())
      if (NodeOp c = producer(in, {"Clip"}))
        if (otherOperand(plusOne, in) && scalarConstant(*otherOperand(plusOne, in)) == 1.0)
          upClip = c;
  if (!upClip || clipBound(upClip, 1) != -*limit || clipBound(upClip, 2) != *limit)
    return fail(glu, "experts: expected (Clip(up, -limit, limit) + 1) * glu"), std::nullopt;
  NodeOp upSlice = producer(upClip.getInputs()[0], {"Slice"});
  if (!upSlice || upSlice.getInputs()[0] != fused || !isStrideTwoSlice(upSlice, 1))
    return fail(upClip, "experts: the up input is not the odd columns of the same gate_up "
                        "projection (Slice start 1, step 2)"),
           std::nullopt;
  if (activation) {
    *activation = {fused, out};
    return std::make_pair(ExpertMatch(), ExpertForm{true, shortestF32(*limit), shortestF32(alpha)});
  }
  ExpertMatch e;
  NodeOp mm13 = producer(fused, {"MatMul"});
  if (!mm13) {
    NodeOp add = producer(fused, {"Add"});
    for (Value in : add ? add.getInputs() : ValueRange{})
      if (NodeOp mm = producer(in, {"MatMul"}))
        if (auto b = otherOperand(add, in))
          mm13 = mm, e.b1 = weightOf(*b);
    if (mm13 && !e.b1)
      return fail(add, "experts: the gate_up bias is not a weight"), std::nullopt;
  }
  if (!mm13 || !weightOf(mm13.getInputs()[1]))
    return fail(gateSlice, "experts: the fused gate_up is not MatMul(rows, W)"), std::nullopt;
  e.w1 = weightOf(mm13.getInputs()[1]);
  NodeOp down = single(consumers(out.getOutputs()[0], "MatMul"));
  if (!down || !weightOf(down.getInputs()[1]))
    return fail(out, "experts: expected the down projection MatMul(., W2)"), std::nullopt;
  e.w2 = weightOf(down.getInputs()[1]);
  e.b2 = biasAfter(down.getOutputs()[0], outWidth(e.w2)).second;
  if (!e.b2) // stacked experts: a bias [experts, 1, hidden]
    for (NodeOp add : consumers(down.getOutputs()[0], "Add"))
      if (auto other = otherOperand(add, down.getOutputs()[0]))
        if (WeightOp b = weightOf(*other); b && outWidth(b) == outWidth(e.w2))
          e.b2 = b;
  rows = mm13.getInputs()[0];
  return std::make_pair(e, ExpertForm{true, shortestF32(*limit), shortestF32(alpha)});
}

} // namespace disagmoe::raise
