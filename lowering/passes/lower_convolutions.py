"""Convolutions as matrix products: ``conv_general_dilated`` → ``conv_patches`` + ``dot_general``.

Every ungrouped floating-point convolution becomes a window gather of its channels-last
input and one ``dot_general`` with the kernel (BLAS or cuBLAS, with the bias and activation
epilogue fused after it like any matmul), plus the transposes its dimension numbers ask for
(none for NHWC/HWIO). On the CPU a float32 product of patches then becomes one generated
kernel reading the gather's operand in place, the epilogue in its store
(:mod:`fx.lowering.kernels.cpu.conv_in_place`): the gather is the form the passes reason
about, not a buffer the program writes. The weight gradient reverse mode makes — a
convolution of the forward input with the output gradient as its "kernel", whose window is
larger than its output — is written in the swapped form: the patches of the forward input
with the forward geometry, contracted over batch and positions. Those patches are exactly
the forward pass's, so CSE computes them once for both.

An int8 × int8 → int32 convolution (``fx.quant``'s) becomes the same gather and product
(never the swapped form), which operator selection gives the exact int8 GEMM kernel
(``int8_gemm``) where the kernel's layout is ``(O, *window, I)`` or ``(*window, I, O)``: a
matrix of rows or columns in the patches' feature order.

A floating-point convolution contracting at most ``SMALL_K`` terms per output (a first layer:
3x3 taps of one channel) becomes no product at all but a sum of that many elementwise products
(see ``_unrolled``), after an explicit pad of its input: the gather, the products and the
bias, activation and pooling after them then fuse into one generated kernel.

A 1x1 convolution of stride 1 without padding or dilation needs no gather: the product reads
its input directly. Grouped convolutions (``feature_group_count`` or ``batch_group_count``
above 1), other integer or bool ones, and those a library implementation does more cheaply
than the product form (Winograd, for 3x3 kernels with many channels, where the CPU's kernel
reading the input in place cannot run them) stay as they are, for operator selection
among the implementations in :mod:`fx.lowering.kernels.cpu.conv`. The pass is pure and keeps
every output variable and its type.
"""

from __future__ import annotations

import math

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from fx.lax import base, elementwise, linalg, structural
from fx.lax.convolution import conv_general_dilated_p
from fx.lowering.codegen.conv_patches import conv_patches_p, patches_shape
from fx.lowering.kernels.cpu import conv_in_place
from fx.lowering.kernels.cpu.conv import (
    conv_flops,
    patches_matmul_cost,
    winograd_cost,
    winograd_eligible,
)


def lower_convolutions(jaxpr: Jaxpr) -> Jaxpr:
    eqns: list[JaxprEqn] = []
    for eqn in jaxpr.eqns:
        new = _as_matmul(eqn) if eqn.primitive is conv_general_dilated_p else None
        eqns += new if new is not None else [eqn]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)


def _transposed(x, perm, eqn: JaxprEqn, out: list[JaxprEqn]):
    """``x`` transposed by ``perm`` (an equation appended to ``out``), or ``x`` itself."""
    perm = tuple(int(d) for d in perm)
    if perm == tuple(range(len(perm))):
        return x
    v = Var(x.aval.update(shape=tuple(x.aval.shape[d] for d in perm)))
    out.append(JaxprEqn(base.transpose_p, [x], [v], {"permutation": perm}, eqn.source_info))
    return v


def _patches(x, eqn: JaxprEqn, out: list[JaxprEqn], **params):
    params = {k: tuple(tuple(int(a) for a in p) if isinstance(p, tuple) else int(p)
                       for p in v) for k, v in params.items()}
    shape = patches_shape(x.aval.shape, **params)
    nsp = len(params["window_dimensions"])
    if (all(k == 1 for k in params["window_dimensions"])
            and all(s == 1 for s in params["window_strides"])
            and all(d == 1 for d in params["base_dilation"])
            and all(pad == (0, 0) for pad in params["padding"])):
        # Every window is one element: the patches are the operand (a reshape, read in place).
        op, params = base.reshape_p, {"new_sizes": shape}
        assert shape[:1 + nsp] == x.aval.shape[:1 + nsp]
    else:
        op = conv_patches_p
    v = Var(x.aval.update(shape=shape, weak_type=False))
    out.append(JaxprEqn(op, [x], [v], params, eqn.source_info))
    return v


def _is_int8_conv(eqn: JaxprEqn) -> bool:
    lhs, rhs = eqn.invars
    return (lhs.aval.dtype == dtypes.int8 and rhs.aval.dtype == dtypes.int8
            and eqn.outvars[0].aval.dtype == dtypes.int32)


