// RUN: disagmoe-opt %s | disagmoe-opt | FileCheck %s
// The optional parts of the model families print in the custom formats and parse back to the same
// IR: attention with biases, q/k norm, sinks and a sliding window; router with a bias and a routed
// scaling factor, DeepSeek-V3's sigmoid router with its correction bias and groups; GPT-OSS experts (fused gate/up, biases, clamped SwiGLU); dense FFN and shared
// experts.

// CHECK-LABEL: func.func @families
func.func @families(%x: tensor<1x2x4xf32>, %wq: tensor<4x8xf32>, %wkv: tensor<4x4xf32>,
                    %wo: tensor<8x4xf32>, %b8: tensor<8xf32>, %b4: tensor<4xf32>,
                    %qn: tensor<4xf32>, %sinks: tensor<2xf32>, %wg: tensor<4x2xf32>,
                    %bg: tensor<2xf32>, %w13: tensor<4x6xf32>, %b13: tensor<6xf32>,
                    %w2: tensor<3x4xf32>, %w1: tensor<4x3xf32>, %b3: tensor<3xf32>) -> tensor<1x2x4xf32> {
  // CHECK: moe.attention %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) bq(%{{.*}} : tensor<8xf32>) bk(%{{.*}} : tensor<4xf32>) bv(%{{.*}} : tensor<4xf32>) bo(%{{.*}} : tensor<4xf32>) sinks(%{{.*}} : tensor<2xf32>) {{{.*}}sliding_window = 2 : i64}
  %a = moe.attention %x weights(%wq, %wkv, %wkv, %wo) bq(%b8 : tensor<8xf32>) bk(%b4 : tensor<4xf32>) bv(%b4 : tensor<4xf32>) bo(%b4 : tensor<4xf32>) sinks(%sinks : tensor<2xf32>) {head_dim = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.5e5 : f64, sliding_window = 2 : i64} : tensor<1x2x4xf32>, (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: moe.attention %{{.*}} weights(%{{.*}}) qk_norm(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>) {{{.*}}qk_norm_eps = 9.9999999999999995E-7 : f64
  %q = moe.attention %a weights(%wq, %wkv, %wkv, %wo) qk_norm(%qn, %qn : tensor<4xf32>, tensor<4xf32>) {head_dim = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, qk_norm_eps = 1.0e-6 : f64, rope_theta = 1.0e6 : f64} : tensor<1x2x4xf32>, (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: moe.router %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<2xf32>) {{{.*}}scoring = "topk_softmax"
  %i, %g = moe.router %q, %wg bias(%bg : tensor<2xf32>) {layer = 0 : i64, num_experts = 2 : i64, scoring = "topk_softmax", top_k = 1 : i64} : tensor<1x2x4xf32>, tensor<4x2xf32> -> tensor<2x1xi64>, tensor<2x1xf32>
  // CHECK: moe.router {{.*}}routed_scaling_factor = 1.500000e+00 : f64, scoring = "softmax_topk"
  %i2, %g2 = moe.router %q, %wg {layer = 0 : i64, num_experts = 2 : i64, routed_scaling_factor = 1.5 : f64, scoring = "softmax_topk", top_k = 1 : i64} : tensor<1x2x4xf32>, tensor<4x2xf32> -> tensor<2x1xi64>, tensor<2x1xf32>
  // DeepSeek-V3's router: sigmoid scores, correction bias, 2 groups of 2 experts with the best 1 kept.
  // CHECK: moe.router %{{.*}}, %{{.*}} correction_bias(%{{.*}} : tensor<4xf32>) {layer = 0 : i64, n_group = 2 : i64, num_experts = 4 : i64, routed_scaling_factor = 2.500000e+00 : f64, scoring = "sigmoid_group_topk_renorm", top_k = 2 : i64, topk_group = 1 : i64}
  %i3, %g3 = moe.router %q, %wkv correction_bias(%b4 : tensor<4xf32>) {layer = 0 : i64, n_group = 2 : i64, num_experts = 4 : i64, routed_scaling_factor = 2.5 : f64, scoring = "sigmoid_group_topk_renorm", top_k = 2 : i64, topk_group = 1 : i64} : tensor<1x2x4xf32>, tensor<4x4xf32> -> tensor<2x2xi64>, tensor<2x2xf32>
  // CHECK: moe.experts %{{.*}} w1(%{{.*}}, %{{.*}}) w3() w2(%{{.*}}, %{{.*}}) b1(%{{.*}}, %{{.*}} : tensor<6xf32>, tensor<6xf32>) b2(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>) {activation = "swiglu_oai", expert_hidden = 3 : i64, fused_gate_up
  %y = moe.experts %q, %i, %g w1(%w13, %w13) w3() w2(%w2, %w2) b1(%b13, %b13 : tensor<6xf32>, tensor<6xf32>) b2(%b4, %b4 : tensor<4xf32>, tensor<4xf32>) {activation = "swiglu_oai", expert_hidden = 3 : i64, fused_gate_up, layer = 0 : i64, num_experts = 2 : i64, swiglu_alpha = 1.702 : f64, swiglu_limit = 7.0 : f64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>, (tensor<4x6xf32>, tensor<4x6xf32>), (), (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
  // Non-gated experts (onnxruntime's com.microsoft.MoE relu/gelu/silu/identity): w1 -> act -> w2, no w3.
  // CHECK: moe.experts %{{.*}} w1(%{{.*}}, %{{.*}}) w3() w2(%{{.*}}, %{{.*}}) b1(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>) {activation = "gelu_tanh", expert_hidden = 3 : i64, layer = 0 : i64, num_experts = 2 : i64}
  %y2 = moe.experts %y, %i, %g w1(%w1, %w1) w3() w2(%w2, %w2) b1(%b3, %b3 : tensor<3xf32>, tensor<3xf32>) {activation = "gelu_tanh", expert_hidden = 3 : i64, layer = 0 : i64, num_experts = 2 : i64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>, (tensor<4x3xf32>, tensor<4x3xf32>), (), (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: moe.dense_ffn %{{.*}} w1(%{{.*}}) w3(%{{.*}}) w2(%{{.*}}) {ffn_hidden = 3 : i64, layer = 0 : i64, role = "dense"}
  %d = moe.dense_ffn %y2 w1(%w1) w3(%w1) w2(%w2) {ffn_hidden = 3 : i64, layer = 0 : i64, role = "dense"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: moe.dense_ffn {{.*}} {ffn_hidden = 3 : i64, layer = 1 : i64, num_shared_experts = 2 : i64, role = "shared"}
  %s = moe.dense_ffn %d w1(%w1) w3(%w1) w2(%w2) {ffn_hidden = 3 : i64, layer = 1 : i64, num_shared_experts = 2 : i64, role = "shared"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
  return %s : tensor<1x2x4xf32>
}

// CHECK-LABEL: func.func @mla
func.func @mla(%x: tensor<1x2x4xf32>, %wq: tensor<4x12xf32>, %wa: tensor<4x6xf32>, %n: tensor<4xf32>,
               %wb: tensor<4x16xf32>, %wo: tensor<8x4xf32>) -> tensor<1x2x4xf32> {
  // CHECK: moe.mla_attention %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {kv_lora_rank = 4 : i64, {{.*}}rope_interleaved
  %a = moe.mla_attention %x weights(%wq, %wa, %n, %wb, %wo) {kv_lora_rank = 4 : i64, kv_norm_eps = 1.0e-6 : f64, layer = 0 : i64, num_heads = 2 : i64, qk_nope_head_dim = 4 : i64, qk_rope_head_dim = 2 : i64, rope_interleaved, rope_theta = 1.0e4 : f64, softmax_scale = 0.408 : f64, v_head_dim = 4 : i64} : tensor<1x2x4xf32>, (tensor<4x12xf32>, tensor<4x6xf32>, tensor<4xf32>, tensor<4x16xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return %a : tensor<1x2x4xf32>
}
