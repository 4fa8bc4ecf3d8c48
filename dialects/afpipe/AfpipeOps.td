//===- AfpipeOps.td - the `afpipe` dialect: pipeline schedules as IR -*- tablegen -*-===//
//
// The AF-Pipe training schedule (and the baselines' schedules) as IR: one `afpipe.schedule` holds
// the groups of ranks and, per group role, an `afpipe.program` of instructions on three streams
// (forward compute, backward compute, communication), parametrised by group (every rank of a group
// runs the group's instructions; every pipeline replica runs the same groups). It mirrors
// runtime/plan/Schedule.h one to one (passes/schedule/ScheduleIR.h converts both ways), so the
// verifier and the simulator stay plain C++ and the plan's `schedule` section is this IR in JSON
// (docs/plan-format.md, "schedule"; docs/architecture.md, "The plan and the executor").
//
// Units: FLOPs and bytes per rank (per rank pair for send/recv/all_to_all), bytes/s, FLOP/s.
//
//===----------------------------------------------------------------------===//

#ifndef DISAGMOE_AFPIPE_OPS
#define DISAGMOE_AFPIPE_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Afpipe_Dialect : Dialect {
  let name = "afpipe";
  let summary = "pipeline schedules: groups, per-role programs, instructions on three streams";
  let cppNamespace = "::disagmoe::afpipe";
}

def Afpipe_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t", "64-bit integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

class Afpipe_Op<string mnemonic, list<Trait> traits = []> : Op<Afpipe_Dialect, mnemonic, traits>;

