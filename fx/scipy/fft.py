"""``fx.scipy.fft``: discrete cosine transforms (``dct``, ``idct``, ``dctn``, ``idctn``) as
``jax.scipy.fft``, over ``fx.numpy.fft``.

Type 2 follows jax's algorithm (Makhoul 1980: an FFT of the even/odd-interleaved signal,
twiddled by ``exp(-i pi k / 2N)``), so values, dtypes (integers become floating, complex
input is transformed part by part) and derivatives are jax's. Type 3, which jax refuses, is
SciPy's: the type-2 inverse scaled, ``dct(x, 3) = 2N idct(x, 2)`` and ``idct(x, 3) =
dct(x, 2) / 2N`` (unscaled with ``norm="ortho"``). ``norm`` is ``None``/``"backward"`` or
``"ortho"``; ``n``/``s`` crop or zero-pad the transformed axes first.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.core import get_aval
from fx.numpy import fft as jnp_fft
from fx.numpy import manipulation, ufuncs
from fx.numpy._promote import canonical_axis, ensure_arraylike, promote_to_inexact, to_array

__all__ = ["dct", "dctn", "idct", "idctn"]


def _check(name: str, type: int, norm: str | None) -> None:  # noqa: A002
    if type not in (2, 3):
        raise NotImplementedError(f"fx.scipy.fft.{name}: only DCT types 2 and 3 are "
                                  f"implemented, got type={type}")
    if norm is not None and norm not in ("backward", "ortho"):
        raise ValueError(f"fx.scipy.fft.{name}: {norm=!r} is not implemented")


def _split_complex(fn, x, **kw):
    """Complex input: the transform of each part (the transforms are real)."""
    return lax.complex(fn(lax.real(x), **kw), fn(lax.imag(x), **kw))


def _arange(n: int, dtype, ndim: int, axis: int):
    k = lax.convert_element_type(lax.iota(dtypes.int32, n), dtype)
    return lax.expand_dims(k, [a for a in range(ndim) if a != axis])


def _w4(n: int, k):
    """``exp(-i pi k / 2n)`` in ``k``'s complex dtype."""
    dt = get_aval(k).dtype
    if not dtypes.is_complex(dt):
        k = lax.convert_element_type(k, dtypes.complex_dtype(dt))
    return ufuncs.exp(-0.5j * np.pi * k / n)


def _interleave(x, axis: int):
    v0 = lax.slice_in_dim(x, 0, get_aval(x).shape[axis], 2, axis)
    v1 = lax.rev(lax.slice_in_dim(x, 1, get_aval(x).shape[axis], 2, axis), (axis,))
    return lax.concatenate([v0, v1], axis)


def _deinterleave(x, axis: int):
    """The inverse of :func:`_interleave`: the first ceil(n/2) go to the even positions, the
    rest, reversed, to the odd ones (by stacking the halves and reshaping)."""
    shape = get_aval(x).shape
    n = shape[axis]
    half = math.ceil(n / 2)
    v0 = lax.slice_in_dim(x, 0, half, 1, axis)
    v1 = lax.rev(lax.slice_in_dim(x, half, n, 1, axis), (axis,))
    v1 = lax.pad(v1, lax.full((), 0, get_aval(x).dtype),
                 [(0, half - (n - half) if a == axis else 0, 0) for a in range(len(shape))])
    both = lax.concatenate([lax.expand_dims(v0, (axis + 1,)), lax.expand_dims(v1, (axis + 1,))],
                           axis + 1)
    flat = lax.reshape(both, shape[:axis] + (2 * half,) + shape[axis + 1:])
    return lax.slice_in_dim(flat, 0, n, 1, axis)


def _ortho_norm(out, axis: int):
    aval = get_aval(out)
    n = aval.shape[axis]
    factor = lax.concatenate([lax.full((1,), 4, aval.dtype), lax.full((n - 1,), 2, aval.dtype)],
                             0)
    factor = lax.expand_dims(factor, [a for a in range(aval.ndim) if a != axis])
    return out / ufuncs.sqrt(factor * n)


