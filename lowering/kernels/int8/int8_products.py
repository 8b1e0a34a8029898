"""The int8 × int8 → int32 products the int8 kernels run, and what they share: the
``int8_packed_dot`` primitive (a product whose constant B also comes packed, see
``pack_int8_weights``), the matrix layout of a product over flattened dimensions
(:func:`layout`), which products qualify (:func:`canonical_int8_dot`), and the buffer an
operand is read from (:func:`operand_source`).
"""

from __future__ import annotations

import math

from fx import dtypes
from fx.core import Primitive
from fx.jaxpr import Var
from fx.lax import linalg
from fx.lowering.fusion.groups import FusionGroup
from fx.lowering.fusion.primitive_rules import Pattern, patterns
from fx.lowering.select.cost import flops_rules

# int8_packed_dot(a, b, panels, colsums): dot_general(a, b) with its params, for an int8 ``b``
# that ``panels`` (int8, the [N'/32][K'/4][32][4] bytes) and ``colsums`` (int32, 128 * each
# column's sum, N' entries) also hold; N' and K' are N and K rounded up to 32 and 4. It exists
# only inside lowered programs (made after every transformation ran), so it has no jvp,
# transpose or batching rules.
int8_packed_dot_p = Primitive("int8_packed_dot")


@int8_packed_dot_p.def_abstract_eval
def _abstract_eval(a, b, panels, colsums, **params):
    out = linalg.dot_general_p.abstract_eval(a, b, **params)
    if panels.dtype != dtypes.int8 or colsums.dtype != dtypes.int32 or panels.ndim != 1 \
            or colsums.ndim != 1:
        raise TypeError(f"int8_packed_dot: needs int8 panels and int32 column sums, 1-D; got "
                        f"{panels.str_short()} and {colsums.str_short()}")
    return out


@int8_packed_dot_p.def_impl
def _impl(a, b, panels, colsums, **params):
    return linalg.dot_general_p.impl(a, b, **params)


patterns[int8_packed_dot_p] = Pattern.OUT_ELEMENTWISE_FUSABLE
flops_rules[int8_packed_dot_p] = flops_rules[linalg.dot_general_p]


# The offset sums reach 255 * 128 * K, which int32 holds up to K = 2^16.
MAX_K = 1 << 16


def layout(dot):
    """``(M, N, K, a_strides, b_strides, lhs_free, rhs_free)`` of a product the kernel runs as
    ``C[m, n] = sum_k A[m, k] B[k, n]`` over flattened dimensions, or None. The operands'
    contracting dimensions must be consecutive and in order: trailing in the lhs (or its
    first of two), leading or trailing in the rhs; the output is then ``(*lhs_free,
    *rhs_free)`` read as ``(M, N)``."""
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    lhs, rhs = dot.invars[:2]
    nl, nr, nc = lhs.aval.ndim, rhs.aval.ndim, len(lc)
    if lb or not nc or nl == nc or nr == nc:
        return None
    lc, rc = tuple(lc), tuple(rc)
    K = math.prod(lhs.aval.shape[d] for d in lc)
    lhs_free = tuple(lhs.aval.shape[d] for d in range(nl) if d not in lc)
    rhs_free = tuple(rhs.aval.shape[d] for d in range(nr) if d not in rc)
    M, N = math.prod(lhs_free), math.prod(rhs_free)
    if lc == tuple(range(nl - nc, nl)):
        a = (K, 1)
    elif nl == 2 and lc == (0,):
        a = (1, M)
    else:
        return None
    if rc == tuple(range(nr - nc, nr)):
        b = (1, K)  # (N..., K...): each column of B one contiguous row
    elif rc == tuple(range(nc)):
        b = (N, 1)
    else:
        return None
    return M, N, K, a, b, lhs_free, rhs_free


def canonical_int8_dot(eqn) -> bool:
    """An int8 × int8 product into int32 without batch dimensions whose operands are
    matrices over flattened dimensions (see ``layout``)."""
    if eqn.primitive not in (linalg.dot_general_p, int8_packed_dot_p):
        return False
    lhs, rhs = eqn.invars[:2]
    if not (isinstance(lhs, Var) and isinstance(rhs, Var) and lhs.aval.dtype == dtypes.int8
            and rhs.aval.dtype == dtypes.int8 and eqn.outvars[0].aval.dtype == dtypes.int32):
        return False
    found = layout(eqn)
    return found is not None and found[2] <= MAX_K


def operand_source(g: FusionGroup, v: Var) -> Var:
    """``v`` read through the group's reshapes: a row-major reshape keeps every element's
    flat position, so the kernel reads the reshaped operand from the source buffer with the
    2-D strides (a convolution's kernel as a matrix, say)."""
    made = {e.outvars[0]: e for e in g.prologue}
    while v in made:
        v = made[v].invars[0]
    return v
