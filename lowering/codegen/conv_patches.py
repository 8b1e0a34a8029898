"""``conv_patches``: the compiler's window gather, from which convolutions become matmuls.

A compiler-internal primitive (made by :func:`fx.lowering.passes.lower_convolutions`, after every
transformation has run, so it needs no jvp, transpose or batching rule). Its operand is
channels-last, ``(B, *S, F)``; the result ``(B, *Q, *K, F)`` holds at ``[b, q, k, f]`` the
operand padded by ``padding`` and dilated by ``base_dilation`` (zeros in between), read at
``q * window_strides + k * window_dilation`` per spatial dimension. A convolution is then
one ``dot_general`` contracting ``(*K, F)`` with the kernel, which BLAS (or cuBLAS) runs, and
its weight gradient the product contracting ``(B, *Q)`` of the same patches — so the forward
pass and the weight gradient share one gather.

In generated kernels the gather is an index map (a padded, dilated window read, as pooling's),
so it writes the matrix in one pass and fuses with cheap producers.

params: ``window_dimensions`` (K), ``window_strides``, ``padding`` (pairs),
``base_dilation``, ``window_dilation``; one entry per spatial dimension each.
"""

from __future__ import annotations

import math

import numpy as np

from fx.avals import ShapedArray
from fx.core import Primitive
from fx.lax.windowed import dilate_and_pad, dilate_dim, window_view, windows_out_size
from fx.lowering.codegen import kernel_ir as ir
from fx.lowering.codegen.kernel_builder import KernelBuilder, index_maps
from fx.lowering.codegen.window_maps import _read
from fx.lowering.fusion.primitive_rules import (
    Pattern,
    compute_dtype,
    gathers,
    patterns,
    windows_overlap,
)

conv_patches_p = Primitive("conv_patches")


def patches_product_flops(eqn) -> float:
    """The flops of a product of ``conv_patches(x)`` that reads ``x`` itself (the primitives
    ``conv_in_place`` and ``int8_packed_conv``: operand ``x``, params ``patches`` and the
    dot's ``dimension_numbers``): 2 x the contracted patch elements per output."""
    (lc, _), _ = eqn.params["dimension_numbers"]
    pat = patches_shape(eqn.invars[0].aval.shape, **dict(eqn.params["patches"]))
    return 2.0 * math.prod(pat[d] for d in lc) * eqn.outvars[0].aval.size


def patches_shape(shape, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation) -> tuple[int, ...]:
    b, *spatial, f = shape
    q = tuple(windows_out_size(lo + dilate_dim(n, bd) + hi, dilate_dim(k, wd), s)
              for n, k, s, (lo, hi), bd, wd in zip(spatial, window_dimensions, window_strides,
                                                   padding, base_dilation, window_dilation))
    return (b, *q, *window_dimensions, f)


@conv_patches_p.def_abstract_eval
def _abstract_eval(x, **params):
    if x.ndim < 2 or len(params["window_dimensions"]) != x.ndim - 2:
        raise TypeError(f"conv_patches: operand {x.str_short()} must be (batch, *spatial, "
                        f"features) with one window dimension per spatial dimension, got "
                        f"{params['window_dimensions']}")
    return ShapedArray(patches_shape(x.shape, **params), x.dtype)


@conv_patches_p.def_impl
def _impl(x, *, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    nsp = x.ndim - 2
    xp = dilate_and_pad(x, (1, *base_dilation, 1), ((0, 0), *padding, (0, 0)), 0)
    win = window_view(xp, window_dimensions, window_strides, window_dilation,
                      axes=range(1, 1 + nsp))  # (B, *Q, F, *K)
    order = (0, *range(1, 1 + nsp), *range(2 + nsp, 2 + 2 * nsp), 1 + nsp)
    return np.ascontiguousarray(np.transpose(win, order))


def _patches_map(b: KernelBuilder, eqn, index):
    """Element ``[b, q, k, f]``: the operand at ``q * stride + k * dilation - pad_low``, or 0
    in the padding and between base-dilated elements."""
    x = eqn.invars[0]
    p = eqn.params
    nsp = x.aval.ndim - 2
    batch, q, k, f = index[0], index[1:1 + nsp], index[1 + nsp:1 + 2 * nsp], index[-1]
    full = {  # the window geometry over every operand dimension (trivial on batch, features)
        "window_dimensions": (1, *p["window_dimensions"], 1),
        "window_strides": (1, *p["window_strides"], 1),
        "window_dilation": (1, *p["window_dilation"], 1),
        "base_dilation": (1, *p["base_dilation"], 1),
        "padding": ((0, 0), *p["padding"], (0, 0)),
    }
    zero = ir.Const(0, compute_dtype(x.aval.dtype))
    out_shape = (x.aval.shape[0], *eqn.outvars[0].aval.shape[1:1 + nsp], x.aval.shape[-1])
    return _read(b, x, (batch, *q, f), out_shape, (ir.const_index(0), *k, ir.const_index(0)),
                 full, zero)


patterns[conv_patches_p] = Pattern.INJECTIVE
gathers[conv_patches_p] = lambda e: windows_overlap(
    e.params["window_dimensions"], e.params["window_strides"], e.params["window_dilation"])
index_maps[conv_patches_p] = _patches_map
