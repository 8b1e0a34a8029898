"""Convolutions of a dilated input as one dense convolution per output phase.

The input gradient of a strided convolution is a convolution of the output gradient dilated
by the stride (``lhs_dilation`` = s: s - 1 zeros between elements). Run as it is, s**d of its
multiply-adds (d spatial dimensions) multiply a zero. Along a dimension of stride s, output
``j = rho + s*q`` meets nonzero inputs only through the taps ``k = k0 + s*u`` with
``k0 = (lo - rho) mod s`` (``lo`` the low padding), reading input ``q + u + c`` with
``c = (rho + k0 - lo) / s``: so the outputs of each phase ``rho`` are a dense, stride-1
convolution of the undilated input by the kernel's taps of that phase (a strided slice of the
kernel; padding ``-c`` low). This pass, run before ``lower_convolutions``, writes each such
convolution (float, ungrouped, stride 1, no kernel dilation) as its s**d phase convolutions,
each ``ceil(n / s)`` outputs long, interleaved (one more axis of size 1 per spatial dimension,
concatenated, merged) and cropped to the output: the same sums, each over the same nonzero
terms, in the same tap order. A phase without taps (a kernel smaller than the stride) is zeros.
The pass keeps every output variable and its type.
"""

from __future__ import annotations

import math

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from fx.lax import base, structural
from fx.lax.convolution import conv_general_dilated_p


def split_dilated_convolutions(jaxpr: Jaxpr) -> Jaxpr:
    eqns: list[JaxprEqn] = []
    changed = False
    for eqn in jaxpr.eqns:
        new = _phases(eqn) if eqn.primitive is conv_general_dilated_p else None
        changed |= new is not None
        eqns += new if new is not None else [eqn]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns) if changed else jaxpr


def _eligible(eqn: JaxprEqn) -> bool:
    p = eqn.params
    lhs, rhs = eqn.invars
    res = eqn.outvars[0].aval
    return (any(d > 1 for d in p["lhs_dilation"]) and all(s == 1 for s in p["window_strides"])
            and all(r == 1 for r in p["rhs_dilation"]) and p["feature_group_count"] == 1
            and p["batch_group_count"] == 1 and isinstance(lhs, Var) and isinstance(rhs, Var)
            and dtypes.is_float(lhs.aval.dtype) and dtypes.is_float(res.dtype)
            and res.size > 0 and lhs.aval.size > 0)


def _phases(eqn: JaxprEqn) -> list[JaxprEqn] | None:
    if not _eligible(eqn):
        return None
    p = eqn.params
    lhs, rhs = eqn.invars
    (res,) = eqn.outvars
    ls, rs, os_ = p["dimension_numbers"]
    nsp = len(ls) - 2
    sizes = [lhs.aval.shape[d] for d in ls[2:]]
    kernel = [rhs.aval.shape[d] for d in rs[2:]]
    outs = [res.aval.shape[d] for d in os_[2:]]
    strides = p["lhs_dilation"]
    q = [-(-n // s) for n, s in zip(outs, strides)]
    new: list[JaxprEqn] = []
    src = eqn.source_info

    def emit(prim, invars, params):
        out = Var(prim.abstract_eval(*[v.aval for v in invars], **params))
        new.append(JaxprEqn(prim, list(invars), [out], params, src))
        return out

    phase_out = []  # (phase per dimension, its output) in row-major phase order
    for rho in np.ndindex(*strides):
        pads, start, taps = [], [], []
        for d in range(nsp):
            s, lo = strides[d], p["padding"][d][0]
            k0 = (lo - rho[d]) % s
            ku = len(range(k0, kernel[d], s))
            c = (rho[d] + k0 - lo) // s
            pads.append((-c, q[d] + ku - 1 - sizes[d] + c))
            start.append(k0)
            taps.append(ku)
        shape = list(res.aval.shape)
        for d in range(nsp):
            shape[os_[2 + d]] = q[d]
        if 0 in taps:
            zero = Literal(np.zeros((), res.aval.dtype), ShapedArray((), res.aval.dtype))
            phase_out.append(emit(base.broadcast_in_dim_p, [zero],
                                  {"shape": tuple(shape), "broadcast_dimensions": ()}))
            continue
        lo_idx, hi_idx, step = [0] * rhs.aval.ndim, list(rhs.aval.shape), [1] * rhs.aval.ndim
        for d in range(nsp):
            lo_idx[rs[2 + d]], step[rs[2 + d]] = start[d], strides[d]
        w = rhs
        if any(s != 1 for s in step) or any(lo_idx):
            w = emit(structural.slice_p, [rhs], {"start_indices": tuple(lo_idx),
                                                 "limit_indices": tuple(hi_idx),
                                                 "strides": tuple(step)})
        params = {**p, "padding": tuple(pads), "lhs_dilation": (1,) * nsp}
        phase_out.append(emit(conv_general_dilated_p, [lhs, w], params))
    # interleave: out[..., rho + s*q, ...] = phase rho's [..., q, ...], one spatial dim at a
    # time, innermost phases first
    grid = dict(zip(np.ndindex(*strides), phase_out))
    for d in reversed(range(nsp)):
        axis = os_[2 + d]
        merged = {}
        for rho in np.ndindex(*strides[:d]):
            parts = []
            for r in range(strides[d]):
                v = grid[(*rho, r)]
                shape = list(v.aval.shape)
                shape.insert(axis + 1, 1)
                parts.append(emit(base.broadcast_in_dim_p, [v], {
                    "shape": tuple(shape),
                    "broadcast_dimensions": tuple(i for i in range(len(shape))
                                                  if i != axis + 1)}))
            v = parts[0] if len(parts) == 1 else emit(structural.concatenate_p, parts,
                                                       {"dimension": axis + 1})
            shape = list(v.aval.shape)
            shape[axis:axis + 2] = [shape[axis] * shape[axis + 1]]
            merged[rho] = emit(base.reshape_p, [v], {"new_sizes": tuple(shape)})
        grid = merged
    (full,) = grid.values()
    if full.aval.shape != res.aval.shape:
        full = emit(structural.slice_p, [full], {"start_indices": (0,) * res.aval.ndim,
                                                 "limit_indices": tuple(res.aval.shape),
                                                 "strides": None})
    if full.aval != res.aval:
        return None  # (a weak type the pieces would not reproduce)
    new[-1] = new[-1].replace(outvars=[res])
    assert math.prod(res.aval.shape) > 0
    return new
