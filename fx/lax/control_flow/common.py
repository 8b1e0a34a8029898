"""Helpers shared by the control-flow primitives: tracing user functions into sub-jaxprs,
rearranging jaxprs, partial evaluation with forced-unknown outputs, carry type checks, and
source locations for error messages.

Every sub-jaxpr a control-flow primitive is *bound* with comes from :func:`trace_flat`, which
hoists the traced function's constants into leading inputs (the primitive receives them as
explicit operands, so closed-over tracers of enclosing transformations are transformed like any
other operand). Jaxprs built later by the transformation rules (``jvp_jaxpr``, ``batch_jaxpr``,
...) may carry concrete constants; the rules therefore always evaluate ``closed.consts``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fx import dtypes, tree_util
from fx.array import Array
from fx.avals import ShapedArray
from fx.core import Tracer, is_array_like, new_trace, to_value
from fx.interpreters.eval import eval_jaxpr
from fx.interpreters.partial_eval import PartialEvalTrace
from fx.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, SourceInfo, Var, dce_jaxpr
from fx.tracing import JaxprTrace, trace_to_jaxpr

# --- source locations --------------------------------------------------------------------------


def source_location(x: JaxprEqn | SourceInfo | None) -> str:
    """``file:line (function)`` of an equation (or a :class:`SourceInfo`), for error messages.

    Equations record the user's line that created them; rules that raise long after tracing
    (transposition, the NaN checker) use this to point back at it.
    """
    info = x.source_info if isinstance(x, JaxprEqn) else x
    return str(info) if info is not None else "an unknown location"


# The user's line that created a loop body, kept for errors raised by rules that only see the
# body (a transpose rule gets params, not the equation). Derived bodies inherit the origin.
_origin: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def remember_origin(new: ClosedJaxpr, old: ClosedJaxpr | SourceInfo | None) -> None:
    info = _origin.get(old) if isinstance(old, ClosedJaxpr) else old
    if info is not None:
        _origin[new] = info


def origin_of(closed: ClosedJaxpr) -> SourceInfo | None:
    return _origin.get(closed)


# --- values ------------------------------------------------------------------------------------


def as_value(x, what: str):
    """An fx value for a leaf of a user pytree (numpy data and Python scalars convert)."""
    if not is_array_like(x):
        raise TypeError(
            f"{what}: a leaf of type {type(x).__name__} is not an array; control-flow operands "
            "and results must be pytrees of arrays or scalars"
        )
    return to_value(x, what)


def flatten_values(tree, what: str) -> tuple[list, tree_util.PyTreeDef]:
    leaves, treedef = tree_util.tree_flatten(tree)
    return [as_value(x, what) for x in leaves], treedef


def is_concrete(x) -> bool:
    return not isinstance(x, Tracer)


def fun_name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


# --- tracing user functions --------------------------------------------------------------------


def trace_flat(flat_fun: Callable, in_avals: Sequence[ShapedArray], what: str
               ) -> tuple[ClosedJaxpr, list]:
    """Trace ``flat_fun`` (leaves in, leaves out) into a jaxpr whose constants are hoisted into
    leading inputs; returns ``(jaxpr, consts)``."""
    closed = trace_to_jaxpr(flat_fun, list(in_avals), (), what)
    j = closed.jaxpr
    jaxpr = Jaxpr([], [*j.constvars, *j.invars], list(j.outvars), list(j.eqns))
    return ClosedJaxpr(jaxpr, []), list(closed.consts)


def trace_closed(fn: Callable, in_avals: Sequence[ShapedArray], what: str) -> ClosedJaxpr:
    """Trace ``fn`` (a function of values returning a list of values) at ``in_avals`` into a
    closed jaxpr, outside every enclosing transformation (rules use it to build bodies)."""
    trace = JaxprTrace(None, what)
    with new_trace(trace):
        args = [trace.new_arg(a) for a in in_avals]
        return trace.to_jaxpr(fn(*args))


def call(closed: ClosedJaxpr, *args) -> list:
    """Apply a closed jaxpr to ``args`` on the current trace."""
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- rearranging jaxprs ------------------------------------------------------------------------


def with_signature(closed: ClosedJaxpr, invars: Sequence[Var], outvars: Sequence[Any]
                   ) -> ClosedJaxpr:
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, list(invars), list(outvars), j.eqns), closed.consts)


def permute_invars(closed: ClosedJaxpr, order: Sequence[int]) -> ClosedJaxpr:
    """The jaxpr whose ``k``-th input is the old input ``order[k]``."""
    old = closed.jaxpr.invars
    return with_signature(closed, [old[i] for i in order], closed.jaxpr.outvars)


def permute_outvars(closed: ClosedJaxpr, order: Sequence[int]) -> ClosedJaxpr:
    old = closed.jaxpr.outvars
    return with_signature(closed, closed.jaxpr.invars, [old[i] for i in order])


def insert_unused_invars(closed: ClosedJaxpr, at: int, avals: Sequence[ShapedArray]
                         ) -> ClosedJaxpr:
    invars = list(closed.jaxpr.invars)
    invars[at:at] = [Var(a) for a in avals]
    return with_signature(closed, invars, closed.jaxpr.outvars)


def interleave_order(sizes_a: Sequence[int], sizes_b: Sequence[int]) -> list[int]:
    """Positions for regrouping ``[a0, a1, ..., b0, b1, ...]`` (groups of the given sizes) as
    ``[a0, b0, a1, b1, ...]``."""
    starts_a = np.cumsum([0, *sizes_a])
    base = int(starts_a[-1])
    starts_b = np.cumsum([0, *sizes_b]) + base
    order: list[int] = []
    for k in range(len(sizes_a)):
        order += range(int(starts_a[k]), int(starts_a[k + 1]))
        order += range(int(starts_b[k]), int(starts_b[k + 1]))
    return order


def known_outputs(known: ClosedJaxpr, n_out: int) -> ClosedJaxpr:
    """The known part of a partial evaluation without its residual outputs (for a loop that
    runs the known part on its own)."""
    j = known.jaxpr
    body, _ = dce_jaxpr(Jaxpr(j.constvars, j.invars, j.outvars[:n_out], j.eqns))
    return ClosedJaxpr(body, known.consts)


# --- partial evaluation with forced-unknown outputs --------------------------------------------


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns: Sequence[bool],
                       instantiate: Sequence[bool]
                       ) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
    """Split ``closed`` by which inputs are unknown, as
    :func:`fx.interpreters.partial_eval.partial_eval_jaxpr`, but the outputs marked in
    ``instantiate`` are always unknown (a known value there is passed on as a residual). Loop
    carries and branch outputs need this: their unknown-ness must agree across iterations and
    branches.

    Returns ``(known, unknown, out_unknowns, num_res)``: ``known`` maps the known inputs to
    the known outputs followed by the residuals; ``unknown`` maps the residuals followed by the
    unknown inputs to the unknown outputs.
    """
    known_trace = JaxprTrace(None, "partial eval (known part)")
    with new_trace(known_trace):
        pe = PartialEvalTrace(known_trace, "partial eval (unknown part)")
        with new_trace(pe):
            ins = [pe.new_arg(a) if u else known_trace.new_arg(a)
                   for a, u in zip(closed.in_avals, unknowns)]
            outs = call(closed, *ins)
            out_unknowns = [pe.is_unknown(o) or bool(i) for o, i in zip(outs, instantiate)]
            unknown_part = pe.to_jaxpr([o for o, u in zip(outs, out_unknowns) if u])
        res_idx = [i for i, c in enumerate(unknown_part.consts) if isinstance(c, Tracer)]
        residuals = [unknown_part.consts[i] for i in res_idx]
        known = known_trace.to_jaxpr(
            [o for o, u in zip(outs, out_unknowns) if not u] + residuals)
    uj = unknown_part.jaxpr
    res_set = set(res_idx)
    keep = [i for i in range(len(uj.constvars)) if i not in res_set]
    unknown = ClosedJaxpr(
        Jaxpr([uj.constvars[i] for i in keep], [uj.constvars[i] for i in res_idx] + uj.invars,
              uj.outvars, uj.eqns),
        [unknown_part.consts[i] for i in keep],
    )
    return known, unknown, out_unknowns, len(residuals)


def carry_fixed_point(body: ClosedJaxpr, consts_uk: Sequence[bool], carry_uk: Sequence[bool],
                      rest_uk: Sequence[bool]):
    """Partially evaluate a loop body ``(consts, carry, rest) -> (carry, others)`` with a carry
    unknown wherever some iteration makes it unknown. Returns ``(carry_uk, split)`` with
    ``split`` the :func:`partial_eval_jaxpr` result for those carries."""
    carry_uk = list(carry_uk)
    n_other = len(body.out_avals) - len(carry_uk)
    while True:
        split = partial_eval_jaxpr(body, [*consts_uk, *carry_uk, *rest_uk],
                                   carry_uk + [False] * n_other)
        new = [a or b for a, b in zip(carry_uk, split[2])]
        if new == carry_uk:
            return carry_uk, split
        carry_uk = new


# --- carry and branch types --------------------------------------------------------------------


def same_type(a: ShapedArray, b: ShapedArray) -> bool:
    """Equal shapes and dtypes (weak typing may differ, as in jax)."""
    return a.shape == b.shape and a.dtype == b.dtype


def promote_weak_carry(init: list, in_avals: Sequence[ShapedArray],
                       out_avals: Sequence[ShapedArray]) -> tuple[list, bool]:
    """Initial carry values whose weak types are promoted against what the body returns (a
    Python scalar ``0.0`` carried through a body returning ``float32`` becomes a strong
    ``float32``). Returns the new values and whether anything changed."""
    from fx.lax.elementwise import convert_element_type

    out, changed = [], False
    for x, a, b in zip(init, in_avals, out_avals):
        if a.weak_type and a.shape == b.shape and (a.dtype != b.dtype or not b.weak_type):
            dt, weak = dtypes.join((a.dtype, True), (b.dtype, b.weak_type))
            x = convert_element_type(x, dt, weak)
            changed = True
        out.append(x)
    return out, changed


def _leaf_paths(tree) -> list:
    """The key path of every leaf of the tree structure ``tree``, in leaf order."""
    skeleton = tree_util.tree_unflatten(tree, list(range(tree.num_leaves)))
    return [path for path, _ in tree_util.tree_flatten_with_path(skeleton)[0]]


def check_carry(what: str, tree_in, tree_out, avals_in, avals_out, fn: str = "body_fun",
                counted: bool = False) -> None:
    """Raise a ``TypeError`` naming the first carry leaf whose output type differs from its
    input type. ``counted``: the carry is ``fori_loop``'s ``(i, value)`` pair and errors are
    about the value."""
    def describe(tree):
        return tree_util.treedef_children(tree)[1] if counted else tree

    if tree_in != tree_out:
        raise TypeError(
            f"{what}: {fn} output carry structure {describe(tree_out)} does not match the input "
            f"carry structure {describe(tree_in)}; {fn} must return a carry with the same "
            "pytree structure, shapes and dtypes as the initial one"
        )
    paths = [p[1:] if counted else p for p in _leaf_paths(tree_in)]
    for path, a, b in zip(paths, avals_in, avals_out):
        if not same_type(a, b):
            at = f" (at carry{tree_util.keystr(path)})" if path else ""
            raise TypeError(
                f"{what}: {fn} output carry type {b.str_short()} does not match the input "
                f"carry type {a.str_short()}{at}; {fn} must return a carry with the same "
                "shapes and dtypes as the initial one"
            )


def check_same_outputs(what: str, names: Sequence[str], trees, avals) -> None:
    """All branches of a conditional must return the same pytree structure and types."""
    for name, tree, av in zip(names[1:], trees[1:], avals[1:]):
        if tree != trees[0]:
            raise TypeError(
                f"{what}: {name} output structure {tree} does not match {names[0]} output "
                f"structure {trees[0]}; every branch must return the same pytree structure"
            )
        for path, a, b in zip(_leaf_paths(tree), avals[0], av):
            if not same_type(a, b):
                at = f" (at output{tree_util.keystr(path)})" if path else ""
                raise TypeError(
                    f"{what}: {name} output type {b.str_short()} does not match {names[0]} "
                    f"output type {a.str_short()}{at}; every branch must return the same "
                    "shapes and dtypes"
                )


def join_weak(*avals: ShapedArray) -> ShapedArray:
    return avals[0].update(weak_type=all(a.weak_type for a in avals))


def values_in(bufs: Sequence, avals: Sequence[ShapedArray]) -> list[Array]:
    """Impl buffers as Arrays typed like the jaxpr inputs they feed (a compiled program may
    hand a 0-d operand over as a one-element vector: it gets its shape back)."""
    return [Array(b if b.shape == a.shape else b.reshape(a.shape), a.weak_type)
            for b, a in zip(bufs, avals)]
