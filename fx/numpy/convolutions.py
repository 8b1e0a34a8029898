"""``fx.numpy`` convolutions and pooling.

- ``convolve``/``correlate``: NumPy's 1-D functions (modes ``'full'``, ``'same'``,
  ``'valid'``) with jax.numpy's dtype rules: operands are promoted to a floating type unless
  ``preferred_element_type`` is given (then only to a common type).
- ``max_pool``/``avg_pool``: flax-style pooling over the spatial dimensions of a batch of
  images, ``(batch, *spatial, features)`` by default (``channels_last=False``: ``(batch,
  features, *spatial)``). The batch dimension may be omitted.

All of them lower to ``fx.lax.conv_general_dilated`` and ``fx.lax.reduce_window``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fx import dtypes, lax
from fx.core import get_aval
from fx.lax.windowed import identity
from fx.numpy._promote import promote_dtypes, promote_to_inexact

__all__ = ["avg_pool", "convolve", "correlate", "max_pool"]


def _conv1d(name: str, a, v, mode: str, precision, preferred_element_type):
    if preferred_element_type is None:
        a, v = promote_to_inexact(a, v, name=f"fx.numpy.{name}")
    else:
        a, v = promote_dtypes(a, v, name=f"fx.numpy.{name}")
    sa, sv = get_aval(a).shape, get_aval(v).shape
    if len(sa) != 1 or len(sv) != 1:
        raise ValueError(f"fx.numpy.{name}: only 1-D inputs are supported, got shapes {sa} "
                         f"and {sv}")
    if not sa[0] or not sv[0]:
        raise ValueError(f"fx.numpy.{name}: inputs cannot be empty, got shapes {sa} and {sv}")
    if name == "correlate" and dtypes.is_complex(get_aval(v).dtype):
        v = lax.conj(v)  # sum_n a[n + k] conj(v[n]), as numpy and jax
    reverse = False
    if sa[0] < sv[0]:
        # Slide the shorter operand; correlating the swapped pair gives the result reversed.
        a, v = v, a
        reverse = name == "correlate"
    if name == "convolve":
        v = lax.rev(v, (0,))
    m = get_aval(v).shape[0]
    pads = {"valid": (0, 0), "same": (m // 2, m - m // 2 - 1), "full": (m - 1, m - 1)}
    if mode not in pads:
        raise ValueError(f"fx.numpy.{name}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    out = lax.conv_general_dilated(
        lax.reshape(a, (1, 1, get_aval(a).shape[0])), lax.reshape(v, (1, 1, m)), (1,),
        [pads[mode]], precision=precision, preferred_element_type=preferred_element_type)
    out = lax.reshape(out, get_aval(out).shape[2:])
    return lax.rev(out, (0,)) if reverse else out


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """The discrete convolution of two 1-D arrays, as ``numpy.convolve``.

    >>> fx.numpy.convolve(fx.numpy.array([1.0, 2.0, 3.0]), fx.numpy.array([0.0, 1.0, 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
    """
    return _conv1d("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation of two 1-D arrays, as ``numpy.correlate`` (complex ``v`` is
    conjugated).

    >>> fx.numpy.correlate(fx.numpy.array([1.0, 2.0, 3.0]), fx.numpy.array([0.0, 1.0]), "full")
    Array([1., 2., 3., 0.], dtype=float32)
    """
    return _conv1d("correlate", a, v, mode, precision, preferred_element_type)


# --- pooling --------------------------------------------------------------------------------------


def _pool(name: str, x, init, computation, window_shape, strides, padding, channels_last):
    window = tuple(int(w) for w in window_shape)
    nsp = len(window)
    strides = (1,) * nsp if strides is None else tuple(int(s) for s in strides)
    if len(strides) != nsp:
        raise ValueError(f"fx.numpy.{name}: strides {strides} need one entry per window "
                         f"dimension ({nsp})")
    ndim = get_aval(x).ndim
    batched = ndim == nsp + 2
    if not batched and ndim != nsp + 1:
        raise ValueError(
            f"fx.numpy.{name}: a {nsp}-D window needs inputs of shape (batch, *spatial, "
            f"features) or (*spatial, features) (channels first: features before spatial), "
            f"got {get_aval(x).str_short()}")
    if not batched:
        x = lax.expand_dims(x, (0,))
    # Spatial dimensions follow the batch (and the features, when they come first).
    first = 1 if channels_last else 2
    dims = [1] * (nsp + 2)
    steps = [1] * (nsp + 2)
    dims[first:first + nsp], steps[first:first + nsp] = window, strides
    if not isinstance(padding, str):
        pairs = [(0, 0)] * (nsp + 2)
        pads = [tuple(p) for p in padding]
        if len(pads) != nsp:
            raise ValueError(f"fx.numpy.{name}: padding {padding!r} needs one (low, high) pair "
                             f"per window dimension ({nsp})")
        pairs[first:first + nsp] = pads
        padding = pairs
    out = lax.reduce_window(x, init, computation, dims, steps, padding)
    return out if batched else lax.squeeze(out, (0,))


def max_pool(x, window_shape: Sequence[int], strides: Sequence[int] | None = None,
             padding="VALID", *, channels_last: bool = True):
    """The maximum over each window of the spatial dimensions (flax's ``max_pool``).

    ``x`` is ``(batch, *spatial, features)`` (or ``(batch, features, *spatial)`` with
    ``channels_last=False``; the batch may be omitted); ``padding`` is ``'VALID'``,
    ``'SAME'`` or one ``(low, high)`` pair per spatial dimension. Its gradient goes to the
    first maximal element of each window.

    >>> x = fx.numpy.arange(16.0).reshape(1, 4, 4, 1)
    >>> fx.numpy.max_pool(x, (2, 2), (2, 2))[0, :, :, 0]
    Array([[ 5.,  7.],
           [13., 15.]], dtype=float32)
    """
    init = identity("max", get_aval(x).dtype)
    return _pool("max_pool", x, init, lax.max, window_shape, strides, padding, channels_last)


def avg_pool(x, window_shape: Sequence[int], strides: Sequence[int] | None = None,
             padding="VALID", *, channels_last: bool = True, count_include_pad: bool = True):
    """The mean over each window of the spatial dimensions (flax's ``avg_pool``); layouts as
    in :func:`max_pool`. With ``count_include_pad=False`` padded positions are left out of
    each window's count.

    >>> x = fx.numpy.arange(16.0).reshape(1, 4, 4, 1)
    >>> fx.numpy.avg_pool(x, (2, 2), (2, 2))[0, :, :, 0]
    Array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)
    """
    (x,) = promote_to_inexact(x, name="fx.numpy.avg_pool")
    aval = get_aval(x)
    sums = _pool("avg_pool", x, 0, lax.add, window_shape, strides, padding, channels_last)
    if count_include_pad:
        return lax.div(sums, math.prod(int(w) for w in window_shape))
    ones = lax.full(aval.shape, 1, aval.dtype)
    counts = _pool("avg_pool", ones, 0, lax.add, window_shape, strides, padding, channels_last)
    return lax.div(sums, counts)
