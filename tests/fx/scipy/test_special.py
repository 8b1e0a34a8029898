"""fx.scipy.special against jax.scipy.special and scipy.special: values (float64 and float32),
result dtypes (integer inputs promoted as jax does), edge cases, jvp/vjp against jax and finite
differences, vmap against a loop, jit against eager; plus the new fx.lax primitives."""

from __future__ import annotations

import warnings
import zlib
from dataclasses import dataclass, field

import jax
import jax.scipy.special as jss
import numpy as np
import pytest
import scipy.special as sps

import fx
import fx.lax
import fx.numpy as fnp
import fx.scipy.special as fss
from fx.test_util import check_grads

warnings.filterwarnings("ignore", category=RuntimeWarning)


@dataclass(frozen=True)
class Case:
    name: str
    domains: tuple  # one (lo, hi, "lin" | "log" | "int") per argument
    rtol64: float = 1e-13
    rtol32: float = 1e-5
    atol: float = 0.0
    grad: tuple = ()  # the argument indices to differentiate (empty: none)
    grad_domains: tuple | None = None  # narrower domains for the gradient checks
    scipy_name: str | None = None
    scipy_ok: bool = True  # jax's own algorithm differs from scipy's beyond rtol
    jax_grad_rtol: float | None = 1e-9  # None: jax's derivative is NaN/inexact there
    jax_accurate: bool = True  # False: values against scipy only (jax is off by ~1e-8)
    extra: dict = field(default_factory=dict)


