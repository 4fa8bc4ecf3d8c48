// The `nccl` comm: MPI or TCP bootstrap, one GPU per rank, NCCL send/recv and all-reduce
// (NcclComm.h).
#include "runtime/comm/nccl/NcclComm.h"

#include "runtime/comm/nccl/ArrivalQueue.h"
#include "runtime/comm/nccl/MpiControlPlane.h"
#include "runtime/comm/nccl/NcclBootstrap.h"
#include "runtime/comm/nccl/TcpControlPlane.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace disagmoe {

static_assert(sizeof(ncclUniqueId) == nccl::kUniqueIdBytes,
              "NcclBootstrap.h's kUniqueIdBytes is not NCCL's");

namespace {

enum class Phase { Starting, Connected, Connecting, Running, Finishing, Aborting, Done };

void cudaCheck(cudaError_t rc, const std::string &what) {
  if (rc != cudaSuccess)
    throw CommError(what + ": " + cudaGetErrorName(rc) + " (" + cudaGetErrorString(rc) + ")");
}

void ncclCheck(ncclResult_t rc, const std::string &what) {
  if (rc != ncclSuccess && rc != ncclInProgress)
    throw CommError(what + ": " + ncclGetErrorString(rc));
}

// Page-locked host buffers for staging, reused by power-of-two size class.
class PinnedPool {
public:
  ~PinnedPool() {
    for (auto &[cap, list] : free_)
      for (void *p : list)
        cudaFreeHost(p);
  }
  std::pair<void *, size_t> acquire(size_t bytes) {
    size_t cap = 4096;
    while (cap < bytes)
      cap *= 2;
    auto &list = free_[cap];
    if (!list.empty()) {
      void *p = list.back();
      list.pop_back();
      return {p, cap};
    }
    void *p = nullptr;
    cudaCheck(cudaMallocHost(&p, cap),
              "nccl comm: cudaMallocHost of " + std::to_string(cap) + " bytes");
    return {p, cap};
  }
  void release(void *p, size_t cap) { free_[cap].push_back(p); }

private:
  std::map<size_t, std::vector<void *>> free_;
};

struct Direction {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

struct Pending { // a queued send
  int dst, tag;
  Bytes bytes;
};

struct SendOp {
  int dst;
  void *pinned;
  size_t cap;
  cudaEvent_t done;
};

struct RecvOp {
  int src, tag;
  size_t size;
  uint64_t slot; // in the ArrivalQueue
  void *pinned;
  size_t cap;
  cudaEvent_t done;
};

struct ReduceRequest {
  std::vector<int> ranks;
  std::vector<float> values; // in, then the sum
  bool done = false;
  std::string error;
};

struct ReduceOp {
  std::shared_ptr<ReduceRequest> request;
  void *pinned;
  size_t cap;
  cudaEvent_t done;
};

} // namespace

struct NcclComm::State {
  std::mutex mutex;
  std::condition_variable arrived;        // workers wait for messages, sums, phase changes
  std::condition_variable commReady;      // the comm thread's progress (start, connect, finish)
  std::deque<std::vector<Pending>> queue; // one entry per send() or exchange()
  std::deque<std::shared_ptr<ReduceRequest>> reduces;
  std::map<std::pair<int, int>, std::deque<Bytes>> mailboxes; // (src, tag)
  Phase phase = Phase::Starting;
  std::string startError, connectError, finishError, abortReason, fatalError;
  std::string abortNote; // this rank's reason, sent to every other rank by the comm thread
  bool finished = false;
  int rank = -1, world = 0, device = -1;
  std::vector<std::vector<int>> reduceGroups;
  std::chrono::milliseconds connectTimeout{60000};
  int abortExitCode = 1;
  std::chrono::steady_clock::time_point finishDeadline, abortDeadline;
  std::thread thread;

  // Comm thread only (a TCP control plane is built by start() before the thread runs).
  std::unique_ptr<nccl::ControlPlane> control;
  bool notesPosted = false;
  ncclComm_t worldComm = nullptr;
  std::map<std::vector<int>, Direction> groups;
  std::vector<Direction> out, in;               // per peer
  std::unique_ptr<nccl::ArrivalQueue> arrivals; // delivery order of announced messages
  std::list<RecvOp> recvOps;                    // payloads in flight
  std::list<SendOp> sendOps;
  std::list<ReduceOp> reduceOps;
  std::unique_ptr<PinnedPool> pool;
  bool ncclUp = false;

