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
  booleans with a decided operand, and a ``select`` on a decided condition is its branch;
  index arithmetic of one value is that constant (``x + 0`` is ``x``).

A sequential loop around another loop whose body tests its variable alone (a pad's border:
``i - 2 >= 0``, ``i - 2 < 14``) is split where those tests change, into consecutive loops
over the pieces of its range (border, interior, border); in each piece the tests are decided,
so the interior computes its values without selects or clamps, a border only the fill, and
the values a piece no longer uses are dropped.

Each rewrite gives the same value at every point of the ranges, and the pieces run the same
iterations in the same order, so the kernel computes the same results. A range that leaves
int64 is unknown (the C arithmetic would wrap), as are the ranges of loads, casts, mutable
locals (``Decl``/``Assign``) and anything else not listed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from fx import dtypes
from fx.lowering.codegen import kernel_ir as ir

Range = tuple[int, int]  # inclusive bounds

_I64 = (-(2**63), 2**63 - 1)
_COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")
_IDENTITIES = {"add": ir.iadd, "sub": ir.isub, "mul": ir.imul}


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
        self.copies = 1  # copies of the body being folded that splitting has made

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
        if np.dtype(e.dtype) == ir.INDEX:
            if e.op in _IDENTITIES:  # x + 0, x * 1, x * 0, x - 0
                e = _IDENTITIES[e.op](*args)
                if not isinstance(e, ir.Op):
                    return e
            r = self.range(e)
            if r is not None and r[0] == r[1]:  # one value: constant arithmetic
                return ir.const_index(r[0])
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
                pieces = self._split(s)
                copies = self.copies
                self.copies *= len(pieces)
                if len(pieces) == 1:
                    out.append(self._loop(s))
                else:  # a piece's folding leaves values it no longer uses
                    out += [_without_dead(self._loop(piece)) for piece in pieces]
                self.copies = copies
                continue
            out.append(s)
        return tuple(out)

    def _loop(self, s: ir.Loop) -> ir.Loop:
        # Every target runs the body with the variable in [0, extent - 1] (a thread index
        # past the extent is guarded off); what the body binds stays inside it.
        outer = self.env
        self.env = {**outer, s.var: (0, s.extent - 1)}
        inner = self.body(s.body)
        self.env = outer
        return s if _same(inner, s.body) else dataclasses.replace(s, body=inner)

    def _split(self, s: ir.Loop) -> list[ir.Loop]:
        """``s`` as consecutive loops over pieces of its range, each where the comparisons of
        its variable alone that the body makes are decided (a pad's border and interior),
        or ``[s]``. A piece from ``a`` binds the variable as ``Let(var, j + a)`` over its own
        index ``j``; the iterations run in the same order. Only sequential loops around
        another loop are split: a test of an outer variable is one value for the whole
        inner loop, and a select on it keeps GCC from vectorizing that loop, where a test
        of the innermost variable is a vector mask it handles (and the invariants
        ``hoist_invariants`` moves out of an innermost loop would meet their copies in the
        scope around split pieces). At most ``MAX_PIECES`` pieces, while the body's copies
        in the kernel stay within ``MAX_COPIES`` and its statements within
        ``MAX_SPLIT_STATEMENTS``."""
        if (s.parallel or s.cooperative or s.lanes != 1 or s.vector != 1 or s.extent < 2
                or not any(isinstance(t, ir.Loop) for t in s.body)
                or _statements(s.body) > MAX_SPLIT_STATEMENTS):
            return [s]
        cuts = set()
        for c in _comparisons_of(s.body, s.var):
            cut = _flip(c, s.var, s.extent)
            if cut is not None:
                cuts.add(cut)
        pieces = len(cuts) + 1
        if not cuts or pieces > MAX_PIECES or self.copies * pieces > MAX_COPIES:
            return [s]
        bounds = [0, *sorted(cuts), s.extent]
        out = [ir.Loop(s.var, bounds[1], s.body)]
        for a, b in zip(bounds[1:], bounds[2:]):
            j = f"{s.var}_{a}"
            start = ir.Let(s.var, ir.iadd(ir.Sym(j, ir.INDEX), ir.const_index(a)))
            out.append(ir.Loop(j, b - a, (start, *s.body)))
        return out


