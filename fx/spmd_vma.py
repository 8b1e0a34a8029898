"""Which mesh axes each value of a ``shard_map`` body varies over (jax's ``check_vma``).

:func:`varying_axes` takes the body's closed jaxpr and, per input, the mesh axes its
``in_specs`` entry splits it over, and returns per output the set of mesh axes along which
the output may differ between devices. The analysis is static and conservative, as jax's:

- an input varies over the axes of its spec; constants and literals vary over none;
- ``axis_index`` varies over its axis; ``psum``, ``pmax`` and ``pmin`` over an axis give a
  value that does not vary over it;
- ``scan`` and ``while`` carry what their bodies make of them until nothing changes; ``cond``
  adds its predicate's axes; other equations with a sub-jaxpr of their own arity are
  analysed through it; any other equation varies over the union of its operands, plus every
  axis an ``axis_index`` inside one of its sub-jaxprs names.

- ``all_gather``, ``psum_scatter``, ``ppermute``, ``all_to_all`` and ``pvary`` vary over
  their axes whatever their operand (jax ``pvary``'s an invariant operand first);
- ``checked_sum(ct, ref)`` and ``checked_scale(ct, ref)`` (``fx.vjp``'s cotangents inside a
  checked body) are typed as ``ref``, the value they are the cotangent of.

``shard_map`` compares the result with ``out_specs``: an output whose spec leaves out an axis
it varies over is an error there. :func:`resolve_checked` then replaces the typed equations
(``checked_*``, ``pvary``) by what they mean given those axes: a scale, psums, or nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from fx.avals import ShapedArray
from fx.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from fx.lax.control_flow.conditionals import cond_p
from fx.lax.control_flow.loops import while_p
from fx.lax.control_flow.scans import scan_p
from fx.lax.elementwise import mul_p
from fx.lax.parallel import (
    all_gather_p,
    axis_index_p,
    checked_scale_p,
    checked_sum_p,
    pmax_p,
    pmin_p,
    psum_p,
    pvary_p,
)
from fx.lax.parallel_moves import all_to_all_p, ppermute_p, psum_scatter_p

Axes = frozenset

_REDUCING = (psum_p, pmax_p, pmin_p)
# Their result varies over their axis whatever the operand (jax pvary's an invariant operand).
_VARYING = (all_gather_p, ppermute_p, psum_scatter_p, all_to_all_p, pvary_p)
# Equations whose meaning depends on the types: resolve_checked replaces them.
_TYPED = (checked_scale_p, checked_sum_p, pvary_p)


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
    if prim in _VARYING:
        return [operands[0] | Axes(_names(params["axis_name"]))]
    if prim is checked_sum_p:  # the cotangent of ``ref``: typed as ``ref`` is
        ct, ref = operands
        return [ref | (ct - (Axes(params["axes"]) - ref))]
    if prim is checked_scale_p:
        return [operands[0] | operands[1]]
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
    return varying_axes(params["jaxpr"], _scan_ins(params, operands))


def _scan_ins(params, operands) -> list[frozenset]:
    """The axes of the scan body's inputs once its carry has grown to a fixed point."""
    nc, nk = params["num_consts"], params["num_carry"]
    consts, carry, xs = operands[:nc], list(operands[nc:nc + nk]), operands[nc + nk:]
    while True:
        outs = varying_axes(params["jaxpr"], [*consts, *carry, *xs])
        grown = [c | o for c, o in zip(carry, outs[:nk])]
        if grown == carry:
            return [*consts, *carry, *xs]
        carry = grown


def _while(params, operands):
    return _while_carry(params, operands)[1]


def _while_carry(params, operands):
    """The loop's constants and its carry's axes at the fixed point."""
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    cconsts, bconsts, carry = operands[:cn], operands[cn:cn + bn], list(operands[cn + bn:])
    while True:
        (pred,) = varying_axes(params["cond_jaxpr"], [*cconsts, *carry])
        outs = varying_axes(params["body_jaxpr"], [*bconsts, *carry])
        # A predicate that varies makes the number of steps, so every carry, vary with it.
        grown = [c | o | pred for c, o in zip(carry, outs)]
        if grown == carry:
            return (cconsts, bconsts), carry
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


# --- resolving the typed equations -----------------------------------------------------------


