"""Partitioning a jitted program by its batch: ``fx.jit`` with ``in_shardings`` over a mesh
that spans processes (data parallelism written as jax writes it, without ``shard_map``).

Each argument is either replicated or split along one of its dimensions over the same mesh
axes ``A`` (the batch axes). The program, traced at the global shapes, is rewritten into the
program of one shard and run with :func:`fx.shard_map`, so one compiled program runs per
process (or per device of one process) with collectives between them. Every value of the
program gets one of three states, decided from the jaxpr alone:

- *replicated*: the whole value, the same on every device;
- *split along dimension d*: each device holds its block of ``d`` (``A``'s devices in order);
- *partial*: each device holds a term; the value is their sum over ``A`` (what a sum or a
  contraction over a split dimension leaves, kept through linear operations so that one
  ``psum`` runs where the sum is needed).

Rules: elementwise operations keep their operands' split (a replicated operand of the same
shape is sliced to the device's block; a partial one summed first, except through ``add``,
``sub``, ``neg``, scaling and float conversions, which stay partial); ``broadcast_in_dim``,
``transpose``, ``squeeze`` and a ``reshape`` that keeps the split dimension leading its group
move the split; reductions over other dimensions keep it, a ``reduce_sum`` over it becomes
partial and a ``reduce_max``/``reduce_min`` a local reduction and a ``pmax``/``pmin``;
``dot_general`` keeps a split free or batch dimension and makes a split contracted dimension
partial. Any other equation with a split operand is run whole: its split operands are
gathered (``all_gather``) first. :func:`describe` lists those equations; the program's values
are the unsharded program's either way (sums in another order: within rounding). The rules,
one per kind of equation, are :mod:`fx.spmd_partition_rules`; this module plans a program
with them and runs it.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from fx import jit_shardings, tree_util
from fx.jaxpr import ClosedJaxpr, Literal
from fx.lowering.passes.inline_calls import inline_calls
from fx.sharding import Mesh, NamedSharding
from fx.sharding import PartitionSpec as P
from fx.spmd_partition_rules import (
    INDEX_RULES,
    PARTIAL,
    REPLICATED,
    convert,
    equation_rule,
    positions_of_consts,
    track_positions,
)


class NotDataParallel(NotImplementedError):
    """Shardings the batch partitioner does not take (two split dimensions, different axes)."""


@dataclass(frozen=True)
class Layout:
    """How the program's inputs are split: the batch mesh axes ``axes`` (their product of
    sizes ``n``) and, per input, the dimension split over them (None: replicated)."""
    mesh: Mesh
    axes: tuple[str, ...]
    dims: tuple[int | None, ...]

    @property
    def n(self) -> int:
        return self.mesh.axis_size(self.axes) if self.axes else 1

    def spec(self, dim: int | None) -> P:
        if dim is None:
            return P()
        entry = self.axes[0] if len(self.axes) == 1 else self.axes
        return P(*([None] * dim + [entry]))


def layout_of(mesh: Mesh, specs: Sequence[P], avals: Sequence, name: str,
              paths: Sequence[str]) -> Layout:
    """The :class:`Layout` of inputs with these specs; NotImplementedError for specs that
    are not data parallel (two split dimensions, or different axes for different inputs)."""
    axes, dims = None, []
    for spec, aval, path in zip(specs, avals, paths):
        split = [d for d in range(len(spec)) if spec.axes(d)]
        if len(split) > 1:
            raise NotDataParallel(
                f"jit({name}): in_shardings for {path} is {spec}, splitting {len(split)} "
                "dimensions; across processes fx.jit partitions programs whose inputs are each "
                "replicated or split along one dimension (data parallelism). Write the program "
                "per shard with fx.shard_map")
        if not split:
            dims.append(None)
            continue
        d = split[0]
        these = spec.axes(d)
        if axes is not None and these != axes:
            raise NotDataParallel(
                f"jit({name}): in_shardings split {path} over mesh axes {these} and another "
                f"input over {axes}; fx.jit partitions programs whose split inputs all use the "
                "same mesh axes (the batch). Write the program per shard with fx.shard_map")
        axes = these
        n = mesh.axis_size(these)
        if d >= len(aval.shape) or aval.shape[d] % n:
            raise ValueError(
                f"jit({name}): in_shardings {spec} for {path} of shape {tuple(aval.shape)}: "
                f"dimension {d} is not divisible by the {n} devices of mesh axes {these}")
        dims.append(d)
    return Layout(mesh, axes or (), tuple(dims))


# --- the plan ----------------------------------------------------------------------------------

@dataclass
class _Step:
    eqn: object
    run: Callable  # (local operand values) -> local outputs (a list)
    gathered: bool


class Plan:
    """The per-shard program of ``closed`` for ``layout``: its steps, the state of each output
    (before conversion to ``out_dims``) and the outputs' split dimensions."""

    def __init__(self, closed: ClosedJaxpr, layout: Layout, out_dims: Sequence | None):
        self.closed = inline_calls(closed)
        self.layout = layout
        jaxpr = self.closed.jaxpr
        states: dict = {v: REPLICATED for v in jaxpr.constvars}
        for v, d in zip(jaxpr.invars, layout.dims):
            states[v] = d
        self.steps: list[_Step] = []
        positions = positions_of_consts(jaxpr.constvars, self.closed.consts)
        for eqn in jaxpr.eqns:
            ins = [REPLICATED if isinstance(v, Literal) else states[v] for v in eqn.invars]
            index_rule = INDEX_RULES.get(eqn.primitive)
            found = index_rule and not isinstance(eqn.invars[1], Literal) and index_rule(
                eqn, ins, layout, positions.get(eqn.invars[1]))
            outs, run, gathered = found or equation_rule(eqn, ins, layout)
            for v, s in zip(eqn.outvars, outs):
                states[v] = s
            track_positions(eqn, positions)
            self.steps.append(_Step(eqn, run, gathered))
        self.final = [REPLICATED if isinstance(v, Literal) else states[v]
                      for v in jaxpr.outvars]
        if out_dims is None:
            out_dims = [None if s in (REPLICATED, PARTIAL) else s for s in self.final]
        self.out_dims = list(out_dims)

    def gathered(self) -> list[str]:
        """The equations run whole on gathered operands, as ``name: shapes``."""
        return [f"{s.eqn.primitive.name}: " + ", ".join(
                    str(tuple(v.aval.shape)) for v in s.eqn.invars)
                for s in self.steps if s.gathered]

    def body(self) -> Callable:
        """The per-shard function: local inputs -> local outputs."""
        jaxpr, consts, layout = self.closed.jaxpr, self.closed.consts, self.layout

        def shard(*args):
            env = dict(zip(jaxpr.constvars, consts))
            env.update(zip(jaxpr.invars, args))
            for step in self.steps:
                vals = [v.value if isinstance(v, Literal) else env[v] for v in step.eqn.invars]
                env.update(zip(step.eqn.outvars, step.run(vals)))
            outs = []
            for v, s, want in zip(jaxpr.outvars, self.final, self.out_dims):
                val = v.value if isinstance(v, Literal) else env[v]
                outs.append(convert(val, s, want, layout))
            return tuple(outs)

        return shard


