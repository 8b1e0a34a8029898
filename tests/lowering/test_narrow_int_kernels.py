"""8- and 16-bit integers and uint64 in generated kernels: every elementwise primitive, the
reductions and the conversions compile to C (and CUDA) kernels, never NumPy steps, and give
eager fx's and jax's bits on each type's edge values (min, max, 0, -1, the shift widths, and
every pair of them: wrap-around, division by zero and INT_MIN / -1, out-of-range shifts).

Each table is one jitted program per dtype (a compile per program, not per op). The CUDA
dialect is compiled with nvcc for sm_90 and its elementwise kernels are run on the CPU through
``cuda_emulation``.
"""

from __future__ import annotations

import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import compile_cuda_kernels
from cuda_emulation import build, run

import fx
import fx.lax as flax
import fx.numpy as fnp
from fx.lowering.pipeline import lower

NARROW = ("int8", "int16", "uint8", "uint16", "uint64")
ALL = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
       "float16", "bfloat16", "float32", "float64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
KERNELS = {"cpu.fused_elementwise", "cpu.fused_reduction", "cpu.column_reduction"}

# One entry per primitive: ``fn(lax, x, y)`` with ``lax`` fx.lax or jax.lax (whose abs refuses
# unsigned operands: there the identity fx's abs is).
ELEMENTWISE = [
    ("add", lambda lax, x, y: lax.add(x, y)),
    ("sub", lambda lax, x, y: lax.sub(x, y)),
    ("mul", lambda lax, x, y: lax.mul(x, y)),
    ("neg", lambda lax, x, y: lax.neg(x)),
    ("div", lambda lax, x, y: lax.div(x, y)),
    ("rem", lambda lax, x, y: lax.rem(x, y)),
    ("max", lambda lax, x, y: lax.max(x, y)),
    ("min", lambda lax, x, y: lax.min(x, y)),
    ("abs", lambda lax, x, y: lax.abs(x) if lax is flax or x.dtype.kind == "i" else x),
    ("sign", lambda lax, x, y: lax.sign(x)),
    ("not", lambda lax, x, y: lax.bitwise_not(x)),
    ("and", lambda lax, x, y: lax.bitwise_and(x, y)),
    ("or", lambda lax, x, y: lax.bitwise_or(x, y)),
    ("xor", lambda lax, x, y: lax.bitwise_xor(x, y)),
    ("eq", lambda lax, x, y: lax.eq(x, y)),
    ("ne", lambda lax, x, y: lax.ne(x, y)),
    ("lt", lambda lax, x, y: lax.lt(x, y)),
    ("le", lambda lax, x, y: lax.le(x, y)),
    ("gt", lambda lax, x, y: lax.gt(x, y)),
    ("ge", lambda lax, x, y: lax.ge(x, y)),
    ("shift_left", lambda lax, x, y: lax.shift_left(x, y)),
    ("shift_right_logical", lambda lax, x, y: lax.shift_right_logical(x, y)),
    ("shift_right_arithmetic", lambda lax, x, y: lax.shift_right_arithmetic(x, y)),
    ("population_count", lambda lax, x, y: lax.population_count(x)),
    ("clz", lambda lax, x, y: lax.clz(x)),
    ("square", lambda lax, x, y: lax.integer_pow(x, 2)),
    ("fifth power", lambda lax, x, y: lax.integer_pow(x, 5)),
    ("clamp", lambda lax, x, y: lax.clamp(lax.min(x, y), x, lax.max(y, x))),
    ("select", lambda lax, x, y: lax.select(lax.lt(x, y), y, x)),
    ("fused chain", lambda lax, x, y: lax.sub(lax.mul(lax.add(x, y), x), lax.neg(y))),
]

REDUCTIONS = [
    ("row sum", lambda lax, x: lax.reduce_sum(x, (1,))),
    ("row max", lambda lax, x: lax.reduce_max(x, (1,))),
    ("row min", lambda lax, x: lax.reduce_min(x, (1,))),
    ("row prod", lambda lax, x: lax.reduce_prod(x, (1,))),
    ("column sum", lambda lax, x: lax.reduce_sum(x, (0,))),
    ("column max", lambda lax, x: lax.reduce_max(x, (0,))),
    ("column min", lambda lax, x: lax.reduce_min(x, (0,))),
    ("column prod", lambda lax, x: lax.reduce_prod(x, (0,))),
    ("and", lambda lax, x: lax.reduce_and(x, (1,))),
    ("or", lambda lax, x: lax.reduce_or(x, (0,))),
    ("argmax", lambda lax, x: lax.argmax(x, 1, np.int32)),
    ("argmin", lambda lax, x: lax.argmin(x, 0, np.int64)),
    # bool max/min share uint8's C type and must stay bool reductions.
    ("bool max", lambda lax, x: lax.reduce_max(lax.gt(x, lax.rev(x, (1,))), (1,))),
    ("bool min", lambda lax, x: lax.reduce_min(lax.ge(x, lax.rev(x, (1,))), (1,))),
    ("sum of squares", lambda lax, x: lax.reduce_sum(lax.mul(x, x), (1,))),
]


