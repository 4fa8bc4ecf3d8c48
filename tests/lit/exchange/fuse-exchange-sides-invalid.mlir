// RUN: disagmoe-opt --fuse-exchange %s -split-input-file -verify-diagnostics
// FFN-side always-on FFNs and heads that fuse-exchange cannot move say why.

func.func @no_residual_add(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %0 = moe.stage "attention" layer 0 group 0(%x) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2x4xf32>):
    %w1 = onnx.weight "w1" {file = "m.onnx", offset = 0 : i64, length = 48 : i64} : tensor<4x3xf32>
    %w2 = onnx.weight "w2" {file = "m.onnx", offset = 48 : i64, length = 48 : i64} : tensor<3x4xf32>
    // expected-error @+1 {{fuse-exchange: the FFN-side dense_ffn of layer 0 must feed one residual add that its attention stage yields}}
    %d = moe.dense_ffn %a w1(%w1) w3(%w1) w2(%w2) {ffn_hidden = 3 : i64, layer = 0 : i64, role = "dense", side = "ffn"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
    moe.yield %d : tensor<1x2x4xf32>
  }
  %1 = moe.stage "head" layer 1 group 0 on "attention"(%0) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%b: tensor<1x2x4xf32>):
    moe.yield %b : tensor<1x2x4xf32>
  }
  return %1 : tensor<1x2x4xf32>
}

// -----

func.func @weights_as_inputs(%x: tensor<1x2x4xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>) -> tensor<1x2x4xf32> {
  %0 = moe.stage "attention" layer 0 group 0(%x, %w1, %w2) : (tensor<1x2x4xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2x4xf32>, %b: tensor<4x3xf32>, %c: tensor<3x4xf32>):
    // expected-error @+1 {{fuse-exchange: the FFN-side dense_ffn of layer 0 must take its weights from onnx.weight inside its stage}}
    %d = moe.dense_ffn %a w1(%b) w3(%b) w2(%c) {ffn_hidden = 3 : i64, layer = 0 : i64, role = "dense", side = "ffn"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
    %s = arith.addf %a, %d : tensor<1x2x4xf32>
    moe.yield %s : tensor<1x2x4xf32>
  }
  %1 = moe.stage "head" layer 1 group 0 on "attention"(%0) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%b: tensor<1x2x4xf32>):
    moe.yield %b : tensor<1x2x4xf32>
  }
  return %1 : tensor<1x2x4xf32>
}

// -----

func.func @shared_without_ffn_stage(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %0 = moe.stage "attention" layer 0 group 0(%x) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2x4xf32>):
    %w1 = onnx.weight "w1" {file = "m.onnx", offset = 0 : i64, length = 48 : i64} : tensor<4x3xf32>
    %w2 = onnx.weight "w2" {file = "m.onnx", offset = 48 : i64, length = 48 : i64} : tensor<3x4xf32>
    // expected-error @+1 {{fuse-exchange: the FFN-side shared experts of layer 0 need an FFN stage whose activations are their input}}
    %d = moe.dense_ffn %a w1(%w1) w3(%w1) w2(%w2) {ffn_hidden = 3 : i64, layer = 0 : i64, num_shared_experts = 1 : i64, role = "shared", side = "ffn"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
    %s = arith.addf %a, %d : tensor<1x2x4xf32>
    moe.yield %s : tensor<1x2x4xf32>
  }
  %1 = moe.stage "head" layer 1 group 0 on "attention"(%0) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%b: tensor<1x2x4xf32>):
    moe.yield %b : tensor<1x2x4xf32>
  }
  return %1 : tensor<1x2x4xf32>
}

// -----

func.func @head_without_final_norm(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  // expected-error @+1 {{fuse-exchange: an FFN-side head stage needs its final rms_norm}}
  %0 = moe.stage "head" layer 0 group 0 on "ffn"(%x) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%b: tensor<1x2x4xf32>):
    moe.yield %b : tensor<1x2x4xf32>
  }
  return %0 : tensor<1x2x4xf32>
}
