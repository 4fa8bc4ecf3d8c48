"""fp32 error model: the tolerances of the numerical checks, from a stated model, not tuned to a machine.

Every floating-point check of the suite compares two evaluations of the same function in fp32: ours
against PyTorch's, or PyTorch on one BLAS kernel against PyTorch on another (a golden regenerated on
another machine), or one placement against another. They differ only in rounding: reduction order,
fused multiply-adds, blocking. The model (docs/training.md, "Numerics: error model"):

- Unit roundoff u = 2^-24 (fp32, round to nearest; half an ulp of 1.0: every figure here is in
  units of u, not ulps). Each rounding is x(1 + d) with |d| <= u; the d's are independent and
  mean-zero (Higham and Mary, "A new approach to probabilistic rounding error analysis", SIAM J. Sci.
  Comput. 41(5), 2019). Boundedness alone allows a standard deviation of u; the model further takes
  d uniform on [-u, u], standard deviation u/sqrt(3) (an assumption, not implied by the paper's).
- First-order propagation with unit gain (assumed, not shown: a softmax scales a score's relative
  error by the score, and a sum that cancels amplifies it, e.g. the gradient of an expert that sees
  few tokens): the normalisations (RMSNorm, softmax, the router's
  renormalisation) keep every stage at unit relative scale, so a relative perturbation passes through
  a stage about unchanged and the relative errors of the D roundings on the longest dependency chain
  add up like a random walk: one evaluation's relative error has a standard deviation of at most
  sqrt(D/3) u, and the difference of two evaluations sqrt(2D/3) u.
- D is counted from the model's shapes (`chain_length`): a length-K reduction (a GEMM's inner
  dimension, a norm's mean, a softmax's sum) is K roundings in sequence; an elementwise op is one.
- Normwise check: ||a - b||_2 / ||b||_2 <= NORMWISE_SIGMAS * sqrt(2D/3) u. Over a tensor of many
  elements the root-mean-square concentrates at its expectation, so twice the model's standard
  deviation is a 2x margin over the expected level, not a tail probability (the elements are not
  all independent: the head GEMM shares one hidden-state error across a token's logits); it is
  tight enough that a systematic change of a few hundred u (a wrong epsilon, a 1e-4 perturbation
  of one weight) exceeds it.
- Elementwise check: |a_i - b_i| <= ELEMENT_SIGMAS * sqrt(2D/3) u * max|b|: 6 standard deviations
  (2e-9 per element under the uniform-and-Gaussian approximation; bounded d alone give 5e-3 by
  Hoeffding's inequality), relative to the tensor's scale (a partial sum
  of a logit is bounded by the scale of its tensor, not by the logit itself, which may be near 0).
  It catches a wrong row or element that the normwise check averages away.

The model is an upper estimate: measured errors sit below it on every kernel the suite runs on
(OpenBLAS Haswell, SkylakeX/Zen and the generic Prescott kernel); docs/training.md lists them.
"""

import json
import math
import os
import re

import numpy as np

U = 2.0 ** -24
NORMWISE_SIGMAS = 2.0
ELEMENT_SIGMAS = 6.0


def _get(cfg, key, default=0):
    v = cfg.get(key, default)
    return default if v is None else v


def layer_chain(cfg, seq, dense=False):
    """fp32 roundings on the longest dependency chain through one decoder layer, for sequences of
    `seq` tokens: attention block then FFN block (each ending in its residual add)."""
    h, hd = cfg["hidden_size"], cfg["head_dim"]
    heads = cfg["num_heads"]
    attn = h  # RMSNorm's mean of squares
    if cfg.get("attention_type") == "mla":
        rank = cfg["kv_lora_rank"]
        attn += h + rank + rank  # wkv_a, kv_norm, wkv_b
    else:
        attn += h  # q/k/v projection
    if cfg.get("qk_norm"):
        attn += hd
    attn += hd + seq + 1 + seq  # q.k, softmax's sum (+ a sink), probs.v
    attn += heads * _get(cfg, "v_head_dim", hd) + 1  # o projection, residual add
    ffn = h  # RMSNorm
    if dense:
        ffn += h + _get(cfg, "dense_hidden", cfg["expert_hidden"])
    else:
        ffn += h + cfg["num_experts"]  # router GEMM, softmax's sum
        inner = max(cfg["expert_hidden"], _get(cfg, "shared_expert_hidden", 0))
        ffn += h + inner  # expert up/gate, down
        ffn += cfg["top_k"] + _get(cfg, "num_shared_experts", 0)  # combine
    return attn + ffn + 1


