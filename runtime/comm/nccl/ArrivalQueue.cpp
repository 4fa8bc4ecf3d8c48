// nccl backend's per-source delivery in header-arrival order, CUDA-free (ArrivalQueue.h).
#include "runtime/comm/nccl/ArrivalQueue.h"

#include <string>

namespace disagmoe::nccl {

ArrivalQueue::ArrivalQueue(int worldSize)
    : fifo_(static_cast<size_t>(worldSize > 0 ? worldSize : 0)) {}

std::uint64_t ArrivalQueue::announce(int src, int tag, std::uint64_t size) {
  if (src < 0 || src >= static_cast<int>(fifo_.size()))
    throw CommError("nccl comm: a header from rank " + std::to_string(src) +
                    ", outside the world of " + std::to_string(fifo_.size()) + " ranks");
  const std::uint64_t slot = next_++;
  fifo_[src].push_back({slot, tag, size, size == 0, {}});
  if (size > 0)
    sourceOf_[slot] = src;
  return slot;
}

void ArrivalQueue::complete(std::uint64_t slot, Bytes payload) {
  const auto it = sourceOf_.find(slot);
  if (it == sourceOf_.end())
    throw CommError("nccl comm: payload for unknown message slot " + std::to_string(slot));
  const int src = it->second;
  for (Entry &e : fifo_[src])
    if (e.slot == slot) {
      if (payload.size() != e.size)
        throw CommError("nccl comm: message from rank " + std::to_string(src) + " (tag " +
                        std::to_string(e.tag) + ") has " + std::to_string(payload.size()) +
                        " bytes, its header announced " + std::to_string(e.size));
      e.bytes = std::move(payload);
      e.complete = true;
      sourceOf_.erase(it);
      return;
    }
}

std::vector<ArrivalQueue::Delivered> ArrivalQueue::takeDeliverable() {
  std::vector<Delivered> out;
  for (size_t src = 0; src < fifo_.size(); ++src) {
    auto &q = fifo_[src];
    while (!q.empty() && q.front().complete) {
      out.push_back({static_cast<int>(src), q.front().tag, std::move(q.front().bytes)});
      q.pop_front();
    }
  }
  return out;
}

std::size_t ArrivalQueue::pending() const {
  std::size_t n = 0;
  for (const auto &q : fifo_)
    n += q.size();
  return n;
}

} // namespace disagmoe::nccl
