// The nccl backend's control messages over TcpComm (TcpControlPlane.h).
#include "runtime/comm/nccl/TcpControlPlane.h"

#include <algorithm>

namespace disagmoe::nccl {
namespace {

// TcpComm tags of the control plane; one per kind, so each kind keeps its own FIFO per pair.
constexpr int kIdTag = 1, kPairIdsTag = 2, kHeaderTag = 3;

std::chrono::milliseconds until(ControlPlane::Clock::time_point deadline) {
  return std::max(
      std::chrono::milliseconds(0),
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - ControlPlane::Clock::now()));
}

} // namespace

TcpControlPlane::TcpControlPlane(const StoreLaunch &launch, std::chrono::milliseconds timeout)
    : comm_(TcpComm::start(launch, timeout)) {}

Bytes TcpControlPlane::recvOrExplain(int src, int tag, Clock::time_point deadline,
                                     const std::string &what) {
  const auto wait = until(deadline);
  try {
    return comm_->recv(src, tag, wait);
  } catch (const CommTimeout &) {
    throw CommError("rank " + std::to_string(rank()) + ": nccl comm: " + what + " from rank " +
                    std::to_string(src) + " did not arrive within " + std::to_string(wait.count()) +
                    " ms");
  }
}

Bytes TcpControlPlane::broadcastId(const Bytes &rootId, Clock::time_point deadline) {
  if (rank() != 0)
    return recvOrExplain(0, kIdTag, deadline, "the NCCL bootstrap id");
  for (int r = 1; r < worldSize(); ++r)
    comm_->send(r, kIdTag, rootId);
  return rootId;
}

void TcpControlPlane::sendPairIds(int peer, const Bytes &ids, Clock::time_point) {
  comm_->send(peer, kPairIdsTag, ids);
}

Bytes TcpControlPlane::recvPairIds(int peer, Clock::time_point deadline) {
  return recvOrExplain(peer, kPairIdsTag, deadline, "the NCCL ids of the pair's communicators");
}

void TcpControlPlane::postHeader(int dst, Bytes header) {
  comm_->send(dst, kHeaderTag, std::move(header));
}

std::vector<std::pair<int, Bytes>> TcpControlPlane::takeHeaders() {
  std::vector<std::pair<int, int>> sources;
  for (int r = 0; r < worldSize(); ++r)
    if (r != rank())
      sources.push_back({r, kHeaderTag});
  std::vector<std::pair<int, Bytes>> got;
  if (sources.empty())
    return got;
  try {
    Bytes b;
    for (int i; (i = comm_->recvAny(sources, b, std::chrono::milliseconds(0))) >= 0;)
      got.push_back({sources[static_cast<size_t>(i)].first, std::move(b)});
  } catch (const CommAborted &) {
    // A peer failed: takeAbortNote reports it; the headers taken so far are still delivered.
  }
  return got;
}

bool TcpControlPlane::barrierDone(Clock::time_point deadline) {
  comm_->finish(until(deadline));
  return true;
}

void TcpControlPlane::abortProcess(int exitCode, std::chrono::milliseconds grace) {
  comm_->abortJob(abortReason_, exitCode, grace);
}

} // namespace disagmoe::nccl
