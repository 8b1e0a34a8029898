"""Transposition of linear jaxprs: reverse mode.

``backward_pass`` walks a linear jaxpr (from ``linearize``) backwards. Equations that do not
depend on the linear inputs (residual computations, staged zeros) are evaluated forward first.
Each linear equation's rule in ``transpose_rules`` maps the cotangent of its output to
cotangents of its linear inputs: ``rule(ct, *args, **params) -> [ct_or_None per arg]``, where
linear arguments arrive as :class:`UndefinedPrimal` and the others as values. A variable read
by several equations receives one contribution per use, summed with ``add_any``.

Transposed operations are bound on the current trace, so the backward pass can itself be
differentiated, batched or staged into a jit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fx import core_primitives as base
from fx.array import Array
from fx.avals import ShapedArray
from fx.core import Primitive, current_trace, get_aval, new_trace
from fx.interpreters import jvp, partial_eval
from fx.interpreters.jvp import Zero
from fx.jaxpr import Jaxpr, JaxprEqn, Literal, Var
from fx.tracing import replaced_name_stack


class UndefinedPrimal:
    """A linear argument of a transpose rule: only its type is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x) -> bool:
    return isinstance(x, UndefinedPrimal)


TransposeRule = Callable[..., Sequence[object]]
transpose_rules: dict[Primitive, TransposeRule] = {}


def backward_pass(jaxpr: Jaxpr, consts: Sequence, args: Sequence, cts_out: Sequence) -> list:
    """Cotangents of ``jaxpr``'s linear inputs given cotangents of its outputs.

    ``args[i]`` is an :class:`UndefinedPrimal` for each input the jaxpr is linear in, and the
    value of every other input; ``consts`` are the values of its constvars. ``cts_out`` may hold
    ``Zero``. Returns one entry per input: a cotangent (or ``Zero``) for the linear ones, None
    for the others.
    """
    env: dict[Var, object] = dict(zip(jaxpr.constvars, consts))
    linear: set[Var] = set()
    for v, a in zip(jaxpr.invars, args):
        if is_undefined(a):
            linear.add(v)
        else:
            env[v] = a

    def read(v):
        if isinstance(v, Literal):
            return Array(v.value, v.aval.weak_type)
        return env[v]

    linear_eqns = []
    for eqn in jaxpr.eqns:
        lin_in = [isinstance(v, Var) and v in linear for v in eqn.invars]
        if any(lin_in):
            split = _split_mixed_call(eqn, lin_in, read) if not all(lin_in) else None
            if split is None:
                linear.update(eqn.outvars)
                linear_eqns.append(eqn)
            else:
                known, staged, residuals = split
                env.update(known)
                env.update(residuals)
                for e in staged:
                    linear.update(e.outvars)
                    linear_eqns.append(e)
        else:
            outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
            env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))

    ct_env: dict[Var, object] = {}

    def write_ct(v, ct):
        if ct is None or isinstance(ct, Zero) or not isinstance(v, Var) or v not in linear:
            return
        ct = _match_aval(ct, v.aval)
        prev = ct_env.get(v)
        ct_env[v] = ct if prev is None else base.add_any(prev, ct)

    for v, ct in zip(jaxpr.outvars, cts_out):
        write_ct(v, ct)

    for eqn in reversed(linear_eqns):
        cts = [ct_env.pop(v, None) for v in eqn.outvars]
        if all(ct is None for ct in cts):
            continue
        eqn_args = [
            UndefinedPrimal(v.aval) if isinstance(v, Var) and v in linear else read(v)
            for v in eqn.invars
        ]
        rule = transpose_rules.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(
                f"transpose rule for '{eqn.primitive.name}' is not implemented (needed for "
                "reverse-mode differentiation)"
            )
        if eqn.primitive.multiple_results:
            ct_arg = [Zero(v.aval) if ct is None else ct for v, ct in zip(eqn.outvars, cts)]
        else:
            ct_arg = cts[0]
        names = eqn.source_info.name_stack if eqn.source_info is not None else ""
        try:
            if names:
                with replaced_name_stack(f"transpose({names})"):
                    cts_in = rule(ct_arg, *eqn_args, **eqn.params)
            else:
                cts_in = rule(ct_arg, *eqn_args, **eqn.params)
        except Exception as e:  # point at the user's line the equation came from
            if eqn.source_info is not None:
                e.add_note(f"(transposing '{eqn.primitive.name}' from {eqn.source_info})")
            raise
        for v, ct in zip(eqn.invars, cts_in):
            write_ct(v, ct)

    return [
        ct_env.get(v, Zero(v.aval)) if is_undefined(a) else None
        for v, a in zip(jaxpr.invars, args)
    ]


# --- calls with both primal and tangent outputs ------------------------------------------------
# The jvp of a call (checkpoint, jit) is one call computing primal and tangent outputs. Inside
# the body of a checkpoint being transposed, such a call reads linear inputs, yet some of its
# outputs are primal values that later equations multiply tangents by: treating the whole call
# as linear would hand a transpose rule two undefined operands. Such a call is split by its
# partial-evaluation rule, as linearize splits it: the known part runs now (its outputs join
# the forward values), the unknown part, linear in the linear inputs, is transposed.


