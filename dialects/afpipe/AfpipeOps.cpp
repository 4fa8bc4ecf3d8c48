//===- AfpipeOps.cpp - verifiers of the `afpipe` ops ----------------------===//
//
// Local, structural checks (values in range, names known, indices inside their program and
// schedule). The whole-schedule checks (send/receive matching per rank pair, no waiting rank, no
// idle rank, memory fit) need an execution of every group: the afpipe-verify pass runs them
// (runtime/plan/Schedule.h, verifySchedule).
//
//===----------------------------------------------------------------------===//
#include "dialects/afpipe/AfpipeDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace disagmoe::afpipe;

#define GET_OP_CLASSES
#include "dialects/afpipe/AfpipeOps.cpp.inc"

namespace {

bool oneOf(StringRef s, std::initializer_list<StringRef> names) {
  for (StringRef n : names)
    if (s == n)
      return true;
  return false;
}

/// Checks shared by every instruction op.
template <typename OpT> LogicalResult verifyInstr(OpT op) {
  if (op.getLabel().empty())
    return op.emitOpError("needs an op label (attention, experts, m2n, ...)");
  if (!oneOf(op.getStream(), {"forward", "backward", "comm"}))
    return op.emitOpError("stream '") << op.getStream() << "' is not forward, backward or comm";
  if (!oneOf(op.getPhase(), {"forward", "backward", "update"}))
    return op.emitOpError("phase '") << op.getPhase() << "' is not forward, backward or update";
  if (op.getGroup() < 0)
    return op.emitOpError("group ") << op.getGroup() << " is negative";
  if (op.getMb() < -1 || op.getLayer() < -1)
    return op.emitOpError("mb and layer must be >= -1 (-1: none)");
  if (auto after = op.getAfterAttr())
    for (int64_t d : after.asArrayRef())
      if (d < 0)
        return op.emitOpError("after index ") << d << " is negative";
  return success();
}

LogicalResult verifyBytes(Operation *op, double bytes) {
  if (!(bytes >= 0))
    return op->emitOpError("bytes must be >= 0");
  return success();
}

LogicalResult verifyPeers(Operation *op, StringRef peers) {
  if (!oneOf(peers, {"all", "same"}))
    return op->emitOpError("peers '") << peers << "' is not all or same";
  return success();
}

// The collectives (all_reduce, reduce_scatter, all_gather) carry peers and a byte count.
template <typename OpT> LogicalResult verifyCollective(OpT op) {
  if (failed(verifyInstr(op)) || failed(verifyPeers(op, op.getPeers())))
    return failure();
  return verifyBytes(op, op.getBytes().convertToDouble());
}

// send and recv carry the same fields as a collective, and a peer group.
template <typename OpT> LogicalResult verifyPointToPoint(OpT op) {
  if (failed(verifyCollective(op)))
    return failure();
  if (op.getPeer() < 0)
    return op.emitOpError("peer group must be >= 0");
  return success();
}

} // namespace

LogicalResult ScheduleOp::verify() {
  if (getKind().empty())
    return emitOpError("needs a kind (afpipe, 1f1b-interleaved, ...)");
  if (getMicroBatches() < 1 || getReplicas() < 1 || getVirtualStages() < 1 ||
      getPipelineStages() < 1)
    return emitOpError("micro_batches, virtual_stages, pipeline_stages and replicas must be >= 1");
  if (getKind() == "afpipe" && getMicroBatches() < getPipelineStages())
    return emitOpError("an AF-Pipe schedule needs at least 2p = ")
           << getPipelineStages() << " micro-batches to fill the ring, got " << getMicroBatches();
  double eff = getComputeEfficiency().convertToDouble();
  if (!(eff > 0 && eff <= 1))
    return emitOpError("compute_efficiency must be in (0, 1]");
  if (!(getCapacityBytes().convertToDouble() >= 0) || !(getModelFlops().convertToDouble() >= 0))
    return emitOpError("capacity_bytes and model_flops must be >= 0");
  if (!oneOf(getGpuSharing(), {"equal", "backward", "exclusive"}))
    return emitOpError("gpu_sharing '")
           << getGpuSharing() << "' is not equal, backward or exclusive";
  for (StringRef key :
       {"peak_flops", "hbm_bandwidth", "hbm_bytes", "nvlink_bandwidth", "nic_bandwidth"})
    if (!getHardware().getAs<FloatAttr>(key))
      return emitOpError("hardware.") << key << " is missing (a float)";
  if (!getHardware().getAs<IntegerAttr>("gpus_per_node"))
    return emitOpError("hardware.gpus_per_node is missing (an integer)");
  llvm::StringSet<> roles;
  for (Operation &op : getBody().front()) {
    if (auto p = dyn_cast<ProgramOp>(op)) {
      if (!roles.insert(p.getRole()).second)
        return p.emitOpError("role '") << p.getRole() << "' has a program already";
    } else if (!isa<GroupOp>(op)) {
      return op.emitOpError("is not an afpipe.group or afpipe.program");
    }
  }
  return success();
}

