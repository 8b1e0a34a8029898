"""``random_gamma_grad(a, x)``: the derivative of a ``Gamma(a, 1)`` sample ``x`` with respect
to ``a`` by implicit reparameterization, ``dx/da = -(dF/da)(a, x) / f(a, x)`` for the CDF
``F`` (the regularized lower incomplete gamma function) and density ``f``.

jax's algorithm (``jax._src.lax.special.random_gamma_grad_impl``, after Cephes' ``igam``): the
series of ``F`` for ``x <= max(1, a)`` and the continued fraction of ``1 - F`` otherwise,
each carried with its derivative in ``a`` in a ``while_loop`` until the derivative's relative
(series) or absolute (fraction) change is below the dtype's epsilon. A composite of fx.lax
operations, so it batches, compiles and differentiates like them. float16/bfloat16 operands
are computed in float32, as in jax.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.array import Array
from fx.core import Tracer, get_aval
from fx.lax import elementwise as ew
from fx.lax.control_flow import while_loop
from fx.lax.convert import convert_element_type
from fx.lax.reductions import reduce_or
from fx.lax.special import digamma, lgamma
from fx.lax.structural import broadcast_in_dim

__all__ = ["random_gamma_grad"]


def _operand(x, what: str):
    """An fx value for an operand: fx values pass through, NumPy data and Python scalars become
    an Array of their canonical dtype (as ``fx.random`` converts them)."""
    if isinstance(x, (Array, Tracer)):
        return x
    if isinstance(x, (list, tuple)):
        # jax's lax.random_gamma_grad takes no lists either.
        raise TypeError(f"fx.lax.random_gamma_grad: {what} must be an array or a scalar, got a "
                        f"{type(x).__name__}; pass fx.numpy.asarray({what})")
    try:
        host = np.asarray(x)
        return Array(np.asarray(host, dtype=dtypes.canonicalize(host.dtype)))
    except TypeError as e:
        raise TypeError(f"fx.lax.random_gamma_grad: {what} must be an array, got {x!r} "
                        f"({e})") from None


def _c(x, v):
    return ew.full_like(x, v)


def _any(pred):
    return reduce_or(pred, tuple(range(get_aval(pred).ndim)))


def _series(ax, x, a, enabled, eps):
    """``-(dF/da) / f`` from the series of ``F`` (jax's SAMPLE_DERIVATIVE mode)."""

    def body(vals):
        enabled, r, c, ans, x, dc_da, dans_da = vals
        r_new = ew.add(r, _c(r, 1.0))
        dc_da_new = ew.sub(ew.mul(dc_da, ew.div(x, r_new)),
                           ew.div(ew.mul(c, x), ew.mul(r_new, r_new)))
        dans_da_new = ew.add(dans_da, dc_da_new)
        c_new = ew.mul(c, ew.div(x, r_new))
        ans_new = ew.add(ans, c_new)
        more = ew.and_(enabled, ew.gt(ew.abs(ew.div(dc_da_new, dans_da_new)), _c(r, eps)))
        sel = lambda new, old: ew.select(enabled, new, old)  # noqa: E731
        return (more, sel(r_new, r), sel(c_new, c), sel(ans_new, ans), x,
                sel(dc_da_new, dc_da), sel(dans_da_new, dans_da))

    init = (enabled, a, _c(a, 1.0), _c(a, 1.0), x, _c(a, 0.0), _c(a, 0.0))
    vals = while_loop(lambda v: _any(v[0]), body, init)
    ans, dans_da = vals[3], vals[6]
    dlogax_da = ew.sub(ew.log(x), digamma(ew.add(a, _c(a, 1.0))))
    return ew.div(ew.mul(ew.neg(ew.add(dans_da, ew.mul(ans, dlogax_da))), x), a)


def _continued_fraction(ax, x, a, enabled, eps):
    """``(d(1 - F)/da) / f`` from the continued fraction of ``1 - F`` (negated by the caller),
    with jax's rescaling of the recurrences and its 2000-term cap."""

    def body(vals):
        (enabled, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2,
         dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da) = vals
        c = ew.add(c, ew.full_like(c, 1.0))
        y_new = ew.add(y, _c(y, 1.0))
        z_new = ew.add(z, _c(z, 2.0))
        cb = broadcast_in_dim(c, get_aval(y).shape, ())
        yc = ew.mul(y_new, cb)
        pk = ew.sub(ew.mul(pkm1, z_new), ew.mul(pkm2, yc))
        qk = ew.sub(ew.mul(qkm1, z_new), ew.mul(qkm2, yc))
        nonzero = ew.ne(qk, _c(qk, 0.0))
        r = ew.div(pk, qk)
        t_new = ew.select(nonzero, ew.abs(ew.div(ew.sub(ans, r), r)), _c(r, 1.0))
        ans_new = ew.select(nonzero, r, ans)
        dpk_da = ew.add(ew.sub(ew.sub(ew.mul(dpkm1_da, z_new), pkm1), ew.mul(dpkm2_da, yc)),
                        ew.mul(pkm2, cb))
        dqk_da = ew.add(ew.sub(ew.sub(ew.mul(dqkm1_da, z_new), qkm1), ew.mul(dqkm2_da, yc)),
                        ew.mul(qkm2, cb))
        dans_da_new = ew.select(nonzero, ew.div(ew.sub(dpk_da, ew.mul(ans_new, dqk_da)), qk),
                                dans_da)
        grad_cond = ew.select(nonzero, ew.abs(ew.sub(dans_da_new, dans_da)), _c(dans_da, 1.0))
        n_pkm2, n_pkm1, n_qkm2, n_qkm1 = pkm1, pk, qkm1, qk
        n_dpkm2, n_dqkm2, n_dpkm1, n_dqkm1 = dpkm1_da, dqkm1_da, dpk_da, dqk_da
        rescale = ew.gt(ew.abs(pk), _c(pk, 1.0 / eps))

        def scaled(v):
            return ew.select(rescale, ew.mul(v, _c(v, eps)), v)

        n_pkm2, n_pkm1, n_qkm2, n_qkm1 = map(scaled, (n_pkm2, n_pkm1, n_qkm2, n_qkm1))
        n_dpkm2, n_dqkm2, n_dpkm1, n_dqkm1 = map(scaled, (n_dpkm2, n_dqkm2, n_dpkm1, n_dqkm1))
        more = ew.and_(enabled, ew.gt(grad_cond, _c(grad_cond, eps)))
        sel = lambda new, old: ew.select(enabled, new, old)  # noqa: E731
        return (more, sel(ans_new, ans), sel(t_new, t), sel(y_new, y), sel(z_new, z), c,
                sel(n_pkm1, pkm1), sel(n_qkm1, qkm1), sel(n_pkm2, pkm2), sel(n_qkm2, qkm2),
                sel(n_dpkm2, dpkm2_da), sel(n_dqkm2, dqkm2_da), sel(n_dpkm1, dpkm1_da),
                sel(n_dqkm1, dqkm1_da), sel(dans_da_new, dans_da))

    y = ew.sub(_c(a, 1.0), a)
    z = ew.add(ew.add(x, y), _c(x, 1.0))
    pkm1 = ew.add(x, _c(x, 1.0))
    qkm1 = ew.mul(z, x)
    ans = ew.div(pkm1, qkm1)
    zero = _c(x, 0.0)
    dqkm1_da = ew.neg(x)
    dans_da = ew.div(ew.sub(zero, ew.mul(ans, dqkm1_da)), qkm1)
    # The term counter is one scalar, as in jax (broadcast where it meets the arrays).
    count = Array(np.asarray(0.0, get_aval(x).dtype))
    init = (enabled, ans, _c(x, 1.0), y, z, count, pkm1, qkm1, _c(x, 1.0), x,
            zero, zero, zero, dqkm1_da, dans_da)
    vals = while_loop(
        lambda v: ew.and_(ew.lt(v[5], ew.full_like(v[5], 2000.0)), _any(v[0])), body, init)
    ans, dans_da = vals[1], vals[14]
    dlogax_da = ew.sub(ew.log(x), digamma(a))
    return ew.neg(ew.mul(ew.add(dans_da, ew.mul(ans, dlogax_da)), x))


def _grad(a, x):
    dt = get_aval(a).dtype
    eps = float(dtypes.finfo(dt).eps)
    is_nan = ew.or_(ew.ne(a, a), ew.ne(x, x))
    x_is_zero = ew.eq(x, _c(x, 0.0))
    domain_error = ew.or_(ew.lt(x, _c(x, 0.0)), ew.le(a, _c(a, 0.0)))
    use_cf = ew.and_(ew.gt(x, _c(x, 1.0)), ew.gt(x, a))
    ax = ew.sub(ew.sub(ew.mul(a, ew.log(x)), x), lgamma(a))
    underflow = ew.lt(ax, _c(ax, -np.log(dtypes.finfo(dt).max)))
    ax = ew.exp(ax)
    enabled = ew.bitwise_not(ew.or_(ew.or_(ew.or_(x_is_zero, domain_error), underflow), is_nan))
    out = ew.select(use_cf,
                    ew.neg(_continued_fraction(ax, x, a, ew.and_(enabled, use_cf), eps)),
                    _series(ax, x, a, ew.and_(enabled, ew.bitwise_not(use_cf)), eps))
    out = ew.select(x_is_zero, _c(out, 0.0), out)
    return ew.select(ew.or_(domain_error, is_nan), _c(a, np.nan), out)


def random_gamma_grad(a, x):
    """The derivative of a sample ``x`` of ``Gamma(a, 1)`` with respect to the shape ``a``
    (jax's ``lax.random_gamma_grad``); ``a`` and ``x`` broadcast numpy-style.

    Example::

        >>> fx.lax.random_gamma_grad(fx.numpy.float32(2.0), fx.numpy.float32(1.5))
    """
    a, x = _operand(a, "a"), _operand(x, "x")
    sa, sx = get_aval(a).shape, get_aval(x).shape
    shape = tuple(np.broadcast_shapes(sa, sx))
    a = broadcast_in_dim(a, shape, tuple(range(len(shape) - len(sa), len(shape))))
    x = broadcast_in_dim(x, shape, tuple(range(len(shape) - len(sx), len(shape))))
    dt = get_aval(a).dtype
    if dt in (dtypes.float16, dtypes.bfloat16):
        a, x = convert_element_type(a, dtypes.float32), convert_element_type(x, dtypes.float32)
        return convert_element_type(_grad(a, x), dt)
    return _grad(a, x)
