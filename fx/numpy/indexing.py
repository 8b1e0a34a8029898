"""NumPy indexing for fx arrays and tracers: ``x[idx]``, ``x.at[idx]``, ``take`` (``nonzero``
&c.: ``fx.numpy.compaction``).

``getitem(x, idx)`` takes any NumPy index (ints, slices with any step, ``None``, ``...``,
integer arrays, concrete boolean masks, or a tuple of them) and returns ``x[idx]`` with NumPy's
shape rules, including where the dimensions of advanced (array) indices go: where the first of
them stood if they are adjacent (a scalar int between arrays counts as advanced), in front
otherwise. It lowers to the simplest primitives that do the job, so jaxprs stay readable:

* static ints, slices, ``None`` and ``...``: ``slice`` (+ ``rev`` for negative steps,
  ``squeeze`` for ints, ``expand_dims`` for ``None``); never a gather;
* traced scalar integers: ``dynamic_slice`` + ``squeeze``;
* integer arrays: the basic part as above, then one ``gather`` and at most one ``transpose``.

``x.at[idx].set(v)`` (and ``add``, ``subtract``, ``multiply``, ``divide``, ``min``, ``max``)
builds the same index plan, with every partial slice turned into one more index column, and
applies one scatter primitive; ``v`` is converted to ``x.dtype`` and broadcast to ``x[idx]``'s
shape.

Out-of-range indices follow jax: ``x[idx]`` and ``.at[idx].get()`` clamp (``mode='fill'``
returns ``fill_value`` instead), updates are dropped (``mode='clip'`` clamps), ``take`` and
``take_along_axis`` fill. Negative indices count from the end first. Differences from jax:
lists are accepted as index arrays (NumPy's rule; jax asks for ``x[np.array(list)]``), and a
static int index past the end of a non-empty axis clamps like jax instead of raising like
NumPy. Boolean masks need concrete values: the result's shape depends on them, so under
``jit``/``vmap``/``make_jaxpr`` use ``fx.numpy.where(mask, x, 0)`` instead.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from fx import dtypes
from fx.array import Array
from fx.core import ConcretizationTypeError, Tracer, get_aval
from fx.errors import NonConcreteBooleanIndexError
from fx.lax import indexing as lax_indexing
from fx.lax.base import broadcast_in_dim, full, reshape, transpose
from fx.lax.dynamic_slicing import dynamic_slice
from fx.lax.elementwise import add, convert_element_type, lt, neg, rem, select_n
from fx.lax.indexing import CLIP, GatherScatterMode
from fx.lax.structural import concatenate, expand_dims, rev, squeeze
from fx.lax.structural import slice as lax_slice
from fx.numpy._promote import asarray, broadcast_to_shape, canonical_axis, to_array
from fx.numpy.ufuncs import divide

__all__ = ["AtIndexer", "getitem", "take", "take_along_axis"]  # nonzero: compaction.py

# --- parsing an index into one entry per dimension ---------------------------------------------


class _NewAxis:
    def __repr__(self) -> str:
        return "None"


NEW = _NewAxis()


@dataclass(frozen=True)
class _Slice:
    start: int
    step: int
    count: int  # positions start + step * i for i < count

    def is_full(self, size: int) -> bool:
        return self.start == 0 and self.step == 1 and self.count == size


@dataclass(frozen=True)
class _Int:
    value: int  # static, not yet wrapped or clamped


@dataclass(frozen=True, eq=False)
class _Array:
    value: object  # an integer numpy array, or a traced/fx integer value of any rank
    new_axis: bool = False  # indexes an inserted size-1 axis (from a 0-d boolean mask)


def _parse(shape: tuple[int, ...], idx, name: str) -> list:
    """One entry per output unit: NEW, or a _Slice/_Int/_Array indexing the next dimension
    (an _Array with new_axis indexes none)."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    entries, ellipsis_at, consumed = [], None, 0
    for pos, item in enumerate(items):
        if item is None:
            entries.append(NEW)
        elif item is Ellipsis:
            if ellipsis_at is not None:
                raise IndexError(f"{name}: an index can only have a single ellipsis ('...')")
            ellipsis_at = len(entries)
        elif isinstance(item, slice):
            entries.append(item)
            consumed += 1
        elif isinstance(item, (bool, np.bool_)):
            entries.append(np.asarray(item))  # a 0-d mask
        elif isinstance(item, (int, np.integer)):
            entries.append(_Int(int(item)))
            consumed += 1
        else:
            e = _index_array(item, pos, name)
            entries.append(e)
            consumed += e.ndim if isinstance(e, np.ndarray) else 1
    if consumed > len(shape):
        raise IndexError(
            f"{name}: too many indices for array: array is {len(shape)}-dimensional, but "
            f"{consumed} were indexed"
        )
    fill = [slice(None)] * (len(shape) - consumed)
    at = len(entries) if ellipsis_at is None else ellipsis_at
    entries[at:at] = fill

    out, dim = [], 0
    for e in entries:
        if e is NEW:
            out.append(NEW)
        elif isinstance(e, slice):
            out.append(_static_slice(e, shape[dim], name))
            dim += 1
        elif isinstance(e, np.ndarray):  # a boolean mask
            out.extend(_mask_entries(e, shape, dim, name))
            dim += e.ndim
        else:
            if isinstance(e, _Int) and shape[dim] == 0:
                raise IndexError(
                    f"{name}: index {e.value} is out of bounds for axis {dim} with size 0"
                )
            out.append(e)
            dim += 1
    return out


