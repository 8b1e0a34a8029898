"""The primitives the interpreters themselves emit, declared in the core.

Instantiating a symbolic zero, accumulating cotangents, and moving or materializing a batch
dimension need ``broadcast_in_dim``, ``add_any``, ``transpose``, ``reshape`` and ``reduce_sum``
(the transpose of a broadcast). They are declared here, in the core layer below the
interpreters, with the helpers fx.lax's primitives and composites share (``shape_error``,
``canonical_axes``, ``canonical_axis``, ``accumulation_dtype``, ``as_array`` for operands);
their jvp, transpose and batching rules live in the interpreters' own modules
(``fx.interpreters.jvp`` etc.), since those modules depend on them.
:mod:`fx.lax.base` gives the same names to fx.lax and the compiler. Every other primitive
registers all of its rules beside its declaration.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from fx import dtypes
from fx.array import Array
from fx.avals import ShapedArray, physical_trailing
from fx.core import Primitive, Tracer, get_aval, physical_rules


def shape_error(prim_name: str, message: str, *avals: ShapedArray,
                error: type[Exception] = TypeError) -> Exception:
    """``error`` (jax's shape-rule ``TypeError`` unless told) naming the primitive and the
    operands' avals."""
    shown = ", ".join(a.str_short() for a in avals)
    return error(f"{prim_name}: {message}" + (f" (got {shown})" if avals else ""))


def canonical_axes(axes: Sequence[int], ndim: int, name: str) -> tuple[int, ...]:
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < max(ndim, 1) or (ndim == 0):
            raise ValueError(f"{name}: axis {a} is out of bounds for an array of rank {ndim}")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {tuple(axes)}")
    return tuple(out)


def accumulation_dtype(dtype: np.dtype) -> np.dtype:
    """Half-precision sums accumulate in float32 (as XLA does on CPU and GPU)."""
    return dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype


def as_array(x, name: str):
    """An operand of a composite fx.lax function as an array: Python scalars become weakly typed
    arrays; arrays, tracers and NumPy data pass; anything else is a TypeError naming
    ``fx.lax.<name>``."""
    if isinstance(x, (Array, Tracer)):
        return x
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        dt, weak = dtypes.dtype_and_weak(x)
        return Array(np.asarray(x, dt), weak)
    if isinstance(x, (np.ndarray, np.generic)):
        return Array(np.asarray(x))
    raise TypeError(f"fx.lax.{name}: expected an array, got {type(x).__name__} ({x!r:.60})")


def canonical_axis(axis, ndim: int, name: str, what: str = "axis") -> int:
    """``axis`` (an int, negative counting from the end) in ``[0, ndim)``; ValueError naming
    ``fx.lax.<name>`` if out of bounds."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"fx.lax.{name}: {what} {axis} is out of bounds for rank {ndim}")
    return axis % ndim


# --- add_any: accumulation of tangents and cotangents -------------------------------------------

add_any_p = Primitive("add_any")


@add_any_p.def_abstract_eval
def _add_any_abstract_eval(x, y):
    if x.shape != y.shape or x.dtype != y.dtype:
        raise shape_error("add_any", "operands must have identical shapes and dtypes", x, y)
    return x.update(weak_type=x.weak_type and y.weak_type)


add_any_p.def_impl(lambda x, y: x + y)


def add_any(x, y):
    return add_any_p.bind(x, y)


# --- broadcast_in_dim --------------------------------------------------------------------------

broadcast_in_dim_p = Primitive("broadcast_in_dim")


@broadcast_in_dim_p.def_abstract_eval
def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    name = "broadcast_in_dim"
    if len(broadcast_dimensions) != x.ndim:
        raise shape_error(
            name, f"broadcast_dimensions {broadcast_dimensions} must have one entry per operand "
            f"dimension, for output shape {shape}", x,
        )
    if any(b >= len(shape) or b < 0 for b in broadcast_dimensions) or list(
        broadcast_dimensions
    ) != sorted(set(broadcast_dimensions)):
        raise shape_error(
            name, f"broadcast_dimensions {broadcast_dimensions} must be strictly increasing "
            f"indices into output shape {shape}", x,
        )
    for d, b in zip(x.shape, broadcast_dimensions):
        if d != 1 and d != shape[b]:
            raise shape_error(
                name, f"operand dimension of size {d} cannot broadcast to size {shape[b]} "
                f"(output shape {shape})", x,
            )
    if any(s < 0 for s in shape):
        raise shape_error(name, f"negative output dimension in {shape}", x)
    return x.update(shape=shape)


@broadcast_in_dim_p.def_impl
def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for d, b in zip(x.shape, broadcast_dimensions):
        expanded[b] = d
    return np.broadcast_to(np.reshape(x, expanded), shape)


def _broadcast_in_dim_physical(in_avals, out_avals, x, *, shape, broadcast_dimensions):
    # An extended dtype's stored dimensions (a key's 2 words) trail, mapped to themselves.
    t = physical_trailing(out_avals[0])
    n = len(shape)
    return broadcast_in_dim_p.bind(x, shape=tuple(shape) + t, broadcast_dimensions=tuple(
        broadcast_dimensions) + tuple(range(n, n + len(t))))


physical_rules[broadcast_in_dim_p] = _broadcast_in_dim_physical


def broadcast_in_dim(x, shape: Sequence[int], broadcast_dimensions: Sequence[int], *,
                     out_sharding=None):
    """``x`` broadcast to ``shape``, operand dimension ``i`` becoming output dimension
    ``broadcast_dimensions[i]`` (as ``jax.lax.broadcast_in_dim``; ``out_sharding`` is accepted
    and ignored: one device).

    Distinct dimensions in any order are accepted, as jax's: the primitive takes them
    increasing, after a transpose of the operand (jax returns an operand that already has
    the target shape unchanged, whatever the order: so does fx).

        >>> fx.lax.broadcast_in_dim(fx.numpy.arange(3), (2, 3), (1,)).tolist()
        [[0, 1, 2], [0, 1, 2]]
    """
    shape, dims = tuple(int(s) for s in shape), tuple(int(d) for d in broadcast_dimensions)
    in_shape = get_aval(x).shape
    if in_shape == shape and sorted(dims) == list(range(len(shape))) and all(
            d in (1, shape[b]) for d, b in zip(in_shape, dims)):
        return x  # as jax's: an operand already of the target shape is returned as it is
    if dims != tuple(sorted(dims)) and len(set(dims)) == len(dims) == len(in_shape):
        perm = sorted(range(len(dims)), key=dims.__getitem__)
        x, dims = transpose(x, perm), tuple(dims[p] for p in perm)
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def full(shape: Sequence[int], fill_value, dtype, weak_type: bool = False):
    """An array of ``shape`` filled with ``fill_value``: a broadcast of a scalar literal."""
    if isinstance(dtype, dtypes.ExtendedDType):  # (PRNG keys) stored data all fill_value
        data = np.full(dtype.physical_shape, fill_value, dtype.physical_dtype)
        scalar = Array._wrap(data, ShapedArray((), dtype))
    else:
        scalar = Array(np.asarray(fill_value, dtype=dtype), weak_type)
    if not shape:
        return scalar
    return broadcast_in_dim_p.bind(scalar, shape=tuple(shape), broadcast_dimensions=())


def zeros_like_aval(aval: ShapedArray):
    return full(aval.shape, 0, aval.dtype, aval.weak_type)


# --- reshape -----------------------------------------------------------------------------------

reshape_p = Primitive("reshape")


@reshape_p.def_abstract_eval
def _reshape_abstract_eval(x, *, new_sizes):
    if any(s < 0 for s in new_sizes):
        raise shape_error("reshape", f"negative size in {new_sizes}; sizes must be >= 0", x)
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        # jax's ValueError (its shape rule lets this through to the lowering's verifier)
        raise shape_error(
            "reshape", f"cannot reshape to {new_sizes}: sizes differ ({x.size} elements); the "
            "new sizes must have the same product as the operand's shape", x, error=ValueError)
    return x.update(shape=new_sizes)


reshape_p.def_impl(lambda x, *, new_sizes: np.reshape(x, new_sizes))


physical_rules[reshape_p] = lambda in_avals, out_avals, x, *, new_sizes: reshape_p.bind(
    x, new_sizes=tuple(new_sizes) + physical_trailing(out_avals[0]))


def reshape(x, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None, *,
            out_sharding=None):
    """``x`` with shape ``new_sizes`` (row-major order), as ``jax.lax.reshape``: with
    ``dimensions``, a permutation of ``x``'s axes, ``x`` is transposed by it first.
    ``out_sharding`` is accepted and ignored (one device).

        >>> fx.lax.reshape(fx.numpy.arange(6).reshape(2, 3), (6,), (1, 0)).tolist()
        [0, 3, 1, 4, 2, 5]
    """
    new_sizes = tuple(int(s) for s in new_sizes)
    if dimensions is not None:
        dims, aval = tuple(int(d) for d in dimensions), get_aval(x)
        if sorted(dims) != list(range(aval.ndim)):
            raise shape_error("reshape", f"dimensions {dims} must be a permutation of the "
                              f"operand's {aval.ndim} dimensions", aval)
        x = transpose(x, dims)
    if get_aval(x).shape == new_sizes:
        return x
    return reshape_p.bind(x, new_sizes=new_sizes)


# --- transpose ---------------------------------------------------------------------------------

transpose_p = Primitive("transpose")


@transpose_p.def_abstract_eval
def _transpose_abstract_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise shape_error(
            "transpose", f"permutation {permutation} is not a permutation of {x.ndim} axes", x
        )
    return x.update(shape=tuple(x.shape[p] for p in permutation))


transpose_p.def_impl(lambda x, *, permutation: np.transpose(x, permutation))


def _transpose_physical(in_avals, out_avals, x, *, permutation):
    n, t = len(permutation), physical_trailing(in_avals[0])
    return transpose_p.bind(x, permutation=tuple(permutation) + tuple(range(n, n + len(t))))


physical_rules[transpose_p] = _transpose_physical


def transpose(x, permutation: Sequence[int]):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))):
        return x
    return transpose_p.bind(x, permutation=permutation)


# --- reduce_sum --------------------------------------------------------------------------------

reduce_sum_p = Primitive("reduce_sum")


@reduce_sum_p.def_abstract_eval
def _reduce_sum_abstract_eval(x, *, axes):
    if x.dtype == dtypes.bool_:
        raise shape_error("reduce_sum", "does not accept bool operands; convert first", x)
    if any(not 0 <= a < x.ndim for a in axes) or list(axes) != sorted(set(axes)):
        raise shape_error(
            "reduce_sum", f"axes {axes} must be sorted, distinct and within the rank", x
        )
    return x.update(shape=tuple(d for i, d in enumerate(x.shape) if i not in axes))


@reduce_sum_p.def_impl
def _reduce_sum_impl(x, *, axes):
    acc = accumulation_dtype(x.dtype)
    return np.sum(x, axis=axes, dtype=acc).astype(x.dtype, copy=False)


def reduce_sum(x, axes: Sequence[int]):
    axes = tuple(sorted(int(a) for a in axes))
    if not axes:
        return x
    return reduce_sum_p.bind(x, axes=axes)
