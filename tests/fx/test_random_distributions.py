"""fx.random's distributions beyond uniform/normal/categorical against jax.random.

Same key, same algorithm, same key splits, and the same floating-point operations as XLA CPU
(jaxlib 0.10.2) runs them: ``fx/random/xla_math.py`` reproduces XLA's inline ``log``/
``log1p``/``exp``/``expm1``/``erf_inv`` polynomials with the LLVM backend's fused multiply-adds
and flushed denormals, and calls glibc's ``log``/``tan``/``pow`` through compiled kernels, as
XLA does; ``fx/random/xla_rsqrt.py`` runs XLA's ``rsqrt`` (the CPU's approximation
instruction and XLA's two Newton steps); the samplers fuse their own multiply-adds where XLA
does. So these are bit-identical to jax in both modes, eagerly, under ``fx.jit`` and under
``fx.vmap`` (the ``BITWISE`` table: 5 keys x 3 shapes x parameter values each, the fuller sweep
marked slow): exponential, laplace, logistic, lognormal, cauchy, pareto, weibull_min, maxwell,
double_sided_maxwell, rayleigh, wald, triangular, rademacher, geometric and
multivariate_normal (and uniform, normal, gumbel, tested in test_random.py), except
multivariate_normal under vmap in float32, where XLA computes the batched matrix-vector
product with another dot emitter (no fused multiply-adds; fx follows the unbatched one).

The gamma family (gamma, loggamma, beta, dirichlet, chisquare, f, t, generalized_normal,
ball; ``GAMMA_FAMILY``, in the same table; dirichlet, generalized_normal and ball in 64-bit
mode only, f not under vmap: see ``GAMMA_ROUNDING`` and ``VMAP_ROUNDING``) is bit-identical
too where XLA computes
Marsaglia-Tsang's ``c = (1/3) * rsqrt(d)`` (its rewrite of ``(1/3) / sqrt(d)``) from the
hardware approximation, ``rsqrtss`` in float32 (CPUs with AVX) and ``vrsqrt14pd`` in float64
(AVX-512F), whose last bit no composition of exactly rounded operations reproduces, and fx
runs the same instruction (``GAMMA_BITWISE``). Elsewhere XLA computes ``1 / sqrt(d)`` and fx
follows it, checked only by making an AVX-512 machine act as an AVX2 one, so there these rows
are compared to rounding (a rejection test within an ulp of its threshold could then take
another draw than jax's).

Not bit-identical, and tested to tolerance:

* poisson (XLA's lgamma and fused multiply-adds, counts exact) is tested in the slow run;
  binomial's BTRS arithmetic is not matched operation by operation, so its counts agree
  for these keys but are not guaranteed to;
* orthogonal: fx's Householder QR rounds differently from LAPACK's.

The rejection samplers compile (and run eagerly) slowly, so compiled functions are shared
(module-level cache), shapes are small, and the fuller sweeps (poisson, binomial,
multinomial, the gamma family, grads of beta-like samplers, default mode of gamma, the
bitwise table's every key and shape under eager/jit) are marked slow.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
from harness import assert_bitwise, same_mode

import fx
import fx.numpy as fnp
import fx.random as fr
from fx.random.xla_rsqrt import uses_hardware_approximation

RTOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-6, np.dtype(np.float64): 5e-14}


def close(got, want, exact=False, rtol=None, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if exact or want.dtype.kind in "biu":
        assert_bitwise(got, want, what)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol or RTOL[want.dtype], atol=0,
                                   err_msg=what, equal_nan=True)


def fx_key(seed):
    return fr.key(seed)


def jx_key(seed):
    return jr.PRNGKey(seed)


F = lambda x64: np.float64 if x64 else np.float32  # noqa: E731

# name -> (call(R, key, dt), exact): R is fx.random or jax.random, dt the mode's float type.
CHEAP = {
    "exponential": (lambda R, k, dt: R.exponential(k, (5,)), True),
    "laplace": (lambda R, k, dt: R.laplace(k, (2, 3)), True),
    "logistic": (lambda R, k, dt: R.logistic(k, (5,), np.float32), True),
    "lognormal": (lambda R, k, dt: R.lognormal(k, np.array([0.5, 2.0], dt), (3, 2)), True),
    "cauchy": (lambda R, k, dt: R.cauchy(k, (4,)), True),
    "pareto": (lambda R, k, dt: R.pareto(k, np.array([1.0, 3.0, 5.0], dt)), True),
    "weibull_min": (lambda R, k, dt: R.weibull_min(k, 2.0, 1.5, (4,)), True),
    "maxwell": (lambda R, k, dt: R.maxwell(k, (3,)), True),
    "double_sided_maxwell": (lambda R, k, dt: R.double_sided_maxwell(
        k, np.array([0.0, 1.0], dt), 2.0), True),
    "rayleigh": (lambda R, k, dt: R.rayleigh(k, 2.0, (4,)), True),
    "wald": (lambda R, k, dt: R.wald(k, np.array([0.5, 1.5, 4.0], dt), (2, 3)), True),
    "triangular": (lambda R, k, dt: R.triangular(k, 0.0, np.array([0.2, 0.5], dt), 1.0,
                                                 (3, 2)), True),
    "rademacher": (lambda R, k, dt: R.rademacher(k, (7,)), True),
    "geometric": (lambda R, k, dt: R.geometric(k, np.array([0.1, 0.5, 0.9], dt)), True),
    "multivariate_normal": (lambda R, k, dt: R.multivariate_normal(
        k, np.array([1.0, -1.0], dt), np.array([[2.0, 0.5], [0.5, 1.0]], dt), (3,)), True),
    "orthogonal": (lambda R, k, dt: R.orthogonal(k, 3, (2,)), False),
}
ORTHO_RTOL = {True: 1e-12, False: 2e-5}  # Householder QR vs LAPACK's, rounding differs


@pytest.mark.parametrize("x64", [True, pytest.param(False, marks=pytest.mark.default_mode)],
                         ids=["x64", "default"])
@pytest.mark.parametrize("name", sorted(CHEAP))
def test_matches_jax(name, x64):
    call, exact = CHEAP[name]
    with same_mode(x64):
        dt = F(x64)
        for seed in ([0, 7] if x64 else [3]):
            got, want = call(fr, fx_key(seed), dt), call(jr, jx_key(seed), dt)
            rtol = ORTHO_RTOL[x64] if name == "orthogonal" else None
            close(got, want, exact, rtol, f"{name} seed {seed}")


# --- bit-identical samplers: 5 keys x shapes x parameters, eager / vmap / jit --------------------


def _p(dt, shape, *vals):
    """Parameters: one per element of a trailing axis of ``len(vals)``, else the first value as
    a Python float (weakly typed)."""
    return np.array(vals, dt) if shape[-1:] == (len(vals),) else vals[0]


def _full(p, shape):
    """An array parameter broadcast to the sample shape (jax.random.f takes no lower rank)."""
    return np.broadcast_to(p, shape) if isinstance(p, np.ndarray) else p


# name -> call(R, key, dt, shape); shapes end in 3 where a parameter varies along them.
BITWISE = {
    "exponential": lambda R, k, dt, s: R.exponential(k, s, dt),
    "laplace": lambda R, k, dt, s: R.laplace(k, s, dt),
    "logistic": lambda R, k, dt, s: R.logistic(k, s, dt),
    "lognormal": lambda R, k, dt, s: R.lognormal(k, _p(dt, s, 0.5, 1.0, 2.0), s, dt),
    "cauchy": lambda R, k, dt, s: R.cauchy(k, s, dt),
    "pareto": lambda R, k, dt, s: R.pareto(k, _p(dt, s, 1.0, 3.0, 0.4), s, dt),
    "weibull_min": lambda R, k, dt, s: R.weibull_min(k, _p(dt, s, 2.0, 0.5, 1.0),
                                                     _p(dt, s, 1.5, 0.7, 3.0), s, dt),
    "maxwell": lambda R, k, dt, s: R.maxwell(k, s, dt),
    "double_sided_maxwell": lambda R, k, dt, s: R.double_sided_maxwell(
        k, _p(dt, s, 0.0, 1.0, -2.0), 2.0, s[:-1], dt),
    "rayleigh": lambda R, k, dt, s: R.rayleigh(k, _p(dt, s, 2.0, 0.3, 1.0), s, dt),
    "wald": lambda R, k, dt, s: R.wald(k, _p(dt, s, 0.5, 1.5, 4.0), s, dt),
    "triangular": lambda R, k, dt, s: R.triangular(k, 0.0, _p(dt, s, 0.2, 0.5, 0.9), 1.0, s,
                                                   dt),
    "rademacher": lambda R, k, dt, s: R.rademacher(k, s),
    "geometric": lambda R, k, dt, s: R.geometric(k, _p(dt, s, 0.1, 0.5, 0.9), s),
    "multivariate_normal": lambda R, k, dt, s: R.multivariate_normal(
        k, np.array([1.0, -1.0], dt), np.array([[2.0, 0.5], [0.5, 1.0]], dt), s, dt),
}
# The gamma family: bitwise where fx runs XLA's hardware rsqrt (see GAMMA_BITWISE).
GAMMA_FAMILY = {  # shape parameters (a, df / 2) where (1/3) * rsqrt(d) != (1/3) / sqrt(d)
    "gamma": lambda R, k, dt, s: R.gamma(k, _p(dt, s, 0.45, 2.5, 3.0), s, dt),
    "loggamma": lambda R, k, dt, s: R.loggamma(k, _p(dt, s, 0.55, 1.45, 3.0), s, dt),
    "beta": lambda R, k, dt, s: R.beta(k, _p(dt, s, 0.45, 2.5, 5.2), 3.0, s, dt),
    "dirichlet": lambda R, k, dt, s: R.dirichlet(k, np.array([0.45, 1.55, 3.0], dt), s[:-1], dt),
    "chisquare": lambda R, k, dt, s: R.chisquare(k, _p(dt, s, 0.9, 5.0, 6.0), s, dt),
    "f": lambda R, k, dt, s: R.f(k, _full(_p(dt, s, 0.9, 5.0, 6.0), s), 6.0, s, dt),
    "t": lambda R, k, dt, s: R.t(k, _p(dt, s, 0.9, 5.0, 6.0), s, dt),
    "generalized_normal": lambda R, k, dt, s: R.generalized_normal(k, 3.5, s, dt),
    "ball": lambda R, k, dt, s: R.ball(k, 3, 3.5, s[:-1], dt),
}
BITWISE.update(GAMMA_FAMILY)
# x64 -> whether the gamma family is asserted bitwise: where XLA CPU computes Marsaglia-Tsang's
# rsqrt from the hardware approximation (float32: AVX, float64: AVX-512F) and fx runs the same
# instruction. Elsewhere XLA takes 1 / sqrt(x), which fx follows too, but that path has only
# been checked on an AVX-512 machine made to act as an AVX2 one (FX_MARCH=x86-64-v3 against
# --xla_cpu_max_isa=AVX2), so there the samples are compared to rounding.
GAMMA_BITWISE = {x64: uses_hardware_approximation(np.float64 if x64 else np.float32)
                 for x64 in (True, False)}


# (name, x64) compared to rounding, not yet matched: in float32 dirichlet's softmax rounds a
# row's normalization differently from XLA's now and then (and fx's compiled reduction from
# its eager one), and generalized_normal's and ball's powers of the gamma samples differ from
# XLA's in the last bit for many elements.
GAMMA_ROUNDING = {("dirichlet", False), ("generalized_normal", False), ("ball", False)}
# Under jax.vmap XLA regroups f's four divisions otherwise than unbatched, where fx follows its
# (chi_n dfden) / (dfnum chi_d); the batched grouping is not matched, so to rounding.
VMAP_ROUNDING = {"f"}


def _exact(name: str, x64: bool) -> bool:
    return name not in GAMMA_FAMILY or (GAMMA_BITWISE[x64] and (name, x64) not in GAMMA_ROUNDING)


SHAPES = [(), (3,), (2, 3)]
SEEDS = [0, 1, 7, 42, 2**31 + 5]
# The default run covers 64-bit mode here (test_matches_jax covers the default mode eagerly).
MODES = [True, pytest.param(False, marks=[pytest.mark.default_mode, pytest.mark.slow])]


def _keys(n=5):
    return fr.split(fx_key(17), n), jr.split(jx_key(17), n)


# A few samplers in the default run (glibc's tan, exp of a broadcast reciprocal, fused
# multiply-adds over erf_inv); test_matches_jax covers every sampler eagerly in both modes,
# the slow run every sampler here.
VMAP_DEFAULT = ["cauchy", "pareto", "wald"]


def _default_or_slow(default):
    """BITWISE's names, those not in ``default`` marked slow."""
    return [n if n in default else pytest.param(n, marks=pytest.mark.slow)
            for n in sorted(BITWISE)]


