"""Property test of the renderer: random expression trees of kernel IR, rendered, compiled and
run, agree with their NumPy meaning.

Leaves are loads of every dtype and literals of every sign and special value (NaN, ±inf, -0.0,
the smallest subnormal, the extremes, the most negative integers); inner nodes nest the unary
operations (neg, abs, sign, not), arithmetic, max/min, comparisons, selects and casts, in the
forms codegen emits (wrapping arithmetic on wide signed integers, ``primitive_rules.wrapping``). One
kernel per example stores every tree; it is compiled and run in C (and on OpenCL where the
machine has a device), and compiled for CUDA (sm_90) where nvcc is installed. Every result is
exact: values compare bitwise (NaNs by position: their payloads are the hardware's).
"""

from __future__ import annotations

import ctypes
import shutil

import numpy as np
import pytest
from conftest import compile_cuda_kernels
from hypothesis import given, settings
from hypothesis import strategies as st

from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.fusion.primitive_rules import wrapping
from fx.lowering.render.literals import literal
from fx.lowering.render.renderer import C, render_module
from fx.runtime import cc

N = 16  # elements per buffer
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
I8, I32, I64 = np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.int64)
U8, U16, U32 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32)
BOOL = np.dtype(np.bool_)
DTYPES = (F32, F64, I8, I32, I64, U8, U16, U32, BOOL)
FLOATS, INTS = (F32, F64), (I8, I32, I64, U8, U16, U32)


def _specials(dt: np.dtype) -> list:
    if dt == BOOL:
        return [False, True]
    if dt.kind == "f":
        fi = np.finfo(dt)
        return [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.015625,
                float(fi.max), float(-fi.max), float(fi.tiny), float(fi.smallest_subnormal),
                float(-fi.smallest_subnormal), 1e-3, -123.25]
    ii = np.iinfo(dt)
    values = {ii.min, ii.min + 1, -1, 0, 1, 2, 7, ii.max, ii.max - 1, -(2**31), 2**31 - 1}
    return sorted(v for v in values if ii.min <= v <= ii.max)


def _inputs() -> dict[np.dtype, np.ndarray]:
    """One buffer per dtype, its first values the specials, then a few ordinary ones."""
    rng = np.random.default_rng(0)
    out = {}
    for dt in DTYPES:
        vals = [v for v in _specials(dt) if dt.kind != "u" or v >= 0]
        with np.errstate(all="ignore"):
            extra = (rng.standard_normal(N) * 100 if dt.kind == "f"
                     else rng.integers(-100, 100, N))
            out[dt] = np.concatenate([np.asarray(vals, dtype=dt) if dt.kind != "u"
                                      else np.asarray(vals).astype(dt),
                                      np.asarray(extra).astype(dt)])[:N]
    return out


INPUTS = _inputs()
PARAM = {dt: f"in_{dt.name}" for dt in DTYPES}
I = ir.Sym("i", ir.INDEX)


@st.composite
def trees(draw, dt: np.dtype, depth: int) -> ir.Expr:
    """An expression of dtype ``dt`` at most ``depth`` deep."""
    if depth <= 1 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            return ir.Load(PARAM[dt], I, dt)
        specials = [v for v in _specials(dt) if dt.kind != "u" or v >= 0]
        return ir.Const(draw(st.sampled_from(specials)), dt)
    sub = lambda d=dt: trees(d, depth - 1)  # noqa: E731
    kinds = ["unary", "binary", "select", "cast"]
    if dt == BOOL:
        kinds.append("compare")
    kind = draw(st.sampled_from(kinds))
    if kind == "unary":
        op = draw(st.sampled_from(["not"] if dt == BOOL else
                                  ["neg", "abs", "sign"] + (["not"] if dt in INTS else [])))
        return ir.Op(wrapping(op, dt), (draw(sub()),), dt)
    if kind == "binary":
        ops = (["and", "or", "xor"] if dt == BOOL else
               ["add", "sub", "mul", "max", "min"] + (["div"] if dt in FLOATS else [])
               + (["and", "or", "xor"] if dt in INTS else []))
        op = draw(st.sampled_from(ops))
        return ir.Op(wrapping(op, dt), (draw(sub()), draw(sub())), dt)
    if kind == "select":
        return ir.Op("select", (draw(sub(BOOL)), draw(sub()), draw(sub())), dt)
    if kind == "compare":
        src = draw(st.sampled_from([d for d in DTYPES if d != BOOL]))
        op = draw(st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge"]))
        return ir.Op(op, (draw(sub(src)), draw(sub(src))), BOOL)
    # A cast with NumPy's meaning in C: float -> integer conversions saturate in fx's own
    # way (the prelude's fx_f2*), so sources are integers and bools, or floats to floats.
    srcs = [d for d in DTYPES if d != dt and (dt in FLOATS or d not in FLOATS)]
    src = draw(st.sampled_from(srcs))
    return ir.Op("cast", (draw(sub(src)),), dt)


def _max_min(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """jax's max/min: a NaN operand wins; of two zeros max is +0 and min is -0."""
    if a.dtype.kind != "f":
        return np.maximum(a, b) if op == "max" else np.minimum(a, b)
    pick = (a > b) if op == "max" else (a < b)
    out = np.where(pick, a, b)
    zeros = (a == 0) & (b == 0)
    signed = np.signbit(a) & np.signbit(b) if op == "max" else np.signbit(a) | np.signbit(b)
    out = np.where(zeros, np.where(signed, -0.0, 0.0).astype(a.dtype), out)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, out).astype(a.dtype)


def meaning(e: ir.Expr) -> np.ndarray:
    """NumPy's value of ``e`` at every index (integers wrap, as XLA's do)."""
    if isinstance(e, ir.Load):
        return INPUTS[e.dtype]
    if isinstance(e, ir.Const):
        return np.full(N, e.value).astype(e.dtype) if e.dtype.kind != "u" else \
            np.full(N, e.value, dtype=e.dtype)
    args = [meaning(a) for a in e.args]
    op = e.op.removesuffix("_wrap")
    with np.errstate(all="ignore"):
        if op == "neg":
            return np.negative(args[0])
        if op == "abs":
            return np.abs(args[0])
        if op == "sign":
            x = args[0]
            return np.where(x > 0, 1, np.where(x < 0, -1, x)).astype(e.dtype)
        if op == "not":
            return np.logical_not(args[0]) if e.dtype == BOOL else np.invert(args[0])
        if op in ("max", "min"):
            return _max_min(op, *args)
        if op == "select":
            return np.where(args[0], args[1], args[2]).astype(e.dtype)
        if op == "cast":
            return args[0] != 0 if e.dtype == BOOL else args[0].astype(e.dtype)
        fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
              "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
              "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
              "gt": np.greater, "ge": np.greater_equal}[op]
        return fn(*args).astype(e.dtype)


