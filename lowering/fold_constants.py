"""Constant folding: equations on literal scalars are computed at compile time."""

from __future__ import annotations

import numpy as np

from fx.array import Array
from fx.core import EVAL_TRACE, set_current_trace
from fx.jaxpr import Jaxpr, Literal, has_effects
from fx.lowering.rewrite import Renamer


def fold_constants(jaxpr: Jaxpr) -> Jaxpr:
    """Evaluate every equation whose inputs are all scalar literals and whose outputs are
    scalars, replacing its outputs by literals."""
    rename = Renamer()
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = rename.eqn(eqn)
        foldable = (
            eqn.invars
            and all(isinstance(v, Literal) for v in eqn.invars)
            and all(not v.aval.shape for v in eqn.outvars)
            and not eqn.primitive.multiple_results
            and not has_effects(eqn)
        )
        if foldable:
            args = [Array(v.value, v.aval.weak_type) for v in eqn.invars]
            with set_current_trace(EVAL_TRACE):
                out = eqn.primitive.bind(*args, **eqn.params)
            (var,) = eqn.outvars
            rename.bind(var, Literal(np.asarray(out), var.aval))
            continue
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, rename.outvars(jaxpr), eqns)