def _index_array(item, pos: int, name: str):
    """An integer index array as an _Array (0-d static ones as _Int), or a boolean mask as a
    numpy bool array."""
    if isinstance(item, (Array, Tracer)):
        value = item
    elif isinstance(item, (list, tuple, np.ndarray, np.generic)):
        value = _sequence_index(item, name) if isinstance(item, (list, tuple)) else item
    else:
        raise TypeError(
            f"{name}: invalid index {item!r} of type {type(item).__name__} at position {pos}; "
            "indices must be integers, slices, None, Ellipsis, or integer/boolean arrays"
        )
    dt = get_aval(value).dtype if not isinstance(value, np.ndarray) else value.dtype
    if dt == np.bool_:
        try:
            return _concrete(value, f"{name}: boolean mask indexing", "mask")
        except ConcretizationTypeError as e:  # jax's error type: an IndexError
            raise NonConcreteBooleanIndexError(str(e)) from None
    if not np.issubdtype(dt, np.integer):
        raise TypeError(
            f"{name}: indexer at position {pos} has dtype {dt}; indices must have integer or "
            "boolean type (convert with .astype(int))"
        )
    if isinstance(value, Array):
        value = np.asarray(value)  # concrete: fold the index arithmetic on the host
    if isinstance(value, (np.ndarray, np.generic)):
        value = np.asarray(value)
        if value.ndim == 0:
            return _Int(int(value))
        return _Array(value.astype(np.int64))
    return _Array(value)


def _sequence_index(item, name: str):
    if any(isinstance(e, (Array, Tracer)) for e in np.ravel(np.asarray(item, dtype=object))):
        return asarray(item)
    try:
        host = np.asarray(item)
    except ValueError:
        host = np.asarray(item, dtype=object)
    if host.size == 0 and host.dtype == np.float64:
        return host.astype(np.int64)  # x[[]] selects nothing, as in NumPy
    if host.dtype == object:
        raise TypeError(
            f"{name}: a list index must hold only integers or booleans; to index several "
            f"dimensions use a tuple, x[tuple(seq)], not x[seq] (got {item!r})"
        )
    return host


def _concrete(value, name: str, what: str) -> np.ndarray:
    if isinstance(value, Tracer):
        try:
            return np.asarray(value.to_concrete(name))
        except ConcretizationTypeError:
            raise ConcretizationTypeError(
                f"{name} needs a concrete {what}, got a traced {value.aval.str_short()} value: "
                "the shape of the result depends on the data, which is unknown while tracing "
                "(jit, vmap, make_jaxpr). Use fx.numpy.where(cond, x, 0) to keep the shape, or "
                "compute it outside the traced function."
            ) from None
    return np.asarray(to_array(value, name))


def _static_slice(s: slice, size: int, name: str) -> _Slice:
    try:
        parts = [None if v is None else operator.index(v) for v in (s.start, s.stop, s.step)]
    except TypeError as e:
        raise IndexError(
            f"{name}: slice entries must be static integers, got {s!r}. For a window at a "
            "traced position use fx.lax.dynamic_slice (or dynamic_update_slice)."
        ) from e
    if parts[2] == 0:
        raise ValueError(f"{name}: slice step cannot be zero")
    start, stop, step = slice(*parts).indices(size)
    return _Slice(start, step, len(range(start, stop, step)))


