//===- Hardware.cpp - GPU, NIC and cluster spec loaders -------------------===//
#include "runtime/cost/Hardware.h"
#include "runtime/io/FileKind.h"
#include "runtime/io/JsonError.h"
#include "runtime/io/YamlReading.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>

#ifndef DISAGMOE_COST_DATA_DIR
#define DISAGMOE_COST_DATA_DIR "runtime/cost/data"
#endif

namespace disagmoe::cost {

const GpuSpec *HardwareCatalog::findGpu(const std::string &name) const {
  for (const GpuSpec &g : gpus)
    if (g.name == name || g.fullName == name)
      return &g;
  return nullptr;
}

const NicSpec *HardwareCatalog::findNic(const std::string &name) const {
  for (const NicSpec &n : nics)
    if (n.name == name)
      return &n;
  return nullptr;
}

double ClusterSpec::perGpuNetworkBandwidth() const {
  double share = nic.bandwidth * nicsPerNode / gpusPerNode;
  return gpu.pcieBandwidth > 0 ? std::min(share, gpu.pcieBandwidth) : share;
}

double turningPoint(const GpuSpec &gpu, const NicSpec &nic) {
  return gpu.peakFlops / nic.bandwidth;
}

std::string defaultHardwareCatalogPath() {
  return std::string(DISAGMOE_COST_DATA_DIR) + "/hardware.json";
}

namespace {
// The value of a cluster field as T, or a one-line error naming the key and what it holds.
template <class T> T scalarOf(const YAML::Node &value, const char *key, const char *expected) {
  try {
    return value.as<T>();
  } catch (const YAML::BadConversion &) {
    std::string got = value.IsScalar()     ? "'" + value.Scalar() + "'"
                      : value.IsSequence() ? std::string("a list")
                      : value.IsMap()      ? std::string("a mapping")
                                           : std::string("nothing");
    throw std::runtime_error(std::string(key) + ": expected " + expected + ", got " + got +
                             (value.Mark().is_null()
                                  ? std::string()
                                  : " (line " + std::to_string(value.Mark().line + 1) + ")"));
  }
}

// "H100, H800, H200" from a catalog's entries.
template <class Spec> std::string namesOf(const std::vector<Spec> &specs) {
  std::string out;
  for (const Spec &s : specs)
    out += (out.empty() ? "" : ", ") + s.name;
  return out.empty() ? "no entries" : out;
}

double positive(const nlohmann::json &obj, const char *key, const std::string &where) {
  if (!obj.contains(key) || !obj[key].is_number())
    throw std::runtime_error(where + "." + key + ": missing or not a number");
  double v = obj[key].get<double>();
  if (!(v > 0))
    throw std::runtime_error(where + "." + key + ": must be positive, got " + obj[key].dump());
  return v;
}
} // namespace

bool loadHardwareCatalog(const std::string &path, HardwareCatalog &out,
                         std::string &error) noexcept {
  try {
    if (const std::string why = inputRefusal(path); !why.empty())
      throw std::runtime_error(why);
    std::ifstream in(path);
    if (!in)
      throw std::runtime_error("cannot open file");
    nlohmann::json doc = nlohmann::json::parse(in);
    if (!doc.is_object())
      throw std::runtime_error("expected a JSON object (format, version, gpus, nics)");
    for (const char *list : {"gpus", "nics"}) {
      if (doc.contains(list) && !doc[list].is_array())
        throw std::runtime_error(std::string(list) + ": expected an array of objects");
      if (doc.contains(list))
        for (size_t i = 0; i < doc[list].size(); ++i)
          if (!doc[list][i].is_object())
            throw std::runtime_error(std::string(list) + "[" + std::to_string(i) +
                                     "]: expected an object");
    }
    if (doc.value("format", "") != "disagmoe-hardware" || doc.value("version", 0) != 1)
      throw std::runtime_error("format/version: expected \"disagmoe-hardware\" version 1");
    HardwareCatalog cat;
    for (size_t i = 0; i < doc.at("gpus").size(); ++i) {
      const auto &g = doc["gpus"][i];
      std::string where = "gpus[" + std::to_string(i) + "]";
      GpuSpec s;
      s.name = g.at("name").get<std::string>();
      s.fullName = g.value("full_name", s.name);
      s.peakFlops = positive(g, "bf16_dense_tflops", where) * 1e12;
      s.hbmBytes = positive(g, "hbm_gb", where) * 1e9;
      s.hbmBandwidth = positive(g, "hbm_bw_tbps", where) * 1e12;
      s.nvlinkBandwidth = positive(g, "nvlink_per_direction_GBps", where) * 1e9;
      s.pcieBandwidth = positive(g, "pcie_per_direction_GBps", where) * 1e9;
      cat.gpus.push_back(s);
    }
    for (size_t i = 0; i < doc.at("nics").size(); ++i) {
      const auto &n = doc["nics"][i];
      NicSpec s;
      s.name = n.at("name").get<std::string>();
      s.bandwidth = positive(n, "per_direction_GBps", "nics[" + std::to_string(i) + "]") * 1e9;
      cat.nics.push_back(s);
    }
    out = std::move(cat);
    return true;
  } catch (const nlohmann::json::parse_error &e) {
    error = jsonParseError(path, e);
    return false;
  } catch (const nlohmann::json::exception &e) {
    error = path + ": " + jsonReason(e);
    return false;
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
    return false;
  }
}

bool loadCluster(const std::string &path, const HardwareCatalog &catalog, ClusterSpec &out,
                 std::string &error) noexcept {
  try {
    YAML::Node doc;
    if (const std::string why = inputRefusal(path); !why.empty())
      throw std::runtime_error(why);
    try {
      doc = YAML::LoadFile(path);
    } catch (const YAML::BadFile &) {
      throw std::runtime_error("cannot open file");
    }
    if (!doc.IsMap())
      throw std::runtime_error("expected a mapping of cluster fields");
    if (const std::string twice = duplicateKey(doc); !twice.empty())
      throw std::runtime_error(twice);
    auto need = [&](const char *key) {
      if (!doc[key])
        throw std::runtime_error(std::string(key) + ": missing");
      return doc[key];
    };
    auto positiveInt = [&](const char *key) {
      int v = scalarOf<int>(need(key), key, "an integer");
      if (v < 1)
        throw std::runtime_error(std::string(key) + ": must be at least 1, got " +
                                 std::to_string(v));
      return v;
    };
    ClusterSpec c;
    c.name = doc["name"] ? scalarOf<std::string>(doc["name"], "name", "a name") : path;
    std::string gpu = scalarOf<std::string>(need("gpu"), "gpu", "a GPU name");
    const GpuSpec *g = catalog.findGpu(gpu);
    if (!g)
      throw std::runtime_error("gpu: unknown GPU '" + gpu + "' (the hardware catalog has " +
                               namesOf(catalog.gpus) + ")");
    c.gpu = *g;
    std::string nic = scalarOf<std::string>(need("nic"), "nic", "a NIC name");
    const NicSpec *n = catalog.findNic(nic);
    if (!n)
      throw std::runtime_error("nic: unknown NIC '" + nic + "' (the hardware catalog has " +
                               namesOf(catalog.nics) + ")");
    c.nic = *n;
    c.nodes = positiveInt("nodes");
    c.gpusPerNode = positiveInt("gpus_per_node");
    c.nicsPerNode = positiveInt("nics_per_node");
    c.nvlinkBandwidth = c.gpu.nvlinkBandwidth;
    if (doc["nic_bandwidth_GBps"]) {
      double v = scalarOf<double>(doc["nic_bandwidth_GBps"], "nic_bandwidth_GBps", "a number");
      if (!(v > 0))
        throw std::runtime_error("nic_bandwidth_GBps: must be positive");
      c.nic.bandwidth = v * 1e9;
    }
    if (doc["nvlink_GBps"]) {
      double v = scalarOf<double>(doc["nvlink_GBps"], "nvlink_GBps", "a number");
      if (!(v > 0))
        throw std::runtime_error("nvlink_GBps: must be positive");
      c.nvlinkBandwidth = v * 1e9;
    }
    for (auto it = doc.begin(); it != doc.end(); ++it) {
      static const char *known[] = {"name",
                                    "gpu",
                                    "nic",
                                    "nodes",
                                    "gpus_per_node",
                                    "nics_per_node",
                                    "nic_bandwidth_GBps",
                                    "nvlink_GBps"};
      std::string key = it->first.as<std::string>();
      if (std::find(std::begin(known), std::end(known), key) == std::end(known))
        throw std::runtime_error(key + ": unknown key");
    }
    out = c;
    return true;
  } catch (const YAML::ParserException &e) {
    error = path + ": not valid YAML: " + yamlReason(e);
    return false;
  } catch (const YAML::Exception &e) {
    error = path + ": " + yamlReason(e);
    return false;
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
    return false;
  }
}

} // namespace disagmoe::cost
