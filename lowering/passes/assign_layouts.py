"""Layout assignment: each array value gets the axis order it is stored in, chosen for the whole
program so that transposes cancel instead of running.

``lower_convolutions`` computes every convolution channels-last and brackets it with transposes
from and back to the user's layout (NCHW, OIHW), so a network written channels-first moves its
activations out of and back into NCHW around every convolution, and its gradient does the same.
This pass stores values in a permuted order where that removes transposes: a value ``v`` is
held as ``transpose(v, Q)`` for its layout ``Q`` (the identity: the user's layout).

Protocol:
- Values joined by an equation that works the same in any axis order (elementwise operations,
  ``broadcast_in_dim`` between equal ranks, ``reduce_window_*``, ``select_and_scatter_add``,
  ``select_and_gather_add``, ``pad``, ``rev``, ``slice``, ``concatenate``) share one layout: a
  *component*. Its equations are rewritten with their axis parameters permuted. A window
  operation keeps the order of its window axes (which element of a window is "first", and the
  order of a windowed sum, stay the same).
- Equations between components whose parameters can absorb a layout (``transpose``,
  ``broadcast_in_dim`` from a lower rank, reductions that keep the order of the axes they
  reduce and of those they keep, ``dot_general`` whose free axes keep their order, ``reshape``
  that only adds or drops axes of size one, or merges or splits runs of adjacent axes that
  both layouts keep whole and in order) are rewritten to read and write the assigned layouts;
  a transpose whose two sides' layouts differ by exactly its permutation disappears.
- Any other equation (and the program's inputs and outputs) reads and writes the user's layout:
  where a value is held in another, one transpose converts it, once per value and layout.
- The layouts are chosen greedily: a move gives one component a layout that would cancel an
  adjacent transpose or match a neighbour, and the components linked to it by reshapes,
  broadcasts and reductions the layouts that implies, and is kept only where it lowers the
  program's transposes (by count, then by elements moved). The pass therefore never adds a
  transpose; the ones that remain are layout changes where the user's layout meets the chosen
  one, and each is labelled as such (its name stack reads ``layout: ...``, which ``as_text()``
  prints beside the equation and its step).
- A transpose that moves only axes of size one becomes the reshape it is.

Pure: every output keeps its place and type (one a cancelled transpose computed becomes the
variable it equals). Bits are kept wherever the equations' implementations compute in an order
that does not depend on the layout (elementwise operations, windows, reductions in the reduced
axes' row-major order); a product reads its operands in another memory order, which a BLAS may
round differently.

Constants get their layout once, at compile time: ``constant_operands_in_gemm_order`` (a
backend constant pass, run after the graph passes with the constants' values) stores a constant
kernel a product would otherwise copy into matrix order at every call in that order instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from fx import dtypes
from fx.jaxpr import Atom, Jaxpr, JaxprEqn, Literal, SourceInfo, Var, has_effects
from fx.lax import base, linalg, reductions, structural, windowed
from fx.lowering.codegen.conv_patches import conv_patches_p
from fx.lowering.fusion.primitive_rules import Pattern, pattern_of
from fx.lowering.passes.rewrite import known_constants, with_constants

Perm = tuple[int, ...]

_WINDOW_PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation",
                  "window_dilation")
_WINDOWS = frozenset([windowed.reduce_window_max_p, windowed.reduce_window_min_p,
                      windowed.reduce_window_sum_p, windowed.select_and_scatter_add_p,
                      windowed.select_and_gather_add_p])
_REDUCTIONS = frozenset([base.reduce_sum_p, reductions.reduce_max_p, reductions.reduce_min_p,
                         reductions.reduce_prod_p, reductions.reduce_and_p,
                         reductions.reduce_or_p, reductions.reduce_xor_p, reductions.argmax_p,
                         reductions.argmin_p])


def _identity(n: int) -> Perm:
    return tuple(range(n))


def _inverse(p: Perm) -> Perm:
    inv = [0] * len(p)
    for i, d in enumerate(p):
        inv[d] = i
    return tuple(inv)


def _then(p: Perm, q: Perm) -> Perm:
    """The permutation of ``transpose(transpose(x, p), q)``."""
    return tuple(p[i] for i in q)


def _permuted(xs, q: Perm) -> tuple:
    return tuple(xs[i] for i in q)


def _increasing(xs) -> bool:
    return all(a < b for a, b in zip(xs, xs[1:]))


def _rank(v: Atom) -> int:
    return len(v.aval.shape)


# --- the equations whose operands and results share one layout ----------------------------------

def _same_layout(eqn: JaxprEqn) -> bool:
    """Whether ``eqn``'s operands and results of its results' rank share one layout."""
    if has_effects(eqn) or len(eqn.outvars) != 1:
        return False
    prim, shape = eqn.primitive, eqn.outvars[0].aval.shape
    if pattern_of(prim) is Pattern.ELEMENTWISE:
        return all(_rank(v) == 0 or v.aval.shape == shape for v in eqn.invars)
    if prim is base.broadcast_in_dim_p:
        return _rank(eqn.invars[0]) == len(shape)
    if prim in _WINDOWS or prim in (structural.pad_p, structural.rev_p, structural.slice_p,
                                    structural.concatenate_p):
        return all(_rank(v) in (0, len(shape)) for v in eqn.invars)
    return False


def _same_layout_params(eqn: JaxprEqn, q: Perm) -> dict | None:
    """``eqn``'s parameters for operands and results held in layout ``q``, or None where it
    cannot run so."""
    prim, p = eqn.primitive, eqn.params
    if pattern_of(prim) is Pattern.ELEMENTWISE:
        return p
    if prim is base.broadcast_in_dim_p:
        return {**p, "shape": _permuted(p["shape"], q)}
    if prim in _WINDOWS:
        big = [d for d in q if p["window_dimensions"][d] > 1]
        if not _increasing(big):
            return None  # the window's taps would be visited in another order
        return {**p, **{k: _permuted(p[k], q) for k in _WINDOW_PARAMS}}
    if prim is structural.pad_p:
        return {**p, "padding_config": _permuted(p["padding_config"], q)}
    if prim is structural.rev_p:
        inv = _inverse(q)
        return {**p, "dimensions": tuple(sorted(inv[d] for d in p["dimensions"]))}
    if prim is structural.slice_p:
        strides = p["strides"]
        return {**p, "start_indices": _permuted(p["start_indices"], q),
                "limit_indices": _permuted(p["limit_indices"], q),
                "strides": None if strides is None else _permuted(strides, q)}
    if prim is structural.concatenate_p:
        return {**p, "dimension": _inverse(q)[p["dimension"]]}
    return None


# --- the equations between components that absorb layouts --------------------------------------
# rule(eqn, operand layouts, result layouts) -> the parameters that compute the results in their
# layouts from the operands in theirs, or None.

Rule = Callable[[JaxprEqn, list, list], "dict | None"]


def _broadcast(eqn: JaxprEqn, qin: list, qout: list) -> dict | None:
    (qi,), (qo,) = qin, qout
    inv = _inverse(qo)
    dims = tuple(inv[eqn.params["broadcast_dimensions"][a]] for a in qi)
    if not _increasing(dims):
        return None
    return {**eqn.params, "shape": _permuted(eqn.params["shape"], qo),
            "broadcast_dimensions": dims}


def _kept_order(q: Perm, dropped) -> Perm:
    """The layout, among the axes ``q`` does not drop (renumbered), that ``q`` leaves."""
    kept = [d for d in range(len(q)) if d not in dropped]
    return tuple(kept.index(d) for d in q if d not in dropped)


def _reduction(eqn: JaxprEqn, qin: list, qout: list) -> dict | None:
    (qi,), (qo,) = qin, qout
    axes = eqn.params["axes"]
    if not _increasing([d for d in qi if d in axes]) or _kept_order(qi, axes) != qo:
        return None
    inv = _inverse(qi)
    return {**eqn.params, "axes": tuple(sorted(inv[a] for a in axes))}


def _dot_general(eqn: JaxprEqn, qin: list, qout: list) -> dict | None:
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    ql, qr = qin
    (qo,) = qout
    # Each operand's free axes keep their order; the result is then in its own layout.
    for q, used in ((ql, (*lc, *lb)), (qr, (*rc, *rb))):
        if not _increasing([d for d in q if d not in used]):
            return None
    if qo != _identity(len(qo)):
        return None
    il, ir = _inverse(ql), _inverse(qr)
    dims = ((tuple(il[d] for d in lc), tuple(ir[d] for d in rc)),
            (tuple(il[d] for d in lb), tuple(ir[d] for d in rb)))
    return {**eqn.params, "dimension_numbers": dims}


def _groups(x: tuple, y: tuple) -> list[tuple[list, list]] | None:
    """A reshape from ``x`` to ``y`` as runs of adjacent axes merged or split: pairs of an
    input run and the output run of the same size, in order (a unit axis joins the run after
    it, or the last); None for an empty shape or array."""
    if not x or not y or 0 in x or 0 in y:
        return None
    runs, i, j = [], 0, 0
    while i < len(x) or j < len(y):
        a, b, pa, pb = [], [], 1, 1
        while True:
            if pa <= pb and i < len(x):
                pa *= x[i]
                a.append(i)
                i += 1
            elif j < len(y):
                pb *= y[j]
                b.append(j)
                j += 1
            else:
                break
            if pa == pb and a and b and (i == len(x) or x[i] != 1) and (j == len(y) or y[j] != 1):
                break
        runs.append((a, b))
    return runs


def _regrouped(runs: list, q: Perm, side: int) -> Perm | None:
    """The layout of the reshape's other side where ``q`` (of side ``side``: 0 input, 1 output)
    keeps each run whole and in order, the runs in the order ``q`` puts them; else None."""
    start = {run[side][0]: k for k, run in enumerate(runs)}
    out, at = [], 0
    while at < len(q):
        k = start.get(q[at])
        if k is None:
            return None
        run = runs[k][side]
        if list(q[at:at + len(run)]) != run:
            return None
        out += runs[k][1 - side]
        at += len(run)
    return tuple(out)


def _unit_map(x: tuple, y: tuple) -> dict[int, int] | None:
    """For a reshape that only adds or drops axes of size one: each other input axis's output
    axis; else None."""
    big_in = [d for d in range(len(x)) if x[d] != 1]
    big_out = [d for d in range(len(y)) if y[d] != 1]
    if [x[d] for d in big_in] != [y[d] for d in big_out]:
        return None
    return dict(zip(big_in, big_out))


def _with_new_axes(order: list, n: int) -> Perm:
    """``order`` (a layout of some of ``n`` axes) with each missing axis placed right after the
    axis before it (first where that is missing too)."""
    for d in range(n):
        if d not in order:
            order.insert(order.index(d - 1) + 1 if d - 1 in order else 0, d)
    return tuple(order)


def _reshape(eqn: JaxprEqn, qin: list, qout: list) -> dict | None:
    """A reshape that only adds or drops axes of size one (the others keep their order), or
    whose merged or split runs of axes stay whole and in order in both layouts, in the same
    order of runs."""
    (qi,), (qo,) = qin, qout
    x, y = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
    to_out = _unit_map(x, y)
    if to_out is not None and (
            [to_out[d] for d in qi if x[d] != 1] == [d for d in qo if y[d] != 1]):
        return {**eqn.params, "new_sizes": _permuted(y, qo)}
    runs = _groups(x, y)
    if runs is None or _regrouped(runs, qi, 0) != qo:
        return None
    return {**eqn.params, "new_sizes": _permuted(y, qo)}


def _induced(eqn: JaxprEqn, v: Var, q: Perm, other: Var) -> Perm | None:
    """The layout of ``other`` that lets ``eqn`` (a broadcast, reshape or reduction linking
    ``v`` and ``other``) run with ``v`` in layout ``q``, where one follows."""
    x, y = eqn.invars[0], eqn.outvars[0]
    if eqn.primitive is base.reshape_p:
        runs = _groups(x.aval.shape, y.aval.shape)
        q_other = None if runs is None else _regrouped(runs, q, 0 if v is x else 1)
        if q_other is not None:
            return q_other
        to_out = _unit_map(x.aval.shape, y.aval.shape)
        if to_out is None:
            return None
        link = to_out if v is x else {b: a for a, b in to_out.items()}
        return _with_new_axes([link[d] for d in q if d in link], _rank(other))
    if eqn.primitive is base.broadcast_in_dim_p:
        dims = eqn.params["broadcast_dimensions"]
        if v is y:  # the operand's axes in the order the result holds them
            back = {d: a for a, d in enumerate(dims)}
            return tuple(back[d] for d in q if d in back)
        return _with_new_axes([dims[a] for a in q], _rank(y))
    if eqn.primitive in _REDUCTIONS and v is x:
        return _kept_order(q, eqn.params["axes"])
    return None


_RULES: dict = {base.broadcast_in_dim_p: _broadcast, linalg.dot_general_p: _dot_general,
                base.reshape_p: _reshape, **{p: _reduction for p in _REDUCTIONS}}
# The rules above that carry a layout from one component to another.
_LINKS = frozenset([base.broadcast_in_dim_p, base.reshape_p, *_REDUCTIONS])


# --- choosing the layouts -----------------------------------------------------------------------

class _Components:
    """Union-find over the values of rank two or more; each root holds its layout."""

    def __init__(self):
        self.parent: dict[Var, Var] = {}
        self.layout: dict[Var, Perm] = {}

    def add(self, v: Var) -> None:
        if v not in self.parent:
            self.parent[v] = v
            self.layout[v] = _identity(_rank(v))

    def root(self, v: Var) -> Var:
        path = []
        while self.parent[v] is not v:
            path.append(v)
            v = self.parent[v]
        for u in path:
            self.parent[u] = v
        return v

    def union(self, a: Var, b: Var) -> None:
        ra, rb = self.root(a), self.root(b)
        if ra is not rb:
            self.parent[rb] = ra


class _Program:
    """The equations' classification and the cost of a layout assignment."""

    def __init__(self, jaxpr: Jaxpr):
        self.jaxpr = jaxpr
        self.comps = _Components()
        self.producer: dict[Var, JaxprEqn] = {}
        self.consumers: dict[Var, list[JaxprEqn]] = {}
        self.same: set[int] = set()  # ids of same-layout equations
        self.outputs = {v for v in jaxpr.outvars if isinstance(v, Var)}
        for v in jaxpr.invars:
            self._add(v)
        for eqn in jaxpr.eqns:
            for v in eqn.outvars:
                self._add(v)
                self.producer[v] = eqn
            for v in eqn.invars:
                if isinstance(v, Var):
                    self._add(v)
                    self.consumers.setdefault(v, []).append(eqn)
            if _same_layout(eqn):
                self.same.add(id(eqn))
                out = eqn.outvars[0]
                for v in eqn.invars:
                    if isinstance(v, Var) and _rank(v) == _rank(out) >= 2:
                        self.comps.union(out, v)
        self.root_of = {v: self.comps.root(v) for v in self.comps.parent}

    def _add(self, v: Var) -> None:
        if _rank(v) >= 2:
            self.comps.add(v)

    def q(self, v: Atom) -> Perm:
        root = self.root_of.get(v) if isinstance(v, Var) else None
        if root is None:
            return _identity(_rank(v))
        return self.comps.layout[root]

    def params(self, eqn: JaxprEqn) -> dict | None:
        """``eqn``'s parameters in the assigned layouts, or None where it runs in the user's."""
        if eqn.primitive is base.transpose_p:
            return eqn.params
        qin = [self.q(v) for v in eqn.invars]
        qout = [self.q(v) for v in eqn.outvars]
        if all(q == _identity(len(q)) for q in qin + qout):
            return eqn.params
        if id(eqn) in self.same:
            q = qout[0]
            if any(qi != q for v, qi in zip(eqn.invars, qin) if _rank(v) == len(q)):
                return None
            return _same_layout_params(eqn, q)
        rule = _RULES.get(eqn.primitive)
        if rule is None or has_effects(eqn) or any(isinstance(v, Literal) and _rank(v)
                                                   for v in eqn.invars):
            return None
        return rule(eqn, qin, qout)

    def fits(self, eqn: JaxprEqn, memo: dict) -> bool:
        """Whether ``eqn`` runs in the assigned layouts (``memo``: answers under the same
        assignment)."""
        key = id(eqn)
        if key not in memo:
            memo[key] = self.params(eqn) is not None
        return memo[key]

    def made_in(self, v: Var, memo: dict) -> Perm:
        """The layout ``v``'s equation writes it in."""
        eqn = self.producer.get(v)
        if eqn is None or not self.fits(eqn, memo):
            return _identity(_rank(v))
        return self.q(v)

    def wanted(self, v: Var, memo: dict) -> set[Perm]:
        """The layouts ``v``'s readers read it in."""
        out = {_identity(_rank(v))} if v in self.outputs else set()
        for eqn in self.consumers.get(v, ()):
            if eqn.primitive is base.transpose_p:
                out.add(_then(eqn.params["permutation"], self.q(eqn.outvars[0])))
            elif not self.fits(eqn, memo):
                out.add(_identity(_rank(v)))
            else:
                out.add(self.q(v))
        return out

    def cost(self, values) -> tuple[int, int]:
        """The transposes ``values`` need (count, elements)."""
        count = size = 0
        memo: dict = {}
        for v in values:
            extra = len(self.wanted(v, memo) - {self.made_in(v, memo)})
            count += extra
            size += extra * v.aval.size
        return count, size