def chain_length(cfg, seq):
    """D for the logits of one forward: every layer, the final norm and the head."""
    dense = set(_get(cfg, "dense_layers", []) or [])
    d = sum(layer_chain(cfg, seq, l in dense) for l in range(cfg["num_layers"]))
    return d + 2 * cfg["hidden_size"]


def loss_chain_length(cfg, seq, tokens):
    """D for the mean cross-entropy: the logits, the log-sum-exp over the vocabulary, the mean."""
    return chain_length(cfg, seq) + cfg["vocab_size"] + tokens


def grad_chain_length(cfg, seq, tokens):
    """D for a parameter gradient: forward to the loss, back through every layer and the sum over
    the batch's tokens. The backward is counted twice the forward: each forward stage has an
    activation-gradient GEMM as long as its own, and its elementwise backward (SwiGLU, softmax,
    RMSNorm's projection) forms products and a difference of terms of the forward's size."""
    return 3 * loss_chain_length(cfg, seq, tokens) + tokens


def sigma(d):
    """Standard deviation of the relative difference of two fp32 evaluations with chains of D."""
    return math.sqrt(2.0 * d / 3.0) * U


class Bound:
    """Tolerances for one tensor compared with a chain of D roundings."""

    def __init__(self, d):
        self.d = d
        self.normwise = NORMWISE_SIGMAS * sigma(d)
        self.element = ELEMENT_SIGMAS * sigma(d)

    def measure(self, got, ref):
        """(normwise relative error, max abs error / max|ref|), both in units of u."""
        got = np.asarray(got, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        diff = got - ref
        scale = float(np.abs(ref).max(initial=0.0))
        norm = float(np.linalg.norm(ref))
        nw = float(np.linalg.norm(diff)) / norm if norm > 0 else (0.0 if not diff.any() else math.inf)
        el = float(np.abs(diff).max(initial=0.0)) / scale if scale > 0 else (0.0 if not diff.any() else math.inf)
        return nw / U, el / U

    def share(self, got, ref):
        """The larger of measured / bound of the two checks (a scalar: the tail bound alone); > 1 fails."""
        nw, el = self.measure(got, ref)
        r = el * U / self.element
        return r if np.size(ref) == 1 else max(r, nw * U / self.normwise)

    def check(self, got, ref):
        """(ok, text): both checks, with the measured errors and the bounds in units of u."""
        if np.shape(got) != np.shape(ref):
            return False, f"shape {np.shape(got)} vs {np.shape(ref)}"
        if not np.all(np.isfinite(got)):
            return False, "non-finite values"
        nw, el = self.measure(got, ref)
        # A scalar (a loss) has no mean to concentrate: it gets the tail bound alone.
        ok = (np.size(ref) == 1 or nw * U <= self.normwise) and el * U <= self.element
        return ok, (f"normwise {nw:.1f} u (bound {self.normwise / U:.0f} u), max {el:.1f} u of max|ref| "
                    f"(bound {self.element / U:.0f} u; D = {self.d})")


def logits_bound(cfg, seq):
    """The forward check: logits of sequences of `seq` tokens against PyTorch's."""
    return Bound(chain_length(cfg, seq))


def loss_bound(cfg, seq, tokens):
    """The training check of the loss (a scalar: the elementwise tail bound relative to the loss)."""
    return Bound(loss_chain_length(cfg, seq, tokens))


def grad_bound(cfg, seq, tokens):
    """The training check of every parameter's gradient, per tensor."""
    return Bound(grad_chain_length(cfg, seq, tokens))


def compare_json(label, ref, new, d):
    """Regenerated JSON against the committed one: the same structure, strings, integers and booleans
    equal, each float within the elementwise bound of D relative to its own magnitude."""
    tol = ELEMENT_SIGMAS * sigma(d)

    def same(a, b):
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, float) or isinstance(b, float):
            return (isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool)
                    and abs(a - b) <= tol * abs(b))
        return type(a) is type(b) and a == b

    ok = same(ref, new)
    return ok, f"{label}: {'equal' if ok else 'differs'} (floats within {tol / U:.0f} u relative; D = {d})"


