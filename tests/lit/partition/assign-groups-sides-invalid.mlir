// RUN: disagmoe-opt --assign-groups="dense-side=gpu" %s -split-input-file -verify-diagnostics
// RUN: not disagmoe-opt --assign-groups="shared-experts-side=FFN" %s -split-input-file 2>&1 | FileCheck %s
// RUN: not disagmoe-opt --assign-groups="head-side=F" %s -split-input-file 2>&1 | FileCheck %s --check-prefix=HEAD
// A side that is neither attention nor ffn is rejected, naming the option and the value.
// CHECK: error: assign-groups: shared-experts-side must be attention or ffn, got 'FFN'
// HEAD: error: assign-groups: head-side must be attention or ffn, got 'F'

// expected-error @+1 {{assign-groups: dense-side must be attention or ffn, got 'gpu'}}
module {
  func.func @f(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
    %0 = moe.stage "attention" layer 0(%x) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
    ^bb0(%a: tensor<1x2x4xf32>):
      moe.yield %a : tensor<1x2x4xf32>
    }
    return %0 : tensor<1x2x4xf32>
  }
}

// -----

// The dense_ffn verifier rejects any other value of the attribute itself.
module {
  func.func @g(%x: tensor<1x2x4xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>) -> tensor<1x2x4xf32> {
    // expected-error @+1 {{attribute 'side' must be attention or ffn, got 'head'}}
    %d = moe.dense_ffn %x w1(%w1) w3(%w1) w2(%w2) {ffn_hidden = 3 : i64, layer = 0 : i64, role = "dense", side = "head"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
    return %d : tensor<1x2x4xf32>
  }
}

// -----

// `on` belongs to embedding and head stages only, and names a side.
module {
  func.func @h(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
    // expected-error @+1 {{attribute 'on' is only for embedding and head stages, not 'attention'}}
    %0 = moe.stage "attention" layer 0 on "ffn"(%x) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
    ^bb0(%a: tensor<1x2x4xf32>):
      moe.yield %a : tensor<1x2x4xf32>
    }
    return %0 : tensor<1x2x4xf32>
  }
}

// -----

module {
  func.func @i(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
    // expected-error @+1 {{attribute 'on' must be attention or ffn, got 'gpu'}}
    %0 = moe.stage "head" layer 1 on "gpu"(%x) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
    ^bb0(%a: tensor<1x2x4xf32>):
      moe.yield %a : tensor<1x2x4xf32>
    }
    return %0 : tensor<1x2x4xf32>
  }
}
