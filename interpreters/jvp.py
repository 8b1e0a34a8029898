"""Forward-mode differentiation: tangents traced alongside primals.

:class:`JVPTrace` wraps each value as a :class:`JVPTracer` holding a primal and a tangent. The
tangent of a value that does not depend on the differentiated inputs is a symbolic
:class:`Zero`, so unused inputs cost nothing. Rules live in ``jvp_rules``, keyed by primitive:
``rule(primals, tangents, **params) -> (primal_out, tangent_out)``; they run with the parent
trace current, so primal work goes to whatever encloses this transformation (the eval trace,
a jit being traced, an outer jvp). Primitives with only integer/bool outputs need no rule:
their tangents are always zero.

Under ``linearize``/``grad`` the parent is a partial-evaluation trace, which computes primal
operations and stages tangent operations into a linear jaxpr.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

from fx import core_primitives as base
from fx import dtypes
from fx.avals import ShapedArray
from fx.core import (
    Primitive,
    Trace,
    Tracer,
    current_trace,
    get_aval,
    new_trace,
    set_current_trace,
)
from fx.interpreters.eval import eval_jaxpr
from fx.jaxpr import ClosedJaxpr
from fx.tracing import JaxprTrace


class Zero:
    """A symbolic zero tangent or cotangent of the given aval."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @staticmethod
    def like(x) -> Zero:
        return Zero(get_aval(x))

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


def instantiate(t) -> object:
    """A concrete zero array for a symbolic zero; anything else unchanged."""
    return base.zeros_like_aval(t.aval) if isinstance(t, Zero) else t


def is_differentiable(aval: ShapedArray) -> bool:
    return dtypes.is_inexact(aval.dtype)


JvpRule = Callable[..., tuple[object, object]]
jvp_rules: dict[Primitive, JvpRule] = {}
# Primitives declared linear (their jvp applies them to the tangents): reverse mode needs a
# transpose rule for each.
linear_prims: set[Primitive] = set()


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace: JVPTrace, primal, tangent):
        super().__init__(trace)
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        return get_aval(self.primal)

    def to_concrete(self, context: str):
        p = self.primal
        return p.to_concrete(context) if isinstance(p, Tracer) else p


class JVPTrace(Trace):
    name = "jvp"

    def __init__(self, parent: Trace, description: str = "jvp"):
        super().__init__(parent)
        self.description = description

    def describe(self) -> str:
        return self.description

    def lift(self, x) -> tuple[object, object]:
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        return x, Zero.like(x)

    def process_primitive(self, prim: Primitive, args, params):
        primals, tangents = zip(*(self.lift(a) for a in args)) if args else ((), ())
        if all(isinstance(t, Zero) for t in tangents):
            with set_current_trace(self.parent):
                return prim.bind(*primals, **params)
        rule = jvp_rules.get(prim)
        with set_current_trace(self.parent):
            if rule is None:
                out_avals = prim.out_avals([get_aval(p) for p in primals], params)
                if any(is_differentiable(a) for a in out_avals):
                    raise NotImplementedError(
                        f"differentiation rule for '{prim.name}' is not implemented"
                    )
                out = prim.bind(*primals, **params)
                outs = out if prim.multiple_results else [out]
                tangents_out = [Zero.like(o) for o in outs]
            else:
                out, tangent_out = rule(list(primals), list(tangents), **params)
                outs = out if prim.multiple_results else [out]
                tangents_out = tangent_out if prim.multiple_results else [tangent_out]
        wrapped = [self.wrap(p, t) for p, t in zip(outs, tangents_out)]
        return wrapped if prim.multiple_results else wrapped[0]

    def wrap(self, primal, tangent) -> JVPTracer:
        aval = get_aval(primal)
        if tangent is None or not is_differentiable(aval):
            tangent = Zero(aval)
        return JVPTracer(self, primal, tangent)


# --- rule helpers ------------------------------------------------------------------------------


