"""Array manipulation: reshaping, transposing, joining, splitting, tiling, flipping, rolling and
rotating (``rollaxis``, ``rot90``), as in ``numpy``/``jax.numpy`` (triangles and diagonals:
``fx.numpy.diagonals``; padding: ``fx.numpy.padding``; inserting, deleting and the further
joining names: ``fx.numpy.joining_and_editing``).

Every function takes array-likes (fx values, numpy data, Python scalars or nested lists) and
returns fx arrays built from structural ``fx.lax`` primitives only (no gather), so results are
exact for every dtype and differentiable/batchable. Shapes, axes, splits, repeats and (unless
noted) shifts must be static Python data; joining functions promote dtypes with JAX's rules.
``reshape``/``ravel`` read and write row-major (``order='C'``) or column-major (``'F'``).
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.core import ConcretizationTypeError, Tracer, get_aval
from fx.numpy._promote import (
    broadcast_shapes,
    broadcast_to_shape,
    canonical_axes,
    canonical_axis,
    promote_dtypes,
    to_array,
)

__all__ = [
    "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays", "broadcast_to",
    "column_stack", "concatenate", "dstack", "expand_dims", "flatten", "flip", "fliplr",
    "flipud", "hstack", "moveaxis", "ravel", "repeat", "reshape", "roll", "rollaxis", "rot90",
    "split", "squeeze", "stack", "swapaxes", "tile", "transpose", "vstack",
]


def _arr(a, name: str):
    return to_array(a, f"fx.numpy.{name}")


def _static_ints(value, name: str, what: str) -> tuple[int, ...]:
    """``value`` (an int or a sequence of ints) as a tuple of Python ints."""
    try:
        return (operator.index(value),)
    except ConcretizationTypeError:
        raise TypeError(f"fx.numpy.{name}: {what} must be static, got a traced value") from None
    except TypeError:
        pass  # not a single int: a sequence
    try:
        return tuple(operator.index(v) for v in value)
    except ConcretizationTypeError:
        raise TypeError(f"fx.numpy.{name}: {what} must be static, got a traced value") from None
    except TypeError:
        raise TypeError(f"fx.numpy.{name}: {what} must be an int or a sequence of ints, got "
                        f"{value!r}") from None


def _check_order(order: str, name: str) -> None:
    """Refuse what jax refuses: 'A' (and 'K' for ravel) are NumPy's orders jax does not
    implement; anything but 'C' and 'F' is an error."""
    if order in ("C", "F"):
        return
    if order == "A" or order == "K" and name == "ravel":
        raise NotImplementedError(f"fx.numpy.{name}: order={order!r} is not implemented (as in "
                                  "jax); use 'C' (row-major) or 'F' (column-major)")
    raise ValueError(f"fx.numpy.{name}: unexpected order={order!r}; use 'C' (row-major) or "
                     "'F' (column-major)")


def _reversed_axes(n: int) -> tuple[int, ...]:
    return tuple(range(n - 1, -1, -1))


# --- shapes and axes ----------------------------------------------------------------------------


def reshape(a, shape, order: str = "C", *, copy: bool | None = None):
    """``a`` with a new ``shape`` (one entry may be -1), reading and writing the elements in
    row-major order (``order="C"``) or column-major order (``order="F"``).
    ``copy`` is accepted for the Array API standard and unused, as in jax (fx arrays are
    immutable, so a shared buffer is never visible).

    >>> fx.numpy.reshape(fx.numpy.arange(6), (-1, 3)).shape
    (2, 3)
    """
    _check_order(order, "reshape")
    x = _arr(a, "reshape")
    aval = get_aval(x)
    shape = _static_ints(shape, "reshape", "shape")
    unknown = [i for i, s in enumerate(shape) if s == -1]
    known = math.prod(s for s in shape if s != -1)
    if unknown:
        bad = len(unknown) > 1 or known == 0 or aval.size % known
    else:
        bad = known != aval.size
    if bad or any(s < -1 for s in shape):
        raise ValueError(f"fx.numpy.reshape: cannot reshape an array of shape {aval.shape} "
                         f"({aval.size} elements) into shape {shape}")
    if unknown:
        shape = tuple(aval.size // known if s == -1 else s for s in shape)
    if order == "F":  # column-major: the row-major reshape of both arrays' transposes
        out = lax.reshape(x, shape[::-1], _reversed_axes(aval.ndim))
        return lax.transpose(out, _reversed_axes(len(shape)))
    return lax.reshape(x, shape)


def ravel(a, order: str = "C"):
    """``a`` as a 1-D array, in row-major (``order="C"``) or column-major (``"F"``) order.

    >>> fx.numpy.ravel(fx.numpy.arange(6).reshape(2, 3), order="F").tolist()
    [0, 3, 1, 4, 2, 5]
    """
    _check_order(order, "ravel")
    x = _arr(a, "ravel")
    aval = get_aval(x)
    return lax.reshape(x, (aval.size,), _reversed_axes(aval.ndim) if order == "F" else None)


def flatten(a, order: str = "C"):
    """The ``ndarray.flatten`` method: same as :func:`ravel` (fx arrays are immutable)."""
    return ravel(a, order)


def transpose(a, axes: Sequence[int] | None = None):
    """Permute the axes of ``a`` (reverse them when ``axes`` is None)."""
    x = _arr(a, "transpose")
    ndim = get_aval(x).ndim
    if axes is None:
        return lax.transpose(x, tuple(reversed(range(ndim))))
    perm = _static_ints(axes, "transpose", "axes")
    # A wrong length or a repeated axis is jax's TypeError (lax.transpose's permutation
    # check); an axis out of range is its ValueError.
    if len(perm) != ndim:
        raise TypeError(f"fx.numpy.transpose: axes {perm} don't match an array of rank {ndim}; "
                        f"give a permutation of range({ndim})")
    perm = tuple(canonical_axis(p, ndim, "fx.numpy.transpose") for p in perm)
    if len(set(perm)) != ndim:
        raise TypeError(f"fx.numpy.transpose: repeated axis in {tuple(axes)}; give a "
                        f"permutation of range({ndim})")
    return lax.transpose(x, perm)


def swapaxes(a, axis1: int, axis2: int):
    """``a`` with ``axis1`` and ``axis2`` interchanged."""
    x = _arr(a, "swapaxes")
    ndim = get_aval(x).ndim
    i, j = (canonical_axis(ax, ndim, "fx.numpy.swapaxes") for ax in (axis1, axis2))
    perm = list(range(ndim))
    perm[i], perm[j] = j, i
    return lax.transpose(x, perm)


def moveaxis(a, source, destination):
    """Move axes ``source`` to positions ``destination`` (ints or sequences), keeping the order
    of the others.

    >>> fx.numpy.moveaxis(fx.numpy.ones((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    x = _arr(a, "moveaxis")
    ndim = get_aval(x).ndim
    src = _static_ints(source, "moveaxis", "source")
    dst = _static_ints(destination, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError("fx.numpy.moveaxis: source and destination must have the same number "
                         f"of elements, got {src} and {dst}")
    src = [canonical_axis(s, ndim, "fx.numpy.moveaxis") for s in src]
    dst = [canonical_axis(d, ndim, "fx.numpy.moveaxis") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        # jax's TypeError: its permutation reaches lax.transpose with the axis repeated
        raise TypeError(f"fx.numpy.moveaxis: repeated axis in {src} or {dst}")
    perm = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(x, perm)


def expand_dims(a, axis):
    """Insert size-1 axes at positions ``axis`` of the result."""
    x = _arr(a, "expand_dims")
    axes = _static_ints(axis, "expand_dims", "axis")
    ndim_out = get_aval(x).ndim + len(axes)
    return lax.expand_dims(x, canonical_axes(axes, ndim_out, "fx.numpy.expand_dims"))


def squeeze(a, axis=None):
    """Remove size-1 axes: ``axis`` of them, or all when ``axis`` is None."""
    x = _arr(a, "squeeze")
    shape = get_aval(x).shape
    if axis is None:
        return lax.squeeze(x, tuple(i for i, d in enumerate(shape) if d == 1))
    axes = canonical_axes(_static_ints(axis, "squeeze", "axis"), len(shape), "fx.numpy.squeeze")
    for ax in axes:
        if shape[ax] != 1:
            raise ValueError(f"fx.numpy.squeeze: cannot squeeze axis {ax} of size {shape[ax]} "
                             f"(shape {shape}); only size-1 axes can be removed")
    return lax.squeeze(x, axes)


def broadcast_to(array, shape):
    """``array`` broadcast to ``shape`` with numpy's rules."""
    shape = _static_ints(shape, "broadcast_to", "shape")
    return broadcast_to_shape(_arr(array, "broadcast_to"), shape, "fx.numpy.broadcast_to")


def broadcast_arrays(*args) -> list:
    """The arguments broadcast against each other (dtypes unchanged)."""
    arrs = [_arr(a, "broadcast_arrays") for a in args]
    shape = broadcast_shapes(*(get_aval(a).shape for a in arrs), name="fx.numpy.broadcast_arrays")
    return [broadcast_to_shape(a, shape, "fx.numpy.broadcast_arrays") for a in arrs]


def _atleast(nd: int, name: str, arys):
    out = []
    for a in arys:
        x = _arr(a, name)
        shape = get_aval(x).shape
        if len(shape) < nd:
            # numpy's placement: (N,) -> (1, N) -> (1, N, 1); (M, N) -> (M, N, 1).
            shape = {0: (1,) * nd, 1: (1,) + shape + (1,) * (nd - 2), 2: shape + (1,)}[len(shape)]
            x = lax.reshape(x, shape)
        out.append(x)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """Each argument viewed with at least one dimension (a list for several arguments)."""
    return _atleast(1, "atleast_1d", arys)


def atleast_2d(*arys):
    """Each argument with at least two dimensions: ``(N,)`` becomes ``(1, N)``."""
    return _atleast(2, "atleast_2d", arys)


def atleast_3d(*arys):
    """At least three dimensions: ``(N,)`` becomes ``(1, N, 1)``, ``(M, N)`` ``(M, N, 1)``."""
    return _atleast(3, "atleast_3d", arys)


# --- joining and splitting ----------------------------------------------------------------------


def _sequence(arrays, name: str) -> list:
    if isinstance(arrays, np.ndarray) or hasattr(arrays, "aval"):  # split along axis 0
        x = _arr(arrays, name)
        rows = range(get_aval(x).shape[0]) if get_aval(x).ndim else ()
        return [lax.squeeze(lax.slice_in_dim(x, i, i + 1), (0,)) for i in rows]
    arrs = [_arr(a, name) for a in arrays]
    if not arrs:
        raise ValueError(f"fx.numpy.{name}: need at least one array")
    return arrs


def _joined(arrs, dtype, name: str) -> list:
    arrs = promote_dtypes(*arrs, name=f"fx.numpy.{name}")
    return arrs if dtype is None else [lax.convert_element_type(a, dtype) for a in arrs]


def concatenate(arrays, axis: int | None = 0, dtype=None):
    """Join ``arrays`` along an existing ``axis`` (flattened first when ``axis`` is None),
    promoting their dtypes.

    >>> fx.numpy.concatenate([fx.numpy.ones((2, 3)), fx.numpy.zeros((1, 3))]).shape
    (3, 3)
    """
    arrs = _sequence(arrays, "concatenate")
    if axis is None:
        arrs, axis = [ravel(a) for a in arrs], 0
    avals = [get_aval(a) for a in arrs]
    if any(a.ndim == 0 for a in avals):
        raise ValueError("fx.numpy.concatenate: zero-dimensional arrays cannot be concatenated; "
                         "use fx.numpy.stack")
    # Ranks or sizes that differ are jax's TypeError (lax.concatenate's shape check).
    ndim = avals[0].ndim
    if any(a.ndim != ndim for a in avals):
        raise TypeError("fx.numpy.concatenate: all arrays must have the same number of "
                        f"dimensions, got shapes {[a.shape for a in avals]}")
    axis = canonical_axis(axis, ndim, "fx.numpy.concatenate")
    for i, a in enumerate(avals):
        for k, (s, t) in enumerate(zip(a.shape, avals[0].shape)):
            if k != axis and s != t:
                raise TypeError(
                    "fx.numpy.concatenate: array dimensions except the concatenation axis "
                    f"({axis}) must match, but along dimension {k} the array at index 0 has "
                    f"size {t} and the array at index {i} has size {s}"
                )
    return lax.concatenate(_joined(arrs, dtype, "concatenate"), axis)


def stack(arrays, axis: int = 0, dtype=None):
    """Join same-shaped ``arrays`` along a new ``axis``."""
    arrs = _sequence(arrays, "stack")
    shapes = {get_aval(a).shape for a in arrs}
    if len(shapes) != 1:
        raise ValueError(f"fx.numpy.stack: all input arrays must have the same shape, got "
                         f"{[get_aval(a).shape for a in arrs]}")
    axis = canonical_axis(axis, get_aval(arrs[0]).ndim + 1, "fx.numpy.stack")
    arrs = _joined(arrs, dtype, "stack")
    return lax.concatenate([lax.expand_dims(a, (axis,)) for a in arrs], axis)


def hstack(tup, dtype=None):
    """Join along axis 1 (axis 0 for 1-D inputs)."""
    arrs = [atleast_1d(a) for a in _sequence(tup, "hstack")]
    return concatenate(arrs, 0 if get_aval(arrs[0]).ndim == 1 else 1, dtype)


def vstack(tup, dtype=None):
    """Join along axis 0 after :func:`atleast_2d`."""
    return concatenate([atleast_2d(a) for a in _sequence(tup, "vstack")], 0, dtype)


def dstack(tup, dtype=None):
    """Join along axis 2 after :func:`atleast_3d`."""
    return concatenate([atleast_3d(a) for a in _sequence(tup, "dstack")], 2, dtype)


def column_stack(tup):
    """Join 1-D arrays as columns (and 2-D arrays as they are) into a 2-D array."""
    arrs = []
    for a in _sequence(tup, "column_stack"):
        shape = get_aval(a).shape
        # numpy's rule: a 1-D array becomes a column, a 0-d one a 1x1 array.
        arrs.append(lax.reshape(a, (shape[0] if shape else 1, 1)) if len(shape) < 2 else a)
    return concatenate(arrs, 1)


def _split_bounds(n: int, indices_or_sections, name: str, even: bool) -> list[tuple[int, int]]:
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError(f"fx.numpy.{name}: number of sections must be positive, "
                             f"got {sections}")
        if even and n % sections:
            raise ValueError(f"fx.numpy.{name}: an axis of size {n} does not divide into "
                             f"{sections} equal sections; use fx.numpy.array_split")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        cuts = np.cumsum([0] + sizes).tolist()
    else:
        cuts = [0, *_static_ints(indices_or_sections, name, "indices"), n]
    bounds = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        start, stop, _ = builtins.slice(lo, hi).indices(n)  # Python slicing, as numpy does
        bounds.append((start, max(start, stop)))
    return bounds


def split(ary, indices_or_sections, axis: int = 0) -> list:
    """Split into equal sections (an int) or at the given indices along ``axis``.

    >>> [p.shape for p in fx.numpy.split(fx.numpy.ones(5), [2])]
    [(2,), (3,)]
    """
    x = _arr(ary, "split")
    shape = get_aval(x).shape
    axis = canonical_axis(axis, len(shape), "fx.numpy.split")
    bounds = _split_bounds(shape[axis], indices_or_sections, "split", even=True)
    return [lax.slice_in_dim(x, lo, hi, 1, axis) for lo, hi in bounds]


def array_split(ary, indices_or_sections, axis: int = 0) -> list:
    """Like :func:`split`, but sections may differ in size by one (the first ones larger)."""
    x = _arr(ary, "array_split")
    shape = get_aval(x).shape
    axis = canonical_axis(axis, len(shape), "fx.numpy.array_split")
    bounds = _split_bounds(shape[axis], indices_or_sections, "array_split", even=False)
    return [lax.slice_in_dim(x, lo, hi, 1, axis) for lo, hi in bounds]


# --- tiling and repeating -----------------------------------------------------------------------


def _repeat_each(x, times: int, axis: int):
    """Each entry along ``axis`` repeated ``times`` times in place (a broadcast and reshape)."""
    shape = get_aval(x).shape
    wide = shape[: axis + 1] + (times,) + shape[axis + 1:]
    dims = tuple(i for i in range(len(wide)) if i != axis + 1)
    out = shape[:axis] + (shape[axis] * times,) + shape[axis + 1:]
    return lax.reshape(lax.broadcast_in_dim(x, wide, dims), out)


def tile(A, reps):
    """``A`` repeated ``reps`` times along each axis (``reps`` is padded with leading ones, or
    ``A``'s shape is).

    >>> fx.numpy.tile(fx.numpy.arange(2), (2, 2))
    Array([[0, 1, 0, 1],
           [0, 1, 0, 1]], dtype=int32)
    """
    x = _arr(A, "tile")
    reps = _static_ints(reps, "tile", "reps")
    if any(r < 0 for r in reps):
        raise ValueError(f"fx.numpy.tile: negative repetitions in {reps}")
    shape = get_aval(x).shape
    nd = max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + shape
    reps = (1,) * (nd - len(reps)) + reps
    wide = tuple(v for r, d in zip(reps, shape) for v in (r, d))
    x = lax.broadcast_in_dim(lax.reshape(x, shape), wide, tuple(range(1, 2 * nd, 2)))
    return lax.reshape(x, tuple(r * d for r, d in zip(reps, shape)))


def _static_repeats(repeats, total_repeat_length) -> np.ndarray | None:
    """``repeats`` as host integers, or None when they are traced and ``total_repeat_length``
    fixes the output length (the traced path of :func:`repeat`)."""
    try:
        out = np.asarray(repeats)
    except ConcretizationTypeError:
        if total_repeat_length is not None:
            return None
        raise ConcretizationTypeError(
            "fx.numpy.repeat: repeats are traced here (jit, vmap, make_jaxpr), so the total "
            "number of repeats, the output length, is unknown. Pass static repeats, or a "
            "static total_repeat_length= (as in jax)"
        ) from None
    if out.dtype.kind not in "iu":
        raise TypeError(f"fx.numpy.repeat: repeats must be integers, got {out.dtype}")
    if np.any(out < 0):
        raise ValueError("fx.numpy.repeat: repeats must be non-negative")
    return out.astype(np.int64)


def _repeat_traced(x, repeats, axis: int, total: int):
    """:func:`repeat` for traced ``repeats`` (1 or ``x.shape[axis]`` of them) and a static
    ``total``: output position ``j`` takes the last entry whose block starts at or before
    ``j`` (jax's algorithm, counted by a ``searchsorted`` instead of a scatter)."""
    from fx.numpy.indexing import take  # noqa: PLC0415  (indexing imports this module)
    from fx.numpy.sorting import searchsorted  # noqa: PLC0415

    name = "fx.numpy.repeat"
    reps = to_array(repeats, name)
    if not dtypes.is_int(get_aval(reps).dtype):
        raise TypeError(f"{name}: repeats must be integers, got {get_aval(reps).str_short()}")
    it = dtypes.default_int_dtype()
    reps = lax.convert_element_type(lax.reshape(reps, (get_aval(reps).size,)), it)
    shape = get_aval(x).shape
    n = shape[axis]
    if get_aval(reps).shape[0] not in (1, n):
        raise ValueError(f"{name}: {get_aval(reps).shape[0]} repeat counts for an axis of "
                         f"size {n}")
    if total == 0 or n == 0:
        return lax.slice_in_dim(x, 0, 0, 1, axis) if total == 0 else x
    reps = lax.broadcast_in_dim(reps, (n,), (0,)) if get_aval(reps).shape[0] != n else reps
    starts = lax.sub(lax.cumsum(reps, 0), reps)
    source = lax.sub(searchsorted(starts, lax.iota(it, total), side="right"), 1)
    return take(x, source, axis=axis, mode="clip")


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None):
    """Repeat each element of ``a`` (flattened if ``axis`` is None) ``repeats`` times. With
    ``total_repeat_length`` the result is cut to that length or extended by repeating the
    last element (jax's semantics), and ``repeats`` may be traced (under ``jit``/``vmap``);
    without it they must be static, since they fix the output length.

    >>> fx.numpy.repeat(fx.numpy.arange(3), [1, 0, 2])
    Array([0, 2, 2], dtype=int32)
    >>> fx.jit(lambda r: fx.numpy.repeat(fx.numpy.arange(3), r, total_repeat_length=4))(
    ...     fx.numpy.array([1, 0, 2]))
    Array([0, 2, 2, 2], dtype=int32)
    """
    x = _arr(a, "repeat")
    if axis is None:
        x, axis = ravel(x), 0
    reps = _static_repeats(repeats, total_repeat_length)
    shape = get_aval(x).shape
    if reps is None:
        total = operator.index(total_repeat_length)
        if not shape:
            if get_aval(to_array(repeats)).size != 1:
                raise ValueError("fx.numpy.repeat: a 0-d array takes a single repeat count")
            return lax.broadcast_in_dim(x, (total,), ())
        return _repeat_traced(x, repeats, canonical_axis(axis, len(shape), "fx.numpy.repeat"),
                              total)
    if not shape:
        if reps.size != 1:
            raise ValueError("fx.numpy.repeat: a 0-d array takes a single repeat count")
        n = int(reps.ravel()[0]) if total_repeat_length is None else int(total_repeat_length)
        return lax.broadcast_in_dim(x, (n,), ())
    axis = canonical_axis(axis, len(shape), "fx.numpy.repeat")
    n = shape[axis]
    if reps.ndim == 0 and total_repeat_length is None:
        return _repeat_each(x, int(reps), axis)
    reps = reps.ravel()
    if reps.size not in (1, n):
        raise ValueError(f"fx.numpy.repeat: {reps.size} repeat counts for an axis of size {n}")
    reps = np.broadcast_to(reps, (n,))
    total = int(reps.sum()) if total_repeat_length is None else int(total_repeat_length)
    if total == 0 or n == 0:
        return lax.slice_in_dim(x, 0, 0, 1, axis) if total == 0 else x
    # Output position j takes the last element whose block starts at or before j (so a longer
    # total_repeat_length repeats the final element, as in jax).
    starts = np.concatenate([[0], np.cumsum(reps)[:-1]])
    source = np.searchsorted(starts, np.arange(total), side="right") - 1
    # Gather-free: consecutive elements repeated equally often form one broadcast block.
    values, counts = np.unique(source, return_counts=True)
    pieces, i = [], 0
    while i < len(values):
        j = i + 1
        while j < len(values) and values[j] == values[j - 1] + 1 and counts[j] == counts[i]:
            j += 1
        block = lax.slice_in_dim(x, int(values[i]), int(values[j - 1]) + 1, 1, axis)
        pieces.append(_repeat_each(block, int(counts[i]), axis))
        i = j
    return lax.concatenate(pieces, axis)


# --- padding ------------------------------------------------------------------------------------

# --- flipping and rolling -----------------------------------------------------------------------


def flip(m, axis=None):
    """Reverse the order of elements along ``axis`` (all axes when None)."""
    x = _arr(m, "flip")
    ndim = get_aval(x).ndim
    axes = tuple(range(ndim)) if axis is None else canonical_axes(
        _static_ints(axis, "flip", "axis"), ndim, "fx.numpy.flip")
    return lax.rev(x, axes)


def fliplr(m):
    """Reverse along axis 1 (needs at least 2-D)."""
    x = _arr(m, "fliplr")
    if get_aval(x).ndim < 2:
        raise ValueError(f"fx.numpy.fliplr: input must be at least 2-D, got shape "
                         f"{get_aval(x).shape}")
    return lax.rev(x, (1,))


def flipud(m):
    """Reverse along axis 0 (needs at least 1-D)."""
    x = _arr(m, "flipud")
    if get_aval(x).ndim < 1:
        raise ValueError("fx.numpy.flipud: input must be at least 1-D, got a 0-d array")
    return lax.rev(x, (0,))


def _roll_static(x, shift: int, axis: int):
    n = get_aval(x).shape[axis]
    if n == 0 or shift % n == 0:
        return x
    s = shift % n
    return lax.concatenate([lax.slice_in_dim(x, n - s, n, 1, axis),
                            lax.slice_in_dim(x, 0, n - s, 1, axis)], axis)


def _roll_traced(x, shift, axis: int):
    # Window of length n starting at (-shift mod n) in x joined with itself.
    n = get_aval(x).shape[axis]
    if n == 0:
        return x
    start = lax.rem(lax.sub(n, lax.rem(shift, n)), n)
    return lax.dynamic_slice_in_dim(lax.concatenate([x, x], axis), start, n, axis)


def roll(a, shift, axis=None):
    """Shift elements cyclically by ``shift`` along ``axis`` (the flattened array when None).
    ``shift`` may be traced (an integer scalar, or one per axis).

    >>> fx.numpy.roll(fx.numpy.arange(4), 1)
    Array([3, 0, 1, 2], dtype=int32)
    """
    x = _arr(a, "roll")
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), get_aval(x).shape)
    ndim = get_aval(x).ndim
    axes = tuple(canonical_axis(ax, ndim, "fx.numpy.roll")
                 for ax in _static_ints(axis, "roll", "axis"))
    if isinstance(shift, Tracer):
        s = get_aval(shift)
        if not dtypes.is_int(s.dtype) or s.ndim > 1:
            raise TypeError(f"fx.numpy.roll: a traced shift must be an integer scalar or "
                            f"vector, got {s.str_short()}")
        shifts = [shift] * len(axes) if s.ndim == 0 else [
            lax.reshape(lax.slice_in_dim(shift, i, i + 1), ()) for i in range(s.shape[0])]
        if len(shifts) != len(axes):
            raise ValueError(f"fx.numpy.roll: {len(shifts)} shifts for {len(axes)} axes")
        for sh, ax in zip(shifts, axes):
            x = _roll_traced(x, sh, ax)
        return x
    shifts = _static_ints(shift, "roll", "shift")
    try:
        pairs = np.broadcast(np.asarray(shifts), np.asarray(axes))
    except ValueError:
        raise ValueError(f"fx.numpy.roll: shift {shifts} and axis {axes} don't match") from None
    for sh, ax in pairs:
        x = _roll_static(x, int(sh), int(ax))
    return x


def rollaxis(a, axis: int, start: int = 0):
    """Move ``axis`` to come before position ``start`` (NumPy's older ``moveaxis``)."""
    x = _arr(a, "rollaxis")
    nd = get_aval(x).ndim
    axis = canonical_axis(axis, nd, "fx.numpy.rollaxis")
    if not -nd <= start <= nd:
        raise ValueError(f"fx.numpy.rollaxis: start {start} is out of bounds for an array of "
                         f"rank {nd}")
    start = start + nd if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(x, axis, start)


def rot90(m, k: int = 1, axes: tuple[int, int] = (0, 1)):
    """``m`` rotated by 90 degrees ``k`` times, from the first towards the second of ``axes``.

    >>> fx.numpy.rot90(fx.numpy.array([[1, 2], [3, 4]]))
    Array([[2, 4],
           [1, 3]], dtype=int32)
    """
    x = _arr(m, "rot90")
    nd = get_aval(x).ndim
    if nd < 2:
        raise ValueError(f"fx.numpy.rot90: needs an array of at least 2 dimensions, got shape "
                         f"{get_aval(x).shape}")
    a0, a1 = (canonical_axis(ax, nd, "fx.numpy.rot90") for ax in axes)
    if a0 == a1:
        raise ValueError(f"fx.numpy.rot90: axes must be different, got {tuple(axes)}")
    k = operator.index(k) % 4
    if k == 0:
        return x
    if k == 2:
        return flip(x, (a0, a1))
    if k == 1:
        return swapaxes(flip(x, a1), a0, a1)
    return flip(swapaxes(x, a0, a1), a1)