  void run();
  void connectDevices();
  bool poll(); // one round of progress; true if anything happened
  void waitStream(cudaStream_t s, std::chrono::steady_clock::time_point deadline,
                  const std::string &what);
  void abortNccl();
  void destroyNccl();
  std::string who() const { return "rank " + std::to_string(rank); }
};

void NcclComm::State::waitStream(cudaStream_t s, std::chrono::steady_clock::time_point deadline,
                                 const std::string &what) {
  while (true) {
    const cudaError_t rc = cudaStreamQuery(s);
    if (rc == cudaSuccess)
      return;
    if (rc != cudaErrorNotReady)
      cudaCheck(rc, what);
    if (std::chrono::steady_clock::now() >= deadline)
      throw CommError(what + ": did not complete before the deadline");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// The bootstrap (NcclComm.h): device, world communicator, reduce groups, direction pairs.
void NcclComm::State::connectDevices() {
  const std::string me = who();
  const int localRank = nccl::localRankFromEnvironment();
  int count = 0;
  const cudaError_t countRc = cudaGetDeviceCount(&count);
  if (countRc != cudaSuccess)
    count = 0;
  try {
    device = nccl::selectDevice(localRank, rank, count);
  } catch (const CommError &e) {
    if (countRc == cudaSuccess)
      throw;
    throw CommError(std::string(e.what()) + " (" + cudaGetErrorName(countRc) + ": " +
                    cudaGetErrorString(countRc) + ")");
  }
  cudaCheck(cudaSetDevice(device), me + ": cudaSetDevice(" + std::to_string(device) + ")");
  pool = std::make_unique<PinnedPool>();
  int version = 0;
  ncclCheck(ncclGetVersion(&version), me + ": ncclGetVersion");

  // World communicator: rank 0's id over the control plane (MPI_Bcast, or TCP from rank 0).
  const auto deadline = std::chrono::steady_clock::now() + connectTimeout;
  Bytes idBytes;
  if (rank == 0) {
    ncclUniqueId id;
    ncclCheck(ncclGetUniqueId(&id), me + ": ncclGetUniqueId");
    nccl::UniqueId raw;
    std::memcpy(raw.data(), &id, raw.size());
    idBytes = nccl::serialiseUniqueId(raw, version);
  }
  idBytes = control->broadcastId(idBytes, deadline);
  {
    const nccl::UniqueId raw = nccl::parseUniqueId(idBytes, version, rank);
    ncclUniqueId id;
    std::memcpy(&id, raw.data(), raw.size());
    ncclCheck(ncclCommInitRank(&worldComm, world, id, rank),
              me + ": ncclCommInitRank of the world");
  }
  ncclUp = true;

  // One communicator per registered reduce group (a split of the world; every rank splits).
  for (const std::vector<int> &g : reduceGroups) {
    if (groups.count(g))
      continue;
    const bool member = std::binary_search(g.begin(), g.end(), rank);
    Direction d;
    if (static_cast<int>(g.size()) == world) {
      d.comm = worldComm;
    } else {
      const int color = member ? static_cast<int>(groups.size()) : NCCL_SPLIT_NOCOLOR;
      ncclCheck(ncclCommSplit(worldComm, color, rank, &d.comm, nullptr),
                me + ": ncclCommSplit of a reduce group");
    }
    if (member)
      cudaCheck(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking),
                me + ": cudaStreamCreate");
    groups[g] = d;
  }

  // Direction communicators with every peer, in the global pair order, each warmed up.
  out.assign(static_cast<size_t>(world), Direction{});
  in.assign(static_cast<size_t>(world), Direction{});
  arrivals = std::make_unique<nccl::ArrivalQueue>(world);
  void *warm = nullptr;
  cudaCheck(cudaMalloc(&warm, 2), me + ": cudaMalloc");
  for (int peer : nccl::pairInitOrder(rank, world)) {
    const std::string pair = me + ": communicators with rank " + std::to_string(peer);
    ncclUniqueId ids[2]; // [0]: lower -> higher, [1]: higher -> lower
    if (rank < peer) {
      Bytes both;
      for (ncclUniqueId &id : ids) {
        ncclCheck(ncclGetUniqueId(&id), pair + ": ncclGetUniqueId");
        nccl::UniqueId raw;
        std::memcpy(raw.data(), &id, raw.size());
        const Bytes b = nccl::serialiseUniqueId(raw, version);
        both.insert(both.end(), b.begin(), b.end());
      }
      control->sendPairIds(peer, both, deadline);
    } else {
      const Bytes both = control->recvPairIds(peer, deadline);
      if (both.size() != 2 * nccl::kSerialisedIdBytes)
        throw CommError(pair + ": the ids from rank " + std::to_string(peer) + " are " +
                        std::to_string(both.size()) + " bytes, not " +
                        std::to_string(2 * nccl::kSerialisedIdBytes));
      for (int k = 0; k < 2; ++k) {
        const Bytes b(both.begin() + k * nccl::kSerialisedIdBytes,
                      both.begin() + (k + 1) * nccl::kSerialisedIdBytes);
        const nccl::UniqueId raw = nccl::parseUniqueId(b, version, rank);
        std::memcpy(&ids[k], raw.data(), raw.size());
      }
    }
    const bool lower = rank < peer;
    Direction &up = lower ? out[peer] : in[peer];   // lower -> higher: the lower rank is rank 0
    Direction &down = lower ? in[peer] : out[peer]; // higher -> lower: the higher rank is rank 0
    ncclCheck(ncclCommInitRank(&up.comm, 2, ids[0], lower ? 0 : 1), pair + ": ncclCommInitRank");
    ncclCheck(ncclCommInitRank(&down.comm, 2, ids[1], lower ? 1 : 0), pair + ": ncclCommInitRank");
    for (Direction *d : {&out[peer], &in[peer]})
      cudaCheck(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking),
                pair + ": cudaStreamCreate");
    // Warm-up: NCCL connects a peer lazily on its first send/recv; do it now, both ranks together.
    ncclCheck(ncclGroupStart(), pair + ": ncclGroupStart");
    ncclCheck(ncclSend(warm, 1, ncclUint8, 1, out[peer].comm, out[peer].stream),
              pair + ": warm-up ncclSend");
    ncclCheck(
        ncclRecv(static_cast<char *>(warm) + 1, 1, ncclUint8, 0, in[peer].comm, in[peer].stream),
        pair + ": warm-up ncclRecv");
    ncclCheck(ncclGroupEnd(), pair + ": ncclGroupEnd");
    waitStream(out[peer].stream, deadline, pair + ": warm-up send");
    waitStream(in[peer].stream, deadline, pair + ": warm-up recv");
  }
  cudaFree(warm);
}

bool NcclComm::State::poll() {
  bool busy = false;
  std::deque<std::vector<Pending>> batches;
  std::deque<std::shared_ptr<ReduceRequest>> newReduces;
  {
    std::lock_guard<std::mutex> lock(mutex);
    batches.swap(queue);
    if (fatalError.empty())
      newReduces.swap(reduces);
  }
  // Headers that arrived: their recvs are posted in this round's group, in arrival order.
  std::vector<std::pair<int, nccl::Header>> headers;
  if (arrivals) // connected
    for (auto &[src, b] : control->takeHeaders()) {
      headers.push_back({src, nccl::decodeHeader(b, rank, src)});
      busy = true;
    }
  if (const std::string note = control->takeAbortNote(); !note.empty()) {
    std::lock_guard<std::mutex> lock(mutex);
    if (abortReason.empty())
      abortReason = note;
    arrived.notify_all();
    busy = true;
  }

  // Headers first (the receivers post their recvs as soon as these arrive), zero-byte messages
  // are complete with their header.
  std::vector<Pending *> payloads;
  for (auto &batch : batches)
    for (Pending &p : batch) {
      control->postHeader(p.dst, nccl::encodeHeader({p.tag, p.bytes.size()}));
      if (!p.bytes.empty())
        payloads.push_back(&p);
      busy = true;
    }
  // Every header takes its place in its source's FIFO now, in arrival order (ArrivalQueue.h).
  std::vector<RecvOp> payloadRecvs;
  for (auto &[src, h] : headers) {
    const uint64_t slot = arrivals->announce(src, h.tag, h.size);
    if (h.size > 0)
      payloadRecvs.push_back({src, h.tag, static_cast<size_t>(h.size), slot, nullptr, 0, nullptr});
  }

  const std::string me = who();
  if (!payloads.empty() || !payloadRecvs.empty()) {
    // Before the group: stage sends into device buffers; after it: copy recvs back to the host.
    std::vector<void *> sendDev(payloads.size()), recvDev(payloadRecvs.size());
    std::vector<std::pair<void *, size_t>> sendPinned(payloads.size()),
        recvPinned(payloadRecvs.size());
    for (size_t i = 0; i < payloads.size(); ++i) {
      const Pending &p = *payloads[i];
      const size_t n = p.bytes.size();
      sendPinned[i] = pool->acquire(n);
      std::memcpy(sendPinned[i].first, p.bytes.data(), n);
      cudaStream_t s = out[p.dst].stream;
      cudaCheck(cudaMallocAsync(&sendDev[i], n, s),
                me + ": cudaMallocAsync for a send to rank " + std::to_string(p.dst));
      cudaCheck(cudaMemcpyAsync(sendDev[i], sendPinned[i].first, n, cudaMemcpyHostToDevice, s),
                me + ": cudaMemcpyAsync for a send to rank " + std::to_string(p.dst));
    }
    for (size_t i = 0; i < payloadRecvs.size(); ++i) {
      const RecvOp &r = payloadRecvs[i];
      recvPinned[i] = pool->acquire(r.size);
      cudaCheck(cudaMallocAsync(&recvDev[i], r.size, in[r.src].stream),
                me + ": cudaMallocAsync for a recv from rank " + std::to_string(r.src));
    }
    ncclCheck(ncclGroupStart(), me + ": ncclGroupStart");
    for (size_t i = 0; i < payloads.size(); ++i) {
      const Pending &p = *payloads[i];
      ncclCheck(
          ncclSend(sendDev[i], p.bytes.size(), ncclUint8, 1, out[p.dst].comm, out[p.dst].stream),
          me + ": ncclSend to rank " + std::to_string(p.dst) + " (tag " + std::to_string(p.tag) +
              ")");
    }
    for (size_t i = 0; i < payloadRecvs.size(); ++i) {
      const RecvOp &r = payloadRecvs[i];
      ncclCheck(ncclRecv(recvDev[i], r.size, ncclUint8, 0, in[r.src].comm, in[r.src].stream),
                me + ": ncclRecv from rank " + std::to_string(r.src) + " (tag " +
                    std::to_string(r.tag) + ")");
    }
    ncclCheck(ncclGroupEnd(), me + ": ncclGroupEnd");
    for (size_t i = 0; i < payloads.size(); ++i) {
      const int dst = payloads[i]->dst;
      cudaStream_t s = out[dst].stream;
      SendOp op{dst, sendPinned[i].first, sendPinned[i].second, nullptr};
      cudaCheck(cudaFreeAsync(sendDev[i], s), me + ": cudaFreeAsync");
      cudaCheck(cudaEventCreateWithFlags(&op.done, cudaEventDisableTiming),
                me + ": cudaEventCreate");
      cudaCheck(cudaEventRecord(op.done, s), me + ": cudaEventRecord");
      sendOps.push_back(op);
    }
    for (size_t i = 0; i < payloadRecvs.size(); ++i) {
      RecvOp op = payloadRecvs[i];
      cudaStream_t s = in[op.src].stream;
      op.pinned = recvPinned[i].first;
      op.cap = recvPinned[i].second;
      cudaCheck(cudaMemcpyAsync(op.pinned, recvDev[i], op.size, cudaMemcpyDeviceToHost, s),
                me + ": cudaMemcpyAsync");
      cudaCheck(cudaFreeAsync(recvDev[i], s), me + ": cudaFreeAsync");
      cudaCheck(cudaEventCreateWithFlags(&op.done, cudaEventDisableTiming),
                me + ": cudaEventCreate");
      cudaCheck(cudaEventRecord(op.done, s), me + ": cudaEventRecord");
      recvOps.push_back(op);
    }
  }

  for (const auto &request : newReduces) {
    const Direction &g = groups.at(request->ranks);
    const size_t bytes = request->values.size() * sizeof(float);
    ReduceOp op{request, nullptr, 0, nullptr};
    auto pinned = pool->acquire(bytes);
    op.pinned = pinned.first;
    op.cap = pinned.second;
    std::memcpy(op.pinned, request->values.data(), bytes);
    void *dev = nullptr;
    cudaCheck(cudaMallocAsync(&dev, bytes, g.stream), me + ": cudaMallocAsync for an all-reduce");
    cudaCheck(cudaMemcpyAsync(dev, op.pinned, bytes, cudaMemcpyHostToDevice, g.stream),
              me + ": cudaMemcpyAsync");
    ncclCheck(
        ncclAllReduce(dev, dev, request->values.size(), ncclFloat32, ncclSum, g.comm, g.stream),
        me + ": ncclAllReduce over " + std::to_string(request->ranks.size()) + " ranks");
    cudaCheck(cudaMemcpyAsync(op.pinned, dev, bytes, cudaMemcpyDeviceToHost, g.stream),
              me + ": cudaMemcpyAsync");
    cudaCheck(cudaFreeAsync(dev, g.stream), me + ": cudaFreeAsync");
    cudaCheck(cudaEventCreateWithFlags(&op.done, cudaEventDisableTiming), me + ": cudaEventCreate");
    cudaCheck(cudaEventRecord(op.done, g.stream), me + ": cudaEventRecord");
    reduceOps.push_back(op);
    busy = true;
  }

  // Completions: sends free their staging; recvs (in posting order per source) fill mailboxes.
  const auto finished = [&](cudaEvent_t e, const std::string &what) {
    const cudaError_t rc = cudaEventQuery(e);
    if (rc == cudaErrorNotReady)
      return false;
    cudaCheck(rc, what);
    cudaEventDestroy(e);
    return true;
  };
  for (auto it = sendOps.begin(); it != sendOps.end();) {
    if (finished(it->done, me + ": send to rank " + std::to_string(it->dst))) {
      pool->release(it->pinned, it->cap);
      it = sendOps.erase(it);
      busy = true;
    } else {
      ++it;
    }
  }
  for (auto it = recvOps.begin(); it != recvOps.end();) {
    if (finished(it->done, me + ": recv from rank " + std::to_string(it->src))) {
      const uint8_t *p = static_cast<const uint8_t *>(it->pinned);
      arrivals->complete(it->slot, Bytes(p, p + it->size));
      pool->release(it->pinned, it->cap);
      it = recvOps.erase(it);
      busy = true;
    } else {
      ++it;
    }
  }
  if (arrivals) {
    std::vector<nccl::ArrivalQueue::Delivered> ready = arrivals->takeDeliverable();
    if (!ready.empty()) {
      std::lock_guard<std::mutex> lock(mutex);
      for (auto &d : ready)
        mailboxes[{d.src, d.tag}].push_back(std::move(d.bytes));
      arrived.notify_all();
      busy = true;
    }
  }
  for (auto it = reduceOps.begin(); it != reduceOps.end();) {
    if (finished(it->done, me + ": all-reduce")) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        std::memcpy(it->request->values.data(), it->pinned,
                    it->request->values.size() * sizeof(float));
        it->request->done = true;
        arrived.notify_all();
      }
      pool->release(it->pinned, it->cap);
      it = reduceOps.erase(it);
      busy = true;
    } else {
      ++it;
    }
  }

  // Asynchronous NCCL errors (a peer that died, a network failure) fail every later call.
  const auto asyncCheck = [&](ncclComm_t c, const std::string &what) {
    if (!c)
      return;
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(c, &state);
    if (state != ncclSuccess && state != ncclInProgress)
      throw CommError(what + ": " + ncclGetErrorString(state));
  };
  for (size_t p = 0; p < out.size(); ++p) {
    asyncCheck(out[p].comm, me + ": nccl communicator to rank " + std::to_string(p));
    asyncCheck(in[p].comm, me + ": nccl communicator from rank " + std::to_string(p));
  }
  asyncCheck(worldComm, me + ": nccl world communicator");

  control->sendsPending(); // moves the headers along
  return busy;
}

