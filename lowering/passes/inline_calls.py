"""Inlining: nested jit, checkpoint and custom-derivative calls become plain equations.

After differentiation has used their rules, such calls only delimit code; the compiler sees
the whole program at once. Constants of inlined bodies become constants of the result.
"""

from __future__ import annotations

from fx.interpreters.call import body_param
from fx.jaxpr import ClosedJaxpr, Jaxpr, Var
from fx.lowering.passes.rewrite import Renamer


def inline_calls(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with every call-like equation replaced by its (recursively inlined) body."""
    constvars = list(closed.jaxpr.constvars)
    consts = list(closed.consts)
    eqns = []
    rename = Renamer()

    def emit(jaxpr: Jaxpr, env: Renamer, fresh_vars: bool):
        for eqn in jaxpr.eqns:
            eqn = env.eqn(eqn)
            name = body_param.get(eqn.primitive)
            if name is None:
                if fresh_vars:  # a body inlined twice must not bind the same variables twice
                    outs = [Var(v.aval) for v in eqn.outvars]
                    for old, new in zip(eqn.outvars, outs):
                        env.bind(old, new)
                    eqn = eqn.replace(outvars=outs)
                eqns.append(eqn)
                continue
            body: ClosedJaxpr = eqn.params[name]
            inner = Renamer()
            for v, c in zip(body.jaxpr.constvars, body.consts):
                fresh = Var(v.aval)
                constvars.append(fresh)
                consts.append(c)
                inner.bind(v, fresh)
            for v, a in zip(body.jaxpr.invars, eqn.invars):
                inner.bind(v, a)
            emit(body.jaxpr, inner, True)
            for out, res in zip(eqn.outvars, inner.outvars(body.jaxpr)):
                env.bind(out, res)

    emit(closed.jaxpr, rename, False)
    jaxpr = Jaxpr(constvars, closed.jaxpr.invars, rename.outvars(closed.jaxpr), eqns)
    return ClosedJaxpr(jaxpr, consts)