@pytest.mark.parametrize("x64", MODES, ids=["x64", "default"])
@pytest.mark.parametrize("name", _default_or_slow(VMAP_DEFAULT))
def test_bitwise_over_keys_under_vmap(name, x64):
    """Five keys at once: ``fx.vmap`` over the keys against ``jax.vmap``."""
    call = BITWISE[name]
    with same_mode(x64):
        dt, (fk, jk) = F(x64), _keys()
        got = fx.vmap(lambda k: call(fr, k, dt, (2, 3)))(fk)
        want = jax.vmap(lambda k: call(jr, k, dt, (2, 3)))(jk)
        # XLA computes jax.vmap's batched float32 matrix-vector product with another dot
        # emitter (no fused multiply-adds), so that one case agrees to rounding only.
        exact = (not (name == "multivariate_normal" and not x64) and _exact(name, x64)
                 and name not in VMAP_ROUNDING)
        close(got, want, exact=exact, what=name)


@pytest.mark.parametrize("x64", MODES, ids=["x64", "default"])
def test_scalar_wald_bitwise_eager_and_under_vmap(x64):
    """XLA regroups constant factors of rank-0 products (not of batched ones): wald follows."""
    with same_mode(x64):
        dt, (fk, jk) = F(x64), _keys()
        got = fx.vmap(lambda k: fr.wald(k, 1.5, (), dt))(fk)
        close(got, jax.vmap(lambda k: jr.wald(k, 1.5, (), dt))(jk), exact=True, what="vmap")
        for seed in SEEDS[:2]:
            close(fr.wald(fx_key(seed), 0.5, (), dt), jr.wald(jx_key(seed), 0.5, (), dt),
                  exact=True, what=f"seed {seed}")


