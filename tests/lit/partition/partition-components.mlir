// RUN: disagmoe-opt --partition-components %inputs/raised-2layer.mlir | FileCheck %s
// RUN: disagmoe-opt --partition-components %s -split-input-file -verify-diagnostics
// Each layer becomes an attention stage (norms, attention, residual add, router) and an FFN stage
// (experts); x_{l+1} = h_l + y_l is formed by the receiving stage, so the residual stream is explicit.

// CHECK-LABEL: func.func @main
// CHECK: %[[EMB:.*]] = moe.stage "embedding" layer 0
// CHECK:   moe.embedding
// CHECK: %[[A0:.*]]:4 = moe.stage "attention" layer 0(%[[EMB]])
// CHECK-SAME: -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<6x2xi64>, tensor<6x2xf32>)
// CHECK:   onnx.weight "l0.q"
// CHECK:   moe.rms_norm {{.*}}role = "attn_norm"
// CHECK:   moe.attention
// CHECK:   %[[H:.*]] = arith.addf
// CHECK:   moe.rms_norm %[[H]]{{.*}}role = "ffn_norm"
// CHECK:   moe.router
// CHECK:   moe.yield %[[H]],
// CHECK: %[[F0:.*]] = moe.stage "ffn" layer 0(%[[A0]]#1, %[[A0]]#2, %[[A0]]#3)
// CHECK:   onnx.weight "l0.e3.w2"
// CHECK:   moe.experts
// CHECK: moe.stage "attention" layer 1(%[[A0]]#0, %[[F0]])
// CHECK-NEXT: ^bb0(%[[RES:.*]]: tensor<2x3x8xf32>, %[[Y:.*]]: tensor<2x3x8xf32>):
// CHECK:   arith.addf %[[RES]], %[[Y]]
// CHECK: moe.stage "ffn" layer 1
// CHECK: %[[HEAD:.*]] = moe.stage "head" layer 2
// CHECK:   moe.rms_norm {{.*}}role = "final_norm"
// CHECK:   moe.head
// CHECK: return %[[HEAD]]
// CHECK-NOT: onnx.weight

// -----

func.func @not_raised(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{partition-components: op is not a raised component}}
  %0 = onnx.node "Relu"(%x) {node_name = "relu", onnx_attrs = {}} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
