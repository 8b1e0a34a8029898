"""Convolution patches, locally connected convolutions, and jax's conv/window shape helpers.

``conv_general_dilated_patches`` extracts every window of the (dilated, padded) input as
feature channels: the output has the layout of a convolution's output with ``C * prod(filter)``
features, channel-major (feature ``c * prod(filter) + tap``, taps in row-major filter order),
as jax's. It is built from ``pad`` and strided ``slice``\\ s, so it is exact (no multiply by a
one-hot kernel: an infinite input stays infinite) and its derivative is a sum of pads.
``conv_general_dilated_local`` contracts those patches with one kernel per output position.
The ``*_shape_tuple`` helpers compute output shapes without building anything.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from fx import dtypes
from fx.core import get_aval
from fx.lax.base import as_array, reshape, transpose
from fx.lax.convolution import ConvDimensionNumbers, conv_dimension_numbers
from fx.lax.elementwise import convert_element_type
from fx.lax.linalg import dot_general
from fx.lax.structural import concatenate, expand_dims, pad, slice
from fx.lax.windowed import dilate_dim, padtype_to_pads


def _ints(name: str, what: str, v, n: int) -> tuple[int, ...]:
    if v is None:
        return (1,) * n
    out = tuple(int(i) for i in v)
    if len(out) != n:
        raise ValueError(f"fx.lax.{name}: {what} {tuple(v)} needs one entry per spatial "
                         f"dimension ({n})")
    return out


def _pads(name: str, padding, in_sizes, extents, strides) -> tuple[tuple[int, int], ...]:
    if isinstance(padding, str):
        return tuple(padtype_to_pads(in_sizes, extents, strides, padding))
    try:
        pads = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise ValueError(f"fx.lax.{name}: padding must be a string or (low, high) pairs, got "
                         f"{padding!r}") from None
    if len(pads) != len(in_sizes):
        raise ValueError(f"fx.lax.{name}: padding {pads} needs one pair per spatial dimension "
                         f"({len(in_sizes)})")
    return pads


def _inverse(perm: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _patches_canonical(name, lhs, filter_shape, window_strides, padding, lhs_dilation,
                       rhs_dilation, dimension_numbers):
    """Patches in the canonical layout ``(N, C * taps, *out_spatial)`` and the dimension
    numbers."""
    la = get_aval(lhs)
    nsp = la.ndim - 2
    filter_shape = tuple(int(k) for k in filter_shape)
    if len(filter_shape) != nsp:
        raise ValueError(f"fx.lax.{name}: filter_shape {filter_shape} needs one entry per "
                         f"spatial dimension of {la.str_short()} ({nsp})")
    dn = conv_dimension_numbers(la.shape, (1,) * la.ndim, dimension_numbers)
    strides = _ints(name, "window_strides", window_strides, nsp)
    ldil = _ints(name, "lhs_dilation", lhs_dilation, nsp)
    rdil = _ints(name, "rhs_dilation", rhs_dilation, nsp)
    x = transpose(lhs, dn.lhs_spec)  # (N, C, *spatial)
    in_sizes = x_shape = get_aval(x).shape
    extents = [dilate_dim(k, r) for k, r in zip(filter_shape, rdil)]
    pads = _pads(name, padding, in_sizes[2:], extents, strides)
    zero = np.zeros((), la.dtype)
    x = pad(x, zero, [(0, 0, 0), (0, 0, 0)] + [(lo, hi, d - 1) for (lo, hi), d in
                                                zip(pads, ldil)])
    padded = get_aval(x).shape
    outs = [0 if p < e else (p - e) // s + 1 for p, e, s in zip(padded[2:], extents, strides)]
    taps = []
    for tap in itertools.product(*(range(k) for k in filter_shape)):
        start = [0, 0] + [t * r for t, r in zip(tap, rdil)]
        limit = [padded[0], padded[1]] + [st + (o - 1) * s + 1 if o else st
                                          for st, o, s in zip(start[2:], outs, strides)]
        taps.append(expand_dims(slice(x, start, limit, (1, 1) + strides), (2,)))
    n, c = x_shape[0], x_shape[1]
    t = math.prod(filter_shape)
    if taps:
        stacked = concatenate(taps, 2)  # (N, C, taps, *out)
    else:
        from fx.lax.base import full

        stacked = full((n, c, 0, *outs), 0, la.dtype)
    return reshape(stacked, (n, c * t, *outs)), dn


def conv_general_dilated_patches(lhs, filter_shape: Sequence[int],
                                 window_strides: Sequence[int], padding,
                                 lhs_dilation: Sequence[int] | None = None,
                                 rhs_dilation: Sequence[int] | None = None,
                                 dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The windows a convolution with a kernel of spatial shape ``filter_shape`` would see,
    as features: the result has the convolution's output layout with ``C * prod(filter_shape)``
    features (channel-major). Arguments as :func:`fx.lax.conv_general_dilated`.

    Example::

        >>> x = fx.numpy.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)     # NCHW
        >>> fx.lax.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID").shape
        (2, 12, 3, 4)
    """
    lhs = as_array(lhs, "conv_general_dilated_patches")
    la = get_aval(lhs)
    if la.ndim < 2:
        raise TypeError(f"fx.lax.conv_general_dilated_patches: lhs needs rank >= 2 (batch, "
                        f"feature, spatial...), got {la.str_short()}")
    out, dn = _patches_canonical("conv_general_dilated_patches", lhs, filter_shape,
                                 window_strides, padding, lhs_dilation, rhs_dilation,
                                 dimension_numbers)
    out = transpose(out, _inverse(dn.out_spec))
    if preferred_element_type is not None:
        out = convert_element_type(out, dtypes.canonicalize(preferred_element_type))
    return out


