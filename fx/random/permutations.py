"""Random permutations and sampling from arrays: ``permutation``, ``shuffle`` and ``choice``.

A permutation is a few rounds of stable sorts by fresh random 32-bit keys, as in jax: two
elements keep their relative order only if they draw equal keys in every round, and the number
of rounds (``ceil(3 ln n / ln(2**32 - 1))``, one for fewer than about 1600 elements) makes
that negligible. With the same sort keys as jax and a stable sort, the permutations are
identical to jax's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.core import Tracer, get_aval
from fx.random import xla_math as xm
from fx.random.distributions import _gumbel, as_value, randint, sample_uniform
from fx.random.threefry import bits32, canonical_shape, check_key, split_pair


def _num_rounds(size: int) -> int:
    return int(np.ceil(3 * np.log(max(1, size)) / np.log(2**32 - 1)))


def _sort_shuffle(key, x, axis: int, independent: bool):
    """Shuffle ``x`` along ``axis``: each slice on its own (``independent``), or all slices
    by one permutation (the sort keys then vary along ``axis`` only)."""
    aval = get_aval(x)
    n = aval.shape[axis]
    for _ in range(_num_rounds(aval.size if independent else n)):
        key, subkey = split_pair(key)
        if independent:
            sort_keys = bits32("permutation", subkey, aval.shape)
        else:
            sort_keys = lax.broadcast_in_dim(
                bits32("permutation", subkey, (n,)), aval.shape, (axis,)
            )
        _, x = lax.sort((sort_keys, x), dimension=axis, is_stable=True, num_keys=1)
    return x


def _static_int(name: str, x) -> int:
    if isinstance(x, Tracer):
        try:
            return int(x.to_concrete(f"the integer argument of fx.random.{name}"))
        except TypeError as e:
            raise type(e)(f"fx.random.{name}: {e}") from None
    return int(np.asarray(x))


def _canonical_axis(name: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"fx.random.{name}: axis {axis} is out of bounds for rank {ndim}")
    return axis % ndim


def permutation(key, x, axis: int = 0, independent: bool = False) -> Array:
    """A random permutation of ``x`` along ``axis``, or of ``arange(x)`` for an integer ``x``.

    With ``independent=True`` every 1-d slice along ``axis`` is shuffled on its own; otherwise
    the slices move together. Identical to ``jax.random.permutation`` (``arange`` is int32 in
    fx, int64 in jax's 64-bit mode; the values are the same).

    Example::

        >>> fx.random.permutation(fx.random.key(0), 5)
    """
    key = check_key("permutation", key)
    if isinstance(x, bool) or not isinstance(x, int):
        x = as_value(x, "permutation", "x")
        aval = get_aval(x)
        if aval.ndim:
            axis = _canonical_axis("permutation", axis, aval.ndim)
            return _sort_shuffle(key, x, axis, independent or aval.ndim == 1)
        if not dtypes.is_int(aval.dtype):
            raise TypeError(
                f"fx.random.permutation: x must be an integer or at least 1-dimensional, got "
                f"{aval.str_short()}"
            )
        x = _static_int("permutation", x)
    _canonical_axis("permutation", axis, 1)
    return _sort_shuffle(key, lax.iota(dtypes.int32, max(x, 0)), 0, True)


def shuffle(key, x, axis: int = 0) -> Array:
    """Shuffle each 1-d slice of ``x`` along ``axis`` independently: the same as
    ``permutation(key, x, axis, independent=True)`` (jax's former ``jax.random.shuffle``)."""
    key = check_key("shuffle", key)
    x = as_value(x, "shuffle", "x")
    aval = get_aval(x)
    if aval.ndim == 0:
        raise ValueError("fx.random.shuffle: x must be at least 1-dimensional")
    return _sort_shuffle(key, x, _canonical_axis("shuffle", axis, aval.ndim), True)


def choice(key, a, shape: Sequence[int] = (), replace: bool = True, p=None,
           axis: int = 0) -> Array:
    """A random sample of ``shape`` from the entries of ``a`` along ``axis`` (or from
    ``arange(a)`` for an integer ``a``), with or without replacement, uniformly or with
    probabilities ``p``; the same algorithm as ``jax.random.choice``:

    * uniform with replacement: ``randint`` indices (int32 here; jax's 64-bit mode draws
      int64 indices, which gives different samples);
    * uniform without replacement: the first entries of a ``permutation``;
    * weighted with replacement: inverse-CDF lookup of uniform draws in ``cumsum(p)``;
    * weighted without replacement: the Gumbel top-k trick.

    The result has shape ``a.shape[:axis] + shape + a.shape[axis + 1:]`` (``shape`` for an
    integer ``a``), also when no samples are drawn (where jax returns ``shape``).
    """
    name = "choice"
    key = check_key(name, key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"fx.random.choice: shape must be a sequence of ints, got {shape!r}")
    shape = canonical_shape(name, shape)
    if isinstance(a, (bool, int)) and not isinstance(a, np.generic):
        a = Array(np.asarray(a, dtype=dtypes.int32))
    arr = as_value(a, name, "a")
    aval = get_aval(arr)
    if aval.ndim == 0:
        n_inputs = _static_int(name, arr)
    else:
        axis = _canonical_axis(name, axis, aval.ndim)
        n_inputs = aval.shape[axis]
    out_shape = shape if aval.ndim == 0 else aval.shape[:axis] + shape + aval.shape[axis + 1:]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return lax.full(out_shape, 0, aval.dtype)
    if n_inputs <= 0:
        raise ValueError("fx.random.choice: a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"fx.random.choice: cannot take a larger sample (size {n_draws}) than the "
            f"population (size {n_inputs}) when replace=False"
        )
    if p is None and not replace:
        perm = permutation(key, n_inputs if aval.ndim == 0 else arr, axis if aval.ndim else 0)
        picked = lax.slice_in_dim(perm, 0, n_draws, 1, axis if aval.ndim else 0)
        return lax.reshape(picked, out_shape)
    if p is None:
        ind = randint(key, shape, 0, n_inputs)
    else:
        p = as_value(p, name, "p")
        if not dtypes.is_float(get_aval(p).dtype):
            p = lax.convert_element_type(p, dtypes.float32)
        if get_aval(p).shape != (n_inputs,):
            raise ValueError(
                f"fx.random.choice: p must be None or a 1-d vector with the same size as "
                f"a.shape[axis]; p has shape {get_aval(p).shape} and a.shape[axis] is "
                f"{n_inputs}"
            )
        pdt = get_aval(p).dtype
        if replace:
            cdf = lax.cumsum(p, axis=0)
            total = lax.reshape(lax.slice(cdf, (n_inputs - 1,), (n_inputs,)), ())
            u = sample_uniform(name, key, shape, pdt, 0.0, 1.0)
            r = lax.mul(lax.broadcast_in_dim(total, shape, ()),
                        lax.sub(Array(np.asarray(1, pdt)), u))
            ind = _count_below(cdf, r)
        else:
            g = lax.add(_gumbel(name, key, (n_inputs,), pdt), xm.log(p))
            ind = lax.reshape(lax.top_k(g, n_draws)[1], shape)
    if aval.ndim == 0:
        return ind
    # take(arr, ind, axis): gather puts the index dimensions first; move them to ``axis``.
    picked = lax.gather(arr, lax.reshape(ind, shape + (1,)), (axis,), mode="clip")
    k = len(shape)
    rest = aval.ndim - 1
    perm = tuple(range(k, k + axis)) + tuple(range(k)) + tuple(range(k + axis, k + rest))
    return lax.transpose(picked, perm)


def _count_below(sorted_values, r):
    """``searchsorted(sorted_values, r, side='left')``: how many entries are below each ``r``."""
    n = get_aval(sorted_values).shape[0]
    rs = get_aval(r).shape
    grid = rs + (n,)
    below = lax.lt(lax.broadcast_in_dim(sorted_values, grid, (len(rs),)),
                   lax.broadcast_in_dim(r, grid, tuple(range(len(rs)))))
    return lax.reduce_sum(lax.convert_element_type(below, dtypes.int32), (len(rs),))