# Components one move may change together (a layout followed through reshapes and broadcasts).
MAX_MOVE = 64


def _choose(prog: _Program) -> None:
    """Give each component the layout, among its candidates, that lowers the cost most, until
    no change lowers it. A move sets one component's layout and the layouts it implies for
    the components linked to it by reshapes, broadcasts and reductions (and theirs, in turn):
    a chain of them changes at once or not at all."""
    comps = prog.comps
    members: dict[Var, list[Var]] = {}
    for v in comps.parent:
        members.setdefault(comps.root(v), []).append(v)
    touched: dict[Var, list[JaxprEqn]] = {}  # root -> equations reading or writing it
    for root, vs in members.items():
        seen: dict[int, JaxprEqn] = {}
        for v in vs:
            for e in [prog.producer.get(v), *prog.consumers.get(v, ())]:
                if e is not None:
                    seen[id(e)] = e
        touched[root] = list(seen.values())
    roots = [r for r in members if any(e.primitive is base.transpose_p for e in touched[r])]
    for _ in range(8):
        changed = False
        for root in roots:
            for cand in _candidates(prog, root, touched[root]):
                move = _move(prog, touched, root, cand)
                eqns = {id(e): e for r in move for e in touched[r]}
                values = {v: None for e in eqns.values() for v in (*e.invars, *e.outvars)
                          if isinstance(v, Var)}
                before = {r: comps.layout[r] for r in move}
                old = prog.cost(values)
                comps.layout.update(move)
                if prog.cost(values) < old:
                    changed = True
                else:
                    comps.layout.update(before)
        if not changed:
            return


