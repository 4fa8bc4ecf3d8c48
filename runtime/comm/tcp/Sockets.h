// Blocking TCP socket operations with a deadline, for the rendezvous and the mesh of TcpComm.
// Every failure throws CommError with `what` (the caller's description of the endpoint) first.
#pragma once

#include "runtime/comm/Comm.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace disagmoe::tcp {

using Clock = std::chrono::steady_clock;

/// An owned file descriptor (closed on destruction).
class Socket {
public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket &&o) noexcept : fd_(o.release()) {}
  Socket &operator=(Socket &&o) noexcept;
  Socket(const Socket &) = delete;
  Socket &operator=(const Socket &) = delete;
  ~Socket();
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();

private:
  int fd_ = -1;
};

/// A socket listening on every interface at `port` (0: a free port, see localPort). Throws
/// CommError "<what>: cannot listen on port P: <strerror>".
Socket listenOn(int port, const std::string &what);
/// The port a socket is bound to.
int localPort(const Socket &s);
/// The numeric address of the peer of a connected socket ("127.0.0.1").
std::string peerHost(const Socket &s);

/// Connects to host:port, retrying every 50 ms while the peer refuses or is unreachable (it may not
/// listen yet) until `deadline`. Throws CommError "<what> timed out after N s (<last error>)" or,
/// for a host that does not resolve, "<what>: cannot resolve host \"H\"".
Socket connectTo(const std::string &host, int port, Clock::time_point deadline,
                 const std::string &what);
/// Accepts one connection before `deadline`; an invalid Socket when it passes.
Socket acceptBefore(const Socket &listener, Clock::time_point deadline);

/// Writes / reads exactly n bytes before `deadline`. Throws CommError "<what>: ..." on a closed
/// connection, an error or the deadline.
void writeAll(const Socket &s, const void *data, std::size_t n, Clock::time_point deadline,
              const std::string &what);
void readAll(const Socket &s, void *data, std::size_t n, Clock::time_point deadline,
             const std::string &what);

/// Little-endian framing helpers (both ends run the same binary, but keep the bytes explicit).
void putU64(Bytes &out, std::uint64_t v);
std::uint64_t getU64(const std::uint8_t *p);
void writeU64(const Socket &s, std::uint64_t v, Clock::time_point deadline,
              const std::string &what);
std::uint64_t readU64(const Socket &s, Clock::time_point deadline, const std::string &what);

/// Makes the socket non-blocking and turns off Nagle's delay (the mesh's small headers).
void setStreaming(const Socket &s);

} // namespace disagmoe::tcp
