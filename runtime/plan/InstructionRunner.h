// Which group of a plan runs an instruction: the one rule the forward executor (RankWorker.cpp)
// and the training step (runtime/train) both use to pick their group's instructions.
//
// Every rank of a role walks its role's whole program and executes the instructions whose runner is
// its own group (docs/plan-format.md, `programs`, "Which ranks run an instruction"):
//   embed, embed_send                        the embedding group (Placement::embeddingRunner: the
//                                            attention group running layer 0, or with
//                                            embedding_side "ffn" FFN group embedding_group)
//   embed_recv                               the attention group running layer 0
//   rms_norm attn_norm / ffn_norm, attention, residual_add, router, m2n_send, residual_send of
//   layer l                                  the attention group running l
//   residual_recv, n2m_recv of layer l       the next group of l (Placement::nextAttentionGroup:
//                                            the attention group running l+1; after the last layer
//                                            the head group, or with head_side "ffn" the attention
//                                            group running layer 0)
//   head_send                                the next group of the last layer
//   rms_norm final_norm, head, head_recv     the head group (Placement::headRunner: attention group
//                                            head_group, or with head_side "ffn" FFN group
//                                            head_group)
//   m2n_recv, experts, n2m_send of layer l   the FFN group running l
//   dense_ffn of layer l                     the group running l on its component's side: the FFN
//                                            group when layer l's dense FFN or shared experts have
//                                            `side: "ffn"`, else the attention group
// Training refuses the FFN-side forms (train::RankState), so there embed, final norm and head
// always run on attention groups and embed_send, embed_recv, head_send, head_recv never occur.
#pragma once

#include "runtime/plan/Plan.h"

namespace disagmoe {

/// The group of `plan.placement.groups` that runs `ins` (the rule above); the workers compare its
/// address with their own group's. `plan` must have been validated (loadPlan / parsePlan fill the
/// placement's lookups and bound every instruction's layer). Throws PlanError "<plan path>:
/// programs: <op> of layer <l>: the layer is outside [0, <numLayers>)" for a per-layer instruction
/// whose layer is out of range, and "<plan path>: programs: opcode <n> has no runner rule" for a
/// value outside OpCode; neither happens for an instruction of a validated plan's programs.
const Group &runnerOf(const Plan &plan, const Instruction &ins);

/// Whether layer `layer`'s dense FFN or shared experts run on the FFN side (their dense_ffn has
/// `side: "ffn"`); false for a layer without either. `layer` must be in [0, model.numLayers)
/// (unchecked).
bool denseFfnOnFfnSide(const ModelSpec &model, int64_t layer);

} // namespace disagmoe
