"""Helpers shared by the ``fx.nn`` modules."""

from __future__ import annotations

from fx.numpy._promote import promote_to_inexact


def inexact(x, name: str):
    """``x`` as an inexact fx array (integers and bools become the default float), with errors
    naming ``fx.nn.<name>``."""
    (x,) = promote_to_inexact(x, name=f"fx.nn.{name}")
    return x
