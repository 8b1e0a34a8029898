"""``while_loop`` and ``fori_loop``: loops whose trip count is decided at run time.

The ``while`` primitive takes operands ``(*cond_consts, *body_consts, *carry)`` and params
``cond_jaxpr`` (``cond_consts, carry -> bool[]``), ``body_jaxpr`` (``body_consts, carry ->
carry``), ``cond_nconsts`` and ``body_nconsts``; it returns the final carry.

Rules: jvp carries tangents alongside the carry (a fixed point decides which carries get a
nonzero tangent). Partial evaluation runs the known carries in a loop of their own and stages
the whole loop for the unknown ones, so ``fx.linearize`` works; transposition is impossible
(the trip count is not known in reverse) and raises an error suggesting ``scan`` or a
``fori_loop`` with static bounds. Batching with a batched predicate runs until every lane is
done, each lane keeping its carry once its own predicate is false.

``fori_loop`` with concrete bounds is a ``scan`` (so it is reverse-differentiable); with traced
bounds it is a ``while_loop``.
"""

from __future__ import annotations

from collections.abc import Callable

from fx import dtypes, tree_util
from fx.config import config
from fx.core import (
    EVAL_TRACE,
    ConcretizationTypeError,
    Primitive,
    get_aval,
    physical_rules,
    set_current_trace,
)
from fx.interpreters import batching, jvp, partial_eval, physical, transpose
from fx.interpreters.batching import matchaxis
from fx.interpreters.jvp import Zero, instantiate
from fx.lax.base import broadcast_in_dim, shape_error
from fx.lax.control_flow import common
from fx.lax.control_flow.common import call, same_type
from fx.lax.elementwise import add, convert_element_type, lt, select_n
from fx.lax.reductions import reduce_or
from fx.tracing import user_source_info

while_p = Primitive("while", multiple_results=True)
# operands: *cond_consts, *body_consts, *carry; params: cond_jaxpr, body_jaxpr, cond_nconsts,
# body_nconsts
physical_rules[while_p] = physical.subjaxpr_rule(while_p)  # typed PRNG keys: run on their data


def _split(xs, cond_nconsts: int, body_nconsts: int):
    return (xs[:cond_nconsts], xs[cond_nconsts:cond_nconsts + body_nconsts],
            xs[cond_nconsts + body_nconsts:])


@while_p.def_abstract_eval
def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts, carry = _split(avals, cond_nconsts, body_nconsts)
    out = cond_jaxpr.out_avals
    if len(out) != 1 or out[0].shape != () or out[0].dtype != dtypes.bool_:
        raise TypeError(f"while: cond_jaxpr must return a boolean scalar, got "
                        f"{[a.str_short() for a in out]}")
    for name, jaxpr, ins in (("cond_jaxpr", cond_jaxpr, [*cconsts, *carry]),
                             ("body_jaxpr", body_jaxpr, [*bconsts, *carry])):
        if len(jaxpr.in_avals) != len(ins) or not all(map(same_type, jaxpr.in_avals, ins)):
            raise shape_error("while", f"operands do not match the inputs of {name} "
                              f"{[a.str_short() for a in jaxpr.in_avals]}", *ins)
    body_out = body_jaxpr.out_avals
    if len(body_out) != len(carry) or not all(map(same_type, body_out, carry)):
        raise TypeError(f"while: body_jaxpr returns {[a.str_short() for a in body_out]} for "
                        f"the carry {[a.str_short() for a in carry]}")
    return list(body_jaxpr.in_avals[body_nconsts:])


