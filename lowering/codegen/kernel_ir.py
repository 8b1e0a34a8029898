"""The kernel IR: loops, loads, stores, scalar operations and accumulations.

One kernel is a :class:`Kernel` with typed buffer parameters and a body of statements. Every
backend renders the same IR (``fx.lowering.render.renderer``); nothing here knows about C or CUDA.

Expressions are immutable trees. Scalar arithmetic is typed by the *compute* dtype (half
precision values are computed in float32 on targets without half arithmetic: codegen inserts
the casts). Index arithmetic uses ``INDEX`` (int64). A :class:`Loop` marked ``parallel`` is the
kernel's parallel dimension: a C ``for`` under OpenMP, or the thread index on CUDA.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

INDEX = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)


class Expr:
    __slots__ = ()
    dtype: np.dtype


@dataclass(frozen=True, eq=True)
class Const(Expr):
    value: object
    dtype: np.dtype


@dataclass(frozen=True, eq=True)
class Sym(Expr):
    """A loop index or a local value."""

    name: str
    dtype: np.dtype


@dataclass(frozen=True, eq=True)
class Load(Expr):
    buf: str
    index: Expr
    dtype: np.dtype  # the buffer's storage dtype


@dataclass(frozen=True, eq=True)
class Op(Expr):
    """A scalar operation by name (``add``, ``exp``, ``select``, ``cast``, ``lt``, ...)."""

    op: str
    args: tuple[Expr, ...]
    dtype: np.dtype


class Stmt:
    __slots__ = ()


@dataclass(frozen=True)
class Let(Stmt):
    name: str
    value: Expr


@dataclass(frozen=True)
class Decl(Stmt):
    """A mutable local (an accumulator) with its initial value."""

    name: str
    dtype: np.dtype
    init: Expr


@dataclass(frozen=True)
class Array(Stmt):
    """A local array of ``size`` elements, uninitialized, read with :class:`Load` and written
    with :class:`Store` by its name as a buffer is. Declared inside a parallel loop's body,
    each iteration has its own."""

    name: str
    dtype: np.dtype
    size: int


@dataclass(frozen=True)
class Assign(Stmt):
    name: str
    value: Expr


@dataclass(frozen=True)
class Store(Stmt):
    buf: str
    index: Expr
    value: Expr
    leader_only: bool = False  # inside a cooperative row: one lane stores the row's result


@dataclass(frozen=True)
class Loop(Stmt):
    """A counted loop. ``parallel``: the kernel's parallel dimension; with ``lanes > 1`` each
    iteration is run by a group of cooperating lanes (a warp on CUDA). ``cooperative``: a
    reduction loop whose iterations those lanes may split among themselves; a
    :class:`Combine` after it merges the lanes' partial accumulators."""

    var: str
    extent: int
    body: tuple[Stmt, ...]
    parallel: bool = False
    lanes: int = 1
    cooperative: bool = False
    # For a cooperative loop: (accumulator, op) pairs it reduces, so a target may vectorize it
    # as a reduction (reassociating within the row, identically on every run).
    reductions: tuple[tuple[str, str], ...] = ()
    # For a flat parallel loop: a target with vector memory access may run ``vector``
    # consecutive iterations per lane, reading and writing the buffers indexed by exactly
    # ``var`` with one wide access each (others stay scalar). It must keep a scalar path for
    # misaligned pointers and for the tail of an extent that ``vector`` does not divide.
    vector: int = 1
    # For a parallel loop: its iterations may run as SIMD lanes, each doing its inner loops
    # (sequential reductions) on its own, so a target may vectorize this outer loop. Each
    # iteration's own arithmetic is unchanged, so the results are too.
    simd_iterations: bool = False


@dataclass(frozen=True)
class Combine(Stmt):
    """Merge an accumulator across the cooperating lanes (all lanes get the result).
    ``index`` names the companion index accumulator of an argmax/argmin."""

    name: str
    op: str
    dtype: np.dtype
    index: str = ""
    index_dtype: np.dtype | None = None


@dataclass(frozen=True)
class Param:
    name: str
    dtype: np.dtype  # storage dtype
    size: int  # elements
    is_output: bool


