// The `nccl` comm backend: one process per global rank and one CUDA device per process, launched as
//   mpirun -np N disagmoe-run PLAN --comm nccl        (or srun under Slurm; docs/deploy.md)
//   torchrun --nproc-per-node N ... (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK)
//
// Bootstrap over a control plane (ControlPlane.h): MPI under mpirun/srun, the TCP rendezvous and
// mesh under a torchrun-style launch. It gives the rank and the world; the device is the
// node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID or LOCAL_RANK) modulo
// cudaGetDeviceCount (NcclBootstrap.h). Rank 0 calls ncclGetUniqueId and broadcasts the
// serialised id over the control plane (MPI_Bcast, or one TCP message to each rank); every rank
// calls ncclCommInitRank for the world communicator, then ncclCommSplit once per reduce group the
// caller registered (the holders of replicated weights, identical on every rank, in the same
// order), then builds two 2-rank communicators with every peer, one per direction, in the global
// pair order (pairInitOrder), and warms each up with a 1-byte ncclSend/ncclRecv so that NCCL's
// lazy connection setup never blocks later.
//
// Messages. Comm's contract is buffered, tagged sends; NCCL has neither buffering nor tags, and a
// send blocks its stream until the peer posts the matching recv. So each message goes "size
// first, then payload": a 16-byte header (tag, size) over the control plane, then the payload over
// NCCL on the sender -> receiver communicator, which carries nothing else. The sender posts its
// ncclSend right after the header; the receiver posts ncclRecv when the header arrives; headers of
// one pair arrive in send order (MPI's non-overtaking rule; one TCP connection per pair) and are
// delivered in that order (ArrivalQueue.h), so the k-th ncclSend of a direction meets its k-th
// ncclRecv, and as every op waits only on its own partner no wait can close a cycle (one stream per
// direction). Payloads cross pinned host staging buffers: host -> pinned -> device
// (cudaMemcpyAsync) -> ncclSend ... ncclRecv -> device -> pinned -> host. A zero-byte message is
// the header alone; a message to this rank goes straight to its mailbox.
//
// Grouping. Only the comm thread calls the control plane, CUDA and NCCL. Each round it posts every
// queued send and every recv whose header arrived inside one ncclGroupStart/ncclGroupEnd, so the
// sends of an exchange step (Comm::exchange, queued together) always share one group with each
// other.
//
// All-reduce. allReduceSum over a registered group is ncclAllReduce(ncclFloat32, ncclSum) on
// that group's communicator and stream; NCCL's summation order (ring or tree) differs from the
// fixed order of local/mpi, so nccl runs are not bit-identical to them: Comm.h states the bound.
//
// Deadlines. Every wait has one: recv and allReduceSum wait at most their timeout, the warm-up and
// finish() theirs; the comm thread polls cudaEventQuery / cudaStreamQuery and
// ncclCommGetAsyncError, and an NCCL error fails every later call with a CommError naming the
// peer. A failing rank calls abortJob: abort notes to every rank over the control plane,
// ncclCommAbort on every communicator (kernels waiting for a dead peer end), then MPI_Abort (TCP:
// the process exits; a peer whose connection closes is named by the others). ncclCommInitRank
// itself has no deadline: a rank that fails before joining ends the job through abortJob.
//
// Limits: 2 (W - 1) direction communicators per rank (each with NCCL's buffers and one blocking
// ncclCommInitRank at start), so this backend suits the worlds of tens of ranks that the plans
// here use; their kernels run concurrently on one device, which NCCL supports while they fit on
// it together. An all-reduce group that was not registered in connect() is refused. The backend
// has been compiled and its host logic tested, but it has not yet run on a GPU machine.
#pragma once

#include "runtime/comm/Comm.h"
#include "runtime/comm/tcp/LaunchEnv.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace disagmoe {
namespace nccl {
class ControlPlane;
}

class NcclComm : public Comm {
public:
  /// Starts the comm thread and MPI (MPI_Init_thread, MPI_THREAD_FUNNELED). Throws CommError if
  /// MPI fails to start. The comm can abortJob from here on, but moves no message before connect.
  static std::unique_ptr<NcclComm> start();
  /// A torchrun-style launch: the TCP rendezvous at MASTER_ADDR:MASTER_PORT and the TCP mesh
  /// (TcpControlPlane.h), all before now + `timeout`, then the comm thread. Throws CommError
  /// naming the endpoint or the peer.
  static std::unique_ptr<NcclComm> start(const StoreLaunch &launch,
                                         std::chrono::milliseconds timeout);
  /// finish() if the comm is running and neither finish() nor abortJob() ran.
  ~NcclComm() override;

  /// Chooses the device and builds the communicators (see above). `reduceGroups`: the rank sets
  /// (strictly ascending) that will call allReduceSum, the same list on every rank. `timeout`
  /// bounds the warm-up. Throws CommError ("--comm nccl needs a CUDA device on every rank:
  /// cudaGetDeviceCount returned 0 on rank R", an NCCL error naming the call and the peer, a
  /// bootstrap id of another NCCL version, ...); the caller then calls abortJob.
  void connect(const std::vector<std::vector<int>> &reduceGroups,
               std::chrono::milliseconds timeout);

  /// The CUDA device connect() chose (-1 before).
  int device() const { return device_; }

  int rank() const override { return rank_; }
  int worldSize() const override { return worldSize_; }
  void send(int dst, int tag, Bytes message) override;
  Bytes recv(int src, int tag, std::chrono::milliseconds timeout) override;
  std::vector<Bytes> exchange(std::vector<OutgoingMessage> sends,
                              const std::vector<IncomingMessage> &recvs,
                              std::chrono::milliseconds timeout) override;
  void allReduceSum(const std::vector<int> &ranks, int tag, float *data, std::size_t n,
                    std::chrono::milliseconds timeout) override;

  /// Orderly end: every queued send completes, all ranks meet in the control plane's barrier, the
  /// communicators are destroyed, the control plane closes (MPI_Finalize). Throws CommError if the
  /// sends do not complete within `timeout` (the job is then aborted).
  void finish(std::chrono::milliseconds timeout = std::chrono::seconds(60));

  /// Ends the whole job because this rank failed: abort notes with `reason` to every other rank
  /// (their calls throw CommAborted), ncclCommAbort on every communicator, then MPI_Abort(exitCode)
  /// (TCP: exit(exitCode)) after at most `grace`. Does not return.
  [[noreturn]] void abortJob(const std::string &reason, int exitCode = 1,
                             std::chrono::milliseconds grace = std::chrono::milliseconds(1000));

private:
  struct State;
  NcclComm();
  static std::unique_ptr<NcclComm> startWith(std::unique_ptr<nccl::ControlPlane> control);
  std::unique_ptr<State> state_;
  int rank_ = -1, worldSize_ = 0, device_ = -1;
};

} // namespace disagmoe
