// RAII device memory of the cuda backend: DeviceBuffer<T> owns `size` elements of T allocated
// with cudaMalloc on the current device and frees them on destruction (move-only). Copies to and
// from host memory are synchronous and checked (CudaCheck.h: throws CudaError naming the call).
#pragma once

#include "runtime/backends/cuda/CudaCheck.h"

#include <cstddef>
#include <utility>
#include <vector>

namespace disagmoe::cuda {

template <typename T> class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// Allocates `size` elements (uninitialised; nothing is allocated for size 0).
  explicit DeviceBuffer(size_t size) : size_(size) {
    if (size_ > 0)
      DISAGMOE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&data_), bytes()));
  }
  /// Allocates and uploads `host`.
  explicit DeviceBuffer(const std::vector<T> &host) : DeviceBuffer(host.size()) {
    upload(host.data(), host.size());
  }
  ~DeviceBuffer() {
    if (data_)
      cudaFree(data_); // no throw from a destructor; a failed free leaks nothing more
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer(DeviceBuffer &&other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    if (this != &other) {
      if (data_)
        cudaFree(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  T *data() { return data_; }
  const T *data() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }

  /// Copies `count` elements (<= size(); throws std::out_of_range otherwise) from host memory.
  void upload(const T *host, size_t count) {
    if (count > size_)
      throw std::out_of_range("DeviceBuffer::upload: count exceeds the buffer");
    if (count > 0)
      DISAGMOE_CUDA_CHECK(cudaMemcpy(data_, host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  /// The whole buffer as a host vector (waits for work on the legacy default stream).
  std::vector<T> download() const {
    std::vector<T> host(size_);
    if (size_ > 0)
      DISAGMOE_CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

private:
  T *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace disagmoe::cuda
