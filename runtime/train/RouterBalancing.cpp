// The router's load balancing in training: the auxiliary loss (forward and its logit gradient)
// and the capacity factor's drops, each agreed over the A-ranks of a layer's group (TrainWorker.h).
#include "runtime/train/TrainWorker.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace disagmoe::train::detail {

// p_t = softmax(z_t) of local token t, in double (as routerGatesBackward).
void TrainWorker::routerProbs(const float *z, std::vector<double> &p) const {
  const int64_t E = model_.numExperts;
  double m = -INFINITY, sum = 0;
  for (int64_t e = 0; e < E; ++e)
    m = std::max(m, static_cast<double>(z[e]));
  for (int64_t e = 0; e < E; ++e)
    sum += p[e] = std::exp(z[e] - m);
  for (int64_t e = 0; e < E; ++e)
    p[e] /= sum;
}

// Aux loss forward of layer l (StepConfig::auxLossCoef): every A-rank of the layer's group sends
// its [counts c (E), probability sums (E), tokens] to every other and adds all of them in
// ascending rank order, so each holds the same bits of c, sum_t p_t and T_m. The lowest A-rank
// adds the layer's (T_m / T)-weighted aux value to the loss.
void TrainWorker::auxForward(int64_t l) {
  AttentionLayer &a = attn_[l];
  const int64_t E = model_.numExperts, k = model_.topK;
  std::vector<double> mine(static_cast<size_t>(2 * E + 1), 0.0), p(static_cast<size_t>(E));
  for (int64_t t = 0; t < n(); ++t) {
    for (int64_t j = 0; j < k; ++j)
      mine[a.topIds[t * k + j]] += 1;
    routerProbs(a.logits.data() + t * E, p);
    for (int64_t e = 0; e < E; ++e)
      mine[E + e] += p[e];
  }
  mine[2 * E] = static_cast<double>(n());
  const std::vector<int> &ranks = placement_.attentionGroupOfLayer(l).ranks;
  const int tag = auxCountTag(model_, l);
  Bytes out(mine.size() * sizeof(double));
  std::memcpy(out.data(), mine.data(), out.size());
  for (int r : ranks)
    if (r != rank_)
      send(r, tag, out);
  std::vector<double> total(mine.size(), 0.0), part(mine.size());
  for (int r : ranks) {
    if (r == rank_) {
      part = mine;
    } else {
      const Bytes in = recv(r, tag);
      if (in.size() != out.size())
        throw ExecError("aux-loss counts from rank " + std::to_string(r) + " have " +
                        std::to_string(in.size()) + " bytes, expected " +
                        std::to_string(out.size()));
      std::memcpy(part.data(), in.data(), in.size());
    }
    for (size_t i = 0; i < total.size(); ++i)
      total[i] += part[i];
  }
  a.auxCounts.assign(total.begin(), total.begin() + E);
  a.auxTokens = static_cast<int64_t>(total[2 * E]);
  a.hasAux = a.auxTokens > 0;
  if (!a.hasAux || index_ != 0)
    return;
  double dot = 0;
  for (int64_t e = 0; e < E; ++e)
    dot += total[e] * total[E + e];
  auxSum_ += auxCoef_ * static_cast<double>(E) * dot /
             (static_cast<double>(k) * static_cast<double>(a.auxTokens) *
              static_cast<double>(globalTokens_));
}

// Capacity factor (StepConfig::capacityFactor) of layer l: every A-rank of the group sends its
// token ids and top-k choices to every other, so each sees the micro-batch's T_m tokens and marks
// the same assignments dropped: capacity ceil(C T_m k / E) per expert, filled by every token's
// first choice in token-id order, then every second choice, ... (GShard's priority).
void TrainWorker::capacityForward(int64_t l) {
  AttentionLayer &a = attn_[l];
  const int64_t E = model_.numExperts, k = model_.topK;
  const std::vector<int> &ranks = placement_.attentionGroupOfLayer(l).ranks;
  const int tag = capacityTag(model_, l);
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(n() * (k + 1)));
  for (int64_t t = 0; t < n(); ++t) {
    mine.push_back(tokens_[t]);
    mine.insert(mine.end(), a.topIds.begin() + t * k, a.topIds.begin() + (t + 1) * k);
  }
  Bytes out(mine.size() * sizeof(int64_t));
  std::memcpy(out.data(), mine.data(), out.size());
  for (int r : ranks)
    if (r != rank_)
      send(r, tag, out);
  struct Choice {
    int64_t token, expert;
    bool ownRow;
    int64_t slot; // index into a.dropped when ownRow
  };
  std::vector<std::vector<Choice>> bySlot(static_cast<size_t>(k));
  for (int r : ranks) {
    std::vector<int64_t> rows;
    if (r == rank_) {
      rows = mine;
    } else {
      const Bytes in = recv(r, tag);
      if (in.size() % ((k + 1) * sizeof(int64_t)) != 0)
        throw ExecError("capacity choices from rank " + std::to_string(r) + " have " +
                        std::to_string(in.size()) + " bytes, not a multiple of " +
                        std::to_string((k + 1) * sizeof(int64_t)));
      rows.resize(in.size() / sizeof(int64_t));
      std::memcpy(rows.data(), in.data(), in.size());
    }
    for (size_t i = 0; i * (k + 1) < rows.size(); ++i)
      for (int64_t j = 0; j < k; ++j) {
        const int64_t e = rows[i * (k + 1) + 1 + j];
        if (e < 0 || e >= E)
          throw ExecError("capacity choices from rank " + std::to_string(r) + " name expert " +
                          std::to_string(e));
        bySlot[j].push_back({rows[i * (k + 1)], e, r == rank_, static_cast<int64_t>(i) * k + j});
      }
  }
  const int64_t tokens = static_cast<int64_t>(bySlot[0].size());
  const auto capacity =
      static_cast<int64_t>(std::ceil(capacityFactor_ * static_cast<double>(tokens) *
                                     static_cast<double>(k) / static_cast<double>(E)));
  std::vector<int64_t> used(static_cast<size_t>(E), 0);
  for (auto &choices : bySlot) {
    std::sort(choices.begin(), choices.end(),
              [](const Choice &x, const Choice &y) { return x.token < y.token; });
    for (const Choice &c : choices) {
      const bool over = used[c.expert] >= capacity;
      if (!over)
        ++used[c.expert];
      if (over && c.ownRow) {
        a.dropped[c.slot] = 1;
        ++dropped_[l];
      }
    }
  }
}

// d aux / d z_tj = alpha E / (k T_m T) * p_tj (c_j - <p_t, c>), added to dLogits [n, E].
void TrainWorker::auxBackward(int64_t l, std::vector<float> &dLogits) {
  const AttentionLayer &a = attn_[l];
  const int64_t E = model_.numExperts, k = model_.topK;
  const double coef = auxCoef_ * static_cast<double>(E) /
                      (static_cast<double>(k) * static_cast<double>(a.auxTokens) *
                       static_cast<double>(globalTokens_));
  std::vector<double> p(static_cast<size_t>(E));
  for (int64_t t = 0; t < n(); ++t) {
    routerProbs(a.logits.data() + t * E, p);
    double pc = 0;
    for (int64_t e = 0; e < E; ++e)
      pc += p[e] * a.auxCounts[e];
    for (int64_t e = 0; e < E; ++e)
      dLogits[t * E + e] += static_cast<float>(coef * p[e] * (a.auxCounts[e] - pc));
  }
}

} // namespace disagmoe::train::detail
