"""Index ranges (fx.lowering.codegen.index_ranges): folding what the loops' extents decide
never changes a value. Random kernels of nested loops, ``Let`` s and stores of random integer
expressions (clamps, C's truncating division and remainder, comparisons, selects) are
interpreted with C's semantics before and after ``fold_ranges`` (which splits loops at their
bounds tests), at every iteration; and a padded pooling kernel's interior is computed without
clamps or selects, its every unconditional load in bounds, its results exact."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import fx
import fx.numpy as fnp
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.index_ranges import fold_expr, fold_ranges, index_range
from fx.lowering.pipeline import lower
from fx.lowering.render.renderer import C, Renderer

I64, BOOL = ir.INDEX, ir.BOOL


def _c_div(a: int, b: int) -> int:
    q = abs(a) // b
    return q if a >= 0 else -q


def _eval(e: ir.Expr, env: dict) -> int:
    """An integer or boolean expression's value with C's semantics (ints never wrap here:
    the operands are small)."""
    if isinstance(e, ir.Const):
        return int(e.value)
    if isinstance(e, ir.Sym):
        return env[e.name]
    if isinstance(e, ir.Op):
        if e.op == "select":  # only the chosen side is evaluated, as in C
            return _eval(e.args[1] if _eval(e.args[0], env) else e.args[2], env)
        a = [_eval(x, env) for x in e.args]
        ops = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y,
               "mul": lambda x, y: x * y, "max": max, "min": min,
               "div": _c_div, "rem": lambda x, y: x - _c_div(x, y) * y,
               "lt": lambda x, y: int(x < y), "le": lambda x, y: int(x <= y),
               "gt": lambda x, y: int(x > y), "ge": lambda x, y: int(x >= y),
               "eq": lambda x, y: int(x == y), "ne": lambda x, y: int(x != y),
               "and": lambda x, y: x & y, "or": lambda x, y: x | y}
        return ops[e.op](*a)
    raise TypeError(f"cannot evaluate {e!r}")


def _run(body: tuple, env: dict, out: dict) -> None:
    """Interpret statements: ``Let`` binds, ``Store`` records ``(buf, index) -> value``
    (each buffer and index stored once)."""
    env = dict(env)
    for s in body:
        if isinstance(s, ir.Let):
            env[s.name] = _eval(s.value, env)
        elif isinstance(s, ir.Store):
            key = (s.buf, _eval(s.index, env))
            assert key not in out
            out[key] = _eval(s.value, env)
        elif isinstance(s, ir.Loop):
            for i in range(s.extent):
                _run(s.body, {**env, s.var: i}, out)


# --- random kernels --------------------------------------------------------------------------

_CMP = ("lt", "le", "gt", "ge", "eq", "ne")


@st.composite
def _int_expr(draw, names, depth):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if names and draw(st.booleans()):
            return ir.Sym(draw(st.sampled_from(names)), I64)
        return ir.const_index(draw(st.integers(-9, 9)))
    kind = draw(st.sampled_from(["add", "sub", "mul", "div", "rem", "clamp", "max", "min",
                                 "select"]))
    a = draw(_int_expr(names, depth - 1))
    if kind in ("div", "rem"):
        return ir.Op(kind, (a, ir.const_index(draw(st.integers(1, 5)))), I64)
    if kind == "clamp":  # as the index maps build them: min(max(a, lo), hi)
        lo = draw(st.integers(-3, 6))
        hi = lo + draw(st.integers(0, 8))
        return ir.Op("min", (ir.Op("max", (a, ir.const_index(lo)), I64), ir.const_index(hi)),
                     I64)
    b = draw(_int_expr(names, depth - 1))
    if kind == "select":
        return ir.Op("select", (draw(_bool_expr(names, depth - 1)), a, b), I64)
    return ir.Op(kind, (a, b), I64)


@st.composite
def _bool_expr(draw, names, depth):
    if depth > 0 and draw(st.integers(0, 2)) == 0:
        op = draw(st.sampled_from(["and", "or"]))
        return ir.Op(op, (draw(_bool_expr(names, depth - 1)),
                          draw(_bool_expr(names, depth - 1))), BOOL)
    if draw(st.integers(0, 5)) == 0:
        return ir.Const(draw(st.booleans()), BOOL)
    if names and draw(st.booleans()):  # a bounds test, as a pad's (what splits a loop)
        shifted = ir.isub(ir.Sym(draw(st.sampled_from(names)), I64),
                          ir.const_index(draw(st.integers(0, 3))))
        return ir.Op(draw(st.sampled_from(_CMP)), (shifted, ir.const_index(draw(
            st.integers(-1, 6)))), BOOL)
    return ir.Op(draw(st.sampled_from(_CMP)), (draw(_int_expr(names, max(depth - 1, 0))),
                                               draw(_int_expr(names, max(depth - 1, 0)))),
                 BOOL)


@st.composite
def _kernels(draw):
    """Up to three nested loops (extents 0-6); in each, a few lets and stores of random
    expressions of the variables in scope (loop variables and earlier lets)."""
    extents = draw(st.lists(st.integers(0, 6), min_size=1, max_size=3))
    counter = itertools.count()

    def level(k, names):
        stmts = []
        for _ in range(draw(st.integers(1, 3))):
            n = next(counter)
            if draw(st.booleans()):
                stmts.append(ir.Let(f"t{n}", draw(_int_expr(names, 3))))
                names = names + [f"t{n}"]
            elif draw(st.booleans()):
                stmts.append(ir.Store(f"s{n}", _linear(k), draw(_bool_expr(names, 2))))
            else:
                stmts.append(ir.Store(f"s{n}", _linear(k), draw(_int_expr(names, 3))))
        if k < len(extents):
            var = f"i{k}"
            stmts.append(ir.Loop(var, extents[k], level(k + 1, names + [var])))
        return tuple(stmts)

    def _linear(k):  # each iteration's own slot (a store per buffer and iteration)
        flat = ir.const_index(0)
        for j in range(k):
            flat = ir.iadd(ir.imul(flat, ir.const_index(8)), ir.Sym(f"i{j}", I64))
        return flat

    body = level(0, [])
    return ir.Kernel("k", (), body)


@settings(max_examples=25 * settings().max_examples)  # interpreted in Python: cheap examples
@given(_kernels())
def test_folding_keeps_every_value_at_every_iteration(k):
    want, got = {}, {}
    _run(k.body, {}, want)
    _run(fold_ranges(k).body, {}, got)
    assert got == want


@given(st.integers(1, 9), st.integers(-3, 3), st.integers(-3, 12))
def test_a_clamp_goes_exactly_when_the_range_makes_it_a_no_op(extent, lo, hi):
    i = ir.Sym("i", I64)
    clamp = ir.Op("min", (ir.Op("max", (i, ir.const_index(lo)), I64), ir.const_index(hi)), I64)
    k = ir.Kernel("k", (ir.Param("out", I64, 16, True),),
                  (ir.Loop("i", extent, (ir.Store("out", i, clamp),)),))
    (store,) = fold_ranges(k).body[0].body
    no_op = lo <= 0 and extent - 1 <= hi
    assert (store.value == i) == no_op


_SMALL = [(lo, hi) for lo in range(-5, 6) for hi in range(lo, 6)]


def test_each_operation_s_range_holds_every_value():
    """Exhaustively over small operand ranges: the values lie in the computed range, and a
    decided comparison or clamp agrees with every pair of values."""
    a, b = ir.Sym("a", I64), ir.Sym("b", I64)
    exprs = [ir.Op(op, (a, b), I64) for op in ("add", "sub", "mul", "max", "min")]
    exprs += [ir.Op(op, (a, ir.const_index(c)), I64) for op in ("div", "rem")
              for c in (1, 2, 3, 5)]
    exprs += [ir.Op(op, (a, b), BOOL) for op in _CMP]
    for ra, rb in itertools.product(_SMALL, _SMALL[::7]):
        ranges = {"a": ra, "b": rb}
        for e in exprs:
            r, folded = index_range(e, ranges), fold_expr(e, ranges)
            for va, vb in itertools.product(range(ra[0], ra[1] + 1), range(rb[0], rb[1] + 1)):
                env = {"a": va, "b": vb}
                v = _eval(e, env)
                assert r is not None and r[0] <= v <= r[1], (e, ranges, v, r)
                assert _eval(folded, env) == v, (e, ranges, folded)


# --- a padded pooling kernel -----------------------------------------------------------------


def _relu_pool_pad(x):
    y = fnp.maximum(x, 0)
    p = fx.lax.reduce_window(y, -np.inf, fx.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return fx.lax.pad(p, np.float32(0), ((0, 0, 0), (2, 2, 0), (2, 2, 0), (0, 0, 0)))


def _unconditional_loads(body, env, found):
    """Every load a ``Let`` makes whatever the values (not under a select), with the loop
    indices in ``env``: ``(buffer, index value)`` into ``found``."""
    for s in body:
        if isinstance(s, ir.Loop):
            for i in range(s.extent):
                _unconditional_loads(s.body, {**env, s.var: i}, found)
            continue
        stack = [getattr(s, "value", None) or getattr(s, "init", None)]
        while stack:
            e = stack.pop()
            if isinstance(e, ir.Load):
                found.append((e.buf, _eval(e.index, env)))
            elif isinstance(e, ir.Op) and e.op != "select":
                stack.extend(e.args)
        if isinstance(s, ir.Let) and np.dtype(s.value.dtype) == I64:
            env[s.name] = _eval(s.value, env)


def test_a_padded_pool_reads_in_bounds():
    x = np.zeros((2, 6, 6, 3), np.float32)
    (k,) = lower(fx.make_jaxpr(_relu_pool_pad)(x), "cpu").kernels
    found: list = []
    _unconditional_loads(k.body, {}, found)
    assert found and all(0 <= i < x.size for _, i in found)


def test_a_padded_pool_s_interior_is_computed_without_clamps_or_selects():
    x = np.zeros((64, 28, 28, 16), np.float32)  # the CNN benchmark's (loops i0 ... i3)
    (k,) = lower(fx.make_jaxpr(_relu_pool_pad)(x), "cpu").kernels
    src = Renderer(C).kernel(k)
    # The rows and columns split into border, interior, border: the window is computed
    # once, in the interior, where no index needs a clamp and no value a select.
    assert src.count("for (int64_t i1") == 3 and src.count("for (int64_t i2") == 9
    assert "fx_max_i64" not in src and "fx_min_i64" not in src and "?" not in src
    assert src.count("in0[") == 4  # the window's taps, once


def test_a_padded_pool_split_into_pieces_computes_the_same():
    x = np.random.default_rng(0).standard_normal((4, 12, 12, 16)).astype(np.float32)
    (k,) = lower(fx.make_jaxpr(_relu_pool_pad)(x), "cpu").kernels
    src = Renderer(C).kernel(k)  # (the batch and the rows are one loop at this size)
    assert "for (int64_t i2_2 = 0; i2_2 < 6;" in src and "i0_" not in src
    pooled = np.maximum(x, 0).reshape(4, 6, 2, 6, 2, 16).max(axis=(2, 4))
    want = np.pad(pooled, ((0, 0), (2, 2), (2, 2), (0, 0)))
    np.testing.assert_array_equal(np.asarray(fx.jit(_relu_pool_pad)(x)), want)
