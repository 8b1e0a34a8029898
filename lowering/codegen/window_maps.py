"""Pooling in generated kernels: ``reduce_window_{max,min,sum}`` and the max-pool gradient
``select_and_scatter_add`` as index maps, so they fuse with their neighbours like pad or slice.

- ``reduce_window``: each output element loops over its window's taps; a tap that falls in the
  padding (or between base-dilated elements) contributes the reduction's identity.
- ``select_and_scatter_add`` is computed in gather form: each operand element loops over the
  windows that contain it, finds each window's first max (min) in row-major tap order — NaN
  wins, as ``argmax`` — and adds the window's source value when that choice is this element.
  Every output element is computed independently: no atomics, the same sum order on every run.

Importing this module registers the patterns and index maps.
"""

from __future__ import annotations

import itertools
import math

from fx import dtypes
from fx.jaxpr import JaxprEqn
from fx.lax import windowed as win
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.kernel_builder import KernelBuilder, index_maps
from fx.lowering.fusion.primitive_rules import (
    Pattern,
    compute_dtype,
    gathers,
    patterns,
    windows_overlap,
)

_B = dtypes.bool_


def _and(a, b):
    return b if a is None else ir.Op("and", (a, b), _B)


_UNROLL = 16  # windows with at most this many taps are unrolled (constant index arithmetic)


def _each_tap(b: KernelBuilder, extents, body_fn, unroll: int = _UNROLL) -> None:
    """Emit ``body_fn(taps)`` for every tap of a window of ``extents``: unrolled with constant
    taps for windows of at most ``unroll`` taps, else in loops (a dimension of extent 1 is the
    constant 0)."""
    if math.prod(extents) <= unroll:
        for taps in itertools.product(*(range(n) for n in extents)):
            body_fn(tuple(ir.const_index(t) for t in taps))
        return
    names = [next(b.names) if n > 1 else None for n in extents]
    b.push()
    body_fn(tuple(ir.Sym(n, ir.INDEX) if n else ir.const_index(0) for n in names))
    stmts = b.pop()
    for n, extent in reversed(list(zip(names, extents))):
        if n:
            stmts = [ir.Loop(n, extent, tuple(stmts))]
    for st in stmts:
        b.emit(st)


