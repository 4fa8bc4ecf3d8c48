//===- ExchangeVolume.h - bytes moved by M2N/N2M vs an EP all-to-all -----===//
//
// Per MoE layer and micro-batch of T tokens with top-k routing over E experts placed on the R
// F-ranks of the layer's FFN group:
//
//   DisagMoE (docs/architecture.md, "Exchanges"): M2N sends each token once to every distinct
//   F-rank holding one of its experts; N2M returns one summed vector per such (token, F-rank) pair;
//   the residual route sends each token's h once to the next layer's attention group when that
//   group differs. With D(t) = number of distinct F-ranks among token t's experts:
//     m2n activation bytes = sum_t D(t) * H * b,   n2m bytes = sum_t D(t) * H * b,
//     residual bytes       = T * H * b  (only when the next layer runs on another attention group).
//   Conventional expert-parallel all-to-all (GShard / Megatron dispatch + combine): one copy per
//   token-expert assignment in each direction:
//     dispatch bytes = T * k * H * b,              combine bytes = T * k * H * b.
//   So M2N/dispatch = mean_t D(t) / k, which approaches 1/k when a token's experts share a rank.
//
// Uniform routing (each token's k experts a uniformly random k-subset of E): F-rank r holding E_r
// experts receives a token with probability 1 - C(E - E_r, k) / C(E, k), so
//     E[D] = sum_r [1 - C(E - E_r, k) / C(E, k)],
// which is R * [1 - C(E - E/R, k) / C(E, k)] for an even split (issue 4's closed form).
//
// Plain C++ (no MLIR): used by the exchange-volume pass and by tests.
//
//===----------------------------------------------------------------------===//
#ifndef DISAGMOE_PASSES_EXCHANGE_EXCHANGEVOLUME_H
#define DISAGMOE_PASSES_EXCHANGE_EXCHANGEVOLUME_H

#include <cstdint>
#include <vector>

namespace disagmoe {

/// Bytes of one MoE layer's exchanges for one micro-batch (activation payloads only: H * b per
/// token copy; message headers, token ids and gates are excluded from both sides).
struct ExchangeVolume {
  double m2nBytes = 0, n2mBytes = 0, residualBytes = 0; ///< DisagMoE
  double dispatchBytes = 0, combineBytes = 0;           ///< EP all-to-all baseline
  double destinationsPerToken = 0;                      ///< mean_t D(t) (or its expectation)

  double disagmoeBytes() const { return m2nBytes + n2mBytes + residualBytes; }
  double allToAllBytes() const { return dispatchBytes + combineBytes; }
};

/// Exact volume for a concrete routing. `topkIds` is [tokens][k] expert ids (each in
/// [0, expertToRank.size())); `expertToRank[e]` is the F-rank of expert e; `hidden` in elements,
/// `bytesPerElement` (4 for fp32, 2 for bf16). Returns all zeros for zero tokens.
ExchangeVolume concreteExchangeVolume(const std::vector<std::vector<int64_t>> &topkIds,
                                      const std::vector<int64_t> &expertToRank, int64_t hidden,
                                      int64_t bytesPerElement, bool residualCrossesGroups);

/// E[D] under uniform top-k routing for a placement given as experts per F-rank (closed form
/// above; binomials evaluated as ratios of products, exact for the sizes of real models).
double expectedDestinationRanks(const std::vector<int64_t> &expertsPerRank, int64_t topK);

/// Expected volume of `tokens` tokens under uniform routing.
ExchangeVolume expectedExchangeVolume(int64_t tokens, int64_t topK,
                                      const std::vector<int64_t> &expertsPerRank, int64_t hidden,
                                      int64_t bytesPerElement, bool residualCrossesGroups);

} // namespace disagmoe

#endif