def _mask_entries(mask: np.ndarray, shape, dim: int, name: str) -> list:
    if mask.ndim == 0:
        # A scalar mask adds an axis of size 1 (True) or 0 (False), indexed like an array.
        return [_Array(np.zeros(int(bool(mask)), np.int64), new_axis=True)]
    if mask.shape != tuple(shape[dim : dim + mask.ndim]):
        raise IndexError(
            f"{name}: boolean index did not match the indexed array: mask of shape "
            f"{mask.shape} for dimensions {dim}..{dim + mask.ndim - 1} of shape "
            f"{tuple(shape[dim : dim + mask.ndim])}"
        )
    return [_Array(c.astype(np.int64)) for c in np.nonzero(mask)]


# --- basic indexing: slice / rev / dynamic_slice / squeeze / expand_dims -----------------------


def _basic(x, entries, shape):
    starts, limits, strides, flipped, dropped, new, traced = [], [], [], [], [], [], {}
    dim = out_pos = 0
    for e in entries:
        if e is NEW:
            new.append(out_pos)
            out_pos += 1
            continue
        n = shape[dim]
        if isinstance(e, _Slice):
            if e.count == 0:
                lo, hi, st = 0, 0, 1
            elif e.step > 0:
                lo, hi, st = e.start, e.start + (e.count - 1) * e.step + 1, e.step
            else:
                lo, hi, st = e.start + (e.count - 1) * e.step, e.start + 1, -e.step
                flipped.append(dim)
            out_pos += 1
        elif isinstance(e, _Int):
            i = min(max(e.value + n if e.value < 0 else e.value, 0), n - 1)
            lo, hi, st = i, i + 1, 1
            dropped.append(dim)
        else:  # a traced scalar: taken by dynamic_slice below
            lo, hi, st = 0, n, 1
            traced[dim] = e.value
            dropped.append(dim)
        starts.append(lo)
        limits.append(hi)
        strides.append(st)
        dim += 1
    y = rev(lax_slice(x, starts, limits, strides), flipped)
    if traced:
        sliced = get_aval(y).shape
        y = dynamic_slice(y, [traced.get(d, 0) for d in range(len(sliced))],
                          [1 if d in traced else s for d, s in enumerate(sliced)])
    return expand_dims(squeeze(y, dropped), new)


# --- advanced indexing: one gather or scatter over an index plan --------------------------------


def _one_entry_per_dim(x, entries):
    """Give NEW entries and 0-d masks a size-1 operand dimension of their own, so that entry
    ``i`` indexes dimension ``i``; returns the inserted dimensions too."""
    inserted = [i for i, e in enumerate(entries) if e is NEW or getattr(e, "new_axis", False)]
    out = [_Slice(0, 1, 1) if e is NEW else e for e in entries]
    return expand_dims(x, inserted), out, inserted


def _apply_slices(x, entries):
    """Do the partial slices with slice/rev, leaving full slices in their place."""
    shape = get_aval(x).shape
    basic = [e if isinstance(e, _Slice) else _Slice(0, 1, n) for e, n in zip(entries, shape)]
    y = _basic(x, basic, shape)
    return y, [_Slice(0, 1, get_aval(y).shape[i]) if isinstance(e, _Slice) else e
               for i, e in enumerate(entries)]


@dataclass
class _Plan:
    indices: object  # int array of shape batch + (k,)
    axes: tuple[int, ...]
    perm: tuple[int, ...]  # gather-output dims -> NumPy result order
    shape: tuple[int, ...]  # the NumPy result shape