CASES = [
    Case("gammaln", ((0.1, 40, "lin"),), grad=(0,)),
    Case("gamma", ((-5.5, 20, "lin"),), rtol64=1e-12, grad=(0,), grad_domains=((0.5, 5, "lin"),)),
    Case("gammasgn", ((-10, 10, "lin"),)),
    Case("loggamma", ((0.1, 30, "lin"),), grad=(0,)),
    Case("digamma", ((0.1, 40, "lin"),), rtol64=1e-12, grad=(0,)),
    Case("erf", ((-4, 4, "lin"),), grad=(0,)),
    Case("erfc", ((-4, 10, "lin"),), rtol64=1e-12, grad=(0,)),
    Case("erfinv", ((-0.99, 0.99, "lin"),), grad=(0,)),
    Case("erfcx", ((-5, 60, "lin"),), rtol64=1e-13, grad=(0,)),
    Case("dawsn", ((-30, 30, "lin"),), grad=(0,)),
    Case("ndtr", ((-30, 10, "lin"),), rtol64=1e-12, grad=(0,), grad_domains=((-3, 3, "lin"),)),
    Case("ndtri", ((1e-6, 1 - 1e-6, "lin"),), rtol64=1e-13, grad=(0,),
         grad_domains=((0.1, 0.9, "lin"),)),
    Case("log_ndtr", ((-40, 6, "lin"),), rtol64=1e-12, grad=(0,), scipy_ok=False),
    Case("i0", ((-30, 30, "lin"),), rtol64=1e-14, grad=(0,), grad_domains=((-3, 3, "lin"),)),
    Case("i0e", ((-60, 60, "lin"),), rtol64=1e-14, grad=(0,), grad_domains=((-3, 3, "lin"),)),
    Case("i1", ((-30, 30, "lin"),), rtol64=1e-14, grad=(0,), grad_domains=((-3, 3, "lin"),)),
    Case("i1e", ((-60, 60, "lin"),), rtol64=1e-14, grad=(0,), grad_domains=((-3, 3, "lin"),)),
    Case("expi", ((0.5, 50, "lin"),), rtol64=1e-13, grad=(0,), grad_domains=((0.5, 3, "lin"),)),
    Case("exp1", ((-4, 4, "log"),), rtol64=1e-13, grad=(0,), grad_domains=((0.5, 3, "lin"),)),
    Case("spence", ((-5, 5, "log"),), rtol64=1e-13, grad=(0,), grad_domains=((0.2, 3, "lin"),),
         jax_grad_rtol=None),  # jax differentiates its piecewise fit: NaN below x = 0.5
    Case("expit", ((-30, 30, "lin"),), grad=(0,)),
    Case("logit", ((0.01, 0.99, "lin"),), atol=1e-14, grad=(0,)),
    Case("entr", ((-4, 3, "log"),), grad=(0,)),
    Case("gammainc", ((-2, 2.5, "log"), (-3, 3, "log")), rtol64=1e-12, grad=(0, 1),
         grad_domains=((0.5, 3, "lin"), (0.5, 3, "lin"))),
    Case("gammaincc", ((-2, 2.5, "log"), (-3, 3, "log")), rtol64=1e-12, grad=(0, 1),
         grad_domains=((0.5, 3, "lin"), (0.5, 3, "lin"))),
    Case("betainc", ((-2, 2, "log"), (-2, 2, "log"), (0, 1, "lin")), rtol64=1e-11, grad=(2,),
         grad_domains=((0.5, 3, "lin"), (0.5, 3, "lin"), (0.1, 0.9, "lin"))),
    # jax's betaln (its algdiv for b >= 8) is off by up to 1e-6 relative; fx's is within
    # ~1e-12 of scipy's, so jax is compared only where it agrees with scipy.
    Case("betaln", ((-1, 4, "log"), (-1, 4, "log")), rtol64=1e-11, atol=1e-13, grad=(0, 1),
         jax_grad_rtol=None, jax_accurate=False),
    Case("beta", ((-2, 2, "log"), (-2, 2, "log")), rtol64=1e-12, grad=(0, 1),
         grad_domains=((0.5, 3, "lin"), (0.5, 3, "lin"))),
    Case("zeta", ((1.1, 20, "lin"), (-2, 4, "log")), grad=(0, 1),
         grad_domains=((2, 5, "lin"), (0.5, 3, "lin"))),
    Case("xlogy", ((-3, 3, "lin"), (-3, 3, "log")), grad=(0, 1)),
    Case("xlog1py", ((-3, 3, "lin"), (-0.9, 3, "lin")), grad=(0, 1)),
    Case("rel_entr", ((-3, 3, "log"), (-3, 3, "log")), atol=1e-14, grad=(0, 1), scipy_ok=False),
    Case("kl_div", ((-3, 3, "log"), (-3, 3, "log")), atol=1e-14, grad=(0, 1), scipy_ok=False),
    Case("poch", ((-1, 2, "log"), (-2, 4, "lin")), rtol64=1e-12, grad=(0, 1),
         grad_domains=((0.5, 3, "lin"), (0.5, 2, "lin"))),
    Case("factorial", ((0, 30, "lin"),), rtol64=1e-12),
    Case("comb", ((0, 40, "int"), (0, 20, "int")), rtol64=1e-12),
    Case("boxcox", ((-2, 2, "log"), (-2, 2, "lin")), grad=(0, 1)),
    Case("boxcox1p", ((-2, 2, "log"), (-2, 2, "lin")), grad=(0, 1)),
    Case("expn", ((0, 6, "int"), (-3, 3, "log")), rtol64=1e-13, grad=(1,),
         grad_domains=((1, 4, "int"), (0.5, 3, "lin"))),
    Case("polygamma", ((1, 5, "int"), (-1, 3, "log")), rtol64=1e-12, grad=(1,),
         grad_domains=((1, 3, "int"), (0.5, 3, "lin"))),
]
IDS = [c.name for c in CASES]


def _draw(rng, domains, n, dtype):
    out = []
    for lo, hi, kind in domains:
        if kind == "int":
            out.append(np.floor(rng.uniform(lo, hi, n)).astype(np.int64))
        elif kind == "log":
            out.append(np.exp(rng.uniform(lo, hi, n)).astype(dtype))
        else:
            out.append(rng.uniform(lo, hi, n).astype(dtype))
    return out


def _fx(name):
    return getattr(fss, name)


def _jax(name):
    return getattr(jss, name)


def _close(got, want, rtol, atol, what):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


