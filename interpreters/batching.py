"""Batching (vmap): run a function on a whole batch by carrying a batch dimension.

A :class:`BatchTracer` holds a value with an extra dimension ``bdim`` (or ``None`` when the
value does not vary along the batch). Rules in ``batch_rules`` take the batch axis, the values
and their batch dims and return ``(out, out_bdim)``: ``rule(axis, vals, dims, **params)``.
Operations whose inputs are all unbatched are bound on the parent trace unchanged, and rules
move a batch dimension only when they must, so unbatched operands stay unbatched.
"""

from __future__ import annotations

import contextlib
import contextvars
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fx import core_primitives as base
from fx.avals import ShapedArray
from fx.core import (
    ConcretizationTypeError,
    Primitive,
    Trace,
    Tracer,
    current_trace,
    get_aval,
    new_trace,
    set_current_trace,
)
from fx.interpreters.eval import eval_jaxpr
from fx.jaxpr import ClosedJaxpr, Jaxpr
from fx.tracing import JaxprTrace

not_mapped = None


@dataclass(frozen=True)
class BatchAxis:
    size: int
    name: object = None

    # Whether a collective over a tuple of axes of this kind runs as one step over all of them
    # (processes: one call on the tuple's communicator); vmap lanes take one name at a time.
    joins_tuples = False


def joined(names: tuple) -> bool:
    """Whether a collective over the tuple ``names`` binds once, over all of them."""
    axes = [bound_axis(n) for n in names]
    return len(names) > 1 and all(a is not None and a.joins_tuples for a in axes)


@dataclass(frozen=True)
class MeshAxis(BatchAxis):
    """An axis of a ``shard_map``'s mesh. With ``check_vma`` the map follows jax's typed
    semantics, where derivatives taken inside the mapped function treat values that do not
    vary along the axis as one value rather than one per lane (``fx.vjp`` asks
    :func:`checked_axes`)."""

    check_vma: bool = False


BatchRule = Callable[..., tuple[object, object]]
batch_rules: dict[Primitive, BatchRule] = {}

# Named axes visible to collectives (psum, all_gather, axis_index), innermost last.
_axis_env: contextvars.ContextVar[tuple[BatchAxis, ...]] = contextvars.ContextVar(
    "fx_axis_env", default=()
)


def axis_size(name) -> int:
    if isinstance(name, tuple):  # several axes at once: the product of their sizes
        size = 1
        for n in name:
            size *= axis_size(n)
        return size
    for axis in reversed(_axis_env.get()):
        if axis.name == name:
            return axis.size
    raise NameError(f"unbound axis name: {name!r} (no enclosing vmap with axis_name={name!r})")


def bound_axis(name) -> BatchAxis | None:
    """The innermost axis bound under ``name`` (None when it is not bound)."""
    for axis in reversed(_axis_env.get()):
        if axis.name == name:
            return axis
    return None


def checked_axes() -> tuple:
    """The names bound to mesh axes of a ``shard_map`` with ``check_vma``, outermost first
    (a name's innermost binding decides): the axes over which jax types values as varying or
    invariant, so over which ``fx.vjp`` gives jax's typed cotangents."""
    names: list = []
    seen: set = set()
    for axis in reversed(_axis_env.get()):
        if axis.name in seen:
            continue
        seen.add(axis.name)
        if isinstance(axis, MeshAxis) and axis.check_vma:
            names.append(axis.name)
    return tuple(reversed(names))


def env_key() -> tuple:
    """The bound named axes as a cache key: a program traced under them depends on their
    sizes (a gather's lanes) and on whether a mesh axis is checked (the typed vjp)."""
    return tuple((a.name, a.size, isinstance(a, MeshAxis) and a.check_vma)
                 for a in _axis_env.get())


@contextlib.contextmanager
def extend_axis_env(axis: BatchAxis):
    token = _axis_env.set(_axis_env.get() + (axis,))
    try:
        yield
    finally:
        _axis_env.reset(token)


