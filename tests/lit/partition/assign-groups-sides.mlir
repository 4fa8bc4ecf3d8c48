// RUN: disagmoe-opt --assign-groups %s -split-input-file | FileCheck %s --check-prefix=DEFAULT
// RUN: disagmoe-opt --assign-groups="p=2 dense-side=ffn" %s -split-input-file | FileCheck %s --check-prefix=DENSE
// RUN: disagmoe-opt --assign-groups="shared-experts-side=ffn" %s -split-input-file | FileCheck %s --check-prefix=SHARED
// RUN: disagmoe-opt --assign-groups="dense-side=ffn shared-experts-side=ffn" %s -split-input-file | FileCheck %s --check-prefix=BOTH
// RUN: disagmoe-opt --assign-groups="dense-side=attention shared-experts-side=attention" %s -split-input-file | FileCheck %s --check-prefix=DEFAULT
// RUN: disagmoe-opt --assign-groups="p=2 embedding-side=ffn head-side=ffn" %s -split-input-file | FileCheck %s --check-prefix=EDGES
// RUN: disagmoe-opt --assign-groups="head-side=ffn" %s -split-input-file | FileCheck %s --check-prefix=HEAD
// assign-groups says on which side each always-on FFN runs: moe.dense_ffn gets `side`, from
// dense-side (role "dense") and shared-experts-side (role "shared"); default: attention. The op
// stays in its attention stage; the attribute is what plan emission reads. The embedding and head
// stages get `on` (embedding-side, head-side; default attention): the group of that index on
// that side runs them.

// A dense layer 0 and an MoE layer 1 with shared experts (stages only; the weights are inputs).
func.func @dense_then_shared(%x: tensor<1x2x4xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>) -> tensor<1x2x4xf32> {
  %0 = moe.stage "attention" layer 0(%x, %w1, %w2) : (tensor<1x2x4xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<3x4xf32>):
    %d = moe.dense_ffn %a w1(%b) w3(%b) w2(%c) {ffn_hidden = 3 : i64, layer = 0 : i64, role = "dense"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
    moe.yield %d : tensor<1x2x4xf32>
  }
  %1 = moe.stage "attention" layer 1(%0, %w1, %w2) : (tensor<1x2x4xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<3x4xf32>):
    %s = moe.dense_ffn %a w1(%b) w3(%b) w2(%c) {ffn_hidden = 3 : i64, layer = 1 : i64, num_shared_experts = 1 : i64, role = "shared"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
    moe.yield %s : tensor<1x2x4xf32>
  }
  return %1 : tensor<1x2x4xf32>
}
// DEFAULT-LABEL: func.func @dense_then_shared
// DEFAULT: moe.stage "attention" layer 0 group 0
// DEFAULT: moe.dense_ffn {{.*}}layer = 0 : i64, role = "dense", side = "attention"}
// DEFAULT: moe.stage "attention" layer 1 group 0
// DEFAULT: moe.dense_ffn {{.*}}layer = 1 : i64, num_shared_experts = 1 : i64, role = "shared", side = "attention"}

// DENSE-LABEL: func.func @dense_then_shared
// DENSE: moe.stage "attention" layer 0 group 0
// DENSE: moe.dense_ffn {{.*}}role = "dense", side = "ffn"}
// DENSE: moe.stage "attention" layer 1 group 1
// DENSE: moe.dense_ffn {{.*}}role = "shared", side = "attention"}

// SHARED-LABEL: func.func @dense_then_shared
// SHARED: moe.dense_ffn {{.*}}role = "dense", side = "attention"}
// SHARED: moe.dense_ffn {{.*}}role = "shared", side = "ffn"}

// BOTH-LABEL: func.func @dense_then_shared
// BOTH: moe.dense_ffn {{.*}}role = "dense", side = "ffn"}
// BOTH: moe.dense_ffn {{.*}}role = "shared", side = "ffn"}

// -----

// A model without always-on FFNs: the options change nothing but are still accepted.
func.func @no_dense(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %0 = moe.stage "attention" layer 0(%x) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2x4xf32>):
    moe.yield %a : tensor<1x2x4xf32>
  }
  %1 = moe.stage "attention" layer 1(%0) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2x4xf32>):
    moe.yield %a : tensor<1x2x4xf32>
  }
  return %1 : tensor<1x2x4xf32>
}
// DEFAULT-LABEL: func.func @no_dense
// DEFAULT-NOT: side =
// DENSE-LABEL: func.func @no_dense
// DENSE: moe.stage "attention" layer 1 group 1
// DENSE-NOT: side =

// -----

// Embedding and head stages around two layers.
func.func @edges(%ids: tensor<1x2xi64>, %w: tensor<8x4xf32>) -> tensor<1x2x4xf32> {
  %0 = moe.stage "embedding" layer 0(%ids, %w) : (tensor<1x2xi64>, tensor<8x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2xi64>, %b: tensor<8x4xf32>):
    %e = moe.embedding %a, %b : tensor<1x2xi64>, tensor<8x4xf32> -> tensor<1x2x4xf32>
    moe.yield %e : tensor<1x2x4xf32>
  }
  %1 = moe.stage "attention" layer 0(%0) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2x4xf32>):
    moe.yield %a : tensor<1x2x4xf32>
  }
  %2 = moe.stage "attention" layer 1(%1) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2x4xf32>):
    moe.yield %a : tensor<1x2x4xf32>
  }
  %3 = moe.stage "head" layer 2(%2) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2x4xf32>):
    moe.yield %a : tensor<1x2x4xf32>
  }
  return %3 : tensor<1x2x4xf32>
}
// DEFAULT-LABEL: func.func @edges
// DEFAULT: moe.stage "embedding" layer 0 group 0 on "attention"(
// DEFAULT: moe.stage "attention" layer 0 group 0(
// DEFAULT: moe.stage "head" layer 2 group 0 on "attention"(

// EDGES-LABEL: func.func @edges
// EDGES: moe.stage "embedding" layer 0 group 0 on "ffn"(
// EDGES: moe.stage "attention" layer 1 group 1(
// EDGES: moe.stage "head" layer 2 group 0 on "ffn"(

// HEAD-LABEL: func.func @edges
// HEAD: moe.stage "embedding" layer 0 group 0 on "attention"(
// HEAD: moe.stage "head" layer 2 group 0 on "ffn"(