def _resize(x, sizes: dict[int, int]):
    aval = get_aval(x)
    if all(aval.shape[a] == n for a, n in sizes.items()):
        return x
    return lax.pad(x, lax.full((), 0, aval.dtype),
                   [(0, sizes[a] - aval.shape[a] if a in sizes else 0, 0)
                    for a in range(aval.ndim)])


def _dct2(x, axis: int, norm):
    n = get_aval(x).shape[axis]
    ndim = get_aval(x).ndim
    v = _interleave(x, axis)
    big_v = jnp_fft.fft(v, axis=axis)
    k = _arange(n, dtypes.real_dtype(get_aval(big_v).dtype), ndim, axis)
    out = 2 * lax.real(big_v * _w4(n, k))
    return _ortho_norm(out, axis) if norm == "ortho" else out


def _idct2(x, axis: int, norm):
    n = get_aval(x).shape[axis]
    (x,) = promote_to_inexact(x, name="fx.scipy.fft.idct")
    if norm is None or norm == "backward":
        x = _ortho_norm(x, axis)
    x = _ortho_norm(x, axis)
    k = _arange(n, get_aval(x).dtype, get_aval(x).ndim, axis)
    w4 = _w4(n, k)
    x = lax.convert_element_type(x, get_aval(w4).dtype)
    x = x / w4 * 2 * n
    x = jnp_fft.ifft(x, axis=axis)
    return _deinterleave(lax.real(x), axis)


def _scaled(out, factor: float):
    return out if factor == 1 else out * factor


def dct(x, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
        norm: str | None = None):
    """The discrete cosine transform of ``x`` along ``axis`` (``scipy.fft.dct``, types 2
    and 3).

    Type 2: ``y[k] = 2 sum_j x[j] cos(pi k (2j + 1) / 2N)``; type 3 is its inverse up to
    ``2N``. ``n`` crops or zero-pads the axis first; ``norm="ortho"`` makes the transform
    orthonormal.

    >>> fx.numpy.round(fx.scipy.fft.dct(fx.numpy.array([1.0, 2.0, 3.0, 4.0])), 2)
    Array([20.  , -6.31,  0.  , -0.45], dtype=float32)
    """
    ensure_arraylike("fx.scipy.fft.dct", x)
    _check("dct", type, norm)
    x = to_array(x, "fx.scipy.fft.dct")
    if dtypes.is_complex(get_aval(x).dtype):
        return _split_complex(dct, x, type=type, n=n, axis=axis, norm=norm)
    axis = canonical_axis(axis, get_aval(x).ndim, "fx.scipy.fft.dct")
    if n is not None:
        x = _resize(x, {axis: operator.index(n)})
    if type == 3:
        size = get_aval(x).shape[axis]
        return _scaled(_idct2(x, axis, norm), 1 if norm == "ortho" else 2 * size)
    return _dct2(x, axis, norm)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
         norm: str | None = None):
    """The inverse of :func:`dct` (``scipy.fft.idct``): ``idct(dct(x)) == x`` for each type
    and norm.

    >>> fx.numpy.round(fx.scipy.fft.idct(fx.scipy.fft.dct(fx.numpy.array([1.0, 2.0, 3.0]))), 4)
    Array([1., 2., 3.], dtype=float32)
    """
    ensure_arraylike("fx.scipy.fft.idct", x)
    _check("idct", type, norm)
    x = to_array(x, "fx.scipy.fft.idct")
    if dtypes.is_complex(get_aval(x).dtype):
        return _split_complex(idct, x, type=type, n=n, axis=axis, norm=norm)
    axis = canonical_axis(axis, get_aval(x).ndim, "fx.scipy.fft.idct")
    if n is not None:
        x = _resize(x, {axis: operator.index(n)})
    if type == 3:
        size = get_aval(x).shape[axis]
        return _scaled(_dct2(x, axis, norm), 1 if norm == "ortho" else 1 / (2 * size))
    return _idct2(x, axis, norm)