def compare_regenerated(label, ref, new, d, mask=None):
    """A golden regenerated by its exporter (on whatever BLAS kernel this machine has) against the
    committed one: dtype and shape equal, integers and booleans exactly, floats within the bound of
    two evaluations with chains of D. Returns (ok, message)."""
    ref, new = np.asarray(ref), np.asarray(new)
    if ref.dtype != new.dtype or ref.shape != new.shape:
        return False, f"{label}: {ref.dtype}{ref.shape} vs {new.dtype}{new.shape}"
    if ref.dtype.kind not in "fc":
        ok = bool(np.array_equal(ref, new))
        return ok, f"{label}: {'equal' if ok else 'differs'} ({ref.dtype})"
    if mask is not None:
        ref, new = ref[mask], new[mask]
    if ref.size == 0:
        return True, f"{label}: empty"
    bound = Bound(d)
    ok, text = bound.check(new, ref)
    share = bound.share(new, ref)
    if share >= _WORST[0]:
        _WORST[:] = [share, f"{label}: {text}"]
    return ok, f"{label}: {text}"


_WORST = [0.0, "no float golden compared"]


def worst_regenerated():
    """The compared float golden closest to its bound so far, as a line for the exporter's report."""
    return f"closest to its bound ({_WORST[0]:.0%} of it): {_WORST[1]}"


def adamw_mask(grad, min_grad=1e-5):
    """Elements whose AdamW step is a function of the gradient that rounding cannot flip: the first
    step is lr * g / (|g| + eps) ~ lr * sign(g), which a gradient at the rounding level of its tensor
    flips; compare where |g| > min_grad, or g is exactly 0 (the weight decay alone)."""
    g = np.abs(np.asarray(grad, dtype=np.float64))
    return (g > min_grad) | (g == 0)


def adamw_trajectory_bound(lrs, beta1, beta2):
    """Largest |difference| of one weight between two AdamW trajectories of len(lrs) steps whose
    gradients differ by rounding only. Any step's update can flip sign (a gradient at the rounding
    level), so the bound is the sum of twice each step's largest update: by Cauchy-Schwarz, for
    beta1^2 <= beta2, |m_hat_t| / sqrt(v_hat_t) <= (1 - beta1) / (1 - beta1^t) *
    sqrt(t (1 - beta2^t) / (1 - beta2)); the weight decay (a factor 1 - lr wd <= 1) only shrinks a
    difference. A worst case that holds for any gradients (about twice the most a trajectory can move
    an element), so it catches only gross errors; the trajectory's correctness rests on the per-step
    loss and gradient-norm checks."""
    assert beta1 * beta1 <= beta2
    total = 0.0
    for t, lr in enumerate(lrs, start=1):
        c = (1 - beta1) / (1 - beta1 ** t) * math.sqrt(t * (1 - beta2 ** t) / (1 - beta2))
        total += 2 * lr * c
    return total


def forward_chain_of(golden_dir):
    """D of a sample's forward goldens: its golden/config.json, at the longest golden sequence."""
    with open(os.path.join(golden_dir, "config.json")) as f:
        cfg = json.load(f)
    seqs = [int(m.group(1)) for m in (re.match(r"ids_b\d+_s(\d+)\.npy$", n) for n in os.listdir(golden_dir)) if m]
    return chain_length(cfg, max(seqs, default=cfg.get("trace_seq", 8)))