def _as_matmul(eqn: JaxprEqn) -> list[JaxprEqn] | None:
    p = eqn.params
    lhs, rhs = eqn.invars
    (res,) = eqn.outvars
    int8 = _is_int8_conv(eqn)
    if (p["feature_group_count"] != 1 or p["batch_group_count"] != 1
            or not (int8 or dtypes.is_float(lhs.aval.dtype) and dtypes.is_float(res.aval.dtype))
            or not isinstance(lhs, Var) or not isinstance(rhs, Var) or res.aval.size == 0):
        return None
    if not int8 and winograd_eligible(eqn) and winograd_cost(eqn) < _product_cost(eqn):
        return None
    ls, rs, os_ = p["dimension_numbers"]
    nsp = lhs.aval.ndim - 2
    kernel = tuple(rhs.aval.shape[d] for d in rs[2:])
    out_spatial = tuple(res.aval.shape[d] for d in os_[2:])
    new: list[JaxprEqn] = []
    geometry = dict(padding=p["padding"], base_dilation=p["lhs_dilation"])
    small = _small(eqn, int8)  # a sum of products, over the forward form's trailing taps
    if (not int8 and not small and math.prod(kernel) > math.prod(out_spatial)
            and _swappable(lhs, ls, kernel, out_spatial, p)):
        # out[b, q, o] = sum_{f, k} lhs[b, q*s + k*r, f] rhs[k, f, o], read with the roles of
        # batch and feature, window and position swapped: the patches of lhs with f as the
        # batch, the output positions q as the window (dilated by s) and k as the positions
        # (stride r). Contracting (f, k) leaves (*q, b, o).
        x = _transposed(lhs, (ls[1], *ls[2:], ls[0]), eqn, new)
        pat = _patches(x, eqn, new, window_dimensions=out_spatial,
                       window_strides=p["rhs_dilation"], window_dilation=p["window_strides"],
                       **geometry)
        contract = ((0, *range(1, 1 + nsp)), (rs[1], *rs[2:]))
        where = {os_[0]: nsp, os_[1]: nsp + 1, **{d: i for i, d in enumerate(os_[2:])}}
    else:
        x = _transposed(lhs, (ls[0], *ls[2:], ls[1]), eqn, new)
        if small and _pads(p):
            # The sum of products reads every input element up to K times: padded once into
            # a buffer, its reads need no bounds tests (fusion keeps a pad read many times
            # apart), where inside the one kernel each tap tested its position per output.
            x = _padded(x, p, eqn, new)
            geometry = dict(padding=((0, 0),) * nsp, base_dilation=(1,) * nsp)
        pat = _patches(x, eqn, new, window_dimensions=kernel, window_strides=p["window_strides"],
                       window_dilation=p["rhs_dilation"], **geometry)
        contract = ((*range(1 + nsp, 1 + 2 * nsp), 1 + 2 * nsp), (*rs[2:], rs[1]))
        where = {os_[0]: 0, os_[1]: nsp + 1, **{d: 1 + i for i, d in enumerate(os_[2:])}}
    dims = (tuple(int(d) for d in contract[0]), tuple(int(d) for d in contract[1]))
    dot_params = {"dimension_numbers": (dims, ((), ())), "precision": p["precision"],
                  "preferred_element_type": p["preferred_element_type"]}
    prod_aval = linalg.dot_general_p.abstract_eval(pat.aval, rhs.aval, **dot_params)
    perm = tuple(where[d] for d in range(res.aval.ndim))
    if prod_aval.update(shape=tuple(prod_aval.shape[d] for d in perm)) != res.aval:
        return None  # (a weak type the product would not reproduce, say)
    if small:
        prod = res if perm == tuple(range(len(perm))) else Var(prod_aval)
        _unrolled(pat, rhs, dims, prod, eqn, new)
        if prod is not res:
            new.append(JaxprEqn(base.transpose_p, [prod], [res], {"permutation": perm},
                                eqn.source_info))
        return new
    if perm == tuple(range(len(perm))):
        new.append(JaxprEqn(linalg.dot_general_p, [pat, rhs], [res], dot_params,
                            eqn.source_info))
    else:
        prod = Var(prod_aval)
        new.append(JaxprEqn(linalg.dot_general_p, [pat, rhs], [prod], dot_params,
                            eqn.source_info))
        new.append(JaxprEqn(base.transpose_p, [prod], [res], {"permutation": perm},
                            eqn.source_info))
    return new


def _product_cost(eqn: JaxprEqn) -> float:
    """What the product form costs: the kernel reading the input in place where the CPU
    runs it (``kernels.cpu.conv_in_place``), else the patches and a BLAS product."""
    if conv_in_place.available(eqn.outvars[0].aval.dtype):
        return min(patches_matmul_cost(eqn), conv_in_place.cost(conv_flops(eqn)))
    return patches_matmul_cost(eqn)


