"""ONNX rules of the control-flow primitives: ``cond`` → ``If``, ``while`` and ``scan`` →
``Loop``.

Subgraphs read the enclosing graph's values (operands, loop invariants, initializers) by name,
which ONNX allows; only loop-carried values and the iteration number are subgraph inputs.

- ``cond``: an int32 index picks a branch, clamped into range as fx does; two branches are
  one ``If`` on ``index > 0``, more are nested ``If``s.
- ``while``: the condition is computed once before the ``Loop`` and again at the end of each
  iteration on the new carry (``Loop``'s condition output).
- ``scan``: a ``Loop`` of ``length`` iterations; iteration ``i`` reads row ``i`` of each xs
  (``length - 1 - i`` in reverse) with ``Gather``, and the ys are ``Loop``'s scan outputs,
  stacked in iteration order (reversed afterwards for a reverse scan).
"""

from __future__ import annotations

import numpy as np

from fx.export.onnx_graph import Ctx, Graph, Value, register
from fx.lax import primitives as P


def _fresh_inputs(ctx: Ctx, like: list[tuple]) -> list[Value]:
    return [Value(ctx.graph.fresh("in"), shape, dtype) for shape, dtype in like]


# --- cond -----------------------------------------------------------------------------------------


@register(P.cond_p)
def _cond(ctx: Ctx, index: Value, *ops: Value, branches) -> list[str]:
    if len(branches) == 1:
        return [o.name for o in ctx.translate(branches[0], ops)]

    def choose(graph: Graph, first: int) -> str | list[str]:
        """Emit into ``graph`` an If choosing among ``branches[first:]``."""
        pick = graph.node("Greater", [index.name, graph.const(np.int32(first))])[0]
        if first + 1 == len(branches) - 1:
            then = ctx.subgraph(lambda g: ctx.translate(branches[first + 1], ops, g),
                                name="branch", parent=graph)
        else:
            then = ctx.subgraph(lambda g: [Value(n, s, d) for n, (s, d) in
                                           zip(choose(g, first + 1), ctx.outs)],
                                name="branch", parent=graph)
        other = ctx.subgraph(lambda g: ctx.translate(branches[first], ops, g),
                             name="branch", parent=graph)
        return graph.node("If", [pick], len(ctx.outs), then_branch=then, else_branch=other)

    return choose(ctx.graph, 0)


# --- while ------------------------------------------------------------------------------------


@register(P.while_p)
def _while(ctx: Ctx, *operands: Value, cond_jaxpr, body_jaxpr, cond_nconsts,
           body_nconsts) -> list[str]:
    cconsts = list(operands[:cond_nconsts])
    bconsts = list(operands[cond_nconsts:cond_nconsts + body_nconsts])
    carry = list(operands[cond_nconsts + body_nconsts:])
    (first,) = ctx.translate(cond_jaxpr, cconsts + carry)
    i = Value(ctx.graph.fresh("iter"), (), np.dtype(np.int64))
    c = Value(ctx.graph.fresh("cond"), (), np.dtype(np.bool_))
    inner = _fresh_inputs(ctx, ctx.outs)

    def body(g: Graph) -> list[Value]:
        new = ctx.translate(body_jaxpr, bconsts + inner, g)
        (again,) = ctx.translate(cond_jaxpr, cconsts + new, g)
        return [again, *new]

    graph = ctx.subgraph(body, [i, c, *inner], name="while_body")
    outs = ctx.op("Loop", "", first, *carry, n_out=len(carry), body=graph)
    return [outs] if len(carry) == 1 else outs


# --- scan -------------------------------------------------------------------------------------


@register(P.scan_p, shape_params=("length",))
def _scan(ctx: Ctx, *operands: Value, jaxpr, num_consts, num_carry, length, reverse,
          unroll) -> list[str]:
    consts = list(operands[:num_consts])
    init = list(operands[num_consts:num_consts + num_carry])
    xs = list(operands[num_consts + num_carry:])
    trips = ctx.op("Squeeze", ctx.dim(length), ctx.ints([0]))
    i = Value(ctx.graph.fresh("iter"), (), np.dtype(np.int64))
    c = Value(ctx.graph.fresh("cond"), (), np.dtype(np.bool_))
    inner = _fresh_inputs(ctx, ctx.outs[:num_carry])

    def body(g: Graph) -> list[Value]:
        row = i.name
        if reverse:
            last = g.node("Sub", [trips, g.const(np.int64(1))])[0]
            row = g.node("Sub", [last, i.name])[0]
        slices = [Value(g.node("Gather", [x.name, row], axis=0)[0], x.shape[1:], x.dtype)
                  for x in xs]
        outs = ctx.translate(jaxpr, consts + inner + slices, g)
        return [c, *outs]

    graph = ctx.subgraph(body, [i, c, *inner], name="scan_body")
    outs = ctx.op("Loop", trips, "", *init, n_out=len(ctx.outs), body=graph)
    outs = [outs] if len(ctx.outs) == 1 else list(outs)
    if reverse:
        for k in range(num_carry, len(outs)):
            outs[k] = ctx.op("Slice", outs[k], ctx.ints([-1]),
                             ctx.ints([np.iinfo(np.int64).min]), ctx.ints([0]),
                             ctx.ints([-1]))
    return outs
