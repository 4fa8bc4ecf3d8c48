// Local checks of the afpipe op verifiers (the whole-schedule checks are afpipe-verify's:
// tests/lit/schedule/afpipe-verify-invalid.mlir).
// RUN: disagmoe-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{an AF-Pipe schedule needs at least 2p = 4 micro-batches to fill the ring, got 3}}
afpipe.schedule "afpipe" micro_batches 3 virtual_stages 1 pipeline_stages 4 replicas 1 capacity_bytes 0.0 model_flops 0.0 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 1.0 : f64, hbm_bytes = 1.0 : f64, nic_bandwidth = 1.0 : f64, nvlink_bandwidth = 1.0 : f64, peak_flops = 1.0 : f64} {
}

// -----

// expected-error @+1 {{gpu_sharing 'fair' is not equal, backward or exclusive}}
afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 0.0 model_flops 0.0 compute_efficiency 1.0 gpu_sharing "fair" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 1.0 : f64, hbm_bytes = 1.0 : f64, nic_bandwidth = 1.0 : f64, nvlink_bandwidth = 1.0 : f64, peak_flops = 1.0 : f64} {
}

// -----

// expected-error @+1 {{hardware.peak_flops is missing (a float)}}
afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 0.0 model_flops 0.0 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64} {
}

// -----

afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 0.0 model_flops 0.0 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 1.0 : f64, hbm_bytes = 1.0 : f64, nic_bandwidth = 1.0 : f64, nvlink_bandwidth = 1.0 : f64, peak_flops = 1.0 : f64} {
  // expected-error @+1 {{ranks: every replica must have the same number of ranks}}
  afpipe.group "attention" 0 ranks [array<i64: 0, 1>, array<i64: 2>] static_bytes 0.0 nic_bandwidth 0.0
}

// -----

afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 0.0 model_flops 0.0 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 1.0 : f64, hbm_bytes = 1.0 : f64, nic_bandwidth = 1.0 : f64, nvlink_bandwidth = 1.0 : f64, peak_flops = 1.0 : f64} {
  afpipe.group "attention" 0 ranks [array<i64: 0>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.program "attention" {
    // expected-error @+1 {{compute runs on the forward or backward stream, not comm}}
    afpipe.compute "attention" on "comm" "forward" group 0 mb 0 layer 0 flops 1.0 mem_bytes 0.0 activation_bytes 0.0
  }
}

// -----

afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 0.0 model_flops 0.0 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 1.0 : f64, hbm_bytes = 1.0 : f64, nic_bandwidth = 1.0 : f64, nvlink_bandwidth = 1.0 : f64, peak_flops = 1.0 : f64} {
  afpipe.group "attention" 0 ranks [array<i64: 0>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.program "attention" {
    // expected-error @+1 {{stream 'sideways' is not forward, backward or comm}}
    afpipe.send "m2n" on "sideways" "forward" group 0 mb 0 layer 0 to 1 "all" bytes 1.0
  }
}

// -----

afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 0.0 model_flops 0.0 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 1.0 : f64, hbm_bytes = 1.0 : f64, nic_bandwidth = 1.0 : f64, nvlink_bandwidth = 1.0 : f64, peak_flops = 1.0 : f64} {
  afpipe.group "attention" 0 ranks [array<i64: 0>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.program "attention" {
    // expected-error @+1 {{peers 'some' is not all or same}}
    afpipe.recv "m2n" on "comm" "forward" group 0 mb 0 layer 0 from 1 "some" bytes 1.0
  }
}

// -----

afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 0.0 model_flops 0.0 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 1.0 : f64, hbm_bytes = 1.0 : f64, nic_bandwidth = 1.0 : f64, nvlink_bandwidth = 1.0 : f64, peak_flops = 1.0 : f64} {
  afpipe.group "attention" 0 ranks [array<i64: 0>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.group "ffn" 0 ranks [array<i64: 1>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.program "attention" {
    // expected-error @+1 {{group 1 has role 'ffn', not the program's 'attention'}}
    afpipe.compute "attention" on "forward" "forward" group 1 mb 0 layer 0 flops 1.0 mem_bytes 0.0 activation_bytes 0.0
  }
}

// -----

afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 0.0 model_flops 0.0 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 1.0 : f64, hbm_bytes = 1.0 : f64, nic_bandwidth = 1.0 : f64, nvlink_bandwidth = 1.0 : f64, peak_flops = 1.0 : f64} {
  afpipe.group "attention" 0 ranks [array<i64: 0>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.program "attention" {
    afpipe.compute "attention" on "forward" "forward" group 0 mb 0 layer 0 flops 1.0 mem_bytes 0.0 activation_bytes 0.0
    // expected-error @+1 {{after index 5 is not another instruction of this program (it has 2)}}
    afpipe.send "m2n" on "comm" "forward" group 0 mb 0 layer 0 to 1 "all" bytes 1.0 after [5]
  }
}

// -----

afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 0.0 model_flops 0.0 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 1.0 : f64, hbm_bytes = 1.0 : f64, nic_bandwidth = 1.0 : f64, nvlink_bandwidth = 1.0 : f64, peak_flops = 1.0 : f64} {
  afpipe.group "attention" 0 ranks [array<i64: 0>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.group "attention" 1 ranks [array<i64: 1>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.program "attention" {
    afpipe.compute "attention" on "forward" "forward" group 0 mb 0 layer 0 flops 1.0 mem_bytes 0.0 activation_bytes 0.0
    // expected-error @+1 {{after index 0 is an instruction of group 0, not of this instruction's group 1}}
    afpipe.compute "attention" on "forward" "forward" group 1 mb 0 layer 1 flops 1.0 mem_bytes 0.0 activation_bytes 0.0 after [0]
  }
}
