"""``shard_map``: a function written for one shard, run on every device of a mesh, as
``jax.shard_map``.

Each argument is split into its shards along the mesh axes its ``in_specs`` entry names (and
is the same on every device along the others); ``f`` runs once per device on its shards, its
collectives (``fx.lax.psum``, ``all_gather``, ``ppermute``, ...) combining devices along
named mesh axes; the outputs are joined from the devices' results as ``out_specs`` says.

In one process this is a nested ``vmap``, one level per mesh axis with ``axis_name`` the
axis's name: ``f`` is traced once into a jaxpr at the shard's shapes, checked (the axes each
output varies over, :mod:`fx.spmd_vma`, against its ``out_specs``), and evaluated under the
batch traces. Each argument enters as a grid, its mesh-axis dimensions in front in the
mesh's order (absent where its spec does not name the axis: not batched along it), and each
output leaves the same way. Under ``fx.jit`` the whole is one program whose collectives are
reductions and gathers over the grid's dimensions, so ``jit``, ``grad`` (of the function as
a whole), ``vmap`` and ``scan`` compose with it as with any traced function.

Derivatives taken *inside* ``f`` have jax's typed meaning with ``check_vma=True``: values
are typed by the mesh axes they vary over (:mod:`fx.spmd_vma`); the transpose of ``psum`` of
a varying value is a broadcast, an invariant value used with varying ones has its cotangent
summed over the devices, an invariant output's cotangent counts once. ``fx.vjp`` inside the
body computes this from the lanes' own transpose (as ``pmap``'s: ``psum`` to ``psum``) with
placeholders at its boundary that :func:`fx.spmd_vma.resolve_checked` resolves once the body
is traced and each value's axes are known. With ``check_vma=False`` they are per device, as
under ``pmap``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from fx import sharding, tree_util
from fx.array import device_put
from fx.core import Tracer, current_trace, get_aval, new_trace, to_value
from fx.interpreters.batching import (
    BatchAxis,
    BatchTrace,
    MeshAxis,
    extend_axis_env,
    matchaxis,
    not_mapped,
)
from fx.interpreters.eval import eval_jaxpr
from fx.lax.base import reshape, transpose
from fx.lax.composites import index_in_dim
from fx.sharding import Mesh, PartitionSpec
from fx.spmd_vma import resolve_checked, varying_axes
from fx.tracing import flatten_fun, trace_to_jaxpr

__all__ = ["DuplicateSpecError", "TracedAcrossProcesses", "place_output", "shard_map"]


class DuplicateSpecError(Exception):
    """A partition spec names one mesh axis for two dimensions (jax's error type)."""


class TracedAcrossProcesses(NotImplementedError):
    """A ``shard_map`` over a mesh spanning processes was given a traced value: there it runs
    on concrete arrays and compiles its function itself."""


def _fun_name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


def place_output(value, mesh: Mesh, spec: PartitionSpec):
    """An output of ``shard_map`` as the array it returns: its value joined from every
    device's result, placed by ``NamedSharding(mesh, spec)`` (as jax's). Under a trace the
    value passes through: placement is a property of concrete arrays."""
    if isinstance(value, Tracer):
        return value
    return device_put(value, sharding.NamedSharding(mesh, spec))


# The runner of a shard_map over a mesh spanning processes, registered by fx.distributed
# (the processes' communicators live in that library, above this module): called as
# ``runner(f, mesh, axes, args, leaves, in_specs, out_specs)`` with the arguments' leaves and
# the specs checked here, it returns the outputs' leaves.
_process_runner: list[Callable] = []


def register_process_runner(runner: Callable) -> None:
    """Set the function that runs a ``shard_map`` whose mesh spans processes."""
    _process_runner[:] = [runner]


def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any = None,
              mesh: Mesh | None = None, axis_names: Any = frozenset(), check_vma: bool = True,
              check_rep: bool | None = None) -> Callable:
    """Run ``f`` on every device of ``mesh`` on its shards of the arguments, as
    ``jax.shard_map``.

    ``in_specs`` is a pytree prefix of the positional arguments whose leaves are
    ``PartitionSpec``s: dimension ``d`` of an argument is split over the mesh axes that entry
    ``d`` names (their sizes must divide it); along mesh axes its spec does not name, every
    device gets the whole argument. ``out_specs`` says the same of the outputs: an output is
    the concatenation of the devices' results along the axes its spec names, and must be the
    same on every device along the others (with ``check_vma=True``, checked on ``f``'s
    program; with it off, one device's value is returned). ``mesh`` defaults to the mesh of
    an enclosing ``with mesh:``. ``axis_names``, a subset of the mesh's axes, limits the
    mapping to those (the default: all of them). ``check_rep`` is the older spelling of
    ``check_vma``.

    Inside ``f``, ``fx.lax.psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
    ``psum_scatter``, ``ppermute``, ``all_to_all``, ``axis_index`` and ``axis_size`` take a
    mesh axis name or a tuple of them.

    Example::

        >>> import numpy as np, fx.numpy as fnp
        >>> mesh = fx.sharding.Mesh(np.array(fx.devices()[:1]), ("i",))
        >>> P = fx.sharding.PartitionSpec
        >>> total = fx.shard_map(lambda v: fx.lax.psum(fnp.sum(v), "i"), mesh=mesh,
        ...                      in_specs=P("i"), out_specs=P())
        >>> total(fnp.arange(4.0))
        Array(6., dtype=float32)
    """
    if check_rep is not None:
        check_vma = check_rep
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                 axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map: f must be callable, got {type(f).__name__}")

    @functools.wraps(f)
    def mapped(*args):
        m = mesh if mesh is not None else sharding.current_mesh()
        if m is None:
            raise ValueError(f"shard_map({_fun_name(f)}): no mesh: pass mesh= or call it "
                             "inside `with mesh:`")
        if not isinstance(m, Mesh):
            raise TypeError(f"shard_map: mesh must be an fx.sharding.Mesh, got "
                            f"{type(m).__name__}")
        if in_specs is None:
            raise TypeError(f"shard_map({_fun_name(f)}): in_specs is required (arrays carry "
                            "no sharding to infer it from)")
        axes = _manual_axes(m, axis_names)
        return _run(f, m, axes, in_specs, out_specs, check_vma, args, checked)

    # Across processes: the signatures whose specs and replication were checked, each with
    # its output specs and tree (each step then runs the per-process program directly).
    checked: dict = {}

    mapped.__wrapped__ = f
    return mapped


