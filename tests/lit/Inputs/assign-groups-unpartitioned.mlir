// assign-groups needs partitioned IR (used by partition/assign-groups.mlir).
// expected-error @+1 {{assign-groups: no moe.stage ops; run partition-components first}}
module {
  func.func @unpartitioned(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}