# float32 values for every function only with -m slow (CI's time budget); float32 dtypes and
# promotion are in test_integer_inputs_promote_as_jax, float32 values of a few functions here.
_F32_IN_CI = {"gammaln", "erf", "i0e", "gammainc", "betainc", "zeta", "ndtri", "expit"}
_VALUE_PARAMS = [pytest.param(c, np.float64, id=f"f64-{c.name}") for c in CASES] + [
    pytest.param(c, np.float32, id=f"f32-{c.name}",
                 marks=[] if c.name in _F32_IN_CI else [pytest.mark.slow]) for c in CASES]


@pytest.mark.parametrize("case, dtype", _VALUE_PARAMS)
def test_values_against_jax_and_scipy(case, dtype):
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    args = _draw(rng, case.domains, 300, dtype)
    got = _fx(case.name)(*[fnp.asarray(a) for a in args])
    want = np.asarray(_jax(case.name)(*args))
    assert np.asarray(got).dtype == want.dtype
    rtol = case.rtol64 if dtype == np.float64 else case.rtol32
    atol = case.atol if dtype == np.float64 else max(case.atol, 1e-6)
    if not case.scipy_ok:
        _close(got, want, rtol, atol, f"{case.name} vs jax")
        return
    ref = getattr(sps, case.scipy_name or case.name)(*[np.asarray(a).astype(
        np.float64 if a.dtype.kind == "f" else a.dtype) for a in args])
    _close(got, ref, rtol, atol, f"{case.name} vs scipy")
    # Against jax where jax agrees with scipy (jax's float32 algorithms, and a few of its
    # float64 ones near their branch points, are less accurate than fx's float64 impls).
    if not case.jax_accurate:
        return
    agree = np.isclose(want, ref, rtol=1e3 * rtol, atol=atol, equal_nan=True)
    assert agree.mean() > 0.9, f"jax and scipy disagree on {case.name}"
    _close(np.asarray(got)[agree], want[agree], rtol * 10, atol, f"{case.name} vs jax")


EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 2.0, 40.0, -40.0, 1e-300, np.inf, -np.inf, np.nan]
UNARY = [c.name for c in CASES if len(c.domains) == 1]
BINARY = [c.name for c in CASES if len(c.domains) == 2 and c.domains[0][2] != "int"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_edge_cases_match_jax(name):
    x = np.array(EDGE)
    got = np.asarray(_fx(name)(fnp.asarray(x)))
    # jax's exp1 (a while loop over the whole array) does not terminate on this array.
    # jax's expi gives NaN at 0 and +-inf where scipy's limits are -inf, inf and 0.
    if name in ("exp1", "expi"):
        want = getattr(sps, name)(x)
    else:
        want = np.asarray(_jax(name)(x))
    ok = np.isclose(got, want, rtol=1e-12, atol=0, equal_nan=True) | (got == want)
    assert ok.all(), f"{name}: at {x[~ok]} fx {got[~ok]} jax {want[~ok]}"


@pytest.mark.parametrize("name", BINARY + ["betainc"])
def test_nary_edge_cases_match_jax(name):
    vals = np.array([0.0, 1.0, 0.5, 3.0, -1.0, np.inf, np.nan])
    nargs = 3 if name == "betainc" else 2
    args = [a.ravel() for a in np.meshgrid(*[vals] * nargs, indexing="ij")]
    got = np.asarray(_fx(name)(*[fnp.asarray(a) for a in args]))
    # jax's zeta (XLA's) is NaN/inf at x == 0, q == 0 and x == inf where scipy's limits
    # differ; fx follows scipy there.
    if name == "zeta":
        want = np.where(np.isnan(args[0]), np.nan, sps.zeta(*args))  # scipy: inf at (nan, 0)
    else:
        want = np.asarray(_jax(name)(*args))
    ok = np.isclose(got, want, rtol=1e-12, atol=1e-300, equal_nan=True) | (got == want)
    bad = [tuple(float(a[i]) for a in args) for i in np.flatnonzero(~ok)]
    assert ok.all(), f"{name}: at {bad[:8]} fx {got[~ok][:8]} jax {want[~ok][:8]}"


def _grad_points(case, n=3):
    rng = np.random.default_rng(7)
    return _draw(rng, case.grad_domains or case.domains, n, np.float64)


GRAD_CASES = [c for c in CASES if c.grad]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow]
                                               if c.name == "zeta" else []) for c in GRAD_CASES])
