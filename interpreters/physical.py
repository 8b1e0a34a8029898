"""Values of extended dtypes (typed PRNG keys) in their physical form.

A value of an extended dtype (``fx.extended_dtypes``) is stored as NumPy data of its
``physical_aval``. The primitives that accept such values have a rule on that data in
``fx.core.physical_rules``; this module applies those rules to whole jaxprs:

- :func:`physicalize` rewrites a closed jaxpr holding extended-dtype values into one on their
  data: every such variable gets its physical aval, every equation touching one becomes the
  equations its physical rule binds (with the original equation's source line), and call-like
  primitives get physicalized bodies. The result holds NumPy dtypes only. ``fx.jit`` lowers
  the physical form, so the compiler never meets an extended dtype. A jaxpr without extended
  dtypes is returned unchanged (the same object), so compilation caches keyed by jaxpr still
  hit.
- :func:`subjaxpr_rule` is the physical rule of a primitive whose params hold jaxprs (jit,
  checkpoint, scan, while, cond, custom_jvp_call, ...): the same primitive, with physicalized
  bodies, bound on the physical operands. Eager evaluation of such a primitive (the eval
  trace runs physical rules) thereby runs its body on physical data too.

Invariant: the physical jaxpr computes, on the stored data of the inputs, the stored data of
the outputs of the original one.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from fx.array import Array
from fx.avals import physical_aval
from fx.core import Primitive, Tracer, has_extended, new_trace, physical_rules, physical_value
from fx.jaxpr import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var, subjaxprs
from fx.tracing import JaxprTrace, JaxprTracer

_physical: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_holds_extended: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def holds_extended(jaxpr: Jaxpr | ClosedJaxpr) -> bool:
    """Whether any variable of ``jaxpr`` or of a jaxpr nested in its equations has an
    extended dtype."""
    jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    found = _holds_extended.get(jaxpr)
    if found is None:
        found = (has_extended([v.aval for v in jaxpr.constvars + jaxpr.invars])
                 or has_extended([v.aval for v in jaxpr.outvars])
                 or any(_eqn_holds_extended(e) for e in jaxpr.eqns))
        _holds_extended[jaxpr] = found
    return found


def _eqn_holds_extended(eqn: JaxprEqn) -> bool:
    return (has_extended([v.aval for v in eqn.invars]) or has_extended(
        [v.aval for v in eqn.outvars]) or any(holds_extended(s) for s in subjaxprs(eqn)))


def physicalize(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` on the stored data of its extended-dtype values (see the module
    docstring); ``closed`` itself when it holds none."""
    if not holds_extended(closed):
        return closed
    out = _physical.get(closed)
    if out is None:
        out = _physicalize(closed)
        _physical[closed] = out
    return out


def _physicalize(closed: ClosedJaxpr) -> ClosedJaxpr:
    jaxpr = closed.jaxpr
    trace = JaxprTrace(None, "physicalize")
    env: dict[Var, object] = {}

    def read(v):
        if isinstance(v, Literal):
            return Array(v.value, v.aval.weak_type)
        return env[v]

    with new_trace(trace):
        for v, c in zip(jaxpr.constvars, closed.consts):
            if isinstance(c, Tracer) and has_extended([v.aval]):
                raise TypeError(f"physicalize: a traced constant of dtype {v.aval.dtype} "
                                "cannot be rewritten to its data; pass it as an argument")
            env[v] = physical_value(c, v.aval)
        for v in jaxpr.invars:
            env[v] = trace.new_arg(physical_aval(v.aval))
        for eqn in jaxpr.eqns:
            outs = _physical_eqn(trace, eqn, [read(v) for v in eqn.invars])
            env.update(zip(eqn.outvars, outs))
        return trace.to_jaxpr([read(v) for v in jaxpr.outvars])


def _physical_eqn(trace: JaxprTrace, eqn: JaxprEqn, args: list) -> list:
    in_avals = [v.aval for v in eqn.invars]
    out_avals = [v.aval for v in eqn.outvars]
    prim = eqn.primitive
    if not _eqn_holds_extended(eqn):  # copied as it is
        outvars = [DropVar(v.aval) if isinstance(v, DropVar) else Var(v.aval)
                   for v in eqn.outvars]
        trace.eqns.append(eqn.replace(invars=[trace.to_atom(a) for a in args],
                                      outvars=outvars))
        return [JaxprTracer(trace, v) for v in outvars]
    rule = physical_rules.get(prim)
    if rule is None and subjaxprs(eqn):
        rule = subjaxpr_rule(prim)
    if rule is None:
        raise TypeError(f"{prim.name} does not accept extended dtypes (operands "
                        f"{[str(a.dtype) for a in in_avals]})")
    first = len(trace.eqns)
    outs = rule(in_avals, out_avals, *args, **eqn.params)
    for i in range(first, len(trace.eqns)):
        trace.eqns[i] = trace.eqns[i].replace(source_info=eqn.source_info)
    return list(outs) if prim.multiple_results else [outs]


def _physical_param(value):
    if isinstance(value, ClosedJaxpr):
        return physicalize(value)
    if isinstance(value, Jaxpr):
        if not holds_extended(value):
            return value
        out = physicalize(ClosedJaxpr(value, []))
        if out.consts:
            raise TypeError("physicalize: an open jaxpr parameter gained constants")
        return out.jaxpr
    if isinstance(value, tuple) and value and all(
            isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value):
        return tuple(_physical_param(v) for v in value)
    return value


def subjaxpr_rule(prim: Primitive) -> Callable:
    """The physical rule of a primitive whose params hold jaxprs: ``prim`` with physicalized
    bodies on the physical operands (the bodies' signatures then match those operands)."""

    def rule(in_avals, out_avals, *args, **params):
        return prim.bind(*args, **{k: _physical_param(v) for k, v in params.items()})

    return rule