def describe(plan: Plan) -> str:
    """One line per input and output state and per equation run whole (gathered)."""
    lay = plan.layout
    lines = [f"partitioned over mesh axes {lay.axes} ({lay.n} devices): inputs "
             f"{[lay.spec(d) for d in lay.dims]}, outputs {[lay.spec(d) for d in plan.out_dims]}"]
    lines += [f"  gathered (run whole on every device): {g}" for g in plan.gathered()]
    return "\n".join(lines)


# --- the partitioned call ----------------------------------------------------------------------

class Partitioned:
    """A function partitioned by its batch over ``mesh`` for inputs split as ``in_specs``
    (one PartitionSpec per positional argument's leaves, a pytree prefix as jit's
    ``in_shardings``), its outputs as ``out_specs`` (None: as the partitioning leaves them).
    Calls compile one per-shard program per signature and run it with ``fx.shard_map``."""

    def __init__(self, fun: Callable, mesh: Mesh, in_specs, out_specs=None,
                 name: str | None = None):
        self.fun, self.mesh, self.in_specs, self.out_specs = fun, mesh, in_specs, out_specs
        self.name = name or getattr(fun, "__name__", "fun")
        self._cache: dict = {}
        self._lock = threading.Lock()

    def plan(self, *args) -> Plan:
        return self._compiled(args)[0]

    def __call__(self, *args):
        plan, run, out_tree = self._compiled(args)
        leaves = tree_util.tree_leaves(args)
        placed = [_place(x, self.mesh, plan.layout.spec(d))
                  for x, d in zip(leaves, plan.layout.dims)]
        return tree_util.tree_unflatten(out_tree, list(run(*placed)))

    def _compiled(self, args):
        from fx.core import get_aval
        from fx.tracing import make_jaxpr

        leaves, in_tree = tree_util.tree_flatten(args)
        avals = tuple(get_aval(x) for x in leaves)
        key = (in_tree, avals)
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        specs = _leaf_specs(self.in_specs, args, self.name)
        paths = [f"args{tree_util.keystr(p)}" for p, _ in
                 tree_util.tree_flatten_with_path(args)[0]]
        layout = layout_of(self.mesh, specs, avals, self.name, paths)
        closed, out_shape = make_jaxpr(lambda *xs: self.fun(
            *tree_util.tree_unflatten(in_tree, list(xs))), return_shape=True)(*leaves)
        out_tree = tree_util.tree_structure(out_shape)
        out_dims = None
        if self.out_specs is not None:
            out_dims = [_split_dim(s, layout, self.name)
                        for s in _leaf_specs(self.out_specs, out_shape, self.name, "out")]
            for i, (d, o) in enumerate(zip(out_dims, tree_util.tree_leaves(out_shape))):
                if d is not None and (d >= len(o.shape) or o.shape[d] % layout.n):
                    raise ValueError(
                        f"jit({self.name}): out_shardings {layout.spec(d)} for output {i} of "
                        f"shape {tuple(o.shape)}: dimension {d} is not divisible by the "
                        f"{layout.n} devices of mesh axes {layout.axes}")
        plan = Plan(closed, layout, out_dims)
        whole = plan.gathered()
        if whole:  # no silent slow path: what every device computes in full
            warnings.warn(
                f"jit({self.name}) partitioned over mesh axes {layout.axes}: "
                f"{len(whole)} operation(s) have no partitioning rule for their split "
                f"operands and run whole on every device after an all_gather: "
                f"{'; '.join(whole)}", stacklevel=4)
        from fx.jit_function import jit
        from fx.spmd import shard_map

        run = shard_map(plan.body(), mesh=self.mesh,
                        in_specs=tuple(layout.spec(d) for d in layout.dims),
                        out_specs=tuple(layout.spec(d) for d in plan.out_dims),
                        check_vma=False)
        if not self.mesh.is_multi_process:  # across processes shard_map compiles per process
            run = jit(run)
        entry = (plan, run, out_tree)
        with self._lock:
            self._cache[key] = entry
        return entry


