"""What a fused kernel recomputes instead of storing.

``is_cheap`` and ``recomputable`` say which small groups every consumer recomputes: copies of
their equations join each consumer's group, and the group itself is kept only if something
still reads it from memory.
"""

from __future__ import annotations

from fx.jaxpr import JaxprEqn, Literal
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.fusion.primitive_rules import Pattern, cheap_prims, pattern_of, rereads

# The most equations of a group every consumer recomputes.
MAX_RECOMPUTE = 8


def is_cheap(eqn: JaxprEqn) -> bool:
    """Broadcasts of scalars and iotas: recomputing them beats reading them from memory."""
    if pattern_of(eqn.primitive) is not Pattern.BROADCAST:
        return False
    return all(isinstance(v, Literal) or not v.aval.shape for v in eqn.invars)


def recomputable(g: FusionGroup) -> bool:
    """A small elementwise group of cheap operations: each consumer recomputes it."""
    return g.kind is GroupKind.ELEMENTWISE and len(g.eqns) <= MAX_RECOMPUTE and all(
        e.primitive in cheap_prims or (pattern_of(e.primitive) in (Pattern.BROADCAST,
                                                                     Pattern.INJECTIVE)
                                       and not rereads(e))
        for e in g.eqns
    )
