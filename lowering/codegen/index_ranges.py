"""Index ranges: the values a kernel's integer arithmetic can take, known from its loops'
extents, and the kernel with what those ranges decide folded away (:func:`fold_ranges`).

Index maps build their arithmetic without knowing where the index they are given lies: a pad
or a concatenation clamps an index into its operand and tests whether it is inside, also where
the index is a loop variable whose extent already keeps it there. A clamp on the innermost
loop's variable makes its reads look like gathers to a C compiler, which then does not
vectorize them as contiguous loads. Here every loop variable ranges over ``[0, extent - 1]``,
a ``Let`` over the range of its value, and an expression's range follows by interval
arithmetic (C's: division and remainder by a positive constant truncate). With them:

- ``max(a, b)`` / ``min(a, b)`` of integers is the operand the ranges say it always is;
- a comparison of integers the ranges decide is that constant, and so is ``and`` / ``or`` of
  booleans with a decided operand, and a ``select`` on a decided condition is its branch.

Each rewrite gives the same value at every point of the ranges, so the kernel computes the
same results. A range that leaves int64 is unknown (the C arithmetic would wrap), as are the
ranges of loads, casts, mutable locals (``Decl``/``Assign``) and anything else not listed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from fx import dtypes
from fx.lowering.codegen import kernel_ir as ir

Range = tuple[int, int]  # inclusive bounds

_I64 = (-(2**63), 2**63 - 1)
_COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")


def _fits(lo: int, hi: int) -> Range | None:
    return (lo, hi) if _I64[0] <= lo and hi <= _I64[1] else None


def _tdiv(a: int, c: int) -> int:
    """C's division by a positive constant: truncated toward zero."""
    return a // c if a >= 0 else -((-a) // c)


def _rem_range(lo: int, hi: int, c: int) -> Range:
    """The range of C's ``x % c`` (its sign is the dividend's) for ``x`` in ``[lo, hi]``."""
    if lo >= 0 and lo // c == hi // c:  # one period: no wrap inside
        return lo % c, hi % c
    if lo >= 0:
        return 0, min(c - 1, hi)
    if hi <= 0:
        return max(-(c - 1), lo), 0
    return max(-(c - 1), lo), min(c - 1, hi)


def _decide(op: str, a: Range, b: Range) -> bool | None:
    """Whether ``a op b`` holds for every pair of values in the ranges (True), for none
    (False), or depends on the values (None)."""
    (alo, ahi), (blo, bhi) = a, b
    if op == "lt":
        return True if ahi < blo else False if alo >= bhi else None
    if op == "le":
        return True if ahi <= blo else False if alo > bhi else None
    if op == "gt":
        return _decide("lt", b, a)
    if op == "ge":
        return _decide("le", b, a)
    disjoint = ahi < blo or bhi < alo
    same = alo == ahi == blo == bhi
    if op == "eq":
        return True if same else False if disjoint else None
    return False if same else True if disjoint else None  # ne


def _int(dt) -> bool:
    dt = np.dtype(dt)
    return dtypes.is_int(dt) and dt != dtypes.bool_