def _split_dim(spec: P, layout: Layout, name: str) -> int | None:
    split = [d for d in range(len(spec)) if spec.axes(d)]
    if not split:
        return None
    if len(split) > 1 or spec.axes(split[0]) != layout.axes:
        raise NotDataParallel(
            f"jit({name}): out_shardings {spec}: a partitioned program's outputs are "
            f"replicated or split along one dimension over the inputs' mesh axes {layout.axes}")
    return split[0]


def _leaf_specs(specs, tree, name: str, what: str = "in") -> list[P]:
    """One PartitionSpec per leaf of ``tree`` from the prefix ``specs`` (shardings or specs;
    None: replicated)."""
    def one(s):
        if s is None:
            return P()
        if isinstance(s, NamedSharding):
            return s.spec
        if isinstance(s, P):
            return s
        raise TypeError(f"jit({name}): {what}_shardings leaves must be NamedSharding, "
                        f"PartitionSpec or None, got {s!r}")

    out: list[P] = []
    is_leaf = lambda x: x is None or isinstance(x, (NamedSharding, P))  # noqa: E731
    tree_util.tree_map(lambda s, part: out.extend([one(s)] * len(tree_util.tree_leaves(part))),
                       specs, tree, is_leaf=is_leaf)
    return out


def _place(x, mesh: Mesh, spec: P):
    from fx.array import Array
    from fx.sharded_arrays import make_array_from_callback

    sharding = NamedSharding(mesh, spec)
    existing = getattr(x, "_sharding", None) if isinstance(x, Array) else None
    if existing is not None and not x.is_fully_addressable:
        if not existing.is_equivalent_to(sharding, x.ndim):
            raise NotImplementedError(
                f"an argument is sharded as {existing} where the partitioned program takes "
                f"{sharding}; fx does not move shards between processes: place it with the "
                "program's in_shardings")
        return x

    value = np.asarray(x)
    return make_array_from_callback(value.shape, sharding, lambda idx: value[idx])


def _jit_partitioned(fun: Callable, mesh: Mesh, in_shardings, out_shardings, name: str):
    return Partitioned(fun, mesh, in_shardings, out_shardings, name)


def _spanning_call(fun: Callable, args: tuple, name: str, cache: dict):
    """``fun(*args)`` partitioned by the shardings of its arguments that span processes (the
    others taken as replicated), as jax's jit follows its arguments' shardings; None when
    those shardings are not data parallel or ``fun`` itself maps over the mesh with
    ``shard_map`` (it then runs as a call). ``cache`` keeps each signature's outcome."""
    from fx.array import Array
    from fx.core import get_aval
    from fx.spmd import TracedAcrossProcesses

    leaves, in_tree = tree_util.tree_flatten(args)
    shardings = [x.sharding if isinstance(x, Array) and x._sharding is not None
                 and not x.is_fully_addressable else None for x in leaves]
    meshes = {s.mesh for s in shardings if isinstance(s, NamedSharding)}
    if len(meshes) != 1 or any(s is not None and not isinstance(s, NamedSharding)
                               for s in shardings):
        return None
    key = (in_tree, tuple(get_aval(x) for x in leaves), tuple(shardings))
    part = cache.get(key, False)
    if part is False:
        mesh = meshes.pop()
        prefix = tree_util.tree_unflatten(in_tree, list(range(len(leaves))))
        in_shardings = tree_util.tree_map(lambda i: shardings[i] or NamedSharding(mesh, P()),
                                          prefix)
        part = Partitioned(fun, mesh, in_shardings, None, name)
        try:
            part.plan(*args)
        except (NotDataParallel, TracedAcrossProcesses):
            part = None
        cache[key] = part
    return None if part is None else part(*args)


jit_shardings.register_partitioner(_jit_partitioned, _spanning_call)
