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
are the unsharded program's either way (sums in another order: within rounding).
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from fx import jit_shardings, lax, tree_util
from fx.jaxpr import ClosedJaxpr, Literal
from fx.lax import primitives as prims
from fx.lowering.fusion.primitive_rules import Pattern, pattern_of
from fx.lowering.passes.inline_calls import inline_calls
from fx.sharding import Mesh, NamedSharding
from fx.sharding import PartitionSpec as P

REPLICATED = None
PARTIAL = "partial"


class NotDataParallel(NotImplementedError):
    """Shardings the batch partitioner does not take (two split dimensions, different axes)."""

_LINEAR_SUMS = (prims.add_p, prims.sub_p, prims.add_any_p)


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
        positions = _positions_of_consts(jaxpr.constvars, self.closed.consts)
        for eqn in jaxpr.eqns:
            ins = [REPLICATED if isinstance(v, Literal) else states[v] for v in eqn.invars]
            index_rule = _INDEX_RULES.get(eqn.primitive)
            found = index_rule and not isinstance(eqn.invars[1], Literal) and index_rule(
                eqn, ins, layout, positions.get(eqn.invars[1]))
            outs, run, gathered = found or _rule(eqn, ins, layout)
            for v, s in zip(eqn.outvars, outs):
                states[v] = s
            _track_positions(eqn, positions)
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
                outs.append(_convert(val, s, want, layout))
            return tuple(outs)

        return shard


def describe(plan: Plan) -> str:
    """One line per input and output state and per equation run whole (gathered)."""
    lay = plan.layout
    lines = [f"partitioned over mesh axes {lay.axes} ({lay.n} devices): inputs "
             f"{[lay.spec(d) for d in lay.dims]}, outputs {[lay.spec(d) for d in plan.out_dims]}"]
    lines += [f"  gathered (run whole on every device): {g}" for g in plan.gathered()]
    return "\n".join(lines)


# --- collectives on local values ---------------------------------------------------------------

def _gather(x, d, layout):
    return lax.all_gather(x, layout.axes, axis=d, tiled=True)


def _local(x, d, layout):
    """A replicated value's block along ``d``."""
    size = x.shape[d] // layout.n
    return lax.dynamic_slice_in_dim(x, lax.axis_index(layout.axes) * size, size, d)


def _to_replicated(x, s, layout):
    if s is PARTIAL:
        return lax.psum(x, layout.axes)
    if s is REPLICATED:
        return x
    return _gather(x, s, layout)


def _convert(x, s, want, layout):
    """``x`` in state ``s`` as split along ``want`` (None: replicated)."""
    if s == want and s is not PARTIAL:
        return x
    x = _to_replicated(x, s, layout)
    return x if want is None else _local(x, want, layout)


# --- rules -------------------------------------------------------------------------------------

def _whole(eqn, ins, layout):
    """Run the equation on whole operands: split ones gathered, partial ones summed."""
    prim, params = eqn.primitive, eqn.params

    def run(vals):
        vals = [_to_replicated(v, s, layout) for v, s in zip(vals, ins)]
        out = prim.bind(*vals, **params)
        return list(out) if prim.multiple_results else [out]

    gathered = any(s is not REPLICATED and s is not PARTIAL for s in ins)
    return [REPLICATED] * len(eqn.outvars), run, gathered


def _bind_local(eqn, params, pre: Sequence[Callable | None]):
    """Bind with ``params`` after applying ``pre[i]`` (if any) to operand ``i``."""
    prim = eqn.primitive

    def run(vals):
        vals = [v if f is None else f(v) for v, f in zip(vals, pre)]
        out = prim.bind(*vals, **params)
        return list(out) if prim.multiple_results else [out]

    return run


def _divisible(size: int, layout) -> bool:
    return size % layout.n == 0