def _edges(dt: str) -> np.ndarray:
    info, bits = np.iinfo(dt), np.dtype(dt).itemsize * 8
    vals = {info.min, info.min + 1, 0, 1, 2, 3, 7, bits - 1, bits, info.max - 1, info.max}
    if info.min < 0:
        vals |= {-1, -2, -bits}
    return np.array(sorted(vals), dt)


def _pairs(dt: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.meshgrid(_edges(dt), _edges(dt))
    return x.ravel(), y.ravel()


def _rows(dt: str) -> np.ndarray:
    info = np.iinfo(dt)
    x = np.random.default_rng(0).integers(info.min, info.max, (7, 67), dtype=dt, endpoint=True)
    x[0], x[1], x[2, ::3], x[3, 5:9] = info.max, info.min, 0, info.max  # ties, extremes
    return x


def _table(table, lax):
    return lambda *args: tuple(fn(lax, *args) for _, fn in table)


def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint8) if a.dtype != np.bool_ else a.astype(np.uint8)


def _mismatches(names, got, want) -> list[str]:
    """The names whose results differ in any bit."""
    bad = []
    for name, g, w in zip(names, got, want):
        g, w = np.asarray(g).ravel(), np.asarray(w).ravel()
        assert g.dtype == w.dtype, f"{name}: dtype {g.dtype} != {w.dtype}"
        differ = (_bits(g).reshape(g.size, -1) != _bits(w).reshape(w.size, -1)).any(1)
        if differ.any():
            at = np.flatnonzero(differ)[:4]
            bad.append(f"{name} at {at}: {g[at]} != {w[at]}")
    return bad


def _steps(f, *args, backend="cpu"):
    return lower(fx.make_jaxpr(f)(*[fnp.asarray(a) for a in args]), backend)


def _assert_kernels_only(f, *args):
    impls = [s.choice.impl.name for s in _steps(f, *args).steps]
    assert impls and set(impls) <= KERNELS, impls


def _eager_and_jax(table, *args):
    f, names = _table(table, flax), [n for n, _ in table]
    _assert_kernels_only(f, *args)
    got = fx.jit(f)(*[fnp.asarray(a) for a in args])
    eager = f(*[fnp.asarray(a) for a in args])
    oracle = jax.jit(_table(table, jax.lax))(*[jnp.asarray(a) for a in args])
    return names, got, eager, oracle


@pytest.mark.parametrize("dt", NARROW)
def test_elementwise_primitives_run_as_kernels_with_eager_and_jax_bits(dt):
    x, y = _pairs(dt)
    names, got, eager, oracle = _eager_and_jax(ELEMENTWISE, x, y)
    assert not _mismatches(names, got, eager)
    assert not _mismatches(names, got, oracle)


@pytest.mark.parametrize("dt", NARROW)
def test_reductions_run_as_kernels_with_eager_and_jax_bits(dt):
    names, got, eager, oracle = _eager_and_jax(REDUCTIONS, _rows(dt))
    assert not _mismatches(names, got, eager)
    assert not _mismatches(names, got, oracle)


@pytest.mark.parametrize("dt", NARROW)
def test_conversions_from_narrow_ints_to_every_dtype(dt):
    table = [(to, lambda lax, x, to=to: lax.convert_element_type(x, to)) for to in ALL]
    table += [("int32 to " + dt, lambda lax, x: lax.convert_element_type(
        lax.convert_element_type(x, "int32"), dt))]
    names, got, eager, oracle = _eager_and_jax(table, np.concatenate([_edges(dt), _rows(dt)[4]]))
    assert not _mismatches(names, got, eager)
    assert not _mismatches(names, got, oracle)


_SPECIAL = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -0.5, 0.7, -1.5, 1.5, 127.5, 128.0,
                     -128.7, -129.0, 255.9, 256.0, 32767.6, -32769.0, 65535.4, 65536.0, 1e9,
                     -1e30, 2.0**63, 0.75 * 2.0**64, 2.0**64, 1e30])


def test_float_to_narrow_int_truncates_and_saturates_as_jax():
    # NaN -> 0, toward zero, saturated at the bounds (float16 and bfloat16 through float32).
    with np.errstate(over="ignore"):
        args = [_SPECIAL.astype(jnp.dtype(f)) for f in FLOATS]
    table = [(f"{src}->{to}", lambda lax, *a, k=k, to=to: lax.convert_element_type(a[k], to))
             for k, src in enumerate(FLOATS) for to in NARROW]
    names, got, eager, oracle = _eager_and_jax(table, *args)
    assert not _mismatches(names, got, eager)
    assert not _mismatches(names, got, oracle)