def resolve_checked(closed: ClosedJaxpr, ins: Sequence[frozenset],
                    sizes: Mapping[str, int]) -> ClosedJaxpr:
    """``closed`` with its typed equations replaced, given its inputs' axes and the mesh axes'
    sizes: ``checked_scale(ct, ref)`` by ``ct`` times one over the size of each of its axes
    that ``ref`` does not vary over (or ``ct`` itself), ``checked_sum(ct, ref)`` by a
    ``psum`` of ``ct`` over those axes, and ``pvary(x)`` by ``x``. Sub-jaxprs (scan, while,
    cond, calls) are resolved at the axes their inputs have there. The result has none of
    them, and the same outputs' axes (:func:`varying_axes`)."""
    if not _has_typed(closed.jaxpr):
        return closed
    return ClosedJaxpr(_resolve(closed.jaxpr, list(ins), sizes), closed.consts)


def _has_typed(jaxpr: Jaxpr) -> bool:
    stack = [jaxpr]
    while stack:
        j = stack.pop()
        for eqn in j.eqns:
            if eqn.primitive in _TYPED:
                return True
            stack.extend(_jaxpr(s) for s in _subjaxprs(eqn.params))
    return False


def _resolve(jaxpr: Jaxpr, ins: list[frozenset], sizes: Mapping[str, int]) -> Jaxpr:
    env: dict = {v: Axes() for v in jaxpr.constvars}
    env.update((v, Axes(a)) for v, a in zip(jaxpr.invars, ins))
    rename: dict = {}  # an output of a dropped equation -> the atom that stands for it

    def read(v) -> frozenset:
        return Axes() if isinstance(v, Literal) else env.get(v, Axes())

    def atom(v):
        return v if isinstance(v, Literal) else rename.get(v, v)

    eqns: list[JaxprEqn] = []
    for eqn in jaxpr.eqns:
        operands = [read(v) for v in eqn.invars]
        for v, axes in zip(eqn.outvars, _equation(eqn, operands)):
            env[v] = axes
        invars = [atom(v) for v in eqn.invars]
        prim, (out, *_) = eqn.primitive, eqn.outvars
        if prim is pvary_p:
            rename[out] = invars[0]
        elif prim in (checked_scale_p, checked_sum_p):
            ct = invars[0]
            missing = [a for a in eqn.params["axes"] if a not in operands[1]]
            if not missing:
                rename[out] = ct
            elif prim is checked_scale_p:
                dtype = out.aval.dtype
                scale = Literal(1.0 / math.prod(sizes[a] for a in missing),
                                ShapedArray((), dtype))
                eqns.append(JaxprEqn(mul_p, [ct, scale], [out], {}, eqn.source_info))
            else:
                for i, a in enumerate(missing):
                    last = i == len(missing) - 1
                    step = out if last else Var(out.aval)
                    eqns.append(JaxprEqn(psum_p, [ct], [step], {"axis_name": a},
                                         eqn.source_info))
                    ct = step
        elif any(_has_typed(_jaxpr(s)) for s in _subjaxprs(eqn.params)):
            eqns.append(eqn.replace(invars=invars,
                                    params=_resolve_params(eqn, operands, sizes)))
        else:
            eqns.append(eqn.replace(invars=invars) if invars != eqn.invars else eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, [atom(v) for v in jaxpr.outvars], eqns)


def _resolve_sub(sub, ins, sizes):
    if isinstance(sub, ClosedJaxpr):
        return ClosedJaxpr(_resolve(sub.jaxpr, list(ins), sizes), sub.consts)
    return _resolve(sub, list(ins), sizes)


def _resolve_params(eqn: JaxprEqn, operands: list[frozenset], sizes) -> dict:
    prim, params = eqn.primitive, dict(eqn.params)
    if prim is scan_p:
        params["jaxpr"] = _resolve_sub(params["jaxpr"], _scan_ins(params, operands), sizes)
    elif prim is while_p:
        (cconsts, bconsts), carry = _while_carry(params, operands)
        params["cond_jaxpr"] = _resolve_sub(params["cond_jaxpr"], [*cconsts, *carry], sizes)
        params["body_jaxpr"] = _resolve_sub(params["body_jaxpr"], [*bconsts, *carry], sizes)
    elif prim is cond_p:
        params["branches"] = type(params["branches"])(
            _resolve_sub(b, operands[1:], sizes) for b in params["branches"])
    else:
        keys = [k for k, v in params.items() if isinstance(v, (ClosedJaxpr, Jaxpr))
                and len(_jaxpr(v).invars) == len(operands)
                and len(_jaxpr(v).outvars) == len(eqn.outvars)]
        if len(keys) != 1 or len(_subjaxprs(params)) != 1:
            raise NotImplementedError(
                f"fx.shard_map with check_vma: a derivative or pvary inside {prim.name} "
                "(typed cotangents are resolved through calls, scan, while and cond only); "
                "take it outside, or pass check_vma=False")
        params[keys[0]] = _resolve_sub(params[keys[0]], operands, sizes)
    return params