def _move(prog: _Program, touched: dict, root: Var, layout: Perm) -> dict[Var, Perm]:
    """``root``'s component in ``layout`` and the layouts that implies for the components
    linked to it (at most ``MAX_MOVE`` components)."""
    move = {root: layout}
    queue = [root]
    while queue and len(move) < MAX_MOVE:
        r = queue.pop()
        for e in touched[r]:
            if e.primitive not in _LINKS or not isinstance(e.invars[0], Var):
                continue
            x, y = e.invars[0], e.outvars[0]
            for v, other in ((x, y), (y, x)):
                if prog.root_of.get(v) is not r or other not in prog.root_of:
                    continue
                o = prog.root_of[other]
                if o in move:
                    continue
                q = _induced(e, v, move[r], other)
                if q is not None and q != prog.comps.layout[o]:
                    move[o] = q
                    queue.append(o)
    return move


def _candidates(prog: _Program, root: Var, eqns: list[JaxprEqn]) -> list[Perm]:
    """Layouts for ``root``'s component: those cancelling a transpose it reads or writes, and
    its neighbours' layouts of its rank."""
    comps = prog.comps
    n = _rank(root)
    out: dict[Perm, None] = {_identity(n): None}
    for e in eqns:
        if e.primitive is base.transpose_p:
            p = e.params["permutation"]
            x, y = e.invars[0], e.outvars[0]
            if isinstance(x, Var) and x in comps.parent and comps.root(x) is root:
                out[_then(p, prog.q(y))] = None
            if comps.root(y) is root:
                for lx in (prog.q(x), prog.made_in(x, {}) if isinstance(x, Var) else prog.q(x)):
                    out[_then(_inverse(p), lx)] = None
        for v in (*e.invars, *e.outvars):
            if isinstance(v, Var) and _rank(v) == n:
                out[prog.q(v)] = None
    out.pop(comps.layout[root], None)
    return list(out)