_BITCASTS = [("int8", "uint8"), ("int16", "uint16"), ("int32", "uint32"), ("int64", "uint64"),
             ("float32", "int32"), ("float32", "uint32"), ("float64", "int64"),
             ("float64", "uint64")]


def test_bitcasts_between_integers_and_floats_keep_every_bit():
    # Both ways for each pair, from bit patterns that include NaN payloads and -0.0.
    rng = np.random.default_rng(2)
    args = []
    for a, _ in _BITCASTS:
        raw = rng.integers(0, 256, 64 * np.dtype(a).itemsize, dtype=np.uint8).view(a).copy()
        if a.startswith("float"):
            raw[:3] = np.array([-0.0, np.inf, np.nan], a)
            payloads = [0x7FC00001, 0xFFA00000] if a == "float32" else [0x7FF0000000000001,
                                                                          0xFFF8000000000123]
            raw[3:5] = np.array(payloads, f"uint{raw.itemsize * 8}").view(a)
        args.append(raw)
    table = []
    for k, (a, b) in enumerate(_BITCASTS):
        table.append((f"{a}->{b}", lambda lax, *x, k=k, b=b: lax.bitcast_convert_type(x[k], b)))
        table.append((f"{a}->{b}->{a}", lambda lax, *x, k=k, a=a, b=b: lax.bitcast_convert_type(
            lax.bitcast_convert_type(lax.add(x[k], x[k]) if a[0] != "f" else x[k], b), a)))
    names, got, eager, oracle = _eager_and_jax(table, *args)
    assert not _mismatches(names, got, eager)
    assert not _mismatches(names, got, oracle)


def test_eager_division_and_saturating_conversion_match_jax():
    # Once wrong in the NumPy impls: np.abs(INT_MIN) wrapped in div, and float64 clipping to
    # 2**64 - 1 gave 2**64, which astype(uint64) maps to 0.
    x, y = _pairs("int8")
    div = flax.div(fnp.asarray(x), fnp.asarray(y))
    conv = flax.convert_element_type(fnp.asarray(np.array([np.inf, 2.0**64])), "uint64")
    assert np.array_equal(np.asarray(div), np.asarray(jax.lax.div(x, y)))
    assert np.array_equal(np.asarray(conv), np.full(2, 2**64 - 1, np.uint64))


def test_bool_and_uint8_reductions_stay_apart():
    x = _rows("uint8")
    src = _steps(_table(REDUCTIONS, flax), x).source
    assert "reduction(fx_max:" in src and "reduction(fx_min:" in src  # both vectorized
    # One uint8 max reduction and one bool max reduction over the same row.
    got = fx.jit(lambda a: (flax.reduce_max(a, (1,)), flax.reduce_max(a > 200, (1,))))(
        fnp.asarray(x))
    assert np.array_equal(np.asarray(got[0]), x.max(1))
    assert np.array_equal(np.asarray(got[1]), (x > 200).any(1))


# --- the CUDA dialect ------------------------------------------------------------------------


def _cuda_programs():
    for dt in NARROW:
        yield _table(ELEMENTWISE, flax), _pairs(dt)
        yield _table(REDUCTIONS, flax), (_rows(dt),)
        yield (lambda x: tuple(flax.convert_element_type(x, to) for to in ALL)), (_edges(dt),)
    yield (lambda x: tuple(flax.convert_element_type(x, to) for to in NARROW)), (_SPECIAL,)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_narrow_int_kernels_compile_for_sm90_without_spills():
    kernels = [k for f, args in _cuda_programs() for k in _steps(f, *args, backend="cuda").kernels]
    ok, report = compile_cuda_kernels(kernels)
    assert ok, report


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (C++20)")
@pytest.mark.parametrize("dt", ["int8"] + [pytest.param(d, marks=pytest.mark.slow)
                                 for d in ("uint16", "uint64")])  # signed, promoted, 64-bit
def test_cuda_elementwise_kernel_gives_eager_bits(dt):
    # The CUDA source run on the CPU: its integer spellings (promotion casts, shifts,
    # divisions) are the C dialect's shared ones, checked here through the CUDA renderer.
    x, y = _pairs(dt)
    f = _table(ELEMENTWISE, flax)
    low = _steps(f, x, y, backend="cuda")
    values = dict(zip(low.jaxpr.invars, (x, y)))
    for step in low.steps:
        assert step.choice.impl.name == "cuda.fused_elementwise"
        outs = {v: np.zeros(v.aval.shape, v.aval.dtype) for v in step.outputs}
        run(build(low.source, step.kernel.name),
            [values[v] for v in step.inputs] + list(outs.values()), (2, 1), 64)
        values.update(outs)
    eager = f(fnp.asarray(x), fnp.asarray(y))
    got = [values[v] for v in low.jaxpr.outvars]
    names = [n for n, _ in ELEMENTWISE]
    assert not _mismatches(names, got, eager)
