// The nccl backend's control messages over MPI (MpiControlPlane.h).
#include "runtime/comm/nccl/MpiControlPlane.h"

#include "runtime/comm/nccl/NcclBootstrap.h"

#include <mpi.h>

#include <cstdlib>
#include <list>

namespace disagmoe::nccl {
namespace {

constexpr int kHeaderTag = 1; // headers on the data communicator
constexpr int kIdTag = 2;     // pair bootstrap ids on the data communicator

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

struct MpiSend {
  MPI_Request request;
  Bytes bytes;
};

} // namespace

struct MpiControlPlane::State {
  int rank = -1, world = 0;
  MPI_Comm data = MPI_COMM_NULL, control = MPI_COMM_NULL;
  std::list<MpiSend> sends;
  MPI_Request barrier = MPI_REQUEST_NULL;
  bool barrierPosted = false, finalized = false;

  void post(int dst, int tag, MPI_Comm comm, Bytes bytes) {
    sends.push_back({MPI_REQUEST_NULL, std::move(bytes)});
    MpiSend &s = sends.back();
    MPI_Isend(s.bytes.data(), static_cast<int>(s.bytes.size()), MPI_BYTE, dst, tag, comm,
              &s.request);
  }
  std::string who() const { return "rank " + std::to_string(rank); }
};

MpiControlPlane::MpiControlPlane() : state_(std::make_unique<State>()) {
  int provided = 0;
  const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS)
    throw CommError("nccl comm: MPI_Init_thread failed: " + mpiError(rc));
  State &s = *state_;
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.world);
  MPI_Comm_dup(MPI_COMM_WORLD, &s.data);
  MPI_Comm_dup(MPI_COMM_WORLD, &s.control);
}

MpiControlPlane::~MpiControlPlane() = default;

int MpiControlPlane::rank() const { return state_->rank; }
int MpiControlPlane::worldSize() const { return state_->world; }

Bytes MpiControlPlane::broadcastId(const Bytes &rootId, Clock::time_point) {
  State &s = *state_;
  Bytes id = s.rank == 0 ? rootId : Bytes(kSerialisedIdBytes);
  const int rc = MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, 0, s.data);
  if (rc != MPI_SUCCESS)
    throw CommError(s.who() + ": MPI_Bcast of the NCCL id: " + mpiError(rc));
  return id;
}

void MpiControlPlane::sendPairIds(int peer, const Bytes &ids, Clock::time_point) {
  State &s = *state_;
  const int rc = MPI_Send(ids.data(), static_cast<int>(ids.size()), MPI_BYTE, peer, kIdTag, s.data);
  if (rc != MPI_SUCCESS)
    throw CommError(s.who() + ": communicators with rank " + std::to_string(peer) +
                    ": MPI_Send of the ids: " + mpiError(rc));
}

Bytes MpiControlPlane::recvPairIds(int peer, Clock::time_point) {
  State &s = *state_;
  Bytes both(2 * kSerialisedIdBytes);
  const int rc = MPI_Recv(both.data(), static_cast<int>(both.size()), MPI_BYTE, peer, kIdTag,
                          s.data, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS)
    throw CommError(s.who() + ": communicators with rank " + std::to_string(peer) +
                    ": MPI_Recv of the ids: " + mpiError(rc));
  return both;
}

void MpiControlPlane::postHeader(int dst, Bytes header) {
  state_->post(dst, kHeaderTag, state_->data, std::move(header));
}

std::vector<std::pair<int, Bytes>> MpiControlPlane::takeHeaders() {
  State &s = *state_;
  std::vector<std::pair<int, Bytes>> got;
  while (true) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kHeaderTag, s.data, &flag, &status);
    if (!flag)
      break;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    Bytes b(static_cast<size_t>(std::max(count, 0)));
    MPI_Recv(b.data(), count, MPI_BYTE, status.MPI_SOURCE, kHeaderTag, s.data, MPI_STATUS_IGNORE);
    got.push_back({status.MPI_SOURCE, std::move(b)});
  }
  return got;
}

void MpiControlPlane::postAbortNotes(const std::string &reason) {
  State &s = *state_;
  for (int r = 0; r < s.world; ++r)
    if (r != s.rank)
      s.post(r, 0, s.control, Bytes(reason.begin(), reason.end()));
}

std::string MpiControlPlane::takeAbortNote() {
  State &s = *state_;
  std::string first;
  while (true) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, s.control, &flag, &status);
    if (!flag)
      break;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    Bytes b(static_cast<size_t>(std::max(count, 0)));
    MPI_Recv(b.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, s.control,
             MPI_STATUS_IGNORE);
    if (first.empty())
      first.assign(b.begin(), b.end());
  }
  return first;
}

bool MpiControlPlane::sendsPending() {
  State &s = *state_;
  for (auto it = s.sends.begin(); it != s.sends.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    it = done ? s.sends.erase(it) : std::next(it);
  }
  return !s.sends.empty();
}

bool MpiControlPlane::barrierDone(Clock::time_point) {
  State &s = *state_;
  if (!s.barrierPosted) {
    MPI_Ibarrier(s.data, &s.barrier);
    s.barrierPosted = true;
  }
  int done = 0;
  MPI_Test(&s.barrier, &done, MPI_STATUS_IGNORE);
  return done != 0;
}

void MpiControlPlane::finalize() {
  State &s = *state_;
  if (s.finalized)
    return;
  MPI_Comm_free(&s.control);
  MPI_Comm_free(&s.data);
  MPI_Finalize();
  s.finalized = true;
}

void MpiControlPlane::abortProcess(int exitCode, std::chrono::milliseconds) {
  MPI_Abort(MPI_COMM_WORLD, exitCode);
  std::_Exit(exitCode);
}

} // namespace disagmoe::nccl
