"""``fx.pmap``: one program per device, with a named axis spanning the devices of every
process.

Each process holds one device here (one CPU device, or the GPU it was given), so a pmapped
function takes, per process, arguments whose mapped axis has the local device count (1) and
runs ``fun`` on the slice, compiled: the body is traced and lowered once per argument
signature by ``fx.jit`` inside the process axis (``collectives.ProcessAxis``), where the
collectives of ``fx.lax`` become ``operations.Collective`` steps of that program. Across
``mpiexec -n N`` the named axis has size N and lane ``fx.process_index()``.

Transformations go inside: ``grad``, ``vmap`` and ``jit`` within the pmapped function compose
with the collectives (the transpose of ``psum`` is a ``psum``). In one process a pmapped
function also runs under a trace (``fx.jit(fx.pmap(f))``, ``grad``, ``vmap``) and over several
local devices: there it is a compiled ``vmap`` over the mapped axis (at most the local device
count long) whose lanes are the devices. Across processes it is called on concrete values,
outside any trace.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from fx import tree_util
from fx.array import Array
from fx.core import EVAL_TRACE, current_trace, get_aval
from fx.distributed import native as _native  # noqa: F401  (its C collective step)
from fx.distributed import state
from fx.distributed.collectives import ProcessAxis
from fx.interpreters import batching
from fx.jit_function import jit
from fx.vectorize import vmap


def _fun_name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | tuple[int, ...] = (), devices=None,
         backend: str | None = None, donate_argnums: int | tuple[int, ...] = ()) -> Callable:
    """Map ``fun`` over devices, one lane per device of every process, as ``jax.pmap``.

    ``in_axes`` / ``out_axes`` (an int, None, or a pytree prefix of the arguments / outputs)
    say which axis of each value is mapped; on each process it has this process's local
    device count (1 here: one device per process). Inside ``fun``, ``fx.lax.psum``,
    ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``, ``ppermute`` and
    ``axis_index`` over ``axis_name`` combine the lanes of all processes (on MPI or NCCL),
    as they combine the lanes of ``vmap(..., axis_name=...)``.

    >>> # mpiexec -n 2 python -c ...
    >>> fx.distributed.initialize()
    >>> grads = fx.pmap(lambda g: fx.lax.pmean(g, "batch"), axis_name="batch")(
    ...     fnp.full((1, 3), float(fx.process_index())))
    >>> grads                                 # on both processes
    Array([[0.5, 0.5, 0.5]], dtype=float32)
    """
    if devices is not None and len(devices) != _local_count():
        raise ValueError(f"fx.pmap: devices= lists {len(devices)} devices; this process maps "
                         f"over its {_local_count()} local device(s)")
    statics = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    donate = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    compiled: dict = {}  # transport -> the jitted per-device body
    # Per argument / output tree structure: the mapped axis of each leaf (the prefix
    # broadcast costs more than the rest of a small call).
    in_plans: dict = {}
    out_plans: dict = {}
    axes_cache: dict = {}  # (transport, processes) -> the ProcessAxis (immutable)

    def body_for(transport):
        if transport not in compiled:
            @functools.wraps(fun)
            def per_device(*args):
                return fun(*args)

            compiled[transport] = jit(per_device, static_argnums=statics,
                                      donate_argnums=donate, backend=backend)
        return compiled[transport]

    def prepare(args):
        g = state.group()
        axes_arg = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        dyn = [a for i, a in enumerate(args) if i not in statics]
        if isinstance(axes_arg, tuple):
            if len(axes_arg) != len(args):
                raise ValueError(f"fx.pmap: in_axes has {len(axes_arg)} entries but "
                                 f"{_fun_name(fun)} was called with {len(args)} arguments")
            axes_arg = tuple(a for i, a in enumerate(axes_arg) if i not in statics)
        local = _local_count()
        if local != 1 and g.process_count > 1:  # its other devices' lanes would be lost
            raise NotImplementedError(
                f"fx.pmap({_fun_name(fun)}) across {g.process_count} processes maps one "
                f"device per process, and this process has {local} (FX_NUM_CPU_DEVICES): "
                "launch with FX_NUM_CPU_DEVICES unset or 1 per process")
        axis = axes_cache.get((g.transport, g.process_count))
        if axis is None:
            axis = axes_cache[g.transport, g.process_count] = ProcessAxis(
                g.process_count, axis_name, g.transport)
        if not statics and all(type(a) is np.ndarray or type(a) is Array for a in args):
            # Every argument an array (the common call): no tree to flatten or rebuild.
            if isinstance(axes_arg, tuple):
                if not all(a is None or type(a) is int for a in axes_arg):
                    raise ValueError(f"fx.pmap: in_axes {axes_arg!r} is deeper than the "
                                     f"arguments of {_fun_name(fun)} (arrays)")
                flat = axes_arg
            else:
                flat = (axes_arg,) * len(args)
            sliced = [_take(x, ax, local, i, bool(donate))
                      for i, (x, ax) in enumerate(zip(args, flat))]
            return sliced, axis, body_for(g.transport)
        leaves, tree = tree_util.tree_flatten(tuple(dyn))
        axes = in_plans.get(tree)
        if axes is None:
            try:
                axes = tree_util.broadcast_prefix(
                    axes_arg if isinstance(axes_arg, tuple) else (axes_arg,) * len(dyn),
                    tuple(dyn))
            except ValueError as e:
                raise ValueError(f"fx.pmap: in_axes does not match the arguments: {e}") from None
            in_plans[tree] = axes
        sliced = [_take(x, ax, local, i, bool(donate)) for i, (x, ax) in
                  enumerate(zip(leaves, axes))]
        it = iter(tree_util.tree_unflatten(tree, sliced))
        full = [args[i] if i in statics else next(it) for i in range(len(args))]
        return full, axis, body_for(g.transport)

    local_compiled: dict = {}  # static arguments -> the jitted vmap over local devices

    def local(args):
        """In one process: a vmap over the local devices (compiled), which also runs under
        an enclosing trace (jit, grad, vmap)."""
        g = state.group()
        if g.process_count > 1:
            raise NotImplementedError(
                f"fx.pmap({_fun_name(fun)}) was called under {current_trace().describe()}: "
                f"across {g.process_count} processes a pmapped function runs on concrete "
                "values; put grad/vmap/jit inside it")
        key = tuple((i, args[i]) for i in statics if i < len(args))
        dyn = tuple(a for i, a in enumerate(args) if i not in statics)
        axes_arg = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        if isinstance(axes_arg, tuple):
            if len(axes_arg) != len(args):
                raise ValueError(f"fx.pmap: in_axes has {len(axes_arg)} entries but "
                                 f"{_fun_name(fun)} was called with {len(args)} arguments")
            axes_arg = tuple(a for i, a in enumerate(axes_arg) if i not in statics)
        _check_local_size(dyn, axes_arg, _local_count())
        if key not in local_compiled:
            fixed = dict(key)

            def dynamic(*xs):
                it = iter(xs)
                return fun(*[fixed[i] if i in fixed else next(it)
                              for i in range(len(xs) + len(fixed))])

            local_compiled[key] = jit(
                vmap(dynamic, in_axes=axes_arg, out_axes=out_axes, axis_name=axis_name),
                backend=backend)
        return local_compiled[key](*dyn)

    def mapped(*args):
        if current_trace() is not EVAL_TRACE or (
                state.group().process_count == 1 and _local_count() > 1):
            return local(args)
        full, axis, body = prepare(args)
        with batching.extend_axis_env(axis):
            out = body(*full)
        if type(out) is Array and (out_axes is None or type(out_axes) is int):
            return _stack(out, out_axes)  # one array out: no tree
        leaves, tree = tree_util.tree_flatten(out)
        axes = out_plans.get(tree)
        if axes is None:
            try:
                axes = tree_util.broadcast_prefix(
                    out_axes, tree_util.tree_unflatten(tree, [0] * len(leaves)))
            except ValueError as e:
                raise ValueError(f"fx.pmap: out_axes does not match the outputs: {e}") from None
            out_plans[tree] = axes
        return tree_util.tree_unflatten(tree, [_stack(o, ax) for o, ax in zip(leaves, axes)])

    def lower(*args):
        """The compiled per-device program for these arguments (``.as_text()`` shows each
        collective as a ``collective`` call of the schedule)."""
        full, axis, body = prepare(args)
        with batching.extend_axis_env(axis):
            return body.lower(*full)

    mapped.__name__ = f"pmap({_fun_name(fun)})"
    mapped.__wrapped__ = fun
    mapped.lower = lower
    return mapped


def _check_local_size(dyn: tuple, axes_arg, local: int) -> None:
    """jax's rule: a pmap in one process maps over at most its local devices."""
    leaves = tree_util.tree_leaves(dyn)
    try:
        axes = tree_util.broadcast_prefix(
            axes_arg if isinstance(axes_arg, tuple) else (axes_arg,) * len(dyn), dyn)
    except ValueError as e:
        raise ValueError(f"fx.pmap: in_axes does not match the arguments: {e}") from None
    for i, (x, ax) in enumerate(zip(leaves, axes)):
        if ax is None:
            continue
        shape = get_aval(x).shape
        if isinstance(ax, int) and -len(shape) <= ax < len(shape) and shape[ax] > local:
            raise ValueError(
                f"fx.pmap: argument leaf {i} ({get_aval(x).str_short()}) has {shape[ax]} along "
                f"its mapped axis {ax % len(shape)}, but this process has {local} local "
                f"device(s); map over at most {local} (FX_NUM_CPU_DEVICES sets how many CPU "
                "devices a process has)")


