// RUN: disagmoe-opt %s -split-input-file -verify-diagnostics
// Verifiers name the offending operand or attribute.

func.func @heads_not_multiple(%x: tensor<1x2x6xf32>, %wq: tensor<6x6xf32>, %wk: tensor<6x4xf32>, %wo: tensor<6x6xf32>) {
  // expected-error @+1 {{num_heads 3 is not a multiple of num_kv_heads 2}}
  %a = moe.attention %x weights(%wq, %wk, %wk, %wo) {head_dim = 2 : i64, layer = 0 : i64, num_heads = 3 : i64, num_kv_heads = 2 : i64, rope_theta = 1.0e4 : f64} : tensor<1x2x6xf32>, (tensor<6x6xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x6xf32>) -> tensor<1x2x6xf32>
  return
}

// -----

func.func @wq_shape(%x: tensor<1x2x4xf32>, %wq: tensor<4x6xf32>, %wk: tensor<4x2xf32>, %wo: tensor<4x4xf32>) {
  // expected-error @+1 {{wq has shape [4,6], expected [4,4]}}
  %a = moe.attention %x weights(%wq, %wk, %wk, %wo) {head_dim = 2 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.0e4 : f64} : tensor<1x2x4xf32>, (tensor<4x6xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @topk_too_large(%x: tensor<1x2x4xf32>, %w: tensor<4x2xf32>) {
  // expected-error @+1 {{top_k 3 exceeds num_experts 2}}
  %i, %g = moe.router %x, %w {layer = 0 : i64, num_experts = 2 : i64, scoring = "softmax_topk", top_k = 3 : i64} : tensor<1x2x4xf32>, tensor<4x2xf32> -> tensor<2x3xi64>, tensor<2x3xf32>
  return
}

// -----

func.func @unknown_scoring(%x: tensor<1x2x4xf32>, %w: tensor<4x2xf32>) {
  // expected-error @+1 {{unknown router scoring 'sigmoid'}}
  %i, %g = moe.router %x, %w {layer = 0 : i64, num_experts = 2 : i64, scoring = "sigmoid", top_k = 1 : i64} : tensor<1x2x4xf32>, tensor<4x2xf32> -> tensor<2x1xi64>, tensor<2x1xf32>
  return
}

// -----

func.func @missing_expert_weights(%x: tensor<1x2x4xf32>, %i: tensor<2x1xi64>, %g: tensor<2x1xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>) {
  // expected-error @+1 {{has 1 w1 weights for 2 experts}}
  %y = moe.experts %x, %i, %g w1(%w1) w3(%w1, %w1) w2(%w2, %w2) {expert_hidden = 3 : i64, layer = 0 : i64, num_experts = 2 : i64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>, (tensor<4x3xf32>), (tensor<4x3xf32>, tensor<4x3xf32>), (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @expert_w2_shape(%x: tensor<1x2x4xf32>, %i: tensor<2x1xi64>, %g: tensor<2x1xf32>, %w1: tensor<4x3xf32>, %w2: tensor<4x3xf32>) {
  // expected-error @+1 {{w2[0] has shape [4,3], expected [3,4]}}
  %y = moe.experts %x, %i, %g w1(%w1) w3(%w1) w2(%w2) {expert_hidden = 3 : i64, layer = 0 : i64, num_experts = 1 : i64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>, (tensor<4x3xf32>), (tensor<4x3xf32>), (tensor<4x3xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @negative_layer(%y: tensor<2x4xf32>) {
  // expected-error @+1 {{attribute 'layer' must be >= 0, got -2}}
  %r = moe.n2m %y {dst_group = 0 : i64, layer = -2 : i64, src_group = 0 : i64} : tensor<2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @weight_length() {
  // expected-error @+1 {{weight 'w' has length 8 bytes but its type needs 16}}
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 8 : i64} : tensor<4xf32>
  return
}

// -----

// A widened float16 / bfloat16 weight's length counts its stored bytes, 2 an element.
func.func @weight_stored_length() {
  // expected-error @+1 {{weight 'w' has length 16 bytes but its type needs 8}}
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 16 : i64, stored_type = bf16} : tensor<4xf32>
  return
}

// -----

func.func @weight_stored_type() {
  // expected-error @+1 {{weight 'w' has stored_type 'f32' under a 'f32' result (only f16 or bf16 widened to f32)}}
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 16 : i64, stored_type = f32} : tensor<4xf32>
  return
}

// -----

func.func @weight_stored_under_f16() {
  // expected-error @+1 {{weight 'w' has stored_type 'bf16' under a 'f16' result (only f16 or bf16 widened to f32)}}
  %w = onnx.weight "w" {file = "m.onnx", offset = 0 : i64, length = 8 : i64, stored_type = bf16} : tensor<4xf16>
  return
}

// -----

func.func @stage_yield_types(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{moe.yield types differ from the stage's result types}}
  %0 = moe.stage "ffn" layer 0(%x) : (tensor<2x4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<2x4xf32>):
    moe.yield %a : tensor<2x4xf32>
  }
  return
}

// -----

func.func @norm_role(%x: tensor<2x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'role' must be attn_norm, ffn_norm or final_norm, got 'pre_norm'}}
  %n = moe.rms_norm %x, %w {eps = 1.0e-5 : f64, layer = 0 : i64, role = "pre_norm"} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @norm_eps(%x: tensor<2x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'eps' must be positive, got 0}}
  %n = moe.rms_norm %x, %w {eps = 0.0 : f64, layer = 0 : i64, role = "attn_norm"} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @norm_weight(%x: tensor<2x4xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight has shape [8], expected [4]}}
  %n = moe.rms_norm %x, %w {eps = 1.0e-5 : f64, layer = 0 : i64, role = "attn_norm"} : tensor<2x4xf32>, tensor<8xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @embedding_hidden(%ids: tensor<1x2xi64>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{result hidden size 6 differs from weight's 4}}
  %x = moe.embedding %ids, %w : tensor<1x2xi64>, tensor<8x4xf32> -> tensor<1x2x6xf32>
  return
}

// -----

func.func @head_weight(%x: tensor<1x2x4xf32>, %w: tensor<5x8xf32>) {
  // expected-error @+1 {{weight has shape [5,8], expected [4,8]}}
  %l = moe.head %x, %w : tensor<1x2x4xf32>, tensor<5x8xf32> -> tensor<1x2x8xf32>
  return
}

// -----

func.func @m2n_types(%x: tensor<1x2x4xf32>, %i: tensor<2x1xi64>, %g: tensor<2x1xf32>) {
  // expected-error @+1 {{results must have the types of the sent values}}
  %a, %b, %c = moe.m2n %x, %i, %g {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32> -> tensor<2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>
  return
}

// -----

func.func @residual_group(%h: tensor<2x4xf32>) {
  // expected-error @+1 {{group indices must be >= 0, got src_group -1, dst_group 0}}
  %r = moe.residual %h {dst_group = 0 : i64, layer = 0 : i64, src_group = -1 : i64} : tensor<2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @stage_args(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{region argument #0 type differs from input #0}}
  %0 = moe.stage "attention" layer 0(%x) : (tensor<2x4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    moe.yield %a : tensor<4xf32>
  }
  return
}

// -----

func.func @stage_group(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{attribute 'group' must be >= 0, got -3}}
  %0 = moe.stage "ffn" layer 0 group -3(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x4xf32>):
    moe.yield %a : tensor<2x4xf32>
  }
  return
}

// -----

func.func @stage_side(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{unknown side 'router'}}
  %0 = moe.stage "router" layer 0(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x4xf32>):
    moe.yield %a : tensor<2x4xf32>
  }
  return
}

// -----

func.func @m2n_ids_without_gates_result(%x: tensor<1x2x4xf32>) {
  // expected-error @+1 {{results must have the types of the sent values}}
  %a = moe.m2n %x {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64} : tensor<1x2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @home_transfer_kind(%x: tensor<1x2x4xf32>) {
  // expected-error @+1 {{attribute 'kind' must be embedding or head, got 'residual'}}
  %a = moe.home_transfer %x {dst_group = 0 : i64, kind = "residual", src_group = 0 : i64} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
  return
}

// -----

func.func @home_transfer_group(%x: tensor<1x2x4xf32>) {
  // expected-error @+1 {{groups must be >= 0, got src_group -1, dst_group 0}}
  %a = moe.home_transfer %x {dst_group = 0 : i64, kind = "head", src_group = -1 : i64} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
  return
}

// -----

func.func @home_transfer_type(%x: tensor<1x2x4xf32>) {
  // expected-error @+1 {{result must have the type of the sent value}}
  %a = moe.home_transfer %x {dst_group = 0 : i64, kind = "head", src_group = 0 : i64} : tensor<1x2x4xf32> -> tensor<2x4xf32>
  return
}