void NcclComm::State::abortNccl() {
  if (!ncclUp)
    return;
  for (auto &d : out)
    if (d.comm)
      ncclCommAbort(d.comm);
  for (auto &d : in)
    if (d.comm)
      ncclCommAbort(d.comm);
  for (auto &[g, d] : groups)
    if (d.comm && d.comm != worldComm)
      ncclCommAbort(d.comm);
  if (worldComm)
    ncclCommAbort(worldComm);
  ncclUp = false;
}

void NcclComm::State::destroyNccl() {
  if (!ncclUp)
    return;
  for (auto *dirs : {&out, &in})
    for (auto &d : *dirs) {
      if (d.stream)
        cudaStreamSynchronize(d.stream);
      if (d.comm)
        ncclCommDestroy(d.comm);
      if (d.stream)
        cudaStreamDestroy(d.stream);
    }
  for (auto &[g, d] : groups) {
    if (d.stream) {
      cudaStreamSynchronize(d.stream);
      cudaStreamDestroy(d.stream);
    }
    if (d.comm && d.comm != worldComm)
      ncclCommDestroy(d.comm);
  }
  if (worldComm)
    ncclCommDestroy(worldComm);
  pool.reset();
  ncclUp = false;
}

void NcclComm::State::run() {
  std::string error;
  if (!control) {
    try {
      control = std::make_unique<nccl::MpiControlPlane>();
    } catch (const std::exception &e) {
      error = e.what();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error.empty()) {
      startError = error;
      phase = Phase::Done;
    } else {
      rank = control->rank();
      world = control->worldSize();
      phase = Phase::Connected;
    }
    commReady.notify_all();
  }
  if (!error.empty())
    return;

  auto idle = std::chrono::microseconds(20);
  while (true) {
    Phase p;
    {
      std::lock_guard<std::mutex> lock(mutex);
      p = phase;
    }
    if (p == Phase::Connecting) {
      std::string error;
      try {
        connectDevices();
      } catch (const std::exception &e) {
        error = e.what();
      }
      std::lock_guard<std::mutex> lock(mutex);
      connectError = error;
      if (phase == Phase::Connecting)
        phase = error.empty() ? Phase::Running : Phase::Connected;
      commReady.notify_all();
      continue;
    }
    bool busy = false;
    if (p == Phase::Running || p == Phase::Finishing) {
      bool failed;
      {
        std::lock_guard<std::mutex> lock(mutex);
        failed = !fatalError.empty();
      }
      if (!failed) {
        try {
          busy = poll();
        } catch (const std::exception &e) {
          std::lock_guard<std::mutex> lock(mutex);
          fatalError = e.what();
          arrived.notify_all();
          commReady.notify_all();
        }
      }
    } else {
      // Before connect() and while aborting: only control progress (abort notes in and out).
      if (const std::string note = control->takeAbortNote(); !note.empty()) {
        std::lock_guard<std::mutex> lock(mutex);
        if (abortReason.empty())
          abortReason = note;
        arrived.notify_all();
      }
      if (p == Phase::Aborting && !notesPosted) {
        std::string reason;
        {
          std::lock_guard<std::mutex> lock(mutex);
          reason = abortNote;
          queue.clear();
        }
        control->postAbortNotes(reason);
        notesPosted = true;
      }
    }
    if (p == Phase::Aborting) {
      const bool sent = notesPosted && !control->sendsPending();
      const auto now = std::chrono::steady_clock::now();
      if (sent || now >= abortDeadline) {
        int code;
        {
          std::lock_guard<std::mutex> lock(mutex);
          code = abortExitCode;
        }
        abortNccl();
        if (sent)
          std::this_thread::sleep_for(std::chrono::milliseconds(200)); // let peers report first
        control->abortProcess(
            code, std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::max(abortDeadline - now, std::chrono::steady_clock::duration(0))));
      }
    } else if (p == Phase::Finishing) {
      bool pending;
      std::string fatal;
      {
        std::lock_guard<std::mutex> lock(mutex);
        pending = !queue.empty();
        fatal = fatalError;
      }
      pending = pending || !sendOps.empty() || control->sendsPending();
      bool done = false;
      if (!pending && fatal.empty()) {
        try {
          done = control->barrierDone(finishDeadline);
        } catch (const std::exception &e) {
          fatal = e.what();
        }
      }
      if (done)
        break;
      if (!fatal.empty() || std::chrono::steady_clock::now() >= finishDeadline) {
        std::lock_guard<std::mutex> lock(mutex);
        finishError = !fatal.empty() ? fatal
                                     : who() + ": nccl comm: " + std::to_string(sendOps.size()) +
                                           " sends did not complete before the deadline";
        abortNote = finishError;
        phase = Phase::Aborting;
        abortDeadline = std::chrono::steady_clock::now();
        commReady.notify_all();
        continue;
      }
    }
    if (busy) {
      idle = std::chrono::microseconds(20);
    } else {
      std::this_thread::sleep_for(idle);
      idle = std::min(idle * 2, std::chrono::microseconds(1000));
    }
  }
  destroyNccl();
  control->finalize();
  std::lock_guard<std::mutex> lock(mutex);
  phase = Phase::Done;
  finished = true;
  commReady.notify_all();
  arrived.notify_all();
}

