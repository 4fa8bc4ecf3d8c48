// RUN: disagmoe-opt --partition-components --assign-groups=p=1 --fuse-exchange %inputs/raised-2layer.mlir | FileCheck %s --check-prefix=P1
// RUN: disagmoe-opt --partition-components --assign-groups=p=2 --fuse-exchange %inputs/raised-2layer.mlir | FileCheck %s --check-prefix=P2
// RUN: not disagmoe-opt --partition-components --fuse-exchange %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: disagmoe-opt --fuse-exchange %s -split-input-file -verify-diagnostics
// Dispatch becomes moe.m2n into the FFN stage; combine becomes moe.n2m plus the residual route
// into the next layer's attention group (l+1) mod p (docs/architecture.md, "Exchanges").

// P1: module attributes {moe.num_groups = 1 : i64}
// P1: %[[A0:.*]]:4 = moe.stage "attention" layer 0
// P1: %[[X:.*]], %[[I:.*]], %[[G:.*]] = moe.m2n %[[A0]]#1, %[[A0]]#2, %[[A0]]#3 {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64}
// P1: %[[F0:.*]] = moe.stage "ffn" layer 0 group 0(%[[X]], %[[I]], %[[G]])
// P1: %[[Y:.*]] = moe.n2m %[[F0]] {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64}
// P1: %[[R:.*]] = moe.residual %[[A0]]#0 {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64}
// P1: moe.stage "attention" layer 1 group 0(%[[R]], %[[Y]])
// P1: moe.m2n {{.*}} {dst_group = 0 : i64, layer = 1 : i64, src_group = 0 : i64}
// P1: %[[Y1:.*]] = moe.n2m {{.*}} {dst_group = 0 : i64, layer = 1 : i64, src_group = 0 : i64}
// P1: %[[R1:.*]] = moe.residual {{.*}} {dst_group = 0 : i64, layer = 1 : i64, src_group = 0 : i64}
// P1: moe.stage "head" layer 2 group 0 on "attention"(%[[R1]], %[[Y1]])

// Interleaved layers: layer 0 on group 0, layer 1 on group 1; the exchanges after layer 1 return
// to group 0, where the head runs.
// P2: module attributes {moe.num_groups = 2 : i64}
// P2: moe.m2n {{.*}} {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64}
// P2: moe.n2m {{.*}} {dst_group = 1 : i64, layer = 0 : i64, src_group = 0 : i64}
// P2: moe.residual {{.*}} {dst_group = 1 : i64, layer = 0 : i64, src_group = 0 : i64}
// P2: moe.m2n {{.*}} {dst_group = 1 : i64, layer = 1 : i64, src_group = 1 : i64}
// P2: moe.n2m {{.*}} {dst_group = 0 : i64, layer = 1 : i64, src_group = 1 : i64}
// P2: moe.residual {{.*}} {dst_group = 0 : i64, layer = 1 : i64, src_group = 1 : i64}

// ERR: error: fuse-exchange: embedding stage of layer 0 has no group; run assign-groups first

// -----

// expected-error @+1 {{fuse-exchange: no moe.stage ops; run partition-components first}}
func.func @unpartitioned(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
