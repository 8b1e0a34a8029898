"""Rebuilding jaxprs: renaming variables while copying equations, shared by the passes."""

from __future__ import annotations

from fx.jaxpr import Atom, Jaxpr, JaxprEqn, Literal, Var


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
