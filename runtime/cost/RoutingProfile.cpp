//===- RoutingProfile.cpp -------------------------------------------------===//
#include "runtime/cost/RoutingProfile.h"
#include "runtime/io/JsonError.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace disagmoe::cost {

bool readRoutingProfile(const std::string &path, RoutingProfile &out, std::string &error,
                        int64_t expectedExperts) noexcept {
  try {
    std::ifstream in(path);
    if (!in)
      throw std::runtime_error("cannot open file");
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error &e) {
      // jsonParseError's words; the path is prefixed below, as for every error here.
      const std::string full = jsonParseError(path, e);
      throw std::runtime_error(full.substr(path.size() + 2));
    }
    if (!doc.is_object() || doc.value("format", "") != "disagmoe-routing-profile")
      throw std::runtime_error("format: expected \"disagmoe-routing-profile\"");
    if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"] != 1)
      throw std::runtime_error("version: expected 1");
    RoutingProfile p;
    p.model = doc.value("model", "");
    p.data = doc.value("data", "");
    auto optInt = [&](const char *key, int64_t &dst) {
      if (!doc.contains(key))
        return;
      if (!doc[key].is_number_integer() || doc[key].get<int64_t>() < 0)
        throw std::runtime_error(std::string(key) + ": must be a non-negative integer");
      dst = doc[key].get<int64_t>();
    };
    optInt("tokens", p.tokens);
    optInt("top_k", p.topK);
    if (!doc.contains("layers") || !doc["layers"].is_array())
      throw std::runtime_error("layers: missing or not an array");
    int64_t previous = -1;
    for (size_t i = 0; i < doc["layers"].size(); ++i) {
      const auto &l = doc["layers"][i];
      std::string at = "layers[" + std::to_string(i) + "]";
      if (!l.contains("layer") || !l["layer"].is_number_integer())
        throw std::runtime_error(at + ".layer: missing or not an integer");
      RoutingProfile::Layer layer;
      layer.layer = l["layer"].get<int64_t>();
      if (layer.layer <= previous)
        throw std::runtime_error(at + ".layer: " + std::to_string(layer.layer) +
                                 " is not in ascending order");
      previous = layer.layer;
      if (!l.contains("expert_loads") || !l["expert_loads"].is_array() || l["expert_loads"].empty())
        throw std::runtime_error(at + ".expert_loads: missing or empty");
      int64_t sum = 0;
      for (size_t e = 0; e < l["expert_loads"].size(); ++e) {
        const auto &v = l["expert_loads"][e];
        if (!v.is_number_integer() || v.get<int64_t>() < 0)
          throw std::runtime_error(at + ".expert_loads[" + std::to_string(e) +
                                   "]: must be an integer >= 0");
        layer.expertLoads.push_back(v.get<int64_t>());
        sum += layer.expertLoads.back();
      }
      int64_t experts = static_cast<int64_t>(layer.expertLoads.size());
      if (expectedExperts > 0 && experts != expectedExperts)
        throw std::runtime_error(at + ".expert_loads: " + std::to_string(experts) +
                                 " experts, the model has " + std::to_string(expectedExperts));
      if (p.tokens >= 0 && p.topK >= 0 && sum != p.tokens * p.topK)
        throw std::runtime_error(
            at + ".expert_loads: sum " + std::to_string(sum) + " differs from tokens * top_k = " +
            std::to_string(p.tokens * p.topK) + " (layer " + std::to_string(layer.layer) + ")");
      p.layers.push_back(std::move(layer));
    }
    out = std::move(p);
    return true;
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
    return false;
  }
}

bool writeRoutingProfile(const std::string &path, const RoutingProfile &p,
                         std::string &error) noexcept {
  try {
    nlohmann::json doc;
    doc["format"] = "disagmoe-routing-profile";
    doc["version"] = 1;
    doc["model"] = p.model;
    doc["data"] = p.data;
    if (p.tokens >= 0)
      doc["tokens"] = p.tokens;
    if (p.topK >= 0)
      doc["top_k"] = p.topK;
    doc["layers"] = nlohmann::json::array();
    for (const auto &l : p.layers)
      doc["layers"].push_back({{"layer", l.layer}, {"expert_loads", l.expertLoads}});
    std::ofstream out(path);
    if (!out)
      throw std::runtime_error("cannot write file");
    out << doc.dump(1) << "\n";
    if (!out)
      throw std::runtime_error("write failed");
    return true;
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
    return false;
  }
}

} // namespace disagmoe::cost
