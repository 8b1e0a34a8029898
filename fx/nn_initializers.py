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

``orthogonal`` and ``delta_orthogonal`` need a QR decomposition, which fx does not have yet
(issue 14); they are not defined here.
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
    "Initializer", "constant", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform",
    "kaiming_normal", "kaiming_uniform", "lecun_normal", "lecun_uniform", "normal", "ones",
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
