"""fx.scipy.special.hyp1f1 and hyp2f1 against scipy (in the domains where jax's algorithms
agree with it) and jax: values and dtypes in x64 and the default mode, jax's conventions at the
special values, derivatives in every argument against finite differences (and jax's with
-m slow), vmap against a loop, jit against eager.

jax compiles its hyp2f1 (a vectorised tree of while loops) in seconds, so the default run
takes hyp2f1's values from scipy and its special values from jax's documented rules; the
comparisons with jax itself, and the grids of special values, run with -m slow."""

from __future__ import annotations

import doctest
import warnings

import jax
import jax.numpy as jnp
import jax.scipy.special as jss
import numpy as np
import pytest
import scipy.special as sps

import fx
import fx.numpy as fnp
import fx.scipy.special as fss
from fx.scipy.special import hypergeometric
from tests.harness import same_mode

warnings.filterwarnings("ignore", category=RuntimeWarning)

RNG = np.random.default_rng(0)


def _draw(n, *domains):
    return [RNG.uniform(lo, hi, n) for lo, hi in domains]


# 1F1: the Taylor series (|x| < 100) and the asymptotic series beyond; jax's Taylor series
# cancels for x < 0 (1e-9 of scipy at x = -10), so negative x are drawn from (-3, 0).
HYP1F1_ARGS = [np.concatenate(v) for v in zip(
    _draw(30, (0.1, 5), (0.1, 5), (-3, 99)), _draw(10, (0.1, 3), (0.1, 3), (100, 300)))]


def _with_d(a, b, d):
    return a, b, a + b + d


# 2F1 by branch: the Taylor series, Euler's transformation (c - a - b <= -1), the terminating
# sum (a a non-positive integer), the digamma form (x > 0.9, c - a - b an integer), x = 1.
HYP2F1_ARGS = [np.concatenate(v) for v in zip(
    [*_draw(20, (0.1, 3), (0.1, 3), (0.5, 5), (-0.9, 0.9))],
    [*_with_d(*_draw(6, (0.5, 3), (0.5, 3), (-3, -1))), *_draw(6, (-0.9, 0.9))],
    [-RNG.integers(0, 6, 6).astype(float), *_draw(6, (0.1, 3), (0.5, 5), (-3, 0.9))],
    [*_with_d(*_draw(6, (0.1, 3), (0.1, 3)), RNG.integers(0, 4, 6).astype(float)),
     *_draw(6, (0.9, 0.99))],
    [*_draw(4, (0.1, 2), (0.1, 2), (4.5, 6)), np.ones(4)],
)]


def _check_values(fn, ref, args, x64, rtol):
    with same_mode(x64):
        dt = np.float64 if x64 else np.float32
        cast = [a.astype(dt) for a in args]
        got = fn(*[fnp.asarray(a) for a in cast])
        assert got.dtype == dt
        want = ref(*[a.astype(np.float64) for a in cast])
        fits = np.abs(want) < np.finfo(dt).max  # float32 overflows to inf beyond
        np.testing.assert_allclose(np.asarray(got, np.float64)[fits], want[fits], rtol=rtol)


@pytest.mark.parametrize("x64, rtol", [(True, 1e-12), (False, 1e-5)])
def test_hyp1f1_values_match_jax_and_scipy(x64, rtol):
    _check_values(fss.hyp1f1, sps.hyp1f1, HYP1F1_ARGS, x64, rtol)
    if x64:  # and jax's own (float32 with -m slow: each mode compiles jax's loops anew)
        got = np.asarray(fss.hyp1f1(*[fnp.asarray(a) for a in HYP1F1_ARGS]))
        np.testing.assert_allclose(got, np.asarray(jss.hyp1f1(*HYP1F1_ARGS)), rtol=1e-13)


@pytest.mark.parametrize("x64, rtol", [(True, 1e-12), (False, 1e-5)])
def test_hyp2f1_values_match_scipy(x64, rtol):
    _check_values(fss.hyp2f1, sps.hyp2f1, HYP2F1_ARGS, x64, rtol)


def test_integer_inputs_promote_as_jax():
    i = np.array([1, 2, 3], np.int32)
    # Dtypes by tracing alone, on both sides (tracing jax's hyp2f1 takes a second: one mode).
    for x64, name, args in ((True, "hyp1f1", (i, 2.0, 0.5)), (False, "hyp1f1", (i, 2.0, 0.5)),
                            (False, "hyp2f1", (i, 1.0, 4.0, 0.5))):
        with same_mode(x64):
            got = fx.eval_shape(getattr(fss, name), *args)
            assert got.dtype == jax.eval_shape(getattr(jss, name), *args).dtype, name
    with pytest.raises(ValueError, match="complex"):
        fss.hyp1f1(1.0, 2.0, fnp.asarray(1j))