class BatchTracer(Tracer):
    __slots__ = ("val", "bdim")

    def __init__(self, trace: BatchTrace, val, bdim: int | None):
        super().__init__(trace)
        self.val = val
        self.bdim = bdim

    @property
    def aval(self) -> ShapedArray:
        aval = get_aval(self.val)
        if self.bdim is None:
            return aval
        shape = aval.shape[: self.bdim] + aval.shape[self.bdim + 1 :]
        return aval.update(shape=shape)

    def to_concrete(self, context: str):
        if self.bdim is None:
            v = self.val
            return v.to_concrete(context) if isinstance(v, Tracer) else v
        raise ConcretizationTypeError(
            f"vmap: {context} of a batched {self.aval.str_short()} value. Under vmap each value "
            "stands for a whole batch, so Python control flow cannot depend on it. Use "
            "fx.numpy.where or fx.lax.cond/select instead."
        )


class BatchTrace(Trace):
    name = "vmap"

    def __init__(self, parent: Trace, axis: BatchAxis):
        super().__init__(parent)
        self.axis = axis

    def describe(self) -> str:
        return "vmap" + (f" over axis {self.axis.name!r}" if self.axis.name is not None else "")

    def lift(self, x) -> tuple[object, int | None]:
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.bdim
        return x, not_mapped

    def process_primitive(self, prim: Primitive, args, params):
        vals, dims = zip(*(self.lift(a) for a in args)) if args else ((), ())
        rule = batch_rules.get(prim)
        if (all(d is not_mapped for d in dims) and not getattr(rule, "always", False)
                and not _uses_axis(params, self.axis.name)):
            with set_current_trace(self.parent):
                return prim.bind(*vals, **params)
        if rule is None:
            raise NotImplementedError(f"batching rule for '{prim.name}' is not implemented")
        with set_current_trace(self.parent):
            out, out_dims = rule(self.axis, list(vals), list(dims), **params)
        if prim.multiple_results:
            return [self.wrap(o, d) for o, d in zip(out, out_dims)]
        return self.wrap(out, out_dims)

    def wrap(self, val, bdim):
        return val if bdim is not_mapped else BatchTracer(self, val, bdim)


_axes_used: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _uses_axis(params: dict, name) -> bool:
    """Whether a sub-jaxpr in ``params`` holds a collective over ``name`` (at any depth): a
    loop or call over unbatched operands must still run batched then, so that this axis's
    rule meets the collective, as it would outside the loop."""
    if name is None:
        return False
    for value in params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            jaxpr = getattr(item, "jaxpr", item)
            if isinstance(jaxpr, Jaxpr) and name in _collective_axes(jaxpr):
                return True
    return False


def _collective_axes(jaxpr: Jaxpr) -> frozenset:
    """Every axis name a collective inside ``jaxpr`` (or its sub-jaxprs) names."""
    if jaxpr in _axes_used:
        return _axes_used[jaxpr]
    found: set = set()
    stack = [jaxpr]
    while stack:
        j = stack.pop()
        for eqn in j.eqns:
            name = eqn.params.get("axis_name")
            if name is not None:
                found.update(name if isinstance(name, (tuple, list)) else (name,))
            for value in eqn.params.values():
                for item in value if isinstance(value, (tuple, list)) else (value,):
                    sub = getattr(item, "jaxpr", item)
                    if isinstance(sub, Jaxpr):
                        stack.append(sub)
    _axes_used[jaxpr] = frozenset(found)
    return _axes_used[jaxpr]


# --- helpers for rules --------------------------------------------------------------------------


def moveaxis(x, src: int, dst: int):
    ndim = get_aval(x).ndim
    src, dst = src % ndim, dst % ndim
    if src == dst:
        return x
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return base.transpose(x, perm)


def broadcast_batch(x, size: int, axis: int):
    """Insert a batch dimension of ``size`` at ``axis`` into an unbatched value."""
    shape = list(get_aval(x).shape)
    out_shape = shape[:axis] + [size] + shape[axis:]
    dims = [i for i in range(len(out_shape)) if i != axis]
    return base.broadcast_in_dim(x, out_shape, dims)


