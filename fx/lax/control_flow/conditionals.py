"""``cond`` and ``switch``: run one of several traced branches, chosen by a runtime index.

One primitive, ``cond``, covers both: operands ``(index, *ops)`` and a param ``branches``, a
tuple of closed jaxprs with identical input and output types. ``index`` is an int32 scalar in
``[0, len(branches))`` (``switch`` clamps it, as jax does; the impl clamps again). Every
branch takes every operand: the constants each branch closes over are hoisted into operands
shared by all branches.

Rules: jvp differentiates every branch with the union of their nonzero output tangents;
partial evaluation splits every branch into a known and an unknown part, the residuals of all
branches concatenated (each branch fills the others' slots with zeros); transposition
transposes every branch (only the chosen one runs); batching with a batched index runs every
branch and picks each lane's result with ``select_n``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fx import dtypes, tree_util
from fx.config import config
from fx.core import EVAL_TRACE, Primitive, get_aval, physical_rules, set_current_trace
from fx.interpreters import batching, jvp, partial_eval, physical, transpose
from fx.interpreters.batching import moveaxis
from fx.interpreters.call import transpose_jaxpr
from fx.interpreters.jvp import Zero, instantiate
from fx.interpreters.transpose import is_undefined
from fx.jaxpr import Var
from fx.lax.base import broadcast_in_dim, full, shape_error
from fx.lax.control_flow import common
from fx.lax.control_flow.common import call, same_type
from fx.lax.elementwise import clamp, convert_element_type, ne, select_n
from fx.tracing import flatten_fun

cond_p = Primitive("cond", multiple_results=True)  # operands: index, *ops; params: branches
physical_rules[cond_p] = physical.subjaxpr_rule(cond_p)  # typed PRNG keys: run on their data


@cond_p.def_abstract_eval
def _cond_abstract_eval(index, *ops, branches):
    if index.shape != () or index.dtype != dtypes.int32:
        raise shape_error("cond", "the branch index must be an int32 scalar", index)
    if not branches:
        raise TypeError("cond: needs at least one branch")
    for i, b in enumerate(branches):
        if len(b.in_avals) != len(ops) or not all(map(same_type, b.in_avals, ops)):
            raise shape_error(
                "cond", f"operands do not match the inputs of branch {i} "
                f"{[a.str_short() for a in b.in_avals]}", *ops)
        if len(b.out_avals) != len(branches[0].out_avals) or not all(
                map(same_type, b.out_avals, branches[0].out_avals)):
            raise TypeError(
                f"cond: branch {i} returns {[a.str_short() for a in b.out_avals]} but branch 0 "
                f"returns {[a.str_short() for a in branches[0].out_avals]}")
    return [common.join_weak(*col) for col in zip(*(b.out_avals for b in branches))]


def run_cond(evaluate: Callable, index, *ops, branches):
    """Run the chosen branch with ``evaluate(closed_jaxpr, args)`` (the impl evaluates op by op;
    the NaN checker of ``fx.debug`` passes its own evaluator)."""
    i = min(max(int(index), 0), len(branches) - 1)
    return evaluate(branches[i], list(ops))


@cond_p.def_impl
def _cond_impl(index, *bufs, branches):
    with set_current_trace(EVAL_TRACE):
        ops = common.values_in(bufs, branches[0].in_avals)
        outs = run_cond(lambda c, a: call(c, *a), index, *ops, branches=branches)
    return [o._buf for o in outs]


# --- jvp ----------------------------------------------------------------------------------------


def _cond_jvp(primals, tangents, *, branches):
    index, ops, op_t = primals[0], primals[1:], tangents[1:]
    nonzeros = [not isinstance(t, Zero) for t in op_t]
    out_nz = [False] * len(branches[0].out_avals)
    for b in branches:
        _, nz = jvp.jvp_jaxpr(b, nonzeros, False)
        out_nz = [x or y for x, y in zip(out_nz, nz)]
    new = tuple(jvp.jvp_jaxpr(b, nonzeros, out_nz)[0] for b in branches)
    tans = [t for t in op_t if not isinstance(t, Zero)]
    outs = cond_p.bind(index, *ops, *tans, branches=new)
    n = len(out_nz)
    it = iter(outs[n:])
    return outs[:n], [next(it) if nz else Zero(get_aval(o)) for nz, o in zip(out_nz, outs)]


jvp.jvp_rules[cond_p] = _cond_jvp


# --- partial evaluation -------------------------------------------------------------------------


def _cond_partial_eval(trace, args, params):
    branches = params["branches"]
    index, ops = args[0], args[1:]
    if trace.is_unknown(index):
        return trace.stage(cond_p, args, params)
    unknowns = [trace.is_unknown(a) for a in ops]
    n_out = len(branches[0].out_avals)
    splits = [common.partial_eval_jaxpr(b, unknowns, [False] * n_out) for b in branches]
    out_uk = [any(col) for col in zip(*(s[2] for s in splits))]
    if any(s[2] != out_uk for s in splits):  # a branch has an unknown output the others lack
        splits = [common.partial_eval_jaxpr(b, unknowns, out_uk) for b in branches]
    n_known = n_out - sum(out_uk)
    res_avals = [k.out_avals[n_known:] for k, _, _, _ in splits]
    all_res = [a for avals in res_avals for a in avals]
    known_avals = [a for a, u in zip(branches[0].in_avals, unknowns) if not u]

    known_branches, unknown_branches = [], []
    start = 0
    for known, unknown, _, n_res in splits:
        before, after = all_res[:start], all_res[start + n_res:]

        def padded(*xs, known=known, before=before, after=after):
            outs = call(known, *xs)
            zeros = lambda avs: [full(a.shape, 0, a.dtype, a.weak_type) for a in avs]  # noqa: E731
            return outs[:n_known] + zeros(before) + outs[n_known:] + zeros(after)

        known_branches.append(common.trace_closed(padded, known_avals, "cond (known part)"))
        uj = unknown.jaxpr
        invars = ([Var(a) for a in before] + uj.invars[:n_res] + [Var(a) for a in after]
                  + uj.invars[n_res:])
        unknown_branches.append(common.with_signature(unknown, invars, uj.outvars))
        start += n_res

    known_ops = [a for a, u in zip(ops, unknowns) if not u]
    with set_current_trace(trace.parent):
        known_outs = cond_p.bind(index, *known_ops, branches=tuple(known_branches))
    residuals = known_outs[n_known:]
    if not any(out_uk):
        return known_outs[:n_known]
    unknown_ops = [a for a, u in zip(ops, unknowns) if u]
    unknown_outs = trace.stage(cond_p, [index, *residuals, *unknown_ops],
                               dict(branches=tuple(unknown_branches)))
    k_it, u_it = iter(known_outs[:n_known]), iter(unknown_outs)
    return [next(u_it) if u else next(k_it) for u in out_uk]


partial_eval.pe_rules[cond_p] = _cond_partial_eval


# --- transposition ------------------------------------------------------------------------------


def _cond_transpose(cts, index, *ops, branches):
    if is_undefined(index):
        raise AssertionError("cond: the branch index cannot be a linear input")
    linear = [is_undefined(x) for x in ops]
    nonlinear = [x for x in ops if not is_undefined(x)]
    cts = [instantiate(c) for c in cts]
    new = tuple(transpose_jaxpr(b, linear) for b in branches)
    outs = cond_p.bind(index, *nonlinear, *cts, branches=new)
    it = iter(outs)
    return [None] + [next(it) if lin else None for lin in linear]


transpose.transpose_rules[cond_p] = _cond_transpose


# --- batching -----------------------------------------------------------------------------------


def _cond_batch(axis, vals, dims, *, branches):
    index, ops = vals[0], vals[1:]
    index_dim, op_dims = dims[0], dims[1:]
    n_out = len(branches[0].out_avals)
    if index_dim is not None:
        # Each lane may take another branch: run them all and select per lane.
        ops = [v if d is None else moveaxis(v, d, 0) for v, d in zip(ops, op_dims)]
        in_dims = [None if d is None else 0 for d in op_dims]
        results = [call(batching.batch_jaxpr(b, axis, in_dims, [0] * n_out)[0], *ops)
                   for b in branches]
        index = moveaxis(index, index_dim, 0)
        outs = []
        for cases in zip(*results):
            which = broadcast_in_dim(index, get_aval(cases[0]).shape, (0,))
            outs.append(select_n(which, *cases))
        return outs, [0] * n_out
    batched = [False] * n_out
    for b in branches:
        _, out_dims = batching.batch_jaxpr(b, axis, op_dims)
        batched = [x or d is not None for x, d in zip(batched, out_dims)]
    out_dims = [0 if x else None for x in batched]
    new = tuple(batching.batch_jaxpr(b, axis, op_dims, out_dims)[0] for b in branches)
    return cond_p.bind(index, *ops, branches=new), out_dims


batching.batch_rules[cond_p] = _cond_batch


# --- the user-facing functions ------------------------------------------------------------------


def _bind_cond(what: str, index, funs: Sequence[Callable], names: Sequence[str], operands):
    leaves, in_tree = common.flatten_values((tuple(operands), {}), what)
    avals = [get_aval(x) for x in leaves]
    jaxprs, consts, trees = [], [], []
    for f, name in zip(funs, names):
        flat, store = flatten_fun(f, in_tree, f"{what} {name}")
        closed, c = common.trace_flat(flat, avals, f"{what} {name} tracing")
        jaxprs.append(closed)
        consts.append(c)
        trees.append(store["tree"])
    common.check_same_outputs(what, names, trees, [j.out_avals for j in jaxprs])
    # Every branch takes every branch's constants (ignoring the others'), then the operands.
    all_consts = [c for cs in consts for c in cs]
    const_avals = [get_aval(c) for c in all_consts]
    branches, start = [], 0
    for closed, cs in zip(jaxprs, consts):
        n, invars = len(cs), closed.jaxpr.invars
        new_invars = ([Var(a) for a in const_avals[:start]] + invars[:n]
                      + [Var(a) for a in const_avals[start + n:]] + invars[n:])
        branches.append(common.with_signature(closed, new_invars, closed.jaxpr.outvars))
        start += n
    outs = cond_p.bind(index, *all_consts, *leaves, branches=tuple(branches))
    return tree_util.tree_unflatten(trees[0], outs)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, with ``pred`` a traced
    scalar (bool, or a number compared with 0).

    Both functions are traced (to jaxprs of identical output types) and one runs. Under
    ``vmap`` with a batched ``pred`` both run and each lane selects its result; gradients flow
    through the branch taken. Under ``fx.disable_jit()`` with a concrete ``pred`` only the
    chosen function is called, in Python.

    Example::

        >>> fx.lax.cond(x > 0, lambda x: x * 2.0, lambda x: -x, x)
    """
    if not callable(true_fun) or not callable(false_fun):
        raise TypeError("cond: true_fun and false_fun must be callable; the signature is "
                        "cond(pred, true_fun, false_fun, *operands)")
    pred = common.as_value(pred, "cond")
    aval = get_aval(pred)
    if aval.shape != ():
        raise TypeError(
            f"cond: the predicate must be a scalar, got {aval.str_short()}. For elementwise "
            "choices use fx.numpy.where (or vmap the cond)")
    if config.disable_jit and common.is_concrete(pred):
        return true_fun(*operands) if bool(pred) else false_fun(*operands)
    if aval.dtype != dtypes.bool_:
        pred = ne(pred, 0)
    index = convert_element_type(pred, dtypes.int32)
    return _bind_cond("cond", index, (false_fun, true_fun), ("false_fun", "true_fun"), operands)


