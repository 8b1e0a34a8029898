"""Evaluating a jaxpr by binding its equations on the current trace.

``eval_jaxpr`` is the universal interpreter: under the eval trace it computes, under any other
trace it re-traces the jaxpr through that transformation (which is how jvp, vmap and transpose
rules of call-like primitives reuse a jaxpr).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fx.array import Array
from fx.jaxpr import ClosedJaxpr, Jaxpr, Literal


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args) -> list[Any]:
    env: dict = {}

    def read(v):
        return Array(v.value, v.aval.weak_type) if isinstance(v, Literal) else env[v]

    if len(args) != len(jaxpr.invars):
        raise TypeError(f"eval_jaxpr: expected {len(jaxpr.invars)} arguments, got {len(args)}")
    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = [outs]
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr) -> Callable[..., list[Any]]:
    """``closed`` as a function of its invars returning the list of its outputs."""

    def fun(*args):
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)

    return fun
