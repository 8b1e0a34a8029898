"""Maximum and minimum as jax computes them, on NumPy buffers: NaN propagates, and the signed
zeros are ordered, ``-0.0 < +0.0``.

NumPy's ``maximum(a, b)`` returns ``b`` when ``a == b``, so ``maximum(+0.0, -0.0)`` is ``-0.0``
and a max reduction's zero sign depends on the order it visits its elements (SIMD or not). jax
(XLA) orders the zeros, which makes every max and min — elementwise, reductions, windows,
prefix scans, scatters — independent of evaluation order, so compiled kernels (which reduce
per SIMD lane) give eager's bits exactly. The fix-ups below run only on floating dtypes and
only touch results that are zeros.
"""

from __future__ import annotations

import numpy as np

__all__ = ["maximum", "minimum", "reduce", "accumulate", "scatter"]


def _floating(dt) -> bool:
    return np.dtype(dt).kind == "f" or np.dtype(dt).name == "bfloat16"


def _signed_zero(like: np.ndarray, positive) -> np.ndarray:
    zero = np.zeros((), like.dtype)
    return np.where(positive, zero, -zero)


def maximum(a, b):
    out = np.maximum(a, b)
    if not _floating(out.dtype):
        return out
    both = (a == 0) & (b == 0)
    # -0 + +0 is +0: +0 wins unless both are -0.
    return np.where(both, np.add(a, b, dtype=out.dtype), out) if np.any(both) else out


def minimum(a, b):
    out = np.minimum(a, b)
    if not _floating(out.dtype):
        return out
    both = (a == 0) & (b == 0)
    # -((-a) - b) is -0 unless both are +0.
    fix = np.negative(np.subtract(np.negative(a), b, dtype=out.dtype))
    return np.where(both, fix, out) if np.any(both) else out


def _winning_zero(kind: str, x: np.ndarray) -> np.ndarray:
    """Where ``x`` holds the zero that wins ties for ``kind``: +0 for max, -0 for min."""
    sign = np.signbit(x)
    return (x == 0) & (~sign if kind == "max" else sign)


def reduce(kind: str, x: np.ndarray, axis, **kw) -> np.ndarray:
    """``np.max``/``np.min`` over ``axis`` with the zeros ordered."""
    out = (np.max if kind == "max" else np.min)(x, axis=axis, **kw)
    if not _floating(x.dtype) or not np.any(out == 0):
        return out
    wins = np.any(_winning_zero(kind, x), axis=axis)
    return np.where(out == 0, _signed_zero(out, wins == (kind == "max")), out)


def accumulate(kind: str, x: np.ndarray, axis: int) -> np.ndarray:
    """``np.maximum.accumulate`` (or minimum) with the zeros ordered: where the prefix's
    extreme is a zero, it is the winning zero if one was seen so far."""
    ufunc = np.maximum if kind == "max" else np.minimum
    out = ufunc.accumulate(x, axis=axis, dtype=x.dtype)
    if not _floating(x.dtype) or not np.any(out == 0):
        return out
    seen = np.logical_or.accumulate(_winning_zero(kind, x), axis=axis)
    return np.where(out == 0, _signed_zero(out, seen == (kind == "max")), out)


def scatter(kind: str, target: np.ndarray, index: tuple, updates: np.ndarray) -> None:
    """``np.maximum.at(target, index, updates)`` (or minimum), in place, with the zeros
    ordered: a position whose result is a zero gets the winning zero if the target or any of
    its updates held one."""
    ufunc = np.maximum if kind == "max" else np.minimum
    if not _floating(target.dtype):
        ufunc.at(target, index, updates)
        return
    wins = _winning_zero(kind, target)
    np.logical_or.at(wins, index, _winning_zero(kind, updates))
    ufunc.at(target, index, updates)
    zero = target == 0
    if np.any(zero):
        target[zero] = _signed_zero(target, wins == (kind == "max"))[zero]