def _manual_axes(mesh: Mesh, axis_names) -> tuple[str, ...]:
    """The mesh axes mapped over, in the mesh's order."""
    names = set(axis_names) if axis_names else set(mesh.axis_names)
    unknown = names - set(mesh.axis_names)
    if unknown:
        raise ValueError(f"shard_map: axis_names {sorted(unknown)} are not axes of the mesh "
                         f"{mesh} (its axes are {mesh.axis_names})")
    return tuple(n for n in mesh.axis_names if n in names)


def _is_spec(x) -> bool:
    return isinstance(x, PartitionSpec) or x is None


def _specs_for(which: str, specs, tree_value) -> list:
    try:
        leaves = tree_util.broadcast_prefix(specs, tree_value, is_leaf=_is_spec)
    except ValueError as e:
        raise ValueError(f"shard_map: {which} must be a pytree prefix of the "
                         f"{'arguments' if which == 'in_specs' else 'outputs'}: {e}") from None
    out = []
    for s in leaves:
        if s is None:
            s = PartitionSpec()
        if not isinstance(s, PartitionSpec):
            raise TypeError(f"shard_map: {which} leaves must be PartitionSpecs (or None), got "
                            f"{s!r}")
        out.append(s)
    return out


def _check_spec(which: str, spec: PartitionSpec, mesh: Mesh, axes: tuple, aval, where: str,
                split: bool) -> None:
    """Raise jax's errors for a spec that cannot describe ``aval`` on ``mesh``."""
    names = spec.all_axes()
    for n in names:
        if n not in axes:
            raise ValueError(f"shard_map {which} argument must refer to an axis marked as "
                             f"manual ({sorted(axes)}), but {which} {spec} for {where} refers "
                             f"to {n!r} (the mesh {mesh} has axes {mesh.axis_names})")
    seen = set()
    for n in names:
        if n in seen:
            raise DuplicateSpecError(
                f"shard_map {which}: {spec} for {where} names mesh axis {n!r} more than once; "
                "a mesh axis may split at most one dimension")
        seen.add(n)
    if len(spec) > aval.ndim:
        raise ValueError(f"shard_map {which}: {spec} for {where} has {len(spec)} entries but "
                         f"the value {aval.str_short()} has rank {aval.ndim}")
    if not split:
        return
    for d in range(len(spec)):
        k = mesh.axis_size(spec.axes(d)) if spec.axes(d) else 1
        if aval.shape[d] % k:
            raise ValueError(
                f"shard_map: {where} of shape {aval.str_short()} has in_specs {spec}, which "
                f"maps its dimension {d} (of size {aval.shape[d]}) to mesh axes "
                f"{spec.axes(d)} (of total size {k}), but {k} does not evenly divide "
                f"{aval.shape[d]}; pad it or choose a spec whose axes divide it")