def _plan(shape, entries, name: str) -> _Plan:
    adv = [i for i, e in enumerate(entries) if not isinstance(e, _Slice)]
    adv_vals = [_adv_value(entries[i]) for i in adv]
    try:
        adv_shape = np.broadcast_shapes(*(_shape_of(v) for v in adv_vals))
    except ValueError:
        raise IndexError(
            f"{name}: shape mismatch: indexing arrays could not be broadcast together with "
            "shapes " + " ".join(str(_shape_of(v)) for v in adv_vals)
        ) from None
    # NumPy's result order: the advanced block where the first advanced index stood if they
    # are adjacent, else in front; then partial slices become index columns (batch dims) and
    # full slices stay whole (the gather's trailing dims).
    units = [i for i in range(len(entries)) if i not in adv]
    if adv:
        adjacent = adv == list(range(adv[0], adv[-1] + 1))
        units.insert(sum(u < adv[0] for u in units) if adjacent else 0, "adv")
    unit_shape = {u: adv_shape if u == "adv" else (entries[u].count,) for u in units}
    batch = [u for u in units if u == "adv" or not entries[u].is_full(shape[u])]
    order = batch + [u for u in units if u not in batch]
    start, at = {}, 0
    for u in order:
        start[u] = at
        at += len(unit_shape[u])
    perm = tuple(start[u] + j for u in units for j in range(len(unit_shape[u])))
    batch_shape = tuple(s for u in batch for s in unit_shape[u])
    columns, axes = [], []
    for i, v in zip(adv, adv_vals):
        lead = start["adv"] + len(adv_shape) - len(_shape_of(v))
        columns.append((_wrap_negative(v, shape[i]), lead))
        axes.append(i)
    for u in batch:
        if u != "adv":
            e = entries[u]
            columns.append((np.arange(e.count, dtype=np.int64) * e.step + e.start, start[u]))
            axes.append(u)
    return _Plan(_stack_columns(columns, batch_shape), tuple(axes), perm,
                 tuple(s for u in units for s in unit_shape[u]))


def _adv_value(e):
    return np.asarray(e.value, np.int64) if isinstance(e, _Int) else e.value


def _shape_of(v) -> tuple[int, ...]:
    return np.shape(v) if isinstance(v, np.ndarray) else get_aval(v).shape


def _wrap_negative(v, size: int):
    if isinstance(v, np.ndarray):
        return np.where(v < 0, v + size, v)
    if not dtypes.is_signed_int(get_aval(v).dtype):
        return v
    return select_n(lt(v, 0), v, add(v, size))


def _stack_columns(columns, batch_shape):
    """The index array (batch + (k,)) from columns placed at batch dimensions ``lead...``."""
    if all(isinstance(c, np.ndarray) for c, _ in columns):
        full = [np.broadcast_to(c.reshape(c.shape + (1,) * (len(batch_shape) - lead - c.ndim)),
                                batch_shape) for c, lead in columns]
        out = np.stack(full, -1) if full else np.zeros(batch_shape + (0,), np.int64)
        small = out.size == 0 or (out.min() >= -(2**31) and out.max() < 2**31)
        return Array(out.astype(np.int32 if small else np.int64))
    traced = [get_aval(c).dtype for c, _ in columns if not isinstance(c, np.ndarray)]
    dt = dtypes.join(*((d, False) for d in traced))[0]
    static = [c for c, _ in columns if isinstance(c, np.ndarray) and c.size]
    if static and (min(c.min() for c in static) < np.iinfo(dt).min
                   or max(c.max() for c in static) > np.iinfo(dt).max):
        dt = dtypes.int64
    parts = []
    for c, lead in columns:
        c = Array(c.astype(dt)) if isinstance(c, np.ndarray) else convert_element_type(c, dt)
        nd = get_aval(c).ndim
        parts.append(broadcast_in_dim(c, batch_shape + (1,), tuple(range(lead, lead + nd))))
    return concatenate(parts, len(batch_shape))


# --- public functions --------------------------------------------------------------------------


def getitem(a, idx, mode=None, fill_value=None):
    """``a[idx]`` with NumPy's indexing rules (see the module docstring for the lowering).

    ``mode=None`` or ``'clip'`` clamps out-of-range indices (like ``jax.numpy``); ``'fill'``
    returns ``fill_value`` for them (default NaN for floats, see ``fx.lax.gather``)::

        x = fx.numpy.arange(12).reshape(3, 4)
        getitem(x, (slice(None), [2, 0]))      # x[:, [2, 0]], shape (3, 2)
    """
    name = "fx.numpy indexing"
    x = to_array(a, name)
    shape = get_aval(x).shape
    entries = _parse(shape, idx, name)
    mode = CLIP if mode is None else GatherScatterMode.parse(mode)
    arrays = [e for e in entries if isinstance(e, _Array)]
    if mode is CLIP and all(_shape_of(e.value) == () and not e.new_axis for e in arrays):
        return _basic(x, entries, shape)
    if mode is not CLIP and not arrays and not any(isinstance(e, _Int) for e in entries):
        return _basic(x, entries, shape)
    # Inserted size-1 dimensions are full slices, so they land in the result where NumPy puts
    # them; the partial slices are done before the gather.
    x, entries, _ = _one_entry_per_dim(x, entries)
    x, entries = _apply_slices(x, entries)
    plan = _plan(get_aval(x).shape, entries, name)
    out = lax_indexing.gather(x, plan.indices, plan.axes, mode=mode, fill_value=fill_value)
    return transpose(out, plan.perm)