@dataclass(frozen=True)
class Kernel:
    """A kernel as loop IR, rendered by any dialect. Every kernel kind (this one, and those
    whose source a builder produces whole, like the CUDA GEMM) answers ``renamed``,
    ``render`` and ``launch``, so no caller tells kinds apart."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    work: int = 0  # elements touched, for the launch/threading heuristics
    restrict: bool = True  # False when the memory plan made two parameters alias (in place)
    wide_vectors: bool = False  # vectorize with the ISA's widest vectors (see renderer.C)
    # The dialects it is written for (by name), None for all: a CPU-only strategy's kernel
    # (local arrays of partial sums sized for a CPU's cache) has no form elsewhere.
    dialects: tuple[str, ...] | None = None

    # The launch shape is the runtime's to choose (from the parallel loop), not the kernel's.
    launch = None

    def renamed(self, name: str) -> Kernel:
        return dataclasses.replace(self, name=name)

    def render(self, renderer) -> str:
        """Its source in ``renderer``'s dialect (``renderer.Renderer``); empty in a dialect
        it is not written for."""
        if self.dialects is not None and renderer.d.name not in self.dialects:
            return ""
        return renderer.kernel(self)


def depth(e: Expr) -> int:
    """The height of an expression tree (a leaf is 1), walked without recursion."""
    best, stack = 0, [(e, 1)]
    while stack:
        e, d = stack.pop()
        best = max(best, d)
        if isinstance(e, Op):
            stack.extend((a, d + 1) for a in e.args)
        elif isinstance(e, Load):
            stack.append((e.index, d + 1))
    return best


# --- construction helpers (with light constant folding on index arithmetic) ---------------------


def const_index(v: int) -> Const:
    return Const(int(v), INDEX)


def _is_const(e: Expr, v) -> bool:
    return isinstance(e, Const) and e.value == v


def iadd(a: Expr, b: Expr) -> Expr:
    if _is_const(a, 0):
        return b
    if _is_const(b, 0):
        return a
    if isinstance(a, Const) and isinstance(b, Const):
        return const_index(a.value + b.value)
    return Op("add", (a, b), INDEX)


def imul(a: Expr, b: Expr) -> Expr:
    if _is_const(a, 0) or _is_const(b, 0):
        return const_index(0)
    if _is_const(a, 1):
        return b
    if _is_const(b, 1):
        return a
    if isinstance(a, Const) and isinstance(b, Const):
        return const_index(a.value * b.value)
    return Op("mul", (a, b), INDEX)


def isub(a: Expr, b: Expr) -> Expr:
    if _is_const(b, 0):
        return a
    if isinstance(a, Const) and isinstance(b, Const):
        return const_index(a.value - b.value)
    return Op("sub", (a, b), INDEX)


def idiv(a: Expr, b: int) -> Expr:
    """Floor division of a non-negative index by a positive constant."""
    if b == 1:
        return a
    if isinstance(a, Const):
        return const_index(a.value // b)
    return Op("div", (a, const_index(b)), INDEX)


def imod(a: Expr, b: int) -> Expr:
    if b == 1:
        return const_index(0)
    if isinstance(a, Const):
        return const_index(a.value % b)
    return Op("rem", (a, const_index(b)), INDEX)


class Delinearized(tuple):
    """A multi-dimensional index made from a flat one (:func:`delinearize`): linearized over
    the same shape, it is that flat index again, not the division and modulo arithmetic that
    rebuilds it (which keeps a reshape of a loaded buffer an affine access GCC vectorizes)."""

    flat: Expr
    shape: tuple[int, ...]


def linearize(index: tuple[Expr, ...], shape: tuple[int, ...]) -> Expr:
    """The row-major flat index of a multi-dimensional index."""
    if isinstance(index, Delinearized) and index.shape == tuple(shape):
        return index.flat
    flat: Expr = const_index(0)
    for i, n in zip(index, shape):
        flat = iadd(imul(flat, const_index(n)), i)
    return flat


def delinearize(flat: Expr, shape: tuple[int, ...]) -> tuple[Expr, ...]:
    """The multi-dimensional index of a row-major flat index."""
    out = []
    stride = 1
    strides = []
    for n in reversed(shape):
        strides.append(stride)
        stride *= n
    strides.reverse()
    for n, st in zip(shape, strides):
        out.append(imod(idiv(flat, st), n) if n != 1 else const_index(0))
    if out:
        # The leading coordinate needs no modulo: the flat index is in range.
        out[0] = idiv(flat, strides[0]) if shape[0] != 1 else const_index(0)
    index = Delinearized(out)
    index.flat, index.shape = flat, tuple(shape)
    return index


def reshaped_index(index, in_shape, out_shape) -> Delinearized:
    """The operand index of a row-major reshape, group by group: consecutive dimensions of
    equal products correspond (``(256, 8, 8, 3, 3) -> (256, 8, 8, 9)``: three pairs of one
    dimension each and ``(3, 3) <-> (9,)``), so a dimension the reshape keeps passes its index
    through and only a merged or split group is linearized and delinearized (a window map
    after the reshape then sees plain loop indices and constants, not divisions of the whole
    flat index). Linearized over the operand's shape it is the flat index, as every reshape
    keeps it (an affine load, see :class:`Delinearized`)."""
    out: list = [None] * len(in_shape)
    i = j = 0
    while i < len(in_shape) and j < len(out_shape):
        gi, gj = [i], [j]
        pi, pj = in_shape[i], out_shape[j]
        i, j = i + 1, j + 1
        while pi != pj:
            if pi < pj:
                pi *= in_shape[i]
                gi.append(i)
                i += 1
            else:
                pj *= out_shape[j]
                gj.append(j)
                j += 1
        if i == len(in_shape) or j == len(out_shape):  # the other side's unit dimensions
            gi += range(i, len(in_shape))
            gj += range(j, len(out_shape))
        sub_in = tuple(in_shape[k] for k in gi)
        sub_out = tuple(out_shape[k] for k in gj)
        kept = [index[k] for k in gj if out_shape[k] != 1]
        if [n for n in sub_in if n != 1] == [n for n in sub_out if n != 1]:
            kept = iter(kept)  # the same dimensions, unit ones added or removed
            parts = [next(kept) if n != 1 else const_index(0) for n in sub_in]
        else:
            parts = delinearize(linearize(tuple(index[k] for k in gj), sub_out), sub_in)
        for k, e in zip(gi, parts):
            out[k] = e
    result = Delinearized(out)
    result.flat, result.shape = linearize(index, out_shape), tuple(in_shape)
    return result


def _reads(e: Expr, names: set, bufs: set) -> None:
    """Add the symbols and the buffers ``e`` reads to ``names`` and ``bufs``."""
    stack = [e]
    while stack:
        e = stack.pop()
        if isinstance(e, Sym):
            names.add(e.name)
        elif isinstance(e, Load):
            bufs.add(e.buf)
            stack.append(e.index)
        elif isinstance(e, Op):
            stack.extend(e.args)


def _stored(body) -> set:
    """The buffers the statements store to (nested loops included)."""
    out, stack = set(), list(body)
    while stack:
        s = stack.pop()
        if isinstance(s, Store):
            out.add(s.buf)
        elif isinstance(s, Loop):
            stack.extend(s.body)
    return out


def hoist_invariants(k: Kernel) -> Kernel:
    """``k`` with the values an innermost loop's iterations all compute alike bound once in
    front of it: a ``Let`` of the loop body whose expression reads neither the loop index,
    nor a local the body assigns, nor a value bound in the body that does, nor (unless
    every parameter is ``restrict``) a buffer the kernel stores to. A window read through
    padding is the case: inside a loop over the output features, the tap's value and its
    in-bounds test depend on the position only, and GCC does not vectorize a select between
    vector values on a scalar condition, which it makes of ``(inside ? x : 0) * w``.
    Hoisting changes no result (the same operations on the same values, in order); the loop
    has a constant extent of at least one, so a hoisted load was made by the loop anyway."""
    stored = _stored(k.body) if k.restrict else None

    def visit(body: tuple) -> tuple:
        out = []
        for s in body:
            if isinstance(s, Loop):
                if any(isinstance(t, Loop) for t in s.body):
                    s = dataclasses.replace(s, body=visit(s.body))
                else:
                    out += _hoisted(s, stored)
                    s = out.pop()
            out.append(s)
        return tuple(out)

    body = visit(k.body)
    return k if body == k.body else dataclasses.replace(k, body=body)


def _hoisted(loop: Loop, stored: set | None) -> list:
    """The invariant ``Let`` s of an innermost ``loop``, then the loop without them."""
    if loop.extent < 1 or loop.lanes != 1 or loop.cooperative:
        return [loop]
    variant = {loop.var}
    for s in loop.body:
        if isinstance(s, (Decl, Assign)):
            variant.add(s.name)
    moved, kept = [], []
    for s in loop.body:
        if isinstance(s, Let):
            names, bufs = set(), set()
            _reads(s.value, names, bufs)
            if not names & variant and (not bufs or stored is not None and not bufs & stored):
                moved.append(s)
                continue
            variant.add(s.name)
        kept.append(s)
    if not moved:
        return [loop]
    return moved + [dataclasses.replace(loop, body=tuple(kept))]