def _to_grid(x, spec: PartitionSpec, mesh: Mesh, axes: tuple):
    """``x`` with the mesh-axis dimensions its spec names split off and moved in front, in
    the order of ``axes``: shape ``(*sizes of those axes, *shard shape)``."""
    shape = get_aval(x).shape
    split_shape, positions, local = [], {}, []
    for d, size in enumerate(shape):
        for n in spec.axes(d):
            positions[n] = len(split_shape)
            split_shape.append(mesh.shape[n])
        local.append(len(split_shape))
        split_shape.append(size // (mesh.axis_size(spec.axes(d)) if spec.axes(d) else 1))
    if not spec.all_axes():
        return x
    x = reshape(x, tuple(split_shape))
    perm = [positions[n] for n in axes if n in positions] + local
    return transpose(x, perm)


def _from_grid(y, spec: PartitionSpec, mesh: Mesh, axes: tuple):
    """The inverse of :func:`_to_grid`: the devices' results joined along their spec."""
    named = [n for n in axes if n in spec.all_axes()]
    if not named:
        return y
    shape = get_aval(y).shape
    local = shape[len(named):]
    perm, out_shape = [], []
    for d, size in enumerate(local):
        for n in spec.axes(d):
            perm.append(named.index(n))
        perm.append(len(named) + d)
        out_shape.append(size * (mesh.axis_size(spec.axes(d)) if spec.axes(d) else 1))
    return reshape(transpose(y, perm), tuple(out_shape))


def _run(f, mesh: Mesh, axes: tuple, in_specs, out_specs, check_vma: bool, args: tuple,
         checked: dict):
    fname = _fun_name(f)
    leaves, in_tree = tree_util.tree_flatten((args, {}))
    leaves = [to_value(x, "shard_map") for x in leaves]
    ispecs = _specs_for("in_specs", tuple(in_specs) if isinstance(in_specs, list)
                        else in_specs, args)
    paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(args)[0]]
    local_avals = []
    for x, spec, path in zip(leaves, ispecs, paths):
        aval = get_aval(x)
        where = f"args{path} of {fname}"
        _check_spec("in_specs", spec, mesh, axes, aval, where, split=True)
        local_avals.append(aval.update(shape=tuple(
            s // (mesh.axis_size(spec.axes(d)) if spec.axes(d) else 1)
            for d, s in enumerate(aval.shape))))
    if mesh.is_multi_process:
        key = (mesh, axes, in_tree, tuple(local_avals))
        hit = checked.get(key)
        if hit is not None:
            ospecs, out_tree, body = hit
            return _across_processes(body, mesh, axes, args, leaves, ispecs, ospecs, out_tree)
    env_axes = [MeshAxis(mesh.shape[n], n, check_vma) for n in axes]

    flat_f, store = flatten_fun(f, in_tree, fname)
    with contextlib.ExitStack() as scope:
        for axis in env_axes:  # every mapped mesh axis visible to f's collectives
            scope.enter_context(extend_axis_env(axis))
        closed = trace_to_jaxpr(flat_f, local_avals, description=f"shard_map({fname})")
    out_tree = store["tree"]
    ospecs = _specs_for("out_specs", out_specs,
                        tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves))
    for i, (spec, aval) in enumerate(zip(ospecs, closed.out_avals)):
        _check_spec("out_specs", spec, mesh, axes, aval, f"output {i} of {fname}", split=False)
    body = f
    if check_vma:
        in_axes = [frozenset(s.all_axes()) for s in ispecs]
        varying = varying_axes(closed, in_axes)
        for i, (spec, vary) in enumerate(zip(ospecs, varying)):
            extra = sorted(vary - set(spec.all_axes()), key=axes.index)
            if extra:
                raise ValueError(
                    f"shard_map applied to {fname} was given out_specs which require "
                    f"replication which can't be statically inferred given the mesh {mesh}: "
                    f"out_specs {spec} for output {i} says it is the same on every device "
                    f"along mesh axes {extra}, but it was inferred to possibly vary over "
                    "them. If it should vary, name those axes in its out_specs; if it is "
                    "meant to be replicated, reduce it over them (psum/pmax/...) or pass "
                    "check_vma=False, which returns one device's value.")
        # The derivatives taken inside f get jax's typed cotangents now that each value's
        # axes are known.
        resolved = resolve_checked(closed, in_axes, {n: mesh.shape[n] for n in axes})
        if resolved is not closed:
            closed = resolved
            body = _jaxpr_function(closed, out_tree, fname)
    if mesh.is_multi_process:
        # Each process then runs f itself, compiled for its communicators (or the resolved
        # body, where f took derivatives of typed values).
        checked[key] = (ospecs, out_tree, body)
        return _across_processes(body, mesh, axes, args, leaves, ispecs, ospecs, out_tree)
    grids = [_to_grid(x, s, mesh, axes) for x, s in zip(leaves, ispecs)]
    in_named = [set(s.all_axes()) for s in ispecs]
    out_named = [set(s.all_axes()) for s in ospecs]
    outs = _map_axes(closed, grids, in_named, out_named, env_axes)
    results = [place_output(_from_grid(y, s, mesh, axes), mesh, s)
               for y, s in zip(outs, ospecs)]
    return tree_util.tree_unflatten(out_tree, results)


