"""Algebraic simplification: identities that make an equation a no-op or shorten a chain.

Rewrites (only when the replacement has exactly the equation's output type, weak type
included, so the result still type-checks): ``x*1``, ``1*x``, ``x+0``, ``0+x``, ``x-0``,
``x/1``, ``neg(neg(x))``, a transpose of a transpose (composed, or dropped when the identity),
a reshape of a reshape, a reshape or convert to the same type, ``select_n(c, x, x)``, a
broadcast whose operand already has the output shape, and the transpose of a matrix product
(``(a @ b).T`` becomes ``b.T @ a.T``: the product is written in the layout that is read, as
reverse mode asks for weight gradients). Nothing that changes NaN or signed-zero
behaviour (``x*0``, ``x-x``) is rewritten.
"""

from __future__ import annotations

from fx.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from fx.lax import base, linalg
from fx.lax import elementwise as ew
from fx.lowering.rewrite import Renamer, literal_value


def _is(v, value, splats=None) -> bool:
    """``v`` is the scalar ``value`` (a literal, or a broadcast of that literal)."""
    if isinstance(v, Literal):
        return v.value.shape == () and literal_value(v) == value
    return splats is not None and splats.get(v) == value


def _same_type(a, eqn: JaxprEqn) -> bool:
    return a.aval == eqn.outvars[0].aval


def _identity_operand(eqn: JaxprEqn, splats: dict):
    """The operand an equation returns unchanged, or None."""
    p, ins = eqn.primitive, eqn.invars
    if p is ew.mul_p:
        if _is(ins[1], 1, splats):
            return ins[0]
        if _is(ins[0], 1, splats):
            return ins[1]
    elif p is ew.add_p or p is base.add_any_p:
        if _is(ins[1], 0, splats):
            return ins[0]
        if _is(ins[0], 0, splats):
            return ins[1]
    elif p is ew.sub_p or p is ew.div_p:
        if _is(ins[1], 0 if p is ew.sub_p else 1, splats):
            return ins[0]
    elif p is ew.select_n_p:
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
    splats: dict[Var, object] = {}  # broadcasts of scalar literals: var -> the scalar
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = rename.eqn(eqn)
        if eqn.primitive is base.broadcast_in_dim_p and isinstance(eqn.invars[0], Literal):
            splats[eqn.outvars[0]] = literal_value(eqn.invars[0])
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
