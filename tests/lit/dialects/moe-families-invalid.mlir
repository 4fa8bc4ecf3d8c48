// RUN: disagmoe-opt %s -split-input-file -verify-diagnostics
// Verifiers of the families' optional parts name the offending operand or attribute.

func.func @sinks_not_per_head(%x: tensor<1x2x4xf32>, %wq: tensor<4x8xf32>, %wkv: tensor<4x4xf32>, %wo: tensor<8x4xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{sinks has shape [3], expected [2]}}
  %a = moe.attention %x weights(%wq, %wkv, %wkv, %wo) sinks(%s : tensor<3xf32>) {head_dim = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.0e4 : f64} : tensor<1x2x4xf32>, (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @qk_norm_without_eps(%x: tensor<1x2x4xf32>, %wq: tensor<4x8xf32>, %wkv: tensor<4x4xf32>, %wo: tensor<8x4xf32>, %n: tensor<4xf32>) {
  // expected-error @+1 {{qk_norm needs the attribute 'qk_norm_eps'}}
  %a = moe.attention %x weights(%wq, %wkv, %wkv, %wo) qk_norm(%n, %n : tensor<4xf32>, tensor<4xf32>) {head_dim = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.0e4 : f64} : tensor<1x2x4xf32>, (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @q_bias_width(%x: tensor<1x2x4xf32>, %wq: tensor<4x8xf32>, %wkv: tensor<4x4xf32>, %wo: tensor<8x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{bq has shape [4], expected [8]}}
  %a = moe.attention %x weights(%wq, %wkv, %wkv, %wo) bq(%b : tensor<4xf32>) {head_dim = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.0e4 : f64} : tensor<1x2x4xf32>, (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @window_zero(%x: tensor<1x2x4xf32>, %wq: tensor<4x8xf32>, %wkv: tensor<4x4xf32>, %wo: tensor<8x4xf32>) {
  // expected-error @+1 {{attribute 'sliding_window' must be positive, got 0}}
  %a = moe.attention %x weights(%wq, %wkv, %wkv, %wo) {head_dim = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.0e4 : f64, sliding_window = 0 : i64} : tensor<1x2x4xf32>, (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @router_bias(%x: tensor<1x2x4xf32>, %w: tensor<4x2xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{bias has shape [3], expected [2]}}
  %i, %g = moe.router %x, %w bias(%b : tensor<3xf32>) {layer = 0 : i64, num_experts = 2 : i64, scoring = "topk_softmax", top_k = 1 : i64} : tensor<1x2x4xf32>, tensor<4x2xf32> -> tensor<2x1xi64>, tensor<2x1xf32>
  return
}

// -----

func.func @router_scale(%x: tensor<1x2x4xf32>, %w: tensor<4x2xf32>) {
  // expected-error @+1 {{attribute 'routed_scaling_factor' must be positive, got 0}}
  %i, %g = moe.router %x, %w {layer = 0 : i64, num_experts = 2 : i64, routed_scaling_factor = 0.0 : f64, scoring = "softmax_topk", top_k = 1 : i64} : tensor<1x2x4xf32>, tensor<4x2xf32> -> tensor<2x1xi64>, tensor<2x1xf32>
  return
}

// -----

func.func @oai_without_limit(%x: tensor<1x2x4xf32>, %i: tensor<2x1xi64>, %g: tensor<2x1xf32>, %w13: tensor<4x6xf32>, %w2: tensor<3x4xf32>) {
  // expected-error @+1 {{activation swiglu_oai needs 'swiglu_limit' and 'swiglu_alpha'}}
  %y = moe.experts %x, %i, %g w1(%w13) w3() w2(%w2) {activation = "swiglu_oai", expert_hidden = 3 : i64, fused_gate_up, layer = 0 : i64, num_experts = 1 : i64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>, (tensor<4x6xf32>), (), (tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @fused_width(%x: tensor<1x2x4xf32>, %i: tensor<2x1xi64>, %g: tensor<2x1xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>) {
  // expected-error @+1 {{w1[0] has shape [4,3], expected [4,6]}}
  %y = moe.experts %x, %i, %g w1(%w1) w3() w2(%w2) {expert_hidden = 3 : i64, fused_gate_up, layer = 0 : i64, num_experts = 1 : i64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>, (tensor<4x3xf32>), (), (tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @plain_with_w3(%x: tensor<1x2x4xf32>, %i: tensor<2x1xi64>, %g: tensor<2x1xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>) {
  // expected-error @+1 {{activation 'relu' is not gated: w3, b3 and fused_gate_up must be absent}}
  %y = moe.experts %x, %i, %g w1(%w1) w3(%w1) w2(%w2) {activation = "relu", expert_hidden = 3 : i64, layer = 0 : i64, num_experts = 1 : i64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>, (tensor<4x3xf32>), (tensor<4x3xf32>), (tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @plain_with_limit(%x: tensor<1x2x4xf32>, %i: tensor<2x1xi64>, %g: tensor<2x1xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>) {
  // expected-error @+1 {{activation 'gelu_tanh' takes no 'swiglu_limit' or 'swiglu_alpha'}}
  %y = moe.experts %x, %i, %g w1(%w1) w3() w2(%w2) {activation = "gelu_tanh", expert_hidden = 3 : i64, layer = 0 : i64, num_experts = 1 : i64, swiglu_limit = 7.0 : f64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>, (tensor<4x3xf32>), (), (tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @unknown_activation(%x: tensor<1x2x4xf32>, %i: tensor<2x1xi64>, %g: tensor<2x1xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>) {
  // expected-error @+1 {{attribute 'activation' must be swiglu, swiglu_oai, relu, gelu_tanh, silu or identity, got 'gelu'}}
  %y = moe.experts %x, %i, %g w1(%w1) w3() w2(%w2) {activation = "gelu", expert_hidden = 3 : i64, layer = 0 : i64, num_experts = 1 : i64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>, (tensor<4x3xf32>), (), (tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @expert_bias_count(%x: tensor<1x2x4xf32>, %i: tensor<2x1xi64>, %g: tensor<2x1xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{has 1 b2 weights for 2 experts}}
  %y = moe.experts %x, %i, %g w1(%w1, %w1) w3(%w1, %w1) w2(%w2, %w2) b2(%b : tensor<4xf32>) {expert_hidden = 3 : i64, layer = 0 : i64, num_experts = 2 : i64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>, (tensor<4x3xf32>, tensor<4x3xf32>), (tensor<4x3xf32>, tensor<4x3xf32>), (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @dense_role(%x: tensor<1x2x4xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>) {
  // expected-error @+1 {{attribute 'role' must be dense or shared, got 'routed'}}
  %d = moe.dense_ffn %x w1(%w1) w3(%w1) w2(%w2) {ffn_hidden = 3 : i64, layer = 0 : i64, role = "routed"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @dense_width(%x: tensor<1x2x4xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>) {
  // expected-error @+1 {{w1 has shape [4,3], expected [4,5]}}
  %d = moe.dense_ffn %x w1(%w1) w3(%w1) w2(%w2) {ffn_hidden = 5 : i64, layer = 0 : i64, role = "dense"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @shared_count_on_dense(%x: tensor<1x2x4xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>) {
  // expected-error @+1 {{attribute 'num_shared_experts' is only for role shared}}
  %d = moe.dense_ffn %x w1(%w1) w3(%w1) w2(%w2) {ffn_hidden = 3 : i64, layer = 0 : i64, num_shared_experts = 2 : i64, role = "dense"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @mla_kv_b(%x: tensor<1x2x4xf32>, %wq: tensor<4x12xf32>, %wa: tensor<4x6xf32>, %n: tensor<4xf32>, %wb: tensor<4x10xf32>, %wo: tensor<8x4xf32>) {
  // expected-error @+1 {{wkv_b has shape [4,10], expected [4,16]}}
  %a = moe.mla_attention %x weights(%wq, %wa, %n, %wb, %wo) {kv_lora_rank = 4 : i64, kv_norm_eps = 1.0e-6 : f64, layer = 0 : i64, num_heads = 2 : i64, qk_nope_head_dim = 4 : i64, qk_rope_head_dim = 2 : i64, rope_theta = 1.0e4 : f64, softmax_scale = 0.408 : f64, v_head_dim = 4 : i64} : tensor<1x2x4xf32>, (tensor<4x12xf32>, tensor<4x6xf32>, tensor<4xf32>, tensor<4x10xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @mla_odd_rope(%x: tensor<1x2x4xf32>, %wq: tensor<4x10xf32>, %wa: tensor<4x5xf32>, %n: tensor<4xf32>, %wb: tensor<4x16xf32>, %wo: tensor<8x4xf32>) {
  // expected-error @+1 {{qk_rope_head_dim 1 must be even (rotate-half RoPE)}}
  %a = moe.mla_attention %x weights(%wq, %wa, %n, %wb, %wo) {kv_lora_rank = 4 : i64, kv_norm_eps = 1.0e-6 : f64, layer = 0 : i64, num_heads = 2 : i64, qk_nope_head_dim = 4 : i64, qk_rope_head_dim = 1 : i64, rope_theta = 1.0e4 : f64, softmax_scale = 0.408 : f64, v_head_dim = 4 : i64} : tensor<1x2x4xf32>, (tensor<4x10xf32>, tensor<4x5xf32>, tensor<4xf32>, tensor<4x16xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

// DeepSeek-V3's router: correction_bias, n_group and topk_group (sigmoid scorings only).
func.func @router_correction_bias_shape(%x: tensor<1x2x4xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{correction_bias has shape [4], expected [8]}}
  %i, %g = moe.router %x, %w correction_bias(%b : tensor<4xf32>) {layer = 0 : i64, num_experts = 8 : i64, scoring = "sigmoid_group_topk_renorm", top_k = 2 : i64} : tensor<1x2x4xf32>, tensor<4x8xf32> -> tensor<2x2xi64>, tensor<2x2xf32>
  return
}

// -----

func.func @router_groups_with_softmax(%x: tensor<1x2x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{correction_bias, n_group and topk_group belong to the sigmoid scorings (DeepSeek-V3's router), not 'softmax_topk'}}
  %i, %g = moe.router %x, %w {layer = 0 : i64, n_group = 4 : i64, num_experts = 8 : i64, scoring = "softmax_topk", top_k = 2 : i64, topk_group = 2 : i64} : tensor<1x2x4xf32>, tensor<4x8xf32> -> tensor<2x2xi64>, tensor<2x2xf32>
  return
}

// -----

func.func @router_groups_not_dividing(%x: tensor<1x2x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{n_group 3 does not divide num_experts 8}}
  %i, %g = moe.router %x, %w {layer = 0 : i64, n_group = 3 : i64, num_experts = 8 : i64, scoring = "sigmoid_group_topk", top_k = 2 : i64, topk_group = 1 : i64} : tensor<1x2x4xf32>, tensor<4x8xf32> -> tensor<2x2xi64>, tensor<2x2xf32>
  return
}

// -----

func.func @router_topk_group_too_large(%x: tensor<1x2x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{topk_group 5 is outside [1, n_group = 4]}}
  %i, %g = moe.router %x, %w {layer = 0 : i64, n_group = 4 : i64, num_experts = 8 : i64, scoring = "sigmoid_group_topk", top_k = 2 : i64, topk_group = 5 : i64} : tensor<1x2x4xf32>, tensor<4x8xf32> -> tensor<2x2xi64>, tensor<2x2xf32>
  return
}

// -----

func.func @router_topk_beyond_kept_groups(%x: tensor<1x2x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{top_k 3 exceeds the 2 experts of the topk_group = 1 kept groups}}
  %i, %g = moe.router %x, %w {layer = 0 : i64, n_group = 4 : i64, num_experts = 8 : i64, scoring = "sigmoid_group_topk", top_k = 3 : i64, topk_group = 1 : i64} : tensor<1x2x4xf32>, tensor<4x8xf32> -> tensor<2x3xi64>, tensor<2x3xf32>
  return
}

// -----

func.func @router_groups_of_one(%x: tensor<1x2x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{n_group 8 leaves groups of one expert (a group's score is the sum of its top 2)}}
  %i, %g = moe.router %x, %w {layer = 0 : i64, n_group = 8 : i64, num_experts = 8 : i64, scoring = "sigmoid_group_topk", top_k = 2 : i64, topk_group = 2 : i64} : tensor<1x2x4xf32>, tensor<4x8xf32> -> tensor<2x2xi64>, tensor<2x2xf32>
  return
}