LogicalResult GroupOp::verify() {
  if (getRole().empty())
    return emitOpError("needs a role");
  if (getIndex() < 0)
    return emitOpError("index must be >= 0");
  if (getRanks().empty())
    return emitOpError("needs ranks for at least one replica");
  int64_t size = -1;
  for (Attribute a : getRanks()) {
    auto replica = dyn_cast<DenseI64ArrayAttr>(a);
    if (!replica)
      return emitOpError("ranks: each replica is an array<i64: ...>");
    if (replica.empty())
      return emitOpError("ranks: a replica without ranks");
    if (size >= 0 && replica.size() != size)
      return emitOpError("ranks: every replica must have the same number of ranks");
    size = replica.size();
    for (int64_t r : replica.asArrayRef())
      if (r < 0)
        return emitOpError("rank ") << r << " is negative";
  }
  if (!(getStaticBytes().convertToDouble() >= 0) || !(getNicBandwidth().convertToDouble() >= 0))
    return emitOpError("static_bytes and nic_bandwidth must be >= 0");
  if (auto logits = getHeadLogitsBytes(); logits && !(logits->convertToDouble() >= 0))
    return emitOpError("head_logits_bytes must be >= 0");
  return success();
}

LogicalResult ProgramOp::verify() {
  // Groups of the schedule, by position (instructions name groups by their index among them).
  std::vector<std::string> groupRoles;
  for (auto g : (*this)->getParentOfType<ScheduleOp>().getBody().front().getOps<GroupOp>())
    groupRoles.push_back(g.getRole().str());
  std::vector<int64_t> groupOf;
  for (Operation &op : getBody().front()) {
    int64_t group = -1;
    if (auto c = dyn_cast<ComputeOp>(op))
      group = c.getGroup();
    else if (auto s = dyn_cast<SendOp>(op))
      group = s.getGroup();
    else if (auto r = dyn_cast<RecvOp>(op))
      group = r.getGroup();
    else if (auto a = dyn_cast<AllToAllOp>(op))
      group = a.getGroup();
    else if (auto a = dyn_cast<AllReduceOp>(op))
      group = a.getGroup();
    else if (auto a = dyn_cast<ReduceScatterOp>(op))
      group = a.getGroup();
    else if (auto a = dyn_cast<AllGatherOp>(op))
      group = a.getGroup();
    else
      return op.emitOpError("is not an afpipe instruction");
    if (group >= static_cast<int64_t>(groupRoles.size()))
      return op.emitOpError("group ")
             << group << " is not a group of the schedule (it has " << groupRoles.size() << ")";
    if (groupRoles[group] != getRole())
      return op.emitOpError("group ") << group << " has role '" << groupRoles[group]
                                      << "', not the program's '" << getRole() << "'";
    groupOf.push_back(group);
  }
  int64_t i = 0;
  for (Operation &op : getBody().front()) {
    auto after = op.getAttrOfType<DenseI64ArrayAttr>("after");
    if (after)
      for (int64_t d : after.asArrayRef()) {
        if (d >= static_cast<int64_t>(groupOf.size()) || d == i)
          return op.emitOpError("after index ")
                 << d << " is not another instruction of this program (it has " << groupOf.size()
                 << ")";
        if (groupOf[d] != groupOf[i])
          return op.emitOpError("after index ")
                 << d << " is an instruction of group " << groupOf[d]
                 << ", not of this instruction's group " << groupOf[i];
      }
    ++i;
  }
  return success();
}

LogicalResult ComputeOp::verify() {
  if (failed(verifyInstr(*this)))
    return failure();
  if (getStream() == "comm")
    return emitOpError("compute runs on the forward or backward stream, not comm");
  if (!(getFlops().convertToDouble() >= 0) || !(getMemBytes().convertToDouble() >= 0) ||
      !(getActivationBytes().convertToDouble() >= 0))
    return emitOpError("flops, mem_bytes and activation_bytes must be >= 0");
  return success();
}

LogicalResult SendOp::verify() { return verifyPointToPoint(*this); }

LogicalResult RecvOp::verify() { return verifyPointToPoint(*this); }

LogicalResult AllToAllOp::verify() {
  if (failed(verifyInstr(*this)))
    return failure();
  return verifyBytes(*this, getBytes().convertToDouble());
}

LogicalResult AllReduceOp::verify() { return verifyCollective(*this); }

LogicalResult ReduceScatterOp::verify() { return verifyCollective(*this); }

LogicalResult AllGatherOp::verify() { return verifyCollective(*this); }
