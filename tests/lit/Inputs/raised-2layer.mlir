func.func @main(%ids: tensor<2x3xi64>) -> tensor<2x3x16xf32> {
  %emb_w = onnx.weight "embed" {file = "model.onnx", offset = 0 : i64, length = 512 : i64} : tensor<16x8xf32>
  %x0 = moe.embedding %ids, %emb_w : tensor<2x3xi64>, tensor<16x8xf32> -> tensor<2x3x8xf32>
  %n1w0 = onnx.weight "l0.attn_norm" {file = "model.onnx", offset = 512 : i64, length = 32 : i64} : tensor<8xf32>
  %n1_0 = moe.rms_norm %x0, %n1w0 {eps = 1.0e-05 : f64, layer = 0 : i64, role = "attn_norm"} : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %wq0 = onnx.weight "l0.q" {file = "model.onnx", offset = 544 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk0 = onnx.weight "l0.k" {file = "model.onnx", offset = 800 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv0 = onnx.weight "l0.v" {file = "model.onnx", offset = 928 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo0 = onnx.weight "l0.o" {file = "model.onnx", offset = 1056 : i64, length = 256 : i64} : tensor<8x8xf32>
  %a0 = moe.attention %n1_0 weights(%wq0, %wk0, %wv0, %wo0) {head_dim = 4 : i64, layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.0e+04 : f64} : tensor<2x3x8xf32>, (tensor<8x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  %h0 = arith.addf %x0, %a0 : tensor<2x3x8xf32>
  %n2w0 = onnx.weight "l0.ffn_norm" {file = "model.onnx", offset = 1312 : i64, length = 32 : i64} : tensor<8xf32>
  %n2_0 = moe.rms_norm %h0, %n2w0 {eps = 1.0e-05 : f64, layer = 0 : i64, role = "ffn_norm"} : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %gw0 = onnx.weight "l0.router" {file = "model.onnx", offset = 1344 : i64, length = 128 : i64} : tensor<8x4xf32>
  %ids0, %gates0 = moe.router %n2_0, %gw0 {layer = 0 : i64, num_experts = 4 : i64, scoring = "softmax_topk_renorm", top_k = 2 : i64} : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<6x2xi64>, tensor<6x2xf32>
  %w1_0_0 = onnx.weight "l0.e0.w1" {file = "model.onnx", offset = 1472 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w1_0_1 = onnx.weight "l0.e1.w1" {file = "model.onnx", offset = 1664 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w1_0_2 = onnx.weight "l0.e2.w1" {file = "model.onnx", offset = 1856 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w1_0_3 = onnx.weight "l0.e3.w1" {file = "model.onnx", offset = 2048 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w3_0_0 = onnx.weight "l0.e0.w3" {file = "model.onnx", offset = 2240 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w3_0_1 = onnx.weight "l0.e1.w3" {file = "model.onnx", offset = 2432 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w3_0_2 = onnx.weight "l0.e2.w3" {file = "model.onnx", offset = 2624 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w3_0_3 = onnx.weight "l0.e3.w3" {file = "model.onnx", offset = 2816 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w2_0_0 = onnx.weight "l0.e0.w2" {file = "model.onnx", offset = 3008 : i64, length = 192 : i64} : tensor<6x8xf32>
  %w2_0_1 = onnx.weight "l0.e1.w2" {file = "model.onnx", offset = 3200 : i64, length = 192 : i64} : tensor<6x8xf32>
  %w2_0_2 = onnx.weight "l0.e2.w2" {file = "model.onnx", offset = 3392 : i64, length = 192 : i64} : tensor<6x8xf32>
  %w2_0_3 = onnx.weight "l0.e3.w2" {file = "model.onnx", offset = 3584 : i64, length = 192 : i64} : tensor<6x8xf32>
  %y0 = moe.experts %n2_0, %ids0, %gates0 w1(%w1_0_0, %w1_0_1, %w1_0_2, %w1_0_3) w3(%w3_0_0, %w3_0_1, %w3_0_2, %w3_0_3) w2(%w2_0_0, %w2_0_1, %w2_0_2, %w2_0_3) {expert_hidden = 6 : i64, layer = 0 : i64, num_experts = 4 : i64} : tensor<2x3x8xf32>, tensor<6x2xi64>, tensor<6x2xf32>, (tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>), (tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>), (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<2x3x8xf32>
  %x1 = arith.addf %h0, %y0 : tensor<2x3x8xf32>
  %n1w1 = onnx.weight "l1.attn_norm" {file = "model.onnx", offset = 3776 : i64, length = 32 : i64} : tensor<8xf32>
  %n1_1 = moe.rms_norm %x1, %n1w1 {eps = 1.0e-05 : f64, layer = 1 : i64, role = "attn_norm"} : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %wq1 = onnx.weight "l1.q" {file = "model.onnx", offset = 3808 : i64, length = 256 : i64} : tensor<8x8xf32>
  %wk1 = onnx.weight "l1.k" {file = "model.onnx", offset = 4064 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wv1 = onnx.weight "l1.v" {file = "model.onnx", offset = 4192 : i64, length = 128 : i64} : tensor<8x4xf32>
  %wo1 = onnx.weight "l1.o" {file = "model.onnx", offset = 4320 : i64, length = 256 : i64} : tensor<8x8xf32>
  %a1 = moe.attention %n1_1 weights(%wq1, %wk1, %wv1, %wo1) {head_dim = 4 : i64, layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 1.0e+04 : f64} : tensor<2x3x8xf32>, (tensor<8x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  %h1 = arith.addf %x1, %a1 : tensor<2x3x8xf32>
  %n2w1 = onnx.weight "l1.ffn_norm" {file = "model.onnx", offset = 4576 : i64, length = 32 : i64} : tensor<8xf32>
  %n2_1 = moe.rms_norm %h1, %n2w1 {eps = 1.0e-05 : f64, layer = 1 : i64, role = "ffn_norm"} : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %gw1 = onnx.weight "l1.router" {file = "model.onnx", offset = 4608 : i64, length = 128 : i64} : tensor<8x4xf32>
  %ids1, %gates1 = moe.router %n2_1, %gw1 {layer = 1 : i64, num_experts = 4 : i64, scoring = "softmax_topk_renorm", top_k = 2 : i64} : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<6x2xi64>, tensor<6x2xf32>
  %w1_1_0 = onnx.weight "l1.e0.w1" {file = "model.onnx", offset = 4736 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w1_1_1 = onnx.weight "l1.e1.w1" {file = "model.onnx", offset = 4928 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w1_1_2 = onnx.weight "l1.e2.w1" {file = "model.onnx", offset = 5120 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w1_1_3 = onnx.weight "l1.e3.w1" {file = "model.onnx", offset = 5312 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w3_1_0 = onnx.weight "l1.e0.w3" {file = "model.onnx", offset = 5504 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w3_1_1 = onnx.weight "l1.e1.w3" {file = "model.onnx", offset = 5696 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w3_1_2 = onnx.weight "l1.e2.w3" {file = "model.onnx", offset = 5888 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w3_1_3 = onnx.weight "l1.e3.w3" {file = "model.onnx", offset = 6080 : i64, length = 192 : i64} : tensor<8x6xf32>
  %w2_1_0 = onnx.weight "l1.e0.w2" {file = "model.onnx", offset = 6272 : i64, length = 192 : i64} : tensor<6x8xf32>
  %w2_1_1 = onnx.weight "l1.e1.w2" {file = "model.onnx", offset = 6464 : i64, length = 192 : i64} : tensor<6x8xf32>
  %w2_1_2 = onnx.weight "l1.e2.w2" {file = "model.onnx", offset = 6656 : i64, length = 192 : i64} : tensor<6x8xf32>
  %w2_1_3 = onnx.weight "l1.e3.w2" {file = "model.onnx", offset = 6848 : i64, length = 192 : i64} : tensor<6x8xf32>
  %y1 = moe.experts %n2_1, %ids1, %gates1 w1(%w1_1_0, %w1_1_1, %w1_1_2, %w1_1_3) w3(%w3_1_0, %w3_1_1, %w3_1_2, %w3_1_3) w2(%w2_1_0, %w2_1_1, %w2_1_2, %w2_1_3) {expert_hidden = 6 : i64, layer = 1 : i64, num_experts = 4 : i64} : tensor<2x3x8xf32>, tensor<6x2xi64>, tensor<6x2xf32>, (tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>), (tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>), (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<2x3x8xf32>
  %x2 = arith.addf %h1, %y1 : tensor<2x3x8xf32>
  %fw = onnx.weight "final_norm" {file = "model.onnx", offset = 7040 : i64, length = 32 : i64} : tensor<8xf32>
  %fn = moe.rms_norm %x2, %fw {eps = 1.0e-05 : f64, layer = -1 : i64, role = "final_norm"} : tensor<2x3x8xf32>, tensor<8xf32> -> tensor<2x3x8xf32>
  %hw = onnx.weight "head" {file = "model.onnx", offset = 7072 : i64, length = 512 : i64} : tensor<8x16xf32>
  %logits = moe.head %fn, %hw : tensor<2x3x8xf32>, tensor<8x16xf32> -> tensor<2x3x16xf32>
  return %logits : tensor<2x3x16xf32>
}
