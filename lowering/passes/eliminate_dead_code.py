"""Dead-code elimination: drop equations whose results no output depends on."""

from __future__ import annotations

from fx.jaxpr import Jaxpr, dce_jaxpr


def eliminate_dead_code(jaxpr: Jaxpr) -> Jaxpr:
    """``jaxpr`` without unused equations (effectful ones are kept); the signature is kept."""
    pruned, _ = dce_jaxpr(jaxpr)
    return pruned
