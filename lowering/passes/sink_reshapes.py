"""Row-major reshapes move below the elementwise operations that consume them.

``z = f(reshape(x), c)`` with ``f`` elementwise and every other operand a scalar becomes
``z = reshape(f(x, c))``: the same values at the same flat positions (a row-major reshape
keeps every element's position, and ``f`` works element by element), so every result keeps
its bits. Repeated, a chain of elementwise operations after a flatten (a CNN's requantization
after its last pooling window, before the dense layers) runs on the window's own shape and the
reshape ends the chain, where the kernel generator iterates in the reshape's input shape
(``loop_kernels._reshape_tail``): the window's loads stay affine instead of dividing a flat index
back into the pooled shape for every element. Pure: every output variable and type is kept;
the reshape the chain started from stays for its other consumers (dead-code elimination drops
it otherwise).
"""

from __future__ import annotations

from fx.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from fx.lax import base
from fx.lowering.fusion.primitive_rules import Pattern, pattern_of


def sink_reshapes(jaxpr: Jaxpr) -> Jaxpr:
    reshaped: dict[Var, Var] = {}  # a plain reshape's output -> its operand
    eqns: list[JaxprEqn] = []
    changed = False
    for eqn in jaxpr.eqns:
        if (eqn.primitive is base.reshape_p and isinstance(eqn.invars[0], Var)
                and eqn.params.get("dimensions") is None):
            reshaped[eqn.outvars[0]] = eqn.invars[0]
            eqns.append(eqn)
            continue
        moved = _sunk(eqn, reshaped)
        if moved is None:
            eqns.append(eqn)
            continue
        eqns += moved
        reshaped[moved[1].outvars[0]] = moved[0].outvars[0]
        changed = True
    if not changed:
        return jaxpr
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)


def _sunk(eqn: JaxprEqn, reshaped: dict) -> list[JaxprEqn] | None:
    """``[f on the reshape's operand, the reshape of its result]`` for an elementwise
    equation reading one reshape output and otherwise scalars only; None otherwise."""
    if pattern_of(eqn.primitive) is not Pattern.ELEMENTWISE or len(eqn.outvars) != 1:
        return None
    sources = [v for v in eqn.invars if isinstance(v, Var) and v in reshaped]
    if len(sources) != 1 or any(
            v is not sources[0] and (isinstance(v, Literal) or isinstance(v, Var))
            and v.aval.shape != () for v in eqn.invars):
        return None
    x = reshaped[sources[0]]
    (out,) = eqn.outvars
    inner = Var(out.aval.update(shape=x.aval.shape))
    return [eqn.replace(invars=[x if v is sources[0] else v for v in eqn.invars],
                        outvars=[inner]),
            JaxprEqn(base.reshape_p, [inner], [out],
                     {"new_sizes": out.aval.shape}, eqn.source_info)]
