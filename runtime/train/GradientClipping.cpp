// Global L2 gradient-norm clipping across ranks, bit-identical on every rank (GradientClipping.h).
#include "runtime/train/GradientClipping.h"

#include "runtime/executor/RankWorker.h"

#include <cmath>
#include <cstring>
#include <string>

namespace disagmoe::train {

int gradNormTag(const ModelSpec &model) {
  return static_cast<int>(6 * model.numLayers + static_cast<int64_t>(model.weights.size()) + 1);
}

double globalGradNorm(const Plan &plan, const RankState &state, Comm &comm,
                      std::chrono::milliseconds timeout) {
  double mine = 0;
  for (size_t i = 0; i < plan.model.weights.size(); ++i) {
    if (!state.holds(static_cast<int>(i)) || plan.model.weights[i].ranks.front() != state.rank)
      continue;
    for (float g : state.grads[i].data)
      mine += static_cast<double>(g) * static_cast<double>(g);
  }
  const int tag = gradNormTag(plan.model);
  const auto toBytes = [](double v) {
    Bytes b(sizeof v);
    std::memcpy(b.data(), &v, sizeof v);
    return b;
  };
  const auto fromBytes = [&](const Bytes &b, int src) {
    if (b.size() != sizeof(double))
      throw ExecError("rank " + std::to_string(state.rank) + ": gradient-norm message from rank " +
                      std::to_string(src) + " has " + std::to_string(b.size()) +
                      " bytes, expected 8");
    double v;
    std::memcpy(&v, b.data(), sizeof v);
    return v;
  };
  double total = mine;
  if (state.rank == 0) {
    for (int r = 1; r < comm.worldSize(); ++r)
      total += fromBytes(comm.recv(r, tag, timeout), r);
    for (int r = 1; r < comm.worldSize(); ++r)
      comm.send(r, tag, toBytes(total));
  } else {
    comm.send(0, tag, toBytes(mine));
    total = fromBytes(comm.recv(0, tag, timeout), 0);
  }
  return std::sqrt(total);
}

double clipGradients(RankState &state, double totalNorm, double maxNorm) {
  const double coef = maxNorm / (totalNorm + 1e-6);
  if (!(coef < 1.0))
    return 1.0;
  const float c = static_cast<float>(coef); // PyTorch multiplies by an fp32 tensor
  for (Tensor &g : state.grads)
    for (float &x : g.data)
      x *= c;
  return coef;
}

} // namespace disagmoe::train