# (a, b, x) -> 1F1 and (a, b, c, x) -> 2F1 where jax's rules fix the value.
HYP1F1_RULES = [
    ((0.0, 0.0, -2.0), 1.0), ((0.0, 0.0, 3.0), 1.0),  # a == 0 (scipy: NaN at b == 0)
    ((2.5, 2.5, -2.0), np.exp(-2.0)), ((2.5, 2.5, 3.0), np.exp(3.0)),  # a == b
    ((1.0, 0.0, 0.5), np.inf),  # b == 0
]
HYP2F1_RULES = [
    ((1.5, 2.0, 3.0, 0.0), 1.0), ((0.0, 2.0, 3.0, 0.7), 1.0),  # x == 0, a == 0
    ((1.5, 2.0, -2.0, 0.3), np.inf), ((1.5, 2.0, 0.0, 0.3), np.inf),  # poles in c
    ((1.5, 2.0, 3.0, 1.5), np.inf),  # x > 1
    ((1.5, 2.0, 3.0, 1.0), np.inf),  # c - a - b <= 0 at x = 1
    ((1.5, 2.0, 2.0, 0.3), 0.7 ** -1.5), ((2.0, 1.5, 2.0, 0.3), 0.7 ** -1.5),  # b or a == c
    # The terminating sum 2F1(-2, b; c; x) = 1 - 2bx/c + b(b + 1)x^2/(c(c + 1)).
    ((-2.0, 1.5, 2.5, -3.0), 1 + 2 * 1.5 * 3.0 / 2.5 + 1.5 * 2.5 * 9.0 / (2.5 * 3.5)),
]


@pytest.mark.parametrize("name, rules", [("hyp1f1", HYP1F1_RULES), ("hyp2f1", HYP2F1_RULES)])
def test_jax_conventions_at_special_values(name, rules):
    args = [fnp.asarray(np.array(column)) for column in zip(*[r[0] for r in rules])]
    np.testing.assert_allclose(np.asarray(getattr(fss, name)(*args)), [r[1] for r in rules],
                               rtol=1e-14)


def _fd(f, args, i, h=1e-6):
    up, dn = list(args), list(args)
    up[i], dn[i] = args[i] + h, args[i] - h
    return (f(*up) - f(*dn)) / (2 * h)


HYP1F1_GRAD = [np.array([0.7, 2.0, 1.3]), np.array([1.5, 0.6, 3.0]), np.array([0.4, -0.8, 2.0])]
HYP2F1_GRAD = [np.array([0.7, 2.0, 1.3]), np.array([1.5, 0.6, 1.1]), np.array([2.5, 3.2, 1.7]),
               np.array([0.3, -0.4, 0.2])]


@pytest.mark.parametrize("name, args", [("hyp1f1", HYP1F1_GRAD), ("hyp2f1", HYP2F1_GRAD)])
def test_derivatives_match_finite_differences_of_scipy(name, args):
    """grad in every argument, and a jvp along a random direction, against central differences
    of scipy's values (independent of fx's and jax's series for the parameter derivatives)."""
    fn, ref = getattr(fss, name), getattr(sps, name)
    fargs = [fnp.asarray(a) for a in args]
    fd = [_fd(ref, args, i) for i in range(len(args))]
    grads = fx.grad(lambda *v: fnp.sum(fn(*v)), argnums=tuple(range(len(args))))(*fargs)
    for i, (g, want) in enumerate(zip(grads, fd)):
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-7, atol=1e-9,
                                   err_msg=f"{name}: d/d(argument {i})")
    tangents = [RNG.normal(size=a.shape) for a in args]
    _, t = fx.jvp(fn, fargs, [fnp.asarray(v) for v in tangents])
    np.testing.assert_allclose(np.asarray(t), sum(d * v for d, v in zip(fd, tangents)),
                               rtol=1e-7, atol=1e-9)


def _batch(args, x_max):
    """Six points whose series converge in a few dozen terms (a loop runs to its slowest
    element), as a (2, 3) batch."""
    pick = np.flatnonzero(np.abs(args[-1]) < x_max)[:6]
    return [fnp.asarray(a[pick].reshape(2, 3)) for a in args]


def _check_vmap_and_jit(fn, batch):
    got = np.asarray(fx.vmap(fn)(*batch))
    np.testing.assert_array_equal(got, np.stack([np.asarray(fn(*[b[i] for b in batch]))
                                                 for i in range(2)]))
    np.testing.assert_allclose(np.asarray(fx.jit(fn)(*batch)), got, rtol=1e-13)


