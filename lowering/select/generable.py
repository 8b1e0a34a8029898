"""Which fusion groups the generated kernels handle: every value of a kernel dtype
(:data:`KERNEL_DTYPES`), every equation with a kernel spelling, complex values only in the
arithmetic the dialects spell. The generated implementations (``op_info``'s fused kernels, the
kernel families under ``fx.lowering.kernels``) apply to a group only where :func:`generable`
holds; ``fallbacks`` names the limit a refused group meets.
"""

from __future__ import annotations

from fx import dtypes
from fx.jaxpr import JaxprEqn
from fx.lowering.fusion import primitive_rules
from fx.lowering.fusion.groups import FusionGroup, GroupKind

# The dtypes generated kernels handle, for every value of the group (operands, results and
# intermediates). Groups touching others (float8) run as NumPy steps. Complex values are
# computed by elementwise kernels only, and only by the arithmetic the dialects spell
# (primitive_rules.complex_prims); data movement (transposes, slices, pads, ...) of them is free.
KERNEL_DTYPES = frozenset([dtypes.bool_, *dtypes.INTEGER, dtypes.float16, dtypes.bfloat16,
                           dtypes.float32, dtypes.float64, *dtypes.COMPLEX])


def generable(g: FusionGroup) -> bool:
    """Every value of the group has a kernel dtype and every equation a kernel spelling."""
    return all(v.aval.dtype in KERNEL_DTYPES for e in g.eqns for v in (*e.invars, *e.outvars)
               if hasattr(v, "aval")) and not any(
        primitive_rules.unsupported[e.primitive](e) for e in g.eqns
        if e.primitive in primitive_rules.unsupported) and not any(
        complex_unsupported(g, e) for e in g.eqns)


def complex_unsupported(g: FusionGroup, eqn: JaxprEqn) -> bool:
    """``eqn`` computes on complex values in a way the kernels of ``g``'s kind do not spell."""
    if not primitive_rules.touches_complex(eqn):
        return False
    if g.kind is not GroupKind.ELEMENTWISE:
        return True
    return (primitive_rules.pattern_of(eqn.primitive) is primitive_rules.Pattern.ELEMENTWISE
            and eqn.primitive not in primitive_rules.complex_prims)
