"""Argument handling shared by the ``fx.scipy.stats`` distributions: jax's
``promote_args_inexact`` (one inexact dtype, integers and bools become the default float,
one broadcast shape) and a typed constant like jax's ``lax._const``."""

from __future__ import annotations

import fx.numpy as fnp
from fx.core import get_aval
from fx.numpy._promote import ensure_arraylike, promote_and_broadcast, promote_to_inexact


def promote(name: str, *args, equal_rank_error: type[Exception] = TypeError) -> list:
    """The arguments in one inexact dtype, broadcast to one shape (jax's promote_args_inexact).
    Shapes of one rank that do not broadcast raise ``equal_rank_error``: jax's ``TypeError``
    from the lax primitive, or ``ValueError`` where jax broadcasts first."""
    ensure_arraylike(f"fx.scipy.stats.{name}", *args)
    return promote_and_broadcast(*args, name=f"fx.scipy.stats.{name}", inexact=True,
                                 equal_rank_error=equal_rank_error)


def promote_dtypes_inexact(name: str, *args) -> list:
    """The arguments in one inexact dtype, shapes untouched (jax's promote_dtypes_inexact)."""
    ensure_arraylike(f"fx.scipy.stats.{name}", *args)
    return promote_to_inexact(*args, name=f"fx.scipy.stats.{name}")


def const(like, value):
    """``value`` as a rank-0 array of ``like``'s dtype (not weakly typed)."""
    return fnp.array(value, dtype=get_aval(like).dtype)