NcclComm::NcclComm() : state_(std::make_unique<State>()) {}

std::unique_ptr<NcclComm> NcclComm::start() { return startWith(nullptr); }

std::unique_ptr<NcclComm> NcclComm::start(const StoreLaunch &launch,
                                          std::chrono::milliseconds timeout) {
  return startWith(std::make_unique<nccl::TcpControlPlane>(launch, timeout));
}

std::unique_ptr<NcclComm> NcclComm::startWith(std::unique_ptr<nccl::ControlPlane> control) {
  std::unique_ptr<NcclComm> comm(new NcclComm());
  State &s = *comm->state_;
  s.control = std::move(control); // null: MPI, started on the comm thread
  s.thread = std::thread([&s] { s.run(); });
  std::unique_lock<std::mutex> lock(s.mutex);
  s.commReady.wait(lock, [&] { return s.phase != Phase::Starting; });
  if (!s.startError.empty()) {
    const std::string error = s.startError;
    lock.unlock();
    s.thread.join();
    throw CommError(error);
  }
  comm->rank_ = s.rank;
  comm->worldSize_ = s.world;
  return comm;
}

void NcclComm::connect(const std::vector<std::vector<int>> &reduceGroups,
                       std::chrono::milliseconds timeout) {
  State &s = *state_;
  for (const auto &g : reduceGroups)
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] < 0 || g[i] >= worldSize_ || (i > 0 && g[i] <= g[i - 1]))
        throw CommError("rank " + std::to_string(rank_) +
                        ": nccl comm: a reduce group's ranks must be strictly ascending ranks of "
                        "the world of " +
                        std::to_string(worldSize_));
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.phase != Phase::Connected)
    throw CommError("rank " + std::to_string(rank_) + ": nccl comm: connect() twice");
  s.reduceGroups = reduceGroups;
  s.connectTimeout = timeout;
  s.phase = Phase::Connecting;
  s.commReady.wait(lock, [&] { return s.phase != Phase::Connecting; });
  if (!s.connectError.empty())
    throw CommError(s.connectError);
  device_ = s.device;
}

