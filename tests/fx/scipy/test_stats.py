"""fx.scipy.stats against jax.scipy.stats: every distribution module and method name of jax's
is in fx (or excluded with a reason); one table of (distribution, method, arguments) drives the
value and dtype checks, the points chosen to cross each support's edges and invalid
parameters; gradients in x and the parameters for continuous ones; vmap and jit vs eager.

jax runs once, under one ``jax.jit`` of the whole table (its eager mode is slow op by op)."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import jax.scipy.stats as jst
import numpy as np
import pytest
import scipy.stats

import fx
import fx.numpy as fnp
import fx.scipy.stats as fst
from fx.test_util import check_grads
from tests.harness import assert_allclose, run_doctests

EXCLUDED_MODULES: dict[str, str] = {}
EXCLUDED_METHODS: dict[tuple[str, str], str] = {}  # (module, method) -> reason


def _modules(pkg) -> dict:
    return {n: getattr(pkg, n) for n in dir(pkg)
            if not n.startswith("_") and type(getattr(pkg, n)).__name__ == "module"}


def _methods(module) -> set[str]:
    """jax's modules re-export only their functions; fx's also import helpers, so a name
    counts there if it is a public function defined in that module."""
    if module.__name__.startswith("jax"):
        return {n for n in dir(module) if not n.startswith("_")}
    return {n for n, v in vars(module).items() if not n.startswith("_")
            and inspect.isfunction(v) and v.__module__ == module.__name__}


def test_every_jax_stats_name_is_in_fx_or_excluded_with_a_reason():
    jax_names = {n for n in dir(jst) if not n.startswith("_")}
    fx_names = {n for n in dir(fst) if not n.startswith("_")}
    missing = jax_names - fx_names
    assert missing - set(EXCLUDED_MODULES) == set()
    assert set(EXCLUDED_MODULES) & fx_names == set(), "landed: remove from EXCLUDED_MODULES"
    assert all(len(r) > 10 for r in EXCLUDED_MODULES.values())


@pytest.mark.parametrize("name", sorted(_modules(jst)))
def test_each_distribution_has_jax_methods(name):
    if name in EXCLUDED_MODULES:
        pytest.skip(EXCLUDED_MODULES[name])
    want = {m for m in _methods(getattr(jst, name)) if (name, m) not in EXCLUDED_METHODS}
    got = _methods(getattr(fst, name))
    assert want - got == set(), f"{name}: missing {sorted(want - got)}"
    assert got - want == set(), f"{name}: extra {sorted(got - want)}"


# --- the value table ------------------------------------------------------------------------
# The bulk is checked against scipy.stats (jax's formulas agree with it there) with the dtype
# and shape from jax.eval_shape (no compile); where jax's semantics differ from scipy's (edges
# of ppf, non-integer counts, invalid parameters jax does not check) a short table runs jax.

X = np.array([-1.0, 0.0, 0.3, 1.0, 2.5, np.inf])
Q = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 1.5])
Q_INNER = np.array([0.05, 0.1, 0.5, 0.9, 0.95, 0.3])
K = np.array([-1.0, 0.0, 1.0, 2.0, 4.0, 7.0])
ANGLE = np.array([-0.5, 0.0, 1.0, 3.0, 2 * np.pi, 7.0])

# name -> (points for densities/cdfs, parameters); ppf/isf take Q, pmfs K. A parameter that is
# an array puts invalid values (NaN expected) next to valid ones.
CONTINUOUS = {
    "norm": (X, (0.5, 2.0)),
    "t": (X, (np.array([1.0, 3.0, 10.0, 2.0, 5.0, 1.5]), 0.2, 1.5)),
    "beta": (np.array([-0.1, 0.0, 0.3, 0.7, 1.0, 1.2]),
             (np.array([0.5, 2.0, 2.0, 1.0, 3.0, -1.0]), 1.5)),
    "gamma": (X, (np.array([0.5, 1.0, 2.0, 3.0, 4.5, 2.0]), 0.0, 1.5)),
    "expon": (X, (0.0, 2.0)),
    "laplace": (X, (0.2, 1.5)),
    "logistic": (X, (0.2, 1.5)),
    # not at inf: XLA's 0.5 + atan(-inf) / pi rounds below 0 (jax's logsf: NaN; fx, scipy: -inf)
    "cauchy": (X[:-1], (0.2, 1.5)),
    "chi2": (np.array([-1.0, 0.2, 0.3, 1.0, 2.5, np.inf]),
             (np.array([1.0, 2.0, 3.0, 4.0, 5.0, 2.5]), 0.0, 1.0)),
    "uniform": (X, (-0.5, 2.0)),
    "pareto": (np.array([0.5, 1.0, 1.5, 2.0, 10.0, np.inf]), (2.5, 0.0, 1.0)),
    "truncnorm": (X, (-0.5, 2.0, 0.1, 1.2)),
    "vonmises": (ANGLE, (np.array([0.5, 1.0, 2.0, 0.7, 3.0, -1.0]),)),
    "wrapcauchy": (ANGLE, (np.array([0.5, 0.2, 0.9, 0.0, 0.3, 1.0]),)),
    "gennorm": (X[:-1], (np.array([0.5, 1.0, 2.0, 3.0, 1.5]),)),
    "gumbel_l": (X, (0.2, np.array([1.0, 2.0, 0.5, -1.0, 1.0, 1.0]))),
    "gumbel_r": (X, (0.2, np.array([1.0, 2.0, 0.5, -1.0, 1.0, 1.0]))),
}
DISCRETE = {
    "poisson": (K, (2.5,)),
    "bernoulli": (np.array([-1.0, 0.0, 1.0, 2.0, 0.0, 1.0]), (0.3,)),
    "binom": (K, (5.0, 0.4)),
    "geom": (K, (0.3,)),
    "nbinom": (K, (3.0, 0.4)),
    "betabinom": (K, (5.0, np.array([2.0, 2.0, 0.5, 1.0, 3.0, -1.0]), 1.5)),
}
Q_METHODS = {"ppf", "isf"}
# ppf/isf points where scipy's edges (inf at 0 and 1, NaN for a negative scale) are not jax's
Q_POINTS = {"cauchy": Q_INNER, "gumbel_l": Q_INNER, "gumbel_r": Q_INNER, "bernoulli": Q[1:]}
RTOL = {("poisson", "entropy"): 1e-6}  # jax's asymptotic series above mu = 100


def _table() -> list[tuple[str, str, tuple]]:
    rows = []
    for name, (pts, params) in {**CONTINUOUS, **DISCRETE}.items():
        for m in sorted(_methods(getattr(jst, name))):
            if m == "entropy":
                rows.append((name, m, (np.array([0.0, 0.5, 5.0, 50.0, 500.0]),)))
                continue
            x = Q_POINTS.get(name, Q) if m in Q_METHODS else pts
            p = params
            if name in ("gumbel_l", "gumbel_r") and m in Q_METHODS:
                p = (0.2, 1.5)  # jax's ppf does not check the scale
            if name == "bernoulli" and m in ("cdf", "ppf"):
                p = params[:1]  # jax's bernoulli.cdf/ppf take no loc
            rows.append((name, m, (x, *p)))
    rows += [
        ("norm", "logpdf", (np.array([0, 1, 2]), 0, 1)),  # integers: the default float
        ("norm", "cdf", (np.array([-1.0, 0.5], np.float32), np.float32(0.0), np.float32(2.0))),
        ("gamma", "logpdf", (np.array([0.5, 2.0], np.float32), np.float32(2.0))),
        ("poisson", "logpmf", (np.array([0, 1, 3]), 2)),
        ("binom", "pmf", (np.array([0.0, 0.0, 3.0]), np.array([0.0, 4.0, 3.0]),
                          np.array([0.5, 0.0, 1.0]))),
        ("multivariate_normal", "logpdf", (np.array([[0.1, 0.2], [1.0, -1.0]]),
                                           np.array([0.0, 0.5]),
                                           np.array([[2.0, 0.3], [0.3, 1.0]]))),
        ("multivariate_normal", "pdf", (np.array([0.1, 0.2]), np.array([0.0, 0.5]), 1.5)),
        ("multivariate_normal", "logpdf", (np.array([0.1, 2.0]), 0.5, 2.0)),
        ("dirichlet", "logpdf", (np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]]),
                                 np.array([1.5, 2.0, 3.0]))),
        ("dirichlet", "pdf", (np.array([0.2, 0.3]), np.array([1.5, 2.0, 3.0]))),
        ("multinomial", "logpmf", (np.array([1, 2, 3]), 6, np.array([0.2, 0.3, 0.5]))),
        ("multinomial", "pmf", (np.array([1, 2, 3]), 6, np.array([0.2, 0.3, 0.5]))),
    ]
    return rows


TABLE = _table()

# (name, method, args) where jax's answer is not scipy's, checked against jax itself
JAX_EDGES = [
    ("cauchy", "ppf", (Q,)),  # tan of +-pi/2 in floating point: finite, not +-inf
    ("chi2", "logpdf", (np.array([0.0, 0.0]), np.array([2.0, 3.0]))),  # 0 * log(0): NaN
    ("vonmises", "logpdf", (np.array([1.0, 1.0]), np.array([0.0, 1.0]))),  # kappa == 0: NaN
    ("gumbel_l", "ppf", (Q, 0.2, np.array([1.0, 2.0, 0.5, -1.0, 1.0, 1.0]))),
    ("gumbel_r", "ppf", (Q, 0.2, np.array([1.0, 2.0, 0.5, -1.0, 1.0, 1.0]))),
    ("bernoulli", "ppf", (Q, 0.3)),  # 0 at q == 0 (scipy: -1)
    ("bernoulli", "logpmf", (np.array([0.5, 1.0]), 0.3)),  # no integer check
    ("binom", "logpmf", (np.array([3.5, 2.0]), 5.0, 0.4)),
    ("geom", "logpmf", (np.array([3.5, 2.0]), 0.3)),
    ("nbinom", "logpmf", (np.array([3.5, 2.0]), 3.0, 0.4)),
    ("dirichlet", "logpdf", (np.array([[0.2, 0.5], [0.3, 0.6], [0.5, -0.1]]),
                             np.array([1.5, 2.0, 3.0]))),  # off the simplex: -inf, no error
]


def _call(pkg, name, method, args):
    return getattr(getattr(pkg, name), method)(*args)


def _scipy(name, method, args):
    if name == "multinomial":
        return getattr(scipy.stats.multinomial, method)(*args)
    return getattr(getattr(scipy.stats, name), method)(*args)


@pytest.mark.parametrize("i", range(len(TABLE)),
                         ids=[f"{n}.{m}-{i}" for i, (n, m, _) in enumerate(TABLE)])
def test_values_match_scipy_with_jax_dtypes(i):
    name, method, args = TABLE[i]
    got = _call(fst, name, method, args)
    aval = jax.eval_shape(lambda *a: _call(jst, name, method, a), *args)
    with np.errstate(all="ignore"):
        want = np.broadcast_to(np.asarray(_scipy(name, method, args)), aval.shape)
    tol = 2e-6 if aval.dtype == np.float32 else RTOL.get((name, method), 1e-9)
    assert_allclose(got, want.astype(aval.dtype), rtol=tol, atol=tol, what=f"{name}.{method}")


@pytest.mark.parametrize("i", range(len(JAX_EDGES)),
                         ids=[f"{n}.{m}" for n, m, _ in JAX_EDGES])
def test_values_match_jax_where_jax_differs_from_scipy(i):
    name, method, args = JAX_EDGES[i]
    want = jax.jit(lambda *a: _call(jst, name, method, a))(*args)
    assert_allclose(_call(fst, name, method, args), want, rtol=1e-9, atol=1e-9,
                    what=f"{name}.{method}")


def test_betabinom_floors_k_as_jax():
    k = np.array([3.5, 2.0, 0.9])
    assert_allclose(fst.betabinom.pmf(k, 5.0, 2.0, 1.5),
                    scipy.stats.betabinom.pmf(np.floor(k), 5.0, 2.0, 1.5), rtol=1e-9, atol=0)


def test_multinomial_rejects_float_counts():
    with pytest.raises(ValueError, match="integer"):
        fst.multinomial.logpmf(np.array([1.0, 2.0]), 3, np.array([0.5, 0.5]))


# --- gradients ------------------------------------------------------------------------------

GRAD_VS_JAX = [  # (name, method, args): gradients in every argument, at interior points
    ("norm", "logcdf", (-1.2, 0.1, 1.3)),
    ("t", "logpdf", (0.7, 3.0, 0.2, 1.5)),
    ("gamma", "logpdf", (1.3, 2.5, 0.1, 1.5)),
]
GRAD_NUMERIC = [  # checked against finite differences (fx only: jax's compiles are slow)
    ("norm", "logpdf", (0.3, 0.5, 2.0)),
    ("expon", "logsf", (1.3, 0.1, 2.0)),
    ("logistic", "logpdf", (0.7, 0.2, 1.5)),
    ("cauchy", "cdf", (0.7, 0.2, 1.5)),
    ("gumbel_r", "logsf", (0.3, 0.2, 1.5)),
    ("vonmises", "logpdf", (1.0, 2.0)),
    ("pareto", "logpdf", (1.5, 2.5, 0.0, 1.0)),
    ("laplace", "logpdf", (0.7, 0.2, 1.5)),
    ("chi2", "logpdf", (1.5, 3.0)),
    ("truncnorm", "logpdf", (0.3, -0.5, 2.0, 0.1, 1.2)),
    ("beta", "logpdf", (0.3, 2.0, 1.5, -0.2, 1.3)),
]


def _grads(pkg, grad, name, method, args):
    f = getattr(getattr(pkg, name), method)
    return grad(f, argnums=tuple(range(len(args))))(*args)


@pytest.mark.parametrize("name,method,args", GRAD_VS_JAX,
                         ids=[f"{n}.{m}" for n, m, _ in GRAD_VS_JAX])
def test_grads_match_jax(name, method, args):
    got = _grads(fst, fx.grad, name, method, tuple(fnp.float64(a) for a in args))
    want = jax.jit(lambda *a: _grads(jst, jax.grad, name, method, a))(*map(jnp.float64, args))
    assert_allclose(got, want, rtol=1e-8, atol=1e-10, what=f"grad {name}.{method}")


@pytest.mark.parametrize("name,method,args", GRAD_NUMERIC,
                         ids=[f"{n}.{m}" for n, m, _ in GRAD_NUMERIC])
def test_grads_match_finite_differences(name, method, args):
    f = getattr(getattr(fst, name), method)
    check_grads(f, tuple(fnp.float64(a) for a in args), order=1, modes=("rev",))


def test_logpdf_gradient_off_the_support_is_finite_where_jax_is():
    g_fx = fx.grad(fst.gamma.logpdf, argnums=(1, 3))(-1.0, 2.0, 0.0, 1.5)
    g_jax = jax.jit(jax.grad(jst.gamma.logpdf, argnums=(1, 3)))(-1.0, 2.0, 0.0, 1.5)
    assert_allclose(g_fx, g_jax, what="gamma.logpdf grad below loc")


# --- transformations ------------------------------------------------------------------------

SAMPLE = [("norm", "logpdf"), ("gamma", "cdf"), ("beta", "logpdf"), ("truncnorm", "logcdf"),
          ("poisson", "logpmf"), ("binom", "logpmf"), ("gumbel_l", "ppf")]


@pytest.mark.parametrize("name,method", SAMPLE)
def test_vmap_and_jit_match_eager(name, method):
    row = next(r for r in TABLE if r[:2] == (name, method))
    args = tuple(fnp.asarray(a) for a in row[2])
    f = getattr(getattr(fst, name), method)
    want = f(*args)
    assert_allclose(fx.jit(f)(*args), want, what="jit")
    in_axes = tuple(0 if a.ndim else None for a in args)
    assert_allclose(fx.vmap(f, in_axes=in_axes)(*args), want, what="vmap")


def test_multivariate_normal_vmap_over_points():
    x = fnp.asarray(np.array([[0.1, 0.2], [1.0, -1.0], [0.0, 3.0]]))
    mean, cov = fnp.asarray([0.0, 0.5]), fnp.asarray([[2.0, 0.3], [0.3, 1.0]])
    want = fst.multivariate_normal.logpdf(x, mean, cov)
    got = fx.vmap(fst.multivariate_normal.logpdf, in_axes=(0, None, None))(x, mean, cov)
    assert_allclose(got, want)


# --- descriptive statistics and gaussian_kde ------------------------------------------------

def _with_jax_dtypes(values, jax_fn):
    """scipy's values with the dtypes and shapes jax gives (traced by eval_shape, no compile)."""
    avals = jax.tree_util.tree_leaves(jax.eval_shape(jax_fn))
    return [np.asarray(v).astype(a.dtype).reshape(a.shape) for v, a in zip(values, avals)]


