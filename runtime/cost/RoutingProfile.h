//===- RoutingProfile.h - per-layer per-expert loads (routing-profile.json) -*- C++ -*-===//
//
// Reader and writer of docs/routing-profile.md (version 1). The routing observatory writes these
// files; expert placement reads them. Never throws: errors are one line naming the file and field.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_RUNTIME_COST_ROUTINGPROFILE_H
#define DISAGMOE_RUNTIME_COST_ROUTINGPROFILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace disagmoe::cost {

struct RoutingProfile {
  std::string model, data;
  int64_t tokens = -1; ///< -1: absent
  int64_t topK = -1;   ///< -1: absent
  struct Layer {
    int64_t layer = 0;
    std::vector<int64_t> expertLoads; ///< (token, expert) assignments per expert
  };
  std::vector<Layer> layers;
};

/// Reads `path`. With `expectedExperts` > 0, refuses layers whose expert count differs.
bool readRoutingProfile(const std::string &path, RoutingProfile &out, std::string &error,
                        int64_t expectedExperts = 0) noexcept;
bool writeRoutingProfile(const std::string &path, const RoutingProfile &profile,
                         std::string &error) noexcept;

} // namespace disagmoe::cost

#endif
