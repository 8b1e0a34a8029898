"""Rebuilding jaxprs: renaming variables while copying equations, shared by the passes."""

from __future__ import annotations

from fx.core import Tracer
from fx.jaxpr import Atom, Jaxpr, JaxprEqn, Literal, Var


def known_constants(jaxpr: Jaxpr, consts: list, hoisted: tuple = ()) -> dict:
    """For a constant pass (``backends.Backend.constant_passes``): the leading invars of
    ``jaxpr`` bound to ``consts``, then to the jit's ``hoisted`` arrays, mapped to their
    values where those are concrete (not a tracer of an enclosing transformation)."""
    n = len(consts)
    known = {v: c for v, c in zip(jaxpr.invars[:n], consts) if not isinstance(c, Tracer)}
    known.update((v, c) for v, c in zip(jaxpr.invars[n:], hoisted)
                 if not isinstance(c, Tracer))
    return known


def with_constants(jaxpr: Jaxpr, consts: list, eqns: list, new_vars: list,
                   new_values: list) -> tuple[Jaxpr, list]:
    """A constant pass's result: ``jaxpr`` with ``eqns``, and the constants ``new_vars``
    (bound to ``new_values``) after ``consts`` (before the hoisted arrays and arguments)."""
    n = len(consts)
    invars = [*jaxpr.invars[:n], *new_vars, *jaxpr.invars[n:]]
    return Jaxpr(jaxpr.constvars, invars, jaxpr.outvars, eqns), [*consts, *new_values]


class Renamer:
    """Maps old variables to their replacements (a variable or a literal)."""

    def __init__(self):
        self.env: dict[Var, Atom] = {}

    def __call__(self, v: Atom) -> Atom:
        if isinstance(v, Literal):
            return v
        return self.env.get(v, v)

    def bind(self, old: Var, new: Atom) -> None:
        self.env[old] = new

    def eqn(self, eqn: JaxprEqn) -> JaxprEqn:
        invars = [self(v) for v in eqn.invars]
        if all(a is b for a, b in zip(invars, eqn.invars)):
            return eqn
        return eqn.replace(invars=invars)

    def outvars(self, jaxpr: Jaxpr) -> list[Atom]:
        return [self(v) for v in jaxpr.outvars]