def _local_count() -> int:
    g = state.group()
    return g.local_device_counts[g.process_index]


def _take(x, ax, local: int, i: int, donated: bool = False):
    """This device's slice of argument leaf ``x`` along its mapped axis ``ax``."""
    if ax is None:
        return x
    # NumPy arrays and fx Arrays are read without making an aval (a small call's largest
    # cost after the collective); anything else (a Python scalar, a list) through one.
    kind = type(x)
    shape = x.shape if kind is np.ndarray or kind is Array else get_aval(x).shape
    ndim = len(shape)
    if not isinstance(ax, int) or not -ndim <= ax < max(ndim, 1):
        raise ValueError(f"fx.pmap: in_axes {ax!r} does not name an axis of argument leaf {i} "
                         f"({get_aval(x).str_short()})")
    ax %= ndim
    if shape[ax] != local:
        raise ValueError(
            f"fx.pmap: argument leaf {i} ({get_aval(x).str_short()}) has {shape[ax]} along "
            f"its mapped axis {ax}, but this process has {local} local device(s): give each "
            f"process its shard with a leading axis of {local} (e.g. x[None])")
    buf = x._buf if kind is Array else np.asarray(x)
    # A view where it can be one (the leading axis of a contiguous array): the slice is only
    # read by this call, unless donated to it.
    part = np.asarray(buf[0] if ax == 0 and not donated else np.take(buf, 0, axis=ax), order="C")
    if kind is np.ndarray:
        return part  # jit reads NumPy arrays as they are (strongly typed)
    return Array(part, x.weak_type if kind is Array else get_aval(x).weak_type)


def _stack(o, ax):
    if ax is None:
        return o
    if type(o) is Array:
        buf, weak = o._buf, o.weak_type
    else:
        buf, weak = np.asarray(o), get_aval(o).weak_type
    return Array(buf[None] if ax == 0 else np.expand_dims(buf, ax), weak)