# --- rewriting ----------------------------------------------------------------------------------

def _labelled(info: SourceInfo | None, label: str) -> SourceInfo:
    if info is None:
        return SourceInfo("", 0, "", label)
    return dataclasses.replace(info, name_stack=label)


class _Rewriter:
    def __init__(self, prog: _Program):
        self.prog = prog
        self.made: dict[Var, tuple[Atom, Perm]] = {}  # value -> (its var as written, layout)
        self.copies: dict[tuple[Var, Perm], Atom] = {}  # (value, layout) -> var
        self.eqns: list[JaxprEqn] = []

    def read(self, v: Atom, layout: Perm, why: str, info) -> Atom:
        """``v`` in ``layout``: as written, or transposed once (a labelled layout change)."""
        if isinstance(v, Literal):
            if layout == _identity(len(layout)):
                return v
            value = np.transpose(np.asarray(v.value), layout)
            return Literal(value, v.aval.update(shape=value.shape))
        var, made = self.made.get(v, (v, _identity(_rank(v))))
        if layout == made:
            return var
        key = (v, layout)
        if key not in self.copies:
            user = layout == _identity(len(layout))
            out = v if user else Var(v.aval.update(shape=_permuted(v.aval.shape, layout)))
            perm = _then(_inverse(made), layout)
            self.eqns.append(JaxprEqn(base.transpose_p, [var], [out], {"permutation": perm},
                                      _labelled(info, f"layout: {why}")))
            self.copies[key] = out
        return self.copies[key]

    def eqn(self, eqn: JaxprEqn) -> None:
        prog = self.prog
        if eqn.primitive is base.transpose_p:
            (x,), (y,) = eqn.invars, eqn.outvars
            layout = _then(eqn.params["permutation"], prog.q(y))
            if prog.q(y) == self._made(x) == _identity(_rank(y)) and not (
                    isinstance(x, Var) and (x, layout) in self.copies):
                # The program's own transpose, in the user's layouts on both sides.
                var = self.made[x][0] if isinstance(x, Var) and x in self.made else x
                self.eqns.append(eqn.replace(invars=[var], source_info=_at_convolution(
                    eqn, self.prog)))
                if isinstance(x, Var):
                    self.copies[x, layout] = y
                return
            var = self.read(x, layout, "between differently assigned layouts", eqn.source_info)
            self.made[y] = (var, prog.q(y))
            return
        params = prog.params(eqn)
        if params is None:
            why = f"{eqn.primitive.name} reads the user's layout"
            invars = [self.read(v, _identity(_rank(v)), why, eqn.source_info)
                      for v in eqn.invars]
            self.eqns.append(eqn.replace(invars=invars))
            return
        invars = [self.read(v, prog.q(v), f"{eqn.primitive.name} reads the assigned layout",
                            eqn.source_info) for v in eqn.invars]
        outvars = []
        for v in eqn.outvars:
            q = prog.q(v)
            var = v if q == _identity(len(q)) else Var(
                v.aval.update(shape=_permuted(v.aval.shape, q)))
            self.made[v] = (var, q)
            outvars.append(var)
        self.eqns.append(eqn.replace(invars=invars, outvars=outvars, params=params))

    def _made(self, x: Atom) -> Perm:
        if isinstance(x, Var) and x in self.made:
            return self.made[x][1]
        return _identity(_rank(x))