def _kernel(exprs: list[ir.Expr]) -> ir.Kernel:
    params = tuple(ir.Param(PARAM[dt], dt, N, False) for dt in DTYPES) + tuple(
        ir.Param(f"out{j}", e.dtype, N, True) for j, e in enumerate(exprs))
    body = tuple(ir.Store(f"out{j}", I, e) for j, e in enumerate(exprs))
    return ir.Kernel("k", params, (ir.Loop("i", N, body, parallel=True),), work=N)


def _entry(k: ir.Kernel) -> str:
    """An exported C function calling the (static) kernel with an array of pointers."""
    args = ", ".join(f"(void*)p[{j}]" for j in range(len(k.params)))
    return f"void entry(void** p) {{ k({args}); }}"


def _run_c(k: ir.Kernel) -> list[np.ndarray]:
    lib = cc.build(render_module([k], C, _entry(k)))
    outs = [np.zeros(N, p.dtype) for p in k.params if p.is_output]
    bufs = [INPUTS[dt] for dt in DTYPES] + outs
    ptrs = (ctypes.c_void_p * len(bufs))(*[b.ctypes.data for b in bufs])
    lib.entry(ptrs)
    return outs


def _run_opencl(k: ir.Kernel) -> list[np.ndarray] | None:
    try:
        import pyopencl as cl
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except Exception:  # no pyopencl or no OpenCL platform on this machine
        return None
    if not devices or "cl_khr_fp64" not in devices[0].extensions:
        return None
    from fx.lowering.render.opencl_dialect import OPENCL

    ctx = cl.Context([devices[0]])
    queue = cl.CommandQueue(ctx)
    prog = cl.Program(ctx, render_module([k], OPENCL)).build()
    mf = cl.mem_flags
    ins = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=INPUTS[dt]) for dt in DTYPES]
    outs = [np.zeros(N, p.dtype) for p in k.params if p.is_output]
    dev = [cl.Buffer(ctx, mf.WRITE_ONLY, o.nbytes) for o in outs]
    prog.k(queue, (N,), None, *ins, *dev)
    for o, d in zip(outs, dev, strict=True):
        cl.enqueue_copy(queue, o, d)
    queue.finish()
    return outs


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    if got.dtype.kind == "f":
        nan = np.isnan(want)
        return bool(np.array_equal(np.isnan(got), nan)
                    and np.array_equal(got[~nan].view(f"u{got.itemsize}"),
                                       want[~nan].view(f"u{want.itemsize}")))
    return bool(np.array_equal(got, want))


def _check(exprs: list[ir.Expr], outs: list[np.ndarray], where: str) -> None:
    for j, e in enumerate(exprs):
        want = meaning(e)
        assert _same(outs[j], want), (
            f"{where}: tree {j} {e}\n got  {outs[j]}\n want {want}")


expressions = st.lists(st.sampled_from(DTYPES).flatmap(lambda dt: trees(dt, 5)),
                       min_size=8, max_size=24)


@pytest.mark.skipif(cc.compiler() is None, reason="no C compiler")
@settings(max_examples=15)
@given(expressions)
def test_random_expression_trees_render_to_valid_code_with_numpys_meaning(exprs):
    k = _kernel(exprs)
    _check(exprs, _run_c(k), "C")
    outs = _run_opencl(k)
    if outs is not None:
        _check(exprs, outs, "OpenCL")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@settings(max_examples=3)
@given(st.lists(expressions, min_size=4, max_size=4))
def test_random_expression_trees_compile_for_cuda(batches):
    kernels = [_kernel(exprs).renamed(f"k{j}") for j, exprs in enumerate(batches)]
    ok, report = compile_cuda_kernels(kernels)
    assert ok, report


SPECIAL_LITERALS = [(v, dt) for dt in DTYPES for v in _specials(dt) if dt.kind != "u" or v >= 0]


@pytest.mark.parametrize("value,dtype", SPECIAL_LITERALS,
                         ids=[f"{dt.name}:{v!r}" for v, dt in SPECIAL_LITERALS])
def test_every_literal_is_an_atom(value, dtype):
    # Whatever the value, an operator before the literal keeps its meaning: the text is a
    # name, a call, a parenthesized expression or an unsigned number.
    text = literal(value, dtype)
    assert not text.startswith("-"), text
    if text.startswith("("):
        depth = 0
        for pos, ch in enumerate(text):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            assert depth > 0 or pos == len(text) - 1, f"{text}: not one parenthesized atom"
