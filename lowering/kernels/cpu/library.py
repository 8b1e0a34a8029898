"""Library kernels: steps run by NumPy (BLAS for matmul, the primitives' impls otherwise).

Each builder returns ``fn(views)`` where ``views`` maps a value to the NumPy array of its
buffer for this call; the function writes its results into the output buffers in place.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fx import dtypes
from fx.jaxpr import JaxprEqn, Literal, Var
from fx.lax import linalg
from fx.lowering.fusion.groups import FusionGroup

# Half precision has no BLAS: library steps compute it in float32, with casts around the call
# (an ``OpImpl``'s ``widen``).
HALF_TO_F32 = {dtypes.float16: dtypes.float32, dtypes.bfloat16: dtypes.float32}


def _read(views, v):
    return v.value if isinstance(v, Literal) else views[v]


def eqns_step(eqns: list[JaxprEqn], outputs: list[Var]) -> Callable:
    """Evaluate ``eqns`` one by one with their primitives' NumPy impls."""

    def run(views):
        env = {}

        def read(v):
            if isinstance(v, Literal):
                return v.value
            return env[v] if v in env else views[v]

        for e in eqns:
            outs = e.primitive.impl(*[read(v) for v in e.invars], **e.params)
            outs = outs if e.primitive.multiple_results else [outs]
            for var, val in zip(e.outvars, outs):
                env[var] = val
        for v in outputs:
            np.copyto(views[v], np.asarray(env[v]).reshape(v.aval.shape), casting="unsafe")

    return run


def gemm_step(eqn: JaxprEqn, compute_dtype, prologue: list[JaxprEqn] = ()) -> Callable:
    """``dot_general`` as one matmul call writing into the output buffer.

    Operands are brought to ``(batch, M, K) @ (batch, K, N)`` with transposed *views* where
    possible (BLAS takes transposed operands without copying); half precision is computed in
    ``compute_dtype`` with explicit casts.
    """
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.invars
    ls, rs = lhs.aval.shape, rhs.aval.shape
    lf = [i for i in range(len(ls)) if i not in lc and i not in lb]
    rf = [i for i in range(len(rs)) if i not in rc and i not in rb]
    batch = int(np.prod([ls[i] for i in lb], dtype=np.int64))
    m = int(np.prod([ls[i] for i in lf], dtype=np.int64))
    k = int(np.prod([ls[i] for i in lc], dtype=np.int64))
    n = int(np.prod([rs[i] for i in rf], dtype=np.int64))
    lperm = list(lb) + lf + list(lc)
    rperm = list(rb) + list(rc) + rf
    out = eqn.outvars[0]

    def run(views):
        if prologue:  # reshapes/transposes of the operands, as views where NumPy can
            views = dict(views)
            for e in prologue:
                views[e.outvars[0]] = e.primitive.impl(*[_read(views, v) for v in e.invars],
                                                       **e.params)
        a = np.transpose(_read(views, lhs), lperm).reshape(batch, m, k)
        b = np.transpose(_read(views, rhs), rperm).reshape(batch, k, n)
        dst = views[out].reshape(batch, m, n)
        if batch == 1:  # plain 2-D products go straight to BLAS (transposed views included)
            a, b, dst = a[0], b[0], dst[0]
        if compute_dtype is not None:
            a, b = a.astype(compute_dtype), b.astype(compute_dtype)
            np.copyto(dst, np.matmul(a, b), casting="unsafe")
        elif a.dtype == dst.dtype and b.dtype == dst.dtype:
            np.matmul(a, b, out=dst)
        else:
            np.copyto(dst, np.matmul(a, b, dtype=dst.dtype), casting="unsafe")

    return run


def is_dot(g: FusionGroup) -> bool:
    """A GEMM group anchored by ``dot_general`` (not a convolution or a packed product)."""
    return g.anchor.primitive is linalg.dot_general_p


def dot_step(step) -> Callable:
    """The library step of a GEMM group anchored by ``dot_general``: :func:`gemm_step` of its
    anchor, in the choice's compute dtype, reading through the group's prologue."""
    return gemm_step(step.group.anchor, step.choice.compute_dtype, step.group.prologue)


def host_step(run: Callable, inputs: list[Var], outputs: list[Var]) -> Callable:
    """Run ``run`` on the host for a device program: copy the inputs to host memory, run the
    NumPy step into host buffers, copy the outputs back into their device buffers."""

    def step(views):
        host = {v: _to_host(views[v]) for v in inputs if v in views}
        for v in outputs:
            host[v] = np.empty(v.aval.shape, v.aval.dtype)
        run(host)
        for v in outputs:
            views[v].set(host[v]) if hasattr(views[v], "set") else np.copyto(views[v], host[v])

    return step


def _to_host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)
