// The nccl backend's control plane under mpirun or srun (ControlPlane.h): MPI_Init_thread
// (MPI_THREAD_FUNNELED: only NcclComm's comm thread calls MPI), two duplicates of MPI_COMM_WORLD
// (data: the id broadcast, pair ids and headers; control: abort notes), MPI_Bcast of rank 0's
// id, buffered MPI_Isend of headers and notes, MPI_Ibarrier for the orderly end, MPI_Abort.
#pragma once

#include "runtime/comm/nccl/ControlPlane.h"

#include <memory>

namespace disagmoe::nccl {

class MpiControlPlane : public ControlPlane {
public:
  /// Starts MPI on the calling thread. Throws CommError "nccl comm: MPI_Init_thread failed: ...".
  MpiControlPlane();
  ~MpiControlPlane() override;

  int rank() const override;
  int worldSize() const override;
  Bytes broadcastId(const Bytes &rootId, Clock::time_point deadline) override;
  void sendPairIds(int peer, const Bytes &ids, Clock::time_point deadline) override;
  Bytes recvPairIds(int peer, Clock::time_point deadline) override;
  void postHeader(int dst, Bytes header) override;
  std::vector<std::pair<int, Bytes>> takeHeaders() override;
  void postAbortNotes(const std::string &reason) override;
  std::string takeAbortNote() override;
  bool sendsPending() override;
  bool barrierDone(Clock::time_point deadline) override;
  void finalize() override;
  [[noreturn]] void abortProcess(int exitCode, std::chrono::milliseconds grace) override;

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace disagmoe::nccl