def test_derivatives_against_jax_and_finite_differences(case):
    args = _grad_points(case)
    diff = list(case.grad)

    def closed(fn, conv):
        def f(*d):
            full = list(conv(a) for a in args)
            for i, v in zip(diff, d):
                full[i] = v
            return fn(*full)
        return f

    f_fx = closed(_fx(case.name), fnp.asarray)
    # jitted: eagerly jax compiles each primitive of the function's derivative on its own.
    f_jax = jax.jit(closed(_jax(case.name), np.asarray))
    primals = [args[i] for i in diff]
    tangents = [np.random.default_rng(3).normal(size=a.shape) for a in primals]
    _, t_fx = fx.jvp(f_fx, [fnp.asarray(p) for p in primals], [fnp.asarray(t) for t in tangents])
    _, t_jax = jax.jvp(f_jax, primals, tangents)
    ct = np.random.default_rng(4).normal(size=np.shape(t_jax))
    _, vjp_fx = fx.vjp(f_fx, *[fnp.asarray(p) for p in primals])
    _, vjp_jax = jax.vjp(f_jax, *primals)
    if case.jax_grad_rtol is not None:
        _close(t_fx, t_jax, case.jax_grad_rtol, 1e-12, f"{case.name} jvp vs jax")
        for g_fx, g_jax in zip(vjp_fx(fnp.asarray(ct)), vjp_jax(ct)):
            _close(g_fx, g_jax, case.jax_grad_rtol, 1e-12, f"{case.name} vjp vs jax")
    check_grads(f_fx, [fnp.asarray(p) for p in primals], order=1, atol=1e-5, rtol=1e-5)


VMAP_CASES = [c for c in CASES if c.name not in ("polygamma", "expn")] + [
    c for c in CASES if c.name in ("polygamma", "expn")]


@pytest.mark.parametrize("case", VMAP_CASES, ids=[c.name for c in VMAP_CASES])
def test_vmap_matches_a_loop_and_jit_matches_eager(case):
    rng = np.random.default_rng(11)
    args = [np.asarray(a).reshape(4, 3) for a in _draw(rng, case.domains, 12, np.float64)]
    fn = _fx(case.name)
    batched = fx.vmap(fn)(*[fnp.asarray(a) for a in args])
    loop = np.stack([np.asarray(fn(*[fnp.asarray(a[i]) for a in args])) for i in range(4)])
    np.testing.assert_array_equal(np.asarray(batched), loop)
    eager = np.asarray(fn(*[fnp.asarray(a) for a in args]))
    jitted = np.asarray(fx.jit(fn)(*[fnp.asarray(a) for a in args]))
    # Compiled kernels use the C library's exp/log: within ulps of NumPy's, not bitwise.
    np.testing.assert_allclose(jitted, eager, rtol=1e-12, atol=1e-300, equal_nan=True)


@pytest.mark.parametrize("name", ["gammaln", "erf", "expit", "i0e", "gammainc", "zeta", "xlogy",
                                  "betaln", "entr"])
def test_integer_inputs_promote_as_jax(name):
    nargs = len(next(c for c in CASES if c.name == name).domains)
    args = [np.array([1, 2, 3], np.int32)] * nargs
    for x64 in (True, False):
        with fx.enable_x64(x64), jax.enable_x64(x64):
            got = _fx(name)(*[fnp.asarray(a) for a in args])
            want = _jax(name)(*args)
            assert np.asarray(got).dtype == np.asarray(want).dtype, (name, x64)


def test_float_only_functions_refuse_integers_as_jax():
    for name in ("ndtr", "ndtri", "spence", "log_ndtr"):
        with pytest.raises(TypeError):
            _fx(name)(fnp.asarray(np.array([1, 2], np.int32)))


