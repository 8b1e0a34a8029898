"""``fx.scipy.ndimage``: ``map_coordinates`` as ``jax.scipy.ndimage.map_coordinates``.

Interpolation of order 0 (nearest, ties rounded away from zero) or 1 (multilinear) at
arbitrary coordinates, one coordinate array per input dimension, all of one shape, which is
the result's. Each interpolation node's index is fixed up by the boundary ``mode`` (jax's
modes, which are SciPy's ``grid-*`` behaviour: ``'constant'`` is ``'grid-constant'``, ``'wrap'``
is ``'grid-wrap'``); in ``'constant'`` mode a node outside the input contributes ``cval``.
The result has the input's dtype (integer inputs round half away from zero). Linear in
``input``, so it differentiates in ``input`` (and piecewise in the coordinates, order 1).
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Sequence

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval

__all__ = ["map_coordinates"]


def _fnp():
    import fx.numpy as fnp

    return fnp


def _mirror_index_fixer(index, size: int):
    # |x - round(x)| as an integer triangular wave of half-period size - 1.
    s = size - 1
    return _fnp().abs((index + s) % (2 * s) - s)


def _reflect_index_fixer(index, size: int):
    return _fnp().floor_divide(_mirror_index_fixer(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_FIXERS: dict[str, Callable] = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: _fnp().clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror_index_fixer,
    "reflect": _reflect_index_fixer,
}


def _round_half_away_from_zero(a):
    return a if dtypes.issubdtype(get_aval(a).dtype, np.integer) else lax.round(a)


def _nearest_nodes(coordinate):
    index = _round_half_away_from_zero(coordinate).astype(np.int32)
    return [(index, None)]


def _linear_nodes(coordinate):
    lower = _fnp().floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(np.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


def map_coordinates(input, coordinates: Sequence, order: int, mode: str = "constant",  # noqa: A002
                    cval=0.0):
    """Interpolate ``input`` at ``coordinates``, as :func:`jax.scipy.ndimage.map_coordinates`.

    Args:
      input: N-dimensional array to interpolate.
      coordinates: a length-N sequence of arrays (one shape), the coordinates along each axis.
      order: 0 (nearest neighbour) or 1 (linear).
      mode: ``'constant'`` (default), ``'nearest'``, ``'mirror'``, ``'wrap'`` or ``'reflect'``;
        jax's meanings, which are SciPy's ``grid-constant`` and ``grid-wrap`` for the first
        and fourth.
      cval: the value of points outside ``input`` in ``'constant'`` mode.

    Returns:
      The interpolated values, of the coordinates' shape and ``input``'s dtype.

    >>> import fx
    >>> img = fx.numpy.arange(12.0).reshape(3, 4)
    >>> fx.scipy.ndimage.map_coordinates(img, [fx.numpy.array([0.5, 1.5]),
    ...                                        fx.numpy.array([1.5, 2.5])], order=1)
    Array([3.5, 8.5], dtype=float32)
    """
    fnp = _fnp()
    input_arr = fnp.asarray(input)
    coordinate_arrs = [fnp.asarray(c) for c in coordinates]
    in_dtype = get_aval(input_arr).dtype
    cval = fnp.asarray(cval, in_dtype)
    if len(coordinate_arrs) != input_arr.ndim:
        raise ValueError("fx.scipy.ndimage.map_coordinates: coordinates must be a sequence of "
                         f"length input.ndim, but {len(coordinate_arrs)} != {input_arr.ndim}")
    index_fixer = _INDEX_FIXERS.get(mode)
    if index_fixer is None:
        raise NotImplementedError(f"fx.scipy.ndimage.map_coordinates: mode {mode!r} is not "
                                  f"supported; the modes are {sorted(_INDEX_FIXERS)}")
    if order == 0:
        nodes_of = _nearest_nodes
    elif order == 1:
        nodes_of = _linear_nodes
    else:
        raise NotImplementedError("fx.scipy.ndimage.map_coordinates: order must be 0 or 1, "
                                  f"got {order}")

    per_axis = []
    for coordinate, size in zip(coordinate_arrs, input_arr.shape):
        nodes = []
        for index, weight in nodes_of(coordinate):
            valid = (0 <= index) & (index < size) if mode == "constant" else None
            nodes.append((index_fixer(index, size), valid, weight))
        per_axis.append(nodes)

    outputs = []
    for items in itertools.product(*per_axis):
        indices, validities, weights = zip(*items)
        contribution = input_arr[tuple(indices)]
        valid = [v for v in validities if v is not None]
        if valid:
            contribution = fnp.where(functools.reduce(operator.and_, valid), contribution, cval)
        ws = [w for w in weights if w is not None]
        outputs.append(functools.reduce(operator.mul, ws) * contribution if ws else contribution)
    result = functools.reduce(operator.add, outputs)
    if dtypes.issubdtype(in_dtype, np.integer):
        result = _round_half_away_from_zero(result)
    return result.astype(in_dtype)
