"""Helpers shared by the ``fx.lax.linalg`` modules: operand checks, batched-matrix building
blocks written with ``fx.lax`` ops (batch dimensions leading), batching and jvp registration
for the LAPACK-backed primitives, and the SciPy LAPACK lookup their impls use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval
from fx.interpreters import batching, jvp
from fx.lax.base import broadcast_in_dim, shape_error
from fx.lax.base import transpose as transpose_axes
from fx.lax.convert import convert_element_type
from fx.lax.elementwise import add, div, eq, full_like, le, mul, select, sub
from fx.lax.linalg.contraction import dot_general
from fx.lax.structural import broadcasted_iota

FLOATS = frozenset(map(np.dtype, (np.float32, np.float64, np.complex64, np.complex128)))

def check_matrix(name: str, x: ShapedArray, square: bool = False) -> None:
    if x.dtype not in FLOATS:
        raise TypeError(f"{name} requires a float32, float64, complex64 or complex128 operand, "
                        f"got {x.dtype} ({x.str_short()})")
    if x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        what = "square matrices [..., n, n]" if square else "matrices [..., m, n]"
        raise shape_error(name, f"needs a batch of {what}", x)


def T(x):
    """``x`` with its last two dimensions swapped."""
    nd = get_aval(x).ndim
    return transpose_axes(x, (*range(nd - 2), nd - 1, nd - 2))


def H(x):
    """The conjugate transpose of a batch of matrices."""
    from fx.lax.complex_parts import conj

    return conj(T(x)) if dtypes.is_complex(get_aval(x).dtype) else T(x)


def mm(a, b):
    """Batched matrix product of two operands with the same batch dimensions."""
    nd = get_aval(a).ndim
    batch = tuple(range(nd - 2))
    return dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)))


def bcast(x, shape):
    """NumPy-style broadcast of ``x`` (same rank, or fewer leading dims) to ``shape``."""
    nd = get_aval(x).ndim
    return broadcast_in_dim(x, tuple(shape), tuple(range(len(shape) - nd, len(shape))))


def bmul(x, y):
    """``x * y`` with NumPy broadcasting of size-1 (or missing leading) dimensions."""
    shape = np.broadcast_shapes(get_aval(x).shape, get_aval(y).shape)
    return mul(bcast(x, shape), bcast(y, shape))


def tri_mask(shape, k: int, lower: bool):
    """Boolean mask of the lower (``col - row <= k``) or upper (``col - row >= k``) triangle."""
    nd = len(shape)
    diff = sub(broadcasted_iota(np.int32, shape, nd - 1), broadcasted_iota(np.int32, shape, nd - 2))
    return le(diff, k) if lower else le(k, diff)


def tril(x, k: int = 0):
    return select(tri_mask(get_aval(x).shape, k, True), x, full_like(x, 0))


def triu(x, k: int = 0):
    return select(tri_mask(get_aval(x).shape, k, False), x, full_like(x, 0))


def eye(dtype, n: int, batch=()):
    shape = (*batch, n, n)
    nd = len(shape)
    on = eq(broadcasted_iota(np.int32, shape, nd - 2), broadcasted_iota(np.int32, shape, nd - 1))
    return convert_element_type(on, dtype)


def symmetrize(x):
    """``(x + x^H) / 2``."""
    return div(add(x, H(x)), full_like(x, 2))


def batch_at_front(prim: Primitive) -> None:
    """Batching for a primitive whose operands all have their batch dimensions leading."""

    def rule(axis, vals, dims, **params):
        vals = [batching.bdim_at_front(v, d, axis.size) for v, d in zip(vals, dims)]
        out = prim.bind(*vals, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)

    batching.batch_rules[prim] = rule


def to_host(x) -> np.ndarray:
    """An impl's operand as a NumPy array."""
    return np.asarray(x)


def lapack(name: str, dtype: np.dtype):
    """SciPy's LAPACK routine ``name`` (as 'geqrf', or 'orgqr' whose complex twin is 'ungqr')
    for ``dtype``. SciPy is imported here, not at fx's import."""
    from scipy.linalg import lapack

    if dtypes.is_complex(dtype):
        name = {"orgqr": "ungqr", "ormqr": "unmqr", "sytrd": "hetrd"}.get(name, name)
    prefix = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
              np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}[np.dtype(dtype)]
    return getattr(lapack, prefix + name)


def lapack_per_matrix(fn: Callable, operands: Sequence[np.ndarray], batch: tuple[int, ...],
                      out_avals: Sequence[ShapedArray]) -> list[np.ndarray]:
    """``fn(*matrices)`` for each batch element of ``operands`` (batch dimensions leading):
    ``fn`` returns ``(outputs, ok)``; an element whose ``ok`` is false (LAPACK's ``info !=
    0``) gets NaN outputs (floats) or zeros (ints), as jax's."""
    size = math.prod(batch)
    flat = [np.asarray(o).reshape((size, *np.shape(o)[len(batch):])) for o in operands]
    outs = [np.empty((size, *a.shape[len(batch):]), a.dtype) for a in out_avals]
    for i in range(size):
        results, ok = fn(*(f[i] for f in flat))
        for out, r in zip(outs, results):
            if ok:
                out[i] = r
            else:
                out[i] = np.nan if out.dtype.kind in "fc" else 0
    return [o.reshape(a.shape) for o, a in zip(outs, out_avals)]


def refuse_jvp(prim: Primitive, why: str) -> None:
    """Register a jvp rule for ``prim`` that raises: jax has no derivative for it either."""

    def rule(primals, tangents, **params):
        raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented "
                                  f"(as in jax): {why}")

    jvp.jvp_rules[prim] = rule
