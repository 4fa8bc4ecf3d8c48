// Causal grouped-query attention on the device, fp32, with the CPU kernel's options and semantics
// (runtime/backends/cpu/FamilyKernels.h `causalAttentionGeneral`):
//   out[t, h] = sum_{s in S(t)} softmax_s(q[t,h] . k[s,g] * scale) v[s,g],  g = h / (heads /
//   kvHeads)
// (HF `repeat_kv`), S(t) = {s : s <= t} or, with a window w > 0, {s : t - w < s <= t};
// `sinks` [heads] (nullable, GPT-OSS) adds exp(sink_h - max) to every denominator and no value.
// A simple correct kernel: one block of kAttentionThreads threads per (query position, query head,
// sequence); keys in tiles of kAttentionKeyTile with an online (running-max) softmax, so any
// sequence length fits (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax").
// Accumulates in fp32 (the CPU kernel in double): expect ~1e-6 relative differences.
//
// Layout: `batch` sequences of seqLen positions each, back to back (row = b * seqLen + t):
// q [batch*seqLen, heads*qkDim], k [batch*seqLen, kvHeads*qkDim], v [batch*seqLen, kvHeads*vDim],
// out [batch*seqLen, heads*vDim]; fp32 device arrays. Asynchronous on `stream`.
// Throws KernelArgumentError (LaunchGeometry.h checkAttention: heads % kvHeads, vDim <= 512, ...),
// CudaError when the launch fails.
#pragma once

#include "runtime/backends/cuda/LaunchGeometry.h"

#include <cuda_runtime.h>

namespace disagmoe::cuda {

void causalAttention(const float *q, const float *k, const float *v, const AttentionShape &shape,
                     float scale, const float *sinks, float *out, cudaStream_t stream = 0);

} // namespace disagmoe::cuda
