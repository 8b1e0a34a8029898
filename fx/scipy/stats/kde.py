"""Gaussian kernel density estimation (jax.scipy.stats.gaussian_kde): a frozen pytree of the
dataset (d, n), weights, effective sample size and the bandwidth-scaled covariance and its
inverse; evaluate/pdf/logpdf, 1-D box integrals, integrals against a Gaussian or another
KDE, and resampling."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

import fx.numpy as fnp
from fx import dtypes, random
from fx.core import get_aval
from fx.numpy._promote import ensure_arraylike
from fx.scipy import linalg, special
from fx.scipy.stats._common import promote_dtypes_inexact
from fx.tree_util import register_pytree_node_class
from fx.vectorize import vmap


@register_pytree_node_class
@dataclass(frozen=True, init=False)
class gaussian_kde:
    """A Gaussian KDE of ``dataset`` (shape (d, n), or (n,) for d = 1).

        >>> kde = fx.scipy.stats.gaussian_kde(fnp.array([0.0, 1.0, 3.0]))
        >>> kde.pdf(fnp.array([1.0])).shape
        (1,)

    ``bw_method`` is 'scott' (the default), 'silverman', a scalar factor or a callable of the
    KDE; the data covariance is weighted by ``weights`` (normalized to sum 1).
    """

    neff: Any
    dataset: Any
    weights: Any
    covariance: Any
    inv_cov: Any

    def __init__(self, dataset, bw_method=None, weights=None):
        ensure_arraylike("fx.scipy.stats.gaussian_kde", dataset)
        dataset = fnp.atleast_2d(dataset)
        if dtypes.is_complex(get_aval(dataset).dtype):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = dataset.shape
        if weights is not None:
            ensure_arraylike("fx.scipy.stats.gaussian_kde", weights)
            dataset, weights = promote_dtypes_inexact("gaussian_kde", dataset, weights)
            weights = fnp.atleast_1d(weights)
            weights = weights / fnp.sum(weights)
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise ValueError("`weights` input should be of length n")
        else:
            (dataset,) = promote_dtypes_inexact("gaussian_kde", dataset)
            weights = fnp.full(n, 1.0 / n, dtype=dataset.dtype)
        self._setattr("dataset", dataset)
        self._setattr("weights", weights)
        neff = self._setattr("neff", 1 / fnp.sum(weights**2))

        bw_method = "scott" if bw_method is None else bw_method
        if isinstance(bw_method, str) and bw_method == "scott":
            factor = fnp.power(neff, -1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = fnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif fnp.isscalar(bw_method) and not isinstance(bw_method, str):
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError(
                "`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")

        data_covariance = fnp.atleast_2d(fnp.cov(dataset, rowvar=1, bias=False, aweights=weights))
        data_inv_cov = fnp.linalg.inv(data_covariance)
        self._setattr("covariance", data_covariance * factor**2)
        self._setattr("inv_cov", data_inv_cov / factor**2)

    def _setattr(self, name, value):
        object.__setattr__(self, name, value)
        return value

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        kde = cls.__new__(cls)
        for name, child in zip(("neff", "dataset", "weights", "covariance", "inv_cov"),
                               children):
            kde._setattr(name, child)
        return kde

    @property
    def d(self) -> int:
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        return self.dataset.shape[1]

    def evaluate(self, points):
        """The density at ``points`` (shape (d, m))."""
        points = self._reshape_points(points)
        result = _gaussian_kernel_eval(False, self.dataset.T, self.weights[:, None], points.T,
                                       self.inv_cov)
        return result[:, 0]

    def __call__(self, points):
        return self.evaluate(points)

    def pdf(self, x):
        return self.evaluate(x)

    def logpdf(self, x):
        """The log density at ``x``, by logsumexp over the kernels (finite far from the data)."""
        x = self._reshape_points(x)
        result = _gaussian_kernel_eval(True, self.dataset.T, self.weights[:, None], x.T,
                                       self.inv_cov)
        return result[:, 0]

    def integrate_gaussian(self, mean, cov):
        """The integral of the density times N(mean, cov)."""
        mean = fnp.atleast_1d(fnp.squeeze(mean))
        cov = fnp.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        chol = linalg.cho_factor(self.covariance + cov)
        norm = 1.0 / (fnp.sqrt(2 * np.pi) ** self.d * fnp.prod(fnp.diag(chol[0])))
        return _gaussian_kernel_convolve(chol, norm, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """The mass between scalars ``low`` and ``high`` (one-dimensional KDEs only)."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = fnp.squeeze(fnp.sqrt(self.covariance))
        low = fnp.squeeze((low - self.dataset) / sigma)
        high = fnp.squeeze((high - self.dataset) / sigma)
        return fnp.sum(self.weights * (special.ndtr(high) - special.ndtr(low)))

    def integrate_kde(self, other):
        """The integral of the product of two KDEs of the same dimension."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        chol = linalg.cho_factor(self.covariance + other.covariance)
        norm = 1.0 / (fnp.sqrt(2 * np.pi) ** self.d * fnp.prod(fnp.diag(chol[0])))
        sm, lg = (self, other) if self.n < other.n else (other, self)
        result = vmap(partial(_gaussian_kernel_convolve, chol, norm, lg.dataset, lg.weights),
                         in_axes=1)(sm.dataset)
        return fnp.sum(result * sm.weights)

    def resample(self, key, shape=()):
        """Draws of shape (d, *shape): a data point chosen by weight plus kernel noise."""
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = random.multivariate_normal(
            eps_key, fnp.zeros(self.d, self.covariance.dtype), self.covariance, shape=shape,
            dtype=self.dataset.dtype).T
        return self.dataset[:, ind] + eps

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        raise NotImplementedError(
            "only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")

    def _reshape_points(self, points):
        ensure_arraylike("fx.scipy.stats.gaussian_kde", points)
        if dtypes.is_complex(get_aval(fnp.asarray(points)).dtype):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = fnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                points = fnp.reshape(points, (self.d, 1))
            else:
                raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points


def _gaussian_kernel_convolve(chol, norm, target, weights, mean):
    diff = target - mean[:, None]
    alpha = linalg.cho_solve(chol, diff)
    arg = 0.5 * fnp.sum(diff * alpha, axis=0)
    return norm * fnp.sum(fnp.exp(-arg) * weights)


def _gaussian_kernel_eval(in_log, points, values, xi, precision):
    points, values, xi, precision = promote_dtypes_inexact(
        "gaussian_kde", points, values, xi, precision)
    d = points.shape[1]
    if xi.shape[1] != d:
        raise ValueError("points and xi must have same trailing dim")
    if precision.shape != (d, d):
        raise ValueError("precision matrix must match data dims")
    whitening = linalg.cholesky(precision, lower=True)
    points = fnp.dot(points, whitening)
    xi = fnp.dot(xi, whitening)
    log_norm = fnp.sum(fnp.log(fnp.diag(whitening))) - 0.5 * d * np.log(2 * np.pi)

    def kernel(x_test, x_train, y_train):
        arg = log_norm - 0.5 * fnp.sum(fnp.square(x_train - x_test))
        return fnp.log(y_train) + arg if in_log else y_train * fnp.exp(arg)

    reduce = special.logsumexp if in_log else fnp.sum
    reduced = lambda x: reduce(vmap(kernel, in_axes=(None, 0, 0))(x, points, values), axis=0)
    return vmap(reduced)(xi)