def _jaxpr_function(closed, out_tree, name: str) -> Callable:
    """A function of ``f``'s arguments that evaluates ``closed``, ``f``'s traced body."""
    def body(*args):
        leaves = tree_util.tree_leaves((args, {}))
        return tree_util.tree_unflatten(out_tree, eval_jaxpr(closed.jaxpr, closed.consts,
                                                             *leaves))

    body.__name__ = name
    return body


def _across_processes(f, mesh: Mesh, axes: tuple, args: tuple, leaves: list, ispecs: list,
                      ospecs: list, out_tree):
    if not _process_runner:
        raise NotImplementedError(
            f"shard_map({_fun_name(f)}): the mesh {mesh} spans processes; call "
            "fx.distributed.initialize() first")
    results = _process_runner[0](f, mesh, axes, args, leaves, ispecs, ospecs)
    return tree_util.tree_unflatten(out_tree, results)


def _map_axes(closed, grids: list, in_named: list, out_named: list,
              env_axes: list[BatchAxis]) -> list:
    """Evaluate ``closed`` batched over every mesh axis, outermost first: argument ``i``
    carries the axis at its front when ``in_named[i]`` has it; an output keeps the axis in
    front when ``out_named`` has it, else one device's value along it."""
    levels: list[tuple[BatchTrace, contextlib.ExitStack]] = []
    vals = list(grids)
    try:
        for axis in env_axes:  # enter one batch trace per mesh axis, from the outside in
            trace, scope = BatchTrace(current_trace(), axis), contextlib.ExitStack()
            scope.enter_context(extend_axis_env(axis))
            scope.enter_context(new_trace(trace))
            levels.append((trace, scope))
            vals = [trace.wrap(v, 0 if axis.name in named else not_mapped)
                    for v, named in zip(vals, in_named)]
        vals = eval_jaxpr(closed.jaxpr, closed.consts, *vals)
        while levels:  # and leave them from the inside out
            trace, scope = levels.pop()
            pairs = [trace.lift(v) for v in vals]
            scope.close()
            vals = [_leave_axis(trace.axis, val, d, trace.axis.name in named)
                    for (val, d), named in zip(pairs, out_named)]
    finally:
        while levels:  # an error inside f: leave the traces it entered
            levels.pop()[1].close()
    return vals


def _leave_axis(axis: BatchAxis, val, d, named: bool):
    if named:
        return matchaxis(axis.size, d, 0, val)
    if d is not_mapped:
        return val
    return index_in_dim(val, 0, d, keepdims=False)  # unchecked: one device's value
