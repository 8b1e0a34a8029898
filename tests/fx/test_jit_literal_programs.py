"""Random fx programs full of literals, compiled by ``fx.jit`` on every backend the machine has
and compared with eager ``fx``: generated code is always valid C (and OpenCL C and CUDA), and
means what the program means.

A program is a tuple of expressions, written as Python source over one input per dtype
(``x_float32``, ``x_float64``, ``x_int32``, ``x_uint32``, ``x_bool``: arrays sprinkled with the
dtype's special values; ``t_float32``, ``t_float64``: tame ones, see below). Leaves are the
inputs and literals of every sign and special value (0.0, -0.0, ±1, ±0.5, the smallest normal
and subnormal, the largest finite, ±inf, NaN of both signs, INT32_MIN/INT32_MAX, the uint32
maximum, True/False), each spelled as a weakly typed Python scalar, a typed 0-d fx or NumPy
array, or a literal broadcast to the operand's shape (``full_like``, ``broadcast_to``: what a
kernel renders as a constant operand; a scalar literal alone is folded at compile time).
Inner nodes nest the unary operations (neg, abs, sign, not/invert, floor, sqrt and a few
transcendental ones), binary operations with literals on either side (arithmetic, max/min,
bitwise, integer division and shifts by any amount), comparisons, selects and casts, and
``vmap``'d reductions (sum, mean, max, min, prod, any, all) of such expressions of one row,
and their gradients: ``grad(lambda x: -mean(vmap(lambda r: -sum(pre(r)))(x)))``, the shape
that once rendered ``(--0.015625f)`` (issue 27).

Each output is compared with eager fx bitwise (NaN payloads aside) where its jaxpr is exact
(``jit_rows._is_exact``: integer, bool, neg/abs/max/min/select/compare, and correctly rounded
float operations), within a tolerance otherwise. Inexact reductions (sum, mean, prod) of
floats read the tame inputs and tame literals only: moderate values, zeros, infinities and
NaN, whose sums and products are the same in any order up to rounding (a row holding the
largest float twice overflows in one order and not in another).

Backends: "cpu" always, "opencl" where ``platforms.OPENCL`` has a device (PoCL in CI), and
CUDA compiled for sm_90 with nvcc where it is installed (lowered for the "cuda" backend: no
GPU needed). The session hook in conftest.py also compiles every kernel these tests generate
for CUDA.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import numpy as np
import pytest
from conftest import compile_cuda_kernels
from harness import assert_allclose, assert_bitwise, to_fx
from hypothesis import given, settings
from hypothesis import strategies as st
from jit_rows import _is_exact

import fx
import fx.numpy as fnp
from fx.runtime import platforms

F32, F64, I32, U32, BOOL = (np.dtype(d) for d in ("float32", "float64", "int32", "uint32", "bool"))
DTYPES = (F32, F64, I32, U32, BOOL)
FLOATS, INTS = (F32, F64), (I32, U32)
PARAMS = tuple(f"x_{dt.name}" for dt in DTYPES) + tuple(f"t_{dt.name}" for dt in FLOATS)
TOL = {F32: 2e-5, F64: 1e-11}  # test_jit_random_programs.CHAIN_TOL: chains of ops


def _special(dt: np.dtype) -> tuple:
    """Literals of every sign and special value of ``dt`` (Python scalars)."""
    if dt == BOOL:
        return (False, True)
    if dt.kind == "f":
        fi = np.finfo(dt)
        return (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -0.015625, float(fi.tiny),
                float(fi.smallest_subnormal), -float(fi.smallest_subnormal), float(fi.max),
                -float(fi.max), np.inf, -np.inf, np.nan, -np.nan, 3.0, -123.25)
    ii = np.iinfo(dt)
    values = (0, 1, -1, 2, -2, 7, 31, 32, 33, ii.min, ii.min + 1, ii.max, ii.max - 1)
    return tuple(v for v in values if ii.min <= v <= ii.max)


# Values whose sums and products do not depend on the order (up to rounding).
TAME = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, -0.015625, np.inf, -np.inf, np.nan)


def _src(v, dt: np.dtype) -> str:
    """``v`` as Python source (``nan``, ``inf`` are names in the programs' namespace)."""
    if dt == BOOL:
        return repr(bool(v))
    if dt.kind == "f":
        v = float(v)
        if v != v:
            return "-nan" if np.signbit(v) else "nan"
        if v in (np.inf, -np.inf):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(int(v))


NS = {"fx": fx, "fnp": fnp, "lax": fx.lax, "np": np, "nan": float("nan"), "inf": float("inf")}

# Negation, the operator the renderer once spelled '(-{0})' around a negative literal, is
# drawn most often.
NEG = ("-{}", "-{}", "-{}", "fnp.negative({})", "fnp.negative({})")
UNARY = {  # dtype kind -> spellings of one operand ({} is the operand)
    "f": (*NEG, "abs({})", "fnp.abs({})", "fnp.sign({})", "fnp.floor({})", "fnp.ceil({})",
          "fnp.trunc({})", "fnp.round({})", "fnp.rint({})", "fnp.sqrt({})", "fnp.exp({})",
          "fnp.exp2({})", "fnp.expm1({})", "fnp.tanh({})", "fnp.sinh({})", "fnp.sin({})",
          "fnp.log({})"),
    "i": (*NEG, "abs({})", "fnp.abs({})", "~{}", "fnp.invert({})", "fnp.sign({})"),
    "b": ("~{}", "fnp.logical_not({})", "fnp.invert({})"),
}
UNARY["u"] = UNARY["i"]
# Operators need an fx operand (Python would compute them on two scalars): spelled as the
# function when the operand is a weak literal.
FUNCTION_OF = {"-{}": "fnp.negative({})", "abs({})": "fnp.abs({})", "~{}": "fnp.invert({})"}
NESTED = {  # {} an operand, {c} a literal
    "f": ("-{c}", "-{c}", "-{c}", "abs(-{c})", "fnp.sign(-{c})", "-(-{})", "-fnp.negative({})",
          "-({c} * {})", "-({} * {c})", "abs(-({c} * {}))", "-abs({})", "-fnp.sign({})",
          "-({} - {c})", "-fnp.maximum({c}, -{})"),
    "i": ("-{c}", "-{c}", "abs(-{c})", "fnp.sign(-{c})", "~{c}", "-~{c}", "~-{c}", "-(-{})",
          "-({c} * {})", "-({} * {c})", "~(~{})", "-(~{})", "-fnp.minimum({c}, -{})"),
}
NESTED["u"] = NESTED["i"]
BINARY = {
    "f": ("({} + {})", "({} - {})", "({} * {})", "({} / {})", "fnp.maximum({}, {})",
          "fnp.minimum({}, {})", "({} % {})"),
    "i": ("({} + {})", "({} - {})", "({} * {})", "fnp.maximum({}, {})", "fnp.minimum({}, {})",
          "({} & {})", "({} | {})", "({} ^ {})", "({} // {})", "({} % {})", "({} << {})",
          "({} >> {})"),
    "b": ("({} & {})", "({} | {})", "({} ^ {})", "fnp.logical_and({}, {})",
          "fnp.maximum({}, {})"),
}
BINARY["u"] = BINARY["i"]
COMPARE = ("<", "<=", ">", ">=", "==", "!=")
# Exact elementwise spellings (no transcendental function): the operands of a float product.
EXACT_SPELLINGS = {"-{}", "abs({})", "fnp.negative({})", "fnp.abs({})", "fnp.sign({})",
                   "({} + {})", "({} - {})", "({} * {})", "fnp.maximum({}, {})",
                   "fnp.minimum({}, {})"}
REDUCTIONS = {"f": ("sum", "mean", "max", "min", "prod"), "i": ("sum", "max", "min", "prod"),
              "u": ("sum", "max", "min", "prod"), "b": ("any", "all")}
INEXACT_REDUCTIONS = ("sum", "mean", "prod")


@dataclass(frozen=True)
class Node:
    src: str
    fx_value: bool  # False: a Python scalar or a NumPy array (their operators are not fx's)


@st.composite
def literal(draw, dt: np.dtype, like: str, tame: bool, broadcast: bool = True,
            operand: bool = False) -> Node:
    """A literal of ``dt`` in one of its spellings; ``like``: an input of ``dt`` whose shape a
    broadcast literal takes (``broadcast=False``: a scalar). ``operand``: the operand of a
    unary operation, mostly negative (sign bit set) and broadcast: a kernel's constant operand
    (an operation on a scalar literal is folded before code generation)."""
    pool = TAME if tame and dt.kind == "f" else _special(dt)
    if operand and draw(st.integers(0, 3)):
        pool = [v for v in pool if np.signbit(v)] or pool
    v = _src(draw(st.sampled_from(pool)), dt)
    hows = ["weak", "weak", "fx", "numpy"] + (["full_like", "full_like", "broadcast_to"]
                                              if broadcast else [])
    if operand and draw(st.integers(0, 3)):
        hows = ["full_like", "broadcast_to"]
    how = draw(st.sampled_from(hows))
    if how == "weak":
        return Node(v, False)
    if how == "fx":
        return Node(f"fnp.asarray({v}, dtype='{dt.name}')", True)
    if how == "numpy":
        return Node(f"np.asarray({v}, dtype='{dt.name}')", False)  # NumPy's operators
    if how == "full_like":
        return Node(f"fnp.full_like({like}, {v})", True)
    return Node(f"fnp.broadcast_to(fnp.asarray({v}, dtype='{dt.name}'), {like}.shape)", True)


def _fx(n: Node, dt: np.dtype) -> str:
    return n.src if n.fx_value else f"fnp.asarray({n.src}, dtype='{dt.name}')"


@st.composite
def expression(draw, dt: np.dtype, depth: int, row: str | None = None,
               tame: bool = False, exact: bool = False, leaf: bool = True,
               kinds: tuple[str, ...] | None = None) -> Node:
    """An expression of dtype ``dt`` at most ``depth`` deep. ``row``: inside a ``vmap``, the
    one input (a row of ``dt``), and no node that reads another input; ``tame``: literals from
    ``TAME``; ``exact``: exact elementwise operations only; ``leaf=False``: not a leaf;
    ``kinds``: the kinds of node the root may be."""
    like = row or f"x_{dt.name}"
    if depth <= 1 or leaf and draw(st.integers(0, 4)) == 0:
        if draw(st.integers(0, 2)) == 0:
            return Node(like, True)
        return draw(literal(dt, like, tame))
    sub = lambda d=dt, **kw: expression(  # noqa: E731
        d, depth - 1, row, **{"tame": tame and d == dt, "exact": exact, **kw})
    if kinds is None:
        kinds = ("unary", "unary", "binary", "binary", "where") + (
            ("nested", "nested") if dt != BOOL else ("compare", "compare"))
        if row is None:
            kinds += ("cast", "reduce") + (("grad",) if dt.kind == "f" else ())
    kind = draw(st.sampled_from(kinds))
    if kind == "unary":
        spellings = [s for s in UNARY[dt.kind] if not exact or s in EXACT_SPELLINGS]
        s = draw(st.sampled_from(spellings))
        a = draw(literal(dt, like, tame, operand=True) if draw(st.booleans()) else sub())
        return Node((s if a.fx_value else FUNCTION_OF.get(s, s)).format(a.src), True)
    if kind == "nested":  # the unary nests of issue 27, around a literal or an operand
        s = draw(st.sampled_from(NESTED[dt.kind]))
        c = draw(literal(dt, like, tame, operand=True))
        return Node(s.format(draw(sub()).src, c=_fx(c, dt)), True)
    if kind in ("binary", "compare"):
        d = dt if kind == "binary" else draw(st.sampled_from(DTYPES if row is None else (dt,)))
        s = (draw(st.sampled_from([s for s in BINARY[dt.kind]
                                   if not exact or s in EXACT_SPELLINGS]))
             if kind == "binary" else f"({{}} {draw(st.sampled_from(COMPARE))} {{}})")
        a, b = draw(sub(d)), draw(sub(d))
        if not (a.fx_value or b.fx_value):  # a literal on either side, but one fx operand
            a = Node(_fx(a, d), True)
        return Node(s.format(a.src, b.src), True)
    if kind == "where":
        if row is not None and dt != BOOL:  # a condition on the row itself
            op, lit = draw(st.sampled_from(COMPARE)), draw(literal(dt, row, tame))
            c = f"({row} {op} {lit.src})"
        else:
            c = draw(sub(BOOL)).src
        a, b = draw(sub()), draw(sub())
        return Node(f"fnp.where({c}, {a.src}, {b.src})", True)
    if kind == "cast":
        # Float to integer conversions included: eager and jit share fx's saturating meaning.
        src_dt = draw(st.sampled_from([d for d in DTYPES if d != dt]))
        return Node(f"lax.convert_element_type({draw(sub(src_dt)).src}, '{dt.name}')", True)
    # A reduction of each row, or the gradient of the mean of those.
    red = draw(st.sampled_from(REDUCTIONS[dt.kind]))
    inexact = dt.kind == "f" and red in INEXACT_REDUCTIONS
    pre = draw(expression(dt, 2 if red == "prod" else 3, "r", tame=inexact,
                          exact=red == "prod"))
    body = f"fnp.{red}({pre.src})"
    if dt != BOOL:  # a literal applied to the row's scalar
        post = draw(st.sampled_from(["{}", "-{}", "({} * {c})", "({c} * {})", "({} + {c})"]))
        body = post.format(body, c=draw(literal(dt, "r", inexact, broadcast=False)).src)
    arg = f"t_{dt.name}" if inexact else like
    mapped = f"fx.vmap(lambda r: {body})"
    if kind == "reduce":
        return Node(f"{mapped}({arg})[:, None]", True)
    outer = draw(st.sampled_from(["-{}", "{}", "({} * {c})"]))
    k = _src(draw(st.sampled_from(TAME[:9])), dt)
    loss = outer.format(f"fnp.mean({mapped}(g))", c=k)
    return Node(f"fx.grad(lambda g: {loss})({arg})", True)


@dataclass(frozen=True)
class Program:
    """``outputs``: (dtype, source) pairs over ``PARAMS``; ``shape``: every input's;
    ``seed``: of the inputs' values."""

    shape: tuple[int, int]
    outputs: tuple[tuple[str, str], ...]
    seed: int

    def __repr__(self) -> str:
        lines = [f"Program(shape={self.shape}, seed={self.seed}):"]
        lines += [f"  [{i}] {dt}: {src}" for i, (dt, src) in enumerate(self.outputs)]
        return "\n".join(lines)

    def function(self, which: int | None = None):
        """The program (or its output ``which`` alone) as a function of ``PARAMS``."""
        picked = self.outputs if which is None else self.outputs[which:which + 1]
        body = ", ".join(f"fnp.asarray({src}, dtype='{dt}')" for dt, src in picked)
        return eval(f"lambda {', '.join(PARAMS)}: ({body},)", dict(NS))  # noqa: S307

    def arguments(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        args = []
        for name in PARAMS:
            dt = np.dtype(name[2:])
            if dt == BOOL:
                args.append(rng.random(self.shape) < 0.5)
                continue
            if dt.kind == "f":
                mag = rng.uniform(0.25, 3.0, self.shape) * rng.choice([-1, 1], self.shape)
                a = mag.astype(dt)
            else:
                a = rng.integers(-9 if dt.kind == "i" else 0, 10, self.shape).astype(dt)
            pool = np.asarray(TAME if name[0] == "t" else _special(dt), np.float64 if
                              dt.kind == "f" else np.int64)
            where = rng.random(self.shape) < (0.15 if name[0] == "t" else 0.4)
            with np.errstate(all="ignore"):
                a[where] = rng.choice(pool, size=int(where.sum())).astype(dt)
            args.append(a)
        return args


SHAPES = st.sampled_from([(3, 4), (2, 5), (1, 3), (4, 1), (3, 8), (2, 33)])


@st.composite
def programs(draw, min_outputs: int = 6, max_outputs: int = 10,
             kinds: tuple[str, ...] | None = None) -> Program:
    """Programs of ``min_outputs`` to ``max_outputs`` expressions; ``kinds``: those of their
    roots (default: any)."""
    outputs = []
    for _ in range(draw(st.integers(min_outputs, max_outputs))):
        dt = draw(st.sampled_from(DTYPES + FLOATS))  # floats: the most literal spellings
        root = kinds if kinds is None or dt.kind == "f" else tuple(k for k in kinds
                                                                   if k != "grad")
        outputs.append((dt.name, draw(expression(dt, draw(st.integers(2, 4)), leaf=False,
                                                 kinds=root)).src))
    return Program(draw(SHAPES), tuple(outputs), draw(st.integers(0, 2**32 - 1)))


def _backends() -> list:
    out = ["cpu"]
    if platforms.OPENCL.available():
        out.append("opencl")
    return out


def check_program(prog: Program, backends=None) -> None:
    """``fx.jit`` of the program on each backend against eager fx, output by output: bitwise
    where the output's jaxpr is exact, within ``TOL`` (scaled by the output's largest finite
    magnitude) otherwise."""
    args = prog.arguments()
    with np.errstate(all="ignore"):
        eager = prog.function()(*to_fx(args))
        exact = [_is_exact(fx.make_jaxpr(prog.function(i))(*args))
                 for i in range(len(prog.outputs))]
    for backend in backends or _backends():
        got = fx.jit(prog.function(), backend=backend)(*args)
        assert len(got) == len(eager)
        for i, (g, e, ex) in enumerate(zip(got, eager, exact)):
            how = "exact" if ex else "inexact"
            what = f"{backend} jit vs eager, output [{i}] ({how})\n{prog!r}"
            if ex or np.asarray(e).dtype.kind not in "fc":
                assert_bitwise(g, e, what)
            else:
                e = np.asarray(e)
                t = TOL[e.dtype]
                finite = np.abs(e[np.isfinite(e)].astype(np.float64))
                scale = max(1.0, float(finite.max(initial=0.0)))
                assert_allclose(g, e, rtol=t, atol=t * scale, what=what)


@given(programs())
def test_literal_program_jit_matches_eager(prog):
    check_program(prog)


@given(programs(3, 6, kinds=("reduce", "grad", "grad")))
def test_vmapped_reductions_and_their_gradients_jit_matches_eager(prog):
    check_program(prog)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@settings(max_examples=max(2, settings().max_examples // 4))  # one nvcc run per example
@given(st.lists(programs(), min_size=3, max_size=3))
def test_literal_programs_compile_for_cuda(progs):
    # Lowered for the "cuda" backend (its own kernel shapes: grid-stride loops, vector
    # loads), which needs no GPU; compiled with nvcc for sm_90 in one translation unit.
    kernels = []
    for prog in progs:
        low = fx.jit(prog.function(), backend="cuda").lower(*prog.arguments())
        kernels += [k.renamed(f"p{len(kernels)}_{k.name}") for k in low.program.kernels]
    ok, report = compile_cuda_kernels(kernels)
    assert ok, report + "\n" + "\n".join(map(repr, progs))


# Programs that once failed, each with every backend above.
REGRESSIONS = {
    # jit(grad(-mean(vmap(-sum)))): the gradient negates the broadcast -1/64; the renderer's
    # '(-{0})' around the literal '-0.015625f' made '(--0.015625f)', a C syntax error.
    "issue-27-grad-of-negated-mean-of-negated-sums": Program((8, 8), (
        ("float32", "fx.grad(lambda g: -fnp.mean(fx.vmap(lambda r: -fnp.sum(r * r))(g)))"
                    "(t_float32)"),
        ("float64", "fx.grad(lambda g: -fnp.mean(fx.vmap(lambda r: -fnp.max(r * -0.5))(g)))"
                    "(x_float64)")), 0),
    "issue-27-negated-broadcast-literals": Program((3, 4), (
        ("float32", "-fnp.full_like(x_float32, -0.015625)"),
        ("float64", "-fnp.broadcast_to(fnp.asarray(-0.0, dtype='float64'), x_float64.shape)"),
        ("float32", "abs(-fnp.full_like(x_float32, -inf)) * x_float32"),
        ("float32", "fnp.sign(-fnp.full_like(x_float32, -nan)) + x_float32"),
        ("int32", "-fnp.full_like(x_int32, -2147483648) + (x_int32 * -fnp.full_like(x_int32, -1))"),
        ("uint32", "-fnp.full_like(x_uint32, 4294967295) - ~fnp.full_like(x_uint32, 0)")), 0),
    # PoCL evaluated exp, exp2, expm1, tanh, sinh, floor, ceil, rint, trunc and round of a
    # NaN known at compile time as garbage (rint's crashed its compiler): the OpenCL dialect
    # calls them through a NaN guard.
    "pocl-built-ins-of-a-constant-nan": Program((2, 3), tuple(
        (dt, f"fnp.{f}({arg})") for dt in ("float32", "float64")
        for f in ("exp", "exp2", "expm1", "tanh", "sinh", "floor", "ceil", "rint", "trunc",
                  "round")
        for arg in (f"fnp.full_like(x_{dt}, -nan)", f"x_{dt} - nan")), 0),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression(name):
    check_program(REGRESSIONS[name])
    low = fx.jit(REGRESSIONS[name].function(), backend="cuda").lower(
        *REGRESSIONS[name].arguments())
    if shutil.which("nvcc") is not None:
        ok, report = compile_cuda_kernels(low.program.kernels)
        assert ok, report


def test_gradient_of_prod_compiles_to_code_linear_in_the_row():
    """prod's backward pass reads each level of the product tree at two shifted indices (pads
    and slices); fusion stores such a level instead of recomputing it once per index, which
    would double the kernel's code per level (see lowering/fusion/recompute.py)."""
    def source(n):
        x = np.linspace(-2, 2, 2 * n).reshape(2, n).astype(np.float32)
        f = fx.grad(lambda g: fnp.mean(fx.vmap(lambda r: 0.5 * fnp.prod(r - 1.0))(g)))
        return len(fx.jit(f).lower(x).as_text("source"))

    # Code linear in the program: 4x the row's length (two more levels of the product tree),
    # at most 3x the source.
    assert source(16) < 3 * source(4)