def test_mode_rankdata_sem_match_scipy_with_jax_dtypes():
    a = np.array([[1, 3, 3, 2], [2, 2, 1, 1], [5, 3, 1, 1]])
    f = np.array([3.0, 1.0, 3.0, 2.0, 1.0])
    methods = ("average", "min", "max", "dense", "ordinal")

    def run(m):
        return [
            *m.mode(a), *m.mode(a, axis=1, keepdims=True), *m.mode(a, axis=None),
            *[m.rankdata(f, method=meth) for meth in methods],
            m.rankdata(a, axis=1), m.rankdata(np.array([1.0, np.nan])),
            m.sem(f), m.sem(a, axis=1, ddof=0), m.sem(a, axis=None),
        ]

    assert_allclose(run(fst), _with_jax_dtypes(run(scipy.stats), lambda: run(jst)))


def test_gaussian_kde_matches_scipy():
    data = np.array([[0.0, 1.0, 3.0, 0.5, 2.0], [1.0, 0.2, -1.0, 0.4, 0.0]])
    w = np.array([1.0, 2.0, 1.0, 1.0, 3.0])
    pts = np.array([[0.3, 2.0, 10.0], [0.0, -0.5, 10.0]])

    def run(m):
        k = m.gaussian_kde(data, weights=w)
        k1 = m.gaussian_kde(data[0], bw_method="silverman")
        k2 = m.gaussian_kde(data[0, :3] * 2 + 1, bw_method=0.7)
        return [k.neff, k.covariance, k.pdf(pts), k.logpdf(pts),
                k.integrate_gaussian(np.array([0.5, 0.0]), np.eye(2)),
                k1.integrate_box_1d(-0.5, 1.5), k1.integrate_kde(k2), k1.evaluate(pts[0])]

    assert_allclose(run(fst), _with_jax_dtypes(run(scipy.stats), lambda: run(jst)), rtol=1e-9)
    k = fst.gaussian_kde(data)
    assert k.resample(fx.random.key(0), (7,)).shape == (2, 7)
    leaves, tree = fx.tree_util.tree_flatten(k)
    assert len(leaves) == 5
    assert_allclose(fx.tree_util.tree_unflatten(tree, leaves).pdf(pts), k.pdf(pts))
    with pytest.raises(NotImplementedError):
        k.integrate_box(0.0, 1.0)


def test_docstrings():
    import fx.scipy.stats.descriptive as d
    import fx.scipy.stats.kde as kde

    assert run_doctests(fst, fst.norm, d, kde) > 0


def test_jit_and_vmap_of_grad_match_eager_grad():
    g = fx.grad(fst.gamma.logpdf, argnums=(0, 1))
    x, a = fnp.asarray([0.5, 1.3, 2.0]), fnp.asarray([1.5, 2.5, 3.0])
    want = [g(x[i], a[i]) for i in range(3)]
    assert_allclose(fx.vmap(g)(x, a), tuple(fnp.stack(w) for w in zip(*want)), what="vmap(grad)")
    assert_allclose(fx.jit(g)(x[1], a[1]), want[1], what="jit(grad)")
