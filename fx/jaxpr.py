"""The IR: typed variables, equations and jaxprs, their printer and their type checker.

A :class:`Jaxpr` is a straight-line program in A-normal form: ``constvars`` and ``invars`` are
bound on entry, each :class:`JaxprEqn` binds its ``outvars`` to a primitive applied to earlier
variables or :class:`Literal` scalars, and ``outvars`` are returned. Every variable carries a
``ShapedArray``; :func:`check_jaxpr` verifies that each equation's output types are exactly what
its primitive's abstract eval says, so the printed types are a checked static type system.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fx.avals import ShapedArray
from fx.core import Primitive


class Var:
    __slots__ = ("aval", "id")
    _ids = itertools.count()

    def __init__(self, aval: ShapedArray):
        self.aval = aval
        self.id = next(Var._ids)

    def __repr__(self) -> str:
        return f"Var({self.id}:{self.aval.str_short()})"


class DropVar(Var):
    """An output nobody reads (printed as ``_``)."""

    __slots__ = ()


class Literal:
    """A scalar constant inlined into an equation."""

    __slots__ = ("value", "aval")

    def __init__(self, value, aval: ShapedArray):
        self.value = np.asarray(value, dtype=aval.dtype)
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({self.pretty()})"

    def pretty(self) -> str:
        v = self.value.item() if self.value.size == 1 else self.value.tolist()
        return f"{v!r}:{self.aval.str_short()}"


Atom = Var | Literal


@dataclass(frozen=True, eq=False)
class SourceInfo:
    file: str
    line: int
    function: str
    name_stack: str = ""  # the enclosing fx.named_scope names, "outer/inner"

    def __str__(self) -> str:
        return f"{self.file}:{self.line} ({self.function})"


@dataclass(eq=False)
class JaxprEqn:
    primitive: Primitive
    invars: list[Atom]
    outvars: list[Var]
    params: dict[str, Any]
    source_info: SourceInfo | None = None

    def replace(self, **kw) -> JaxprEqn:
        d = dict(
            primitive=self.primitive,
            invars=self.invars,
            outvars=self.outvars,
            params=self.params,
            source_info=self.source_info,
        )
        d.update(kw)
        return JaxprEqn(**d)


@dataclass(eq=False)
class Jaxpr:
    constvars: list[Var]
    invars: list[Var]
    outvars: list[Atom]
    eqns: list[JaxprEqn] = field(default_factory=list)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def __str__(self) -> str:
        return pp_jaxpr(self)

    __repr__ = __str__


@dataclass(eq=False)
class ClosedJaxpr:
    """A jaxpr with values for its constvars."""

    jaxpr: Jaxpr
    consts: list[Any]

    @property
    def in_avals(self) -> list[ShapedArray]:
        return self.jaxpr.in_avals

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.jaxpr.out_avals

    @property
    def eqns(self) -> list[JaxprEqn]:
        return self.jaxpr.eqns

    def __str__(self) -> str:
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__


# Primitives with side effects: dead-code elimination keeps their equations.
effectful_primitives: set[Primitive] = set()


def has_effects(eqn: JaxprEqn) -> bool:
    """Whether ``eqn`` is effectful or runs a jaxpr that contains an effect (a print inside a
    loop body keeps the loop alive)."""
    if eqn.primitive in effectful_primitives:
        return True
    for sub in subjaxprs(eqn):
        inner = sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub
        if any(has_effects(e) for e in inner.eqns):
            return True
    return False


# --- pretty printing ----------------------------------------------------------------------------


class _Namer:
    def __init__(self):
        self.names: dict[Var, str] = {}
        self.count = itertools.count()

    def __call__(self, v: Var | Literal) -> str:
        if isinstance(v, Literal):
            return v.pretty()
        if isinstance(v, DropVar):
            return "_"
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = _name(next(self.count))
        return name


def _name(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    s = ""
    while True:
        s = letters[i % 26] + s
        i //= 26
        if i == 0:
            return s


def pp_jaxpr(jaxpr: Jaxpr, indent: int = 0, namer: _Namer | None = None) -> str:
    namer = namer or _Namer()

    def typed(v):
        return f"{namer(v)}:{v.aval.str_short()}"

    pad = " " * indent
    consts = " ".join(typed(v) for v in jaxpr.constvars)
    args = " ".join(typed(v) for v in jaxpr.invars)
    head = f"{{ lambda {consts}; {args}. let"
    lines = [head]
    for eqn in jaxpr.eqns:
        lhs = " ".join(typed(v) for v in eqn.outvars) or "()"
        params = _pp_params(eqn.params, indent + 4, namer)
        rhs = " ".join(namer(v) for v in eqn.invars)
        line = f"{pad}    {lhs} = {eqn.primitive.name}{params} {rhs}".rstrip()
        names = eqn.source_info.name_stack if eqn.source_info is not None else ""
        lines.append(f"{line}  # {names}" if names else line)
    outs = ", ".join(namer(v) for v in jaxpr.outvars)
    trail = "," if len(jaxpr.outvars) == 1 else ""
    lines.append(f"{pad}  in ({outs}{trail}) }}")
    return "\n".join(lines)


def _pp_params(params: dict, indent: int, namer: _Namer) -> str:
    """``[k=v k=v]`` on one line; with a nested jaxpr, one param per line indented under the
    equation and the closing bracket on a line of its own (JAX's layout)."""
    if not params:
        return ""
    inner_indent = indent + 2
    items = []
    for k in sorted(params):
        v = params[k]
        if isinstance(v, (Jaxpr, ClosedJaxpr)):
            inner = v.jaxpr if isinstance(v, ClosedJaxpr) else v
            items.append(f"{k}={pp_jaxpr(inner, inner_indent, namer)}")
        elif isinstance(v, tuple) and v and all(isinstance(j, ClosedJaxpr) for j in v):
            sub = ", ".join(pp_jaxpr(j.jaxpr, inner_indent, namer) for j in v)
            items.append(f"{k}=({sub})")
        else:
            items.append(f"{k}={_pp_value(v)}")
    if not any("\n" in i for i in items):
        return "[" + " ".join(items) + "]"
    body = "\n".join(" " * inner_indent + i for i in items)
    return "[\n" + body + "\n" + " " * indent + "]"


def _pp_value(v) -> str:
    if isinstance(v, np.dtype):
        return v.name
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return repr(v)


# --- type checking ------------------------------------------------------------------------------


class JaxprTypeError(TypeError):
    pass


def check_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    """Verify that ``jaxpr`` is well typed; raise :class:`JaxprTypeError` otherwise.

    Checks: every variable is bound exactly once; no variable is used before it is bound; every
    equation's output avals equal its primitive's abstract eval on its input avals; literals
    match their avals; nested jaxprs in params check too.
    """
    if isinstance(jaxpr, ClosedJaxpr):
        if len(jaxpr.consts) != len(jaxpr.jaxpr.constvars):
            raise JaxprTypeError(
                f"closed jaxpr has {len(jaxpr.consts)} consts for "
                f"{len(jaxpr.jaxpr.constvars)} constvars"
            )
        jaxpr = jaxpr.jaxpr
    namer = _Namer()
    pp_jaxpr(jaxpr, namer=namer)  # name variables as the printed jaxpr does
    defined: set[Var] = set()

    def bind(v: Var, where: str):
        if isinstance(v, DropVar):
            return
        if v in defined:
            raise JaxprTypeError(f"variable {namer(v)} is bound twice ({where})\n{jaxpr}")
        defined.add(v)

    def read(v: Atom, where: str):
        if isinstance(v, Literal):
            if v.value.shape != v.aval.shape or v.value.dtype != v.aval.dtype:
                raise JaxprTypeError(f"literal {v} does not match its type ({where})")
            return
        if v not in defined:
            raise JaxprTypeError(f"variable {namer(v)} is used unbound ({where})\n{jaxpr}")

    for v in jaxpr.constvars:
        bind(v, "constvars")
    for v in jaxpr.invars:
        bind(v, "invars")
    for i, eqn in enumerate(jaxpr.eqns):
        where = f"equation {i}: {eqn.primitive.name}"
        for v in eqn.invars:
            read(v, where)
        for p in eqn.params.values():
            for sub in p if isinstance(p, tuple) else (p,):
                if isinstance(sub, (Jaxpr, ClosedJaxpr)):
                    check_jaxpr(sub)
        in_avals = [v.aval for v in eqn.invars]
        try:
            expected = eqn.primitive.out_avals(in_avals, eqn.params)
        except (TypeError, ValueError) as e:
            raise JaxprTypeError(f"{where}: abstract eval rejects its inputs: {e}") from e
        got = [v.aval for v in eqn.outvars]
        if len(expected) != len(got) or any(a != b for a, b in zip(expected, got)):
            raise JaxprTypeError(
                f"{where}: outputs typed {[str(a) for a in got]} but the primitive gives "
                f"{[str(a) for a in expected]}"
            )
        for v in eqn.outvars:
            bind(v, where)
    for v in jaxpr.outvars:
        read(v, "outvars")


# --- small structural utilities shared by interpreters and passes -------------------------------


def subjaxprs(eqn: JaxprEqn) -> list[ClosedJaxpr | Jaxpr]:
    out = []
    for p in eqn.params.values():
        for sub in p if isinstance(p, tuple) else (p,):
            if isinstance(sub, (Jaxpr, ClosedJaxpr)):
                out.append(sub)
    return out


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None) -> tuple[Jaxpr, list[bool]]:
    """Drop equations whose outputs are unused (and outputs not in ``used_outputs``).

    Returns the pruned jaxpr and, per invar, whether it is still used. Invars are kept (the
    signature does not change); equations of effectful primitives are always kept.
    """
    if used_outputs is None:
        used_outputs = [True] * len(jaxpr.outvars)
    outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    live: set[Var] = {v for v in outvars if isinstance(v, Var)}
    kept: list[JaxprEqn] = []
    for eqn in reversed(jaxpr.eqns):
        effects = has_effects(eqn)
        if effects or any(v in live for v in eqn.outvars):
            outs = [v if v in live else DropVar(v.aval) for v in eqn.outvars]
            if effects:
                outs = eqn.outvars
            kept.append(eqn.replace(outvars=outs) if outs != eqn.outvars else eqn)
            live.update(v for v in eqn.invars if isinstance(v, Var))
    kept.reverse()
    used_inputs = [v in live for v in jaxpr.invars]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, kept), used_inputs
