// The communication stream of one rank (docs/architecture.md, "The plan and the executor",
// Streams): a comm worker thread that alone calls the rank's Comm, so the compute streams never
// block in a send and a receive is posted in program order and waited on only where its buffer is
// needed.
//
// The compute side sees a Comm (so the exchange, all-reduce and norm code run unchanged on it):
//   send(dst, tag, bytes)    queues the message (the "buffer ready" record) and returns; the worker
//                            hands it to the inner Comm in posting order, so per (src, dst, tag)
//                            messages keep their send order (Comm.h's only ordering promise).
//   postRecv(src, tag, t)    queues a receive; its Event (Event.h) is recorded when the message is
//                            taken, or failed at the deadline `t` counted from the post with
//                            CommTimeout "rank R: recv from rank S (tag T) timed out after N ms"
//                            (the backends' own wording), or with the inner Comm's error.
//   recv(src, tag, t)        postRecv + wait.
//   flush()                  returns once every queued send has been handed to the inner Comm.
//
// The worker never blocks a queued send behind a receive: it sends everything queued, then waits
// with Comm::recvAny for the oldest pending receive of each (src, tag) at once (a message for any
// of them wakes it; `local` and `mpi` signal arrival) until the nearest deadline, and loops; a send
// or receive queued meanwhile ends the wait at once (Comm::wake). So receives posted by two compute
// streams (forward and backward of different micro-batches) complete in whatever order their
// messages arrive, and no receive can hold up a send another rank is waiting for.
//
// Failures: the first error of the worker (a send or receive throwing, e.g. CommAborted when
// another rank failed, or an injected fault, Heartbeat.h) fails every pending receive and is
// rethrown by every later send/postRecv/flush. The destructor hands the queued sends on, fails the
// receives still pending with CommAborted "... the comm stream stopped", and joins the worker:
// it never leaves a joinable thread behind.
//
// Thread safety: send/postRecv/recv/flush may be called from several compute threads at once.
#pragma once

#include "runtime/comm/Comm.h"
#include "runtime/executor/Event.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace disagmoe {

class RankRecorder;

class CommStream : public Comm {
public:
  /// A posted receive: wait on `arrived`, then take the bytes (once).
  struct Receive {
    int src = 0, tag = 0;
    std::chrono::milliseconds timeout{0};
    std::chrono::steady_clock::time_point deadline;
    double posted = 0; ///< profile time of the post (when a recorder is installed)
    Event arrived;
    Bytes bytes;
    /// Waits for the message and returns it; rethrows the receive's failure.
    Bytes take();
  };

  /// Starts the comm worker of `inner` (which must outlive the stream). The worker records its
  /// sends and receives into the calling thread's RankRecorder (OpProfile.h), if one is installed.
  explicit CommStream(Comm &inner);
  ~CommStream() override;
  CommStream(const CommStream &) = delete;
  CommStream &operator=(const CommStream &) = delete;

  int rank() const override { return rank_; }
  int worldSize() const override { return world_; }
  void send(int dst, int tag, Bytes message) override;
  Bytes recv(int src, int tag, std::chrono::milliseconds timeout) override;
  std::shared_ptr<Receive> postRecv(int src, int tag, std::chrono::milliseconds timeout);
  /// Runs the inner Comm's allReduceSum on the comm worker, after every send queued before it (so
  /// a backend's own collective, e.g. nccl's, is kept), and waits for it. The worker does nothing
  /// else meanwhile: call it only when no other stream of the rank communicates (the training step
  /// calls it after both compute streams have ended). exchange() keeps Comm's default, the loop of
  /// this stream's send() and recv().
  void allReduceSum(const std::vector<int> &ranks, int tag, float *data, std::size_t n,
                    std::chrono::milliseconds timeout) override;
  /// Blocks until every send queued so far has been handed to the inner Comm; rethrows the
  /// worker's first failure.
  void flush();
  /// Fails every pending receive and every later call with `error` (kept if the worker already
  /// failed): a compute stream failed, so the other one must not wait for its receives' deadlines.
  void abort(std::exception_ptr error);

private:
  struct Outgoing {
    int dst, tag;
    Bytes bytes;
    double posted;
    std::function<void()> task; ///< set: run this on the worker instead of a send
  };
  void run();
  void failLocked(std::exception_ptr error);
  void throwIfFailedLocked() const;

  Comm &inner_;
  const int rank_, world_;
  RankRecorder *recorder_;
  std::mutex mutex_;
  std::condition_variable wake_;    // the worker: a new send or receive, or stop
  std::condition_variable flushed_; // flush(): the send queue drained
  std::deque<Outgoing> sends_;
  std::deque<std::shared_ptr<Receive>> receives_; // pending, in posting order
  bool sending_ = false, stopping_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

} // namespace disagmoe