def defjvp(prim: Primitive, *jvp_fns: Callable | None) -> None:
    """Register a jvp rule from one function per argument.

    ``jvp_fns[i](t, ans, *primals, **params)`` is argument ``i``'s contribution to the output
    tangent given its tangent ``t`` and the primal output ``ans`` (``None``: not differentiable
    in that argument). Contributions are broadcast to the output shape and summed.
    """

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        total = None
        for fn, t in zip(jvp_fns, tangents):
            if fn is None or isinstance(t, Zero):
                continue
            contrib = fn(t, ans, *primals, **params)
            contrib = base.broadcast_in_dim(contrib, ans.shape, ()) if (
                get_aval(contrib).shape != ans.shape
            ) else contrib
            total = contrib if total is None else base.add_any(total, contrib)
        return ans, (Zero.like(ans) if total is None else total)

    jvp_rules[prim] = rule


def linear_jvp(prim: Primitive) -> JvpRule:
    """The jvp rule of a primitive linear in all its arguments: apply it to the tangents.
    (Registered together with the transpose by ``fx.interpreters.transpose.deflinear``.)"""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        return ans, prim.bind(*[instantiate(t) for t in tangents], **params)

    return rule


def deflinear_in(prim: Primitive, *linear_args: int) -> None:
    """The jvp of a primitive linear in ``linear_args`` and independent of the others (whose
    tangents are ignored, e.g. the indices of a gather): apply it with tangents in those
    positions and the primal values elsewhere."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if all(isinstance(tangents[i], Zero) for i in linear_args):
            return ans, (
                [Zero.like(a) for a in ans] if prim.multiple_results else Zero.like(ans)
            )
        args = [instantiate(tangents[i]) if i in linear_args else p for i, p in enumerate(primals)]
        return ans, prim.bind(*args, **params)

    jvp_rules[prim] = rule
    linear_prims.add(prim)


# --- jvp of whole jaxprs (for call-like primitives) ---------------------------------------------

_jvp_jaxpr_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def jvp_jaxpr(
    closed: ClosedJaxpr, nonzeros: Sequence[bool], instantiate_out: bool | Sequence[bool]
) -> tuple[ClosedJaxpr, list[bool]]:
    """The jvp of ``closed`` as a jaxpr ``(*primals, *nonzero_tangents) -> (*primal_outs,
    *nonzero_tangent_outs)``, and which tangent outputs are nonzero."""
    nonzeros = tuple(nonzeros)
    n_out = len(closed.jaxpr.outvars)
    inst = (instantiate_out,) * n_out if isinstance(instantiate_out, bool) else instantiate_out
    key = (nonzeros, tuple(inst))
    per_jaxpr = _jvp_jaxpr_cache.setdefault(closed, {})
    if key in per_jaxpr:
        return per_jaxpr[key]

    trace = JaxprTrace(None, "jvp of a jaxpr")
    with new_trace(trace):
        primals = [trace.new_arg(a) for a in closed.in_avals]
        tangents = [
            trace.new_arg(a) if nz else Zero(a) for a, nz in zip(closed.in_avals, nonzeros)
        ]
        jvp_trace = JVPTrace(trace, "jvp of a jaxpr")
        with new_trace(jvp_trace):
            ins = [JVPTracer(jvp_trace, p, t) for p, t in zip(primals, tangents)]
            outs = eval_jaxpr(closed.jaxpr, closed.consts, *ins)
        pairs = [jvp_trace.lift(o) for o in outs]
        out_nonzeros = [not isinstance(t, Zero) or i for (_, t), i in zip(pairs, inst)]
        tangents_out = [instantiate(t) for (_, t), nz in zip(pairs, out_nonzeros) if nz]
        result = trace.to_jaxpr([p for p, _ in pairs] + tangents_out)
    per_jaxpr[key] = (result, out_nonzeros)
    return result, out_nonzeros


def jvp_flat(flat_f: Callable, primals: Sequence, tangents: Sequence, description="jvp"):
    """Run ``flat_f`` under a fresh jvp trace; ``(primal_outs, tangent_outs)`` with
    ``Zero`` for tangents that do not depend on the inputs."""
    trace = JVPTrace(current_trace(), description)
    with new_trace(trace):
        ins = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
        outs = flat_f(*ins)
        pairs = [trace.lift(o) for o in outs]
    return [p for p, _ in pairs], [t for _, t in pairs]