# --------------------------------------------------------------------------------------------------
# Reduced-precision evaluations (the float16 / bfloat16 forms of samples/models/mixtral_dtypes)
#
# An evaluation in float16 or bfloat16 (PyTorch's CPU kernels, onnxruntime's CPU provider) against
# fp32 on the same dtype-rounded weights (the compiler converts weights to fp32 at load and computes
# in fp32). The same model as above, with the dtype's unit roundoff and a chain that counts only the
# roundings to the dtype:
# - Unit roundoff u_d = 2^-11 (float16: 11 significant bits) or 2^-8 (bfloat16: 8).
# - Which results are rounded to the dtype: every tensor the model stores in the dtype, once per op.
#   Reductions accumulate in fp32 and round their result once (an assumption about the oracles:
#   oneDNN's bf16 GEMM on CPU accumulates in fp32; onnxruntime's x86-64 CPU MatMul<float16> widens
#   to fp32 GEMM; Hugging Face's RMSNorm and softmax(dtype=float32) reduce in fp32 by
#   construction), so a GEMM is one rounding, not K.
# - D_d (dtype_chain_length) counts them through Hugging Face's Mixtral forward (module code in
#   samples/models/mixtral_variants/export_variants.py), per decoder layer, every branch of a block
#   counted (an upper estimate of the longest chain): attention 13 = RMSNorm 2 (x.to(input_dtype),
#   weight * x) + q projection 1 + rotary 3 (q * cos, rotate_half(q) * sin, their sum) + scores 1
#   + / sqrt(head_dim) 1 + mask add 1 + softmax's .to(q.dtype) 1 + probs @ v 1 + o projection 1 +
#   residual 1; FFN 13 = RMSNorm 2 + router logits 1 + routing weights' .to(x.dtype) 1 + w1 1 + w3
#   1 + SiLU 2 (Sigmoid, Mul) + the product 1 + w2 1 + * routing weight 1 + index_add 1 + residual
#   1; then cos/sin's cast 1, the final RMSNorm 2 and the head 1.
# - One evaluation's relative error has standard deviation sqrt(D_d/3) u_d; the fp32 evaluation
#   adds sigma(D) (negligible: 20 u against 4 u_d for the tiny sample), added linearly (an upper
#   estimate). The same 2 (normwise) and 6 (elementwise) standard deviations as Bound.

DTYPE_U = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


def dtype_chain_length(cfg):
    """D_d: roundings to the dtype on the longest chain of the Hugging Face Mixtral forward."""
    for key in ("attention_type", "qk_norm", "num_shared_experts", "dense_layers"):
        if cfg.get(key):
            raise ValueError(f"dtype_chain_length counts Mixtral's forward only, not {key}")
    return 26 * cfg["num_layers"] + 4


class DtypeBound(Bound):
    """Tolerances for a dtype evaluation's logits against fp32 on the same rounded weights."""

    def __init__(self, cfg, seq, dtype, evaluations=1):
        self.d = dtype_chain_length(cfg)
        self.dtype = dtype
        # evaluations=2: two dtype evaluations against each other (a bf16 golden regenerated on
        # another CPU's kernels): their difference's deviation is sqrt(2) times one's.
        s = math.sqrt(evaluations * self.d / 3.0) * DTYPE_U[dtype] + sigma(chain_length(cfg, seq))
        self.normwise = NORMWISE_SIGMAS * s
        self.element = ELEMENT_SIGMAS * s

    def check(self, got, ref):
        ok, text = super().check(got, ref)
        u_d = DTYPE_U[self.dtype]
        if np.shape(got) == np.shape(ref) and np.all(np.isfinite(got)):
            nw, el = self.measure(got, ref)
            text = (f"normwise {nw * U / u_d:.2f} u_d (bound {self.normwise / u_d:.1f} u_d), max "
                    f"{el * U / u_d:.2f} u_d of max|ref| (bound {self.element / u_d:.1f} u_d; "
                    f"u_d = 2^{int(round(math.log2(u_d)))}, D_d = {self.d})")
        return ok, text


def dtype_logits_bound(cfg, seq, dtype, evaluations=1):
    """The forward check of a float16 / bfloat16 evaluation against fp32 on the rounded weights
    (evaluations=2: against another dtype evaluation)."""
    return DtypeBound(cfg, seq, dtype, evaluations)