def matchaxis(size: int, src: int | None, dst: int, x):
    """``x`` with its batch dimension at ``dst`` (materialized if ``src`` is not mapped)."""
    if src is not_mapped:
        return broadcast_batch(x, size, dst)
    return moveaxis(x, src, dst)


def bdim_at_front(x, bdim: int | None, size: int):
    return matchaxis(size, bdim, 0, x)


# Primitives batched as elementwise (by the two helpers below): the rule-coverage test asks
# each for a kernel (scalar lowering) rule, so none silently runs as an unfused NumPy step.
elementwise_prims: set[Primitive] = set()


def broadcasting_batcher(prim: Primitive, keep_scalar: Callable[[int], bool] = lambda i: True
                         ) -> None:
    """Batching for elementwise primitives whose operands share a shape or are rank 0.

    The output keeps the batch dimension where the first full-rank batched operand has it;
    unbatched scalars stay scalars where ``keep_scalar(position)`` allows, and everything else
    is brought to the full batched shape (scalars-per-example by a broadcast).
    """

    def rule(axis, vals, dims, **params):
        avals = [get_aval(v) for v in vals]
        ranks = [a.ndim - (d is not not_mapped) for a, d in zip(avals, dims)]
        out_rank = max(ranks)
        full = [i for i, r in enumerate(ranks) if r == out_rank and out_rank > 0]
        batched_full = [i for i in full if dims[i] is not not_mapped]
        bdim = dims[batched_full[0]] if batched_full else 0
        if full:
            i = full[0]
            shape = avals[i].shape
            per_example = (shape if dims[i] is not_mapped else
                           shape[:dims[i]] + shape[dims[i] + 1:])
        else:
            per_example = ()
        out_shape = per_example[:bdim] + (axis.size,) + per_example[bdim:]
        rest = tuple(k for k in range(len(out_shape)) if k != bdim)
        args = []
        for pos, (v, d, r) in enumerate(zip(vals, dims, ranks)):
            if d is not_mapped:
                if r == 0 and keep_scalar(pos):
                    args.append(v)
                else:
                    args.append(base.broadcast_in_dim(v, out_shape, rest if r else ()))
            elif r == out_rank and r > 0:
                args.append(moveaxis(v, d, bdim))
            else:  # a batched scalar: its batch axis becomes the output's
                args.append(base.broadcast_in_dim(v, out_shape, (bdim,)))
        return prim.bind(*args, **params), bdim

    batch_rules[prim] = rule
    elementwise_prims.add(prim)


def vectorized_batcher(prim: Primitive) -> None:
    """Batching for unary elementwise primitives: the batch dimension passes through."""

    def rule(axis, vals, dims, **params):
        return prim.bind(*vals, **params), dims[0]

    batch_rules[prim] = rule
    elementwise_prims.add(prim)


# --- the interpreter-level primitives (see fx.lax.base) -----------------------------------------