def conv_general_dilated_local(lhs, rhs, window_strides: Sequence[int], padding,
                               filter_shape: Sequence[int],
                               lhs_dilation: Sequence[int] | None = None,
                               rhs_dilation: Sequence[int] | None = None,
                               dimension_numbers=None, precision=None):
    """A locally connected ("unshared") convolution: each output position has its own kernel.

    ``rhs`` has the kernel layout of ``dimension_numbers`` with ``O`` output features,
    ``C * prod(filter_shape)`` input features (channel-major, as the patches) and the output's
    spatial sizes as its spatial dimensions.
    """
    lhs = as_array(lhs, "conv_general_dilated_local")
    rhs = as_array(rhs, "conv_general_dilated_local")
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim < 2 or la.ndim != ra.ndim:
        raise TypeError(f"fx.lax.conv_general_dilated_local: lhs and rhs need one rank >= 2, "
                        f"got {la.str_short()} and {ra.str_short()}")
    patches, _ = _patches_canonical("conv_general_dilated_local", lhs, filter_shape,
                                    window_strides, padding, lhs_dilation, rhs_dilation,
                                    dimension_numbers)
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    kernel = transpose(rhs, dn.rhs_spec)  # (O, C * taps, *out)
    pa, ka = get_aval(patches), get_aval(kernel)
    if ka.shape[1:] != pa.shape[1:]:
        raise TypeError(
            f"fx.lax.conv_general_dilated_local: the kernel must have shape (O, "
            f"{pa.shape[1]}, *{pa.shape[2:]}) in its canonical layout (in features = C * "
            f"prod(filter_shape), then the output's spatial sizes); got {ka.shape}")
    spatial = tuple(range(2, pa.ndim))
    out = dot_general(patches, kernel, (((1,), (1,)), (spatial, spatial)), precision)
    # out: (*out_spatial, N, O) -> (N, O, *out_spatial) -> the output layout.
    nsp = len(spatial)
    out = transpose(out, (nsp, nsp + 1) + tuple(range(nsp)))
    return transpose(out, _inverse(dn.out_spec))


