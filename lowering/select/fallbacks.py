"""Fallbacks: why a group runs as the primitives' NumPy impls, and whether fx meant it to.

Operator selection (``op_info.select``) can always run a group op by op with NumPy (the
``numpy.*`` implementations). :func:`mark` takes a group's choice and, where that choice is a
fallback, returns it with a :class:`Fallback` saying why; ``Compilation.as_text()`` (and its
``"selection"`` stage) prints it under the step. A fallback is:

- the op-by-op NumPy implementation chosen because it was the only one that applied (where it
  won on cost against a library call, that is a choice, and its reason shows the costs), or
- any choice that differs from the one a C compiler would have allowed.

Expected fallbacks: fx runs these with NumPy by design, and ``FX_STRICT`` lets them through.

- ``HOST_OPERATION``: a group of its own (sort, scatter, random bits, callbacks, ...) with no
  kernel family or library call on the backend.
- ``KERNEL_DTYPE``: a value of a dtype generated kernels do not handle
  (``generable.KERNEL_DTYPES``: float8, ...).
- ``KERNEL_LIMIT``: an equation the kernels do not spell although its primitive has a scalar
  rule (``primitive_rules.unsupported``: a half-precision bitcast), or complex arithmetic beyond
  ``primitive_rules.complex_prims`` (exp of a complex value, complex reductions).

Unexpected fallbacks: with ``FX_STRICT=1`` in the environment (read at each compile) they
raise :class:`FallbackError`, naming the program, the group and the reason.

- ``NO_COMPILER``: no C compiler, where one would have given the group a generated kernel
  (jit also warns once per process, naming what to install: ``warn_no_compiler``).
- ``NO_IMPLEMENTATION``: none of the above, yet nothing but NumPy op by op applies (a matrix
  product no GEMM implementation of the backend handles, a kernel family that refused a group
  it should compile).
"""

from __future__ import annotations

import dataclasses
import enum
import os
import warnings
from dataclasses import dataclass

from fx import dtypes
from fx.lowering.fusion import primitive_rules
from fx.lowering.fusion.groups import FusionGroup, GroupKind
from fx.lowering.select import op_info
from fx.lowering.select.generable import KERNEL_DTYPES, complex_unsupported
from fx.lowering.select.op_info import Choice

INSTALL_COMPILER = "install gcc or clang (e.g. apt-get install gcc), or set CC to a C compiler"


class Why(enum.Enum):
    HOST_OPERATION = "host operation"
    KERNEL_DTYPE = "dtype without kernels"
    KERNEL_LIMIT = "equation without a kernel"
    NO_COMPILER = "no C compiler"
    NO_IMPLEMENTATION = "no implementation"

    @property
    def expected(self) -> bool:
        return self in (Why.HOST_OPERATION, Why.KERNEL_DTYPE, Why.KERNEL_LIMIT)


@dataclass(frozen=True)
class Fallback:
    """Why a group runs as NumPy: the kind of reason and the details (which primitive, dtype,
    shape; or which implementation a compiler would have allowed)."""

    why: Why
    detail: str

    @property
    def expected(self) -> bool:
        return self.why.expected

    def __str__(self) -> str:
        kind = "expected" if self.expected else "UNEXPECTED"
        return f"runs as NumPy ({kind}, {self.why.value}): {self.detail}"


class FallbackError(RuntimeError):
    """An unexpected fallback under ``FX_STRICT=1``."""


def strict() -> bool:
    """Whether ``FX_STRICT`` asks for unexpected fallbacks to be errors."""
    return os.environ.get("FX_STRICT", "").strip() not in ("", "0")


