"""``conv_general_dilated``: N-d convolution (cross-correlation, as in XLA) with strides,
padding, input ("lhs", transposed-conv) and kernel ("rhs", atrous) dilation, and feature or
batch groups; plus the ``conv``/``conv_with_general_padding``/``conv_transpose`` wrappers.

Layouts are named by ``dimension_numbers``: strings such as ``('NCHW', 'OIHW', 'NCHW')`` or
``('NHWC', 'HWIO', 'NHWC')`` (spatial letters are matched by name and ordered as in the kernel
spec), or a :class:`ConvDimensionNumbers` of axis permutations ``(batch, feature, *spatial)``
for lhs and output and ``(out feature, in feature, *spatial)`` for the kernel. Per spatial
dimension the output has ``(padded - dilated_kernel) // stride + 1`` elements, where the input
is dilated by ``lhs_dilation`` then padded, and the kernel spans ``(k - 1) * rhs_dilation + 1``.

With ``feature_group_count = G`` the input features split into G groups, each convolved with
its own ``O / G`` kernels (depthwise when G equals the features). With ``batch_group_count =
B`` the *batch* splits into B groups (group-major), each convolved with its own ``O / B``
kernels and summed into one batch of ``N / B``: that is how the kernel gradient of a grouped
convolution is expressed, so the rules here stay within this one primitive.

The impl is im2col: a strided view of every window of the dilated, padded input, copied once
into a ``(groups, features * taps, positions)`` matrix and multiplied by the kernel with one
batched ``np.matmul`` (BLAS for floats). The primitive is bilinear: its jvp applies it to each
tangent, and both transposes are convolutions again (derived beside the rules).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.transpose import is_undefined
from fx.lax.base import full, reshape, shape_error
from fx.lax.base import transpose as transpose_axes
from fx.lax.elementwise import convert_element_type
from fx.lax.linalg import canonical_precision
from fx.lax.structural import rev
from fx.lax.windowed import dilate_and_pad, dilate_dim, padtype_to_pads, window_view

__all__ = [
    "ConvDimensionNumbers", "conv", "conv_dimension_numbers", "conv_general_dilated",
    "conv_transpose", "conv_with_general_padding",
]


class ConvDimensionNumbers(NamedTuple):
    """Axis permutations: ``lhs_spec = (batch, feature, *spatial)``, ``rhs_spec = (out
    feature, in feature, *spatial)``, ``out_spec = (batch, feature, *spatial)``."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def _specs_from_strings(lhs_shape, rhs_shape, specs) -> ConvDimensionNumbers:
    lhs_s, rhs_s, out_s = specs
    n = len(lhs_shape)
    for what, s, pair in (("lhs", lhs_s, "NC"), ("rhs", rhs_s, "OI"), ("out", out_s, "NC")):
        if len(s) != n or len(set(s)) != n or not set(pair) <= set(s):
            raise ValueError(
                f"conv_general_dilated: {what} spec {s!r} must name each of the {n} dimensions "
                f"once, including {pair[0]!r} and {pair[1]!r} (lhs {lhs_shape}, rhs {rhs_shape})")
    spatial = [c for c in rhs_s if c not in "OI"]
    for what, s in (("lhs", lhs_s), ("out", out_s)):
        if sorted(c for c in s if c not in "NC") != sorted(spatial):
            raise ValueError(
                f"conv_general_dilated: {what} spec {s!r} must have the kernel's spatial "
                f"dimensions {''.join(spatial)!r}")
    return ConvDimensionNumbers(
        (lhs_s.index("N"), lhs_s.index("C")) + tuple(lhs_s.index(c) for c in spatial),
        (rhs_s.index("O"), rhs_s.index("I")) + tuple(rhs_s.index(c) for c in spatial),
        (out_s.index("N"), out_s.index("C")) + tuple(out_s.index(c) for c in spatial))


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers) -> ConvDimensionNumbers:
    """Canonical :class:`ConvDimensionNumbers` from ``None`` (``NC...``/``OI...``), three
    spec strings, or three permutations.

    >>> fx.lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    n = len(lhs_shape)
    if len(rhs_shape) != n:
        raise TypeError(f"conv_general_dilated: lhs and rhs must have the same rank, got shapes "
                        f"{tuple(lhs_shape)} and {tuple(rhs_shape)}")
    if n < 2:
        raise TypeError(f"conv_general_dilated: operands need rank >= 2 (batch/feature "
                        f"dimensions), got shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}")
    if dimension_numbers is None:
        canon = tuple(range(n))
        return ConvDimensionNumbers(canon, canon, canon)
    if len(dimension_numbers) != 3:
        raise TypeError("conv_general_dilated: dimension_numbers must be None, three spec "
                        f"strings or a ConvDimensionNumbers, got {dimension_numbers!r}")
    if all(isinstance(s, str) for s in dimension_numbers):
        return _specs_from_strings(tuple(lhs_shape), tuple(rhs_shape), dimension_numbers)
    specs = tuple(tuple(int(d) for d in s) for s in dimension_numbers)
    for s in specs:
        if sorted(s) != list(range(n)):
            raise TypeError(f"conv_general_dilated: dimension_numbers {specs} must each be a "
                            f"permutation of range({n})")
    return ConvDimensionNumbers(*specs)


# --- the primitive --------------------------------------------------------------------------------

conv_general_dilated_p = Primitive("conv_general_dilated")
# params: window_strides, padding (pairs), lhs_dilation, rhs_dilation, dimension_numbers
# (ConvDimensionNumbers), feature_group_count, batch_group_count, precision,
# preferred_element_type (None or a dtype).


def _spatial(aval: ShapedArray, spec) -> tuple[int, ...]:
    return tuple(aval.shape[d] for d in spec[2:])


def conv_output_spatial(in_sizes, kernel_sizes, window_strides, padding, lhs_dilation,
                        rhs_dilation) -> tuple[int, ...]:
    out = []
    for n, k, s, (lo, hi), ld, rd in zip(in_sizes, kernel_sizes, window_strides, padding,
                                         lhs_dilation, rhs_dilation):
        padded = lo + dilate_dim(n, ld) + hi
        extent = dilate_dim(k, rd)
        out.append(0 if padded < extent else (padded - extent) // s + 1)
    return tuple(out)


@conv_general_dilated_p.def_abstract_eval
def _conv_abstract_eval(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
    name = "conv_general_dilated"
    if lhs.dtype != rhs.dtype:
        raise shape_error(name, "operands must have the same dtype; convert one with "
                          "fx.lax.convert_element_type", lhs, rhs)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    nsp = lhs.ndim - 2
    for what, v in (("window_strides", window_strides), ("padding", padding),
                    ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(v) != nsp:
            raise shape_error(name, f"{what} {v} needs one entry per spatial dimension ({nsp})",
                              lhs, rhs)
    for what, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                    ("rhs_dilation", rhs_dilation)):
        if any(s < 1 for s in v):
            raise shape_error(name, f"{what} {v} must be positive", lhs, rhs)
    n, c = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    o, i = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
    g, b = feature_group_count, batch_group_count
    if g < 1 or b < 1 or (g > 1 and b > 1):
        raise shape_error(name, f"feature_group_count ({g}) and batch_group_count ({b}) must "
                          "be positive, and at most one of them above 1", lhs, rhs)
    if c % g or c // g != i or o % g:
        raise shape_error(name, f"with feature_group_count={g}, the lhs features ({c}) must be "
                          f"{g} x the kernel's input features ({i}) and the kernel's output "
                          f"features ({o}) a multiple of {g}", lhs, rhs)
    if n % b or o % b:
        raise shape_error(name, f"with batch_group_count={b}, the lhs batch ({n}) and the "
                          f"kernel's output features ({o}) must be multiples of {b}", lhs, rhs)
    kernel = _spatial(rhs, rhs_spec)
    if any(k < 1 for k in kernel):
        raise shape_error(name, f"kernel spatial dimensions {kernel} must be positive",
                          lhs, rhs)
    _check_preferred(lhs.dtype, preferred_element_type)
    spatial = conv_output_spatial(_spatial(lhs, lhs_spec), kernel, window_strides, padding,
                                  lhs_dilation, rhs_dilation)
    shape = [0] * lhs.ndim
    for d, size in zip(out_spec, (n // b, o) + spatial):
        shape[d] = size
    if preferred_element_type is None:
        return ShapedArray(shape, lhs.dtype, lhs.weak_type and rhs.weak_type)
    return ShapedArray(shape, preferred_element_type)


def _check_preferred(dtype: np.dtype, preferred) -> None:
    if preferred is None or preferred == dtype:
        return
    if dtypes.is_float(dtype) and not dtypes.is_float(preferred):
        raise TypeError(f"conv_general_dilated: preferred_element_type {preferred} is not "
                        f"floating point, for {dtype} operands")
    if not dtypes.is_float(dtype) and dtype != dtypes.bool_ and (
            np.dtype(preferred).itemsize < dtype.itemsize):
        raise TypeError(f"conv_general_dilated: preferred_element_type {preferred} is narrower "
                        f"than the {dtype} operands")


def computation_dtype(in_dtype: np.dtype, out_dtype: np.dtype) -> np.dtype:
    """What the products are computed in: the wider of operand and result (a float result of
    integer operands computes in that float), float32 for half precision, int64 for bool."""
    if in_dtype == out_dtype:
        comp = in_dtype
    elif dtypes.is_float(out_dtype) and not dtypes.is_float(in_dtype):
        comp = out_dtype
    else:
        comp = max(in_dtype, out_dtype, key=lambda d: d.itemsize)
    if comp in (dtypes.float16, dtypes.bfloat16):
        return dtypes.float32
    return np.dtype(np.int64) if comp == dtypes.bool_ else comp


def conv_im2col(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                feature_group_count=1, batch_group_count=1):
    """The convolution of canonical-layout buffers: ``lhs (N, C, *S)``, ``rhs (O, I, *K)``
    gives ``(N / batch_group_count, O, *P)`` in the operands' dtype (NumPy or CuPy)."""
    nsp = lhs.ndim - 2
    n, c = lhs.shape[:2]
    o, i = rhs.shape[:2]
    kernel = rhs.shape[2:]
    xp = dilate_and_pad(lhs, (1, 1) + tuple(lhs_dilation), ((0, 0), (0, 0)) + tuple(padding), 0)
    win = window_view(xp, kernel, window_strides, rhs_dilation, axes=range(2, 2 + nsp))
    out_sp = win.shape[2:2 + nsp]
    p, k = math.prod(out_sp), math.prod(kernel)
    q = max(feature_group_count, batch_group_count)
    if batch_group_count > 1:  # (q, Nb, C, *P, *K): the batch is grouped
        batch, feats = n // q, c
        cols = np.moveaxis(win.reshape((q, batch, c) + out_sp + kernel), 1, 2)
    else:  # (N, q, Cq, *P, *K) -> (q, Cq, N, *P, *K): the features are grouped
        batch, feats = n, c // q
        cols = np.transpose(win.reshape((n, q, feats) + out_sp + kernel),
                            (1, 2, 0) + tuple(range(3, 3 + 2 * nsp)))
    # -> (q, features, *K, batch, *P), copied once into the matrix; output positions innermost
    # keeps the copy's inner loop long and unit-strided.
    taps = tuple(range(3 + nsp, 3 + 2 * nsp))
    cols = np.transpose(cols, (0, 1) + taps + (2,) + tuple(range(3, 3 + nsp)))
    cols = cols.reshape(q, feats * k, batch * p)
    prod = np.matmul(rhs.reshape(q, o // q, i * k), cols)  # (q, O/q, batch * P)
    prod = np.swapaxes(prod.reshape(q, o // q, batch, p), 1, 2)  # (q, batch, O/q, P)
    prod = np.swapaxes(prod, 0, 1)  # (batch, q, O/q, P)
    return prod.reshape((batch, o) + out_sp)


@conv_general_dilated_p.def_impl
def _conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, precision,
               preferred_element_type):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    comp = computation_dtype(lhs.dtype, out_dtype)
    out = conv_im2col(np.transpose(lhs, lhs_spec).astype(comp, copy=False),
                      np.transpose(rhs, rhs_spec).astype(comp, copy=False), window_strides,
                      padding, lhs_dilation, rhs_dilation, feature_group_count,
                      batch_group_count)
    if out_dtype == dtypes.bool_:
        out = out > 0
    return np.transpose(out, np.argsort(out_spec)).astype(out_dtype, copy=False)


# --- differentiation ------------------------------------------------------------------------------

jvp.defjvp(
    conv_general_dilated_p,
    lambda t, ans, lhs, rhs, **params: conv_general_dilated_p.bind(t, rhs, **params),
    lambda t, ans, lhs, rhs, **params: conv_general_dilated_p.bind(lhs, t, **params),
)


def _inverse(perm: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argsort(perm))


def _as_operand_dtype(ct, other, aval: ShapedArray):
    """Cotangent and the other operand in one dtype (they differ under
    ``preferred_element_type``); returns them and a function restoring ``aval``'s dtype."""
    ct_dt, other_dt = get_aval(ct).dtype, get_aval(other).dtype
    if ct_dt != other_dt:
        common, _ = dtypes.join((ct_dt, False), (other_dt, False))
        ct, other = convert_element_type(ct, common), convert_element_type(other, common)
    return ct, other, lambda x: convert_element_type(x, aval.dtype, aval.weak_type)


def _conv_transpose_lhs(ct, rhs, lhs_aval: ShapedArray, *, window_strides, padding,
                        lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision):
    # Input element x (at lo + x*ld of the dilated, padded input) meets output y through tap k
    # when y*s + k*r == lo + x*ld. Spreading ct by the strides (lhs_dilation = s), padding it by
    # (K-1)*r - lo and sliding the flipped kernel with stride ld visits exactly those pairs;
    # the kernel's in/out features swap roles.
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    r_aval = get_aval(rhs)
    pads = []
    for n, k, m, s, (lo, _), ld, rd in zip(
            _spatial(lhs_aval, lhs_spec), _spatial(r_aval, rhs_spec),
            _spatial(get_aval(ct), out_spec), window_strides, padding, lhs_dilation,
            rhs_dilation):
        extent = dilate_dim(k, rd)
        low = extent - 1 - lo
        pads.append((low, dilate_dim(n, ld) - 1 + extent - low - dilate_dim(m, s)))
    flipped = rev(rhs, rhs_spec[2:])
    common = dict(window_strides=tuple(lhs_dilation), padding=tuple(pads),
                  lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
                  precision=precision, preferred_element_type=None)
    q = max(feature_group_count, batch_group_count)
    if q == 1:
        kspec = (rhs_spec[1], rhs_spec[0]) + tuple(rhs_spec[2:])
        return conv_general_dilated_p.bind(
            ct, flipped, dimension_numbers=ConvDimensionNumbers(out_spec, kspec, lhs_spec),
            feature_group_count=1, batch_group_count=1, **common)
    # Groups: kernel (q*Oq, I, *K) becomes (q*I, Oq, *K), each group's in/out swapped.
    kc = transpose_axes(flipped, rhs_spec)
    o, i = get_aval(kc).shape[:2]
    ks = get_aval(kc).shape[2:]
    kc = transpose_axes(reshape(kc, (q, o // q, i) + ks), (0, 2, 1) + tuple(range(3, 3 + len(ks))))
    kc = reshape(kc, (q * i, o // q) + ks)
    canon = tuple(range(len(lhs_spec)))
    if batch_group_count == 1:
        return conv_general_dilated_p.bind(
            ct, kc, dimension_numbers=ConvDimensionNumbers(out_spec, canon, lhs_spec),
            feature_group_count=q, batch_group_count=1, **common)
    # Batch groups: group g's input cotangent comes out as feature block g; move it to the
    # batch, group-major.
    out = conv_general_dilated_p.bind(
        ct, kc, dimension_numbers=ConvDimensionNumbers(out_spec, canon, canon),
        feature_group_count=q, batch_group_count=1, **common)
    nb, _, *sp = get_aval(out).shape
    out = reshape(out, (nb, q, i) + tuple(sp))
    out = transpose_axes(out, (1, 0) + tuple(range(2, 3 + len(sp))))
    out = reshape(out, (q * nb, i) + tuple(sp))
    return transpose_axes(out, _inverse(lhs_spec))


def _conv_transpose_rhs(ct, lhs, rhs_aval: ShapedArray, *, window_strides, padding,
                        lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision):
    # ct_rhs[o, c, k] sums ct[n, o, y] * input[n, c, y*s + k*r]: a convolution of the input
    # (batch and features swapped) with ct as the kernel, striding by r and dilating ct by s.
    # The high padding makes exactly K outputs. Feature groups become batch groups and back.
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    pads = []
    for n, k, m, s, (lo, _), ld, rd in zip(
            _spatial(get_aval(lhs), lhs_spec), _spatial(rhs_aval, rhs_spec),
            _spatial(get_aval(ct), out_spec), window_strides, padding, lhs_dilation,
            rhs_dilation):
        pads.append((lo, (k - 1) * rd + (m - 1) * s - lo - (dilate_dim(n, ld) - 1)))

    def swap(spec):
        return (spec[1], spec[0]) + tuple(spec[2:])

    return conv_general_dilated_p.bind(
        lhs, ct, window_strides=tuple(rhs_dilation), padding=tuple(pads),
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
        dimension_numbers=ConvDimensionNumbers(swap(lhs_spec), swap(out_spec), swap(rhs_spec)),
        feature_group_count=batch_group_count, batch_group_count=feature_group_count,
        precision=precision, preferred_element_type=None)


def _conv_transpose(ct, lhs, rhs, *, preferred_element_type, **params):
    if is_undefined(lhs) and is_undefined(rhs):
        raise ValueError("conv_general_dilated: cannot transpose with respect to both operands "
                         "at once (the convolution is bilinear, not linear)")
    ct_size = get_aval(ct).size
    if is_undefined(lhs):
        aval, other = lhs.aval, rhs
    else:
        aval, other = rhs.aval, lhs
    if ct_size == 0 or aval.size == 0 or get_aval(other).size == 0:
        zero = full(aval.shape, 0, aval.dtype)
        return [zero, None] if is_undefined(lhs) else [None, zero]
    ct, other, restore = _as_operand_dtype(ct, other, aval)
    if is_undefined(lhs):
        return [restore(_conv_transpose_lhs(ct, other, aval, **params)), None]
    return [None, restore(_conv_transpose_rhs(ct, other, aval, **params))]


transpose.deftranspose(conv_general_dilated_p, _conv_transpose)


# --- batching -------------------------------------------------------------------------------------


def _fold_in(x, bdim: int, dim: int, groups: int = 1):
    """Merge ``x``'s batch dimension (at ``bdim``) into dimension ``dim`` of the unbatched
    layout, in the order (groups, batch, rest): group structure of ``dim`` is kept."""
    x = batching.moveaxis(x, bdim, dim)  # batch at dim, the target right after it
    shape = get_aval(x).shape
    size, rest = shape[dim + 1], shape[dim + 1] // groups
    if groups > 1:
        x = reshape(x, shape[:dim] + (shape[dim], groups, rest) + shape[dim + 2:])
        x = batching.moveaxis(x, dim + 1, dim)
    return reshape(x, shape[:dim] + (shape[dim] * size,) + shape[dim + 2:])


def _fold_out(x, dim: int, size: int, groups: int = 1):
    """Split dimension ``dim`` ordered (groups, batch, rest) into a batch dimension at ``dim``
    followed by (groups, rest)."""
    shape = get_aval(x).shape
    rest = shape[dim] // (groups * size)
    x = reshape(x, shape[:dim] + (groups, size, rest) + shape[dim + 1:])
    x = batching.moveaxis(x, dim + 1, dim)
    return reshape(x, shape[:dim] + (size, groups * rest) + shape[dim + 1:])


def _conv_batch(axis, vals, dims, **params):
    lhs, rhs = vals
    dl, dr = dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    g, b = params["feature_group_count"], params["batch_group_count"]
    size = axis.size
    if dl is not None and dr is not None:
        # Each example is its own group: features (or, with batch groups, the batch) of the
        # lhs and the kernels' outputs gain a leading block per example.
        rhs = _fold_in(rhs, dr, rhs_spec[0])
        if b > 1:
            lhs = _fold_in(lhs, dl, lhs_spec[0])
            params = dict(params, batch_group_count=b * size)
        else:
            lhs = _fold_in(lhs, dl, lhs_spec[1])
            params = dict(params, feature_group_count=g * size)
        out = conv_general_dilated_p.bind(lhs, rhs, **params)
        return _fold_out(out, out_spec[1], size), out_spec[1]
    if dl is not None:
        lhs = _fold_in(lhs, dl, lhs_spec[0], groups=b)
        out = conv_general_dilated_p.bind(lhs, rhs, **params)
        return _fold_out(out, out_spec[0], size), out_spec[0]
    q = max(g, b)
    rhs = _fold_in(rhs, dr, rhs_spec[0], groups=q)
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    return _fold_out(out, out_spec[1], size, groups=q), out_spec[1]


batching.batch_rules[conv_general_dilated_p] = _conv_batch


# --- the fx.lax functions -------------------------------------------------------------------------


def _ints(what: str, v, n: int) -> tuple[int, ...]:
    if v is None:
        return (1,) * n
    out = tuple(int(i) for i in v)
    if len(out) != n:
        raise ValueError(f"conv_general_dilated: {what} {tuple(v)} needs one entry per spatial "
                         f"dimension ({n})")
    return out


def conv_general_dilated(lhs, rhs, window_strides: Sequence[int], padding,
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None, dimension_numbers=None,
                         feature_group_count: int = 1, batch_group_count: int = 1,
                         precision=None, preferred_element_type=None):
    """General N-d convolution (cross-correlation), as ``jax.lax.conv_general_dilated``.

    ``padding`` is ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'`` or ``(low, high)`` pairs (negative
    crops); string padding is not allowed with ``lhs_dilation`` (use explicit pairs or
    :func:`conv_transpose`). See the module docstring for layouts and groups.

    >>> x = fx.numpy.ones((1, 5, 5, 3))                      # NHWC
    >>> w = fx.numpy.ones((3, 3, 3, 8))                      # HWIO
    >>> fx.lax.conv_general_dilated(x, w, (1, 1), "SAME",
    ...     dimension_numbers=("NHWC", "HWIO", "NHWC")).shape
    (1, 5, 5, 8)
    """
    la, ra = get_aval(lhs), get_aval(rhs)
    dnums = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nsp = la.ndim - 2
    strides = _ints("window_strides", window_strides, nsp)
    ldil = _ints("lhs_dilation", lhs_dilation, nsp)
    rdil = _ints("rhs_dilation", rhs_dilation, nsp)
    if isinstance(padding, str):
        if any(d != 1 for d in ldil):
            raise ValueError(
                "conv_general_dilated: string padding is not supported with lhs_dilation "
                "(a transposed convolution); give (low, high) pairs or use fx.lax.conv_transpose")
        kernel = [dilate_dim(ra.shape[d], r) for d, r in zip(dnums.rhs_spec[2:], rdil)]
        pads = tuple(padtype_to_pads([la.shape[d] for d in dnums.lhs_spec[2:]], kernel,
                                     strides, padding))
    else:
        try:
            pads = tuple((int(lo), int(hi)) for lo, hi in padding)
        except (TypeError, ValueError):
            raise ValueError("conv_general_dilated: padding must be a string or a sequence of "
                             f"(low, high) pairs, got {padding!r}") from None
        if len(pads) != nsp:
            raise ValueError(f"conv_general_dilated: padding {pads} needs one pair per spatial "
                             f"dimension ({nsp})")
    pet = None if preferred_element_type is None else dtypes.canonicalize(preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=ldil, rhs_dilation=rdil,
        dimension_numbers=dnums, feature_group_count=int(feature_group_count),
        batch_group_count=int(batch_group_count), precision=canonical_precision(precision),
        preferred_element_type=pet)


def conv(lhs, rhs, window_strides: Sequence[int], padding, precision=None,
         preferred_element_type=None):
    """Convolution of ``NC...`` inputs with ``OI...`` kernels (no dilation, no groups).

    >>> fx.lax.conv(fx.numpy.ones((2, 3, 8, 8)), fx.numpy.ones((4, 3, 3, 3)), (1, 1),
    ...             "VALID").shape
    (2, 4, 6, 6)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides: Sequence[int], padding,
                              lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision=None,
                              preferred_element_type=None):
    """:func:`conv` with explicit padding and dilations (``NC...``/``OI...`` layouts)."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_conv_padding(k: int, s: int, padding) -> tuple[int, int]:
    """Edges of the strided-up input so a transposed conv gives the forward conv's input size
    (keras' Conv2DTranspose convention, as jax)."""
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        low = k - 1
    else:
        low, high = (k - 1 - p for p in padding)
        return low, high
    return low, total - low


def conv_transpose(lhs, rhs, strides: Sequence[int], padding,
                   rhs_dilation: Sequence[int] | None = None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None,
                   use_consistent_padding: bool = False):
    """The "transposed" (fractionally strided) convolution, as ``jax.lax.conv_transpose``:
    the input is dilated by ``strides`` and convolved with stride 1.

    Default layouts are ``NHWC``/``HWIO`` (for rank 3 to 5). ``'SAME'``/``'VALID'`` name the
    padding of the forward convolution; explicit pairs are the transposed conv's own padding
    unless ``use_consistent_padding`` (then they are the forward padding, as in PyTorch).
    ``transpose_kernel`` flips the kernel and swaps its feature axes (TensorFlow's convention).

    >>> fx.lax.conv_transpose(fx.numpy.ones((1, 4, 4, 2)), fx.numpy.ones((3, 3, 2, 5)),
    ...                       (2, 2), "SAME").shape
    (1, 8, 8, 5)
    """
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise TypeError(f"conv_transpose: lhs and rhs need the same rank >= 2, got "
                        f"{la.str_short()} and {ra.str_short()}")
    if dimension_numbers is None:
        if la.ndim > 5:
            raise ValueError("conv_transpose: no default dimension_numbers for more than 3 "
                             "spatial dimensions; pass them explicitly")
        sp = "HWD"[:la.ndim - 2]
        dimension_numbers = ("N" + sp + "C", sp + "IO", "N" + sp + "C")
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nsp = la.ndim - 2
    rdil = _ints("rhs_dilation", rhs_dilation, nsp)
    strides = _ints("strides", strides, nsp)
    kernel = [dilate_dim(ra.shape[d], r) for d, r in zip(dn.rhs_spec[2:], rdil)]
    if use_consistent_padding or padding in ("SAME", "VALID"):
        per_dim = [padding] * nsp if isinstance(padding, str) else list(padding)
        pads = [_transpose_conv_padding(k, s, p) for k, s, p in zip(kernel, strides, per_dim)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, dn.rhs_spec[2:])
        perm = list(range(ra.ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = transpose_axes(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, strides, rdil, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)
