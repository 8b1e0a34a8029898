"""Constant folding: equations on literal scalars, and elementwise equations on literal scalars
broadcast to a shape ("splats"), are computed at compile time.

Folding splats matters beyond speed: a kernel that computes ``fmod(rint(c1), sinh(c2))`` from
literals hands the device compiler a constant expression, and PoCL's LLVM folds some library
calls on constants wrongly (fmod of a subnormal divisor, calls on a NaN). Computed here, by the
eager implementation, the value is the one eager fx gives, on every backend.
"""

from __future__ import annotations

import numpy as np

from fx.array import Array
from fx.avals import ShapedArray
from fx.core import EVAL_TRACE, set_current_trace
from fx.jaxpr import Jaxpr, JaxprEqn, Literal, Var, has_effects
from fx.lax.base import broadcast_in_dim_p
from fx.lowering.fusion.primitive_rules import Pattern, pattern_of
from fx.lowering.passes.rewrite import Renamer


def _eval_scalars(eqn: JaxprEqn, literals: list[Literal]) -> np.ndarray:
    args = [Array(v.value, v.aval.weak_type) for v in literals]
    with set_current_trace(EVAL_TRACE):
        return np.asarray(eqn.primitive.bind(*args, **eqn.params))


def _is_splat(eqn: JaxprEqn) -> bool:
    """``broadcast_in_dim`` of a scalar literal."""
    return (eqn.primitive is broadcast_in_dim_p and len(eqn.invars) == 1
            and isinstance(eqn.invars[0], Literal) and not eqn.invars[0].aval.shape)


def fold_constants(jaxpr: Jaxpr) -> Jaxpr:
    """Evaluate every equation whose inputs are all scalar literals and whose outputs are
    scalars, replacing its outputs by literals; and every elementwise equation whose operands
    are scalar literals or splats of its output's shape, replacing it by a splat of the
    computed scalar."""
    rename = Renamer()
    splats: dict[Var, Literal] = {}  # var -> the scalar literal it broadcasts
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = rename.eqn(eqn)
        plain = (eqn.invars and not eqn.primitive.multiple_results and not has_effects(eqn))
        if plain and all(isinstance(v, Literal) for v in eqn.invars) and all(
                not v.aval.shape for v in eqn.outvars):
            (var,) = eqn.outvars
            rename.bind(var, Literal(_eval_scalars(eqn, eqn.invars), var.aval))
            continue
        if plain and _is_splat(eqn):
            splats[eqn.outvars[0]] = eqn.invars[0]
        elif plain and pattern_of(eqn.primitive) is Pattern.ELEMENTWISE and any(
                isinstance(v, Var) for v in eqn.invars) and all(
                isinstance(v, Literal) and not v.aval.shape
                or isinstance(v, Var) and v in splats and v.aval.shape == eqn.outvars[0].aval.shape
                for v in eqn.invars):
            (var,) = eqn.outvars
            scalars = [splats[v] if isinstance(v, Var) else v for v in eqn.invars]
            value = _eval_scalars(eqn, scalars)
            lit = Literal(value, ShapedArray((), var.aval.dtype, weak_type=var.aval.weak_type))
            eqn = JaxprEqn(broadcast_in_dim_p, [lit], [var],
                           dict(shape=tuple(var.aval.shape), broadcast_dimensions=()),
                           eqn.source_info)
            splats[var] = lit
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, rename.outvars(jaxpr), eqns)