NcclComm::~NcclComm() {
  bool running;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    running = state_->phase == Phase::Running || state_->phase == Phase::Connected;
  }
  if (running) {
    try {
      finish();
    } catch (...) {
    }
  }
  if (state_->thread.joinable())
    state_->thread.join();
}

void NcclComm::send(int dst, int tag, Bytes message) {
  exchange({{dst, tag, std::move(message)}}, {}, std::chrono::milliseconds(0));
}

std::vector<Bytes> NcclComm::exchange(std::vector<OutgoingMessage> sends,
                                      const std::vector<IncomingMessage> &recvs,
                                      std::chrono::milliseconds timeout) {
  std::vector<Pending> batch;
  for (OutgoingMessage &m : sends) {
    if (m.dst < 0 || m.dst >= worldSize_ || m.tag < 0)
      throw CommError("rank " + std::to_string(rank_) + ": send to rank " + std::to_string(m.dst) +
                      " (tag " + std::to_string(m.tag) + ") is outside the world of " +
                      std::to_string(worldSize_) + " ranks");
    batch.push_back({m.dst, m.tag, std::move(m.bytes)});
  }
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->phase != Phase::Running)
      throw CommError("rank " + std::to_string(rank_) +
                      ": nccl comm: send before connect() or after the comm ended");
    std::vector<Pending> remote;
    for (Pending &p : batch)
      if (p.dst == rank_)
        state_->mailboxes[{rank_, p.tag}].push_back(std::move(p.bytes));
      else
        remote.push_back(std::move(p));
    if (!remote.empty())
      state_->queue.push_back(std::move(remote)); // one group (NcclComm.h)
    state_->arrived.notify_all();
  }
  std::vector<Bytes> received;
  received.reserve(recvs.size());
  for (const IncomingMessage &m : recvs)
    received.push_back(recv(m.src, m.tag, timeout));
  return received;
}