def test_hyp1f1_vmap_matches_a_loop_and_jit_matches_eager():
    _check_vmap_and_jit(fss.hyp1f1, _batch(HYP1F1_ARGS, 30))


@pytest.mark.slow  # compiling hyp2f1's loops (its branches' while loops) takes ~2-6 s
def test_hyp2f1_vmap_matches_a_loop_and_jit_matches_eager():
    _check_vmap_and_jit(fss.hyp2f1, _batch(HYP2F1_ARGS, 0.5))


def test_hyp2f1_vmap_matches_a_loop():
    batch = _batch(HYP2F1_ARGS, 0.5)
    np.testing.assert_array_equal(
        np.asarray(fx.vmap(fss.hyp2f1)(*batch)),
        np.stack([np.asarray(fss.hyp2f1(*[b[i] for b in batch])) for i in range(2)]))


def test_docstring_examples():
    result = doctest.testmod(hypergeometric, extraglobs={"fx": fx, "fnp": fnp},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 2


# --- against jax itself (compiling jax's hyp2f1 and the jvps takes seconds each) -----------


@pytest.mark.slow
@pytest.mark.parametrize("name, args", [("hyp1f1", HYP1F1_ARGS), ("hyp2f1", HYP2F1_ARGS)])
@pytest.mark.parametrize("x64", [True, False])
def test_values_match_jax(name, args, x64):
    with same_mode(x64):
        dt = np.float64 if x64 else np.float32
        args = [a.astype(dt) for a in args]
        got = np.asarray(getattr(fss, name)(*[fnp.asarray(a) for a in args]))
        # float32: the digamma form near x = 1 is ill-conditioned (2e-6 apart).
        np.testing.assert_allclose(got, np.asarray(getattr(jss, name)(*args)),
                                   rtol=1e-13 if x64 else 1e-5)


def _grid(*columns):
    return [g.ravel() for g in np.meshgrid(*columns, indexing="ij")]


@pytest.mark.slow
def test_special_value_grids_match_jax():
    v = np.array([-3.0, -2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 2.5, 3.0])
    x = np.array([-2.0, -0.5, 0.0, 0.5, 0.95, 1.0, 1.5, np.nan])
    a, b, c, xx = _grid(v, v, v, x)
    got = np.asarray(fss.hyp2f1(*[fnp.asarray(t) for t in (a, b, c, xx)]))
    want = np.asarray(jss.hyp2f1(a, b, c, xx))
    # Terminating sums whose exact value is 0 round to +-1e-16 differently in XLA (and then
    # (1 - x)^d * 0 at x = 1 is NaN here, +-inf there): compared with an absolute tolerance,
    # and those few skipped.
    ok = np.isclose(got, want, rtol=1e-12, atol=1e-13, equal_nan=True) | (got == want)
    zero_sum = (xx == 1) & np.isnan(got) & np.isinf(want)
    assert (ok | zero_sum).all(), list(zip(a[~ok], b[~ok], c[~ok], xx[~ok], got[~ok]))[:5]
    assert zero_sum.sum() <= 4
    a, b, xx = _grid(v, v, np.array([-50.0, -2.0, 0.0, 0.5, 3.0, 150.0, np.inf, np.nan]))
    got = np.asarray(fss.hyp1f1(*[fnp.asarray(t) for t in (a, b, xx)]))
    want = np.asarray(jss.hyp1f1(a, b, xx))
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


@pytest.mark.slow
@pytest.mark.parametrize("name, args", [("hyp1f1", HYP1F1_GRAD), ("hyp2f1", HYP2F1_GRAD)])
def test_jvps_match_jax(name, args):
    tangents = [RNG.normal(size=a.shape) for a in args]
    _, t_fx = fx.jvp(getattr(fss, name), [fnp.asarray(a) for a in args],
                     [fnp.asarray(t) for t in tangents])
    _, t_jax = jax.jvp(getattr(jss, name), args, tangents)
    np.testing.assert_allclose(np.asarray(t_fx), np.asarray(t_jax), rtol=1e-12)
    ct = fnp.asarray(RNG.normal(size=args[0].shape))
    _, vjp_fx = fx.vjp(getattr(fss, name), *[fnp.asarray(a) for a in args])
    _, vjp_jax = jax.vjp(getattr(jss, name), *args)
    for g, w in zip(vjp_fx(ct), vjp_jax(jnp.asarray(np.asarray(ct)))):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)