def _at_convolution(eqn: JaxprEqn, prog: _Program) -> SourceInfo | None:
    """The source info of a transpose kept in the user's layouts, labelled a layout change
    where it brings a convolution's operand to or its product from the compute layout."""
    (x,), (y,) = eqn.invars, eqn.outvars
    made = prog.producer.get(x) if isinstance(x, Var) else None
    if any(e.primitive is conv_patches_p for e in prog.consumers.get(y, ())):
        return _labelled(eqn.source_info, "layout: a convolution's operand to channels-last")
    if made is not None and made.primitive is linalg.dot_general_p and any(
            isinstance(v, Var) and v in prog.producer
            and prog.producer[v].primitive is conv_patches_p for v in made.invars):
        where = "program output" if y in prog.outputs else "the user's layout"
        return _labelled(eqn.source_info, f"layout: a convolution's product to {where}")
    return eqn.source_info


def assign_layouts(jaxpr: Jaxpr) -> Jaxpr:
    if not any(e.primitive is base.transpose_p for e in jaxpr.eqns):
        return jaxpr
    prog = _Program(jaxpr)
    _choose(prog)
    rw = _Rewriter(prog)
    for eqn in jaxpr.eqns:
        rw.eqn(eqn)
    outvars = [rw.read(v, _identity(_rank(v)), "program output", None) for v in jaxpr.outvars]
    eqns = [_as_reshape(e) for e in rw.eqns]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns)


