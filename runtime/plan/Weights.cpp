// Binds each rank's weights from the plan's files as fp32, converting float16 / bfloat16 and
// transposing on load (Weights.h).
#include "runtime/plan/Weights.h"

#include "runtime/io/Safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace disagmoe {
namespace {

std::string where(const WeightSpec &spec) {
  return "weight \"" + spec.name + "\" (" + spec.path + ", offset " + std::to_string(spec.offset) +
         ", length " + std::to_string(spec.length) + ")";
}

} // namespace

Tensor readWeight(const WeightSpec &spec) {
  Tensor raw(spec.transposed ? std::vector<int64_t>{spec.shape[1], spec.shape[0]} : spec.shape);
  const uint64_t elem = weightDtypeBytes(spec.dtype);
  if (elem == 0)
    throw WeightError(where(spec) + ": dtype \"" + spec.dtype +
                      "\" is not float32, float16 or bfloat16");
  if (static_cast<uint64_t>(raw.numel()) * elem != spec.length)
    throw WeightError(where(spec) + ": length does not match shape " + shapeToString(spec.shape) +
                      " " + spec.dtype);
  int fd = ::open(spec.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw WeightError(where(spec) + ": cannot open file: " + std::strerror(errno));
  // float32 lands in place; 2-byte dtypes are read into `half` and widened below.
  std::vector<uint16_t> half(elem == 2 ? static_cast<size_t>(raw.numel()) : 0);
  char *dst =
      elem == 2 ? reinterpret_cast<char *>(half.data()) : reinterpret_cast<char *>(raw.data.data());
  // A dense weight is one run of bytes; a strided window (rowStride) one run per row.
  const uint64_t runs = spec.rowStride ? static_cast<uint64_t>(spec.shape[0]) : 1;
  const uint64_t runBytes = spec.length / runs;
  for (uint64_t r = 0; r < runs; ++r) {
    const uint64_t at = spec.offset + r * spec.rowStride;
    char *to = dst + r * runBytes;
    uint64_t done = 0;
    while (done < runBytes) {
      ssize_t n = ::pread(fd, to + done, runBytes - done, static_cast<off_t>(at + done));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        std::string why = n < 0 ? std::strerror(errno)
                                : "file ends after " + std::to_string(at + done) + " bytes";
        ::close(fd);
        throw WeightError(where(spec) + ": short read: " + why);
      }
      done += static_cast<uint64_t>(n);
    }
  }
  ::close(fd);
  // Once, here: the fp32 values are what the cpu backend computes with and what training updates
  // (its fp32 master weights). Both conversions are exact.
  if (elem == 2) {
    const bool bf16 = spec.dtype == "bfloat16";
    for (size_t i = 0; i < half.size(); ++i)
      raw.data[i] = bf16 ? bf16ToFloat(half[i]) : f16ToFloat(half[i]);
  }
  if (!spec.transposed)
    return raw;

  // Disk holds [out, in]; the runtime wants [in, out].
  const int64_t rows = spec.shape[0], cols = spec.shape[1];
  Tensor t(spec.shape);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      t.data[i * cols + j] = raw.data[j * rows + i];
  return t;
}

RankWeights::RankWeights(const Plan &plan, int rank) : RankWeights(plan, rank, WeightSource()) {}

RankWeights::RankWeights(const Plan &plan, int rank, const WeightSource &source)
    : rank_(rank), plan_(&plan) {
  tensors_.resize(plan.model.weights.size());
  for (size_t i = 0; i < plan.model.weights.size(); ++i) {
    const WeightSpec &spec = plan.model.weights[i];
    if (!std::binary_search(spec.ranks.begin(), spec.ranks.end(), rank))
      continue;
    tensors_[i] = source ? source(static_cast<int>(i)) : readWeight(spec);
    if (tensors_[i].shape != spec.shape)
      throw WeightError("weight \"" + spec.name + "\": the weight source gave shape " +
                        shapeToString(tensors_[i].shape) + ", the plan's is " +
                        shapeToString(spec.shape));
  }
}

const Tensor &RankWeights::get(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= tensors_.size() || tensors_[index].empty())
    throw WeightError("rank " + std::to_string(rank_) + " does not hold weight " +
                      (plan_ && index >= 0 && static_cast<size_t>(index) < tensors_.size()
                           ? "\"" + plan_->model.weights[index].name + "\""
                           : "#" + std::to_string(index)));
  return tensors_[index];
}

uint64_t RankWeights::bytes() const {
  uint64_t total = 0;
  for (const Tensor &t : tensors_)
    total += static_cast<uint64_t>(t.numel()) * sizeof(float);
  return total;
}

} // namespace disagmoe
