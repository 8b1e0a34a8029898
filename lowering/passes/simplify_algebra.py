"""Algebraic simplification: identities that make an equation a no-op or shorten a chain.

Every rewrite is exact: the program computes the same bits as before for every input (NaN
payloads aside), and the replacement has exactly the equation's output type, weak type
included, so the result still type-checks. Each identity rule names the constant it holds
for, compared by bit pattern, never by value (``-0.0 == 0.0`` in Python):

- ``x * 1``, ``1 * x``, ``x / 1``: exact for every x.
- ``x + c``, ``c + x`` (also ``add_any``): exact for ``c = -0.0`` only (``-0.0 + 0.0`` is
  ``+0.0``, so ``x + 0.0`` is not ``x`` when x is ``-0.0``); any zero for integers.
- ``x - c``: exact for ``c = +0.0`` only (``x - 0.0`` is ``x + -0.0``).
- ``neg(neg(x))``, ``select_n(c, x, x)``; a reshape, convert or broadcast to the operand's
  own type; a transpose of a transpose (composed, or dropped when the identity), a reshape of
  a reshape.

The transpose of a matrix product (``(a @ b).T`` becomes ``b.T @ a.T``: the product is written
in the layout that is read, as reverse mode asks for weight gradients) is the one rewrite of a
non-exact operation: a matmul's summation order is the library's choice either way. Nothing
that changes NaN, infinity or signed-zero behaviour (``x*0``, ``x-x``, ``x+0.0``) is
rewritten.
"""

from __future__ import annotations

import numpy as np

from fx.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from fx.lax import base, linalg
from fx.lax import elementwise as ew
from fx.lowering.passes.rewrite import Renamer

# (primitive, operand position of the constant, the constant for float dtypes, for others)
_IDENTITIES = {
    ew.mul_p: ((1, 1.0, 1), (0, 1.0, 1)),
    ew.div_p: ((1, 1.0, 1),),
    ew.add_p: ((1, -0.0, 0), (0, -0.0, 0)),
    base.add_any_p: ((1, -0.0, 0), (0, -0.0, 0)),
    ew.sub_p: ((1, 0.0, 0),),
}


def _holds(v, value, splats: dict) -> bool:
    """``v`` is the scalar ``value`` bit for bit (a literal, or a broadcast of that literal)."""
    if isinstance(v, Literal):
        c = v.value if v.value.shape == () else None
    else:
        c = splats.get(v)
    if c is None:
        return False
    try:
        want = np.asarray(value, c.dtype)
    except (TypeError, ValueError, OverflowError):
        return False
    return want.tobytes() == c.tobytes()


def _same_type(a, eqn: JaxprEqn) -> bool:
    return a.aval == eqn.outvars[0].aval


def _identity_operand(eqn: JaxprEqn, splats: dict):
    """The operand an equation returns unchanged, bit for bit, or None."""
    p, ins = eqn.primitive, eqn.invars
    for pos, float_value, other_value in _IDENTITIES.get(p, ()):
        c = ins[pos]
        dt = c.aval.dtype
        value = float_value if np.issubdtype(dt, np.inexact) else other_value
        if _holds(c, value, splats):
            return ins[1 - pos]
    if p is ew.select_n_p:
        if all(v is ins[1] for v in ins[1:]):
            return ins[1]
    elif p in (base.reshape_p, ew.convert_element_type_p, base.broadcast_in_dim_p):
        return ins[0]
    elif p is base.transpose_p:
        if eqn.params["permutation"] == tuple(range(len(eqn.params["permutation"]))):
            return ins[0]
    return None


def simplify_algebra(jaxpr: Jaxpr) -> Jaxpr:
    rename = Renamer()
    producer: dict[Var, JaxprEqn] = {}
    splats: dict[Var, np.ndarray] = {}  # broadcasts of scalar literals: var -> the scalar
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = rename.eqn(eqn)
        if eqn.primitive is base.broadcast_in_dim_p and isinstance(eqn.invars[0], Literal):
            splats[eqn.outvars[0]] = eqn.invars[0].value
        same = _identity_operand(eqn, splats)
        if same is not None and _same_type(same, eqn):
            rename.bind(eqn.outvars[0], same)
            continue
        eqn = _compose(eqn, producer)
        same = _identity_operand(eqn, splats)
        if same is not None and _same_type(same, eqn):
            rename.bind(eqn.outvars[0], same)
            continue
        if eqn.primitive is ew.neg_p:
            src = producer.get(eqn.invars[0])
            if src is not None and src.primitive is ew.neg_p and _same_type(src.invars[0], eqn):
                rename.bind(eqn.outvars[0], src.invars[0])
                continue
        for v in eqn.outvars:
            producer[v] = eqn
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, rename.outvars(jaxpr), eqns)


def _compose(eqn: JaxprEqn, producer: dict) -> JaxprEqn:
    """Fold a transpose of a transpose and a reshape of a reshape into one equation (the inner
    one becomes dead if nothing else reads it)."""
    x = eqn.invars[0] if eqn.invars else None
    src = producer.get(x) if isinstance(x, Var) else None
    if (src is not None and eqn.primitive is base.transpose_p
            and src.primitive is linalg.dot_general_p):
        return _transposed_product(eqn, src)
    if src is None or src.primitive is not eqn.primitive:
        return eqn
    if eqn.primitive is base.transpose_p:
        inner, outer = src.params["permutation"], eqn.params["permutation"]
        perm = tuple(inner[p] for p in outer)
        return eqn.replace(invars=[src.invars[0]], params={"permutation": perm})
    if eqn.primitive is base.reshape_p:
        return eqn.replace(invars=[src.invars[0]])
    return eqn


def _transposed_product(eqn: JaxprEqn, dot: JaxprEqn) -> JaxprEqn:
    """``transpose(dot_general(a, b), (1, 0))`` of matrices (no batch dimensions) as
    ``dot_general(b, a)``, the operands swapped; anything else is left as it is."""
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    a, b = dot.invars
    if (eqn.params["permutation"] != (1, 0) or lb or rb or len(lc) != 1
            or a.aval.ndim != 2 or b.aval.ndim != 2):
        return eqn
    params = dict(dot.params, dimension_numbers=((tuple(rc), tuple(lc)), ((), ())))
    return eqn.replace(primitive=dot.primitive, invars=[b, a], params=params)
