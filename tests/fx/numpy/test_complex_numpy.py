"""fx.numpy on complex inputs against jax.numpy: values, dtypes and weak types; jvp and vjp
where jax differentiates; jit against eager (bitwise where the op is exact); and the
functions jax refuses for complex data, which must raise jax's exception type naming the
fx.numpy function."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.numpy as fnp
from tests.harness import (
    OpCase,
    assert_allclose,
    assert_bitwise,
    check_jvp,
    random_like,
    to_fx,
    to_jax,
)

C64, C128 = np.complex64, np.complex128
NAN, INF = np.nan, np.inf


def _z(rng, shape, dtype=C64, scale=1.0):
    return ((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * scale).astype(dtype)


def _ties(rng, shape=(3, 5), dtype=C64):
    """Entries on a coarse grid, so that real parts tie and the imaginary part decides."""
    return (rng.integers(-2, 3, shape) + 1j * rng.integers(-2, 3, shape)).astype(dtype)


def _with_nans(rng):
    x = _ties(rng, (4, 6))
    x[0, 1] = complex(NAN, 1)
    x[1, 3] = complex(1, NAN)
    x[2, 5] = complex(NAN, NAN)
    return x


def _specials():
    return np.array([1 + 2j, complex(NAN, 1), complex(2, NAN), complex(INF, -1),
                     complex(-INF, INF), complex(3, -INF), 0.5 - 0.25j], C64)


def _case(name, fx_fn, jax_fn, args, **kw):
    # The jax oracle runs jitted: one XLA compile per case instead of one per primitive
    # keeps the file fast; jit keeps jax's dtypes and weak types.
    return OpCase(name, fx_fn, jax.jit(jax_fn), args, **kw)


def _same(name, args, *, call=None, **kw):
    """A case calling the same-named function of both modules (through ``call``)."""
    call = call or (lambda m, *a: getattr(m, name)(*a))
    return _case(name, lambda *a: call(fnp, *a), lambda *a: call(jnp, *a), args, **kw)


# name, args(rng); differentiable (by jax) unless said otherwise.
CASES = [
    _same("max", lambda r: [_ties(r)], call=lambda m, x: m.max(x, axis=1)),
    _same("min", lambda r: [_ties(r)], call=lambda m, x: m.min(x, axis=0), differentiable=False),
    _same("amax", lambda r: [_z(r, (3, 4))], differentiable=False),
    _same("amin_keepdims", lambda r: [_z(r, (3, 4))],
          call=lambda m, x: m.amin(x, axis=1, keepdims=True), differentiable=False),
    _same("max_where", lambda r: [_z(r, (3, 4))],
          call=lambda m, x: m.max(x, axis=1, where=m.real(x) > 0, initial=-1 + 0j)),
    _same("max_nan", lambda r: [_with_nans(r)], call=lambda m, x: m.max(x, axis=1),
          differentiable=False),
    _same("min_nan", lambda r: [_with_nans(r)], call=lambda m, x: m.min(x, axis=1),
          differentiable=False),
    _same("ptp", lambda r: [_ties(r)], call=lambda m, x: m.ptp(x, axis=1)),
    _same("less", lambda r: [_ties(r), _ties(r)], differentiable=False),
    _same("less_equal", lambda r: [_with_nans(r), _with_nans(r)], differentiable=False),
    _same("greater", lambda r: [_ties(r), _ties(r)], differentiable=False),
    _same("greater_equal", lambda r: [_ties(r), 1 + 0j], differentiable=False),
    _same("fmax", lambda r: [_with_nans(r), _ties(r, (4, 6))], diff_argnums=(0, 1)),
    _same("fmin", lambda r: [_ties(r, (4, 6)), _with_nans(r)], differentiable=False),
    _same("round", lambda r: [_z(r, (3, 4), scale=5)], differentiable=False),
    _same("round_decimals", lambda r: [_z(r, (3, 4), scale=5)],
          call=lambda m, x: m.round(x, 2), differentiable=False),
    _same("around", lambda r: [np.array([0.5 + 1.5j, -2.5 - 0.5j, 3.49 + 2.51j], C64)],
          differentiable=False),
    _same("rint", lambda r: [np.array([0.5 + 1.5j, -2.5 - 0.5j, 3.49 + 2.51j], C128)],
          differentiable=False),
    _same("logaddexp", lambda r: [_z(r, (3, 4)), _z(r, (3, 4))], diff_argnums=(0, 1)),
    _same("logaddexp_wrap", lambda r: [_z(r, (5,), scale=3), _z(r, (5,), scale=3)],
          call=lambda m, x, y: m.logaddexp(x, y), diff_argnums=(0, 1)),
    _same("logaddexp2", lambda r: [_z(r, (3, 4), C128), _z(r, (3, 4), C128)],
          diff_argnums=(0, 1)),
    _same("isclose", lambda r: [_specials(), _specials() + 1e-7], differentiable=False),
    _same("isclose_nan", lambda r: [_specials(), _specials()],
          call=lambda m, a, b: m.isclose(a, b, equal_nan=True), differentiable=False),
    _same("isclose_tol", lambda r: [_z(r, (6,)), 0.5 + 0j],
          call=lambda m, a, b: m.isclose(a, b, rtol=0.5, atol=0.5), differentiable=False),
    _same("allclose", lambda r: [_z(r, (3,)), _z(r, (3,))], differentiable=False),
    _same("array_equal_nan", lambda r: [_specials(), _specials()],
          call=lambda m, a, b: m.array_equal(a, b, equal_nan=True), differentiable=False),
    _same("nan_to_num", lambda r: [_specials()], differentiable=False),
    _same("nan_to_num_values", lambda r: [_specials()],
          call=lambda m, x: m.nan_to_num(x, nan=7.0, posinf=8.0, neginf=-9.0),
          differentiable=False),
    _same("arctan2", lambda r: [_z(r, (3, 4)), _z(r, (3, 4))], diff_argnums=(0, 1)),
    _same("arctan2_real_operand", lambda r: [_z(r, (4,), C128), np.linspace(-1, 1, 4)],
          call=lambda m, y, x: m.arctan2(y, x), differentiable=False),
    _same("linspace", lambda r: [], call=lambda m: m.linspace(0, 1 + 1j, 5),
          differentiable=False),
    _same("linspace_c64", lambda r: [C64(1j), 2.0],
          call=lambda m, a, b: m.linspace(a, b, 4, endpoint=False, retstep=True),
          differentiable=False),
    _same("linspace_array", lambda r: [_z(r, (2,)), 3.0],
          call=lambda m, a, b: m.linspace(a, b, 3, axis=1), differentiable=False),
    _same("logspace", lambda r: [], call=lambda m: m.logspace(0, 1j, 4),
          differentiable=False),
    _same("geomspace", lambda r: [], call=lambda m: m.geomspace(-1 + 1j, 4j, 5),
          differentiable=False),
    _same("cov", lambda r: [_z(r, (3, 6))]),
    _same("cov_weights", lambda r: [_z(r, (2, 4), C128)],
          call=lambda m, x: m.cov(x, fweights=np.array([1, 2, 1, 3]),
                                  aweights=np.array([0.5, 1.0, 2.0, 1.0])), differentiable=False),
    _same("cov_y", lambda r: [_z(r, (5,)), _z(r, (5,)).real],
          call=lambda m, x, y: m.cov(x, y), differentiable=False),
    _same("corrcoef", lambda r: [_z(r, (3, 6))]),
    _same("interp", lambda r: [np.array([-1.0, 0.5, 1.5, 3.0, 5.0]),
                               np.array([0.0, 1.0, 2.0, 4.0]), _z(r, (4,), C128)],
          diff_argnums=(2,)),
    _same("interp_c64", lambda r: [np.array([-1.0, 0.5, 1.5, 3.0, 5.0], np.float32),
                                   np.array([0.0, 1.0, 2.0, 4.0], np.float32), _z(r, (4,))],
          call=lambda m, *a: m.interp(*a), differentiable=False),
    _same("interp_edges", lambda r: [np.array([-1.0, 0.5, 5.0]), np.array([0.0, 1.0, 2.0]),
                                     _z(r, (3,), C128)],
          call=lambda m, x, xp, fp: m.interp(x, xp, fp, left=9j, right=-1 + 2j),
          differentiable=False),
    _same("interp_period", lambda r: [np.array([-1.0, 0.5, 5.0]), np.array([0.0, 1.0, 2.0]),
                                      _z(r, (3,), C128)],
          call=lambda m, x, xp, fp: m.interp(x, xp, fp, period=3.0), differentiable=False),
    _same("searchsorted", lambda r: [np.sort(_ties(r, (8,)).astype(C64)), _ties(r, (5,))],
          call=lambda m, a, v: (m.searchsorted(a, v), m.searchsorted(a, v, side="right")),
          differentiable=False),
    _same("searchsorted_nan", lambda r: [np.asarray(jnp.sort(_with_nans(r).ravel())),
                                         _with_nans(r)[:2]],
          call=lambda m, a, v: (m.searchsorted(a, v), m.searchsorted(a, v, side="right")),
          differentiable=False),
    _same("digitize", lambda r: [_z(r, (6,)), np.sort(_z(r, (4,)))],
          call=lambda m, x, b: (m.digitize(x, b), m.digitize(x, b[::-1], right=True)),
          differentiable=False),
    _same("histogram", lambda r: [_z(r, (20,))], call=lambda m, x: m.histogram(x, 5),
          differentiable=False),
    _same("histogram_weights", lambda r: [_z(r, (20,)).real, _z(r, (20,))],
          call=lambda m, x, w: m.histogram(x, 4, weights=w), differentiable=False),
    _same("histogram_bin_edges", lambda r: [_z(r, (20,))],
          call=lambda m, x: m.histogram_bin_edges(x, 3), differentiable=False),
    _same("nansum", lambda r: [_with_nans(r)], call=lambda m, x: m.nansum(x, axis=1)),
    _same("nanprod", lambda r: [_with_nans(r)], call=lambda m, x: m.nanprod(x, axis=0),
          differentiable=False),
    _same("nanmean", lambda r: [_with_nans(r)], call=lambda m, x: m.nanmean(x, axis=1)),
    _same("nanvar", lambda r: [_with_nans(r)], call=lambda m, x: m.nanvar(x, axis=1, ddof=1)),
    _same("nanstd", lambda r: [_with_nans(r)], call=lambda m, x: m.nanstd(x),
          differentiable=False),
    _same("nanvar_complex_dtype", lambda r: [_with_nans(r)],
          call=lambda m, x: m.nanvar(x, axis=0, dtype=np.complex128), differentiable=False),
    _same("nanmax", lambda r: [_with_nans(r)], call=lambda m, x: m.nanmax(x, axis=1)),
    _same("nanmin", lambda r: [_with_nans(r)], call=lambda m, x: m.nanmin(x, axis=0),
          differentiable=False),
    _same("nancumsum", lambda r: [_with_nans(r)], call=lambda m, x: m.nancumsum(x, axis=1),
          differentiable=False),
    _same("correlate", lambda r: [_z(r, (5,)), _z(r, (3,))],
          call=lambda m, a, v: [m.correlate(a, v, mode) for mode in ("valid", "same", "full")],
          differentiable=False),
    _same("correlate_swapped", lambda r: [_z(r, (3,)), _z(r, (5,))],
          call=lambda m, a, v: m.correlate(a, v, "full"), diff_argnums=(0, 1)),
    _same("convolve", lambda r: [_z(r, (5,)), _z(r, (3,)).real],
          call=lambda m, a, v: m.convolve(a, v, "same"), diff_argnums=(0, 1)),
]

_ARGS_SEED = 0


@pytest.fixture(autouse=True)
def _x64():
    with fx.enable_x64():
        yield


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_values_and_dtypes(case):
    args = case.args(np.random.default_rng(_ARGS_SEED))
    got = case.fx_fn(*to_fx(args))
    want = case.jax_fn(*to_jax(args))
    assert_allclose(got, want, case.rtol, case.atol, what=f"{case.name} eval")
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert bool(getattr(g, "weak_type", False)) == bool(w.weak_type), case.name


def _pairing(a, b):
    """``Re sum(a * b)`` over pytrees: the pairing under which fx's (and jax's) vjp is the
    transpose of the jvp for complex and real values alike."""
    return sum(float(np.real(np.sum(np.asarray(x) * np.asarray(y))))
               for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))


@pytest.mark.parametrize("case", [c for c in CASES if c.differentiable], ids=repr)
def test_jvp_vjp(case):
    # The jvp against jax's; the vjp against the jvp through the pairing (which jax's vjp
    # satisfies too), so that each case compiles one jax program rather than three.
    rng = np.random.default_rng(1)
    args = case.args(np.random.default_rng(_ARGS_SEED))
    check_jvp(case, args, rng)
    diff = [a for i, a in enumerate(args) if i in case.diff_argnums]

    def f(*d):
        it = iter(d)
        return case.fx_fn(*[next(it) if i in case.diff_argnums else a
                            for i, a in enumerate(to_fx(args))])

    tangents = [random_like(rng, a) for a in diff]
    out, t_out = fx.jvp(f, to_fx(diff), to_fx(tangents))
    _, pull = fx.vjp(f, *to_fx(diff))
    ct = jax.tree_util.tree_map(lambda o: random_like(rng, o), out)
    lhs, rhs = _pairing(ct, t_out), _pairing(pull(to_fx(ct)), tangents)
    assert np.isclose(lhs, rhs, rtol=1e-4, atol=1e-4), (case.name, lhs, rhs)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_jit_matches_eager(case):
    args = to_fx(case.args(np.random.default_rng(_ARGS_SEED)))
    assert_bitwise(fx.jit(case.fx_fn)(*args), case.fx_fn(*args), what=case.name)


# --- what jax refuses for complex data -----------------------------------------------------

_Z = np.array([1 + 2j, -3.5 + 0.5j], C64)
_R = np.array([1.0, 2.0], np.float32)

REFUSED = [
    ("hypot", (_Z, _Z), ValueError), ("hypot", (_R, _Z), ValueError),
    ("clip", (_Z, 0, 1), ValueError), ("clip", (_R, 0j, 1), ValueError),
    ("floor", (_Z,), TypeError), ("ceil", (_Z,), TypeError), ("trunc", (_Z,), TypeError),
    ("signbit", (_Z,), ValueError), ("copysign", (_R, _Z), TypeError),
    ("fmod", (_Z, _Z), TypeError), ("remainder", (_Z, 2), TypeError),
    ("mod", (_R, _Z), TypeError), ("floor_divide", (_Z, 2), TypeError),
    ("divmod", (_Z, _Z), TypeError), ("cbrt", (_Z,), TypeError),
    ("heaviside", (_Z, _R), TypeError), ("nextafter", (_Z, _Z), TypeError),
    ("ldexp", (_Z, np.array([1, 2])), ValueError), ("frexp", (_Z,), TypeError),
    ("modf", (_Z,), TypeError), ("isneginf", (_Z,), ValueError),
    ("isposinf", (_Z,), ValueError), ("spacing", (_Z,), ValueError),
    ("gcd", (_Z, _Z), ValueError), ("lcm", (_Z, 2), ValueError), ("i0", (_Z,), ValueError),
    ("fabs", (_Z,), TypeError),
    ("median", (_Z,), ValueError), ("quantile", (_Z, 0.5), ValueError),
    ("percentile", (_Z, 50), ValueError), ("nanmedian", (_Z,), ValueError),
    ("nanquantile", (_Z, 0.5), ValueError), ("nanpercentile", (_Z, 50), ValueError),
    ("unwrap", (_Z,), ValueError), ("argmax", (_Z,), TypeError), ("argmin", (_Z,), TypeError),
    ("nanargmax", (_Z,), TypeError), ("nanargmin", (_Z,), TypeError),
    ("partition", (_Z, 1), NotImplementedError), ("argpartition", (_Z, 1), NotImplementedError),
    ("interp", (_Z, _R, _R), ValueError), ("interp", (_R, _Z, _R), ValueError),
]


_ALIAS = {"mod": "remainder"}  # fx.numpy.mod is remainder and names it


@pytest.mark.parametrize("name,args,exc", REFUSED, ids=[f"{r[0]}-{i}"
                                                       for i, r in enumerate(REFUSED)])
def test_refused_like_jax(name, args, exc):
    with pytest.raises(exc):
        getattr(jnp, name)(*to_jax(args))
    with pytest.raises(exc, match=f"fx.numpy.{_ALIAS.get(name, name)}"):
        getattr(fnp, name)(*to_fx(args))


def test_fix_refuses_complex_as_trunc():
    # jax 0.10 dropped jnp.fix; fx.numpy.fix is trunc and refuses complex as jnp.trunc does.
    with pytest.raises(TypeError):
        jnp.trunc(_Z)
    with pytest.raises(TypeError, match="fx.numpy.trunc"):
        fnp.fix(_Z)


def test_reduce_max_nan_order_matches_jax():
    # XLA's complex max is a left fold of select(acc > x, acc, x): a NaN is the answer only
    # when nothing after it is chosen over it. Every order of a few special values agrees.
    vals = np.array([1 + 2j, 1 + 1j, complex(NAN, 0), complex(1, NAN), 2 + 0j, -0.0 + 0j,
                     0j, complex(2, NAN)], C128)
    rng = np.random.default_rng(3)
    for _ in range(60):
        x = vals[rng.integers(0, len(vals), rng.integers(1, 6))]
        for f in ("max", "min"):
            assert_bitwise(getattr(fnp, f)(x), getattr(jnp, f)(x), what=f"{f} {x}")