def _without_dead(loop: ir.Loop) -> ir.Loop:
    """``loop`` without the values its nest computes and never uses: a ``Let`` nothing reads,
    a local (``Decl``) only its own assignments read. Dropping them changes no result (they
    load and compute, nothing else)."""
    body = tuple(_without_dead(s) if isinstance(s, ir.Loop) else s for s in loop.body)
    while True:
        reads: dict[str, int] = {}  # name -> reads by statements other than its assignments
        for st in _walk(body):
            names = set()
            if isinstance(st, ir.Combine):
                names = {st.name, st.index}
            elif isinstance(st, ir.Loop):
                names = {a for a, _ in st.reductions}
            for e in _own_exprs(st):
                names |= _symbols(e) - ({st.name} if isinstance(st, ir.Assign) else set())
            for n in names:
                reads[n] = reads.get(n, 0) + 1
        dead = {st.name for st in body if isinstance(st, (ir.Let, ir.Decl))
                and not reads.get(st.name)}
        if not dead:
            break
        body = _dropped(body, dead)
    return loop if _same(body, loop.body) else dataclasses.replace(loop, body=body)


def _dropped(body: tuple, dead: set) -> tuple:
    """``body`` without the lets and locals named in ``dead`` and the assignments to them."""
    out = []
    for st in body:
        if isinstance(st, (ir.Let, ir.Decl, ir.Assign)) and st.name in dead:
            continue
        if isinstance(st, ir.Loop):
            st = dataclasses.replace(st, body=_dropped(st.body, dead))
        out.append(st)
    return tuple(out)


def _walk(body: tuple):
    """The statements of ``body``, nested loops' included."""
    stack = list(body)
    while stack:
        st = stack.pop()
        yield st
        if isinstance(st, ir.Loop):
            stack.extend(st.body)


def _own_exprs(st: ir.Stmt) -> list:
    return [e for name in ("value", "init", "index")
            if isinstance(e := getattr(st, name, None), ir.Expr)]


# Limits on splitting a loop (see _Folder._split): pieces of one loop, copies of a body in
# the kernel (a pad of two dimensions makes 3 x 3), statements of a loop body split.
MAX_PIECES = 3
MAX_COPIES = 9
MAX_SPLIT_STATEMENTS = 400


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _exprs(body: tuple):
    """The expressions of statements, nested loops' included."""
    for st in _walk(body):
        yield from _own_exprs(st)


def _statements(body: tuple) -> int:
    n, stack = 0, list(body)
    while stack:
        s = stack.pop()
        n += 1
        if isinstance(s, ir.Loop):
            stack.extend(s.body)
    return n


def _comparisons_of(body: tuple, var: str) -> set:
    """The integer comparisons in ``body`` whose only symbol is ``var``."""
    found, stack = set(), list(_exprs(body))
    while stack:
        e = stack.pop()
        if isinstance(e, ir.Load):
            stack.append(e.index)
        elif isinstance(e, ir.Op):
            if e.op in _COMPARISONS and _int(e.args[0].dtype) and _symbols(e) == {var}:
                found.add(e)
            else:
                stack.extend(e.args)
    return found


def _symbols(e: ir.Expr) -> set:
    out, stack = set(), [e]
    while stack:
        e = stack.pop()
        if isinstance(e, ir.Sym):
            out.add(e.name)
        elif isinstance(e, ir.Load):
            stack.append(e.index)
        elif isinstance(e, ir.Op):
            stack.extend(e.args)
    return out


def _flip(c: ir.Op, var: str, extent: int) -> int | None:
    """Where comparison ``c`` of ``var`` alone changes once over ``[0, extent)``, as a bounds
    test does: the first value at which it has its value at ``extent - 1``, found by
    bisection; None where it has one value at both ends, is not decided at a point probed,
    or is not decided on either side of the cut."""
    def at(x):
        folded = fold_expr(c, {var: (x, x)})
        return bool(folded.value) if isinstance(folded, ir.Const) else None

    first, last = at(0), at(extent - 1)
    if first is None or last is None or first == last:
        return None
    lo, hi = 0, extent - 1  # at(lo) == first, at(hi) == last
    while hi - lo > 1:
        mid = (lo + hi) // 2
        v = at(mid)
        if v is None:
            return None
        lo, hi = (mid, hi) if v == first else (lo, mid)
    # A cut only where it decides the comparison on both sides (not one that changes
    # several times, as a test of a remainder does).
    sides = (fold_expr(c, {var: (0, hi - 1)}), fold_expr(c, {var: (hi, extent - 1)}))
    return hi if all(isinstance(side, ir.Const) for side in sides) else None


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
    return k if _same(body, k.body) else dataclasses.replace(k, body=body)