def _split_mixed_call(eqn: JaxprEqn, lin_in: Sequence[bool], read: Callable):
    """``(known values, staged linear equations, residual values)`` replacing ``eqn``, or None
    when ``eqn`` is not a call or every output depends on its linear inputs."""
    body_name = partial_eval.body_param.get(eqn.primitive)
    rule = partial_eval.pe_rules.get(eqn.primitive)
    if body_name is None or rule is None:
        return None
    body = eqn.params[body_name]
    if all(partial_eval.forward_dependence(body.jaxpr, lin_in)):
        return None
    pe = partial_eval.PartialEvalTrace(current_trace(), f"transpose of {eqn.primitive.name}")
    with new_trace(pe):
        args = [pe.new_arg(v.aval) if lin else read(v) for v, lin in zip(eqn.invars, lin_in)]
        outs = rule(pe, args, dict(eqn.params))
    rename: dict[Var, Var] = {a.var: v for a, v, lin in zip(args, eqn.invars, lin_in) if lin}
    known: dict[Var, object] = {}
    out_rename: dict[Var, Var] = {}
    for o, v in zip(outs, eqn.outvars):
        if not pe.is_unknown(o):
            known[v] = o
        elif o.var in rename or o.var in out_rename:
            return None  # an input forwarded to an output: keep the call whole
        else:
            out_rename[o.var] = v
    staged = [e.replace(invars=[rename.get(a, a) if isinstance(a, Var) else a
                                for a in e.invars],
                        outvars=[out_rename.get(v, v) for v in e.outvars])
              for e in pe.eqns]
    return known, staged, dict(zip(pe.constvars, pe.consts))


def _match_aval(ct, aval: ShapedArray):
    """Cotangents keep their variable's dtype (weak-typed scalars may arrive strong)."""
    ct_aval = get_aval(ct)
    if ct_aval.shape != aval.shape:
        raise AssertionError(f"cotangent {ct_aval} for a variable of type {aval}")
    return ct


# --- rule helpers -------------------------------------------------------------------------------


def deftranspose(prim: Primitive, rule: TransposeRule) -> None:
    """Register ``rule(ct, *args, **params) -> [cotangent or None per argument]`` for a
    primitive whose jvp is registered on its own (linear in some arguments only, like a
    gather's operand, or with a jvp that handles symbolic zeros itself, like ``add``)."""
    transpose_rules[prim] = rule


def deflinear(prim: Primitive, rule: TransposeRule) -> None:
    """Declare ``prim`` linear in every argument: its jvp applies it to the tangents and
    ``rule`` is its transpose (jvp and transpose together, as jax's ``deflinear2``)."""
    jvp.jvp_rules[prim] = jvp.linear_jvp(prim)
    jvp.linear_prims.add(prim)
    transpose_rules[prim] = rule


def defbilinear(prim: Primitive, lhs_rule: Callable, rhs_rule: Callable) -> None:
    """The transpose of a primitive linear in each of its two operands separately (``mul``,
    ``dot_general``): ``lhs_rule(ct, x, y)`` is the cotangent of ``x`` when ``x`` is the
    linear input (``y`` then a known value), ``rhs_rule`` likewise for ``y``. Both operands
    linear at once is a product of linear values, which is not linear: a clear error."""

    def rule(ct, x, y, **params):
        if is_undefined(x) and is_undefined(y):
            raise TypeError(
                f"{prim.name}: both operands ({x.aval.str_short()} and {y.aval.str_short()}) "
                "are linear inputs, and a product of two linear values is not linear; "
                "transpose with respect to one of them and pass the other as a constant")
        return [
            unbroadcast(lhs_rule(ct, x, y, **params), x.aval) if is_undefined(x) else None,
            unbroadcast(rhs_rule(ct, x, y, **params), y.aval) if is_undefined(y) else None,
        ]

    transpose_rules[prim] = rule


def unbroadcast(ct, aval: ShapedArray):
    """Sum ``ct`` down to a rank-0 ``aval`` when the forward op broadcast a scalar operand."""
    if get_aval(ct).shape == aval.shape:
        return ct
    if aval.shape:
        raise AssertionError(f"cannot unbroadcast {get_aval(ct)} to {aval}")
    return base.reduce_sum(ct, tuple(range(get_aval(ct).ndim)))


# --- the interpreter-level primitives (see fx.lax.base) -----------------------------------------


def _add_any_transpose(ct, x, y):
    return [ct if is_undefined(x) else None, ct if is_undefined(y) else None]


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    in_shape = x.aval.shape
    new_axes = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    expanded = tuple(
        b for d, b in zip(in_shape, broadcast_dimensions) if d == 1 and shape[b] != 1
    )
    summed = base.reduce_sum(ct, tuple(sorted(new_axes + expanded)))
    return [base.reshape(summed, in_shape)]


def _reduce_sum_transpose(ct, x, *, axes):
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [base.broadcast_in_dim(ct, shape, kept)]


def _transpose_transpose(ct, x, *, permutation):
    inverse = [0] * len(permutation)
    for i, p in enumerate(permutation):
        inverse[p] = i
    return [base.transpose(ct, inverse)]


deflinear(base.add_any_p, _add_any_transpose)
deflinear(base.broadcast_in_dim_p, _broadcast_in_dim_transpose)
deflinear(base.reduce_sum_p, _reduce_sum_transpose)
deflinear(base.reshape_p, lambda ct, x, *, new_sizes: [base.reshape(ct, x.aval.shape)])
deflinear(base.transpose_p, _transpose_transpose)
