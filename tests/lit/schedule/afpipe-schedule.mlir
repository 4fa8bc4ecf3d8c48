// afpipe-schedule: the AF-Pipe schedule of a placed module as `afpipe` IR (2 MoE layers, p = 2
// groups per side of one rank each: the ring A0 -> F0 -> A1 -> F1, v = L/p = 1).
// RUN: disagmoe-opt --partition-components --assign-groups=p=2 --fuse-exchange --place-groups="attn-ranks=1 ffn-ranks=1" --afpipe-schedule --afpipe-verify %inputs/raised-2layer.mlir > %t.mlir
// RUN: FileCheck %s < %t.mlir
// CHECK: afpipe.schedule "afpipe" micro_batches 4 virtual_stages 1 pipeline_stages 4 replicas 1 capacity_bytes 7.600000e+10
// CHECK-SAME: name = "h800-1x8"
// CHECK-NEXT: afpipe.group "attention" 0 ranks [array<i64: 0>]
// CHECK-NEXT: afpipe.group "attention" 1 ranks [array<i64: 1>]
// CHECK-NEXT: afpipe.group "ffn" 0 ranks [array<i64: 2>]
// CHECK-NEXT: afpipe.group "ffn" 1 ranks [array<i64: 3>]
// CHECK-NEXT: afpipe.program "attention" {
// CHECK: afpipe.program "ffn" {

// Explicit forward and backward instructions per component and micro-batch: m = 2p = 4
// micro-batches x L = 2 layers for attention and experts, m for the head.
// RUN: grep -c 'afpipe.compute "attention" on "forward" "forward"' %t.mlir | FileCheck %s --check-prefix=EIGHT
// RUN: grep -c 'afpipe.compute "attention" on "backward" "backward"' %t.mlir | FileCheck %s --check-prefix=EIGHT
// RUN: grep -c 'afpipe.compute "experts" on "forward" "forward"' %t.mlir | FileCheck %s --check-prefix=EIGHT
// RUN: grep -c 'afpipe.compute "experts" on "backward" "backward"' %t.mlir | FileCheck %s --check-prefix=EIGHT
// RUN: grep -c 'afpipe.compute "head" on "forward" "forward"' %t.mlir | FileCheck %s --check-prefix=FOUR
// RUN: grep -c 'afpipe.compute "head" on "backward" "backward"' %t.mlir | FileCheck %s --check-prefix=FOUR
// EIGHT: {{^8$}}
// FOUR: {{^4$}}
// Gradient all-reduce per layer and the optimizer step of each of the 4 groups.
// RUN: grep -c 'afpipe.compute "optimizer" on "forward" "update"' %t.mlir | FileCheck %s --check-prefix=FOUR

// The printed schedule parses back and verifies again.
// RUN: disagmoe-opt --afpipe-verify %t.mlir | FileCheck %s

// Options: more micro-batches, another cluster; too few micro-batches and an unplaced module are errors.
// RUN: disagmoe-opt --partition-components --assign-groups=p=2 --fuse-exchange --place-groups="attn-ranks=1 ffn-ranks=1" --afpipe-schedule="micro-batches=6 cluster=%samples/clusters/h100-16x8.yaml" %inputs/raised-2layer.mlir | FileCheck %s --check-prefix=OPTS
// OPTS: afpipe.schedule "afpipe" micro_batches 6 {{.*}} name = "h100-16x8"
// RUN: not disagmoe-opt --partition-components --assign-groups=p=2 --fuse-exchange --place-groups="attn-ranks=1 ffn-ranks=1" --afpipe-schedule="micro-batches=3" %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=FEW
// FEW: error: afpipe-schedule: micro-batches 3 cannot fill the AF-Pipe ring of 2p = 4 stages
// RUN: not disagmoe-opt --afpipe-schedule %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=UNPLACED
// UNPLACED: error: afpipe-schedule: module has no 'moe.placement' attribute (run place-groups first)
