//===- Hardware.h - GPU, NIC and cluster specs of the machine model -*- C++ -*-===//
//
// The machine half of the roofline cost model (docs/cost-model.md). Specs are data files:
//   runtime/cost/data/hardware.json  GPUs and NICs, seeded from docs/reference/hardware.json
//   samples/clusters/*.yaml          clusters: nodes, GPUs and NICs per node, link overrides
// Units: FLOP/s, bytes, bytes/s (per direction), seconds. Loaders never throw: they return false
// and set `error` to one line naming the file and field, so MLIR code (-fno-exceptions) can call
// them.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_COST_HARDWARE_H
#define DISAGMOE_RUNTIME_COST_HARDWARE_H

#include <string>
#include <vector>

namespace disagmoe::cost {

/// One GPU model. `peakFlops` is the dense bf16 tensor-core peak (FLOP/s): NVIDIA headlines the
/// 2:4-sparse figure, dense = sparse / 2 (hardware.json, "conventions.tflops").
struct GpuSpec {
  std::string name;           ///< short key used by cluster files, e.g. "H800"
  std::string fullName;       ///< e.g. "H800 SXM5 80GB"
  double peakFlops = 0;       ///< FLOP/s, dense bf16
  double hbmBytes = 0;        ///< bytes of HBM (GB = 1e9 bytes)
  double hbmBandwidth = 0;    ///< bytes/s
  double nvlinkBandwidth = 0; ///< bytes/s per direction (NVIDIA's headline figure / 2)
  double pcieBandwidth = 0;   ///< bytes/s per direction, GPU <-> host/NIC
};

/// One NIC model; `bandwidth` is per direction (400 Gb/s = 50e9 bytes/s each way, full duplex).
struct NicSpec {
  std::string name;
  double bandwidth = 0; ///< bytes/s per direction
};

/// The GPUs and NICs a cluster file may name.
struct HardwareCatalog {
  std::vector<GpuSpec> gpus;
  std::vector<NicSpec> nics;
  const GpuSpec *findGpu(const std::string &name) const;
  const NicSpec *findNic(const std::string &name) const;
};

/// A homogeneous cluster: `nodes` nodes of `gpusPerNode` GPUs and `nicsPerNode` NICs.
struct ClusterSpec {
  std::string name;
  GpuSpec gpu;
  NicSpec nic;
  int nodes = 0, gpusPerNode = 0, nicsPerNode = 0;
  /// NVLink bandwidth per GPU per direction (bytes/s); defaults to the GPU's, a cluster file may
  /// lower it (H800: 200e9 spec, ~160e9 achievable, hardware.json).
  double nvlinkBandwidth = 0;
  int gpus() const { return nodes * gpusPerNode; }
  int nics() const { return nodes * nicsPerNode; }
  /// NIC bandwidth one GPU can drive when every GPU uses its node's NICs evenly (bytes/s): the
  /// node's NIC bandwidth shared by its GPUs, capped by the GPU's PCIe link.
  double perGpuNetworkBandwidth() const;
};

/// The roofline turning point I = peak FLOP/s / NIC bandwidth, in FLOPs per byte of network
/// traffic (DisagMoE §"Adaptive worker allocation"; docs/reference/papers.md). A stage whose
/// FLOPs per exchanged byte exceed I (with its GPU:NIC ratio) is compute-bound.
double turningPoint(const GpuSpec &gpu, const NicSpec &nic);

/// Reads the catalog (JSON: {"gpus": [...], "nics": [...]}, fields in docs/cost-model.md).
bool loadHardwareCatalog(const std::string &path, HardwareCatalog &out,
                         std::string &error) noexcept;
/// The catalog committed in the source tree (runtime/cost/data/hardware.json).
std::string defaultHardwareCatalogPath();

/// Reads a cluster YAML file (samples/clusters/*.yaml). Keys: name, gpu, nodes, gpus_per_node,
/// nic, nics_per_node; optional nic_bandwidth_GBps, nvlink_GBps (per direction, GB = 1e9 bytes).
bool loadCluster(const std::string &path, const HardwareCatalog &catalog, ClusterSpec &out,
                 std::string &error) noexcept;

} // namespace disagmoe::cost

#endif
