// afpipe-verify on broken schedules: each error is reported on the instruction it names (or on
// the schedule) with the rank pair, as lit's -verify-diagnostics pins.
// RUN: disagmoe-opt %s -split-input-file -verify-diagnostics --afpipe-verify

// Receives posted in the wrong order.
afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 1.0e9 model_flops 4.0e3 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 3.35e12 : f64, hbm_bytes = 8.0e10 : f64, name = "h800-1x8", nic_bandwidth = 5.0e10 : f64, nvlink_bandwidth = 2.0e11 : f64, peak_flops = 9.894e14 : f64} {
  afpipe.group "attention" 0 ranks [array<i64: 0>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.group "ffn" 0 ranks [array<i64: 1>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.program "attention" {
    afpipe.compute "attention" on "forward" "forward" group 0 mb 0 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0
    // expected-error @+1 {{afpipe-verify: rank 0 (attention 0) -> rank 1 (ffn 0): message #0: attention[1] (group attention 0): send m2n forward mb 0 layer 0 to ffn 0 is matched by ffn[0] (group ffn 0): recv m2n forward mb 1 layer 0 from attention 0 (the receive of m2n forward mb 0 layer 0 is posted at another position}}
    afpipe.send "m2n" on "comm" "forward" group 0 mb 0 layer 0 to 1 "all" bytes 100.0 after [0]
    afpipe.compute "attention" on "forward" "forward" group 0 mb 1 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0
    afpipe.send "m2n" on "comm" "forward" group 0 mb 1 layer 0 to 1 "all" bytes 100.0 after [2]
    afpipe.recv "n2m" on "comm" "forward" group 0 mb 0 layer 0 from 1 "all" bytes 50.0
    afpipe.recv "n2m" on "comm" "forward" group 0 mb 1 layer 0 from 1 "all" bytes 50.0
    afpipe.compute "head" on "forward" "forward" group 0 mb 0 layer 1 flops 1.0e3 mem_bytes 0.0 activation_bytes 0.0 after [4]
    afpipe.compute "head" on "forward" "forward" group 0 mb 1 layer 1 flops 1.0e3 mem_bytes 0.0 activation_bytes 0.0 after [5]
  }
  afpipe.program "ffn" {
    afpipe.recv "m2n" on "comm" "forward" group 1 mb 1 layer 0 from 0 "all" bytes 100.0
    afpipe.recv "m2n" on "comm" "forward" group 1 mb 0 layer 0 from 0 "all" bytes 100.0
    afpipe.compute "experts" on "forward" "forward" group 1 mb 0 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0 after [0]
    afpipe.compute "experts" on "forward" "forward" group 1 mb 1 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0 after [1]
    afpipe.send "n2m" on "comm" "forward" group 1 mb 0 layer 0 to 0 "all" bytes 50.0 after [2]
    afpipe.send "n2m" on "comm" "forward" group 1 mb 1 layer 0 to 0 "all" bytes 50.0 after [3]
  }
}

// -----

// A receive missing: the second message would never be taken.
afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 1.0e9 model_flops 4.0e3 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 3.35e12 : f64, hbm_bytes = 8.0e10 : f64, name = "h800-1x8", nic_bandwidth = 5.0e10 : f64, nvlink_bandwidth = 2.0e11 : f64, peak_flops = 9.894e14 : f64} {
  afpipe.group "attention" 0 ranks [array<i64: 0>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.group "ffn" 0 ranks [array<i64: 1>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.program "attention" {
    afpipe.compute "attention" on "forward" "forward" group 0 mb 0 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0
    afpipe.send "m2n" on "comm" "forward" group 0 mb 0 layer 0 to 1 "all" bytes 100.0 after [0]
    afpipe.compute "attention" on "forward" "forward" group 0 mb 1 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0
    // expected-error @+1 {{afpipe-verify: rank 0 (attention 0) -> rank 1 (ffn 0): attention[3] (group attention 0): send m2n forward mb 1 layer 0 to ffn 0 has no matching receive (ffn 0 posts 1 receives from attention 0, which sends 2; the receive of m2n forward mb 1 layer 0 is missing)}}
    afpipe.send "m2n" on "comm" "forward" group 0 mb 1 layer 0 to 1 "all" bytes 100.0 after [2]
    afpipe.recv "n2m" on "comm" "forward" group 0 mb 0 layer 0 from 1 "all" bytes 50.0
    afpipe.recv "n2m" on "comm" "forward" group 0 mb 1 layer 0 from 1 "all" bytes 50.0
    afpipe.compute "head" on "forward" "forward" group 0 mb 0 layer 1 flops 1.0e3 mem_bytes 0.0 activation_bytes 0.0 after [4]
    afpipe.compute "head" on "forward" "forward" group 0 mb 1 layer 1 flops 1.0e3 mem_bytes 0.0 activation_bytes 0.0 after [5]
  }
  afpipe.program "ffn" {
    afpipe.recv "m2n" on "comm" "forward" group 1 mb 0 layer 0 from 0 "all" bytes 100.0
    afpipe.compute "experts" on "forward" "forward" group 1 mb 0 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0 after [0]
    afpipe.compute "experts" on "forward" "forward" group 1 mb 1 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0
    afpipe.send "n2m" on "comm" "forward" group 1 mb 0 layer 0 to 0 "all" bytes 50.0 after [1]
    afpipe.send "n2m" on "comm" "forward" group 1 mb 1 layer 0 to 0 "all" bytes 50.0 after [2]
  }
}

// -----

// Sizes disagree.
afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 1.0e9 model_flops 4.0e3 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 3.35e12 : f64, hbm_bytes = 8.0e10 : f64, name = "h800-1x8", nic_bandwidth = 5.0e10 : f64, nvlink_bandwidth = 2.0e11 : f64, peak_flops = 9.894e14 : f64} {
  afpipe.group "attention" 0 ranks [array<i64: 0>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.group "ffn" 0 ranks [array<i64: 1>] static_bytes 0.0 nic_bandwidth 0.0
  afpipe.program "attention" {
    afpipe.compute "attention" on "forward" "forward" group 0 mb 0 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0
    // expected-error @+1 {{afpipe-verify: rank 0 (attention 0) -> rank 1 (ffn 0): attention[1] (group attention 0): send m2n forward mb 0 layer 0 to ffn 0 sends 100 bytes per rank pair but ffn[0] (group ffn 0): recv m2n forward mb 0 layer 0 from attention 0 expects 200 bytes}}
    afpipe.send "m2n" on "comm" "forward" group 0 mb 0 layer 0 to 1 "all" bytes 100.0 after [0]
    afpipe.compute "attention" on "forward" "forward" group 0 mb 1 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0
    afpipe.send "m2n" on "comm" "forward" group 0 mb 1 layer 0 to 1 "all" bytes 100.0 after [2]
    afpipe.recv "n2m" on "comm" "forward" group 0 mb 0 layer 0 from 1 "all" bytes 50.0
    afpipe.recv "n2m" on "comm" "forward" group 0 mb 1 layer 0 from 1 "all" bytes 50.0
    afpipe.compute "head" on "forward" "forward" group 0 mb 0 layer 1 flops 1.0e3 mem_bytes 0.0 activation_bytes 0.0 after [4]
    afpipe.compute "head" on "forward" "forward" group 0 mb 1 layer 1 flops 1.0e3 mem_bytes 0.0 activation_bytes 0.0 after [5]
  }
  afpipe.program "ffn" {
    afpipe.recv "m2n" on "comm" "forward" group 1 mb 0 layer 0 from 0 "all" bytes 200.0
    afpipe.recv "m2n" on "comm" "forward" group 1 mb 1 layer 0 from 0 "all" bytes 100.0
    afpipe.compute "experts" on "forward" "forward" group 1 mb 0 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0 after [0]
    afpipe.compute "experts" on "forward" "forward" group 1 mb 1 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0 after [1]
    afpipe.send "n2m" on "comm" "forward" group 1 mb 0 layer 0 to 0 "all" bytes 50.0 after [2]
    afpipe.send "n2m" on "comm" "forward" group 1 mb 1 layer 0 to 0 "all" bytes 50.0 after [3]
  }
}

// -----

// The placement has a third rank that no group holds.
module attributes {moe.placement = {world_size = 3 : i64}} {
// expected-error @+1 {{afpipe-verify: rank 2 is in no schedule group: it would be left without work}}
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
}

// -----

// Two micro-batches of 10 activation bytes in flight exceed 15 bytes.
// expected-error @+1 {{afpipe-verify: rank 0 (attention 0): peak memory}}
afpipe.schedule "afpipe" micro_batches 2 virtual_stages 1 pipeline_stages 2 replicas 1 capacity_bytes 15.0 model_flops 4.0e3 compute_efficiency 1.0 gpu_sharing "equal" hardware {gpus_per_node = 8 : i64, hbm_bandwidth = 3.35e12 : f64, hbm_bytes = 8.0e10 : f64, name = "h800-1x8", nic_bandwidth = 5.0e10 : f64, nvlink_bandwidth = 2.0e11 : f64, peak_flops = 9.894e14 : f64} {
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

// -----

// experts mb 0 waits for experts mb 1, which its stream runs after it: nothing completes.
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
    // expected-error @+1 {{afpipe-verify: the schedule does not complete (rank 0 would wait forever): attention[6] (group attention 0): compute head forward mb 0 layer 1: it waits on attention[4]}}
    afpipe.compute "head" on "forward" "forward" group 0 mb 0 layer 1 flops 1.0e3 mem_bytes 0.0 activation_bytes 0.0 after [4]
    afpipe.compute "head" on "forward" "forward" group 0 mb 1 layer 1 flops 1.0e3 mem_bytes 0.0 activation_bytes 0.0 after [5]
  }
  afpipe.program "ffn" {
    afpipe.recv "m2n" on "comm" "forward" group 1 mb 0 layer 0 from 0 "all" bytes 100.0
    afpipe.recv "m2n" on "comm" "forward" group 1 mb 1 layer 0 from 0 "all" bytes 100.0
    afpipe.compute "experts" on "forward" "forward" group 1 mb 0 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0 after [0, 3]
    afpipe.compute "experts" on "forward" "forward" group 1 mb 1 layer 0 flops 1.0e3 mem_bytes 0.0 activation_bytes 10.0 after [1]
    afpipe.send "n2m" on "comm" "forward" group 1 mb 0 layer 0 to 0 "all" bytes 50.0 after [2]
    afpipe.send "n2m" on "comm" "forward" group 1 mb 1 layer 0 to 0 "all" bytes 50.0 after [3]
  }
}
