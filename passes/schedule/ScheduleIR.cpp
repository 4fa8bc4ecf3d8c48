//===- ScheduleIR.cpp - runtime/plan/Schedule.h <-> the `afpipe` dialect --===//
#include "passes/schedule/ScheduleIR.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <regex>

namespace disagmoe::afpipe {
using namespace mlir;

namespace {
llvm::Error fail(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

FloatAttr f64(OpBuilder &b, double v) { return b.getF64FloatAttr(v); }
IntegerAttr i64(OpBuilder &b, int64_t v) { return b.getI64IntegerAttr(v); }

const char *sharingName(sched::Schedule::Sharing s) {
  switch (s) {
  case sched::Schedule::Sharing::Equal:
    return "equal";
  case sched::Schedule::Sharing::Backward:
    return "backward";
  case sched::Schedule::Sharing::Exclusive:
    return "exclusive";
  }
  return "equal";
}

template <typename E>
bool parseEnum(StringRef s, E &out, std::initializer_list<std::pair<const char *, E>> names) {
  for (auto [n, v] : names)
    if (s == n) {
      out = v;
      return true;
    }
  return false;
}

/// Common fields of an instruction op into `in`.
template <typename OpT> void readCommon(OpT op, sched::Instr &in) {
  using namespace sched;
  in.op = op.getLabel().str();
  parseEnum<Stream>(
      op.getStream(), in.stream,
      {{"forward", Stream::Forward}, {"backward", Stream::Backward}, {"comm", Stream::Comm}});
  parseEnum<Phase>(
      op.getPhase(), in.phase,
      {{"forward", Phase::Forward}, {"backward", Phase::Backward}, {"update", Phase::Update}});
  in.group = static_cast<int>(op.getGroup());
  in.mb = static_cast<int>(op.getMb());
  in.layer = static_cast<int>(op.getLayer());
  if (auto after = op.getAfterAttr())
    for (int64_t d : after.asArrayRef())
      in.after.push_back(static_cast<int>(d));
}

sched::Peers peersOf(StringRef s) { return s == "same" ? sched::Peers::Same : sched::Peers::All; }

} // namespace

ScheduleOp buildScheduleOp(OpBuilder &b, Location loc, const sched::Schedule &s) {
  NamedAttrList hw;
  hw.append("name", b.getStringAttr(s.hw.name));
  hw.append("peak_flops", f64(b, s.hw.peakFlops));
  hw.append("hbm_bandwidth", f64(b, s.hw.hbmBandwidth));
  hw.append("hbm_bytes", f64(b, s.hw.hbmBytes));
  hw.append("nvlink_bandwidth", f64(b, s.hw.nvlinkBandwidth));
  hw.append("nic_bandwidth", f64(b, s.hw.nicBandwidth));
  hw.append("gpus_per_node", i64(b, s.hw.gpusPerNode));
  auto op = b.create<ScheduleOp>(
      loc, b.getStringAttr(s.kind), i64(b, s.microBatches), i64(b, s.virtualStages),
      i64(b, s.pipelineStages), i64(b, s.replicas), f64(b, s.capacityBytes), f64(b, s.modelFlops),
      f64(b, s.computeEfficiency), b.getStringAttr(sharingName(s.sharing)),
      hw.getDictionary(b.getContext()));
  OpBuilder::InsertionGuard guard(b); // createBlock moves the insertion point into the block
  b.setInsertionPointToEnd(b.createBlock(&op.getBody()));
  for (const sched::Group &g : s.groups) {
    SmallVector<Attribute> replicas;
    for (const std::vector<int> &r : g.ranks)
      replicas.push_back(b.getDenseI64ArrayAttr(SmallVector<int64_t>(r.begin(), r.end())));
    auto group =
        b.create<GroupOp>(loc, b.getStringAttr(g.role), i64(b, g.index), b.getArrayAttr(replicas),
                          f64(b, g.staticBytes), f64(b, g.nicBandwidth), FloatAttr());
    if (g.headLogitsBytes > 0)
      group.setHeadLogitsBytesAttr(f64(b, g.headLogitsBytes));
  }
  for (const sched::Program &p : s.programs) {
    auto prog = b.create<ProgramOp>(loc, b.getStringAttr(p.role));
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToEnd(b.createBlock(&prog.getBody()));
    for (const sched::Instr &in : p.instrs) {
      StringAttr label = b.getStringAttr(in.op),
                 stream = b.getStringAttr(sched::toString(in.stream)),
                 phase = b.getStringAttr(sched::toString(in.phase));
      IntegerAttr group = i64(b, in.group), mb = i64(b, in.mb), layer = i64(b, in.layer);
      DenseI64ArrayAttr after =
          in.after.empty()
              ? nullptr
              : b.getDenseI64ArrayAttr(SmallVector<int64_t>(in.after.begin(), in.after.end()));
      switch (in.kind) {
      case sched::Kind::Compute:
        b.create<ComputeOp>(loc, label, stream, phase, group, mb, layer, f64(b, in.flops),
                            f64(b, in.memBytes), f64(b, in.activationBytes), after);
        break;
      case sched::Kind::Send:
        b.create<SendOp>(loc, label, stream, phase, group, mb, layer, i64(b, in.peer),
                         b.getStringAttr(sched::toString(in.peers)), f64(b, in.bytes), after);
        break;
      case sched::Kind::Recv:
        b.create<RecvOp>(loc, label, stream, phase, group, mb, layer, i64(b, in.peer),
                         b.getStringAttr(sched::toString(in.peers)), f64(b, in.bytes), after);
        break;
      case sched::Kind::AllToAll:
        b.create<AllToAllOp>(loc, label, stream, phase, group, mb, layer, f64(b, in.bytes), after);
        break;
      case sched::Kind::AllReduce:
        b.create<AllReduceOp>(loc, label, stream, phase, group, mb, layer,
                              b.getStringAttr(sched::toString(in.peers)), f64(b, in.bytes), after);
        break;
      case sched::Kind::ReduceScatter:
        b.create<ReduceScatterOp>(loc, label, stream, phase, group, mb, layer,
                                  b.getStringAttr(sched::toString(in.peers)), f64(b, in.bytes),
                                  after);
        break;
      case sched::Kind::AllGather:
        b.create<AllGatherOp>(loc, label, stream, phase, group, mb, layer,
                              b.getStringAttr(sched::toString(in.peers)), f64(b, in.bytes), after);
        break;
      }
    }
  }
  return op;
}

llvm::Error readScheduleOp(ScheduleOp op, sched::Schedule &s) {
  s = sched::Schedule();
  s.kind = op.getKind().str();
  s.microBatches = static_cast<int>(op.getMicroBatches());
  s.virtualStages = static_cast<int>(op.getVirtualStages());
  s.pipelineStages = static_cast<int>(op.getPipelineStages());
  s.replicas = static_cast<int>(op.getReplicas());
  s.capacityBytes = op.getCapacityBytes().convertToDouble();
  s.modelFlops = op.getModelFlops().convertToDouble();
  s.computeEfficiency = op.getComputeEfficiency().convertToDouble();
  parseEnum<sched::Schedule::Sharing>(op.getGpuSharing(), s.sharing,
                                      {{"equal", sched::Schedule::Sharing::Equal},
                                       {"backward", sched::Schedule::Sharing::Backward},
                                       {"exclusive", sched::Schedule::Sharing::Exclusive}});
  DictionaryAttr hw = op.getHardware();
  if (auto name = hw.getAs<StringAttr>("name"))
    s.hw.name = name.str();
  s.hw.peakFlops = hw.getAs<FloatAttr>("peak_flops").getValueAsDouble();
  s.hw.hbmBandwidth = hw.getAs<FloatAttr>("hbm_bandwidth").getValueAsDouble();
  s.hw.hbmBytes = hw.getAs<FloatAttr>("hbm_bytes").getValueAsDouble();
  s.hw.nvlinkBandwidth = hw.getAs<FloatAttr>("nvlink_bandwidth").getValueAsDouble();
  s.hw.nicBandwidth = hw.getAs<FloatAttr>("nic_bandwidth").getValueAsDouble();
  s.hw.gpusPerNode = static_cast<int>(hw.getAs<IntegerAttr>("gpus_per_node").getInt());
  for (Operation &o : op.getBody().front()) {
    if (auto g = dyn_cast<GroupOp>(o)) {
      sched::Group group;
      group.role = g.getRole().str();
      group.index = static_cast<int>(g.getIndex());
      for (Attribute a : g.getRanks()) {
        auto r = cast<DenseI64ArrayAttr>(a).asArrayRef();
        group.ranks.emplace_back(r.begin(), r.end());
      }
      group.staticBytes = g.getStaticBytes().convertToDouble();
      group.nicBandwidth = g.getNicBandwidth().convertToDouble();
      if (auto logits = g.getHeadLogitsBytes())
        group.headLogitsBytes = logits->convertToDouble();
      s.groups.push_back(std::move(group));
      continue;
    }
    auto p = dyn_cast<ProgramOp>(o);
    if (!p)
      return fail("afpipe.schedule holds an op that is neither a group nor a program");
    sched::Program prog;
    prog.role = p.getRole().str();
    for (Operation &io : p.getBody().front()) {
      sched::Instr in;
      if (auto c = dyn_cast<ComputeOp>(io)) {
        readCommon(c, in);
        in.kind = sched::Kind::Compute;
        in.flops = c.getFlops().convertToDouble();
        in.memBytes = c.getMemBytes().convertToDouble();
        in.activationBytes = c.getActivationBytes().convertToDouble();
      } else if (auto x = dyn_cast<SendOp>(io)) {
        readCommon(x, in);
        in.kind = sched::Kind::Send;
        in.peer = static_cast<int>(x.getPeer());
        in.peers = peersOf(x.getPeers());
        in.bytes = x.getBytes().convertToDouble();
      } else if (auto x = dyn_cast<RecvOp>(io)) {
        readCommon(x, in);
        in.kind = sched::Kind::Recv;
        in.peer = static_cast<int>(x.getPeer());
        in.peers = peersOf(x.getPeers());
        in.bytes = x.getBytes().convertToDouble();
      } else if (auto x = dyn_cast<AllToAllOp>(io)) {
        readCommon(x, in);
        in.kind = sched::Kind::AllToAll;
        in.bytes = x.getBytes().convertToDouble();
      } else if (auto x = dyn_cast<AllReduceOp>(io)) {
        readCommon(x, in);
        in.kind = sched::Kind::AllReduce;
        in.peers = peersOf(x.getPeers());
        in.bytes = x.getBytes().convertToDouble();
      } else if (auto x = dyn_cast<ReduceScatterOp>(io)) {
        readCommon(x, in);
        in.kind = sched::Kind::ReduceScatter;
        in.peers = peersOf(x.getPeers());
        in.bytes = x.getBytes().convertToDouble();
      } else if (auto x = dyn_cast<AllGatherOp>(io)) {
        readCommon(x, in);
        in.kind = sched::Kind::AllGather;
        in.peers = peersOf(x.getPeers());
        in.bytes = x.getBytes().convertToDouble();
      } else {
        return fail("afpipe.program \"" + prog.role + "\" holds a non-instruction op");
      }
      prog.instrs.push_back(std::move(in));
    }
    s.programs.push_back(std::move(prog));
  }
  return llvm::Error::success();
}

Operation *instructionNamedIn(ScheduleOp op, const std::string &message) {
  // describe() writes "<role>[<index>] (group ...)"; the first such name is the instruction at
  // fault.
  static const std::regex name(R"(([A-Za-z_]+)\[([0-9]+)\] \(group )");
  std::smatch m;
  if (!std::regex_search(message, m, name))
    return nullptr;
  const std::string role = m[1].str();
  const long index = std::stol(m[2].str());
  for (auto p : op.getBody().front().getOps<ProgramOp>()) {
    if (p.getRole() != role)
      continue;
    long i = 0;
    for (Operation &io : p.getBody().front())
      if (i++ == index)
        return &io;
  }
  return nullptr;
}

} // namespace disagmoe::afpipe