def switch(index, branches: Sequence[Callable], *operands):
    """``branches[index](*operands)`` for a traced integer scalar ``index``, clamped to
    ``[0, len(branches) - 1]`` as in jax.

    Example::

        >>> fx.lax.switch(i, [lambda x: x, lambda x: x ** 2, fnp.sin], x)
    """
    branches = tuple(branches)
    if not branches:
        raise ValueError("switch: needs at least one branch")
    if not all(callable(b) for b in branches):
        raise TypeError("switch: every branch must be callable; the signature is "
                        "switch(index, branches, *operands)")
    index = common.as_value(index, "switch")
    aval = get_aval(index)
    if aval.shape != ():
        raise TypeError(f"switch: the branch index must be a scalar, got {aval.str_short()}")
    if not dtypes.is_int(aval.dtype):
        raise TypeError(f"switch: the branch index must be an integer, got {aval.str_short()}")
    if len(branches) == 1:
        return branches[0](*operands)
    if config.disable_jit and common.is_concrete(index):
        return branches[min(max(int(index), 0), len(branches) - 1)](*operands)
    index = clamp(0, convert_element_type(index, dtypes.int32), len(branches) - 1)
    names = [f"branch {i}" for i in range(len(branches))]
    return _bind_cond("switch", index, branches, names, operands)
