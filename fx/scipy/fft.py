"""``fx.scipy.fft``: discrete cosine transforms (``dct``, ``idct``, ``dctn``, ``idctn``) as
``jax.scipy.fft``, over ``fx.numpy.fft``.

Type 2 follows jax's algorithm (Makhoul 1980: an FFT of the even/odd-interleaved signal,
twiddled by ``exp(-i pi k / 2N)``), so values, dtypes (integers become floating, complex
input is transformed part by part) and derivatives are jax's. Type 3, which jax refuses, is
SciPy's: the type-2 inverse scaled, ``dct(x, 3) = 2N idct(x, 2)`` and ``idct(x, 3) =
dct(x, 2) / 2N`` (unscaled with ``norm="ortho"``). Types 1 and 4 raise NotImplementedError,
as jax.scipy.fft (0.10) does for every type but 2. ``norm`` is ``None``/``"backward"`` or
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


def _transform(name: str, x, type: int, norm: str | None, body):  # noqa: A002
    """The front shared by the four transforms: jax's argument checks (a ``type`` other than
    2 or 3, as jax's other than 2, is a NotImplementedError), then ``body`` of ``x``, of each
    part for complex input (the transforms are real)."""
    ensure_arraylike(f"fx.scipy.fft.{name}", x)
    if type not in (2, 3):
        raise NotImplementedError(
            f"fx.scipy.fft.{name}: DCT type {type} is not implemented (jax.scipy.fft has only "
            f"type 2, fx types 2 and 3); for type {type} use scipy.fft.{name} outside traced "
            "code")
    if norm is not None and norm not in ("backward", "ortho"):
        raise ValueError(f"fx.scipy.fft.{name}: {norm=!r} is not implemented")
    x = to_array(x, f"fx.scipy.fft.{name}")
    if dtypes.is_complex(get_aval(x).dtype):
        return lax.complex(body(lax.real(x)), body(lax.imag(x)))
    return body(x)


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


def _along_axis(x, inverse: bool, type: int, n: int | None, axis: int, norm):  # noqa: A002
    """The one-axis transform of a real ``x``: type 2 (``inverse``: its inverse), or type 3 as
    the other direction's type 2, rescaled by 2N unless orthonormal (SciPy's convention)."""
    name = "idct" if inverse else "dct"
    axis = canonical_axis(axis, get_aval(x).ndim, f"fx.scipy.fft.{name}")
    if n is not None:
        x = _resize(x, {axis: operator.index(n)})
    if type == 2:
        return (_idct2 if inverse else _dct2)(x, axis, norm)
    out = (_dct2 if inverse else _idct2)(x, axis, norm)
    if norm == "ortho":
        return out
    size = get_aval(x).shape[axis]
    return out * (1 / (2 * size)) if inverse else out * (2 * size)


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
    return _transform("dct", x, type, norm,
                      lambda v: _along_axis(v, False, type, n, axis, norm))


def idct(x, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
         norm: str | None = None):
    """The inverse of :func:`dct` (``scipy.fft.idct``): ``idct(dct(x)) == x`` for each type
    and norm.

    >>> fx.numpy.round(fx.scipy.fft.idct(fx.scipy.fft.dct(fx.numpy.array([1.0, 2.0, 3.0]))), 4)
    Array([1., 2., 3.], dtype=float32)
    """
    return _transform("idct", x, type, norm,
                      lambda v: _along_axis(v, True, type, n, axis, norm))


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


def _over_axes(x, inverse: bool, type: int, s, axes, norm):  # noqa: A002
    """The transform of a real ``x`` over ``axes``: one axis after another, except the forward
    type 2, which takes the axes two at a time through jax's two-dimensional kernel."""
    s, axes = _nd_axes("idctn" if inverse else "dctn", x, s, axes)
    if len(axes) == 1:
        return _along_axis(x, inverse, type, s[0] if s is not None else None, axes[0], norm)
    if s is not None:
        x = _resize(x, dict(zip(axes, s)))
    if type == 2 and not inverse:
        for block in [axes[i:i + 2] for i in range(0, len(axes), 2)]:
            x = _dct2_2d(x, block, norm) if len(block) == 2 else _dct2(x, block[0], norm)
        return x
    for axis in axes:
        x = _along_axis(x, inverse, type, None, axis, norm)
    return x


def dctn(x, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
         axes: Sequence[int] | None = None, norm: str | None = None):
    """The multidimensional discrete cosine transform over ``axes`` (``scipy.fft.dctn``):
    the one-dimensional transform along each axis, ``s`` cropping or padding them first.

    >>> fx.scipy.fft.dctn(fx.numpy.ones((2, 2)))
    Array([[16.,  0.],
           [ 0.,  0.]], dtype=float32)
    """
    return _transform("dctn", x, type, norm,
                      lambda v: _over_axes(v, False, type, s, axes, norm))


def idctn(x, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
          axes: Sequence[int] | None = None, norm: str | None = None):
    """The inverse of :func:`dctn` (``scipy.fft.idctn``).

    >>> fx.scipy.fft.idctn(fx.scipy.fft.dctn(fx.numpy.ones((2, 2))))
    Array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    return _transform("idctn", x, type, norm,
                      lambda v: _over_axes(v, True, type, s, axes, norm))
