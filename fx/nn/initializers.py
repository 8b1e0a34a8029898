"""``fx.nn.initializers``: functions that make initial parameter arrays, as jax's.

Every constructor here returns an *initializer*, a function ``init(key, shape, dtype=...)``
of a PRNG key (see ``fx.random``), a shape and a dtype (default: the mode's default float,
``fx.dtypes.default_float_dtype()``). Since fx.random draws jax's bits for a key, each gives
jax's values for the same key, shape and dtype.

Variance scaling (``glorot_*``, ``he_*``, ``lecun_*``) reads the fans from the shape: the
``in_axis`` and ``out_axis`` dimensions (default: the last two) give the input and output
sizes, every other dimension but ``batch_axis`` is the receptive field, which multiplies both.

Example::

    >>> import fx, fx.random
    >>> init = fx.nn.initializers.glorot_normal()
    >>> init(fx.random.key(0), (3, 4)).shape
    (3, 4)

``orthogonal`` orthonormalizes a normal draw by Householder reflections (a QR
decomposition, written here with ``fx.lax`` in a ``fori_loop``, until fx.numpy.linalg has one),
with the signs of R's diagonal made positive: that ``Q`` is unique, so it equals jax's for the
same key up to rounding.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from fx import dtypes, lax, random
from fx.array import Array

__all__ = [
    "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
    "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
    "lecun_uniform", "normal", "ones", "orthogonal",
    "truncated_normal", "uniform", "variance_scaling", "xavier_normal", "xavier_uniform",
    "zeros",
]


class Initializer(Protocol):
    """The type of an initializer: ``init(key, shape, dtype) -> Array``."""

    def __call__(self, key: Any, shape: Sequence[int], dtype: Any = None) -> Array: ...


def _shape(name: str, shape) -> tuple[int, ...]:
    try:
        dims = (operator.index(shape),) if np.ndim(shape) == 0 else tuple(
            operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"fx.nn.initializers.{name}: shape must be a tuple of ints, got "
                        f"{shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"fx.nn.initializers.{name}: negative dimension in shape {dims}")
    return dims


def _float_dtype(name: str, dtype) -> np.dtype:
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize(dtype)
    if not dtypes.is_float(dt):
        raise TypeError(f"fx.nn.initializers.{name}: needs a floating dtype, got {dt}")
    return dt


def zeros(key, shape, dtype=None) -> Array:
    """All zeros (``key`` is ignored)."""
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize(dtype)
    return lax.full(_shape("zeros", shape), 0, dt)


def ones(key, shape, dtype=None) -> Array:
    """All ones (``key`` is ignored)."""
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize(dtype)
    return lax.full(_shape("ones", shape), 1, dt)


def constant(value, dtype=None) -> Initializer:
    """An initializer filling every entry with ``value``."""

    def init(key, shape, dtype=dtype):
        from fx import numpy as fnp

        dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize(dtype)
        return fnp.full(_shape("constant", shape), value, dt)

    return init


def _scaled(x, factor, dt):
    """``x * factor`` with the factor rounded to ``dt`` once (as jax: ``jnp.array(s, dt)``)."""
    return lax.mul(x, Array(np.asarray(factor, dt)))


def uniform(scale=1e-2, dtype=None) -> Initializer:
    """Uniform on ``[0, scale)``."""

    def init(key, shape, dtype=dtype):
        dt = _float_dtype("uniform", dtype)
        return _scaled(random.uniform(key, _shape("uniform", shape), dt), scale, dt)

    return init


def normal(stddev=1e-2, dtype=None) -> Initializer:
    """Normal with mean 0 and standard deviation ``stddev``."""

    def init(key, shape, dtype=dtype):
        dt = _float_dtype("normal", dtype)
        return _scaled(random.normal(key, _shape("normal", shape), dt), stddev, dt)

    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0) -> Initializer:
    """``stddev`` times a standard normal truncated to ``[lower, upper]`` (so the result's
    standard deviation is below ``stddev``)."""

    def init(key, shape, dtype=dtype):
        dt = _float_dtype("truncated_normal", dtype)
        draw = random.truncated_normal(key, lower, upper, _shape("truncated_normal", shape), dt)
        return _scaled(draw, stddev, dt)

    return init


def _axes_size(shape, axes) -> int:
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[a] for a in axes)


def compute_fans(shape: Sequence[int], in_axis=-2, out_axis=-1, batch_axis=()) -> tuple:
    """``(fan_in, fan_out)`` of a weight shape (see the module docstring)."""
    shape = tuple(shape)
    if len(shape) < 2:
        raise ValueError(
            f"fx.nn.initializers: cannot compute input and output sizes of a weight of rank "
            f"{len(shape)} (shape {shape}); variance scaling needs rank >= 2")
    in_size = _axes_size(shape, in_axis)
    out_size = _axes_size(shape, out_axis)
    batch = _axes_size(shape, batch_axis)
    receptive = math.prod(shape) / in_size / out_size / batch
    return in_size * receptive, out_size * receptive


_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")
# The standard deviation of a standard normal truncated to [-2, 2].
_TRUNCATED_STD = 0.87962566103423978


def variance_scaling(scale, mode: str, distribution: str, in_axis=-2, out_axis=-1,
                     batch_axis=(), dtype=None) -> Initializer:
    """Samples with variance ``scale / n``, ``n`` the fan chosen by ``mode`` (``"fan_in"``,
    ``"fan_out"``, ``"fan_avg"`` (their mean) or ``"fan_geo_avg"`` (their geometric mean)),
    from ``distribution``: ``"truncated_normal"`` (within two standard deviations, rescaled
    to the variance), ``"normal"`` or ``"uniform"`` (on ``[-a, a]``, ``a = sqrt(3 * var)``).
    """
    if mode not in _MODES:
        raise ValueError(f"fx.nn.initializers.variance_scaling: invalid mode {mode!r}; "
                         f"expected one of {_MODES}")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError(f"fx.nn.initializers.variance_scaling: invalid distribution "
                         f"{distribution!r}; expected one of {_DISTRIBUTIONS}")

    def init(key, shape, dtype=dtype):
        shape = _shape("variance_scaling", shape)
        dt = _float_dtype("variance_scaling", dtype)
        fan_in, fan_out = compute_fans(shape, in_axis, out_axis, batch_axis)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
             "fan_geo_avg": math.sqrt(fan_in * fan_out)}[mode]
        variance = np.asarray(scale / n, dt)
        if distribution == "truncated_normal":
            std = np.asarray(np.sqrt(variance) / np.asarray(_TRUNCATED_STD, dt), dt)
            return _scaled(random.truncated_normal(key, -2, 2, shape, dt), std, dt)
        if distribution == "normal":
            return _scaled(random.normal(key, shape, dt), np.sqrt(variance), dt)
        return _scaled(random.uniform(key, shape, dt, -1), np.sqrt(3 * variance), dt)

    return init


def _preset(scale: float, mode: str, distribution: str, doc: str):
    def make(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)

    make.__doc__ = doc
    return make


glorot_uniform = _preset(1.0, "fan_avg", "uniform",
                         "Glorot/Xavier uniform: ``variance_scaling(1, 'fan_avg', 'uniform')``.")
glorot_normal = _preset(1.0, "fan_avg", "truncated_normal",
                        "Glorot/Xavier normal: ``variance_scaling(1, 'fan_avg', "
                        "'truncated_normal')``.")
lecun_uniform = _preset(1.0, "fan_in", "uniform",
                        "LeCun uniform: ``variance_scaling(1, 'fan_in', 'uniform')``.")
lecun_normal = _preset(1.0, "fan_in", "truncated_normal",
                       "LeCun normal: ``variance_scaling(1, 'fan_in', 'truncated_normal')``.")
he_uniform = _preset(2.0, "fan_in", "uniform",
                     "He/Kaiming uniform: ``variance_scaling(2, 'fan_in', 'uniform')``.")
he_normal = _preset(2.0, "fan_in", "truncated_normal",
                    "He/Kaiming normal: ``variance_scaling(2, 'fan_in', 'truncated_normal')``.")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


# --- orthogonal ---------------------------------------------------------------------------------


def _orthonormal_columns(a):
    """``Q`` of the thin QR decomposition ``a = Q R`` (``a`` is ``m x n``, ``m >= n``) with
    ``R``'s diagonal non-negative, by Householder reflections in a ``fori_loop``."""
    m, n = a.shape
    dt = a.dtype
    rows = lax.broadcasted_iota(dtypes.int32, (m, 1), 0)
    zero, two = Array(np.asarray(0, dt)), Array(np.asarray(2, dt))

    def reflect(v, x):
        """``(I - 2 v v^T) x`` for a unit (or zero) column ``v`` (``m x 1``)."""
        v = lax.broadcast_in_dim(lax.reshape(v, (m,)), (m, n), (0,))
        vx = lax.broadcast_in_dim(lax.reduce_sum(lax.mul(v, x), (0,)), (m, n), (1,))
        return lax.sub(x, lax.mul(two, lax.mul(v, vx)))

    def step(j, carry):
        r, vs, signs = carry
        j = lax.convert_element_type(j, dtypes.int32)
        col = lax.dynamic_slice_in_dim(r, j, 1, 1)                          # (m, 1)
        below = lax.ge(rows, lax.broadcast_in_dim(j, (m, 1), ()))
        x = lax.select(below, col, lax.full_like(col, 0))
        norm = lax.sqrt(lax.reduce_sum(lax.mul(x, x), (0, 1)))
        xj = lax.reduce_sum(lax.select(lax.eq(rows, lax.broadcast_in_dim(j, (m, 1), ())), x,
                                       lax.full_like(x, 0)), (0, 1))
        sign = lax.select(lax.lt(xj, zero), Array(np.asarray(-1, dt)), Array(np.asarray(1, dt)))
        alpha = lax.neg(lax.mul(sign, norm))                                 # R[j, j]
        at_j = lax.eq(rows, lax.broadcast_in_dim(j, (m, 1), ()))
        v = lax.select(at_j, lax.sub(x, lax.broadcast_in_dim(alpha, (m, 1), ())), x)
        vnorm = lax.sqrt(lax.reduce_sum(lax.mul(v, v), (0, 1)))
        safe = lax.select(lax.gt(vnorm, zero), vnorm, Array(np.asarray(1, dt)))
        v = lax.div(v, lax.broadcast_in_dim(safe, (m, 1), ()))
        r = reflect(v, r)
        vs = lax.dynamic_update_slice_in_dim(vs, v, j, 1)
        diag_sign = lax.select(lax.lt(alpha, zero), Array(np.asarray(-1, dt)),
                               Array(np.asarray(1, dt)))
        signs = lax.dynamic_update_slice_in_dim(signs, lax.reshape(diag_sign, (1,)), j, 0)
        return r, vs, signs

    init = (a, lax.full((m, n), 0, dt), lax.full((n,), 1, dt))
    _, vs, signs = lax.fori_loop(0, n, step, init)

    def apply(i, q):  # Q = H_0 ... H_{n-1} I[:, :n], applied right to left
        i = lax.convert_element_type(i, dtypes.int32)
        v = lax.dynamic_slice_in_dim(vs, lax.sub(np.asarray(n - 1, np.int32), i), 1, 1)
        return reflect(v, q)

    eye = lax.convert_element_type(lax.eq(lax.broadcasted_iota(dtypes.int32, (m, n), 0),
                                          lax.broadcasted_iota(dtypes.int32, (m, n), 1)), dt)
    q = lax.fori_loop(0, n, apply, eye)
    return lax.mul(q, lax.broadcast_in_dim(signs, (m, n), (1,)))


