"""``fx.quant.nf4``: 4-bit NormalFloat weights (QLoRA, Dettmers et al. 2023) and their product.

``quantize(w)`` flattens ``w`` in C order and splits it into blocks of ``block_size`` (64)
consecutive values; each block keeps its absolute maximum as a float32 scale and each value the
index of the nearest of the 16 NF4 code values (``CODE``) to ``w / scale``. NF4's code values
are quantiles of a standard normal, rescaled to [-1, 1], with an exact zero: a normally
distributed block uses all 16 codes about equally often. ``dequantize(q)`` is
``CODE[index] * scale`` in float32.

Storage: two 4-bit codes per byte, packed along the last axis in halves: byte ``j`` of a row of
``n`` values holds the code of value ``j`` in its low nibble and of value ``j + n // 2`` in its
high nibble (so a kernel reading consecutive bytes gets consecutive columns of both halves,
without shuffling nibbles across vector lanes). The block scales are float32, or with
``double_quant`` (QLoRA's second quantization) int8 codes of the scales minus their mean, in
blocks of 256 scales with one float32 scale each: 4.127 instead of 4.5 bits per value. Its
8-bit format is symmetric integer (the paper uses an 8-bit float).

``matmul(x, q)`` is ``x @ dequantize(q)`` for a ``(K, N)`` weight as one primitive,
``nf4_dot``, linear in ``x`` only: the packed codes are integer storage, not a differentiable
input, so ``grad`` reaches ``x`` (and whatever produced it, e.g. LoRA adapters) and never the
frozen base. Eagerly it dequantizes and calls BLAS; under ``fx.jit`` a generated kernel
(``fx.lowering.kernels.nf4.nf4_gemm``) unpacks, looks up, scales and multiplies in its inner
loop, never writing a float32 copy of the weight, and sums over ``k`` in order (bit-equal to
:func:`reference_matmul`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.jvp import Zero
from fx.interpreters.transpose import is_undefined
from fx.lowering.kernels.nf4 import nf4_gemm
from fx.pytree_registry import register_pytree_node_class

__all__ = ["CODE", "NF4Tensor", "dequantize", "matmul", "quantize", "reference_matmul"]

# The 16 NF4 values of the QLoRA paper (Appendix E; bitsandbytes' table), ascending.
CODE = np.array([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0], np.float32)
CODE.flags.writeable = False
# Nearest-code thresholds: a normalized value below _MIDPOINTS[i] rounds to a code <= i.
_MIDPOINTS = ((CODE[1:] + CODE[:-1]) / 2).astype(np.float32)
DOUBLE_QUANT_BLOCK = 256


@register_pytree_node_class
@dataclass(frozen=True, eq=False)
class NF4Tensor:
    """A packed NF4 tensor (see the module docstring for the layout); a pytree whose leaves
    are its arrays, so it passes through ``fx.jit``/``vmap`` like the parameters it replaces.

    ``packed``: uint8 of shape ``shape[:-1] + (shape[-1] // 2,)``. ``scales``: the blocks'
    float32 absmax scales, or ``None`` with double quantization, when ``scale_codes`` (int8,
    ``(groups, 256)``, the scales minus ``scale_offset`` in units of ``scale_scales``, one
    float32 per group of 256 blocks; the last group zero-padded) hold them."""

    packed: np.ndarray
    shape: tuple[int, ...]
    block_size: int
    scales: np.ndarray | None = None
    scale_codes: np.ndarray | None = None
    scale_scales: np.ndarray | None = None
    scale_offset: np.ndarray | None = None  # float32, 0-d

    def tree_flatten(self):
        aux = (self.shape, self.block_size, self.double_quant)
        if self.double_quant:
            return (self.packed, self.scale_codes, self.scale_scales, self.scale_offset), aux
        return (self.packed, self.scales), aux

    @classmethod
    def tree_unflatten(cls, aux, leaves):
        shape, block_size, double = aux
        if double:
            packed, codes, scale_scales, offset = leaves
            return cls(packed, shape, block_size, scale_codes=codes, scale_scales=scale_scales,
                       scale_offset=offset)
        packed, scales = leaves
        return cls(packed, shape, block_size, scales=scales)

    @property
    def dtype(self) -> np.dtype:
        """The dtype it dequantizes to."""
        return dtypes.float32

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def blocks(self) -> int:
        return self.size // self.block_size

    @property
    def double_quant(self) -> bool:
        return self.scales is None

    @property
    def nbytes(self) -> int:
        """Bytes of storage: the packed codes and the scales (with their own scales)."""
        leaves = self.tree_flatten()[0]
        return sum(get_aval(a).nbytes for a in leaves)

    def block_scales(self):
        """The float32 scale of each block (with double quantization, dequantized:
        ``code * scale_scale + offset`` in float32). NumPy for concrete tensors, fx.numpy
        when the leaves are traced."""
        if self.scales is not None:
            return self.scales
        leaves = (self.scale_codes, self.scale_scales, self.scale_offset)
        xp = np if all(isinstance(a, np.ndarray) for a in leaves) else _fnp()
        codes = xp.asarray(self.scale_codes).astype(np.float32)
        full = codes * xp.asarray(self.scale_scales)[:, None] + self.scale_offset
        return full.reshape(-1)[:self.blocks].astype(np.float32)

    def codes(self) -> np.ndarray:
        """The code indices (uint8 in [0, 16)) in ``shape``."""
        return np.concatenate([self.packed & 15, self.packed >> 4], axis=-1)

    def __repr__(self) -> str:
        dq = ", double_quant" if self.double_quant else ""
        return (f"NF4Tensor(shape={self.shape}, block_size={self.block_size}{dq}, "
                f"nbytes={self.nbytes})")


def _fnp():
    from fx import numpy as fnp  # fx.numpy is heavier than this module needs at import

    return fnp


def quantize(w, block_size: int = 64, double_quant: bool = False) -> NF4Tensor:
    """``w`` as 4-bit NormalFloat codes with block-wise absmax scales.

    Args:
      w: a float array (float16/bfloat16/float32/float64; computed in float32) whose size
        ``block_size`` divides and whose last dimension is even (two codes per byte).
      block_size: values per scale (QLoRA: 64).
      double_quant: store the scales as int8 too (blocks of 256 scales).

    Returns:
      An :class:`NF4Tensor`.

    >>> import numpy as np
    >>> from fx.quant import nf4
    >>> w = np.random.default_rng(0).standard_normal((256, 128)).astype(np.float32)
    >>> q = nf4.quantize(w)
    >>> q.shape, w.nbytes // q.nbytes
    ((256, 128), 7)
    >>> bool(np.abs(nf4.dequantize(q) - w).max() <= 0.16 * np.abs(w).max())
    True
    """
    w = np.asarray(w)
    if not dtypes.is_float(w.dtype):
        raise TypeError(f"fx.quant.nf4.quantize: w must be a float array, got {w.dtype}"
                        f"{list(w.shape)}; convert it first (e.g. w.astype(np.float32))")
    if not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"fx.quant.nf4.quantize: block_size must be a positive integer, got "
                         f"{block_size!r}")
    if w.ndim < 1 or w.shape[-1] % 2:
        raise ValueError(f"fx.quant.nf4.quantize: the last dimension of w {list(w.shape)} must "
                         "be even (two 4-bit codes per byte, packed along it); pad it")
    if w.size % block_size:
        raise ValueError(f"fx.quant.nf4.quantize: block_size {block_size} must divide the "
                         f"size {w.size} of w {list(w.shape)}; choose a divisor or pad w")
    blocks = w.astype(np.float32).reshape(-1, block_size)
    if not np.all(np.isfinite(blocks)):
        raise ValueError("fx.quant.nf4.quantize: w holds inf or NaN values")
    scales = np.max(np.abs(blocks), axis=1)
    normalized = blocks / np.where(scales > 0, scales, 1)[:, None]
    index = np.searchsorted(_MIDPOINTS, normalized).astype(np.uint8).reshape(w.shape)
    half = w.shape[-1] // 2
    packed = (index[..., :half] | (index[..., half:] << 4)).astype(np.uint8)
    if not double_quant:
        return NF4Tensor(packed, tuple(w.shape), int(block_size), scales=scales)
    offset = np.asarray(scales.mean(), np.float32)
    centered = scales - offset
    pad = -centered.size % DOUBLE_QUANT_BLOCK
    groups = np.pad(centered, (0, pad)).reshape(-1, DOUBLE_QUANT_BLOCK)
    amax = np.max(np.abs(groups), axis=1)
    scale_scales = np.where(amax > 0, amax / 127, 1).astype(np.float32)
    scale_codes = np.clip(np.rint(groups / scale_scales[:, None]), -127, 127).astype(np.int8)
    return NF4Tensor(packed, tuple(w.shape), int(block_size), scale_codes=scale_codes,
                     scale_scales=scale_scales, scale_offset=offset)


def dequantize(q: NF4Tensor) -> np.ndarray:
    """The float32 array ``CODE[index] * scale`` (``q.shape``)."""
    _check_tensor("dequantize", q)
    values = CODE[q.codes()].reshape(-1, q.block_size)
    return (values * q.block_scales()[:, None]).reshape(q.shape)


def _check_tensor(name: str, q) -> None:
    if not isinstance(q, NF4Tensor):
        raise TypeError(f"fx.quant.nf4.{name}: expected an NF4Tensor (from nf4.quantize), got "
                        f"{type(q).__name__}")


# --- the product: one primitive, linear in x ------------------------------------------------------
# nf4_dot(x, packed, scales, code; block_size, transposed):
#   transposed=False: x (M, K) @ W (K, N)   -> (M, N)
#   transposed=True:  x (M, N) @ W (K, N)^T -> (M, K)   (the transpose rule's product)
# with W the dequantized weight: packed (K, N // 2) uint8, scales (K * N // block_size,)
# float32, code the 16 code values (float32; an operand so kernels read it as a buffer).

nf4_dot_p = Primitive("nf4_dot")


def weight_shape(packed: ShapedArray) -> tuple[int, int]:
    return packed.shape[0], 2 * packed.shape[1]


@nf4_dot_p.def_abstract_eval
def _nf4_dot_abstract_eval(x, packed, scales, code, *, block_size, transposed):
    def fail(what):
        raise TypeError(f"nf4_dot: {what} (x {x.str_short()}, packed {packed.str_short()}, "
                        f"scales {scales.str_short()}, code {code.str_short()})")

    if packed.dtype != dtypes.uint8 or packed.ndim != 2:
        fail("packed must be a 2-D uint8 array (K, N // 2)")
    k, n = weight_shape(packed)
    if scales.dtype != dtypes.float32 or scales.shape != (k * n // block_size,) or (
            k * n) % block_size:
        fail(f"scales must be float32 of shape ({k * n // block_size},), one per block of "
             f"{block_size}")
    if code.dtype != dtypes.float32 or code.shape != (16,):
        fail("code must be the 16 float32 NF4 values")
    inner, outer = (n, k) if transposed else (k, n)
    if x.dtype != dtypes.float32 or x.ndim != 2 or x.shape[1] != inner:
        fail(f"x must be float32 of shape (M, {inner}); convert it with .astype(np.float32)")
    return ShapedArray((x.shape[0], outer), dtypes.float32)


def _dequantized(packed, scales, code, block_size):
    packed = np.asarray(packed)
    index = np.concatenate([packed & 15, packed >> 4], axis=-1)
    values = np.asarray(code)[index].reshape(-1, block_size)
    return (values * np.asarray(scales)[:, None]).reshape(index.shape)


@nf4_dot_p.def_impl
def _nf4_dot_impl(x, packed, scales, code, *, block_size, transposed):
    w = _dequantized(packed, scales, code, block_size)
    return np.dot(np.asarray(x), w.T if transposed else w).astype(np.float32, copy=False)


def _nf4_dot_jvp(primals, tangents, *, block_size, transposed):
    x, packed, scales, code = primals
    for name, t in (("scales", tangents[2]), ("code", tangents[3])):
        if not isinstance(t, Zero):
            raise TypeError(f"nf4_dot: the NF4 weight is frozen (not differentiable), but its "
                            f"{name} got a tangent; train adapters beside it instead (see "
                            "fx.example_libraries.lora)")
    ans = nf4_dot_p.bind(x, packed, scales, code, block_size=block_size, transposed=transposed)
    if isinstance(tangents[0], Zero):
        return ans, Zero.like(ans)
    return ans, nf4_dot_p.bind(tangents[0], packed, scales, code, block_size=block_size,
                               transposed=transposed)


def _nf4_dot_transpose(ct, x, packed, scales, code, *, block_size, transposed):
    if not is_undefined(x) or any(is_undefined(a) for a in (packed, scales, code)):
        raise TypeError("nf4_dot: transposable only with respect to x (the weight is frozen)")
    if isinstance(ct, Zero):
        return [Zero(x.aval), None, None, None]
    return [nf4_dot_p.bind(ct, packed, scales, code, block_size=block_size,
                           transposed=not transposed), None, None, None]


jvp.jvp_rules[nf4_dot_p] = _nf4_dot_jvp
jvp.linear_prims.add(nf4_dot_p)
transpose.deftranspose(nf4_dot_p, _nf4_dot_transpose)


def _nf4_dot_batch(axis, vals, dims, *, block_size, transposed):
    x, packed, scales, code = vals
    dx, *rest = dims
    if any(d is not None for d in rest):
        raise NotImplementedError("nf4_dot: batching over the NF4 weight (a vmap over several "
                                  "quantized weights) is not supported; map over x only")
    size = get_aval(x).shape[dx]
    xs = batching.bdim_at_front(x, dx, size)
    b, m, inner = get_aval(xs).shape
    out = nf4_dot_p.bind(xs.reshape(b * m, inner), packed, scales, code,
                         block_size=block_size, transposed=transposed)
    return out.reshape(b, m, get_aval(out).shape[1]), 0


batching.batch_rules[nf4_dot_p] = _nf4_dot_batch
# The compiler's kernels for it (fx.lowering sits below fx.quant, so fx.quant registers them).
nf4_gemm.register_nf4_dot(nf4_dot_p)


def matmul(x, q: NF4Tensor):
    """``x @ dequantize(q)`` for a 2-D NF4 weight ``q`` of shape ``(K, N)`` (a dense layer's
    ``(in, out)`` weight) and a float32 ``x`` of shape ``(..., K)``; differentiable in ``x``
    only.

    >>> import numpy as np, fx
    >>> from fx.quant import nf4
    >>> q = nf4.quantize(np.ones((4, 8), np.float32), block_size=8)
    >>> np.asarray(fx.jit(nf4.matmul)(np.ones((2, 4), np.float32), q)).tolist()[0]
    [4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]
    """
    _check_tensor("matmul", q)
    from fx import lax

    fnp = _fnp()
    if len(q.shape) != 2:
        raise ValueError(f"fx.quant.nf4.matmul: the weight must be 2-D (K, N), got shape "
                         f"{q.shape}")
    x = fnp.asarray(x)
    xa = get_aval(x)
    k, n = q.shape
    if xa.ndim < 1 or xa.shape[-1] != k:
        raise ValueError(f"fx.quant.nf4.matmul: x {xa.str_short()} must end in the weight's "
                         f"input dimension {k} (weight {q.shape})")
    if xa.dtype != dtypes.float32:
        raise TypeError(f"fx.quant.nf4.matmul: x must be float32, got {xa.str_short()}; "
                        "convert it with .astype(np.float32)")
    # The base is frozen: its (float) scales get no gradient, the packed codes are integers.
    scales = q.block_scales()
    if not isinstance(scales, np.ndarray):
        scales = lax.stop_gradient(scales)
    lead = xa.shape[:-1]
    out = nf4_dot_p.bind(x.reshape(math.prod(lead), k), fnp.asarray(q.packed), scales, CODE,
                         block_size=q.block_size, transposed=False)
    return out.reshape(*lead, n)


def reference_matmul(x: np.ndarray, q: NF4Tensor) -> np.ndarray:
    """``x @ dequantize(q)`` in float32 with the products summed over ``k`` in order
    (``acc = acc + x[:, k] * W[k]``, no fused multiply-add): the summation order of the fused
    kernel, so the two agree bit for bit."""
    w = dequantize(q)
    x = np.asarray(x, np.float32)
    acc = np.zeros((x.shape[0], w.shape[1]), np.float32)
    for k in range(w.shape[0]):
        acc = acc + x[:, k:k + 1] * w[k]
    return acc
