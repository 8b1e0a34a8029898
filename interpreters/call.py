"""Call primitives: primitives whose params hold a whole jaxpr.

``jit`` (a compiled call) and ``checkpoint`` (a call whose internals reverse mode recomputes
instead of saving) are transformed by transforming their jaxpr and binding the same primitive
on the result, so ``grad(jit(f))`` and ``vmap(jit(f))`` stay compiled calls:

- jvp: ``jvp_jaxpr`` of the body, called with primals and the nonzero tangents;
- partial eval (linearize): ``jit`` splits its body into a known call (the forward pass, which
  also returns residuals) and an unknown call (the linear part); ``checkpoint`` saves only its
  inputs and recomputes the forward pass inside the unknown call;
- transpose: the body transposed into a new jaxpr (``transpose_jaxpr``);
- batching: ``batch_jaxpr`` of the body.

``jit``'s impl (compile and run) is attached by ``fx.jit``; the others evaluate their body.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from fx.array import Array
from fx.core import Primitive, new_trace, physical_rules, set_current_trace
from fx.interpreters import batching, jvp, partial_eval, physical, transpose
from fx.interpreters.eval import eval_jaxpr
from fx.interpreters.jvp import Zero, instantiate
from fx.interpreters.partial_eval import body_param  # noqa: F401  (importers read it here)
from fx.interpreters.transpose import UndefinedPrimal, backward_pass, is_undefined
from fx.jaxpr import ClosedJaxpr, Jaxpr, Var, dce_jaxpr
from fx.tracing import JaxprTrace


def _call_abstract_eval(name: str):
    def rule(*avals, jaxpr: ClosedJaxpr, **_):
        expected = jaxpr.in_avals
        if len(avals) != len(expected) or any(
            a.shape != e.shape or a.dtype != e.dtype for a, e in zip(avals, expected)
        ):
            raise TypeError(
                f"{name}: arguments {[a.str_short() for a in avals]} do not match the body's "
                f"inputs {[e.str_short() for e in expected]}"
            )
        return list(jaxpr.out_avals)

    return rule


def eval_call_impl(*bufs, jaxpr: ClosedJaxpr, **_):
    """Evaluate the body eagerly (op by op)."""
    outs = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *[Array(b) for b in bufs])
    return [o._buf for o in outs]


def _with_jaxpr(params: dict, new_jaxpr: ClosedJaxpr, n_in: int) -> dict:
    out = dict(params, jaxpr=new_jaxpr)
    if "donated" in params:
        out["donated"] = (False,) * n_in
    return out


# --- jvp ----------------------------------------------------------------------------------------


def _call_jvp(prim: Primitive):
    def rule(primals, tangents, *, jaxpr, **params):
        nonzeros = [not isinstance(t, Zero) for t in tangents]
        body, out_nonzeros = jvp.jvp_jaxpr(jaxpr, nonzeros, instantiate_out=False)
        nz = [t for t in tangents if not isinstance(t, Zero)]
        outs = prim.bind(*primals, *nz, **_with_jaxpr(params, body, len(primals) + len(nz)))
        n = len(jaxpr.out_avals)
        it = iter(outs[n:])
        tangent_outs = [next(it) if nz_ else Zero(a) for nz_, a in
                        zip(out_nonzeros, jaxpr.out_avals)]
        return outs[:n], tangent_outs

    return rule


# --- partial evaluation -------------------------------------------------------------------------


def _jit_partial_eval(trace: partial_eval.PartialEvalTrace, args: Sequence, params: dict):
    unknowns = [trace.is_unknown(a) for a in args]
    known, unknown, out_unknowns, num_res = partial_eval.partial_eval_jaxpr(
        params["jaxpr"], unknowns
    )
    known_args = [a for a, u in zip(args, unknowns) if not u]
    with set_current_trace(trace.parent):
        known_outs = jit_p.bind(*known_args, **_with_jaxpr(params, known, len(known_args)))
    n_known = len(known_outs) - num_res
    residuals = known_outs[n_known:]
    unknown_args = [a for a, u in zip(args, unknowns) if u]
    staged_args = [*residuals, *unknown_args]
    unknown_outs = trace.stage(jit_p, staged_args, _with_jaxpr(params, unknown, len(staged_args)))
    k_it, u_it = iter(known_outs[:n_known]), iter(unknown_outs)
    return [next(u_it) if u else next(k_it) for u in out_unknowns]


def _checkpoint_partial_eval(trace: partial_eval.PartialEvalTrace, args: Sequence, params: dict):
    """Run the known outputs now; stage the whole body (recomputing the forward pass from the
    saved inputs) for the unknown ones, so no intermediate of the body becomes a residual."""
    closed = params["jaxpr"]
    unknowns = [trace.is_unknown(a) for a in args]
    # The known part comes from a partial evaluation of the body, which splits nested calls
    # (the jvp of an inner checkpoint computes primal and tangent outputs in one call); the
    # residuals it would save are dropped: the unknown part recomputes them.
    known, unknown, out_unknowns, num_res = partial_eval.partial_eval_jaxpr(closed, unknowns)
    n_known = len(known.jaxpr.outvars) - num_res
    known_args = [a for a, u in zip(args, unknowns) if not u]
    if params.get("policy") is not None:
        return _checkpoint_with_policy(trace, args, params, known, unknown, out_unknowns,
                                       num_res)
    known_body, _ = dce_jaxpr(known.jaxpr, [True] * n_known + [False] * num_res)
    known_jaxpr = ClosedJaxpr(known_body, known.consts)
    with set_current_trace(trace.parent):
        known_outs = checkpoint_p.bind(*known_args, **dict(params, jaxpr=known_jaxpr))
    unknown_body, _ = dce_jaxpr(closed.jaxpr, out_unknowns)
    unknown_jaxpr = ClosedJaxpr(unknown_body, closed.consts)
    unknown_outs = trace.stage(checkpoint_p, list(args), dict(params, jaxpr=unknown_jaxpr))
    k_it, u_it = iter(known_outs), iter(unknown_outs)
    return [next(u_it) if u else next(k_it) for u in out_unknowns]


def _checkpoint_with_policy(trace, args, params, known: ClosedJaxpr, unknown: ClosedJaxpr,
                            out_unknowns: list[bool], num_res: int):
    """A checkpoint with a save policy: of the residuals a plain partial evaluation would
    save, those computed by an equation the policy accepts (``policy(prim, *avals,
    **params)``) are saved; the others are recomputed in the unknown call from the saved ones
    and the known inputs."""
    policy = params["policy"]
    k = known.jaxpr
    n_known = len(k.outvars) - num_res
    res_vars = k.outvars[n_known:]
    producer = {v: (i, eqn) for i, eqn in enumerate(k.eqns) for v in eqn.outvars}
    given = set(k.invars) | set(k.constvars)

    def saveable(eqn) -> bool:
        return policy(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params)

    # A value whose name the policy saves is saved under that name wherever it is needed
    # (the named value is the same array).
    named = {e.invars[0]: e.outvars[0] for e in k.eqns if e.primitive is checkpoint_name_p
             and isinstance(e.invars[0], Var) and saveable(e)}
    alias: dict[Var, Var] = {}
    saved: list[Var] = []
    recompute: set[int] = set()
    seen: set[Var] = set()
    stack = [v for v in res_vars if isinstance(v, Var)]
    while stack:  # backwards from the residuals, stopping at saveable values and inputs
        v = stack.pop()
        if v in seen or v in given:
            continue
        seen.add(v)
        if v in named:
            alias[v] = named[v]
            stack.append(named[v])
            continue
        i, eqn = producer[v]
        if saveable(eqn):
            saved.append(v)
        elif i not in recompute:
            recompute.add(i)
            stack.extend(x for x in eqn.invars if isinstance(x, Var))
    known_body, _ = dce_jaxpr(Jaxpr(k.constvars, k.invars, k.outvars[:n_known] + saved,
                                    k.eqns))
    u = unknown.jaxpr
    rename = {**alias, **{a: alias.get(r, r) for a, r in zip(u.invars[:num_res], res_vars)}}

    def sub(atoms):
        return [rename.get(a, a) if isinstance(a, Var) else a for a in atoms]

    unknown_body = Jaxpr(
        list(k.constvars) + list(u.constvars), saved + list(k.invars) + list(u.invars[num_res:]),
        sub(u.outvars),
        [k.eqns[i].replace(invars=sub(k.eqns[i].invars)) for i in sorted(recompute)]
        + [e.replace(invars=sub(e.invars)) for e in u.eqns])
    # Known inputs the unknown call does not read are not saved.
    unknown_body, used = dce_jaxpr(unknown_body)
    n_saved, n_in = len(saved), len(k.invars)
    keep_in = [n_saved <= i < n_saved + n_in and not used[i] for i in range(len(used))]
    unknown_body = Jaxpr(unknown_body.constvars,
                         [v for v, drop in zip(unknown_body.invars, keep_in) if not drop],
                         unknown_body.outvars, unknown_body.eqns)
    known_args = [a for a in args if not trace.is_unknown(a)]
    with set_current_trace(trace.parent):
        known_outs = checkpoint_p.bind(
            *known_args, **dict(params, jaxpr=ClosedJaxpr(known_body, known.consts)))
    unknown_args = [a for a in args if trace.is_unknown(a)]
    read_known = [a for a, u_ in zip(known_args, used[n_saved:n_saved + n_in]) if u_]
    staged = [*known_outs[n_known:], *read_known, *unknown_args]
    unknown_outs = trace.stage(checkpoint_p, staged, dict(
        params, jaxpr=ClosedJaxpr(unknown_body, list(known.consts) + list(unknown.consts))))
    k_it, u_it = iter(known_outs[:n_known]), iter(unknown_outs)
    return [next(u_it) if un else next(k_it) for un in out_unknowns]


# --- transposition ------------------------------------------------------------------------------

_transpose_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def transpose_jaxpr(closed: ClosedJaxpr, linear: Sequence[bool]) -> ClosedJaxpr:
    """A jaxpr ``(*nonlinear_inputs, *output_cts) -> linear_input_cts`` for a ``closed`` that is
    linear in the inputs marked ``linear`` (zero cotangents are instantiated)."""
    key = tuple(linear)
    per = _transpose_cache.setdefault(closed, {})
    if key in per:
        return per[key]
    trace = JaxprTrace(None, "transpose of a jaxpr")
    with new_trace(trace):
        nonlin = [trace.new_arg(a) for a, lin in zip(closed.in_avals, linear) if not lin]
        cts = [trace.new_arg(a) for a in closed.out_avals]
        it = iter(nonlin)
        args = [UndefinedPrimal(a) if lin else next(it) for a, lin in zip(closed.in_avals, linear)]
        cts_in = backward_pass(closed.jaxpr, closed.consts, args, cts)
        outs = [instantiate(c) for c, lin in zip(cts_in, linear) if lin]
        result = trace.to_jaxpr(outs)
    per[key] = result
    return result


def _call_transpose(prim: Primitive):
    def rule(cts, *args, jaxpr, **params):
        linear = [is_undefined(a) for a in args]
        body = transpose_jaxpr(jaxpr, linear)
        nonlin = [a for a in args if not is_undefined(a)]
        ct_vals = [instantiate(c) for c in cts]
        outs = prim.bind(*nonlin, *ct_vals, **_with_jaxpr(params, body, len(nonlin) +
                                                           len(ct_vals)))
        it = iter(outs)
        return [next(it) if lin else None for lin in linear]

    return rule


# --- batching -----------------------------------------------------------------------------------


def _call_batch(prim: Primitive):
    def rule(axis, vals, dims, *, jaxpr, **params):
        body, out_dims = batching.batch_jaxpr(jaxpr, axis, dims)
        outs = prim.bind(*vals, **_with_jaxpr(params, body, len(vals)))
        return outs, out_dims

    return rule


# --- the primitives -----------------------------------------------------------------------------
# Each registers the param holding its body in body_param (partial_eval's table, given here too).

jit_p = Primitive("jit", multiple_results=True)  # params: jaxpr, name, donated, backend
checkpoint_p = Primitive("checkpoint", multiple_results=True)  # params: jaxpr, prevent_cse,
# and policy when it has one
# A value named by fx.ad_checkpoint.checkpoint_name: an identity call (so every transformation
# and the compiler handle it as a call) that save policies recognize by its name.
checkpoint_name_p = Primitive("checkpoint_name", multiple_results=True)  # params: jaxpr, name

for _prim in (jit_p, checkpoint_p, checkpoint_name_p):
    _prim.def_abstract_eval(_call_abstract_eval(_prim.name))
    jvp.jvp_rules[_prim] = _call_jvp(_prim)
    transpose.transpose_rules[_prim] = _call_transpose(_prim)
    batching.batch_rules[_prim] = _call_batch(_prim)
    physical_rules[_prim] = physical.subjaxpr_rule(_prim)  # typed PRNG keys in the body
    body_param[_prim] = "jaxpr"

checkpoint_p.def_impl(eval_call_impl)
checkpoint_name_p.def_impl(eval_call_impl)


# The name marks the primal value (what a save policy can save); the tangent passes unnamed,
# so the jvp is not one call computing both (which reverse mode would have to split again).
def _checkpoint_name_jvp(primals, tangents, **params):
    return checkpoint_name_p.bind(*primals, **params), list(tangents)


jvp.jvp_rules[checkpoint_name_p] = _checkpoint_name_jvp
transpose.transpose_rules[checkpoint_name_p] = lambda cts, *args, **params: list(cts)
jit_p.def_impl(eval_call_impl)  # replaced by the compiler when fx.jit is imported
partial_eval.pe_rules[jit_p] = _jit_partial_eval
partial_eval.pe_rules[checkpoint_p] = _checkpoint_partial_eval
