// The comm of `--comm mpi` under a torchrun-style launch (LaunchEnv.h): one process per global
// rank, started without mpirun, so MPI's runtime cannot connect them (OpenMPI 4.1's singletons
// need an ompi-server for MPI_Comm_connect; docs/deploy.md). The ranks meet at
// MASTER_ADDR:MASTER_PORT (TcpRendezvous.h), then every pair of ranks opens one TCP connection
// (rank i connects to each rank j < i at the listening port j sent in the rendezvous).
//
// As MpiComm: one comm thread moves the bytes (poll over the peer sockets and a wake pipe);
// send() queues and returns; recv() waits on the per-(src, tag) FIFO mailbox up to its deadline.
// TCP keeps one connection's bytes in order, which keeps messages of one (src, dst, tag) in send
// order. A frame is a 16-byte header (magic "DMTC", the tag or a control kind as int32, the
// payload size as uint64, little-endian) and the payload.
//
// Failures never hang the job: abortJob sends an abort note (the reason) to every peer, waits up
// to its grace for the notes to leave, then ends the process; a peer receiving it fails every
// waiting and later recv with CommAborted carrying the reason. A peer whose connection closes
// before it said it finished (killed, crashed) is reported the same way: "rank R's connection
// closed before it finished (its process ended)". finish() is a barrier: it sends a done note to
// every peer and waits for every peer's.
#pragma once

#include "runtime/comm/Comm.h"
#include "runtime/comm/tcp/LaunchEnv.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace disagmoe {

class TcpComm : public Comm {
public:
  /// Rendezvous and mesh, all before now + `timeout`. Throws CommError naming
  /// MASTER_ADDR:MASTER_PORT (TcpRendezvous.h) or the peer rank whose connection failed.
  static std::unique_ptr<TcpComm> start(const StoreLaunch &launch,
                                        std::chrono::milliseconds timeout);
  /// finish() if neither finish() nor abortJob() ran.
  ~TcpComm() override;

  int rank() const override { return rank_; }
  int worldSize() const override { return worldSize_; }
  void send(int dst, int tag, Bytes message) override;
  Bytes recv(int src, int tag, std::chrono::milliseconds timeout) override;
  int recvAny(const std::vector<std::pair<int, int>> &sources, Bytes &out,
              std::chrono::milliseconds timeout) override;
  void wake() override;

  /// The first abort note a peer sent, or why a peer is gone ("rank R's connection closed before
  /// it finished ..."); empty while every peer is well. Thread-safe.
  std::string abortNote() const;

  /// Orderly end: every queued send leaves, every peer's done note arrives, then the connections
  /// close. Throws CommError when that does not happen within `timeout`, or a peer aborted.
  void finish(std::chrono::milliseconds timeout = std::chrono::seconds(60));

  /// Ends this process because the run failed: tells every peer `reason`, waits up to `grace` for
  /// the notes to leave, then exits with `exitCode`. Does not return.
  [[noreturn]] void abortJob(const std::string &reason, int exitCode = 1,
                             std::chrono::milliseconds grace = std::chrono::milliseconds(1000));

private:
  struct State;
  TcpComm();
  std::unique_ptr<State> state_;
  int rank_ = -1, worldSize_ = 0;
};

} // namespace disagmoe