class _Folder:
    """Folds expressions under the ranges of the symbols in scope (``env``)."""

    def __init__(self):
        self.env: dict[str, Range] = {}

    def range(self, e: ir.Expr) -> Range | None:
        """The range of an integer or boolean expression (booleans as 0/1), None if unknown."""
        if isinstance(e, ir.Const):
            if np.dtype(e.dtype) == dtypes.bool_:
                return (int(bool(e.value)),) * 2
            return (int(e.value),) * 2 if _int(e.dtype) else None
        if isinstance(e, ir.Sym):
            return self.env.get(e.name)
        if not isinstance(e, ir.Op):
            return None
        if e.op in _COMPARISONS or (np.dtype(e.dtype) == dtypes.bool_
                                    and e.op in ("and", "or")):
            return (0, 1)
        if np.dtype(e.dtype) != ir.INDEX:
            return None
        rs = [self.range(a) for a in e.args]
        if e.op == "select":
            return None if None in rs[1:] else (min(rs[1][0], rs[2][0]), max(rs[1][1], rs[2][1]))
        if None in rs:
            return None
        if e.op in ("div", "rem"):
            c = e.args[1]
            if not (isinstance(c, ir.Const) and int(c.value) > 0):
                return None
            (lo, hi), c = rs[0], int(c.value)
            return (_tdiv(lo, c), _tdiv(hi, c)) if e.op == "div" else _rem_range(lo, hi, c)
        if len(rs) != 2:
            return None
        (alo, ahi), (blo, bhi) = rs
        if e.op == "add":
            return _fits(alo + blo, ahi + bhi)
        if e.op == "sub":
            return _fits(alo - bhi, ahi - blo)
        if e.op == "mul":
            ps = (alo * blo, alo * bhi, ahi * blo, ahi * bhi)
            return _fits(min(ps), max(ps))
        if e.op == "max":
            return max(alo, blo), max(ahi, bhi)
        if e.op == "min":
            return min(alo, blo), min(ahi, bhi)
        return None

    def fold(self, e: ir.Expr) -> ir.Expr:
        """``e`` with what the ranges decide folded (bottom-up)."""
        if isinstance(e, ir.Load):
            index = self.fold(e.index)
            return e if index is e.index else dataclasses.replace(e, index=index)
        if not isinstance(e, ir.Op):
            return e
        args = tuple(self.fold(a) for a in e.args)
        if any(x is not y for x, y in zip(args, e.args)):
            e = ir.Op(e.op, args, e.dtype)
        return self._rewrite(e)

    def _rewrite(self, e: ir.Op) -> ir.Expr:
        args = e.args
        if e.op in ("max", "min") and _int(e.dtype):
            ra, rb = self.range(args[0]), self.range(args[1])
            if ra is not None and rb is not None:
                first_wins = ra[0] >= rb[1] if e.op == "max" else ra[1] <= rb[0]
                second_wins = rb[0] >= ra[1] if e.op == "max" else rb[1] <= ra[0]
                if first_wins:
                    return args[0]
                if second_wins:
                    return args[1]
        elif e.op in _COMPARISONS and _int(args[0].dtype):
            ra, rb = self.range(args[0]), self.range(args[1])
            # (C compares a signed operand with an unsigned 64-bit one as unsigned: decided
            # here only where no value is negative or both operands are signed.)
            signed = all(np.dtype(a.dtype).kind == "i" for a in args)
            if ra is not None and rb is not None and (signed or min(ra[0], rb[0]) >= 0):
                known = _decide(e.op, ra, rb)
                if known is not None:
                    return ir.Const(known, e.dtype)
        elif e.op in ("and", "or") and np.dtype(e.dtype) == dtypes.bool_:
            absorbing = e.op == "or"  # the value that decides the result alone
            for k, a in enumerate(args):
                known = self._known_bool(a)
                if known is not None:
                    return ir.Const(absorbing, e.dtype) if known == absorbing else args[1 - k]
        elif e.op == "select":
            known = self._known_bool(args[0])
            if known is not None:
                return args[1] if known else args[2]
        return e

    def _known_bool(self, e: ir.Expr) -> bool | None:
        """The value of a boolean the ranges decide (a constant or a local bound to one)."""
        if np.dtype(e.dtype) != dtypes.bool_:
            return None
        r = self.range(e)
        return bool(r[0]) if r is not None and r[0] == r[1] else None

    def body(self, stmts: tuple) -> tuple:
        """The statements folded; the ``Let`` s among them bind ranges for those after."""
        out = []
        for s in stmts:
            if isinstance(s, ir.Let):
                value = self.fold(s.value)
                r = self.range(value)
                if r is None:
                    self.env.pop(s.name, None)
                else:
                    self.env[s.name] = r
                s = s if value is s.value else dataclasses.replace(s, value=value)
            elif isinstance(s, ir.Decl):
                self.env.pop(s.name, None)  # mutable: no range
                init = self.fold(s.init)
                s = s if init is s.init else dataclasses.replace(s, init=init)
            elif isinstance(s, ir.Assign):
                value = self.fold(s.value)
                s = s if value is s.value else dataclasses.replace(s, value=value)
            elif isinstance(s, ir.Store):
                index, value = self.fold(s.index), self.fold(s.value)
                if index is not s.index or value is not s.value:
                    s = dataclasses.replace(s, index=index, value=value)
            elif isinstance(s, ir.Loop) and s.extent >= 1:
                # Every target runs the body with the variable in [0, extent - 1] (a thread
                # index past the extent is guarded off); what the body binds stays inside it.
                outer = self.env
                self.env = {**outer, s.var: (0, s.extent - 1)}
                inner = self.body(s.body)
                self.env = outer
                if any(x is not y for x, y in zip(inner, s.body)):
                    s = dataclasses.replace(s, body=inner)
            out.append(s)
        return tuple(out)


def index_range(e: ir.Expr, ranges: dict[str, Range]) -> Range | None:
    """The inclusive range of an integer (or boolean, as 0/1) expression whose symbols lie in
    ``ranges``; None where it is not known."""
    folder = _Folder()
    folder.env = dict(ranges)
    return folder.range(e)


def fold_expr(e: ir.Expr, ranges: dict[str, Range]) -> ir.Expr:
    """``e`` with what ``ranges`` (of its symbols) decide folded: the same value wherever
    the symbols lie in their ranges."""
    folder = _Folder()
    folder.env = dict(ranges)
    return folder.fold(e)


def fold_ranges(k: ir.Kernel) -> ir.Kernel:
    """``k`` with the clamps, comparisons and selects its loops' extents decide folded away
    (see the module docstring): the same values at every iteration."""
    body = _Folder().body(k.body)
    return k if all(x is y for x, y in zip(body, k.body)) else dataclasses.replace(k, body=body)
