// RUN: disagmoe-opt %s | disagmoe-opt | FileCheck %s
// Every moe op prints in its custom format and parses back to the same IR.

// CHECK-LABEL: func.func @components
func.func @components(%ids: tensor<1x2xi64>, %emb: tensor<8x4xf32>, %nw: tensor<4xf32>,
                      %wq: tensor<4x4xf32>, %wkv: tensor<4x2xf32>, %wo: tensor<4x4xf32>,
                      %wg: tensor<4x2xf32>, %w1: tensor<4x3xf32>, %w2: tensor<3x4xf32>,
                      %wh: tensor<4x8xf32>) -> tensor<1x2x8xf32> {
  // CHECK: moe.embedding %{{.*}}, %{{.*}} : tensor<1x2xi64>, tensor<8x4xf32> -> tensor<1x2x4xf32>
  %x = moe.embedding %ids, %emb : tensor<1x2xi64>, tensor<8x4xf32> -> tensor<1x2x4xf32>
  // CHECK: moe.rms_norm {{.*}} {eps = 1.000000e-05 : f64, layer = 0 : i64, role = "attn_norm"}
  %n = moe.rms_norm %x, %nw {eps = 1.0e-5 : f64, layer = 0 : i64, role = "attn_norm"} : tensor<1x2x4xf32>, tensor<4xf32> -> tensor<1x2x4xf32>
  // CHECK: moe.attention %{{.*}} weights(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {head_dim = 2 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64
  %a = moe.attention %n weights(%wq, %wkv, %wkv, %wo) {head_dim = 2 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.0e4 : f64} : tensor<1x2x4xf32>, (tensor<4x4xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: %[[IDS:.*]], %[[GATES:.*]] = moe.router {{.*}}top_k = 1
  %i, %g = moe.router %a, %wg {layer = 0 : i64, num_experts = 2 : i64, scoring = "topk_softmax", top_k = 1 : i64} : tensor<1x2x4xf32>, tensor<4x2xf32> -> tensor<2x1xi64>, tensor<2x1xf32>
  // CHECK: moe.m2n {{.*}} {dst_group = 1 : i64, layer = 0 : i64, src_group = 0 : i64}
  %mx, %mi, %mg = moe.m2n %a, %i, %g {dst_group = 1 : i64, layer = 0 : i64, src_group = 0 : i64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32> -> tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>
  // CHECK: moe.experts {{.*}} w1({{.*}}) w3({{.*}}) w2({{.*}}) {expert_hidden = 3 : i64
  %y = moe.experts %mx, %mi, %mg w1(%w1, %w1) w3(%w1, %w1) w2(%w2, %w2) {expert_hidden = 3 : i64, layer = 0 : i64, num_experts = 2 : i64} : tensor<1x2x4xf32>, tensor<2x1xi64>, tensor<2x1xf32>, (tensor<4x3xf32>, tensor<4x3xf32>), (tensor<4x3xf32>, tensor<4x3xf32>), (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: moe.n2m
  %r = moe.n2m %y {dst_group = 0 : i64, layer = 0 : i64, src_group = 1 : i64} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
  // CHECK: moe.residual
  %h = moe.residual %a {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
  // CHECK: moe.head
  %l = moe.head %r, %wh : tensor<1x2x4xf32>, tensor<4x8xf32> -> tensor<1x2x8xf32>
  return %l : tensor<1x2x8xf32>
}

// CHECK-LABEL: func.func @params
func.func @params() -> tensor<4096x1536xbf16> {
  // CHECK: moe.param "layers.0.mlp.experts.0.gate_proj" : tensor<4096x1536xbf16>
  %w = moe.param "layers.0.mlp.experts.0.gate_proj" : tensor<4096x1536xbf16>
  return %w : tensor<4096x1536xbf16>
}

// CHECK-LABEL: func.func @stage
func.func @stage(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // CHECK: moe.stage "ffn" layer 3 group 1(%{{.*}}) : (tensor<2x4xf32>) -> tensor<2x4xf32> {
  // CHECK: moe.yield
  %0 = moe.stage "ffn" layer 3 group 1(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%a: tensor<2x4xf32>):
    moe.yield %a : tensor<2x4xf32>
  }
  return %0 : tensor<2x4xf32>
}

// FFN-side placements (fuse-exchange after assign-groups' side options): a dense layer's M2N has
// no ids / gates, and the FFN-side embedding / head transfers are moe.home_transfer.
// CHECK-LABEL: func.func @ffn_side_exchanges
func.func @ffn_side_exchanges(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  // CHECK: %[[D:.*]] = moe.m2n %{{.*}} {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
  %d = moe.m2n %x {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
  // CHECK: moe.home_transfer %[[D]] {dst_group = 0 : i64, kind = "embedding", src_group = 0 : i64} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
  %e = moe.home_transfer %d {dst_group = 0 : i64, kind = "embedding", src_group = 0 : i64} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
  // CHECK: moe.home_transfer %{{.*}} {dst_group = 1 : i64, kind = "head", src_group = 1 : i64}
  %h = moe.home_transfer %e {dst_group = 1 : i64, kind = "head", src_group = 1 : i64} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
  return %h : tensor<1x2x4xf32>
}
