"""Descriptive statistics of jax.scipy.stats: ``mode``, ``rankdata`` and ``sem``, with jax's
shapes and dtypes (ranks in the default float dtype; NaN anywhere gives NaN ranks)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import fx.numpy as fnp
from fx import dtypes, lax
from fx.array import Array
from fx.numpy._promote import canonical_axis, ensure_arraylike
from fx.scipy.stats._common import promote_dtypes_inexact
from fx.vectorize import vmap


class ModeResult(NamedTuple):
    mode: Array
    count: Array


def _check_nan_policy(name: str, nan_policy: str) -> None:
    if nan_policy not in ["propagate", "omit", "raise"]:
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; "
                         "expected one of {'propagate', 'omit', 'raise'}")
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{name}`, we cannot know whether `x` contains nans. "
            f"Please check if nans exist in `x` outside of the `{name}` function.")


def mode(a, axis: int | None = 0, nan_policy: str = "propagate",
         keepdims: bool = False) -> ModeResult:
    """The most common value along ``axis`` (the smallest on ties) and its count.

        >>> fx.scipy.stats.mode(fnp.array([1, 2, 2, 3]))
        ModeResult(mode=Array(2, dtype=int32), count=Array(2, dtype=int32))
    """
    ensure_arraylike("fx.scipy.stats.mode", a)
    x = fnp.atleast_1d(a)
    _check_nan_policy("mode", nan_policy)
    if axis is not None:
        axis = canonical_axis(axis, x.ndim, "fx.scipy.stats.mode")
    shape = x.shape
    if keepdims:
        out_shape = tuple(1 if axis is None or i == axis else s for i, s in enumerate(shape))
    elif axis is None:
        out_shape = ()
    else:
        out_shape = tuple(s for i, s in enumerate(shape) if i != axis)
    if axis is None:
        axis, x = 0, x.ravel()

    def _mode_helper(x):
        if x.size == 0:
            nan = fnp.array(np.nan, dtype=dtypes.default_float_dtype())
            return nan, fnp.array(0, dtype=dtypes.default_float_dtype())
        vals, counts = fnp.unique(x, return_counts=True, size=x.size)
        return vals[fnp.argmax(counts)], counts.max()

    x = fnp.moveaxis(x, axis, 0)
    x = x.reshape(x.shape[0], math.prod(x.shape[1:]))
    vals, counts = vmap(_mode_helper, in_axes=1)(x)
    return ModeResult(vals.reshape(out_shape), counts.reshape(out_shape))


def _invert_permutation(i):
    return fnp.empty_like(i).at[i].set(fnp.arange(i.size, dtype=i.dtype))


def rankdata(a, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate"):
    """Ranks from 1 of ``a``'s values (ties by ``method``: average, min, max, dense, ordinal),
    of the flattened array or along ``axis``.

        >>> fx.scipy.stats.rankdata(fnp.array([3.0, 1.0, 3.0]))
        Array([2.5, 1. , 2.5], dtype=float32)
    """
    ensure_arraylike("fx.scipy.stats.rankdata", a)
    _check_nan_policy("rankdata", nan_policy)
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    if axis is not None:
        return fnp.apply_along_axis(rankdata, axis, a, method)
    a = fnp.ravel(a)
    out_dtype = dtypes.default_float_dtype()

    def _rankdata(a):
        arr, sorter = lax.sort_key_val(a, fnp.arange(a.size))
        inv = _invert_permutation(sorter)
        if method == "ordinal":
            return (inv + 1).astype(out_dtype)
        obs = fnp.concatenate([fnp.array([True]), arr[1:] != arr[:-1]])
        dense = obs.cumsum()[inv]
        if method == "dense":
            return dense.astype(out_dtype)
        count = fnp.nonzero(obs, size=arr.size + 1, fill_value=obs.size)[0].astype(out_dtype)
        if method == "max":
            return count[dense]
        if method == "min":
            return count[dense - 1] + 1
        return 0.5 * (count[dense] + count[dense - 1] + 1)

    return lax.cond(fnp.any(fnp.isnan(a)), lambda a: fnp.full_like(a, np.nan, out_dtype),
                    _rankdata, a)


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False):
    """The standard error of the mean, std(a, ddof) / sqrt(n), along ``axis``.

        >>> fx.scipy.stats.sem(fnp.array([1.0, 2.0, 3.0]))
        Array(0.57735026, dtype=float32)
    """
    (b,) = promote_dtypes_inexact("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return b.std(axis, ddof=ddof, keepdims=keepdims) / fnp.sqrt(size).astype(b.dtype)
    if nan_policy == "omit":
        count = (~fnp.isnan(b)).sum(axis, keepdims=keepdims)
        return (fnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims)
                / fnp.sqrt(count).astype(b.dtype))
    raise ValueError(f"{nan_policy} is not supported")
