"""Window sums over a spread operand as a repeat: the gradient of pooling without overlap.

Reverse mode transposes ``reduce_window_sum`` (average pooling, and sum pooling) by spreading
the cotangent out with zeros (a ``pad`` whose interior padding is the stride minus one) and
summing windows of it, as jax does. Where along each dimension a window is exactly one stride
long (pooling windows that tile the input: ``AvgPool((2, 2), (2, 2))``) or the cotangent has
one element (a global average pool), every window of the spread operand holds one of the
cotangent's elements or none: the window sum is that element repeated ``window`` times along
each dimension, cropped or padded with zeros to the output. A generated kernel summing the
windows reads every window element through the pad's index map (a 16x16 global pool: 256
guarded reads per output); the repeat reads one.

The rewrite is exact: the sum of one element ``v`` and zeros is ``v + 0.0`` (``+0.0`` where
``v`` is ``-0.0``; ``v`` itself otherwise, infinities and NaN included), which the rewritten
program computes for float dtypes; integer sums are the element itself. The pass keeps every
output variable and its type.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from fx.lax import base, elementwise, structural
from fx.lax.windowed import reduce_window_sum_p


def expand_window_sums(jaxpr: Jaxpr) -> Jaxpr:
    made = {v: e for e in jaxpr.eqns for v in e.outvars}
    eqns: list[JaxprEqn] = []
    changed = False
    for eqn in jaxpr.eqns:
        new = _repeat(eqn, made) if eqn.primitive is reduce_window_sum_p else None
        changed |= new is not None
        eqns += new if new is not None else [eqn]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns) if changed else jaxpr


def _zero(v) -> bool:
    return (isinstance(v, Literal) and v.value.shape == ()
            and v.value.tobytes() == np.zeros((), v.value.dtype).tobytes())


def _repeat(eqn: JaxprEqn, made: dict) -> list[JaxprEqn] | None:
    p = eqn.params
    spread = eqn.invars[0]
    pad = made.get(spread)
    if (pad is None or pad.primitive is not structural.pad_p or not _zero(pad.invars[1])
            or any(s != 1 for s in p["window_strides"])
            or any(d != 1 for d in p["base_dilation"])
            or any(d != 1 for d in p["window_dilation"])
            or any(q != (0, 0) for q in p["padding"])):
        return None
    config = pad.params["padding_config"]
    window = p["window_dimensions"]
    c = pad.invars[0]
    if not isinstance(c, Var) or any(w != interior + 1 and m != 1 for w, m, (_, _, interior)
                                     in zip(window, c.aval.shape, config)):
        return None
    (res,) = eqn.outvars
    if (not isinstance(c, Var) or c.aval.size == 0
            or not (dtypes.is_float(c.aval.dtype) or dtypes.is_int(c.aval.dtype))):
        return None
    new: list[JaxprEqn] = []
    src = eqn.source_info

    def emit(prim, invars, params, aval=None):
        out = Var(aval or prim.abstract_eval(*[v.aval for v in invars], **params))
        new.append(JaxprEqn(prim, list(invars), [out], params, src))
        return out

    # c[i] repeated s times along each dimension: r[q] = c[q // s]
    wide, dims = [], []
    for m, w in zip(c.aval.shape, window):
        dims.append(len(wide))
        wide += [m, w] if w > 1 else [m]
    r = emit(base.broadcast_in_dim_p, [c], {"shape": tuple(wide),
                                            "broadcast_dimensions": tuple(dims)})
    r = emit(base.reshape_p, [r], {"new_sizes": tuple(m * w for m, w in zip(c.aval.shape,
                                                                            window))})
    # out[j] = r[j + s - 1 - lo] (zero outside r): see the module docstring
    crop = []
    for m, w, n, (lo, _, _) in zip(c.aval.shape, window, res.aval.shape, config):
        off = w - 1 - lo
        crop.append((-off, n - (m * w - off), 0))
    zero = Literal(np.zeros((), c.aval.dtype), ShapedArray((), c.aval.dtype))
    aval = res.aval if not dtypes.is_float(res.aval.dtype) else None
    out = emit(structural.pad_p, [r, zero], {"padding_config": tuple(crop)}, aval)
    if dtypes.is_float(res.aval.dtype):
        new.append(JaxprEqn(elementwise.add_p, [out, zero], [res], {}, src))
    else:
        new[-1] = new[-1].replace(outvars=[res])
    return new