def _update(a, idx, values, scatter, mode, name: str, prepare=None):
    x = to_array(a, name)
    v = to_array(values, name)
    dt = get_aval(x).dtype
    if dtypes.promotion_mode() == "strict":  # updates of another dtype are refused, as jax's
        dtypes.join(dtypes.dtype_and_weak(x), dtypes.dtype_and_weak(v))
    v = convert_element_type(v, dt, get_aval(v).weak_type and get_aval(x).weak_type)
    if prepare is not None:
        v = prepare(v)
    entries = _parse(get_aval(x).shape, idx, name)
    xe, entries, inserted = _one_entry_per_dim(x, entries)
    plan = _plan(get_aval(xe).shape, entries, name)
    target = tuple(plan.shape)
    if get_aval(v).ndim > len(target):
        raise ValueError(
            f"{name}: cannot broadcast values of shape {get_aval(v).shape} to the indexed "
            f"shape {target} (values may not have more dimensions than x[idx])"
        )
    v = broadcast_to_shape(v, target, name)
    inverse = [0] * len(plan.perm)
    for out_dim, g in enumerate(plan.perm):
        inverse[g] = out_dim
    v = transpose(v, inverse)
    mode = GatherScatterMode.parse(mode)
    out = scatter(xe, plan.indices, v, plan.axes, mode=mode)
    return squeeze(out, inserted)


