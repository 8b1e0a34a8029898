"""Choosing and placing values: ``select``, ``choose``, ``piecewise`` and the functional
versions of NumPy's in-place writers ``place``, ``put``, ``put_along_axis`` and
``fill_diagonal``.

fx arrays are immutable, so the writers follow jax: they return the updated array and must be
called with ``inplace=False`` (the default ``inplace=True`` raises, naming the fix). Choices
are ``fx.lax.select`` chains and updates one scatter (``x.at[...].set``), so all of these
trace, batch and differentiate.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes, lax
from fx.core import ConcretizationTypeError, get_aval
from fx.numpy._promote import (
    broadcast_shapes,
    broadcast_to_shape,
    canonical_axis,
    promote_dtypes,
    to_array,
)
from fx.numpy.compaction import concrete, flat

__all__ = ["choose", "fill_diagonal", "piecewise", "place", "put", "put_along_axis", "select"]


def _immutable(name: str, inplace: bool) -> None:
    if inplace:
        raise ValueError(f"fx.numpy.{name} cannot modify arrays in place, because fx arrays "
                         f"are immutable. Pass inplace=False to get the updated array instead.")


def _bool(x, name: str):
    a = to_array(x, name)
    if get_aval(a).dtype != dtypes.bool_:
        a = lax.ne(a, lax.full(get_aval(a).shape, 0, get_aval(a).dtype))
    return a


# --- select, choose, piecewise ------------------------------------------------------------------


def select(condlist, choicelist, default=0):
    """For each position, the entry of the first ``choicelist[i]`` whose ``condlist[i]`` holds
    there, else ``default``; everything broadcasts, dtypes promote.

    >>> x = fx.numpy.arange(5)
    >>> fx.numpy.select([x < 2, x > 3], [x, -x], 9)
    Array([ 0,  1,  9,  9, -4], dtype=int32)
    """
    name = "fx.numpy.select"
    if len(condlist) != len(choicelist):
        raise ValueError(f"{name}: condlist and choicelist must have the same length, got "
                         f"{len(condlist)} and {len(choicelist)}")
    if not condlist:
        raise ValueError(f"{name}: condlist must not be empty")
    conds = []
    for i, c in enumerate(condlist):
        c = to_array(c, name)
        if get_aval(c).dtype != dtypes.bool_:
            raise TypeError(f"{name}: condlist[{i}] must be boolean, got "
                            f"{get_aval(c).str_short()}")
        conds.append(c)
    *choices, default = promote_dtypes(*choicelist, default, name=name)
    shape = broadcast_shapes(*(get_aval(a).shape for a in (*conds, *choices, default)),
                             name=name)
    out = broadcast_to_shape(default, shape, name)
    for c, v in reversed(list(zip(conds, choices))):
        out = lax.select(broadcast_to_shape(c, shape, name), broadcast_to_shape(v, shape, name),
                         out)
    return out


def choose(a, choices, out=None, mode: str = "raise"):
    """``choices[a[i]][i]`` at every position ``i`` (everything broadcasts). ``mode='raise'``
    checks the indices (which must then be concrete), ``'wrap'`` wraps them and ``'clip'``
    clamps.

    >>> fx.numpy.choose(fx.numpy.array([1, 0, 1]), [fx.numpy.zeros(3), fx.numpy.ones(3)])
    Array([1., 0., 1.], dtype=float32)
    """
    name = "fx.numpy.choose"
    if out is not None:
        raise NotImplementedError(f"{name}: the 'out' argument is not supported (arrays are "
                                  "immutable); use the return value")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"{name}: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    idx = to_array(a, name)
    if not dtypes.is_int(get_aval(idx).dtype):
        raise TypeError(f"{name}: a must be an integer array, got {get_aval(idx).str_short()}")
    if hasattr(choices, "aval") or isinstance(choices, np.ndarray):
        arr = to_array(choices, name)
        choices = [lax.squeeze(lax.slice_in_dim(arr, i, i + 1), (0,))
                   for i in range(get_aval(arr).shape[0])]
    opts = promote_dtypes(*choices, name=name)
    n = len(opts)
    if n == 0:
        raise ValueError(f"{name}: choices must not be empty")
    it = get_aval(idx).dtype
    if mode == "raise":
        try:
            host = concrete(idx, name, "a")
        except ConcretizationTypeError:
            raise ConcretizationTypeError(
                f"{name}: mode='raise' checks the indices, which are traced here (jit, vmap, "
                "make_jaxpr); use mode='wrap' or mode='clip'") from None
        if host.size and (host.min() < 0 or host.max() >= n):
            raise ValueError(f"{name}: index array entries must be in [0, {n}) for {n} "
                             f"choices; use mode='wrap' or 'clip'")
    elif mode == "wrap":
        nn = lax.full(get_aval(idx).shape, n, it)
        idx = lax.rem(lax.add(lax.rem(idx, nn), nn), nn)
    else:
        idx = lax.clamp(0, idx, n - 1)
    shape = broadcast_shapes(get_aval(idx).shape, *(get_aval(o).shape for o in opts), name=name)
    idx = broadcast_to_shape(idx, shape, name)
    out = broadcast_to_shape(opts[-1], shape, name)
    for i in range(n - 2, -1, -1):
        hit = lax.eq(idx, lax.full(shape, i, it))
        out = lax.select(hit, broadcast_to_shape(opts[i], shape, name), out)
    return out


def piecewise(x, condlist, funclist, *args, **kw):
    """``funclist[i](x, *args, **kw)`` where ``condlist[i]`` holds (later conditions win),
    ``funclist[-1]`` elsewhere when there is one function more than conditions (else 0).
    Entries of ``funclist`` may be constants. Every function sees the whole ``x`` (the shapes
    are static), and the result has ``x``'s dtype.

    >>> x = fx.numpy.array([-1.0, 0.5, 2.0])
    >>> fx.numpy.piecewise(x, [x < 0, x > 1], [lambda v: -v, 9.0, lambda v: v * 10])
    Array([1., 5., 9.], dtype=float32)
    """
    name = "fx.numpy.piecewise"
    xa = to_array(x, name)
    shape, dt = get_aval(xa).shape, get_aval(xa).dtype
    if hasattr(condlist, "aval") or isinstance(condlist, np.ndarray):
        c = to_array(condlist, name)
        condlist = [c] if get_aval(c).ndim == len(shape) else [
            lax.squeeze(lax.slice_in_dim(c, i, i + 1), (0,)) for i in range(get_aval(c).shape[0])]
    elif not isinstance(condlist, (list, tuple)):
        condlist = [condlist]
    n, m = len(condlist), len(funclist)
    if m not in (n, n + 1):
        raise ValueError(f"{name}: with {n} conditions, funclist must have {n} or {n + 1} "
                         f"entries, got {m}")

    def value(f):
        v = f(xa, *args, **kw) if callable(f) else f
        return broadcast_to_shape(lax.convert_element_type(to_array(v, name), dt), shape, name)

    out = value(funclist[n]) if m == n + 1 else lax.full(shape, 0, dt)
    for c, f in zip(condlist, funclist):
        out = lax.select(broadcast_to_shape(_bool(c, name), shape, name), value(f), out)
    return out


# --- functional writers -------------------------------------------------------------------------


def place(arr, mask, vals, *, inplace: bool = True):
    """``arr`` with the positions where ``mask`` holds set to ``vals`` in order, repeating
    ``vals`` cyclically (NumPy's ``place``); needs ``inplace=False``.

    >>> x = fx.numpy.arange(5)
    >>> fx.numpy.place(x, x > 1, fx.numpy.array([7, 8]), inplace=False)
    Array([0, 1, 7, 8, 7], dtype=int32)
    """
    name = "fx.numpy.place"
    _immutable("place", inplace)
    x = to_array(arr, name)
    m = _bool(mask, name)
    if get_aval(m).shape != get_aval(x).shape:
        raise ValueError(f"{name}: mask of shape {get_aval(m).shape} must match the array's "
                         f"shape {get_aval(x).shape}")
    v = flat(lax.convert_element_type(to_array(vals, name), get_aval(x).dtype))
    k = get_aval(v).shape[0]
    if k == 0:
        if np.asarray(concrete(m, name, "mask")).any():
            raise ValueError(f"{name}: cannot place values from an empty vals array")
        return x
    from fx.numpy.indexing import take  # noqa: PLC0415

    it = dtypes.default_int_dtype()
    mf = flat(m)
    n = get_aval(mf).shape[0]
    count = lax.sub(lax.cumsum(lax.convert_element_type(mf, it), 0), lax.full((n,), 1, it))
    which = lax.rem(lax.max(count, lax.full((n,), 0, it)), lax.full((n,), k, it))
    picked = lax.reshape(take(v, which, mode="clip"), get_aval(x).shape)
    return lax.select(m, picked, x)


def _writer_mode(mode, name: str):
    if mode not in (None, "clip", "wrap", "fill", "drop", "promise_in_bounds"):
        raise ValueError(f"{name}: mode must be None, 'clip', 'wrap', 'fill', 'drop' or "
                         f"'promise_in_bounds', got {mode!r}")
    return "clip" if mode is None else mode


def put(a, ind, v, mode: str | None = None, *, inplace: bool = True):
    """``a`` with its flat entries at ``ind`` set to ``v`` (repeated cyclically to the length
    of ``ind``); out-of-range indices clip by default (``mode='wrap'`` wraps, ``'fill'``/
    ``'drop'`` drop them). Needs ``inplace=False``.

    >>> fx.numpy.put(fx.numpy.zeros(4), fx.numpy.array([0, 2]), 5.0, inplace=False)
    Array([5., 0., 5., 0.], dtype=float32)
    """
    name = "fx.numpy.put"
    _immutable("put", inplace)
    mode = _writer_mode(mode, name)
    x = to_array(a, name)
    shape = get_aval(x).shape
    idx = flat(to_array(ind, name))
    if not dtypes.is_int(get_aval(idx).dtype):
        raise TypeError(f"{name}: ind must be integers, got {get_aval(idx).str_short()}")
    vals = flat(lax.convert_element_type(to_array(v, name), get_aval(x).dtype))
    n_ind, n_v = get_aval(idx).shape[0], get_aval(vals).shape[0]
    if n_ind == 0:
        return x
    if n_v == 0:
        raise ValueError(f"{name}: v must not be empty when ind is not")
    if n_v != n_ind:
        from fx.numpy.joining_and_editing import resize  # noqa: PLC0415

        vals = resize(vals, (n_ind,))
    size = get_aval(x).size
    if mode == "wrap":
        nn = lax.full((n_ind,), max(size, 1), get_aval(idx).dtype)
        idx = lax.rem(lax.add(lax.rem(idx, nn), nn), nn)
        mode = "clip"
    elif mode == "clip":
        idx = lax.clamp(0, idx, max(size - 1, 0))
    elif mode in ("fill", "drop"):
        mode = "drop"
    else:
        mode = None
    out = flat(x).at[idx].set(vals, mode=mode)
    return lax.reshape(out, shape)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True, *,
                   mode: str | None = None):
    """``arr`` with ``values`` written at ``indices`` along ``axis``, the other dimensions
    matched (broadcast) as in ``take_along_axis``. Needs ``inplace=False``.

    >>> fx.numpy.put_along_axis(fx.numpy.zeros((2, 2)), fx.numpy.array([[1], [0]]), 1.0,
    ...                         axis=1, inplace=False)
    Array([[0., 1.],
           [1., 0.]], dtype=float32)
    """
    name = "fx.numpy.put_along_axis"
    _immutable("put_along_axis", inplace)
    x = to_array(arr, name)
    idx = to_array(indices, name)
    if not dtypes.is_int(get_aval(idx).dtype):
        raise TypeError(f"{name}: indices must be integers, got {get_aval(idx).str_short()}")
    shape = get_aval(x).shape
    if axis is None:
        return lax.reshape(put_along_axis(flat(x), flat(idx), flat(to_array(values, name)), 0,
                                          inplace=False, mode=mode), shape)
    if get_aval(idx).ndim != len(shape):
        raise ValueError(f"{name}: indices must have the same rank as arr ({len(shape)}), got "
                         f"shape {get_aval(idx).shape}")
    axis = canonical_axis(axis, len(shape), name)
    ishape = get_aval(idx).shape
    target = broadcast_shapes(shape[:axis] + (1,) + shape[axis + 1:],
                              ishape[:axis] + (1,) + ishape[axis + 1:], name=name)
    target = target[:axis] + (ishape[axis],) + target[axis + 1:]
    index = []
    for d in range(len(shape)):
        if d == axis:
            index.append(broadcast_to_shape(idx, target, name))
        else:
            grid = [1] * len(shape)
            grid[d] = target[d]
            index.append(np.arange(target[d]).reshape(grid))
    v = to_array(values, name)
    return x.at[tuple(index)].set(v, mode=None if mode is None else _writer_mode(mode, name))


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """``a`` with its main diagonal (``a[i, i, ..., i]``) set to ``val``, repeated cyclically.
    For a tall 2-D ``a``, ``wrap=True`` restarts the diagonal every ``ncols + 1`` rows, as in
    NumPy. Needs ``inplace=False``.

    >>> fx.numpy.fill_diagonal(fx.numpy.zeros((2, 2)), 3.0, inplace=False)
    Array([[3., 0.],
           [0., 3.]], dtype=float32)
    """
    name = "fx.numpy.fill_diagonal"
    _immutable("fill_diagonal", inplace)
    x = to_array(a, name)
    shape = get_aval(x).shape
    if len(shape) < 2:
        raise ValueError(f"{name}: array must be at least 2-D, got shape {shape}")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"{name}: all dimensions of an array of rank > 2 must be equal, got "
                         f"shape {shape}")
    # NumPy's rule on the flat array: every (ncols + 1)-th entry (the strides' sum in general),
    # stopping after the square part unless wrap.
    step = 1 + int(np.sum(np.cumprod(shape[::-1])[:-1]))
    size = int(np.prod(shape))
    end = size if (wrap or len(shape) > 2) else min(shape[1], shape[0]) * shape[1]
    positions = np.arange(0, end, step)
    if positions.size == 0:
        return x
    return put(x, positions, val, mode="clip", inplace=False)