def mark(g: FusionGroup, choice: Choice, backend, have_compiler: bool, program: str) -> Choice:
    """``choice`` with its ``fallback`` set where it is one (see the module docstring); under
    ``FX_STRICT=1`` an unexpected fallback raises :class:`FallbackError`."""
    fallback = explain(g, choice, backend, have_compiler)
    if fallback is None:
        return choice
    if fallback.why is Why.NO_COMPILER:
        warn_no_compiler()
    if strict() and not fallback.expected:
        remedy = (INSTALL_COMPILER if fallback.why is Why.NO_COMPILER else
                  "give the group's operations an implementation for the backend")
        raise FallbackError(
            f"fx: FX_STRICT=1 and group {g.label()} of program '{program}' on {backend} "
            f"{fallback}. To allow it, unset FX_STRICT; to fix it, {remedy}.")
    return dataclasses.replace(choice, fallback=fallback)


def explain(g: FusionGroup, choice: Choice, backend, have_compiler: bool) -> Fallback | None:
    """Why ``g`` runs as NumPy under ``choice``, or None where ``choice`` is not a fallback."""
    if not have_compiler:
        best = op_info.select(g, backend, True).impl
        if best is not choice.impl:
            return Fallback(Why.NO_COMPILER, f"no C compiler, so not {best.name} ({best.note})")
    if not choice.impl.op_by_op or any(
            not i.op_by_op for i in op_info.applicable(g, backend, have_compiler)):
        return None
    if g.kind is GroupKind.OPAQUE:
        names = ", ".join(dict.fromkeys(e.primitive.name for e in g.eqns))
        return Fallback(Why.HOST_OPERATION, f"{names} has no kernel or library call on "
                                            f"{backend}")
    if g.kind in (GroupKind.ELEMENTWISE, GroupKind.REDUCTION):
        for eqn in g.eqns:
            limit = _kernel_limit(g, eqn)
            if limit is not None:
                return limit
    avals = ", ".join(v.aval.str_short() for e in g.eqns[:1] for v in e.invars
                      if hasattr(v, "aval"))
    return Fallback(Why.NO_IMPLEMENTATION, f"no {backend} implementation of {g.label()} "
                                           f"applies (first operands: {avals or '-'})")


def _kernel_limit(g: FusionGroup, eqn) -> Fallback | None:
    """The generated kernels' documented limit ``eqn`` meets, if any (``generable.generable``
    refuses the group for it)."""
    name = eqn.primitive.name
    for v in (*eqn.invars, *eqn.outvars):
        dt = getattr(getattr(v, "aval", None), "dtype", None)
        if dt is not None and dt not in KERNEL_DTYPES:
            return Fallback(Why.KERNEL_DTYPE, f"{name} on {v.aval.str_short()}: generated "
                                              f"kernels do not handle {dt}")
    test = primitive_rules.unsupported.get(eqn.primitive)
    if test is not None and test(eqn):
        shapes = ", ".join(v.aval.str_short() for v in (*eqn.invars, *eqn.outvars)
                           if hasattr(v, "aval"))
        return Fallback(Why.KERNEL_LIMIT, f"{name} on {shapes} has no kernel spelling")
    if complex_unsupported(g, eqn):
        where = "outside an elementwise group" if g.kind is not GroupKind.ELEMENTWISE else \
            "beyond the complex arithmetic kernels spell"
        ds = ", ".join(sorted({str(v.aval.dtype) for v in (*eqn.invars, *eqn.outvars)
                               if hasattr(v, "aval") and dtypes.is_complex(v.aval.dtype)}))
        return Fallback(Why.KERNEL_LIMIT, f"{name} on {ds} values, {where}")
    return None


_warned_no_compiler = False


def warn_no_compiler() -> None:
    """Warn, once per process, that jit runs generated kernels' groups as NumPy for want of a
    C compiler."""
    global _warned_no_compiler
    if _warned_no_compiler:
        return
    _warned_no_compiler = True
    warnings.warn(f"fx: no C compiler found, so jit runs the groups it would compile as "
                  f"NumPy, op by op (slower). To compile them, {INSTALL_COMPILER}.",
                  RuntimeWarning, stacklevel=2)
