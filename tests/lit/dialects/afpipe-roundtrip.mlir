// `afpipe` dialect: custom assembly round-trips (printed form re-parses to the same IR, and the
// generic form parses back to the custom form), and a schedule that passes afpipe-verify.
// RUN: disagmoe-opt %s --afpipe-verify | disagmoe-opt | FileCheck %s
// RUN: disagmoe-opt %s --mlir-print-op-generic | disagmoe-opt | FileCheck %s

afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 1.0e9 model_flops 4.0e3 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 3.35e12 : f64, hbm_bytes = 8.0e10 : f64, name = "h800-1x8", nic_bandwidth = 5.0e10 : f64, nvlink_bandwidth = 2.0e11 : f64, peak_flops = 9.894e14 : f64} {
  afpipe.group "attention" 0 ranks [array<i64: 0>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.group "ffn" 0 ranks [array<i64: 1>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.program "attention" {
    afpipe.compute "attention" on "forward" "forward" group 0 mb 0 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0
    afpipe.send "m2n" on "comm" "forward" group 0 mb 0 layer 0 to 1 "all" bytes 100.0 after [0]
    afpipe.compute "attention" on "forward" "forward" group 0 mb 1 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0
    afpipe.send "m2n" on "comm" "forward" group 0 mb 1 layer 0 to 1 "all" bytes 100.0 after [2]
    afpipe.recv "n2m" on "comm" "forward" group 0 mb 0 layer 0 from 1 "all" bytes 50.0
    afpipe.recv "n2m" on "comm" "forward" group 0 mb 1 layer 0 from 1 "all" bytes 50.0
    afpipe.compute "head" on "forward" "forward" group 0 mb 0 layer 1 flops 1.0e3 mem_bytes 0.0 activation_bytes 0.0 after [4]
    afpipe.compute "head" on "forward" "forward" group 0 mb 1 layer 1 flops 1.0e3 mem_bytes 0.0 activation_bytes 0.0 after [5]
  }
  afpipe.program "ffn" {
    afpipe.recv "m2n" on "comm" "forward" group 1 mb 0 layer 0 from 0 "all" bytes 100.0
    afpipe.recv "m2n" on "comm" "forward" group 1 mb 1 layer 0 from 0 "all" bytes 100.0
    afpipe.compute "experts" on "forward" "forward" group 1 mb 0 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0 after [0]
    afpipe.compute "experts" on "forward" "forward" group 1 mb 1 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0 after [1]
    afpipe.send "n2m" on "comm" "forward" group 1 mb 0 layer 0 to 0 "all" bytes 50.0 after [2]
    afpipe.send "n2m" on "comm" "forward" group 1 mb 1 layer 0 to 0 "all" bytes 50.0 after [3]
  }
}

// CHECK: afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 1.000000e+09 model_flops 4.000000e+03 compute_efficiency 1.000000e+00 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 3.350000e+12 : f64, hbm_bytes = 8.000000e+10 : f64, name = "h800-1x8", nic_bandwidth = 5.000000e+10 : f64, nvlink_bandwidth = 2.000000e+11 : f64, peak_flops = 9.894000e+14 : f64} {
// CHECK-NEXT: afpipe.group "attention" 0 ranks [array<i64: 0>] static_bytes 0.000000e+00 nic_bandwidth 0.000000e+00
// CHECK-NEXT: afpipe.group "ffn" 0 ranks [array<i64: 1>] static_bytes 0.000000e+00 nic_bandwidth 0.000000e+00
// CHECK-NEXT: afpipe.program "attention" {
// CHECK-NEXT: afpipe.compute "attention" on "forward" "forward" group 0 mb 0 layer 0 flops 1.000000e+03 mem_bytes 0.000000e+00 activation_bytes 1.000000e+01
// CHECK-NEXT: afpipe.send "m2n" on "comm" "forward" group 0 mb 0 layer 0 to 1 "all" bytes 1.000000e+02 after [0]
// CHECK: afpipe.recv "n2m" on "comm" "forward" group 0 mb 0 layer 0 from 1 "all" bytes 5.000000e+01
// CHECK: afpipe.compute "head" on "forward" "forward" group 0 mb 1 layer 1 flops 1.000000e+03 mem_bytes 0.000000e+00 activation_bytes 0.000000e+00 after [5]
// CHECK-NEXT: }
// CHECK-NEXT: afpipe.program "ffn" {
// CHECK-NEXT: afpipe.recv "m2n" on "comm" "forward" group 1 mb 0 layer 0 from 0 "all" bytes 1.000000e+02
// CHECK: afpipe.send "n2m" on "comm" "forward" group 1 mb 1 layer 0 to 0 "all" bytes 5.000000e+01 after [3]
// CHECK-NEXT: }
// CHECK-NEXT: }

// A group's collectives (baselines: in-group all-to-all; every schedule: gradient all-reduce).
afpipe.schedule "1f1b-interleaved" micro_batches 1 virtual_stages 1 pipeline_stages 1 replicas 2 capacity_bytes 0.0 model_flops 0.0 compute_efficiency 0.5 gpu_sharing "exclusive" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 1.0 : f64, hbm_bytes = 1.0 : f64, nic_bandwidth = 1.0 : f64, nvlink_bandwidth = 1.0 : f64, peak_flops = 1.0 : f64} {
  afpipe.group "stage" 0 ranks [array<i64: 0, 1>, array<i64: 2, 3>] static_bytes 1.0 nic_bandwidth 0.0
  afpipe.program "stage" {
    afpipe.all_to_all "dispatch" on "comm" "forward" group 0 mb 0 layer 0 bytes 8.0
    afpipe.compute "stage" on "forward" "forward" group 0 mb 0 layer 0 flops 1.0 mem_bytes 0.0 activation_bytes 0.0 after [0]
    afpipe.all_reduce "grad_stage" on "comm" "update" group 0 mb -1 layer -1 "all" bytes 4.0 after [1]
  }
}
// CHECK: afpipe.schedule "1f1b-interleaved" {{.*}} replicas 2 {{.*}} gpu_sharing "exclusive"
// CHECK-NEXT: afpipe.group "stage" 0 ranks [array<i64: 0, 1>, array<i64: 2, 3>]
// CHECK: afpipe.all_to_all "dispatch" on "comm" "forward" group 0 mb 0 layer 0 bytes 8.000000e+00
// CHECK: afpipe.all_reduce "grad_stage" on "comm" "update" group 0 mb -1 layer -1 "all" bytes 4.000000e+00 after [1]
