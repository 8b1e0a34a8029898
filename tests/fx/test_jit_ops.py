"""End-to-end tests of ``fx.jit`` for every fx.lax primitive.

Every row runs one function three ways: compiled by ``fx.jit``, eagerly (each primitive's NumPy
impl), and ``jax.jit`` of its jax twin. All argument sets of a row (0-d, size-1 dims, zero-size,
special values) and all its dtypes go through ONE jitted program, which keeps the number of C
compilations (~0.1 s each) low. Results must have the same shapes and dtypes, integer and bool
results must be equal, NaNs must sit in the same places, and floats must agree within:

- jit vs eager (``JIT_TOL``): the generated float32 kernels compute exp/log/tanh/logistic/
  expm1/log1p with their own polynomials (lowering/render/prelude.h) and other functions with libm,
  where eager uses NumPy's; so float32 may differ by a few ulp (rtol = atol = 2e-6) and float64
  by libm differences (1e-12). Half precision computes in float32 and stores 16-bit: one ulp.
  Reductions and matmuls may sum in another order; their rows set a looser tolerance.
- jit vs jax: the tolerances fx's eager tests use against jax (``harness.TOL``).

``test_every_primitive_has_a_row`` traces every row and fails when an fx.lax primitive appears
in none of them and is not in ``NOT_COVERED`` with a reason. Programs of many primitives (the
patterns fusion looks for, and random ones) are in test_jit_random_programs.py.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import OpCase, check_grads_f64, check_jvp, check_vjp, check_vmap
from jit_rows import (
    ALL,
    BF16,
    BOOL,
    F16,
    F32,
    F64,
    FLOATS,
    HALF,
    I32,
    I64,
    U32,
    Row,
    check_row,
    draw,
)
from scientific_rows import ROWS as SCIENTIFIC_ROWS

import fx
import fx.lax as lax
from fx.core import Primitive
from fx.lax.elementwise_record import records

pytestmark = pytest.mark.usefixtures("strict_fallbacks")  # no unexpected NumPy fallback

# fx.lax primitives no row exercises, with the reason.
# fx.scipy.special's expi and expn (fx.lax.scipy_special): jax compiles them slowly and loops on
# their edges, so their kernels are compared with eager in test_jit_ops_scientific.py and their
# values with jax in tests/fx/scipy/test_special.py.
_VS_EAGER = "compared with eager in test_jit_ops_scientific.py, with jax in fx/scipy/test_special"
_CHECKED = ("jax's typed shard_map (check_vma) only: resolved by fx.spmd_vma before a program "
            "is lowered; compared with jax.shard_map in tests/fx/test_shard_map_vma.py")
NOT_COVERED: dict[str, str] = {"expi": _VS_EAGER, "expn": _VS_EAGER, "pvary": _CHECKED,
                               "checked_scale": _CHECKED, "checked_sum": _CHECKED}


# --- drawing arguments --------------------------------------------------------------------------


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30, -1e30, np.inf, -np.inf, np.nan])

SHAPES = {  # per arity: 0-d, rank-0 operands meeting arrays, size-1 dims, zero-size
    1: [((),), ((2, 1, 3),), ((0, 3),)],
    2: [((), ()), ((2, 3), ()), ((2, 3), (2, 3)), ((), (0, 2))],
    3: [((), (2, 3), ()), ((2, 3), (2, 3), (2, 3)), ((), (0, 2), ())],
}


def special_set(nargs: int, dtype) -> tuple:
    """Every combination of the special values (nan, ±inf, ±0, tiny, huge) over the operands."""
    grids = np.meshgrid(*[SPECIAL] * nargs, indexing="ij")
    with np.errstate(over="ignore"):  # 1e30 is inf in half precision
        return tuple(g.ravel().astype(dtype) for g in grids)


# fx.lax function names that differ from their primitive's (from the elementwise records).
_FX_NAMES = {r.name: r.function_name for r in records() if r.lax_name}
_JAX_NAMES = {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
              "not": "bitwise_not", "add_any": "add"}


def _each(module, names, aliases):
    fns = [getattr(module, aliases.get(n, n)) for n in names]
    return fns[0] if len(fns) == 1 else lambda *a: tuple(f(*a) for f in fns)


def elementwise(names: str, nargs=1, lo=-3.0, hi=3.0, dtypes=FLOATS, special=True,
                domains=None, shapes=None, name=None, **kw) -> Row:
    """A row for elementwise primitives (space-separated ``names``, all applied to the same
    operands) over SHAPES[nargs], plus every combination of special values for floats."""
    domains = domains or [(lo, hi)] * nargs
    shape_sets = shapes or SHAPES[nargs]

    def make(rng, dt):
        sets = [tuple(draw(rng, s, dt, *d) for s, d in zip(shapes, domains))
                for shapes in shape_sets]
        if special and dt.kind == "f":
            sets.append(special_set(nargs, dt))
        return sets

    names_ = names.split()
    return Row(name or "-".join(names_), _each(lax, names_, _FX_NAMES),
               _each(jax.lax, names_, _JAX_NAMES), make, dtypes, **kw)


def fixed(*arrays_per_set) -> Callable:
    """A ``make`` returning these argument tuples (cast to the row dtype where floating)."""
    def make(rng, dt):
        return [tuple(np.asarray(a, dt) if np.asarray(a).dtype.kind == "f" else np.asarray(a)
                      for a in s) for s in arrays_per_set]

    return make


def shaped(*shape_sets, lo=-3.0, hi=3.0) -> Callable:
    """A ``make`` drawing one argument tuple per entry of ``shape_sets`` (each a tuple of
    shapes; a bare shape means one argument)."""
    def make(rng, dt):
        sets = []
        for shapes in shape_sets:
            shapes = (shapes,) if not shapes or isinstance(shapes[0], int) else shapes
            sets.append(tuple(draw(rng, s, dt, lo, hi) for s in shapes))
        return sets

    return make


def twin(build: Callable) -> tuple[Callable, Callable]:
    """``build(lax_module)`` for fx.lax and for jax.lax: one definition for both sides."""
    return build(lax), build(jax.lax)


def row(name, build, make, dtypes=FLOATS, **kw) -> Row:
    return Row(name, *twin(build), make, dtypes, **kw)


# --- elementwise rows ---------------------------------------------------------------------------

ELEMENTWISE = [
    elementwise("sin cos tan atan", lo=-1.3, hi=1.3, transforms=True),
    elementwise("sinh cosh tanh asinh logistic", lo=-4, hi=4),
    elementwise("exp exp2 expm1", lo=-5, hi=5),
    elementwise("log log1p sqrt rsqrt", lo=0.01, hi=10),
    elementwise("asin acos atanh erf_inv", lo=-0.99, hi=0.99),
    elementwise("acosh", lo=1, hi=5),
    elementwise("floor ceil cbrt erf erfc is_finite"),
    elementwise("lgamma digamma", lo=0.1, hi=6),
    elementwise("exp log tanh logistic sqrt sin floor erf is_finite neg abs", lo=0.1, hi=4,
                dtypes=(F16, BF16), name="unary-half"),
    elementwise("neg abs sign", dtypes=(F32, F64, I32)),
    elementwise("square", dtypes=(F32, F64, F16, I32, U32), transforms=True),
    elementwise("neg", dtypes=(U32,), name="neg-unsigned"),
    elementwise("not", dtypes=(I32, U32, BOOL)),
    elementwise("stop_gradient", dtypes=ALL, special=False, sample=(1,)),
    Row("round", lambda x: (lax.round(x, 0), lax.round(x, 1)),
        lambda x: (jax.lax.round(x, 0), jax.lax.round(x, 1)),
        lambda rng, dt: [(np.asarray(np.arange(-10, 11) / 2, dt),), special_set(1, dt),
                         (draw(rng, (0, 2), dt),), (draw(rng, (), dt),)], HALF),
    row("integer_pow", lambda L: lambda x: tuple(L.integer_pow(x, y) for y in (0, 2, 3, 7, -3)),
        lambda rng, dt: [(draw(rng, s, dt, -2, 2),) for s in [(), (2, 3), (0,)]]
        + [special_set(1, dt)], (F32, F64, F16)),
    row("integer_pow-int", lambda L: lambda x: tuple(L.integer_pow(x, y) for y in (0, 1, 2, 3)),
        shaped((), (2, 3), (0,), lo=-5, hi=5), (I32, U32)),
    Row("polygamma", lambda x: [lax.polygamma(x, m) for m in (0, 1, 3)],
        lambda x: [jax.lax.polygamma(jnp.full_like(x, m), x) for m in (0, 1, 3)],
        shaped((), (2, 3), (0,), lo=0.2, hi=6)),
    Row("polygamma-special", lambda x: [lax.polygamma(x, m) for m in (0, 1, 3)],
        lambda x: [jax.lax.polygamma(jnp.full_like(x, m), x) for m in (0, 1, 3)],
        lambda rng, dt: [special_set(1, dt)], xfail="eager fx.lax.polygamma(x, m>0) gives nan "
        "at the poles 0, -1 and at -1e30, -inf (jax: inf) and 0 at +inf (jax: nan)"),
    elementwise("add sub mul", 2, dtypes=(F32, F64, I32, U32)),
    elementwise("add mul div max", 2, dtypes=(F16, BF16), name="binary-half"),
    elementwise("add_any", 2, shapes=[((), ()), ((2, 3), (2, 3)), ((0,), (0,))]),
    elementwise("div rem", 2, domains=[(-3, 3), (0.5, 3)], dtypes=(F32, F64, I32, U32)),
    Row("div-rem-int-signs", *[_each(m, ["div", "rem"], {}) for m in (lax, jax.lax)],
        fixed([np.array([-7, -7, 7, 7, 0, -1, 5, -2**31, -2**31, 5]),
               np.array([2, -2, 2, -2, 3, -1, 0, -1, 1, 0])]), (I32, I64)),
    elementwise("pow", 2, domains=[(0.1, 3), (-2, 2)]),
    elementwise("max min", 2, dtypes=(F32, BF16, I64, BOOL)),
    elementwise("atan2 nextafter", 2),
    elementwise("and or xor", 2, dtypes=(I64, U32, BOOL)),
    Row("shifts", *[_each(m, ["shift_left", "shift_right_logical"], {}) for m in (lax, jax.lax)],
        fixed([np.array([1, -3, 7, 2**30, -1, 5, 5, 5]), np.array([0, 1, 3, 1, 31, 32, 40, -1])]),
        (I32, I64, U32)),
    elementwise("eq ne lt le gt ge", 2, dtypes=(F32, F16, I64, U32, BOOL)),
    elementwise("clamp", 3, dtypes=(F32, F16, I32), special=False),
    Row("clamp-special", lax.clamp, jax.lax.clamp,
        lambda rng, dt: [(np.asarray(-1.0, dt), SPECIAL.astype(dt), np.asarray(2.0, dt))]),
    Row("select_n-bool", lambda p, a, b: lax.select_n(p, a, b),
        lambda p, a, b: jax.lax.select_n(p, a, b),
        lambda rng, dt: [(draw(rng, s, BOOL), draw(rng, s, dt), draw(rng, s, dt))
                         for s in [(2, 3), (0, 4)]] +
        [(draw(rng, (), BOOL), draw(rng, (3,), dt), draw(rng, (3,), dt))], ALL),
    Row("select_n-int32", lambda w, *c: lax.select_n(w, *c),
        lambda w, *c: jax.lax.select_n(w, *c),
        lambda rng, dt: [(np.asarray(rng.integers(0, 3, s), np.int32),
                          *[draw(rng, s, dt) for _ in range(3)]) for s in [(), (2, 3)]],
        (F32, I64, BOOL)),
]


def _convert_all(lax_mod, targets=ALL):
    return lambda x: tuple(lax_mod.convert_element_type(x, d) for d in targets)


def _complex_parts(lax):
    """complex, real, imag and conj around complex arithmetic (rows are real in, real out:
    the complex values stay inside the jitted function)."""
    def f(x, y):
        z = lax.complex(x, y)
        w = lax.mul(z, lax.conj(z))
        return lax.real(w), lax.imag(lax.add(z, z)), lax.real(lax.conj(lax.neg(z)))

    return f


def _in_range(values):
    """``values`` in the row dtype, without those that overflow it (to inf)."""
    def make(rng, dt):
        v = np.asarray(values)
        with np.errstate(over="ignore"):
            return [(v[np.isfinite(v.astype(dt))].astype(dt),)]

    return make


BITCASTS = {F32: (I32, U32), F64: (I64,), I32: (F32, U32), I64: (F64,)}


def _bitcasts(L):
    return lambda x: [L.bitcast_convert_type(x, t) for t in BITCASTS[np.dtype(x.dtype)]]


ELEMENTWISE += [
    Row("convert_element_type", _convert_all(lax), _convert_all(jax.lax),
        lambda rng, dt: [(draw(rng, s, dt, -40, 40),) for s in [(2, 3), (0,)]], ALL),
    Row("convert_element_type-special", _convert_all(lax), _convert_all(jax.lax),
        _in_range([0.0, -0.0, 0.7, -0.7, 2.5, -3.5, 255.9, 65504, -65504, 1e10, -1e10,
                   2.0**31, -2.0**31 - 1e3, 4.3e9]), HALF),
    Row("convert_element_type-nonfinite", *[_convert_all(m, [d for d in ALL if d != I64])
                                            for m in (lax, jax.lax)],
        fixed([[np.nan, np.inf, -np.inf]]), HALF),
    Row("convert_element_type-inf-to-int64", *[_convert_all(m, [I64]) for m in (lax, jax.lax)],
        fixed([[np.nan, np.inf, -np.inf, 1e30]])),
    Row("complex-parts", *[_complex_parts(m) for m in (lax, jax.lax)],
        lambda rng, dt: [(draw(rng, s, dt), draw(rng, s, dt)) for s in [(), (3, 4), (0,)]]),
    Row("bitcast_convert_type", *[_bitcasts(m) for m in (lax, jax.lax)],
        lambda rng, dt: [(draw(rng, s, dt, -1e6, 1e6),) for s in [(), (4,), (0, 2)]]
        + ([(SPECIAL.astype(dt),)] if dt.kind == "f" else []), (F32, F64, I32, I64)),
]


# --- structural rows ----------------------------------------------------------------------------


DATA = (F64, F16, I32, BOOL)  # pure data movement: 8, 2, 4 and 1-byte elements

STRUCTURAL = [
    row("broadcast_in_dim-leading", lambda L: lambda x: L.broadcast_in_dim(
        x, (2, *x.shape), tuple(range(1, x.ndim + 1))), shaped((), (3,), (0, 2), (2, 1)), DATA),
    row("broadcast_in_dim-size1", lambda L: lambda x: L.broadcast_in_dim(
        x, tuple(4 if d == 1 else d for d in x.shape), tuple(range(x.ndim))),
        shaped((1,), (3, 1), (1, 2, 1), (1, 0)), DATA),
    row("broadcast_in_dim-middle", lambda L: lambda x: L.broadcast_in_dim(
        x, (x.shape[0], 2, *x.shape[1:]), (0, *range(2, x.ndim + 1))),
        shaped((3,), (2, 3), (0, 2)), DATA),
    row("reshape", lambda L: lambda x: (L.reshape(x, x.shape[::-1]), L.reshape(x, (x.size,)),
                                        L.reshape(x, (1, *x.shape, 1))),
        shaped((), (2, 3), (2, 3, 4), (0, 3)), DATA),
    row("transpose", lambda L: lambda x: L.transpose(x, tuple(range(x.ndim))[::-1]),
        shaped((2, 3), (2, 3, 4), (0, 3), (1, 5)), DATA),
    row("transpose-rotate", lambda L: lambda x: (L.transpose(x, (1, 2, 0)),
                                                 L.transpose(x, (2, 0, 1))),
        shaped((2, 3, 4), (3, 1, 2), (2, 0, 3)), DATA),
    row("reduce_sum", lambda L: lambda x: (L.reduce_sum(x, tuple(range(x.ndim))),
                                           L.reduce_sum(x, (0,)), L.reduce_sum(x, (x.ndim - 1,))),
        shaped((5,), (2, 3, 4), (0, 3), (3, 0), (1, 1)), (*HALF, I32, I64, U32), slack=5),
    row("iota", lambda L: lambda x: (L.iota(x.dtype, x.shape[-1]),
                                     L.broadcasted_iota(x.dtype, x.shape, 0),
                                     L.add(x, L.broadcasted_iota(x.dtype, x.shape, x.ndim - 1))),
        shaped((4,), (2, 3), (0, 5)), (F32, F64, F16, I32, I64, U32)),
    row("slice", lambda L: lambda x: (
        L.slice(x, [min(1, d) for d in x.shape], x.shape, [2] * x.ndim),
        L.slice(x, [0] * x.ndim, [d // 2 for d in x.shape]),
        L.slice(x, [min(1, d) for d in x.shape], [min(1, d) for d in x.shape])),
        shaped((5,), (4, 6), (3, 4, 5), (0, 3)), DATA),
    row("concatenate", lambda L: lambda a, b, c: (L.concatenate([a, b, c], 0),
                                                  L.concatenate([c, a], 0)),
        shaped(((2, 3), (0, 3), (1, 3)), ((1,), (4,), (2,)), ((0, 2), (0, 2), (0, 2))), DATA),
    row("concatenate-inner", lambda L: lambda a, b: L.concatenate([a, b, a], a.ndim - 1),
        shaped(((2, 3), (2, 1)), ((2, 1, 2), (2, 1, 0))), DATA),
    row("pad", lambda L: lambda x, v: (L.pad(x, v, [(1, 2, 1)] * x.ndim),
                                       L.pad(x, v, [(-1, 1, 0)] * x.ndim),
                                       L.pad(x, v, [(0, 0, 2)] * x.ndim)),
        shaped(((3,), ()), ((2, 3), ()), ((0,), ()), ((1, 4), ())), (F32, F64, F16, I32, BOOL)),
    row("pad-crop", lambda L: lambda x, v: L.pad(x, v, [(-2, -1, 1), (1, -3, 0)]),
        shaped(((4, 5), ()), ((3, 4), ()))),
    row("squeeze", lambda L: lambda x: L.squeeze(x, [i for i, d in enumerate(x.shape) if d == 1]),
        shaped((1,), (1, 3, 1), (2, 1), (1, 0)), DATA),
    row("rev", lambda L: lambda x: (L.rev(x, tuple(range(x.ndim))), L.rev(x, (0,))),
        shaped((5,), (2, 3), (0, 3), (2, 3, 4)), DATA),
    row("rev-scalar", lambda L: lambda x: L.rev(x, ()), shaped((),)),
    Row("dynamic_slice", lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)),
        lambda x, i, j: jax.lax.dynamic_slice(x, (i, j), (2, 3)),
        lambda rng, dt: [(draw(rng, (4, 5), dt), np.int32(i), np.int32(j))
                         for i, j in [(1, 1), (3, 4), (-1, 0), (9, -9), (0, 2)]],
        (F32, F64, I32, BOOL)),
    Row("dynamic_update_slice", lambda x, u, i, j: lax.dynamic_update_slice(x, u, (i, j)),
        lambda x, u, i, j: jax.lax.dynamic_update_slice(x, u, (i, j)),
        lambda rng, dt: [(draw(rng, (4, 5), dt), draw(rng, (2, 3), dt), np.int32(i),
                          np.int32(j)) for i, j in [(1, 1), (3, 4), (-1, 0), (9, -9)]]
        + [(draw(rng, (3,), dt), draw(rng, (0,), dt), np.int32(1), None)][:0],
        (F32, F64, I32, BOOL)),
]


# --- gather / scatter ---------------------------------------------------------------------------


def _rest(ndim, axes):
    return tuple(d for d in range(ndim) if d not in axes)


def jax_gather(x, idx, axes, mode="fill"):
    """fx's ``gather(x, idx, axes)`` is XLA's gather with every indexed dimension collapsed."""
    nb = idx.ndim - 1
    dn = jax.lax.GatherDimensionNumbers(
        offset_dims=tuple(range(nb, nb + len(_rest(x.ndim, axes)))),
        collapsed_slice_dims=tuple(sorted(axes)), start_index_map=tuple(axes))
    sizes = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim))
    return jax.lax.gather(x, idx, dn, sizes, mode=mode)


def jax_scatter(name, x, idx, upd, axes, mode="drop"):
    nb = idx.ndim - 1
    dn = jax.lax.ScatterDimensionNumbers(
        update_window_dims=tuple(range(nb, nb + len(_rest(x.ndim, axes)))),
        inserted_window_dims=tuple(sorted(axes)), scatter_dims_to_operand_dims=tuple(axes))
    return getattr(jax.lax, name)(x, idx, upd, dn, mode=mode)


ROWS_IDX = np.array([[1], [4], [0], [7], [-1], [4]], np.int32)  # out of range, repeated
POINTS = np.array([[1, 2], [0, 0], [3, 1], [4, 0], [3, 1]], np.int64)
GATHER_SETS = [((5, 3), ROWS_IDX, (0,)), ((3, 4), POINTS, (1, 0)),
               ((2, 3), np.zeros((0, 1), np.int32), (1,)), ((4,), ROWS_IDX[:3], (0,))]


def _gathers(make_fx: bool):
    def f(x, idx, axes):
        if make_fx:
            return lax.gather(x, idx, axes), lax.gather(x, idx, axes, mode="clip")
        return jax_gather(x, idx, axes), jax_gather(x, idx, axes, "clip")

    return f


def _gather_rows(axes_list):
    return [Row(f"gather-{i}", lambda x, idx, a=a: _gathers(True)(x, idx, a),
                lambda x, idx, a=a: _gathers(False)(x, idx, a),
                lambda rng, dt, s=s, idx=idx: [(draw(rng, s, dt), idx)], (F32, F64, I32, BOOL))
            for i, (s, idx, a) in enumerate(axes_list)]


def _scatter_row(name, dtypes):
    def make(rng, dt):
        return [(draw(rng, (5, 3), dt), ROWS_IDX, draw(rng, (6, 3), dt)),
                (draw(rng, (4,), dt), ROWS_IDX[:0], draw(rng, (0,), dt))]

    return Row(name,
               lambda x, i, u: (getattr(lax, name)(x, i, u, (0,)),
                                getattr(lax, name)(x, i, u, (0,), mode="clip")),
               lambda x, i, u: (jax_scatter(name, x, i, u, (0,)),
                                jax_scatter(name, x, i, u, (0,), "clip")), make, dtypes)


INDEXING = [
    *_gather_rows(GATHER_SETS),
    _scatter_row("scatter", (F32, F64, I32, BOOL)),
    _scatter_row("scatter_add", (F32, F64, I32)),
    _scatter_row("scatter_mul", (F32, F64, I32)),
    _scatter_row("scatter_min", (F32, F64, I32)),
    _scatter_row("scatter_max", (F32, F64, I32)),
]


# --- reductions, dot_general, sorting and cumulative ops ----------------------------------------

RED_SHAPES = ((2, 3, 4), (0, 3, 2), (3, 0, 2), (1, 1, 1))


def _reductions(*names):
    """Each reduction over all axes, the first and the last."""
    return lambda L: lambda x: tuple(getattr(L, n)(x, axes) for n in names for axes in [
        tuple(range(x.ndim)), (0,), (x.ndim - 1,)])


def _arg_reductions(L):
    return lambda x: tuple(f(x, ax, it) for f in (L.argmax, L.argmin)
                           for ax, it in [(0, np.int32), (x.ndim - 1, np.int64)])


def _nan_rows(rng, dt):
    x = draw(rng, (4, 5), dt)
    x[1, 2] = np.nan
    x[2, :] = [np.inf, -np.inf, np.nan, 0.0, -0.0]
    x[3, :] = 1.0  # ties
    return [(x,)]


REDUCTIONS = [
    row("reduce_max-reduce_min", _reductions("reduce_max", "reduce_min"),
        shaped(*RED_SHAPES, lo=-9, hi=9), (F32, F16, I32, BOOL)),
    row("reduce_prod", _reductions("reduce_prod"), shaped(*RED_SHAPES, lo=-1.5, hi=1.5),
        (F32, F64, I32), slack=5),
    row("reduce_and-or-xor", _reductions("reduce_and", "reduce_or", "reduce_xor"),
        shaped(*RED_SHAPES, lo=-9, hi=9), (I32, BOOL)),
    row("reductions-special", _reductions("reduce_max", "reduce_min", "reduce_prod",
                                          "reduce_sum"), _nan_rows),
    row("argmax-argmin", _arg_reductions, shaped((5,), (2, 3, 4), (1, 1), (3, 0, 2), lo=-2, hi=2),
        (F32, F16, I32, BOOL)),
    row("argmax-argmin-special", _arg_reductions, _nan_rows),
]

DOTS = [  # name, lhs shape, rhs shape, dimension numbers
    ("matmul", (3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ("batched", (2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ("two-contracting", (2, 3, 4), (3, 4, 5), (((1, 2), (0, 1)), ((), ()))),
    ("vector", (7,), (7,), (((0,), (0,)), ((), ()))),
    ("outer", (3,), (4,), (((), ()), ((), ()))),
    ("empty-contraction", (3, 0), (0, 2), (((1,), (0,)), ((), ()))),
    ("empty-batch", (0, 3, 4), (0, 4, 2), (((2,), (1,)), ((0,), (0,)))),
    ("transposed", (4, 3), (5, 4), (((0,), (1,)), ((), ()))),
    ("batch-not-leading", (3, 2, 4), (4, 2, 5), (((2,), (0,)), ((1,), (1,)))),
]

LINALG = [
    *[row(f"dot_general-{n}", lambda L, dn=dn: lambda a, b: L.dot_general(a, b, dn),
          shaped((ls, rs)), HALF + (I32, I64) if n == "matmul" else FLOATS, slack=5)
      for n, ls, rs, dn in DOTS],
    row("dot_general-preferred", lambda L: lambda a, b: L.dot_general(
        a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float32),
        shaped(((3, 4), (4, 2))), (F16, BF16, F32)),
]


def _ties_nan(rng, dt):
    x = draw(rng, (3, 6), dt, -2, 2)
    if dt.kind == "f":
        x[0] = [np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0]
        x[1, :3] = x[1, 3:]
    return [(x,), (draw(rng, (7,), dt),), (draw(rng, (0, 4), dt),)]


def _cumulative(*names):
    return lambda L: lambda x: tuple(f(x, ax, rev) for f in [getattr(L, n) for n in names]
                                     for ax, rev in [(0, False), (x.ndim - 1, True)])


CUMULATIVE = ("cumsum", "cumprod", "cummax", "cummin")
SORTING = [
    row("sort", lambda L: lambda x: (L.sort(x, 0), L.sort(x, x.ndim - 1)), _ties_nan,
        (F32, F16, I32, BOOL)),
    row("sort-multi", lambda L: lambda k, v, w: (
        L.sort((k, v, w), 1, num_keys=1), L.sort((k, v, w), 1, num_keys=2)),
        lambda rng, dt: [(draw(rng, (3, 8), dt, -2, 2), draw(rng, (3, 8), dt, -1, 1),
                          draw(rng, (3, 8), I32))], (F32, F64, I32)),
    row("cumulative", _cumulative(*CUMULATIVE), shaped((5,), (2, 3, 4), (0, 3), lo=-1.5, hi=1.5),
        (F32, F64, I32), slack=5),
    row("cumlogsumexp", _cumulative("cumlogsumexp"), shaped((5,), (2, 3, 4), (0, 3)), HALF,
        slack=5),
    row("cumulative-special", _cumulative(*CUMULATIVE, "cumlogsumexp"), _nan_rows),
]


def _collectives(L, vmap):
    def lane(r):
        return (L.psum(r, "i"), L.pmax(r, "i"), L.pmin(r, "i"), L.all_gather(r, "i"),
                L.add(L.axis_index("i"), np.int32(1)))

    return lambda x: vmap(lane, axis_name="i")(x)


def _moves(L, vmap):
    def lanes(x):
        n = x.shape[0]
        shift = [(i, (i + 1) % n) for i in range(n)]
        flip = [(i, n - 1 - i) for i in range(n)]

        def lane(r):
            return (L.psum_scatter(r, "i", scatter_dimension=1, tiled=True),
                    L.psum_scatter(r, "i", scatter_dimension=0),
                    L.ppermute(r, "i", shift), L.ppermute(r, "i", flip),
                    L.all_to_all(r, "i", 0, 1, tiled=True))

        return vmap(lane, axis_name="i")(x)

    return lanes


PARALLEL = [
    Row("collectives", _collectives(lax, fx.vmap), _collectives(jax.lax, jax.vmap),
        shaped((3,), (4, 2), (1, 3), (2, 0)), (F32, F64, I32),
        covers=("psum", "pmax", "pmin", "all_gather", "axis_index")),
    # lanes x (lane's rows, lane's columns): both divisible by the lanes for the scatters
    Row("collective-moves", _moves(lax, fx.vmap), _moves(jax.lax, jax.vmap),
        shaped((2, 2, 4), (4, 4, 8), (1, 1, 3)), (F32, F64, I32),
        covers=("psum_scatter", "ppermute", "all_to_all")),
]

def _cond(L):
    def f(p, i, x):
        a = L.cond(p, lambda x: L.mul(x, x) * 2, lambda x: L.neg(x), x)
        b = L.switch(i, [lambda x: x, lambda x: L.abs(x) + 1, lambda x: L.neg(x)], x)
        return a, b

    return f


def _loops(L):
    def f(x):
        n, y = L.while_loop(lambda c: L.lt(c[0], np.int32(5)), lambda c: (L.add(c[0], np.int32(1)),
                                                                 L.sin(c[1]) + c[1]),
                            (np.int32(0), x))
        z = L.fori_loop(0, 3, lambda i, c: c * 2 + L.convert_element_type(i, x.dtype), x)
        carry, ys = L.scan(lambda c, r: (c + r, L.exp(r) * c), L.full_like(x[0], 0.5), x)
        return n, y, z, carry, ys

    return f


def _cond_sets(rng, dt):
    return [(np.bool_(p), np.int32(i), draw(rng, s, dt)) for p, i, s in
            [(True, 1, (2, 3)), (False, 7, ()), (True, -1, (0, 2)), (False, 0, (3,))]]


CONTROL_FLOW = [
    row("cond-switch", _cond, _cond_sets, (F32, F64, I32)),
    row("while-fori-scan", _loops, shaped((4, 3), (1,), (3, 0)), (F32, F64)),
]

WINDOWS = [  # window dims, strides, padding, base dilation, window dilation
    ((2, 2), (1, 1), "VALID", None, None),
    ((3, 2), (2, 1), "SAME", None, None),
    ((2, 2), (1, 2), ((1, 0), (2, 1)), (2, 1), (1, 2)),
]


def _extreme(dt, highest=False):
    """The identity of max (of min, if ``highest``) pooling."""
    dt = np.dtype(dt)
    if dt.kind == "f":
        return np.asarray(np.inf if highest else -np.inf, dt)
    return np.asarray(np.iinfo(dt).max if highest else np.iinfo(dt).min, dt)


def _pooling(L):
    def f(x):
        outs = []
        for win, strides, pad, bdil, wdil in WINDOWS:
            for op, init in [(L.add, np.zeros((), x.dtype)), (L.max, _extreme(x.dtype)),
                             (L.min, _extreme(x.dtype, True))]:
                outs.append(L.reduce_window(x, init, op, win, strides, pad, bdil, wdil))
        return outs

    return f


def _pooling_derivatives(T, L):
    """jvp and grad of max/min pooling: select_and_gather_add, select_and_scatter_add."""
    def pool(x, op):
        init = _extreme(x.dtype, highest=op is L.min)
        return L.reduce_window(x, init, op, (2, 2), (1, 2), ((1, 0), (0, 1)))

    def f(x, t):
        return [(T.jvp(lambda x, op=op: pool(x, op), (x,), (t,)),
                 T.grad(lambda x, op=op: (pool(x, op) * pool(x, op)).sum())(x))
                for op in (L.max, L.min)]

    return f


CONVS = [  # lhs shape, rhs shape, params (dimension numbers default to NC..., OI...)
    ((2, 3, 5, 6), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    ((1, 4, 7, 5), (6, 2, 3, 3), dict(window_strides=(2, 1), padding="SAME",
                                      feature_group_count=2)),
    ((2, 5, 6, 3), (3, 3, 3, 4), dict(window_strides=(1, 2), padding=((1, 2), (0, 1)),
                                      rhs_dilation=(2, 1), lhs_dilation=(1, 2),
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((4, 2, 9), (6, 2, 3), dict(window_strides=(2,), padding="SAME", batch_group_count=2)),
    ((0, 3, 4, 4), (2, 3, 2, 2), dict(window_strides=(1, 1), padding="VALID")),
]

WINDOWED = [
    row("reduce_window", _pooling, shaped((4, 5), (1, 3)), (F32, F64, I32)),
    Row("reduce_window-derivatives", _pooling_derivatives(fx, lax),
        _pooling_derivatives(jax, jax.lax), shaped(((4, 5), (4, 5)))),
    *[row(f"conv_general_dilated-{i}", lambda L, p=p: lambda x, w: L.conv_general_dilated(
        x, w, **p), shaped((ls, rs)), slack=5) for i, (ls, rs, p) in enumerate(CONVS)],
    row("conv_general_dilated-half", lambda L: lambda x, w: L.conv_general_dilated(
        x, w, (1, 1), "SAME", preferred_element_type=np.float32),
        shaped(((1, 2, 4, 4), (3, 2, 3, 3))), (F16, BF16)),
]

ROWS = (CONTROL_FLOW + WINDOWED + PARALLEL + ELEMENTWISE + STRUCTURAL + INDEXING + REDUCTIONS
        + LINALG + SORTING)
PARAMS = [pytest.param(r, id=r.name, marks=[pytest.mark.xfail(strict=True, reason=r.xfail)]
                       if r.xfail else []) for r in ROWS]


@pytest.mark.parametrize("row", PARAMS)
def test_jit_matches_eager_and_jax(row):
    check_row(row)


TRANSFORMED = [r for r in ROWS if r.transforms]


@pytest.mark.parametrize("row", TRANSFORMED, ids=[r.name for r in TRANSFORMED])
def test_transformations_match_jax(row):
    """jvp and vjp (floating dtypes, finite values), second-order finite differences (float64)
    and vmap over the leading axis (every dtype) agree with jax, for the rows that ask."""
    rng = np.random.default_rng(0)
    for dt, args in row.argument_sets():
        shapes = {np.shape(a) for a in args if np.ndim(a)}
        case = OpCase(row.name, row.fx_fn, row.jax_fn, None,
                      diff_argnums=tuple(range(len(args))))
        if len(shapes) == 1 and min(shapes.pop()) > 0:
            check_vmap(case, list(args), (0,) * len(args))
        if dt not in FLOATS or not all(np.isfinite(a).all() for a in args):
            continue
        check_jvp(case, list(args), rng)
        check_vjp(case, list(args), rng)
        if dt == F64:
            check_grads_f64(case, list(args))


def test_row_names_are_unique():
    names = [r.name for r in ROWS]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def _lax_primitives() -> set[Primitive]:
    prims = set()
    for info in pkgutil.walk_packages(lax.__path__, "fx.lax."):
        mod = importlib.import_module(info.name)
        prims |= {v for v in vars(mod).values() if isinstance(v, Primitive)}
    return prims


def test_every_primitive_has_a_row():

    seen = set()
    for r in ROWS + SCIENTIFIC_ROWS:
        for _, s in r.argument_sets():
            seen |= {e.primitive.name for e in fx.make_jaxpr(r.fx_fn)(*s).jaxpr.eqns}
        seen |= set(r.covers)
    names = {p.name for p in _lax_primitives()}
    missing = sorted(n for n in names - seen if n not in NOT_COVERED)
    assert not missing, f"fx.lax primitives without a jit row (add one, or to NOT_COVERED): " \
                        f"{missing}"
    stale = sorted(set(NOT_COVERED) - names)
    assert not stale, f"NOT_COVERED names primitives that no longer exist: {stale}"
