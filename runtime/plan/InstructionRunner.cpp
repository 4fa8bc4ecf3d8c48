// The one rule of which group runs an instruction (InstructionRunner.h).
#include "runtime/plan/InstructionRunner.h"

#include <string>

namespace disagmoe {
namespace {

// Per-layer instructions index the placement's per-layer lookups; a layer out of range there would
// read past them, so it is refused (a validated plan never has one).
int64_t checkedLayer(const Plan &plan, const Instruction &ins) {
  if (ins.layer < 0 || ins.layer >= plan.model.numLayers)
    throw PlanError(plan.path + ": programs: " + toString(ins.op) + " of layer " +
                    std::to_string(ins.layer) + ": the layer is outside [0, " +
                    std::to_string(plan.model.numLayers) + ")");
  return ins.layer;
}

} // namespace

// A layer has at most one dense_ffn component (a dense layer's FFN or an MoE layer's shared
// experts), so at most one of the two flags can be set.
bool denseFfnOnFfnSide(const ModelSpec &model, int64_t layer) {
  const LayerComponents &lc = model.layers[layer];
  return lc.denseOnFfn || lc.sharedOnFfn;
}

const Group &runnerOf(const Plan &plan, const Instruction &ins) {
  const Placement &p = plan.placement;
  // Every opcode is listed (no default), so a new one does not compile silently into a rule.
  switch (ins.op) {
  case OpCode::Embed:
  case OpCode::EmbedSend:
    return p.embeddingRunner();
  case OpCode::EmbedRecv:
    return p.attentionGroupOfLayer(0);
  case OpCode::HeadSend:
    return p.nextAttentionGroup(plan.model.numLayers - 1);
  case OpCode::Head:
  case OpCode::HeadRecv:
    return p.headRunner();
  case OpCode::RmsNorm:
    if (ins.role == NormRole::FinalNorm)
      return p.headRunner();
    return p.attentionGroupOfLayer(checkedLayer(plan, ins));
  case OpCode::Attention:
  case OpCode::ResidualAdd:
  case OpCode::Router:
  case OpCode::M2nSend:
  case OpCode::ResidualSend:
    return p.attentionGroupOfLayer(checkedLayer(plan, ins));
  case OpCode::ResidualRecv:
  case OpCode::N2mRecv:
    return p.nextAttentionGroup(checkedLayer(plan, ins));
  case OpCode::M2nRecv:
  case OpCode::Experts:
  case OpCode::N2mSend:
    return p.ffnGroupOfLayer(checkedLayer(plan, ins));
  case OpCode::DenseFfn: {
    const int64_t l = checkedLayer(plan, ins);
    return denseFfnOnFfnSide(plan.model, l) ? p.ffnGroupOfLayer(l) : p.attentionGroupOfLayer(l);
  }
  }
  throw PlanError(plan.path + ": programs: opcode " + std::to_string(static_cast<int>(ins.op)) +
                  " has no runner rule");
}

} // namespace disagmoe
