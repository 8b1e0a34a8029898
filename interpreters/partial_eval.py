"""Partial evaluation: run what is known, stage what is not.

A :class:`PartialEvalTrace` sits under a jvp trace during ``linearize``. Operations whose
inputs are all *known* (primal values: concrete arrays, or tracers of the enclosing trace) are
bound on the parent trace; operations touching an *unknown* value (a tangent) are staged into a
jaxpr. Known values those staged operations read become the jaxpr's constvars: the residuals
that reverse mode saves from the forward pass. The staged jaxpr is linear in its inputs.

``partial_eval_jaxpr`` applies the same trace to a jaxpr, splitting it into a known part and an
unknown part; call-like primitives (jit, checkpoint) use it in their ``pe_rules`` so that
``grad(jit(f))`` runs the forward pass and the backward pass as two compiled calls.
``body_param`` names the param holding each call-like primitive's body, and
``forward_dependence`` finds which outputs of a jaxpr depend on its unknown inputs, looking
into those calls (transposition splits a mixed call by it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from fx import core_primitives as base
from fx.avals import ShapedArray
from fx.core import Primitive, Tracer, current_trace, get_aval, new_trace, set_current_trace
from fx.interpreters.eval import eval_jaxpr
from fx.interpreters.jvp import JVPTrace, JVPTracer, Zero
from fx.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from fx.tracing import JaxprTrace, JaxprTracer

PeRule = Callable[["PartialEvalTrace", Sequence, dict], object]
pe_rules: dict[Primitive, PeRule] = {}

# Every primitive whose semantics is "evaluate the jaxpr in param <name>", so partial
# evaluation can look into it and the compiler can inline it. fx.interpreters.call registers
# jit and checkpoint, fx.custom_derivatives its call-like primitives.
body_param: dict[Primitive, str] = {}


class PartialEvalTrace(JaxprTrace):
    name = "linearize"

    def is_unknown(self, x) -> bool:
        return isinstance(x, JaxprTracer) and x._trace is self

    def process_primitive(self, prim, args, params):
        if not any(self.is_unknown(a) for a in args):
            with set_current_trace(self.parent):
                return prim.bind(*args, **params)
        rule = pe_rules.get(prim)
        if rule is not None:
            return rule(self, args, params)
        return self.stage(prim, args, params)

    def stage(self, prim, args, params):
        return JaxprTrace.process_primitive(self, prim, args, params)

    def stage_zeros(self, aval: ShapedArray) -> JaxprTracer:
        """A zero array staged as an equation of the unknown jaxpr (not computed as a known
        value and saved as a residual)."""
        if isinstance(aval.dtype, np.dtype):
            zero = Literal(0, ShapedArray((), aval.dtype, aval.weak_type))
        else:  # an extended dtype (a PRNG key) has no literals: a constant of zero data
            zero = self.to_atom(base.full((), 0, aval.dtype))
        var = Var(aval)
        params = dict(shape=aval.shape, broadcast_dimensions=())
        self.eqns.append(JaxprEqn(base.broadcast_in_dim_p, [zero], [var], params))
        return JaxprTracer(self, var)


def linearize_flat(flat_f: Callable, primals: Sequence, diff: Sequence[bool]):
    """Linearize ``flat_f`` at ``primals`` with respect to the inputs marked in ``diff``.

    Returns ``(primal_outs, linear, out_avals)`` where ``linear`` is a closed jaxpr mapping the
    tangents of the differentiated inputs to the output tangents; its consts are the residuals.
    """
    pe = PartialEvalTrace(current_trace(), "linearize")
    with new_trace(pe):
        tangents = [
            pe.new_arg(get_aval(p)) if d else Zero.like(p) for p, d in zip(primals, diff)
        ]
        jvp_trace = JVPTrace(pe, "linearize")
        with new_trace(jvp_trace):
            ins = [JVPTracer(jvp_trace, p, t) for p, t in zip(primals, tangents)]
            outs = flat_f(*ins)
            pairs = [jvp_trace.lift(o) for o in outs]
        out_tangents = [
            pe.stage_zeros(t.aval) if isinstance(t, Zero) else t for _, t in pairs
        ]
        linear = pe.to_jaxpr(out_tangents)
    return [p for p, _ in pairs], linear


def partial_eval_jaxpr(
    closed: ClosedJaxpr, unknowns: Sequence[bool]
) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
    """Split ``closed`` by which inputs are unknown.

    Returns ``(known, unknown, out_unknowns, num_res)``: ``known`` maps the known inputs to the
    known outputs followed by ``num_res`` residuals; ``unknown`` maps the residuals followed by
    the unknown inputs to the unknown outputs.
    """
    known_trace = JaxprTrace(None, "partial eval (known part)")
    with new_trace(known_trace):
        pe = PartialEvalTrace(known_trace, "partial eval (unknown part)")
        with new_trace(pe):
            ins = [
                pe.new_arg(a) if u else known_trace.new_arg(a)
                for a, u in zip(closed.in_avals, unknowns)
            ]
            outs = eval_jaxpr(closed.jaxpr, closed.consts, *ins)
            out_unknowns = [pe.is_unknown(o) for o in outs]
            unknown_part = pe.to_jaxpr([o for o, u in zip(outs, out_unknowns) if u])
        # Residuals that are tracers of the known trace become outputs of the known jaxpr and
        # leading inputs of the unknown one; concrete residuals stay consts of the unknown one.
        res_idx = [i for i, c in enumerate(unknown_part.consts) if isinstance(c, Tracer)]
        residuals = [unknown_part.consts[i] for i in res_idx]
        known = known_trace.to_jaxpr([o for o, u in zip(outs, out_unknowns) if not u] + residuals)
    uj = unknown_part.jaxpr
    res_vars = [uj.constvars[i] for i in res_idx]
    keep = [i for i in range(len(uj.constvars)) if i not in set(res_idx)]
    unknown = ClosedJaxpr(
        Jaxpr([uj.constvars[i] for i in keep], res_vars + uj.invars, uj.outvars, uj.eqns),
        [unknown_part.consts[i] for i in keep],
    )
    return known, unknown, out_unknowns, len(residuals)


def forward_dependence(jaxpr: Jaxpr, unknown_inputs: Sequence[bool]) -> list[bool]:
    """Which outputs of ``jaxpr`` depend on the inputs marked ``unknown_inputs``, as partial
    evaluation finds them. A nested call with a partial-evaluation rule is looked into (the
    jvp of a checkpoint is one call whose primal outputs do not depend on its tangent inputs);
    recursion goes as deep as calls nest, not as long as the program is."""
    unknown = {v for v, u in zip(jaxpr.invars, unknown_inputs) if u}
    for eqn in jaxpr.eqns:
        ins = [isinstance(v, Var) and v in unknown for v in eqn.invars]
        if not any(ins):
            continue
        name = body_param.get(eqn.primitive)
        if name is None or eqn.primitive not in pe_rules or all(ins):
            unknown.update(eqn.outvars)
        else:
            outs = forward_dependence(eqn.params[name].jaxpr, ins)
            unknown.update(v for v, d in zip(eqn.outvars, outs) if d)
    return [isinstance(v, Var) and v in unknown for v in jaxpr.outvars]