def _update_method(op: str, scatter, doc: str, prepare=None):
    def method(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        return _update(self.array, self.index, values, scatter, mode, f"at[].{op}", prepare)

    method.__name__ = op
    method.__doc__ = doc + " Out-of-range updates are dropped (``mode='clip'`` clamps)."
    return method


class _IndexUpdateRef:
    """``x.at[idx]``: functional versions of ``x[idx]`` reads and in-place updates."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False,
            unique_indices=False):
        """``x[idx]``; ``mode='fill'`` gives ``fill_value`` at out-of-range indices."""
        return getitem(self.array, self.index, mode=mode, fill_value=fill_value)

    set = _update_method("set", lax_indexing.scatter,
                         "``x`` with ``x[idx] = values`` (for repeated indices the last wins).")
    add = _update_method("add", lax_indexing.scatter_add,
                         "``x`` with ``x[idx] += values``; repeated indices accumulate.")
    subtract = _update_method("subtract", lax_indexing.scatter_add,
                              "``x`` with ``x[idx] -= values``; repeated indices accumulate.",
                              prepare=neg)
    multiply = mul = _update_method("multiply", lax_indexing.scatter_mul,
                                    "``x`` with ``x[idx] *= values``, for each repeated index.")
    min = _update_method("min", lax_indexing.scatter_min,
                         "``x`` with ``x[idx] = minimum(x[idx], values)``.")
    max = _update_method("max", lax_indexing.scatter_max,
                         "``x`` with ``x[idx] = maximum(x[idx], values)``.")

    def divide(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x`` with ``x[idx] /= values`` (as jax: ``x / ones.at[idx].multiply(values)``)."""
        aval = get_aval(to_array(self.array))
        ones = full(aval.shape, 1, aval.dtype)
        return divide(self.array, _update(ones, self.index, values, lax_indexing.scatter_mul,
                                          mode, "at[].divide"))


class AtIndexer:
    """The object behind ``x.at``: ``x.at[idx]`` names the positions of an update.

    fx arrays are immutable; ``x.at[idx].set(v)`` returns a new array equal to ``x`` except at
    ``x[idx]``, which holds ``v`` broadcast to ``x[idx]``'s shape and converted to ``x.dtype``::

        x = fx.numpy.zeros(4)
        x.at[1:3].set(1.0)            # [0., 1., 1., 0.]
        x.at[[0, 0, 2]].add(1.0)      # [2., 0., 1., 0.]: repeated indices accumulate
        x.at[7].set(1.0)              # unchanged: out-of-range updates are dropped
    """

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"AtIndexer({self.array!r})"


def _index_operand(indices, name: str):
    idx = asarray(indices) if isinstance(indices, (list, tuple)) else to_array(indices, name)
    if not dtypes.is_int(get_aval(idx).dtype):
        raise TypeError(f"{name}: indices must be integers, got {get_aval(idx).str_short()}")
    return idx


def _prepare_indices(idx, size: int, mode, name: str):
    """Indices and the gather mode for NumPy's ``mode`` argument (jax's default: 'fill')."""
    if mode is None or mode == "fill":
        return _wrap_negative(idx, size), GatherScatterMode.FILL_OR_DROP
    if mode == "clip":
        return idx, CLIP
    if mode == "wrap":
        if size == 0:
            raise IndexError(f"{name}: cannot wrap indices into an empty axis")
        return rem(add(rem(idx, size), size), size), CLIP
    if mode == "raise":
        raise NotImplementedError(f"{name}: mode='raise' is not supported (indices are not "
                                  "checked at run time); use 'fill', 'clip' or 'wrap'")
    raise ValueError(f"{name}: invalid mode {mode!r}; use 'fill', 'clip' or 'wrap'")


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` if None).

    The result has shape ``a.shape[:axis] + indices.shape + a.shape[axis+1:]``. As in jax,
    out-of-range indices give ``fill_value`` (NaN for floats) by default; ``mode='clip'``
    clamps and ``mode='wrap'`` wraps. ``take(x, [2, 0], axis=1) == x[:, [2, 0]]``.
    """
    name = "fx.numpy.take"
    if out is not None:
        raise NotImplementedError(f"{name}: the 'out' argument is not supported")
    x = to_array(a, name)
    idx = _index_operand(indices, name)
    if axis is None:
        x = reshape(x, (get_aval(x).size,))
        axis = 0
    shape = get_aval(x).shape
    axis = canonical_axis(axis, len(shape), name)
    if shape[axis] == 0 and get_aval(idx).size:
        raise IndexError(f"{name}: cannot take a non-empty selection from an empty axis "
                         f"(axis {axis} of shape {shape})")
    idx, gmode = _prepare_indices(idx, shape[axis], mode, name)
    m = get_aval(idx).ndim
    got = lax_indexing.gather(x, expand_dims(idx, (m,)), (axis,), mode=gmode,
                              fill_value=fill_value)
    perm = list(range(m, m + axis)) + list(range(m)) + list(range(m + axis, m + len(shape) - 1))
    return transpose(got, perm)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    """``arr`` read at ``indices`` along ``axis``, matching the other dimensions (which
    broadcast), e.g. ``take_along_axis(x, argsort(x, axis=1), axis=1)`` sorts each row.

    Out-of-range indices give ``fill_value`` (NaN for floats) by default, as in jax.
    """
    name = "fx.numpy.take_along_axis"
    x = to_array(arr, name)
    idx = _index_operand(indices, name)
    if axis is None:
        if get_aval(idx).ndim != 1:
            raise ValueError(f"{name}: indices must be 1-D when axis=None, got shape "
                             f"{get_aval(idx).shape}")
        x = reshape(x, (get_aval(x).size,))
        axis = 0
    shape, ishape = get_aval(x).shape, get_aval(idx).shape
    if len(shape) != len(ishape):
        raise ValueError(f"{name}: indices and arr must have the same number of dimensions; "
                         f"{len(ishape)} vs. {len(shape)}")
    axis = canonical_axis(axis, len(shape), name)
    try:
        out_shape = np.broadcast_shapes(shape[:axis] + (1,) + shape[axis + 1:],
                                        ishape[:axis] + (1,) + ishape[axis + 1:])
    except ValueError:
        raise ValueError(f"{name}: shapes {ishape} (indices) and {shape} (arr) do not "
                         f"broadcast outside axis {axis}") from None
    out_shape = out_shape[:axis] + (ishape[axis],) + out_shape[axis + 1:]
    idx, gmode = _prepare_indices(idx, shape[axis], mode, name)
    # Every dimension gets an index column: the given indices along axis, elsewhere its own
    # position (0 where arr has size 1 and broadcasts).
    columns = []
    for d, s in enumerate(shape):
        if d == axis:
            columns.append((broadcast_to_shape(idx, out_shape, name), 0))
        else:
            columns.append((np.arange(out_shape[d]) * (s != 1), d))
    return lax_indexing.gather(x, _stack_columns(columns, out_shape), tuple(range(len(shape))),
                               mode=gmode, fill_value=fill_value)