@functools.cache
def _bitwise_jitted(name: str, dt, shape):
    return fx.jit(lambda k: BITWISE[name](fr, k, dt, shape))


JIT_DEFAULT = ["cauchy", "wald"]  # glibc tan; fmas and erf_inv


@pytest.mark.parametrize("x64", MODES, ids=["x64", "default"])
@pytest.mark.parametrize("name", _default_or_slow(JIT_DEFAULT))
def test_bitwise_under_jit(name, x64):
    with same_mode(x64):
        dt = F(x64)
        for seed in SEEDS[:2] if name in JIT_DEFAULT else SEEDS:
            got = _bitwise_jitted(name, dt, (2, 3))(fx_key(seed))
            close(got, BITWISE[name](jr, jx_key(seed), dt, (2, 3)), exact=_exact(name, x64),
                  what=f"{name} seed {seed}")


@pytest.mark.slow
@pytest.mark.parametrize("x64", [True, False], ids=["x64", "default"])
@pytest.mark.parametrize("name", sorted(BITWISE))
def test_bitwise_every_key_and_shape(name, x64):
    call = BITWISE[name]
    with same_mode(x64):
        dt = F(x64)
        for seed in SEEDS:
            for shape in SHAPES:
                if name == "double_sided_maxwell" and not shape:
                    continue
                close(call(fr, fx_key(seed), dt, shape), call(jr, jx_key(seed), dt, shape),
                      exact=_exact(name, x64), what=f"{name} seed {seed} shape {shape}")