# Convolutions whose contraction is tiny (a first layer: 3x3 taps of one channel) are sums of
# at most SMALL_K products, not a patches matrix and a matmul: see _unrolled.
SMALL_K = 9


def _small(eqn: JaxprEqn, int8: bool) -> bool:
    """Whether the (ungrouped, float) convolution is written as a sum of products: at most
    ``SMALL_K`` terms per output, all of one dtype."""
    lhs, rhs = eqn.invars
    res = eqn.outvars[0].aval
    p = eqn.params
    o = p["dimension_numbers"][1][0]
    return (not int8 and rhs.aval.ndim > 2 and rhs.aval.size // rhs.aval.shape[o] <= SMALL_K
            and lhs.aval.dtype == rhs.aval.dtype == res.dtype
            and p["preferred_element_type"] in (None, res.dtype))


def _pads(p) -> bool:
    return any(pad != (0, 0) for pad in p["padding"]) or any(d != 1 for d in p["lhs_dilation"])


def _padded(x: Var, p, eqn: JaxprEqn, new: list[JaxprEqn]) -> Var:
    """``x`` (channels last) with the convolution's padding and input dilation applied."""
    config = ((0, 0, 0), *((int(lo), int(hi), int(d) - 1)
                           for (lo, hi), d in zip(p["padding"], p["lhs_dilation"])), (0, 0, 0))
    zero = Literal(np.zeros((), x.aval.dtype), ShapedArray((), x.aval.dtype))
    aval = structural.pad_p.abstract_eval(x.aval, zero.aval, padding_config=config)
    v = Var(aval)
    new.append(JaxprEqn(structural.pad_p, [x, zero], [v], {"padding_config": config},
                        eqn.source_info))
    return v


def _unrolled(pat: Var, rhs: Var, contract, out: Var, eqn: JaxprEqn, new: list[JaxprEqn]) -> None:
    """``out = dot_general(pat, rhs)`` (the patches' trailing dimensions contracted with
    ``rhs``'s, whose one other dimension is the output features) as the sum, in the
    contraction's row-major order, of one product per contracted index k: the patches' value
    at k for every output position times the kernel's row k, each broadcast to the output.
    All of it elementwise, so the gather, the products, the bias and activation after them
    and a pooling window become one generated kernel, and nothing the size of the patches is
    written (LeNet's first layer, K = 9 and 16 features, wrote the patches, the product and
    the product plus bias, each a pass over memory larger than the input). Six equations per
    k: a group holds at most ``MAX_GROUP_EQNS``."""
    lc, rc = contract
    a = pat.aval
    na = a.ndim - len(lc)
    shape = out.aval.shape
    k = math.prod(a.shape[d] for d in lc)

    def emit(prim, invars, params):
        var = Var(prim.abstract_eval(*[v.aval for v in invars], **params))
        new.append(JaxprEqn(prim, list(invars), [var], params, eqn.source_info))
        return var

    def reshape(x, sizes):
        return emit(base.reshape_p, [x], {"new_sizes": tuple(sizes)})

    def at(x, axis, i, dims):  # x's index i of ``axis`` (kept, of size 1), broadcast to out
        start, limit = [0] * x.aval.ndim, list(x.aval.shape)
        start[axis], limit[axis] = i, i + 1
        s = emit(structural.slice_p, [x], {"start_indices": tuple(start),
                                            "limit_indices": tuple(limit), "strides": None})
        return emit(base.broadcast_in_dim_p, [s], {"shape": tuple(shape),
                                                   "broadcast_dimensions": dims})

    rows = reshape(pat, (*a.shape[:na], k))  # (positions..., k)
    (o,) = [d for d in range(rhs.aval.ndim) if d not in rc]
    w = _transposed(rhs, (*rc, o), eqn, new)
    w = reshape(w, (k, rhs.aval.shape[o]))  # (k, features)
    acc = None
    for i in range(k):
        term = emit(elementwise.mul_p, [at(rows, na, i, tuple(range(na + 1))),
                                        at(w, 0, i, (na - 1, na))], {})
        acc = term if acc is None else emit(elementwise.add_p, [acc, term], {})
    new[-1] = new[-1].replace(outvars=[out])  # the last sum is the product


def _swappable(lhs, ls, kernel, out_spatial, p) -> bool:
    """The swapped form's positions are exactly the kernel's spatial sizes (a stride that
    does not divide the padded extent leaves a remainder that form would read too)."""
    sizes = patches_shape((1, *(lhs.aval.shape[d] for d in ls[2:]), 1), out_spatial,
                          p["rhs_dilation"], p["padding"], p["lhs_dilation"],
                          p["window_strides"])[1:1 + len(kernel)]
    return tuple(sizes) == tuple(kernel)
