// RUN: disagmoe-opt --partition-components --assign-groups=p=2 %inputs/raised-2layer.mlir | FileCheck %s --check-prefix=P2
// RUN: disagmoe-opt --partition-components --assign-groups %inputs/raised-2layer.mlir | FileCheck %s --check-prefix=P1
// RUN: not disagmoe-opt --partition-components --assign-groups=p=3 %inputs/raised-2layer.mlir 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: disagmoe-opt --assign-groups=p=2 %inputs/assign-groups-unpartitioned.mlir -verify-diagnostics
// Interleaved layer assignment: layer l on group l mod p of each side; embedding with layer 0, head
// where layer L-1's output arrives (group L mod p).

// P2: module attributes {moe.num_groups = 2 : i64}
// P2: moe.stage "embedding" layer 0 group 0
// P2: moe.stage "attention" layer 0 group 0
// P2: moe.stage "ffn" layer 0 group 0
// P2: moe.stage "attention" layer 1 group 1
// P2: moe.stage "ffn" layer 1 group 1
// P2: moe.stage "head" layer 2 group 0

// P1: module attributes {moe.num_groups = 1 : i64}
// P1-NOT: group 1
// P1: moe.stage "head" layer 2 group 0

// ERR: error: assign-groups: p = 3 does not divide the 2 layers
