// A uniform-stage model for the schedule tests: every layer's attention and experts take `t`
// seconds forward (2t backward), every M2N/N2M hop `tm` seconds, on a machine of 1 TFLOP/s with one
// GPU per node (so every exchange crosses a NIC of 1 GB/s).
#pragma once

#include "passes/schedule/AfPipe.h"

namespace simtest {

inline disagmoe::sched::Hardware uniformHardware(int gpusPerNode = 1) {
  disagmoe::sched::Hardware hw;
  hw.name = "uniform";
  hw.peakFlops = 1e12;
  hw.hbmBandwidth = 1e12;
  hw.hbmBytes = 80e9;
  hw.nvlinkBandwidth = 4e9;
  hw.nicBandwidth = 1e9;
  hw.gpusPerNode = gpusPerNode;
  return hw;
}

/// L layers; with dA = eF = 1 the per-pair bytes are the per-hop bytes.
inline disagmoe::afpipe::Workload uniformWorkload(int layers, double t, double tm,
                                                  double residualBytes = 0) {
  disagmoe::afpipe::Workload w;
  for (int l = 0; l < layers; ++l) {
    disagmoe::afpipe::LayerWork lw;
    lw.attnFwdFlops = t * 1e12;
    lw.attnBwdFlops = 2 * t * 1e12;
    lw.ffnFwdFlops = t * 1e12;
    lw.ffnBwdFlops = 2 * t * 1e12;
    lw.m2nBytes = lw.n2mBytes = lw.m2nBwdBytes = lw.n2mBwdBytes = tm * 1e9;
    lw.residualBytes = residualBytes;
    lw.attnActivationBytes = 1e6;
    lw.ffnActivationBytes = 1e6;
    w.layers.push_back(lw);
  }
  w.modelFlops = 1;
  return w;
}

inline disagmoe::afpipe::Config uniformConfig(int groups, int microbatches) {
  disagmoe::afpipe::Config c;
  c.groups = groups;
  c.microbatches = microbatches;
  c.attnRanks = 1;
  c.ffnRanks = 1;
  c.reserveBytes = 0;
  return c;
}

} // namespace simtest
