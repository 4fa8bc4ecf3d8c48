// Blocking socket operations with deadlines (Sockets.h).
#include "runtime/comm/tcp/Sockets.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace disagmoe::tcp {
namespace {

int millisUntil(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

std::string seconds(Clock::duration d) {
  const double s = std::chrono::duration<double>(d).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", s);
  return text;
}

// Waits for `events` on fd; false when the deadline passed first.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, millisUntil(deadline));
    if (rc > 0)
      return true;
    if (rc == 0)
      return false;
    if (errno != EINTR)
      return true; // let the read/write report the error
  }
}

} // namespace

Socket &Socket::operator=(Socket &&o) noexcept {
  if (this != &o) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0)
    ::close(fd_);
}

int Socket::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

Socket listenOn(int port, const std::string &what) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid())
    throw CommError(what + ": socket: " + std::strerror(errno));
  const int one = 1;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(s.fd(), reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
      ::listen(s.fd(), SOMAXCONN) != 0)
    throw CommError(what + ": cannot listen on port " + std::to_string(port) + ": " +
                    std::strerror(errno));
  return s;
}

int localPort(const Socket &s) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getsockname(s.fd(), reinterpret_cast<sockaddr *>(&addr), &len);
  return ntohs(addr.sin_port);
}

std::string peerHost(const Socket &s) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getpeername(s.fd(), reinterpret_cast<sockaddr *>(&addr), &len);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof text);
  return text;
}

Socket connectTo(const std::string &host, int port, Clock::time_point deadline,
                 const std::string &what) {
  const auto start = Clock::now();
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0 || !found)
    throw CommError(what + ": cannot resolve host \"" + host + "\" (" + ::gai_strerror(rc) + ")");
  const sockaddr_in target = *reinterpret_cast<sockaddr_in *>(found->ai_addr);
  ::freeaddrinfo(found);
  std::string last = "no attempt";
  while (true) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!s.valid())
      throw CommError(what + ": socket: " + std::strerror(errno));
    int err = 0;
    if (::connect(s.fd(), reinterpret_cast<const sockaddr *>(&target), sizeof target) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        // A silent host (dropped SYNs) must not outlive the deadline either.
        if (!waitFor(s.fd(), POLLOUT, std::min(deadline, Clock::now() + std::chrono::seconds(1))))
          err = ETIMEDOUT;
        else {
          socklen_t len = sizeof err;
          ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
    }
    if (err == 0) {
      ::fcntl(s.fd(), F_SETFL, ::fcntl(s.fd(), F_GETFL) & ~O_NONBLOCK);
      return s;
    }
    last = std::strerror(err);
    if (Clock::now() + std::chrono::milliseconds(50) >= deadline)
      throw CommError(what + " timed out after " + seconds(Clock::now() - start) + " s (" + last +
                      ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Socket acceptBefore(const Socket &listener, Clock::time_point deadline) {
  while (waitFor(listener.fd(), POLLIN, deadline)) {
    const int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0)
      return Socket(fd);
    if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
      break;
  }
  return Socket();
}

void writeAll(const Socket &s, const void *data, std::size_t n, Clock::time_point deadline,
              const std::string &what) {
  const auto *p = static_cast<const std::uint8_t *>(data);
  while (n > 0) {
    if (!waitFor(s.fd(), POLLOUT, deadline))
      throw CommError(what + ": the write timed out");
    const ssize_t w = ::send(s.fd(), p, n, MSG_NOSIGNAL);
    if (w < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (w <= 0)
      throw CommError(what + ": the connection failed (" + std::strerror(errno) + ")");
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void readAll(const Socket &s, void *data, std::size_t n, Clock::time_point deadline,
             const std::string &what) {
  auto *p = static_cast<std::uint8_t *>(data);
  while (n > 0) {
    if (!waitFor(s.fd(), POLLIN, deadline))
      throw CommError(what + ": no answer before the deadline");
    const ssize_t r = ::recv(s.fd(), p, n, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (r == 0)
      throw CommError(what + ": the connection closed");
    if (r < 0)
      throw CommError(what + ": the connection failed (" + std::strerror(errno) + ")");
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

void putU64(Bytes &out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::uint64_t getU64(const std::uint8_t *p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

void writeU64(const Socket &s, std::uint64_t v, Clock::time_point deadline,
              const std::string &what) {
  Bytes b;
  putU64(b, v);
  writeAll(s, b.data(), b.size(), deadline, what);
}

std::uint64_t readU64(const Socket &s, Clock::time_point deadline, const std::string &what) {
  std::uint8_t b[8];
  readAll(s, b, 8, deadline, what);
  return getU64(b);
}

void setStreaming(const Socket &s) {
  const int one = 1;
  ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(s.fd(), F_SETFL, ::fcntl(s.fd(), F_GETFL) | O_NONBLOCK);
}

} // namespace disagmoe::tcp