# --- triangular and rademacher in every float type -----------------------------------------------

@pytest.mark.parametrize("x64", [True, pytest.param(False, marks=pytest.mark.default_mode)],
                         ids=["x64", "default"])
def test_triangular_and_rademacher_bitwise(x64):
    with same_mode(x64):
        dts = [np.float16, np.float32] + ([np.float64] if x64 else [])
        for seed in [0, 42, 2**31 + 5]:
            for dt in dts:
                for shape in [(), (2, 3)]:
                    got = fr.triangular(fx_key(seed), -1.0, 0.25, 2.0, shape, dt)
                    want = jr.triangular(jx_key(seed), -1.0, 0.25, 2.0, shape, dt)
                    close(got, want, True, what=f"triangular {seed} {dt} {shape}")
            for dt in [None, np.int32, np.float32]:
                close(fr.rademacher(fx_key(seed), (9,), dt), jr.rademacher(jx_key(seed), (9,), dt),
                      True, what=f"rademacher {seed} {dt}")


# --- rejection samplers, compiled once ------------------------------------------------------------

@functools.cache
def _jitted(name: str, x64: bool):
    fns = {
        "gamma": lambda k, a: fr.gamma(k, a),
        "loggamma": lambda k, a: fr.loggamma(k, a),
        "poisson": lambda k, lam: fr.poisson(k, lam),
        "binomial": lambda k, n, p: fr.binomial(k, n, p),
    }
    return fx.jit(fns[name])


