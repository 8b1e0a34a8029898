"""Which mesh axes each value of a ``shard_map`` body varies over (jax's ``check_vma``).

:func:`varying_axes` takes the body's closed jaxpr and, per input, the mesh axes its
``in_specs`` entry splits it over, and returns per output the set of mesh axes along which
the output may differ between devices. The analysis is static and conservative, as jax's:

- an input varies over the axes of its spec; constants and literals vary over none;
- ``axis_index`` varies over its axis; ``psum``, ``pmax`` and ``pmin`` over an axis give a
  value that does not vary over it; ``all_gather`` keeps its operand's axes and adds its own
  (jax's rule: its transpose is a ``psum_scatter``, which needs a varying cotangent);
- ``scan`` and ``while`` carry what their bodies make of them until nothing changes; ``cond``
  adds its predicate's axes; other equations with a sub-jaxpr of their own arity are
  analysed through it; any other equation varies over the union of its operands, plus every
  axis an ``axis_index`` inside one of its sub-jaxprs names.

``shard_map`` compares the result with ``out_specs``: an output whose spec leaves out an axis
it varies over is an error there.
"""

from __future__ import annotations

from collections.abc import Sequence

from fx.jaxpr import ClosedJaxpr, Jaxpr, Literal
from fx.lax.control_flow.conditionals import cond_p
from fx.lax.control_flow.loops import while_p
from fx.lax.control_flow.scans import scan_p
from fx.lax.parallel import all_gather_p, axis_index_p, pmax_p, pmin_p, psum_p

Axes = frozenset

_REDUCING = (psum_p, pmax_p, pmin_p)


def varying_axes(closed: ClosedJaxpr | Jaxpr, ins: Sequence[frozenset]) -> list[frozenset]:
    """Per output of ``closed``, the mesh axes it may vary over, given its inputs' axes."""
    jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    env: dict = {}
    for v in jaxpr.constvars:
        env[v] = Axes()
    for v, axes in zip(jaxpr.invars, ins):
        env[v] = Axes(axes)

    def read(v) -> frozenset:
        return Axes() if isinstance(v, Literal) else env.get(v, Axes())

    for eqn in jaxpr.eqns:
        operands = [read(v) for v in eqn.invars]
        outs = _equation(eqn, operands)
        for v, axes in zip(eqn.outvars, outs):
            env[v] = axes
    return [read(v) for v in jaxpr.outvars]


def _union(sets) -> frozenset:
    out: set = set()
    for s in sets:
        out |= s
    return Axes(out)


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _equation(eqn, operands: list[frozenset]) -> list[frozenset]:
    prim, params = eqn.primitive, eqn.params
    if prim is axis_index_p:
        return [Axes(_names(params["axis_name"]))]
    if prim in _REDUCING:
        return [operands[0] - Axes(_names(params["axis_name"]))]
    if prim is all_gather_p:
        return [operands[0] | Axes(_names(params["axis_name"]))]
    if prim is scan_p:
        return _scan(params, operands)
    if prim is while_p:
        return _while(params, operands)
    if prim is cond_p:
        index, ops = operands[0], operands[1:]
        branches = [varying_axes(b, ops) for b in params["branches"]]
        return [index | _union(outs) for outs in zip(*branches)]
    subs = _subjaxprs(params)
    call = [s for s in subs if len(_jaxpr(s).invars) == len(operands)
            and len(_jaxpr(s).outvars) == len(eqn.outvars)]
    if len(call) == 1:
        return varying_axes(call[0], operands)
    everything = _union(operands) | _union(_indexed_axes(s) for s in subs)
    return [everything] * len(eqn.outvars)


def _scan(params, operands):
    nc, nk = params["num_consts"], params["num_carry"]
    consts, carry, xs = operands[:nc], list(operands[nc:nc + nk]), operands[nc + nk:]
    while True:
        outs = varying_axes(params["jaxpr"], [*consts, *carry, *xs])
        grown = [c | o for c, o in zip(carry, outs[:nk])]
        if grown == carry:
            return outs
        carry = grown


def _while(params, operands):
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    cconsts, bconsts, carry = operands[:cn], operands[cn:cn + bn], list(operands[cn + bn:])
    while True:
        (pred,) = varying_axes(params["cond_jaxpr"], [*cconsts, *carry])
        outs = varying_axes(params["body_jaxpr"], [*bconsts, *carry])
        # A predicate that varies makes the number of steps, so every carry, vary with it.
        grown = [c | o | pred for c, o in zip(carry, outs)]
        if grown == carry:
            return carry
        carry = grown


def _jaxpr(sub) -> Jaxpr:
    return sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub


def _subjaxprs(params) -> list:
    found = []
    for value in params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, (ClosedJaxpr, Jaxpr)):
                found.append(item)
    return found


def _indexed_axes(sub) -> frozenset:
    """Every axis an ``axis_index`` inside ``sub`` (at any depth) names."""
    found: set = set()
    stack = [_jaxpr(sub)]
    while stack:
        jaxpr = stack.pop()
        for eqn in jaxpr.eqns:
            if eqn.primitive is axis_index_p:
                found.update(_names(eqn.params["axis_name"]))
            stack.extend(_jaxpr(s) for s in _subjaxprs(eqn.params))
    return Axes(found)