def _as_reshape(eqn: JaxprEqn) -> JaxprEqn:
    """A transpose moving only axes of size one as the reshape it is."""
    if eqn.primitive is not base.transpose_p:
        return eqn
    x = eqn.invars[0].aval.shape
    moved = [d for d in eqn.params["permutation"] if x[d] != 1]
    if not _increasing(moved):
        return eqn
    return eqn.replace(primitive=base.reshape_p,
                       params={"new_sizes": tuple(eqn.outvars[0].aval.shape)})


# --- constants ------------------------------------------------------------------------------------

def constant_operands_in_gemm_order(jaxpr: Jaxpr, consts: list, hoisted: tuple = ()
                                    ) -> tuple[Jaxpr, list]:
    """A backend constant pass (``Backend.constant_passes``): each floating-point
    ``dot_general`` operand that is a constant (a kernel in OIHW, whose product reads it as
    ``(I*H*W, O)`` in another order) transposed once, at compile time, into the order the
    product reads it, ``(batch, contracted, free)`` for the right operand and ``(batch, free,
    contracted)`` for the left, so that no call copies it into that order again (operands the
    product reads as a matrix in place, transposed or not, stay). The product's dimension
    numbers follow; its result is unchanged. The transposed values are appended to the
    constants."""
    known = known_constants(jaxpr, consts, hoisted)
    if not known:
        return jaxpr, consts
    made: dict[tuple[Var, Perm], Var] = {}
    new_vars, new_values, eqns = [], [], []
    for eqn in jaxpr.eqns:
        if eqn.primitive is linalg.dot_general_p and dtypes.is_float(eqn.outvars[0].aval.dtype):
            eqn = _with_constant_operands(eqn, known, made, new_vars, new_values)
        eqns.append(eqn)
    if not new_vars:
        return jaxpr, consts
    return with_constants(jaxpr, consts, eqns, new_vars, new_values)