def run_while(evaluate: Callable, *vals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """Loop in Python with ``evaluate(closed_jaxpr, args)`` running the bodies."""
    cconsts, bconsts, carry = _split(list(vals), cond_nconsts, body_nconsts)
    while bool(evaluate(cond_jaxpr, [*cconsts, *carry])[0]._buf):
        carry = evaluate(body_jaxpr, [*bconsts, *carry])
    return carry


@while_p.def_impl
def _while_impl(*bufs, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    in_avals = cond_jaxpr.in_avals[:cond_nconsts] + body_jaxpr.in_avals
    with set_current_trace(EVAL_TRACE):
        outs = run_while(lambda c, a: call(c, *a), *common.values_in(bufs, in_avals),
                         cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                         cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
    return [o._buf for o in outs]


# --- jvp ----------------------------------------------------------------------------------------


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts, carry = _split(primals, cond_nconsts, body_nconsts)
    _, bconst_t, carry_t = _split(tangents, cond_nconsts, body_nconsts)
    bconst_nz = [not isinstance(t, Zero) for t in bconst_t]
    carry_nz = [not isinstance(t, Zero) for t in carry_t]
    while True:  # a carry whose tangent becomes nonzero in some iteration needs one throughout
        _, out_nz = jvp.jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, False)
        new = [a or b for a, b in zip(carry_nz, out_nz)]
        if new == carry_nz:
            break
        carry_nz = new
    body, _ = jvp.jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, carry_nz)
    nb, nc, nbt, nct = len(bconsts), len(carry), sum(bconst_nz), sum(carry_nz)
    # jvp_jaxpr gives (bconsts, carry, bconst_t, carry_t); the loop wants consts first.
    body = common.permute_invars(
        body, [*range(nb), *range(nb + nc, nb + nc + nbt), *range(nb, nb + nc),
               *range(nb + nc + nbt, nb + nc + nbt + nct)])
    common.remember_origin(body, body_jaxpr)
    cond = common.insert_unused_invars(
        cond_jaxpr, len(cond_jaxpr.in_avals),
        [a for a, nz in zip(body_jaxpr.in_avals[nb:], carry_nz) if nz])
    tans = [t for t in bconst_t if not isinstance(t, Zero)]
    ctans = [instantiate(t) for t, nz in zip(carry_t, carry_nz) if nz]
    outs = while_p.bind(*cconsts, *bconsts, *tans, *carry, *ctans, cond_jaxpr=cond,
                        body_jaxpr=body, cond_nconsts=cond_nconsts, body_nconsts=nb + nbt)
    it = iter(outs[nc:])
    return outs[:nc], [next(it) if nz else Zero(get_aval(o)) for nz, o in zip(carry_nz, outs)]


jvp.jvp_rules[while_p] = _while_jvp


# --- partial evaluation and (no) transposition --------------------------------------------------


def _while_partial_eval(trace, args, params):
    """Known carries (those independent of unknown inputs) run in a loop of their own; the
    unknown ones come from the whole loop, staged with the known inputs as residuals."""
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
    unknowns = [trace.is_unknown(a) for a in args]
    cc_uk, bc_uk, carry_uk = _split(unknowns, nc, nb)
    carry_uk, (body_known, _, _, _) = common.carry_fixed_point(body_jaxpr, bc_uk, carry_uk, [])
    cond_known, _, (pred_uk,), _ = common.partial_eval_jaxpr(cond_jaxpr, cc_uk + carry_uk,
                                                             [False])
    if pred_uk:
        return trace.stage(while_p, args, params)  # the trip count itself is unknown
    n_known = len(carry_uk) - sum(carry_uk)
    known_body = common.known_outputs(body_known, n_known)
    common.remember_origin(known_body, body_jaxpr)
    keep = lambda xs, uk: [x for x, u in zip(xs, uk) if not u]  # noqa: E731
    cconsts, bconsts, carry = _split(args, nc, nb)
    with set_current_trace(trace.parent):
        known_outs = while_p.bind(
            *keep(cconsts, cc_uk), *keep(bconsts, bc_uk), *keep(carry, carry_uk),
            cond_jaxpr=common.known_outputs(cond_known, 1), body_jaxpr=known_body,
            cond_nconsts=nc - sum(cc_uk), body_nconsts=nb - sum(bc_uk))
    if not any(carry_uk):
        return known_outs
    staged = trace.stage(while_p, args, params)
    k_it = iter(known_outs)
    return [s if u else next(k_it) for s, u in zip(staged, carry_uk)]


partial_eval.pe_rules[while_p] = _while_partial_eval


def _while_transpose(cts, *args, body_jaxpr, **params):
    origin = common.origin_of(body_jaxpr)
    where = f" (the loop at {common.source_location(origin)})" if origin else ""
    raise ValueError(
        "Reverse-mode differentiation does not work for fx.lax.while_loop or fx.lax.fori_loop "
        f"with traced (dynamic) start/stop values{where}: the number of iterations is only "
        "known when the loop runs. Try fx.lax.scan, or fori_loop with static (Python int) "
        "bounds; forward mode (fx.jvp, fx.jacfwd) does work.")


transpose.transpose_rules[while_p] = _while_transpose


# --- batching -----------------------------------------------------------------------------------


def _while_batch(axis, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts, carry = _split(vals, cond_nconsts, body_nconsts)
    cc_dims, bc_dims, carry_dims = _split(dims, cond_nconsts, body_nconsts)
    carry_b = [d is not None for d in carry_dims]
    while True:
        c_dims = [0 if b else None for b in carry_b]
        _, out_dims = batching.batch_jaxpr(body_jaxpr, axis, [*bc_dims, *c_dims])
        (pred_dim,) = batching.batch_jaxpr(cond_jaxpr, axis, [*cc_dims, *c_dims])[1]
        new = [b or d is not None for b, d in zip(carry_b, out_dims)]
        if pred_dim is not None:  # lanes stop at different times: every carry varies
            new = [True] * len(carry_b)
        if new == carry_b:
            break
        carry_b = new
    c_dims = [0 if b else None for b in carry_b]
    carry = [matchaxis(axis.size, d, 0, x) if b else x
             for x, d, b in zip(carry, carry_dims, carry_b)]
    body, _ = batching.batch_jaxpr(body_jaxpr, axis, [*bc_dims, *c_dims], c_dims)
    common.remember_origin(body, body_jaxpr)
    if pred_dim is None:
        cond, _ = batching.batch_jaxpr(cond_jaxpr, axis, [*cc_dims, *c_dims], [None])
        outs = while_p.bind(*cconsts, *bconsts, *carry, cond_jaxpr=cond, body_jaxpr=body,
                            cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
        return outs, c_dims
    # A batched predicate: loop while any lane wants to; lanes that are done keep their carry.
    lanes, _ = batching.batch_jaxpr(cond_jaxpr, axis, [*cc_dims, *c_dims], [0])
    nc, nb = len(cconsts), len(bconsts)
    cond_avals, body_avals = lanes.in_avals, body.in_avals

    def any_lane(*xs):
        return [reduce_or(call(lanes, *xs)[0], (0,))]

    def masked_body(*xs):
        cc, bc, old = xs[:nc], xs[nc:nc + nb], xs[nc + nb:]
        (going,) = call(lanes, *cc, *old)
        new = call(body, *bc, *old)
        return [select_n(broadcast_in_dim(going, get_aval(o).shape, (0,)), o, n)
                for o, n in zip(old, new)]

    cond = common.trace_closed(any_lane, cond_avals, "vmap of a while_loop predicate")
    masked = common.trace_closed(masked_body, [*cond_avals[:nc], *body_avals],
                                 "vmap of a while_loop body")
    common.remember_origin(masked, body_jaxpr)
    outs = while_p.bind(*cconsts, *cconsts, *bconsts, *carry, cond_jaxpr=cond,
                        body_jaxpr=masked, cond_nconsts=nc, body_nconsts=nc + nb)
    return outs, c_dims


batching.batch_rules[while_p] = _while_batch


# --- the user-facing functions ------------------------------------------------------------------


def _trace_loop_fun(what: str, fn: Callable, fn_name: str, tree, avals):
    def flat(*leaves):
        out = fn(tree_util.tree_unflatten(tree, list(leaves)))
        out_leaves, store["tree"] = common.flatten_values(out, f"{what}: {fn_name} output")
        return out_leaves

    store: dict = {}
    closed, consts = common.trace_flat(flat, avals, f"{what} {fn_name} tracing")
    return closed, consts, store["tree"]


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """``val = init_val; while cond_fun(val): val = body_fun(val); return val`` with traced
    values. ``body_fun`` must return a carry of the same pytree structure, shapes and dtypes as
    ``init_val``; ``cond_fun`` must return a boolean scalar.

    Forward-mode differentiable and batchable (a batched predicate runs until every lane is
    done); not reverse-mode differentiable: use :func:`scan` or :func:`fori_loop` with static
    bounds for ``grad``.

    Example::

        >>> fx.lax.while_loop(lambda x: x < 10, lambda x: x * 2, 1)
        Array(16, dtype=int32, weak_type=True)
    """
    return _while_loop(cond_fun, body_fun, init_val, "while_loop")


def _while_loop(cond_fun, body_fun, init_val, what: str, counted: bool = False):
    """:func:`while_loop`, with errors worded for ``what`` (``fori_loop`` loops over
    ``(i, value)`` pairs: ``counted``)."""
    if config.disable_jit:
        val = init_val
        try:
            while bool(cond_fun(val)):
                val = body_fun(val)
            return val
        except ConcretizationTypeError:  # traced values (e.g. under vmap): stage the loop
            pass
    init, tree = common.flatten_values(init_val, what)
    avals = [get_aval(x) for x in init]
    body, bconsts, out_tree = _trace_loop_fun(what, body_fun, "body_fun", tree, avals)
    if out_tree == tree:
        init, changed = common.promote_weak_carry(init, avals, body.out_avals)
        if changed:  # a weakly typed initial value took the body's type: trace again
            avals = [get_aval(x) for x in init]
            body, bconsts, out_tree = _trace_loop_fun(what, body_fun, "body_fun", tree, avals)
    common.check_carry(what, tree, out_tree, avals, body.out_avals, "body_fun", counted)
    cond, cconsts, pred_tree = _trace_loop_fun(what, cond_fun, "cond_fun", tree, avals)
    pred = cond.out_avals
    if len(pred) != 1 or pred[0].shape != () or pred[0].dtype != dtypes.bool_:
        raise TypeError(
            f"{what}: cond_fun must return a boolean scalar, got "
            f"{', '.join(a.str_short() for a in pred) or 'nothing'}; compare explicitly, e.g. "
            "x < n, and reduce arrays with .any()/.all()")
    common.remember_origin(body, user_source_info())
    outs = while_p.bind(*cconsts, *bconsts, *init, cond_jaxpr=cond, body_jaxpr=body,
                        cond_nconsts=len(cconsts), body_nconsts=len(bconsts))
    return tree_util.tree_unflatten(tree, outs)


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
    """``val = init_val; for i in range(lower, upper): val = body_fun(i, val); return val``.

    With concrete bounds (Python ints or concrete arrays) the loop is a :func:`scan` of
    ``upper - lower`` steps and supports reverse-mode differentiation; with traced bounds it is
    a :func:`while_loop` (forward mode only). ``i`` has the (promoted) dtype of the bounds.

    Example::

        >>> fx.lax.fori_loop(0, 5, lambda i, x: x + i, 0)
        Array(10, dtype=int32, weak_type=True)
    """
    from fx.lax.control_flow.scans import _scan

    lower, upper = common.as_value(lower, "fori_loop"), common.as_value(upper, "fori_loop")
    la, ua = get_aval(lower), get_aval(upper)
    for name, a in (("lower", la), ("upper", ua)):
        if a.shape != () or not dtypes.is_int(a.dtype):
            raise TypeError(f"fori_loop: {name} must be an integer scalar, got {a.str_short()}")
    dt, weak = dtypes.join((la.dtype, la.weak_type), (ua.dtype, ua.weak_type))
    lower = convert_element_type(lower, dt, weak)
    upper = convert_element_type(upper, dt, weak)
    try:
        lo, hi = int(lower), int(upper)
    except TypeError:  # traced bounds
        lo = hi = None
    if lo is not None:
        if config.disable_jit:
            val = init_val
            for i in range(lo, hi):
                val = body_fun(convert_element_type(i, dt, weak), val)
            return val

        def step(carry, _):
            i, x = carry
            return (add(i, 1), body_fun(i, x)), None

        (_, out), _ = _scan(step, (lower, init_val), None, max(hi - lo, 0), False,
                            1 if unroll is None else unroll, "fori_loop", "body_fun", True)
        return out

    def cond_fun(carry):
        return lt(carry[0], upper)

    def body(carry):
        i, x = carry
        return add(i, 1), body_fun(i, x)

    return _while_loop(cond_fun, body, (lower, init_val), "fori_loop", True)[1]