GAMMA_A = [0.05, 0.5, 1.0, 2.5, 40.0]


@pytest.mark.parametrize("x64", [True, pytest.param(False, marks=[pytest.mark.default_mode,
                                                                   pytest.mark.slow])],
                         ids=["x64", "default"])
def test_gamma_and_loggamma_match_jax_jit_and_vmap(x64):
    exact = GAMMA_BITWISE[x64]
    with same_mode(x64):
        a = np.array(GAMMA_A, F(x64))
        g = _jitted("gamma", x64)
        for seed in [0, 1, 42]:
            close(g(fx_key(seed), a), jr.gamma(jx_key(seed), a), exact, what=f"gamma {seed}")
        # eager (here: one key) gives the compiled function's numbers
        close(fr.gamma(fx_key(0), a), g(fx_key(0), a), True, what="gamma eager vs jit")
        if x64:
            keys = fr.split(fx_key(5), 3)
            batched = fx.vmap(lambda k: fr.loggamma(k, a[:2]))(keys)
            for i in range(3):
                close(batched[i], jr.loggamma(jr.split(jx_key(5), 3)[i], a[:2]), exact,
                      what=f"vmap loggamma row {i}")


@pytest.mark.slow
def test_poisson_and_binomial_match_jax():
    lam = np.array([0.0, 0.7, 4.0, 9.99, 10.0, 55.0, np.nan], np.float32)
    n = np.array([0.0, 3.0, 10.0, 40.0, 500.0, -1.0, np.nan, 7.0])
    p = np.array([0.5, 0.2, 0.95, 0.3, 0.6, 0.5, 0.5, np.nan])
    pois, binom = _jitted("poisson", True), _jitted("binomial", True)
    for seed in [0, 3, 99]:
        close(pois(fx_key(seed), lam), jr.poisson(jx_key(seed), lam), what=f"poisson {seed}")
        close(binom(fx_key(seed), n, p), jr.binomial(jx_key(seed), n, p), exact=True,
              what=f"binomial {seed}")
    close(fr.poisson(fx_key(3), lam[:4], (2, 4), np.int32),
          jr.poisson(jx_key(3), lam[:4], (2, 4), np.int32), what="poisson shape/dtype")


@pytest.mark.slow
def test_multinomial_matches_jax():
    p = np.array([[0.2, 0.3, 0.5], [0.0, 0.9, 0.1]])
    got = fr.multinomial(fx_key(2), np.array([10.0, 25.0]), p)
    close(got, jr.multinomial(jx_key(2), jnp.array([10.0, 25.0]), p), exact=True)
    assert np.all(np.asarray(got).sum(-1) == [10, 25])


@pytest.mark.parametrize("name", ["chisquare"] + [
    pytest.param(n, marks=pytest.mark.slow)
    for n in ["beta", "dirichlet", "f", "t", "generalized_normal", "ball"]])
def test_gamma_family_matches_jax(name):
    a = np.array([0.5, 3.0])
    calls = {
        "beta": lambda R, k: R.beta(k, a, 2.0),
        "dirichlet": lambda R, k: R.dirichlet(k, np.array([0.3, 1.0, 4.0])),
        "chisquare": lambda R, k: R.chisquare(k, a),
        "f": lambda R, k: R.f(k, a, 5.0),
        "t": lambda R, k: R.t(k, a),
        "generalized_normal": lambda R, k: R.generalized_normal(k, 1.5, (2,)),
        "ball": lambda R, k: R.ball(k, 2, 2, (1,)),
    }
    close(calls[name](fr, fx_key(11)), calls[name](jr, jx_key(11)), GAMMA_BITWISE[True],
          what=name)


# --- gradients -----------------------------------------------------------------------------------

def test_random_gamma_grad_matches_jax():
    # series (x <= max(1, a)), continued fraction (x > max(1, a)), x == 0, a <= 0
    a = np.array([0.5, 2.0, 1.0, 3.0, -1.0])
    x = np.array([0.3, 1.5, 2.0, 0.0, 1.0])
    close(fx.lax.random_gamma_grad(a, x), jax.lax.random_gamma_grad(a, x), rtol=1e-13)