def orthogonal(scale=1.0, column_axis=-1, dtype=None) -> Initializer:
    """A (semi-)orthogonal matrix times ``scale``: the ``column_axis`` dimension indexes
    orthonormal columns (or rows, if there are more of them than the other dimensions'
    product), the other dimensions are flattened. As jax's: the Q factor of a normal draw."""

    def init(key, shape, dtype=dtype):
        from fx import numpy as fnp

        shape = _shape("orthogonal", shape)
        dt = _float_dtype("orthogonal", dtype)
        if len(shape) < 2:
            raise ValueError(f"fx.nn.initializers.orthogonal: needs a shape of rank >= 2, got "
                             f"{shape}")
        axis = column_axis % len(shape)
        n_cols = shape[axis]
        n_rows = math.prod(shape) // n_cols if n_cols else 0
        wide = n_rows < n_cols
        a = random.normal(key, (n_cols, n_rows) if wide else (n_rows, n_cols), dt)
        q = _orthonormal_columns(a)
        if wide:
            q = lax.transpose(q, (1, 0))
        q = lax.reshape(q, tuple(d for i, d in enumerate(shape) if i != axis) + (n_cols,))
        q = fnp.moveaxis(q, -1, axis)
        return _scaled(q, scale, dt)

    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None) -> Initializer:
    """For convolution kernels ``(*spatial, in, out)`` of 1 to 3 spatial dimensions with
    ``in <= out``: zeros except an orthogonal ``(in, out)`` matrix at the spatial center
    (Xiao et al. 2018), as jax's."""

    def init(key, shape, dtype=dtype):
        shape = _shape("delta_orthogonal", shape)
        dt = _float_dtype("delta_orthogonal", dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"fx.nn.initializers.delta_orthogonal: needs a 3-D, 4-D or 5-D "
                             f"shape (spatial..., in, out), got {shape}")
        if shape[-1] < shape[-2]:
            raise ValueError(f"fx.nn.initializers.delta_orthogonal: in features {shape[-2]} "
                             f"must be <= out features {shape[-1]} (shape {shape})")
        ortho = orthogonal(scale, column_axis, dt)(key, shape[-2:])
        center = tuple((k - 1) // 2 for k in shape[:-2])
        w = lax.full(shape, 0, dt)
        block = lax.reshape(ortho, (1,) * len(center) + shape[-2:])
        return lax.dynamic_update_slice(w, block, center + (0, 0))

    return init