# --- shape helpers --------------------------------------------------------------------------------


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1):
    """The output shape ``(N // batch_group_count, O, *spatial)`` of a convolution of ``NC...``
    inputs with ``OI...`` kernels (``pads``: a padding name or ``(low, high)`` pairs)."""
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    strides = tuple(int(s) for s in strides)
    pads = _pads("conv_shape_tuple", pads, lhs_shape[2:], rhs_shape[2:], strides)
    spatial = tuple(max(0, (n + lo + hi - k) // s + 1) if n + lo + hi >= k else 0
                    for n, k, s, (lo, hi) in zip(lhs_shape[2:], rhs_shape[2:], strides, pads))
    return (lhs_shape[0] // int(batch_group_count), rhs_shape[0]) + spatial


def conv_general_permutations(dimension_numbers) -> tuple[tuple[int, ...], ...]:
    """The ``(lhs, rhs, out)`` axis permutations for three spec strings (e.g. ``('NHWC',
    'HWIO', 'NHWC')``): each lists the batch/out-feature, feature and spatial axes."""
    specs = tuple(dimension_numbers)
    if len(specs) != 3 or not all(isinstance(s, str) for s in specs):
        raise TypeError(f"fx.lax.conv_general_permutations: expected three spec strings, got "
                        f"{dimension_numbers!r}")
    n = len(specs[0])
    return tuple(conv_dimension_numbers((1,) * n, (1,) * n, specs))


def _specs(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    return conv_dimension_numbers(tuple(lhs_shape), tuple(rhs_shape), dimension_numbers)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of :func:`fx.lax.conv_general_dilated` (no dilation, no groups) for
    these layouts."""
    dn = _specs(lhs_shape, rhs_shape, dimension_numbers)
    lhs = tuple(lhs_shape[d] for d in dn.lhs_spec)
    rhs = tuple(rhs_shape[d] for d in dn.rhs_spec)
    out = conv_shape_tuple(lhs, rhs, window_strides, padding)
    return tuple(out[i] for i in _inverse(dn.out_spec))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    """The output shape of :func:`fx.lax.conv_transpose` for these layouts (``padding`` a
    name, as the forward convolution's, or the transposed convolution's own pairs)."""
    from fx.lax.convolution import _transpose_conv_padding

    dn = _specs(lhs_shape, rhs_shape, dimension_numbers)
    lhs = tuple(lhs_shape[d] for d in dn.lhs_spec)
    rhs = tuple(rhs_shape[d] for d in dn.rhs_spec)
    strides = tuple(int(s) for s in window_strides)
    if isinstance(padding, str):
        pads = [_transpose_conv_padding(k, s, padding) for k, s in zip(rhs[2:], strides)]
    else:
        pads = [(int(lo), int(hi)) for lo, hi in padding]
    spatial = tuple(max(0, lo + dilate_dim(n, s) + hi - k + 1)
                    for n, k, s, (lo, hi) in zip(lhs[2:], rhs[2:], strides, pads))
    out = (lhs[0], rhs[0]) + spatial
    return tuple(out[i] for i in _inverse(dn.out_spec))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None) -> tuple[int, ...]:
    """The output shape of :func:`fx.lax.reduce_window` (``padding``: ``(low, high)`` pairs)."""
    n = len(operand_shape)
    bdil = _ints("reduce_window_shape_tuple", "base_dilation", base_dilation, n)
    wdil = _ints("reduce_window_shape_tuple", "window_dilation", window_dilation, n)
    out = []
    for d, w, s, (lo, hi), b, r in zip(operand_shape, window_dimensions, window_strides,
                                       padding, bdil, wdil):
        padded, extent = dilate_dim(d, b) + lo + hi, dilate_dim(w, r)
        out.append(0 if padded < extent else (padded - extent) // s + 1)
    return tuple(out)