def Afpipe_ScheduleOp : Afpipe_Op<"schedule", [NoTerminator, SingleBlock, NoRegionArguments]> {
  let summary = "a pipeline schedule: its groups, then one program per group role";
  let description = [{
    `kind` is `afpipe`, `1f1b-interleaved`, `1f1b-interleaved-overlap` or `dualpipe`;
    `pipeline_stages` is 2p for AF-Pipe (the ring A0 -> F0 -> ... -> F(p-1)), and an AF-Pipe
    schedule needs at least that many micro-batches to fill the ring. `hardware` holds the machine
    it was compiled for (`name`, `peak_flops`, `hbm_bandwidth`, `hbm_bytes`, `nvlink_bandwidth`,
    `nic_bandwidth`, `gpus_per_node`); `gpu_sharing` is `equal`, `backward` or `exclusive`.

    ```mlir
    afpipe.schedule "afpipe" micro_batches 4 virtual_stages 2 pipeline_stages 4 replicas 1
        capacity_bytes 7.6e10 model_flops 1.0e8 hardware {...} {
      afpipe.group "attention" 0 ranks [[0, 1]] static_bytes 1.0e6
      afpipe.program "attention" { ... }
    }
    ```
  }];
  let arguments = (ins StrAttr:$kind, Afpipe_I64Attr:$micro_batches, Afpipe_I64Attr:$virtual_stages,
                       Afpipe_I64Attr:$pipeline_stages, Afpipe_I64Attr:$replicas, F64Attr:$capacity_bytes,
                       F64Attr:$model_flops, F64Attr:$compute_efficiency, StrAttr:$gpu_sharing,
                       DictionaryAttr:$hardware);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind `micro_batches` $micro_batches `virtual_stages` $virtual_stages `pipeline_stages` $pipeline_stages
    `replicas` $replicas `capacity_bytes` $capacity_bytes `model_flops` $model_flops
    `compute_efficiency` $compute_efficiency `gpu_sharing` $gpu_sharing `hardware` $hardware
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def Afpipe_GroupOp : Afpipe_Op<"group", [HasParent<"ScheduleOp">]> {
  let summary = "a group of ranks: ranks[replica][i] is the global rank at position i";
  // head_logits_bytes (only on the group running the head): its logits of one micro-batch, apart
  // from static_bytes (weights, gradients and optimizer state), runtime/plan/Schedule.h.
  let arguments = (ins StrAttr:$role, Afpipe_I64Attr:$index, ArrayAttr:$ranks, F64Attr:$static_bytes,
                       F64Attr:$nic_bandwidth, OptionalAttr<F64Attr>:$head_logits_bytes);
  let assemblyFormat = [{
    $role $index `ranks` $ranks `static_bytes` $static_bytes `nic_bandwidth` $nic_bandwidth
    (`head_logits_bytes` $head_logits_bytes^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Afpipe_ProgramOp : Afpipe_Op<"program", [HasParent<"ScheduleOp">, NoTerminator, SingleBlock,
                                             NoRegionArguments]> {
  let summary = "the instructions of one group role, in stream order per group";
  let description = [{
    Instruction `after` lists index instructions of this program (0-based, in program order) of
    the same group, which must complete before the instruction starts.
  }];
  let arguments = (ins StrAttr:$role);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$role attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

// Fields shared by every instruction: the stream it runs on, the phase it belongs to, the op name,
// the group (index into the schedule's groups, which must have the program's role), micro-batch and
// layer (-1: none), and its dependencies.
class Afpipe_InstrOp<string mnemonic, string summaryText, dag extra, string extraFormat>
    : Afpipe_Op<mnemonic, [HasParent<"ProgramOp">]> {
  let summary = summaryText;
  let arguments = !con((ins StrAttr:$label, StrAttr:$stream, StrAttr:$phase, Afpipe_I64Attr:$group,
                            Afpipe_I64Attr:$mb, Afpipe_I64Attr:$layer), extra,
                       (ins OptionalAttr<DenseI64ArrayAttr>:$after));
  let assemblyFormat = "$label `on` $stream $phase `group` $group `mb` $mb `layer` $layer " # extraFormat #
                       " (`after` $after^)? attr-dict";
  let hasVerifier = 1;
}

def Afpipe_ComputeOp : Afpipe_InstrOp<"compute",
    "compute on a compute stream: time = max(flops / (peak x efficiency), mem_bytes / HBM bandwidth)",
    (ins F64Attr:$flops, F64Attr:$mem_bytes, F64Attr:$activation_bytes),
    "`flops` $flops `mem_bytes` $mem_bytes `activation_bytes` $activation_bytes">;

def Afpipe_SendOp : Afpipe_InstrOp<"send",
    "send to the ranks of group `peer` (`all`: every rank; `same`: rank i to rank i), bytes per rank pair",
    (ins Afpipe_I64Attr:$peer, StrAttr:$peers, F64Attr:$bytes),
    "`to` $peer $peers `bytes` $bytes">;

def Afpipe_RecvOp : Afpipe_InstrOp<"recv",
    "receive from the ranks of group `peer`, in the order the peer sends; bytes per rank pair",
    (ins Afpipe_I64Attr:$peer, StrAttr:$peers, F64Attr:$bytes),
    "`from` $peer $peers `bytes` $bytes">;

def Afpipe_AllToAllOp : Afpipe_InstrOp<"all_to_all",
    "every rank of the group to every other rank of it; bytes per rank pair",
    (ins F64Attr:$bytes), "`bytes` $bytes">;

def Afpipe_AllReduceOp : Afpipe_InstrOp<"all_reduce",
    "ring all-reduce of bytes per rank over the group's ranks in every replica (`all`) or rank i of every replica (`same`)",
    (ins StrAttr:$peers, F64Attr:$bytes), "$peers `bytes` $bytes">;

def Afpipe_ReduceScatterOp : Afpipe_InstrOp<"reduce_scatter",
    "reduce-scatter of bytes per rank (each member keeps its reduced 1/n) over the same members as all_reduce",
    (ins StrAttr:$peers, F64Attr:$bytes), "$peers `bytes` $bytes">;

def Afpipe_AllGatherOp : Afpipe_InstrOp<"all_gather",
    "all-gather to bytes per rank (each member contributes 1/n) over the same members as all_reduce",
    (ins StrAttr:$peers, F64Attr:$bytes), "$peers `bytes` $bytes">;

#endif // DISAGMOE_AFPIPE_OPS