def test_two_output_functions():
    x = np.linspace(-8, 8, 33)
    for name in ("sici", "fresnel"):
        got = _fx(name)(fnp.asarray(x))
        want = _jax(name)(x)
        ref = getattr(sps, name)(x)
        for g, w, r in zip(got, want, ref):
            _close(g, w, 1e-12, 1e-14, f"{name} vs jax")
            _close(g, r, 1e-12, 1e-14, f"{name} vs scipy")
        t = np.ones_like(x[1:4])
        _, t_fx = fx.jvp(_fx(name), [fnp.asarray(x[1:4])], [fnp.asarray(t)])
        _, t_jax = jax.jvp(_jax(name), [x[1:4]], [t])
        for a, b in zip(t_fx, t_jax):
            _close(a, b, 1e-9, 1e-12, f"{name} jvp")


def test_reductions_and_counting():
    x = np.random.default_rng(0).normal(size=(3, 4))
    for name, kw in [("logsumexp", {}), ("logsumexp", {"axis": 1}), ("softmax", {"axis": 0}),
                     ("log_softmax", {}), ("logsumexp", {"b": x ** 2, "axis": 0})]:
        kw_fx = {k: fnp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        _close(_fx(name)(fnp.asarray(x), **kw_fx), _jax(name)(x, **kw), 1e-13, 1e-15, name)
    _close(fss.multigammaln(fnp.asarray(np.array([2.0, 5.5])), 3),
           jss.multigammaln(np.array([2.0, 5.5]), 3), 1e-13, 0, "multigammaln")
    # fx's are exact rationals rounded; jax's Chowla-Hartung sums are off by up to 3e-6.
    _close(fss.bernoulli(20), jss.bernoulli(20), 1e-5, 1e-15, "bernoulli")
    _close(fss.bernoulli(20), sps.bernoulli(20), 1e-11, 0, "bernoulli vs scipy")
    _close(fss.comb(fnp.asarray(5.0), fnp.asarray(2.0), repetition=True),
           jss.comb(5.0, 2.0, repetition=True), 1e-13, 0, "comb repetition")
    with pytest.raises(NotImplementedError):
        fss.factorial(3, exact=True)
    with pytest.raises(ValueError, match="integer"):
        fss.polygamma(fnp.asarray(1.0), fnp.asarray(2.0))


def test_jax_derivative_refusals():
    with pytest.raises(ValueError, match="Betainc gradient"):
        fx.grad(lambda a: fss.betainc(a, 2.0, 0.5))(1.5)
    # Forward mode through the log_ndtr asymptotic segment and the igamma a-derivative.
    g = fx.grad(lambda a: fss.gammainc(a, 2.0))(1.5)
    np.testing.assert_allclose(g, jax.grad(lambda a: jss.gammainc(a, 2.0))(1.5), rtol=1e-10)
    g = fx.grad(lambda x: fss.log_ndtr(x))(-30.0)
    np.testing.assert_allclose(g, jax.grad(lambda x: jss.log_ndtr(x))(-30.0), rtol=1e-12)


LAX = [("igamma", 2), ("igammac", 2), ("igamma_grad_a", 2), ("betainc", 3), ("zeta", 2),
       ("bessel_i0e", 1), ("bessel_i1e", 1)]


@pytest.mark.parametrize("name, nargs", LAX, ids=[n for n, _ in LAX])
def test_lax_primitives_match_jax_lax(name, nargs):
    rng = np.random.default_rng(5)
    args = [np.exp(rng.uniform(-1, 1.5, 50)) for _ in range(nargs)]
    if name == "betainc":
        args[2] = rng.uniform(0, 1, 50)
    if name == "zeta":
        args[0] = args[0] + 1.0
    got = getattr(fx.lax, name)(*[fnp.asarray(a) for a in args])
    _close(got, getattr(jax.lax, name)(*args), 1e-11, 1e-14, name)
    assert getattr(fx.lax, name + "_p", None) is not None or name == "betainc"