@pytest.mark.slow
def test_random_gamma_grad_more_points():
    a = np.array([0.1, 0.5, 1.0, 2.0, 5.0, 30.0, 0.3, 3.0, -1.0])
    x = np.array([0.01, 0.3, 2.0, 1.5, 8.0, 25.0, 0.0, 1.0, 1.0])
    close(fx.lax.random_gamma_grad(a, x), jax.lax.random_gamma_grad(a, x), rtol=1e-13)
    a32, x32 = a.astype(np.float32), x.astype(np.float32)
    close(fx.lax.random_gamma_grad(a32, x32), jax.lax.random_gamma_grad(a32, x32), rtol=2e-6)


@pytest.mark.slow
def test_gamma_grad_matches_jax():
    a = np.array([0.3, 1.0, 4.0])
    got = fx.grad(lambda a: fnp.sum(fr.gamma(fx_key(0), a)))(a)
    want = jax.grad(lambda a: jr.gamma(jx_key(0), a).sum())(a)
    close(got, want, rtol=1e-12)


LOC_SCALE = [
        (lambda R, k, s: R.rayleigh(k, s, (3,)), 1.5),
        (lambda R, k, s: R.lognormal(k, s, (3,)), 0.7),
        (lambda R, k, s: R.wald(k, s, (3,)), 1.2),
        (lambda R, k, s: R.triangular(k, -s, 0.1, s, (3,)), 2.0),
        (lambda R, k, s: R.pareto(k, s, (3,)), 2.5),
        (lambda R, k, s: R.weibull_min(k, s, 1.5, (3,)), 2.0),
        (lambda R, k, s: R.double_sided_maxwell(k, s, s * 2, (3,)), 0.4),
]


@pytest.mark.parametrize("i", [0, 3] + [pytest.param(i, marks=pytest.mark.slow)
                                        for i in (1, 2, 4, 5, 6)])
def test_loc_scale_grads_match_jax(i):
    call, s = LOC_SCALE[i]
    got = fx.grad(lambda s: fnp.sum(call(fr, fx_key(i), s)))(s)
    want = jax.grad(lambda s: call(jr, jx_key(i), s).sum())(s)
    close(np.float64(got), np.float64(want), rtol=1e-12, what=f"case {i}")


# --- errors --------------------------------------------------------------------------------------

ERRORS = [
    ("gamma", lambda R, k: R.gamma(k, 1.0, dtype=np.int32), ValueError, "float dtype"),
    ("beta", lambda R, k: R.beta(k, np.ones(2), np.ones(3)), ValueError, "broadcast"),
    ("chisquare", lambda R, k: R.chisquare(k, np.ones(3), (2,)), ValueError, "broadcast"),
    ("dirichlet", lambda R, k: R.dirichlet(k, 1.0), ValueError, "alpha.ndim >= 1"),
    ("geometric", lambda R, k: R.geometric(k, 0.5, dtype=np.float32), ValueError, "int dtype"),
    ("binomial", lambda R, k: R.binomial(k, 3.0, 0.5, dtype=np.int32), ValueError,
     "float dtype"),
    ("multivariate_normal", lambda R, k: R.multivariate_normal(k, np.zeros(2), np.eye(3)),
     ValueError, "cov.shape"),
    ("multivariate_normal", lambda R, k: R.multivariate_normal(k, np.zeros(2), np.eye(2),
                                                              method="lu"),
     ValueError, "method must be one of"),
    ("rayleigh", lambda R, k: R.rayleigh(k, np.float64(1.0), dtype=np.float32), ValueError,
     "cannot safely cast"),
]


@pytest.mark.parametrize("name, call, exc, match", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_as_jax(name, call, exc, match):
    with pytest.raises(exc):
        call(jr, jx_key(0))
    with pytest.raises(exc, match=match) as info:
        call(fr, fx_key(0))
    assert f"fx.random.{name}" in str(info.value)


# --- statistics ------------------------------------------------------------------------------

@pytest.mark.slow
def test_moments_of_the_gamma_family():
    """Sample means against the distributions' means (the samples are jax's, so this checks
    the algorithms, not just agreement)."""
    k = fx_key(123)
    g = np.asarray(_jitted("gamma", True)(k, np.full(400, 2.5)))
    assert abs(g.mean() - 2.5) < 4 * np.sqrt(2.5 / 400)
    p = np.asarray(_jitted("poisson", True)(k, np.full(400, 30.0, np.float32)))
    assert abs(p.mean() - 30.0) < 4 * np.sqrt(30.0 / 400)
