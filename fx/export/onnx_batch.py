"""Symbolic batch sizes for ONNX export: three traces of one function walked in step.

Takes the jaxprs of a function traced at three leading sizes of its inputs (the example's
first); returns, for every variable of the first, its shape with each batch-dependent
dimension a :class:`Sym` (``scale * batch + offset``, found from the three values), for every
equation its integer parameters that follow the batch (as ``Sym``), and for every scalar
literal that follows it (a size, or the count a mean divides by) its ``Sym``. Anything else
that differs between the traces (their structure, a size that is not linear in the batch, a
closed-over constant) raises :class:`NotPolymorphic`, whose message says to pass
``dynamic_batch=False``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fx.export.errors import ExportError, describe_eqn
from fx.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var

BATCH = "batch"


@dataclass(frozen=True)
class Sym:
    """A dimension that depends on the batch size: ``scale * batch + offset``."""

    scale: int
    offset: int = 0

    @staticmethod
    def make(scale: int, offset: int) -> Dim:
        return Sym(scale, offset) if scale else offset

    def __add__(self, k: Dim) -> Dim:
        if isinstance(k, Sym):
            return Sym.make(self.scale + k.scale, self.offset + k.offset)
        return Sym(self.scale, self.offset + k)

    __radd__ = __add__

    def __neg__(self) -> Sym:
        return Sym(-self.scale, -self.offset)

    def __sub__(self, k: Dim) -> Dim:
        return self + (-k)

    def __rsub__(self, k: int) -> Dim:
        return -self + k

    def __mul__(self, k: int) -> Dim:
        if isinstance(k, Sym):
            raise ExportError("a size that is the product of two batch-dependent sizes")
        return Sym.make(self.scale * k, self.offset * k)

    __rmul__ = __mul__

    def __str__(self) -> str:
        s = BATCH if self.scale == 1 else f"{self.scale}*{BATCH}"
        return s if not self.offset else f"{s}{self.offset:+d}"


Dim = int | Sym


def dim_product(dims: Sequence[Dim]) -> Dim:
    out: Dim = 1
    for d in dims:
        out = d * out if isinstance(d, Sym) else out * d
    return out


class NotPolymorphic(ExportError):
    pass


DYNAMIC_BATCH_HINT = ("; pass dynamic_batch=False to export a model for the example's batch "
                      "size only")


def _sym(values: Sequence[int], batches: Sequence[int]) -> Dim:
    if all(v == values[0] for v in values):
        return values[0]
    scale, rem = divmod(values[1] - values[0], batches[1] - batches[0])
    offset = values[0] - scale * batches[0]
    if rem or any(v != scale * b + offset for v, b in zip(values, batches)):
        raise NotPolymorphic(f"a size takes the values {list(values)} at batch sizes "
                             f"{list(batches)}, not a linear function of the batch")
    return Sym(scale, offset)


def _sym_param(values: Sequence[Any], batches: Sequence[int]) -> Any:
    first = values[0]
    if isinstance(first, (bool, np.bool_)) or not isinstance(first, (int, np.integer, tuple)):
        raise NotPolymorphic(f"a parameter takes the values {list(values)}")
    if isinstance(first, tuple):
        if any(not isinstance(v, tuple) or len(v) != len(first) for v in values):
            raise NotPolymorphic(f"a parameter takes the values {list(values)}")
        return tuple(_sym_param(col, batches) for col in zip(*values))
    return _sym([int(v) for v in values], batches)


def _same(a, b) -> bool:
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else np.array_equal(a, b)
    except Exception:
        return a is b


@dataclass
class Polymorphism:
    """Symbolic shapes of variables and symbolic parameters of equations."""

    batches: tuple[int, ...] = ()
    shapes: dict[Var, tuple[Dim, ...]] = field(default_factory=dict)
    params: dict[JaxprEqn, dict[str, Any]] = field(default_factory=dict)
    literals: dict[tuple[JaxprEqn, int], Sym] = field(default_factory=dict)

    def shape(self, v) -> tuple[Dim, ...]:
        return self.shapes.get(v, v.aval.shape) if isinstance(v, Var) else v.aval.shape

    def walk(self, jaxprs: Sequence[Jaxpr | ClosedJaxpr]) -> None:
        closed = [j for j in jaxprs if isinstance(j, ClosedJaxpr)]
        jaxprs = [j.jaxpr if isinstance(j, ClosedJaxpr) else j for j in jaxprs]
        for attr in ("constvars", "invars", "outvars", "eqns"):
            if len({len(getattr(j, attr)) for j in jaxprs}) != 1:
                raise NotPolymorphic(f"the traced program has a different number of {attr} "
                                     "at another batch size")
        for vs in itertools.chain(zip(*(j.constvars for j in jaxprs)),
                                  zip(*(j.invars for j in jaxprs))):
            self._bind(vs)
        if len(closed) == len(jaxprs):
            for var, values in zip(jaxprs[0].constvars, zip(*(c.consts for c in closed))):
                arrays = [np.asarray(v) for v in values]
                if any(a.shape != arrays[0].shape or not np.array_equal(a, arrays[0],
                                                                        equal_nan=True)
                       for a in arrays[1:]):
                    raise NotPolymorphic(
                        f"a closed-over constant {var.aval.str_short()} has a different value "
                        "at another batch size (an array computed from the batch size, such "
                        "as NumPy's arange(x.shape[0]))")
        for eqns in zip(*(j.eqns for j in jaxprs)):
            eqn = eqns[0]
            if any(e.primitive is not eqn.primitive for e in eqns):
                raise NotPolymorphic(f"the traced program differs at another batch size "
                                     f"({eqn.primitive.name} vs {eqns[1].primitive.name})")
            try:
                for k, vs in enumerate(zip(*(e.invars for e in eqns))):
                    if isinstance(vs[0], Literal):
                        self._literal(eqn, k, vs)
                for vs in zip(*(e.outvars for e in eqns)):
                    self._bind(vs)
                sym = {}
                for key, p in eqn.params.items():
                    ps = [e.params[key] for e in eqns]
                    subs = p if isinstance(p, tuple) else (p,)
                    if subs and all(isinstance(s, (Jaxpr, ClosedJaxpr)) for s in subs):
                        for group in zip(*(q if isinstance(q, tuple) else (q,) for q in ps)):
                            self.walk(group)
                    elif callable(p):  # custom rules (jvp, fwd, bwd): not exported
                        continue
                    elif not all(_same(p, q) for q in ps[1:]):
                        try:
                            sym[key] = _sym_param(ps, self.batches)
                        except NotPolymorphic as e:
                            raise NotPolymorphic(f"parameter {key}: {e}") from None
                if sym:
                    self.params[eqn] = sym
            except NotPolymorphic as e:
                if e.located:
                    raise
                raise unsupported_poly(eqn, str(e)) from None
        for vs in zip(*(j.outvars for j in jaxprs)):
            self._bind(vs)

    def _literal(self, eqn: JaxprEqn, k: int, vs: Sequence[Any]) -> None:
        """A scalar literal that follows the batch (a size, or the count a mean divides by)
        becomes a :class:`Sym` computed at run time; any other difference is refused."""
        values = [v.value for v in vs]
        if all(np.array_equal(v, values[0], equal_nan=True) for v in values[1:]):
            return
        if values[0].shape == () and all(np.isfinite(v) and v == np.round(v) for v in values):
            try:
                self.literals[(eqn, k)] = _sym([int(v) for v in values], self.batches)
                return
            except NotPolymorphic:
                pass
        raise NotPolymorphic(f"the constant {vs[0].pretty()} takes the values "
                             f"{[v.pretty() for v in vs]} at batch sizes {list(self.batches)}")

    def _bind(self, vs: Sequence[Any]) -> None:
        if isinstance(vs[0], Literal):
            return
        shapes = [v.aval.shape for v in vs]
        if len({len(s) for s in shapes}) != 1:
            raise NotPolymorphic(f"a value has ranks {[len(s) for s in shapes]} at batch sizes "
                                 f"{list(self.batches)}")
        self.shapes[vs[0]] = tuple(_sym(col, self.batches) for col in zip(*shapes))


def unsupported_poly(eqn: JaxprEqn, message: str) -> NotPolymorphic:
    e = NotPolymorphic(f"fx.export.to_onnx(dynamic_batch=True): {describe_eqn(eqn)} is not "
                       f"polymorphic in the batch dimension: {message}{DYNAMIC_BATCH_HINT}")
    e.located = True
    return e
