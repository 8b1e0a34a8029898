"""Reductions over adjacent axes reduce one merged axis: ``sum(x, (0, 1, 2))`` of an
``(N, H, W, C)`` value becomes ``sum(reshape(x, (N*H*W, C)), (0,))``.

The elements are visited in the same row-major order, so every result keeps its bits. The
kernel then has one reduction loop instead of a nest of three, which a C compiler can
vectorize across the kept axis (a column reduction, such as a convolution's bias gradient,
becomes a loop of adjacent outputs, one SIMD lane each), and a reshape of a loaded buffer is
read at its flat index (``kernel_ir.Delinearized``), not through division and modulo.
Arg-reductions (one axis) are left alone. Pure: every output variable and type is kept.
"""

from __future__ import annotations

from fx.jaxpr import Jaxpr, JaxprEqn, Var
from fx.lax import base
from fx.lowering.fusion.primitive_rules import reduction_combine

_MERGEABLE = {p for p, c in reduction_combine.items() if c not in ("argmax", "argmin")}


def merge_reduced_axes(jaxpr: Jaxpr) -> Jaxpr:
    eqns: list[JaxprEqn] = []
    for eqn in jaxpr.eqns:
        merged = _merged(eqn) if eqn.primitive in _MERGEABLE else None
        eqns += merged if merged is not None else [eqn]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)


def _merged(eqn: JaxprEqn) -> list[JaxprEqn] | None:
    (x,) = eqn.invars
    axes = sorted(eqn.params["axes"])
    if not isinstance(x, Var) or len(axes) < 2 or not any(b == a + 1 for a, b in
                                                            zip(axes, axes[1:])):
        return None
    shape, new_shape, new_axes = x.aval.shape, [], []
    d = 0
    while d < len(shape):
        if d in axes:
            run = 1
            while d + run in axes:
                run += 1
            size = 1
            for n in shape[d:d + run]:
                size *= n
            new_axes.append(len(new_shape))
            new_shape.append(size)
            d += run
        else:
            new_shape.append(shape[d])
            d += 1
    y = Var(x.aval.update(shape=tuple(new_shape)))
    reshape = JaxprEqn(base.reshape_p, [x], [y], {"new_sizes": tuple(new_shape)},
                       eqn.source_info)
    return [reshape, eqn.replace(invars=[y], params=dict(eqn.params, axes=tuple(new_axes)))]
