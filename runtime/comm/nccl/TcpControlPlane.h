// The nccl backend's control plane under a torchrun-style launch (ControlPlane.h): the ranks meet
// at MASTER_ADDR:MASTER_PORT (runtime/comm/tcp/TcpRendezvous.h) and every control message goes
// over TcpComm's mesh, one tag per kind. Rank 0's ncclUniqueId reaches every rank as one message
// from rank 0; a peer whose process ends without its done note is reported as TcpComm reports it
// ("rank R's connection closed before it finished"). Needs neither MPI nor CUDA, so every build
// compiles it and its unit test runs the whole exchange between threads.
#pragma once

#include "runtime/comm/nccl/ControlPlane.h"
#include "runtime/comm/tcp/TcpComm.h"

#include <memory>

namespace disagmoe::nccl {

class TcpControlPlane : public ControlPlane {
public:
  /// Rendezvous and mesh (TcpComm::start), all before now + `timeout`. Throws CommError naming
  /// MASTER_ADDR:MASTER_PORT or the peer whose connection failed.
  TcpControlPlane(const StoreLaunch &launch, std::chrono::milliseconds timeout);

  int rank() const override { return comm_->rank(); }
  int worldSize() const override { return comm_->worldSize(); }
  Bytes broadcastId(const Bytes &rootId, Clock::time_point deadline) override;
  void sendPairIds(int peer, const Bytes &ids, Clock::time_point deadline) override;
  Bytes recvPairIds(int peer, Clock::time_point deadline) override;
  void postHeader(int dst, Bytes header) override;
  std::vector<std::pair<int, Bytes>> takeHeaders() override;
  void postAbortNotes(const std::string &reason) override { abortReason_ = reason; }
  std::string takeAbortNote() override { return comm_->abortNote(); }
  /// TcpComm's comm thread moves every queued frame on its own: false.
  bool sendsPending() override { return false; }
  /// TcpComm::finish (a done note to every peer, then every peer's): completes in its one call.
  bool barrierDone(Clock::time_point deadline) override;
  void finalize() override { comm_.reset(); }
  /// TcpComm::abortJob with the reason given to postAbortNotes.
  [[noreturn]] void abortProcess(int exitCode, std::chrono::milliseconds grace) override;

private:
  Bytes recvOrExplain(int src, int tag, Clock::time_point deadline, const std::string &what);
  std::unique_ptr<TcpComm> comm_;
  std::string abortReason_;
};

} // namespace disagmoe::nccl