Bytes NcclComm::recv(int src, int tag, std::chrono::milliseconds timeout) {
  const std::string what = "rank " + std::to_string(rank_) + ": recv from rank " +
                           std::to_string(src) + " (tag " + std::to_string(tag) + ")";
  if (src < 0 || src >= worldSize_)
    throw CommError(what + ": no such rank in a world of " + std::to_string(worldSize_));
  State &s = *state_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(s.mutex);
  while (true) {
    if (!s.abortReason.empty())
      throw CommAborted(what + " aborted: " + s.abortReason);
    auto box = s.mailboxes.find({src, tag});
    if (box != s.mailboxes.end() && !box->second.empty()) {
      Bytes message = std::move(box->second.front());
      box->second.pop_front();
      return message;
    }
    if (!s.fatalError.empty())
      throw CommError(what + ": " + s.fatalError);
    if (s.phase != Phase::Running)
      throw CommError(what + ": the comm is not running");
    if (s.arrived.wait_until(lock, deadline) == std::cv_status::timeout) {
      box = s.mailboxes.find({src, tag});
      if (box != s.mailboxes.end() && !box->second.empty())
        continue;
      if (!s.abortReason.empty() || !s.fatalError.empty())
        continue;
      throw CommTimeout(what + " timed out after " + std::to_string(timeout.count()) + " ms");
    }
  }
}

