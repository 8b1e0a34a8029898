"""Common-subexpression elimination: equal equations on equal inputs compute once."""

from __future__ import annotations

import numpy as np

from fx.core import Primitive
from fx.jaxpr import ClosedJaxpr, Jaxpr, Literal, has_effects, subjaxprs
from fx.lowering.passes.rewrite import Renamer

# Pure primitives whose equal equations still each run: a host callback is called once per
# staged call, as in jax (which never merges them either).
unmerged_primitives: set[Primitive] = set()


def _runs_unmerged(eqn) -> bool:
    """Whether ``eqn`` is an ``unmerged_primitives`` call or runs one in a sub-jaxpr."""
    if eqn.primitive in unmerged_primitives:
        return True
    for sub in subjaxprs(eqn):
        inner = sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub
        if any(_runs_unmerged(e) for e in inner.eqns):
            return True
    return False


def _key(eqn, rename):
    atoms = []
    for v in eqn.invars:
        v = rename(v)
        # A literal by its bit pattern: by value, x * 0.0 and x * -0.0 would merge (and NaN
        # literals never would).
        atoms.append(("lit", v.aval, v.value.tobytes()) if isinstance(v, Literal) else
                     ("var", v))
    try:
        params = tuple(sorted((k, _hashable(p)) for k, p in eqn.params.items()))
        return (eqn.primitive, tuple(atoms), params)
    except TypeError:
        return None  # unhashable params: never merged


def _hashable(p):
    """A key for a parameter: floats by their bits (a padding value of -0.0 is not 0.0),
    tuples element by element (parameters nest a few levels, never with the program)."""
    if isinstance(p, float | np.floating):
        return (type(p), np.asarray(p).tobytes())
    if isinstance(p, tuple):
        return tuple(_hashable(x) for x in p)
    hash(p)
    return p


def eliminate_common_subexpressions(jaxpr: Jaxpr) -> Jaxpr:
    """Replace each equation equal to an earlier one (same primitive, inputs and params) by
    the earlier one's outputs. Effectful equations and ``unmerged_primitives`` are never
    merged."""
    rename = Renamer()
    seen: dict = {}
    eqns = []
    for eqn in jaxpr.eqns:
        key = None if has_effects(eqn) or _runs_unmerged(eqn) else _key(eqn, rename)
        if key is not None and key in seen:
            for old, new in zip(eqn.outvars, seen[key]):
                rename.bind(old, new)
            continue
        eqn = rename.eqn(eqn)
        if key is not None:
            seen[key] = eqn.outvars
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, rename.outvars(jaxpr), eqns)
