"""Each of fx.random's distributions against its law: a Kolmogorov-Smirnov test of 2,000
draws against SciPy's distribution for the continuous ones, moment or frequency checks for
the discrete and multivariate ones.

The keys are fixed, so each test is deterministic; a p-value threshold of 1e-4 makes a
wrong algorithm (a wrong scale, shape, or support) fail while a right one passes for any key
but one in ten thousand. The rejection samplers (the gamma family, poisson, binomial) are
slow to run eagerly and are checked with -m slow.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as ss

import fx.random as fr

N = 2000
P_MIN = 1e-4


def _key(i=7):
    return fr.key(i)


# name -> (draw(key) -> samples, scipy frozen distribution or a function of samples -> cdf)
CONTINUOUS = {
    "uniform": (lambda k: fr.uniform(k, (N,), minval=-1.0, maxval=3.0), ss.uniform(-1, 4)),
    "normal": (lambda k: fr.normal(k, (N,)), ss.norm()),
    "truncated_normal": (lambda k: fr.truncated_normal(k, -0.5, 1.5, (N,)),
                         ss.truncnorm(-0.5, 1.5)),
    "exponential": (lambda k: fr.exponential(k, (N,)), ss.expon()),
    "laplace": (lambda k: fr.laplace(k, (N,)), ss.laplace()),
    "logistic": (lambda k: fr.logistic(k, (N,)), ss.logistic()),
    "lognormal": (lambda k: fr.lognormal(k, 0.7, (N,)), ss.lognorm(0.7)),
    "cauchy": (lambda k: fr.cauchy(k, (N,)), ss.cauchy()),
    "pareto": (lambda k: fr.pareto(k, 3.0, (N,)), ss.pareto(3.0)),
    "weibull_min": (lambda k: fr.weibull_min(k, 2.0, 1.5, (N,)), ss.weibull_min(1.5, scale=2.0)),
    "maxwell": (lambda k: fr.maxwell(k, (N,)), ss.maxwell()),
    "double_sided_maxwell (|x|)": (lambda k: np.abs(np.asarray(fr.double_sided_maxwell(
        k, 0.0, 1.0, (N,)))), ss.maxwell()),
    "rayleigh": (lambda k: fr.rayleigh(k, 2.0, (N,)), ss.rayleigh(scale=2.0)),
    "wald": (lambda k: fr.wald(k, 1.5, (N,)), ss.invgauss(1.5)),
    "triangular": (lambda k: fr.triangular(k, 0.0, 0.3, 2.0, (N,)),
                   ss.triang(0.15, loc=0.0, scale=2.0)),
    "gumbel": (lambda k: fr.gumbel(k, (N,)), ss.gumbel_r()),
}
SLOW_CONTINUOUS = {
    "gamma": (lambda k: fr.gamma(k, 2.5, (N,)), ss.gamma(2.5)),
    "gamma a<1": (lambda k: fr.gamma(k, 0.3, (N,)), ss.gamma(0.3)),
    "loggamma (exp)": (lambda k: np.exp(np.asarray(fr.loggamma(k, 0.8, (N,)))), ss.gamma(0.8)),
    "beta": (lambda k: fr.beta(k, 2.0, 5.0, (N,)), ss.beta(2.0, 5.0)),
    "chisquare": (lambda k: fr.chisquare(k, 3.0, (N,)), ss.chi2(3.0)),
    "f": (lambda k: fr.f(k, 4.0, 7.0, (N,)), ss.f(4.0, 7.0)),
    "t": (lambda k: fr.t(k, 5.0, (N,)), ss.t(5.0)),
    "generalized_normal": (lambda k: fr.generalized_normal(k, 1.5, (N,)), ss.gennorm(1.5)),
    "dirichlet (marginal)": (lambda k: np.asarray(fr.dirichlet(k, np.array([2.0, 3.0, 5.0]),
                                                               (N,)))[:, 0], ss.beta(2.0, 8.0)),
    "ball (radius^d)": (lambda k: np.linalg.norm(np.asarray(fr.ball(k, 3, 2, (N,))),
                                                 axis=-1) ** 3, ss.uniform()),
}


def _ks(draw, law):
    x = np.asarray(draw(_key()), np.float64)
    assert x.shape == (N,) and np.all(np.isfinite(x))
    return ss.kstest(x, law.cdf).pvalue


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_samples_follow_their_law(name):
    assert _ks(*CONTINUOUS[name]) > P_MIN


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_CONTINUOUS))
def test_rejection_samplers_follow_their_law(name):
    assert _ks(*SLOW_CONTINUOUS[name]) > P_MIN


def test_the_check_rejects_a_wrong_law():
    draw, _ = CONTINUOUS["exponential"]
    assert _ks(draw, ss.expon(scale=1.2)) < P_MIN  # a 20% wrong scale is seen


def _mean_ok(x, mean, var, n=N, z=4.5):
    return abs(np.mean(x) - mean) < z * np.sqrt(var / n)


def test_discrete_and_multivariate_moments():
    k = _key()
    b = np.asarray(fr.bernoulli(k, 0.3, (N,)))
    assert set(np.unique(b)) <= {False, True} and _mean_ok(b, 0.3, 0.21)
    r = np.asarray(fr.rademacher(k, (N,)))
    assert set(np.unique(r)) == {-1, 1} and _mean_ok(r, 0.0, 1.0)
    g = np.asarray(fr.geometric(k, 0.25, (N,)))
    assert g.min() >= 1 and _mean_ok(g, 4.0, 0.75 / 0.0625)
    ri = np.asarray(fr.randint(k, (N,), 0, 5))
    counts = np.bincount(ri, minlength=5)
    assert ss.chisquare(counts).pvalue > P_MIN
    logits = np.log(np.array([0.1, 0.2, 0.7]))
    c = np.bincount(np.asarray(fr.categorical(k, logits, shape=(N,))), minlength=3)
    assert ss.chisquare(c, N * np.exp(logits)).pvalue > P_MIN
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    mv = np.asarray(fr.multivariate_normal(k, np.array([1.0, -1.0]), cov, (N,)), np.float64)
    assert np.all(np.abs(mv.mean(0) - [1.0, -1.0]) < 4.5 * np.sqrt(np.diag(cov) / N))
    se = np.sqrt((cov ** 2 + np.outer(np.diag(cov), np.diag(cov))) / N)  # of each entry
    assert np.all(np.abs(np.cov(mv.T) - cov) < 5 * se)
    q = np.asarray(fr.orthogonal(k, 4, (3,)), np.float64)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), q.shape),
                               atol=1e-5)


@pytest.mark.slow
def test_counting_samplers_moments():
    k = _key()
    p = np.asarray(fr.poisson(k, 4.0, (N,)))
    assert _mean_ok(p, 4.0, 4.0) and abs(p.var() - 4.0) < 0.6
    big = np.asarray(fr.poisson(k, 40.0, (N,)))  # the transformed-rejection branch
    assert _mean_ok(big, 40.0, 40.0)
    bn = np.asarray(fr.binomial(k, 20.0, 0.3, (N,)))
    assert bn.min() >= 0 and bn.max() <= 20 and _mean_ok(bn, 6.0, 4.2)
    m = np.asarray(fr.multinomial(k, 10.0, np.array([0.2, 0.3, 0.5]), shape=(N, 3)))
    assert np.all(m.sum(-1) == 10) and np.all(np.abs(m.mean(0) - [2, 3, 5]) < 0.2)