void NcclComm::allReduceSum(const std::vector<int> &ranks, int tag, float *data, std::size_t n,
                            std::chrono::milliseconds timeout) {
  const std::string what =
      "rank " + std::to_string(rank_) + ": all-reduce (tag " + std::to_string(tag) + ")";
  State &s = *state_;
  if (!std::binary_search(ranks.begin(), ranks.end(), rank_))
    throw CommError(what + ": this rank is not one of the reducing ranks");
  if (ranks.size() == 1 || n == 0)
    return;
  auto request = std::make_shared<ReduceRequest>();
  request->ranks = ranks;
  request->values.assign(data, data + n);
  std::unique_lock<std::mutex> lock(s.mutex);
  // The group map is written once by connect() before Running and only read afterwards.
  if (!s.groups.count(ranks))
    throw CommError(what +
                    ": the ranks were not registered as a reduce group in NcclComm::connect");
  if (s.phase != Phase::Running)
    throw CommError(what + ": the comm is not running");
  s.reduces.push_back(request);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!request->done) {
    if (!s.abortReason.empty())
      throw CommAborted(what + " aborted: " + s.abortReason);
    if (!s.fatalError.empty())
      throw CommError(what + ": " + s.fatalError);
    if (s.arrived.wait_until(lock, deadline) == std::cv_status::timeout && !request->done) {
      throw CommError(what + " over ranks " + std::to_string(ranks.front()) + ".." +
                      std::to_string(ranks.back()) + " timed out after " +
                      std::to_string(timeout.count()) + " ms");
    }
  }
  std::copy(request->values.begin(), request->values.end(), data);
}

void NcclComm::finish(std::chrono::milliseconds timeout) {
  State &s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.phase != Phase::Running && s.phase != Phase::Connected)
    return;
  s.finishDeadline = std::chrono::steady_clock::now() + timeout;
  s.phase = Phase::Finishing;
  s.commReady.wait(lock, [&] { return s.finished || !s.finishError.empty(); });
  if (!s.finishError.empty()) {
    const std::string error = s.finishError;
    lock.unlock();
    s.thread.join(); // the comm thread aborts the job
    throw CommError(error);
  }
  lock.unlock();
  s.thread.join();
}

void NcclComm::abortJob(const std::string &reason, int exitCode, std::chrono::milliseconds grace) {
  State &s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.phase != Phase::Done && s.phase != Phase::Starting) {
      s.abortNote = reason;
      s.abortExitCode = exitCode;
      s.abortDeadline = std::chrono::steady_clock::now() + grace;
      s.phase = Phase::Aborting;
    }
  }
  if (s.thread.joinable())
    s.thread.join(); // the control plane ends the process from the comm thread
  std::_Exit(exitCode);
}

} // namespace disagmoe
