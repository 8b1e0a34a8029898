"""Pack constant int8 weights once, at compile time, for the VNNI microkernel (CPU).

``int8_vnni``'s microkernel multiplies A by B packed in 32-column panels (``[N/32][K/4][32][4]``
bytes) and subtracts ``128 * sum_k B[k, n]`` per column. Packed per call, that costs ``N·K``
byte moves, repaid only over many rows of A — so a batch-1 product ran the slower loop-IR
kernel. When B is a compile-time constant (a quantized layer's weight: closed over, frozen or
hoisted by ``fx.jit``), this pass packs it once: the product becomes ``int8_packed_dot(a, b,
panels, colsums)``, whose new operands are constants of the program, and the microkernel reads
them for any number of rows. ``b`` stays an operand: targets without AVX-512 VNNI run the
loop-IR kernel over it (the source is compiled for whatever ``-march`` the machine has), and
``int8_packed_dot``'s NumPy implementation is ``dot_general`` of ``(a, b)``.

Takes the optimized jaxpr whose leading inputs are constants (their values ``consts``, then
``hoisted``: a jit's closed-over arrays, which its caller passes on every call); returns it
with the packed operands appended to the constants. A Backend lists this pass in its
``constant_passes`` where its operator library has a kernel for ``int8_packed_dot``.
"""

from __future__ import annotations

import numpy as np

from fx.avals import ShapedArray
from fx.jaxpr import Jaxpr, JaxprEqn, Var
from fx.lax import base, linalg
from fx.lowering.kernels.int8 import int8_vnni
from fx.lowering.kernels.int8.int8_products import canonical_int8_dot, int8_packed_dot_p, layout
from fx.lowering.passes.rewrite import known_constants, with_constants

PANEL = 32  # columns of a panel: two 16-lane int32 accumulators per row of a tile
ALIGN = 64  # bytes: a panel's rows start on a cache line (one zmm load each)

def pack(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(panels, colsums)`` of a ``(K, N)`` int8 matrix (see ``int8_packed_dot``); the panels'
    storage starts on a 64-byte boundary."""
    k, n = b.shape
    k4, nb = -(-k // 4), -(-n // PANEL)
    padded = np.zeros((k4 * 4, nb * PANEL), np.int8)
    padded[:k, :n] = b
    flat = padded.reshape(k4, 4, nb, PANEL).transpose(2, 0, 3, 1).reshape(-1)
    raw = np.empty(flat.size + ALIGN, np.int8)
    at = -raw.ctypes.data % ALIGN
    panels = raw[at:at + flat.size]
    panels[...] = flat
    colsums = 128 * padded.astype(np.int32).sum(axis=0, dtype=np.int32)
    return panels, colsums


def _layout(eqn: JaxprEqn) -> tuple[int, int, bool] | None:
    """``(N, K, columns_contiguous)`` of the product's rhs read as ``int8_gemm`` reads it,
    where the microkernel applies (A K-contiguous, K within its bound)."""
    if not canonical_int8_dot(eqn):
        return None
    _, n, k, (_, a_sk), (b_sk, _), _, _ = layout(eqn)
    if a_sk != 1 or k > int8_vnni.MAX_K:
        return None
    return n, k, b_sk == 1


def _matrix(value: np.ndarray, layout: tuple[int, int, bool]) -> np.ndarray:
    """B as a ``(K, N)`` matrix: its columns are the rows of an ``(N, K)`` value, or it is a
    ``(K, N)`` value (flattened dimensions, row-major, as a plain reshape keeps them)."""
    n, k, columns_contiguous = layout
    flat = np.asarray(value).reshape(-1)
    return flat.reshape(n, k).T if columns_contiguous else flat.reshape(k, n)


def _plain_reshape(eqn: JaxprEqn) -> bool:
    return eqn.primitive is base.reshape_p and eqn.params.get("dimensions") is None


def pack_int8_weights(jaxpr: Jaxpr, consts: list, hoisted: tuple = ()) -> tuple[Jaxpr, list]:
    """``jaxpr`` with each int8 product by a constant weight as ``int8_packed_dot`` (see the
    module docstring), and the constants' values with the packed operands appended."""
    known = known_constants(jaxpr, consts, hoisted)
    if not known:
        return jaxpr, consts
    reshaped: dict[Var, Var] = {}  # a plain reshape's output -> the constant it reshapes
    packed: dict[tuple, tuple[Var, Var]] = {}  # (constant, layout) -> (panels, colsums)
    new_vars, new_values, eqns = [], [], []
    for eqn in jaxpr.eqns:
        if _plain_reshape(eqn) and isinstance(eqn.invars[0], Var):
            src = reshaped.get(eqn.invars[0], eqn.invars[0])
            if src in known:
                reshaped[eqn.outvars[0]] = src
        rhs = eqn.invars[1] if len(eqn.invars) == 2 else None
        src = reshaped.get(rhs, rhs) if isinstance(rhs, Var) else None
        if eqn.primitive is not linalg.dot_general_p or src not in known:
            eqns.append(eqn)
            continue
        layout = _layout(eqn)
        if layout is None:
            eqns.append(eqn)
            continue
        key = (src, layout)
        if key not in packed:
            panels, colsums = pack(_matrix(known[src], layout))
            packed[key] = tuple(Var(ShapedArray(x.shape, x.dtype)) for x in (panels, colsums))
            new_vars += packed[key]
            new_values += [panels, colsums]
        eqns.append(eqn.replace(primitive=int8_packed_dot_p,
                                invars=[*eqn.invars, *packed[key]]))
    if not new_vars:
        return jaxpr, consts
    return with_constants(jaxpr, consts, eqns, new_vars, new_values)
