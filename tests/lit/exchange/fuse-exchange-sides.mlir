// RUN: disagmoe-opt --fuse-exchange %s -split-input-file | FileCheck %s
// fuse-exchange on stages whose always-on FFN, embedding or head assign-groups put on the FFN
// side (moe.dense_ffn side = "ffn", stage on = "ffn"): the IR gets the exchanges the executor
// sends (the sample-model form of these cases is in fuse-exchange-sides.test).

// A dense layer whose FFN runs on the FFN side: the FFN moves to a new FFN stage fed by an M2N
// without ids / gates; its output returns by N2M; x_1 = h + y is formed by the consumer.
func.func @dense_layer(%x: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  %0 = moe.stage "attention" layer 0 group 0(%x) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%a: tensor<1x2x4xf32>):
    %w1 = onnx.weight "w1" {file = "m.onnx", offset = 0 : i64, length = 48 : i64} : tensor<4x3xf32>
    %w2 = onnx.weight "w2" {file = "m.onnx", offset = 48 : i64, length = 48 : i64} : tensor<3x4xf32>
    %n = arith.mulf %a, %a : tensor<1x2x4xf32>
    %d = moe.dense_ffn %n w1(%w1) w3(%w1) w2(%w2) {ffn_hidden = 3 : i64, layer = 0 : i64, role = "dense", side = "ffn"} : tensor<1x2x4xf32>, (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<1x2x4xf32>
    %s = arith.addf %a, %d : tensor<1x2x4xf32>
    moe.yield %s : tensor<1x2x4xf32>
  }
  %1 = moe.stage "head" layer 1 group 0 on "attention"(%0) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%b: tensor<1x2x4xf32>):
    moe.yield %b : tensor<1x2x4xf32>
  }
  return %1 : tensor<1x2x4xf32>
}
// CHECK-LABEL: func.func @dense_layer
// CHECK: %[[A:.*]]:2 = moe.stage "attention" layer 0 group 0(%{{.*}}) : (tensor<1x2x4xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x4xf32>)
// CHECK: ^bb0(%[[IN:.*]]: tensor<1x2x4xf32>):
// CHECK-NOT: moe.dense_ffn
// CHECK: %[[N:.*]] = arith.mulf
// CHECK-NEXT: moe.yield %[[IN]], %[[N]] : tensor<1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: %[[X:.*]] = moe.m2n %[[A]]#1 {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
// CHECK-NEXT: %[[F:.*]] = moe.stage "ffn" layer 0 group 0(%[[X]]) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
// CHECK-NEXT: ^bb0(%[[FX:.*]]: tensor<1x2x4xf32>):
// CHECK-NEXT: %[[W1:.*]] = onnx.weight "w1"
// CHECK-NEXT: %[[W2:.*]] = onnx.weight "w2"
// CHECK-NEXT: %[[Y:.*]] = moe.dense_ffn %[[FX]] w1(%[[W1]]) w3(%[[W1]]) w2(%[[W2]]) {{.*}}side = "ffn"
// CHECK-NEXT: moe.yield %[[Y]]
// CHECK: %[[YN:.*]] = moe.n2m %[[F]] {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64}
// CHECK-NEXT: %[[R:.*]] = moe.residual %[[A]]#0 {dst_group = 0 : i64, layer = 0 : i64, src_group = 0 : i64}
// CHECK-NEXT: moe.stage "head" layer 1 group 0 on "attention"(%[[R]], %[[YN]])
// CHECK-NEXT: ^bb0(%[[H:.*]]: tensor<1x2x4xf32>, %[[HY:.*]]: tensor<1x2x4xf32>):
// CHECK-NEXT: %[[X1:.*]] = arith.addf %[[H]], %[[HY]]
// CHECK-NEXT: moe.yield %[[X1]]
// CHECK-NOT: moe.home_transfer

// -----

// FFN-side embedding and head: home transfers after the embedding and before the final norm.
func.func @edges(%ids: tensor<1x2xi64>) -> tensor<1x2x4xf32> {
  %0 = moe.stage "embedding" layer 0 group 0 on "ffn"(%ids) : (tensor<1x2xi64>) -> tensor<1x2x4xf32> {
  ^bb0(%i: tensor<1x2xi64>):
    %w = onnx.weight "emb" {file = "m.onnx", offset = 0 : i64, length = 128 : i64} : tensor<8x4xf32>
    %e = moe.embedding %i, %w : tensor<1x2xi64>, tensor<8x4xf32> -> tensor<1x2x4xf32>
    moe.yield %e : tensor<1x2x4xf32>
  }
  %1 = moe.stage "head" layer 1 group 1 on "ffn"(%0) : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  ^bb0(%x: tensor<1x2x4xf32>):
    %nw = onnx.weight "norm" {file = "m.onnx", offset = 128 : i64, length = 16 : i64} : tensor<4xf32>
    %n = moe.rms_norm %x, %nw {eps = 1.0e-5 : f64, layer = -1 : i64, role = "final_norm"} : tensor<1x2x4xf32>, tensor<4xf32> -> tensor<1x2x4xf32>
    moe.yield %n : tensor<1x2x4xf32>
  }
  return %1 : tensor<1x2x4xf32>
}
// CHECK-LABEL: func.func @edges
// CHECK: %[[E:.*]] = moe.embedding
// CHECK-NEXT: %[[T:.*]] = moe.home_transfer %[[E]] {dst_group = 0 : i64, kind = "embedding", src_group = 0 : i64} : tensor<1x2x4xf32> -> tensor<1x2x4xf32>
// CHECK-NEXT: moe.yield %[[T]]
// CHECK: moe.stage "head" layer 1 group 1 on "ffn"
// CHECK: ^bb0(%[[XL:.*]]: tensor<1x2x4xf32>):
// CHECK: %[[TH:.*]] = moe.home_transfer %[[XL]] {dst_group = 1 : i64, kind = "head", src_group = 1 : i64}
// CHECK-NEXT: moe.rms_norm %[[TH]], {{.*}}role = "final_norm"
