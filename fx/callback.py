"""Host callbacks: calling Python functions from traced and compiled fx code.

:func:`pure_callback` stages one ``pure_callback`` equation. Its impl calls the user's function
on fx arrays holding a copy of the operands and checks what it returns against the declared
shapes and dtypes. Eagerly the impl runs at once; under ``jit`` the equation becomes a step of
the compiled program that calls back into Python each time the program runs (the lowering's
NumPy-step fallback runs the impl; on CUDA it runs on the host, with copies around it). Tracing
never calls the function: abstract evaluation only returns the declared types.

The callback is pure, as in jax: dead-code elimination drops a call whose results are unused.
It is never constant-folded (the primitive has multiple results, which folding skips) and two
equal calls are never merged by common-subexpression elimination, so each staged call runs once
per execution, as in jax. Under ``vmap`` the ``vmap_method`` chooses how the batch reaches the
function; ``jvp``, ``grad`` and transposition raise jax's errors (wrap the call in
``custom_jvp``/``custom_vjp`` to differentiate it). The impl keeps no state, so one jitted
function can run callbacks from many threads at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fx import dtypes, tree_util
from fx.array import Array
from fx.avals import ShapedArray
from fx.core import EVAL_TRACE, Primitive, set_current_trace, to_value
from fx.devices import to_host
from fx.interpreters import batching, jvp, transpose
from fx.lax import composites
from fx.lax.control_flow.scans import scan
from fx.lowering.passes.eliminate_common_subexpressions import unmerged_primitives
from fx.lowering.select.op_impl import host_only_prims

__all__ = ["pure_callback", "pure_callback_p"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)

pure_callback_p = Primitive("pure_callback", multiple_results=True)
# operands: the array leaves of (args, kwargs); params: callback (a _FlatCallback),
# result_avals (the declared types, one per result leaf), vmap_method.
unmerged_primitives.add(pure_callback_p)  # each staged call runs, as in jax
host_only_prims.add(pure_callback_p)  # Python runs on the host


@dataclasses.dataclass(frozen=True, repr=False)
class _FlatCallback:
    """The user's function taking and returning flat leaves. Equal for the same function and
    argument structure, so retracing the same program gives equal equations (jit caches)."""

    callback_func: Callable[..., Any]
    in_tree: tree_util.PyTreeDef  # of (args, kwargs)

    @property
    def name(self) -> str:
        f = self.callback_func
        name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
        return name or f"{type(f).__qualname__} object"

    def __repr__(self) -> str:  # what jaxprs and as_text() show
        return self.name

    def __call__(self, *flat_args) -> list:
        args, kwargs = tree_util.tree_unflatten(self.in_tree, flat_args)
        return tree_util.tree_leaves(self.callback_func(*args, **kwargs))


@pure_callback_p.def_abstract_eval
def _pure_callback_abstract_eval(*avals, callback, result_avals, vmap_method):
    return list(result_avals)


@pure_callback_p.def_impl
def _pure_callback_impl(*bufs, callback: _FlatCallback, result_avals, vmap_method):
    # A fresh host copy of each operand: under jit the buffers are views of the program's
    # arena, reused by later steps and calls, and the function may keep what it is given.
    args = [Array._wrap(np.array(to_host(b), copy=True), ShapedArray(b.shape, b.dtype))
            for b in bufs]
    with set_current_trace(EVAL_TRACE):  # fx code inside the callback runs eagerly
        try:
            outs = callback(*args)
        except Exception as e:
            e.add_note(f"(raised by the callback {callback.name!r} of fx.pure_callback)")
            raise
    return _check_results(callback, outs, result_avals)


def _check_results(callback: _FlatCallback, outs: Sequence, result_avals) -> list:
    """The callback's results as fresh NumPy arrays, after jax's checks: as many as declared,
    each with the declared shape and (mode-canonical) dtype."""
    where = f"fx.pure_callback: the callback {callback.name!r}"
    if len(outs) != len(result_avals):
        raise RuntimeError(
            f"{where} returned the wrong number of results. Mismatched number of outputs from "
            f"callback. Expected: {len(result_avals)}, Actual: {len(outs)}")
    checked = []
    for i, (out, aval) in enumerate(zip(outs, result_avals)):
        host = np.asarray(out)
        try:
            dt = dtypes.canonicalize(host.dtype)  # Python floats come back float64, as in jax
        except TypeError:
            dt = host.dtype
        if host.shape != aval.shape:
            raise RuntimeError(
                f"{where} returned a wrong shape. Incorrect output shape for return value "
                f"#{i}: Expected: {aval.shape}, Actual: {host.shape}")
        if dt != aval.dtype:
            raise RuntimeError(
                f"{where} returned a wrong dtype. Incorrect output dtype for return value "
                f"#{i}: Expected: {aval.dtype}, Actual: {dt}")
        checked.append(np.array(host, dtype=dt, copy=True))
    return checked


def _pure_callback_jvp(primals, tangents, **params):
    raise ValueError(
        "Pure callbacks do not support JVP. Please use `fx.custom_jvp` to use callbacks while "
        "taking gradients.")


def _pure_callback_transpose(cts, *args, **params):
    raise ValueError(
        "Pure callbacks do not support transpose. Please use `fx.custom_vjp` to use callbacks "
        "while taking gradients.")


def _pure_callback_batch(axis, vals, dims, *, callback, result_avals, vmap_method):
    size = axis.size
    moved = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    batched_avals = tuple(a.update(shape=(size, *a.shape)) for a in result_avals)
    if vmap_method == "legacy_vectorized":
        outs = pure_callback_p.bind(*moved, callback=callback, result_avals=batched_avals,
                                    vmap_method=vmap_method)
    elif vmap_method in ("expand_dims", "broadcast_all"):
        lead = size if vmap_method == "broadcast_all" else 1
        args = [composites.broadcast(v, (lead,)) if d is None else v
                for v, d in zip(moved, dims)]
        outs = pure_callback_p.bind(*args, callback=callback, result_avals=batched_avals,
                                    vmap_method=vmap_method)
    elif vmap_method in ("sequential", "sequential_unrolled"):
        # One call per lane, in a loop over the batched operands (jax's lax.map).
        batched = [v for v, d in zip(moved, dims) if d is not None]

        def lane(carry, xs):
            it = iter(xs)
            args = [next(it) if d is not None else v for v, d in zip(moved, dims)]
            return carry, pure_callback_p.bind(*args, callback=callback,
                                               result_avals=result_avals,
                                               vmap_method=vmap_method)

        _, outs = scan(lane, (), batched, unroll=vmap_method == "sequential_unrolled")
    else:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}. Pass vmap_method= to "
            f"fx.pure_callback (callback {callback.name!r}) to say how it handles a batch.")
    return list(outs), [0] * len(outs)


jvp.jvp_rules[pure_callback_p] = _pure_callback_jvp
transpose.transpose_rules[pure_callback_p] = _pure_callback_transpose
batching.batch_rules[pure_callback_p] = _pure_callback_batch


def _result_aval(leaf) -> ShapedArray:
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            "fx.pure_callback: each leaf of result_shape_dtypes must have .shape and .dtype "
            f"(e.g. fx.ShapeDtypeStruct), got {type(leaf).__name__}: {leaf!r}")
    dt = dtypes.check(dtype)
    if dtypes.canonicalize(dt) != dt:
        raise ValueError(
            "result_shape_dtypes cannot specify 64-bit types when `jax_enable_x64` is disabled "
            f"(got {dt}; turn x64 mode on with fx.config.update('jax_enable_x64', True), or "
            f"declare {dtypes.canonicalize(dt)})")
    return ShapedArray(tuple(int(d) for d in shape), dt)


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding=None, vmap_method: str | None = None, **kwargs: Any):
    """Call the Python function ``callback`` from fx code, eagerly or inside ``jit``/``vmap``,
    as ``jax.pure_callback``.

    ``callback(*args, **kwargs)`` receives ``fx.Array`` s on the CPU (``np.asarray`` views them
    without copying) and must return a pytree of arrays whose leaves match the leaves of
    ``result_shape_dtypes`` (objects with ``.shape`` and ``.dtype``, such as
    :class:`fx.ShapeDtypeStruct`) in number, shape and dtype; a mismatch raises
    ``RuntimeError`` naming the callback. Results returned as Python or 64-bit NumPy data are
    narrowed to 32 bits outside x64 mode, as in jax. The result has the structure of
    ``result_shape_dtypes``.

    The function must be pure: fx may skip a call whose results are unused, and under ``jit``
    it runs each time the compiled program runs. Under ``vmap``, ``vmap_method`` says how:

    - ``"sequential"`` (or ``"sequential_unrolled"``): one call per batch element;
    - ``"expand_dims"``: one call, batched operands with the batch axis in front, unbatched
      ones with a new axis of size 1;
    - ``"broadcast_all"``: as ``"expand_dims"``, unbatched operands tiled to the batch size;
    - ``"legacy_vectorized"``: one call, unbatched operands unchanged;
    - ``None`` (default): ``vmap`` raises ``NotImplementedError``.

    ``jvp``/``grad`` raise ``ValueError``: wrap the call in :func:`fx.custom_jvp` to give it a
    derivative. ``sharding`` must be None (one device).

    Example::

        >>> import numpy as np, fx.numpy as fnp
        >>> def host_sin(x):
        ...     return np.sin(np.asarray(x))
        >>> @fx.jit
        ... def f(x):
        ...     spec = fx.ShapeDtypeStruct(x.shape, x.dtype)
        ...     return fx.pure_callback(host_sin, spec, x, vmap_method="expand_dims")
        >>> f(fnp.zeros(2))
        Array([0., 0.], dtype=float32)
    """
    if vmap_method not in VMAP_METHODS:
        raise ValueError(
            f"vmap_method must be one of the allowed methods {list(VMAP_METHODS)}, but got: "
            f"{vmap_method!r}")
    if sharding is not None:
        raise NotImplementedError("fx.pure_callback: sharding is not supported (one device)")
    if not callable(callback):
        raise TypeError(f"fx.pure_callback: callback must be callable, got {callback!r}")
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    operands = [to_value(x, "fx.pure_callback") for x in leaves]
    result_leaves, out_tree = tree_util.tree_flatten(result_shape_dtypes)
    result_avals = tuple(_result_aval(leaf) for leaf in result_leaves)
    outs = pure_callback_p.bind(*operands, callback=_FlatCallback(callback, in_tree),
                                result_avals=result_avals, vmap_method=vmap_method)
    return tree_util.tree_unflatten(out_tree, outs)