def _nd_axes(name: str, x, s, axes) -> tuple[list[int] | None, tuple[int, ...]]:
    ndim = get_aval(x).ndim
    if s is not None:
        try:
            s = list(s)
        except TypeError:
            s = [operator.index(s)]
        if len(s) > ndim:
            raise ValueError(f"s must have at most x.ndim ({ndim}) elements, got {len(s)}")
    if axes is None:
        axes = tuple(range(ndim - len(s), ndim)) if s is not None else tuple(range(ndim))
    else:
        axes = tuple(canonical_axis(a, ndim, f"fx.scipy.fft.{name}") for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"fx.scipy.fft.{name}: repeated axis in {axes}")
    return s, axes


def _dct2_2d(x, axes: tuple[int, int], norm):
    """jax's two-axis type-2 DCT: one two-dimensional FFT of the doubly interleaved signal."""
    a1, a2 = axes
    shape = get_aval(x).shape
    n1, n2 = shape[a1], shape[a2]
    ndim = len(shape)
    big_v = jnp_fft.fftn(_interleave(_interleave(x, a1), a2), axes=axes)
    dt = get_aval(big_v).dtype
    k1, k2 = _arange(n1, dt, ndim, a1), _arange(n2, dt, ndim, a2)
    flipped = manipulation.roll(manipulation.flip(big_v, axis=a2), 1, axis=a2)
    out = _w4(n1, k1) * (_w4(n2, k2) * big_v + _w4(n2, -k2) * flipped)
    out = 2 * lax.real(out)
    if norm == "ortho":
        return _ortho_norm(_ortho_norm(out, a1), a2)
    return out


def dctn(x, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
         axes: Sequence[int] | None = None, norm: str | None = None):
    """The multidimensional discrete cosine transform over ``axes`` (``scipy.fft.dctn``):
    the one-dimensional transform along each axis, ``s`` cropping or padding them first.

    >>> fx.scipy.fft.dctn(fx.numpy.ones((2, 2)))
    Array([[16.,  0.],
           [ 0.,  0.]], dtype=float32)
    """
    ensure_arraylike("fx.scipy.fft.dctn", x)
    _check("dctn", type, norm)
    x = to_array(x, "fx.scipy.fft.dctn")
    if dtypes.is_complex(get_aval(x).dtype):
        return _split_complex(dctn, x, type=type, s=s, axes=axes, norm=norm)
    s, axes = _nd_axes("dctn", x, s, axes)
    if len(axes) == 1:
        return dct(x, type, n=s[0] if s is not None else None, axis=axes[0], norm=norm)
    if s is not None:
        x = _resize(x, dict(zip(axes, s)))
    if type == 3:
        for axis in axes:
            x = dct(x, 3, axis=axis, norm=norm)
        return x
    if len(axes) == 2:
        return _dct2_2d(x, axes, norm)
    for block in [axes[i:i + 2] for i in range(0, len(axes), 2)]:
        x = dctn(x, axes=block, norm=norm)
    return x


def idctn(x, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
          axes: Sequence[int] | None = None, norm: str | None = None):
    """The inverse of :func:`dctn` (``scipy.fft.idctn``).

    >>> fx.scipy.fft.idctn(fx.scipy.fft.dctn(fx.numpy.ones((2, 2))))
    Array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    ensure_arraylike("fx.scipy.fft.idctn", x)
    _check("idctn", type, norm)
    x = to_array(x, "fx.scipy.fft.idctn")
    if dtypes.is_complex(get_aval(x).dtype):
        return _split_complex(idctn, x, type=type, s=s, axes=axes, norm=norm)
    s, axes = _nd_axes("idctn", x, s, axes)
    if len(axes) == 1:
        return idct(x, type, n=s[0] if s is not None else None, axis=axes[0], norm=norm)
    if s is not None:
        x = _resize(x, dict(zip(axes, s)))
    for axis in axes:
        x = idct(x, type, axis=axis, norm=norm)
    return x