def _with_constant_operands(eqn: JaxprEqn, known: dict, made: dict, new_vars: list,
                            new_values: list) -> JaxprEqn:
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    invars = list(eqn.invars)
    dims = {"lc": lc, "rc": rc, "lb": lb, "rb": rb}
    for i, (c, b) in enumerate(((lc, lb), (rc, rb))):
        x = invars[i]
        if not isinstance(x, Var) or x not in known:
            continue
        free = [d for d in range(_rank(x)) if d not in c and d not in b]
        order = (*b, *free, *c) if i == 0 else (*b, *c, *free)
        value = np.asarray(known[x])
        groups = (b, free, c) if i == 0 else (b, c, free)
        matrix = tuple(int(np.prod([value.shape[d] for d in g], dtype=np.int64))
                       for g in groups)
        if np.may_share_memory(np.transpose(value, order).reshape(matrix), value):
            continue  # the product reads it as a matrix in place (a transposed view at most)
        if (x, order) not in made:
            value = np.ascontiguousarray(np.transpose(value, order))
            var = Var(x.aval.update(shape=value.shape))
            made[x, order] = var
            new_vars.append(var)
            new_values.append(value)
        invars[i] = made[x, order]
        at = _inverse(order)
        side = "l" if i == 0 else "r"
        dims[side + "c"] = tuple(at[d] for d in c)
        dims[side + "b"] = tuple(at[d] for d in b)
    if invars == list(eqn.invars):
        return eqn
    numbers = ((dims["lc"], dims["rc"]), (dims["lb"], dims["rb"]))
    return eqn.replace(invars=invars, params={**eqn.params, "dimension_numbers": numbers})
