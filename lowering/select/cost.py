"""Cost estimates: floating-point operations and bytes moved, per equation and per group."""

from __future__ import annotations

import math
from collections.abc import Callable

from fx.core import Primitive
from fx.jaxpr import JaxprEqn
from fx.lax import linalg
from fx.lowering.fusion.groups import FusionGroup
from fx.lowering.fusion.primitive_rules import Pattern, pattern_of

# Per-primitive flop counts for primitives the generic rules below do not cover (convolutions
# register theirs from fx.lowering.kernels.cpu.conv).
flops_rules: dict[Primitive, Callable[[JaxprEqn], float]] = {}


def _dot_general_flops(eqn: JaxprEqn) -> float:
    (lc, _), _ = eqn.params["dimension_numbers"]
    lhs = eqn.invars[0].aval.shape
    return 2.0 * math.prod(lhs[i] for i in lc) * eqn.outvars[0].aval.size


flops_rules[linalg.dot_general_p] = _dot_general_flops


def eqn_flops(eqn: JaxprEqn) -> float:
    rule = flops_rules.get(eqn.primitive)
    if rule is not None:
        return rule(eqn)
    pat = pattern_of(eqn.primitive)
    if pat is Pattern.ELEMENTWISE:
        return float(eqn.outvars[0].aval.size)
    if pat is Pattern.REDUCTION:
        return float(eqn.invars[0].aval.size)
    return 0.0


def group_flops(g: FusionGroup) -> float:
    return sum(eqn_flops(e) for e in g.eqns)


def output_elements(g: FusionGroup) -> int:
    """Elements the group writes (at least 1): the throughput term of most kernels' costs."""
    return sum(math.prod(v.aval.shape) for v in g.outputs) or 1


def group_bytes(g: FusionGroup) -> int:
    """Bytes read from and written to memory by the group's kernel (its inputs and outputs)."""
    return sum(v.aval.nbytes for v in g.inputs) + sum(v.aval.nbytes for v in g.outputs)