def _broadcast_in_dim_batch(axis, vals, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    # Keep the batch dimension in front of the output: operand dims map past it.
    x = moveaxis(x, d, 0)
    new_dims = (0,) + tuple(b + 1 for b in broadcast_dimensions)
    return base.broadcast_in_dim(x, (axis.size,) + tuple(shape), new_dims), 0


def _reshape_batch(axis, vals, dims, *, new_sizes):
    x = moveaxis(vals[0], dims[0], 0)
    return base.reshape(x, (axis.size,) + tuple(new_sizes)), 0


def _transpose_batch(axis, vals, dims, *, permutation):
    (x,), (d,) = vals, dims
    perm = [p + (p >= d) for p in permutation]
    perm.insert(d, d)
    return base.transpose(x, perm), d


def _reduce_sum_batch(axis, vals, dims, *, axes):
    (x,), (d,) = vals, dims
    new_axes = tuple(a + (a >= d) for a in axes)
    out_d = d - sum(a < d for a in new_axes)
    return base.reduce_sum(x, new_axes), out_d


def _add_any_batch(axis, vals, dims):
    if dims[0] == dims[1]:
        return base.add_any(*vals), dims[0]
    x, y = (bdim_at_front(v, d, axis.size) for v, d in zip(vals, dims))
    return base.add_any(x, y), 0


batch_rules[base.broadcast_in_dim_p] = _broadcast_in_dim_batch
batch_rules[base.reshape_p] = _reshape_batch
batch_rules[base.transpose_p] = _transpose_batch
batch_rules[base.reduce_sum_p] = _reduce_sum_batch
batch_rules[base.add_any_p] = _add_any_batch


# --- running functions and jaxprs batched -------------------------------------------------------


def batch_flat(
    flat_f: Callable, args: Sequence, in_dims: Sequence[int | None], axis: BatchAxis,
    out_dims: Sequence[int | None] | Callable[[int], int | None],
) -> list:
    """Apply ``flat_f`` to ``args`` batched along ``in_dims``; outputs get their batch
    dimension at ``out_dims`` (``None``: the output must not vary along the batch)."""
    trace = BatchTrace(current_trace(), axis)
    with extend_axis_env(axis), new_trace(trace):
        ins = [trace.wrap(a, d) for a, d in zip(args, in_dims)]
        outs = flat_f(*ins)
        pairs = [trace.lift(o) for o in outs]
    results = []
    for i, (val, d) in enumerate(pairs):
        want = out_dims(i) if callable(out_dims) else out_dims[i]
        if want is None:
            if d is not not_mapped:
                raise ValueError(
                    f"vmap: output {i} varies along the batch (axis size {axis.size}) but "
                    "out_axes is None for it; use an integer out_axes or make it unbatched"
                )
            results.append(val)
        else:
            ndim = get_aval(val).ndim + (d is not_mapped)
            if not -ndim <= want < ndim:
                raise ValueError(
                    f"vmap: out_axes {want} is out of range for output {i}, which has rank "
                    f"{ndim} with the batch axis"
                )
            results.append(matchaxis(axis.size, d, want % ndim, val))
    return results


_batch_jaxpr_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def batch_jaxpr(
    closed: ClosedJaxpr, axis: BatchAxis, in_dims: Sequence[int | None],
    out_dims: Sequence[int | None] | None = None,
) -> tuple[ClosedJaxpr, list[int | None]]:
    """``closed`` batched along ``in_dims`` as a new jaxpr. With ``out_dims`` None, outputs
    that vary get their batch dimension in front and the rest stay unbatched."""
    key = (axis, tuple(in_dims), None if out_dims is None else tuple(out_dims))
    per_jaxpr = _batch_jaxpr_cache.setdefault(closed, {})
    if key in per_jaxpr:
        return per_jaxpr[key]
    in_avals = []
    for a, d in zip(closed.in_avals, in_dims):
        if d is None:
            in_avals.append(a)
        else:
            in_avals.append(a.update(shape=a.shape[:d] + (axis.size,) + a.shape[d:]))
    result_dims: list[int | None] = []

    def flat_f(*args):
        trace = BatchTrace(current_trace(), axis)
        with extend_axis_env(axis), new_trace(trace):
            ins = [trace.wrap(a, d) for a, d in zip(args, in_dims)]
            outs = eval_jaxpr(closed.jaxpr, closed.consts, *ins)
            pairs = [trace.lift(o) for o in outs]
        results = []
        for i, (val, d) in enumerate(pairs):
            want = d if out_dims is None else out_dims[i]
            if out_dims is None and d is not not_mapped:
                want = 0
            if want is None:
                if d is not not_mapped:
                    raise ValueError("batch_jaxpr: an output asked to be unbatched varies")
                results.append(val)
            else:
                results.append(matchaxis(axis.size, d, want, val))
            result_dims.append(want)
        return results

    trace = JaxprTrace(None, "vmap of a jaxpr")
    with new_trace(trace):
        tracers = [trace.new_arg(a) for a in in_avals]
        outs = flat_f(*tracers)
        result = trace.to_jaxpr(outs)
    per_jaxpr[key] = (result, result_dims)
    return result, result_dims