def _tap(out_index, taps, params, shape, out_shape):
    """The operand index a window tap reads, and whether it reads a real element. Checks and
    clamps that the geometry makes always true are left out (an index of extent ``m`` lies in
    [0, m-1]; a constant tap, one of a convolution's unrolled products, is that tap alone:
    the centre of a 3x3 window padded by one needs none), so trivial window dimensions stay
    affine and their loops vectorize."""
    valid, idx = None, []
    for o, t, n, m, k, s, wd, bd, (lo, _) in zip(
            out_index, taps, shape, out_shape, params["window_dimensions"],
            params["window_strides"], params["window_dilation"], params["base_dilation"],
            params["padding"]):
        pos = ir.isub(ir.iadd(ir.imul(o, ir.const_index(s)), ir.imul(t, ir.const_index(wd))),
                      ir.const_index(lo))
        first, last = (t.value, t.value) if isinstance(t, ir.Const) else (0, k - 1)
        low, high = first * wd - lo, (m - 1) * s + last * wd - lo
        if low < 0:
            valid = _and(valid, ir.Op("ge", (pos, ir.const_index(0)), _B))
            pos = ir.Op("max", (pos, ir.const_index(0)), ir.INDEX)
        if high > (n - 1) * bd:
            valid = _and(valid, ir.Op("le", (pos, ir.const_index((n - 1) * bd)), _B))
        if bd > 1:
            valid = _and(valid, ir.Op("eq", (ir.imod(pos, bd), ir.const_index(0)), _B))
        j = ir.idiv(pos, bd)
        idx.append(ir.Op("min", (j, ir.const_index(max(n - 1, 0))), ir.INDEX)
                   if high // bd > n - 1 else j)
    return valid, tuple(idx)


def _read(b: KernelBuilder, x, out_index, out_shape, taps, params, fill):
    valid, idx = _tap(out_index, taps, params, x.aval.shape, out_shape)
    val = b.value(x, idx)
    return val if valid is None else ir.Op("select", (valid, val, fill), val.dtype)


def _reduce_window(kind: str):
    op = {"max": "max", "min": "min", "sum": "add"}[kind]

    def rule(b: KernelBuilder, eqn: JaxprEqn, index):
        x = eqn.invars[0]
        p = eqn.params
        dt = compute_dtype(x.aval.dtype)
        init = ir.Const(win.identity(kind, x.aval.dtype), dt)
        acc = next(b.names)
        b.emit(ir.Decl(acc, dt, init))
        cur = ir.Sym(acc, dt)

        def body(taps):
            val = _read(b, x, index, eqn.outvars[0].aval.shape, taps, p, init)
            b.emit(ir.Assign(acc, ir.Op(op, (cur, val), dt)))

        _each_tap(b, p["window_dimensions"], body)
        return cur

    return rule


def _better(select: str, v, best, dt):
    """``v`` replaces the best so far: strictly larger (smaller), or the first NaN."""
    cmp = ir.Op("gt" if select == "max" else "lt", (v, best), _B)
    if not dtypes.is_float(dt):
        return cmp
    v_nan = ir.Op("ne", (v, v), _B)
    best_num = ir.Op("eq", (best, best), _B)
    return ir.Op("and", (ir.Op("or", (cmp, v_nan), _B), best_num), _B)


def _select_and_scatter_add(b: KernelBuilder, eqn: JaxprEqn, index):
    source, operand = eqn.invars
    p = eqn.params
    select = p["select"]
    window = p["window_dimensions"]
    out_shape = source.aval.shape
    sdt, odt = compute_dtype(source.aval.dtype), compute_dtype(operand.aval.dtype)
    total = next(b.names)
    b.emit(ir.Decl(total, sdt, ir.Const(0, sdt)))
    fill = ir.Const(win.identity(select, operand.aval.dtype), odt)

    # Along a dimension whose windows do not overlap (stride >= window, no window dilation)
    # an element lies in at most one window, at tap (i*bd + lo) % stride: no loop over taps.
    direct = [wd == 1 and k <= s for k, s, wd in zip(window, p["window_strides"],
                                                     p["window_dilation"])]

    def per_tap(loop_taps):
        # The window whose tap ``taps`` lands on this element: w = (i*bd + lo - t*wd) / s.
        ok, w_idx, taps = None, [], []
        for i, t, s, wd, bd, (lo, _), n, m, k, one in zip(
                index, loop_taps, p["window_strides"], p["window_dilation"],
                p["base_dilation"], p["padding"], operand.aval.shape, out_shape, window, direct):
            base = ir.iadd(ir.imul(i, ir.const_index(bd)), ir.const_index(lo))
            low, high = lo, (n - 1) * bd + lo  # the range of ``base``
            if one:
                t = ir.imod(ir.Op("max", (base, ir.const_index(0)), ir.INDEX) if low < 0
                            else base, s)
                if k < s:
                    ok = _and(ok, ir.Op("lt", (t, ir.const_index(k)), _B))
                low = 0 if low >= 0 else low - (s - 1)  # base - base % s >= 0 when base >= 0
            else:
                low -= (k - 1) * wd
            taps.append(t)
            num = ir.isub(base, ir.imul(t, ir.const_index(wd)))
            if low < 0:
                ok = _and(ok, ir.Op("ge", (num, ir.const_index(0)), _B))
                num = ir.Op("max", (num, ir.const_index(0)), ir.INDEX)
            if s > 1 and not one:
                ok = _and(ok, ir.Op("eq", (ir.imod(num, s), ir.const_index(0)), _B))
            w = ir.idiv(num, s)
            if high // s > m - 1:
                ok = _and(ok, ir.Op("lt", (w, ir.const_index(m)), _B))
                w = ir.Op("min", (w, ir.const_index(max(m - 1, 0))), ir.INDEX)
            w_idx.append(b.let(w))
        w_idx = tuple(w_idx)
        taps = [b.let(t) for t in taps]
        ok = ok if ok is None else b.let(ok)
        # That window's first choice, as a row-major tap number.
        best, pick = next(b.names), next(b.names)
        b.emit(ir.Decl(best, odt, fill))
        b.emit(ir.Decl(pick, ir.INDEX, ir.const_index(-1)))
        best_sym, pick_sym = ir.Sym(best, odt), ir.Sym(pick, ir.INDEX)

        def scan_window(taps2):
            v = _read(b, operand, w_idx, out_shape, taps2, p, fill)
            number = ir.linearize(taps2, window)
            first = ir.Op("lt", (pick_sym, ir.const_index(0)), _B)
            take = b.let(ir.Op("or", (first, _better(select, v, best_sym, odt)), _B))
            b.emit(ir.Assign(best, ir.Op("select", (take, v, best_sym), odt)))
            b.emit(ir.Assign(pick, ir.Op("select", (take, number, pick_sym), ir.INDEX)))

        _each_tap(b, window, scan_window)
        mine = ir.Op("eq", (pick_sym, ir.linearize(taps, window)), _B)
        hit = mine if ok is None else ir.Op("and", (ok, mine), _B)
        src = b.value(source, w_idx)
        add = ir.Op("add", (ir.Sym(total, sdt), src), sdt)
        b.emit(ir.Assign(total, ir.Op("select", (hit, add, ir.Sym(total, sdt)), sdt)))

    if math.prod(out_shape) and math.prod(window):
        # The windows holding an element are looped over; each one's taps are unrolled.
        _each_tap(b, [1 if one else k for one, k in zip(direct, window)], per_tap, unroll=1)
    return ir.Sym(total, sdt)


for _kind, _prim in (("max", win.reduce_window_max_p), ("min", win.reduce_window_min_p),
                     ("sum", win.reduce_window_sum_p)):
    patterns[_prim] = Pattern.INJECTIVE
    index_maps[_prim] = _reduce_window(_kind)
    gathers[_prim] = lambda e: windows_overlap(e.params["window_dimensions"],
                                               e.params["window_strides"],
                                               e.params["window_dilation"])
patterns[win.select_and_scatter_add_p] = Pattern.INJECTIVE
# Each element reads its window's source and every operand element of that window.
gathers[win.select_and_scatter_add_p] = lambda e: math.prod(e.params["window_dimensions"]) > 1
index_maps[win.select_and_scatter_add_p] = _select_and_scatter_add