def _localized(shape: tuple, d: int, layout) -> tuple:
    return shape[:d] + (shape[d] // layout.n,) + shape[d + 1:]


def _elementwise(eqn, ins, layout):
    split = [s for s in ins if s is not REPLICATED and s is not PARTIAL]
    literal = [isinstance(v, Literal) for v in eqn.invars]
    if split:
        d = split[0]
        pre = []
        for v, s in zip(eqn.invars, ins):
            if isinstance(v, Literal) or s == d or (s is REPLICATED and not v.aval.shape):
                pre.append(None)
            elif not v.aval.shape:  # a partial scalar
                pre.append(lambda x, s=s: _to_replicated(x, s, layout))
            else:
                pre.append(lambda x, s=s: _convert(x, s, d, layout))
        return [d] * len(eqn.outvars), _bind_local(eqn, eqn.params, pre), False
    if PARTIAL in ins and _stays_partial(eqn, ins, literal):
        return [PARTIAL] * len(eqn.outvars), _bind_local(eqn, eqn.params,
                                                         [None] * len(ins)), False
    return _whole(eqn, ins, layout)


def _stays_partial(eqn, ins, literal) -> bool:
    """Whether the equation maps a sum of terms to the sum of its results on the terms."""
    p = eqn.primitive
    if p in _LINEAR_SUMS:
        return all(s is PARTIAL and not lit for s, lit in zip(ins, literal))
    if p is prims.neg_p:
        return True
    if p is prims.convert_element_type_p:
        return (eqn.invars[0].aval.dtype.kind == "f"
                and eqn.outvars[0].aval.dtype.kind == "f")
    if p is prims.mul_p:
        return sum(s is PARTIAL for s in ins) == 1
    if p is prims.div_p:
        return ins[0] is PARTIAL and ins[1] is REPLICATED
    return False


def _broadcast_in_dim(eqn, ins, layout):
    (s,) = ins[:1]
    if s is REPLICATED or s is PARTIAL:
        if s is PARTIAL and len(ins) > 1:
            return _whole(eqn, ins, layout)
        return [s], _bind_local(eqn, eqn.params, [None] * len(ins)), False
    if len(ins) > 1:  # dynamic shapes: not partitioned
        return _whole(eqn, ins, layout)
    bd = eqn.params["broadcast_dimensions"]
    out_d = bd[s]
    params = dict(eqn.params, shape=_localized(tuple(eqn.params["shape"]), out_d, layout))
    return [out_d], _bind_local(eqn, params, [None]), False


def _transpose(eqn, ins, layout):
    (s,) = ins
    if s is REPLICATED or s is PARTIAL:
        return [s], _bind_local(eqn, eqn.params, [None]), False
    return [list(eqn.params["permutation"]).index(s)], _bind_local(eqn, eqn.params,
                                                                  [None]), False


def _squeeze(eqn, ins, layout):
    (s,) = ins
    if s is REPLICATED or s is PARTIAL:
        return [s], _bind_local(eqn, eqn.params, [None]), False
    dims = eqn.params["dimensions"]
    if s in dims:  # a split dimension of size 1: one device holds it all
        return _whole(eqn, ins, layout)
    return [s - sum(1 for x in dims if x < s)], _bind_local(eqn, eqn.params, [None]), False


def _reshape(eqn, ins, layout):
    s = ins[0]
    if s is REPLICATED or s is PARTIAL:
        if len(ins) > 1 and s is PARTIAL:
            return _whole(eqn, ins, layout)
        return [s], _bind_local(eqn, eqn.params, [None] * len(ins)), False
    if len(ins) > 1 or eqn.params.get("dimensions") is not None:
        return _whole(eqn, ins, layout)
    shape = tuple(eqn.invars[0].aval.shape)
    new = tuple(eqn.params["new_sizes"])
    before = math.prod(shape[:s])
    # the output dimension that starts where the split one does, with a size the devices
    # divide and whose blocks are the input's blocks (the split dimension leads its group)
    for e in range(len(new)):
        if math.prod(new[:e]) == before and new[e] % layout.n == 0:
            inner_in = math.prod(shape[s + 1:])
            inner_out = math.prod(new[e + 1:])
            block_in = shape[s] // layout.n * inner_in
            block_out = new[e] // layout.n * inner_out
            if block_in == block_out:
                params = dict(eqn.params, new_sizes=_localized(new, e, layout))
                return [e], _bind_local(eqn, params, [None]), False
    return _whole(eqn, ins, layout)


_REDUCE_ACROSS = {prims.reduce_max_p: lax.pmax, prims.reduce_min_p: lax.pmin}


def _reduction(eqn, ins, layout):
    (s,) = ins
    axes = tuple(eqn.params["axes"])
    if s is REPLICATED:
        return [REPLICATED], _bind_local(eqn, eqn.params, [None]), False
    if s is PARTIAL:
        if eqn.primitive is prims.reduce_sum_p:
            return [PARTIAL], _bind_local(eqn, eqn.params, [None]), False
        return _whole(eqn, ins, layout)
    if s not in axes:
        return [s - sum(1 for a in axes if a < s)], _bind_local(eqn, eqn.params, [None]), False
    if eqn.primitive is prims.reduce_sum_p:
        return [PARTIAL], _bind_local(eqn, eqn.params, [None]), False
    across = _REDUCE_ACROSS.get(eqn.primitive)
    if across is None:
        return _whole(eqn, ins, layout)
    local = _bind_local(eqn, eqn.params, [None])
    return [REPLICATED], lambda vals: [across(local(vals)[0], layout.axes)], False


def _dot_general(eqn, ins, layout):
    sl, sr = ins[:2]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs_nd, rhs_nd = (len(v.aval.shape) for v in eqn.invars[:2])
    lfree = [d for d in range(lhs_nd) if d not in lc and d not in lb]
    rfree = [d for d in range(rhs_nd) if d not in rc and d not in rb]
    split = lambda s: s is not REPLICATED and s is not PARTIAL  # noqa: E731
    if len(ins) > 2 or (PARTIAL in (sl, sr) and (split(sl) or split(sr)
                                                 or (sl is PARTIAL and sr is PARTIAL))):
        return _whole(eqn, ins, layout)
    if PARTIAL in (sl, sr) or not (split(sl) or split(sr)):
        state = PARTIAL if PARTIAL in (sl, sr) else REPLICATED
        return [state], _bind_local(eqn, eqn.params, [None, None]), False

    def partner(d, mine_c, mine_b, other_c, other_b):
        if d in mine_c:
            return other_c[list(mine_c).index(d)], "contract"
        if d in mine_b:
            return other_b[list(mine_b).index(d)], "batch"
        return None, "free"

    if split(sl):
        pd, kind = partner(sl, lc, lb, rc, rb)
    else:
        pd, kind = partner(sr, rc, rb, lc, lb)
    other = sr if split(sl) else sl
    if kind == "free":
        # the other operand must be whole; the output is split where this free dim lands
        pre_other = (lambda x: _to_replicated(x, other, layout)) if split(other) else None
        if split(sl):
            out_d = len(lb) + lfree.index(sl)
            pre = [None, pre_other]
        else:
            out_d = len(lb) + len(lfree) + rfree.index(sr)
            pre = [pre_other, None]
        return [out_d], _bind_local(eqn, eqn.params, pre), bool(pre_other)
    # contracted or batch: the other operand split along the partner dimension
    def to_partner(x, s=other, pd=pd):
        return _convert(x, s, pd, layout)

    pre = [None, to_partner] if split(sl) else [to_partner, None]
    if kind == "contract":
        return [PARTIAL], _bind_local(eqn, eqn.params, pre), False
    out_d = (list(lb).index(sl) if split(sl) else list(rb).index(sr))
    return [out_d], _bind_local(eqn, eqn.params, pre), False


def _concatenate(eqn, ins, layout):
    split = [s for s in ins if s is not REPLICATED and s is not PARTIAL]
    if not split or split[0] == eqn.params["dimension"]:
        return _whole(eqn, ins, layout)
    d = split[0]
    pre = [None if s == d else (lambda x, s=s: _convert(x, s, d, layout)) for s in ins]
    return [d], _bind_local(eqn, eqn.params, pre), False


def _no_operands(eqn, ins, layout):
    return [REPLICATED] * len(eqn.outvars), _bind_local(eqn, eqn.params, []), False


_RULES: dict = {
    prims.broadcast_in_dim_p: _broadcast_in_dim,
    prims.transpose_p: _transpose,
    prims.squeeze_p: _squeeze,
    prims.reshape_p: _reshape,
    prims.reduce_sum_p: _reduction,
    prims.reduce_max_p: _reduction,
    prims.reduce_min_p: _reduction,
    prims.reduce_prod_p: _reduction,
    prims.reduce_and_p: _reduction,
    prims.reduce_or_p: _reduction,
    prims.argmax_p: _reduction,
    prims.argmin_p: _reduction,
    prims.dot_general_p: _dot_general,
    prims.concatenate_p: _concatenate,
}


def _is_elementwise(eqn) -> bool:
    if pattern_of(eqn.primitive) != Pattern.ELEMENTWISE or len(eqn.outvars) != 1:
        return False
    shape = tuple(eqn.outvars[0].aval.shape)
    return all(isinstance(v, Literal) or tuple(v.aval.shape) in ((), shape)
               for v in eqn.invars)


def _rule(eqn, ins, layout):
    if not eqn.invars:
        return _no_operands(eqn, ins, layout)
    if all(s is REPLICATED for s in ins):
        return [REPLICATED] * len(eqn.outvars), _bind_local(eqn, eqn.params,
                                                            [None] * len(ins)), False
    rule = _RULES.get(eqn.primitive)
    if rule is None and _is_elementwise(eqn):
        rule = _elementwise
    if rule is None:
        return _whole(eqn, ins, layout)
    outs, run, gathered = rule(eqn, ins, layout)
    # a split output dimension the devices do not divide: run whole instead
    for v, s in zip(eqn.outvars, outs):
        if s is not REPLICATED and s is not PARTIAL and not _divisible(v.aval.shape[s], layout):
            return _whole(eqn, ins, layout)
    return outs, run, gathered


# --- indexing by position ----------------------------------------------------------------------
#
# A gather that reads, for each row of a split batch, the same row of a split operand (the
# cross-entropy's take_along_axis: indices whose column is an iota along the batch) stays
# local: each device reads its own rows. ``positions`` follows the integer values known to be
# positions: ("along", k), a value equal to its index along dimension k (an iota, an arange
# constant, their broadcasts); ("cols", {c: k}), index rows whose column c is such a value.

def _positions_of_consts(constvars, consts) -> dict:
    out = {}
    for v, c in zip(constvars, consts):
        c = np.asarray(c)
        if c.ndim == 1 and c.dtype.kind in "iu" and np.array_equal(c, np.arange(c.shape[0])):
            out[v] = ("along", 0)
    return out


def _track_positions(eqn, positions: dict) -> None:
    p, params = eqn.primitive, eqn.params
    if p is prims.iota_p and np.dtype(params["dtype"]).kind in "iu":
        positions[eqn.outvars[0]] = ("along", params["dimension"])
        return
    if isinstance(eqn.invars[0] if eqn.invars else None, Literal):
        return
    first = positions.get(eqn.invars[0]) if eqn.invars else None
    if p is prims.broadcast_in_dim_p and first and first[0] == "along" and len(eqn.invars) == 1:
        positions[eqn.outvars[0]] = ("along", params["broadcast_dimensions"][first[1]])
    elif p is prims.concatenate_p:
        last = eqn.outvars[0].aval.ndim - 1
        if params["dimension"] != last:
            return
        cols, at = {}, 0
        for v in eqn.invars:
            if isinstance(v, Literal):
                return
            pos = positions.get(v)
            width = v.aval.shape[last]
            if pos and pos[0] == "along" and width == 1 and pos[1] != last:
                cols[at] = pos[1]
            elif pos and pos[0] == "cols":
                cols.update({at + c: k for c, k in pos[1].items()})
            at += width
        if cols:
            positions[eqn.outvars[0]] = ("cols", cols)


def _position_column(eqn, ins, layout, cols, operand_index: int):
    """For a gather or scatter whose index rows are split along dimension e and whose column
    j is the global position along e: (j, the operand dimension it indexes, e); else None."""
    indices = eqn.invars[1]
    e = ins[1]
    if cols is None or cols[0] != "cols" or e is REPLICATED or e is PARTIAL:
        return None
    if e >= indices.aval.ndim - 1:
        return None
    axes = tuple(eqn.params["axes"])
    operand = eqn.invars[operand_index]
    for j, k in cols[1].items():
        if k == e and j < len(axes):
            d = axes[j]
            if operand.aval.shape[d] == indices.aval.shape[e] and ins[operand_index] in (
                    REPLICATED, d):
                return j, d, e
    return None


def _local_positions(idx, j: int, size: int, layout):
    """Index rows with column j moved from global positions to this device's block."""
    ncol = idx.shape[-1]
    mask = np.zeros(ncol, idx.dtype)
    mask[j] = 1
    off = lax.convert_element_type(lax.axis_index(layout.axes) * size, idx.dtype)
    shift = lax.mul(lax.broadcast_in_dim(mask, idx.shape, (idx.ndim - 1,)),
                    lax.broadcast_in_dim(off, idx.shape, ()))
    return lax.sub(idx, shift)


def _gather_rows(eqn, ins, layout, cols):
    found = _position_column(eqn, ins, layout, cols, 0)
    if found is None:
        return None
    j, d, e = found
    size = eqn.invars[0].aval.shape[d] // layout.n
    pre = [None if ins[0] == d else (lambda x: _local(x, d, layout)),
           lambda i: _local_positions(i, j, size, layout)]
    return [e], _bind_local(eqn, eqn.params, pre), False


def _scatter_rows(eqn, ins, layout, cols):
    found = _position_column(eqn, ins, layout, cols, 0)
    if found is None or ins[2] is PARTIAL:
        return None
    j, d, e = found
    size = eqn.invars[0].aval.shape[d] // layout.n
    pre = [None if ins[0] == d else (lambda x: _local(x, d, layout)),
           lambda i: _local_positions(i, j, size, layout),
           None if ins[2] == e else (lambda u, s=ins[2]: _convert(u, s, e, layout))]
    return [d], _bind_local(eqn, eqn.params, pre), False


_INDEX_RULES: dict = {}


def _register_index_rules() -> None:
    from fx.lax import indexing

    _INDEX_RULES[indexing.gather_p] = _gather_rows
    _INDEX_RULES[indexing.scatter_add_p] = _scatter_rows


_register_index_rules()


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
    import numpy as np

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
