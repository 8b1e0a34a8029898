"""``scan`` and ``map``: a loop of static length over the leading axis of its inputs.

The ``scan`` primitive takes operands ``(*consts, *init, *xs)`` and params ``jaxpr`` (the
body ``consts, carry, x -> carry, y`` on one slice), ``num_consts``, ``num_carry``, ``length``,
``reverse`` and ``unroll`` (kept for jax compatibility; the impl ignores it). It returns the
final carry followed by the per-iteration ``y`` s stacked along a new leading axis.

Rules: jvp scans the jvp of the body (a fixed point decides which carries get a nonzero
tangent). Partial evaluation splits it into a known scan, which also returns the residuals of
every iteration stacked as extra ``ys`` (residuals that are loop constants are passed on
unstacked), and an unknown, linear scan that reads them as ``xs``. Transposition is a scan in
the opposite direction whose carry holds the carry cotangents plus the accumulated cotangents
of the linear constants. Batching scans the batched body (batched ``xs`` carry their batch
dimension at axis 1, so each slice has it in front).
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable

import numpy as np

from fx import tree_util
from fx.array import Array
from fx.config import config
from fx.core import (
    EVAL_TRACE,
    Primitive,
    get_aval,
    is_array_like,
    physical_rules,
    set_current_trace,
)
from fx.interpreters import batching, jvp, partial_eval, physical, transpose
from fx.interpreters.batching import matchaxis, moveaxis
from fx.interpreters.jvp import Zero, instantiate
from fx.interpreters.transpose import UndefinedPrimal, backward_pass, is_undefined
from fx.jaxpr import Var
from fx.lax.base import add_any, reshape, shape_error, zeros_like_aval
from fx.lax.control_flow import common
from fx.lax.control_flow.common import call, same_type
from fx.lax.structural import concatenate, expand_dims, slice_in_dim, squeeze

scan_p = Primitive("scan", multiple_results=True)
# operands: *consts, *init, *xs; params: jaxpr, num_consts, num_carry, length, reverse, unroll
physical_rules[scan_p] = physical.subjaxpr_rule(scan_p)  # typed PRNG keys: run on their data


def _split(xs, num_consts: int, num_carry: int):
    return xs[:num_consts], xs[num_consts:num_consts + num_carry], xs[num_consts + num_carry:]


@scan_p.def_abstract_eval
def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = _split(avals, num_consts, num_carry)
    for x in xs:
        if not x.shape or x.shape[0] != length:
            raise shape_error("scan", f"every xs needs a leading axis of the length {length}",
                              *xs)
    expected = [*consts, *carry, *(x.update(shape=x.shape[1:]) for x in xs)]
    if len(jaxpr.in_avals) != len(expected) or not all(builtins.map(same_type, jaxpr.in_avals,
                                                           expected)):
        raise shape_error("scan", f"operands do not match the body's inputs "
                          f"{[a.str_short() for a in jaxpr.in_avals]}", *avals)
    outs = jaxpr.out_avals
    if len(outs) < num_carry or not all(builtins.map(same_type, outs[:num_carry], carry)):
        raise TypeError(f"scan: the body returns {[a.str_short() for a in outs[:num_carry]]} "
                        f"for the carry {[a.str_short() for a in carry]}")
    ys = [y.update(shape=(length, *y.shape)) for y in outs[num_carry:]]
    return list(jaxpr.in_avals[num_consts:num_consts + num_carry]) + ys


def _stack(values: list, aval) -> Array:
    if not values:
        return Array(np.zeros((0, *aval.shape), aval.dtype), aval.weak_type)
    return Array(np.stack([v._buf for v in values]), aval.weak_type)


def run_scan(evaluate: Callable, *vals, jaxpr, num_consts, num_carry, length, reverse, unroll):
    """Loop in Python with ``evaluate(closed_jaxpr, args)`` running the body."""
    consts, carry, xs = _split(list(vals), num_consts, num_carry)
    ys = []
    for k in range(length):
        i = length - 1 - k if reverse else k
        out = evaluate(jaxpr, [*consts, *carry, *(Array(x._buf[i, ...], x.weak_type)
                                                   for x in xs)])
        carry = out[:num_carry]
        ys.append(out[num_carry:])
    if reverse:
        ys.reverse()
    y_avals = jaxpr.out_avals[num_carry:]
    return list(carry) + [_stack([y[j] for y in ys], a) for j, a in enumerate(y_avals)]


@scan_p.def_impl
def _scan_impl(*bufs, jaxpr, **params):
    n = params["num_consts"] + params["num_carry"]
    avals = [*jaxpr.in_avals[:n],
             *(a.update(shape=(params["length"], *a.shape)) for a in jaxpr.in_avals[n:])]
    with set_current_trace(EVAL_TRACE):
        outs = run_scan(lambda c, a: call(c, *a), *common.values_in(bufs, avals),
                        jaxpr=jaxpr, **params)
    return [o._buf for o in outs]


# --- jvp ----------------------------------------------------------------------------------------


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, **params):
    consts, init, xs = _split(primals, num_consts, num_carry)
    const_t, init_t, xs_t = _split(tangents, num_consts, num_carry)
    nz = lambda ts: [not isinstance(t, Zero) for t in ts]  # noqa: E731
    const_nz, carry_nz, xs_nz = nz(const_t), nz(init_t), nz(xs_t)
    n_ys = len(jaxpr.out_avals) - num_carry
    while True:  # a carry whose tangent becomes nonzero in some iteration needs one throughout
        _, out_nz = jvp.jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz, False)
        new = [a or b for a, b in zip(carry_nz, out_nz)]
        if new == carry_nz:
            break
        carry_nz = new
    body, out_nz = jvp.jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz, carry_nz + [False] * n_ys)
    ys_nz = out_nz[num_carry:]
    # jvp_jaxpr puts every tangent after every primal; the scan groups consts, carry, xs.
    sizes = [len(consts), len(init), len(xs)]
    tsizes = [sum(const_nz), sum(carry_nz), sum(xs_nz)]
    body = common.permute_invars(body, common.interleave_order(sizes, tsizes))
    body = common.permute_outvars(
        body, common.interleave_order([num_carry, n_ys], [tsizes[1], sum(ys_nz)]))
    outs = scan_p.bind(
        *consts, *(t for t in const_t if not isinstance(t, Zero)),
        *init, *(instantiate(t) for t, z in zip(init_t, carry_nz) if z),
        *xs, *(t for t in xs_t if not isinstance(t, Zero)),
        jaxpr=body, num_consts=len(consts) + tsizes[0], num_carry=num_carry + tsizes[1],
        **params)
    carry, carry_t = outs[:num_carry], iter(outs[num_carry:num_carry + tsizes[1]])
    ys, ys_t = outs[num_carry + tsizes[1]:][:n_ys], iter(outs[num_carry + tsizes[1] + n_ys:])
    tangents_out = [next(carry_t) if z else Zero(get_aval(o)) for z, o in zip(carry_nz, carry)]
    tangents_out += [next(ys_t) if z else Zero(get_aval(o)) for z, o in zip(ys_nz, ys)]
    return [*carry, *ys], tangents_out


jvp.jvp_rules[scan_p] = _scan_jvp


# --- partial evaluation -------------------------------------------------------------------------


def _scan_partial_eval(trace, args, params):
    jaxpr, nc, ncar = params["jaxpr"], params["num_consts"], params["num_carry"]
    rest = {k: params[k] for k in ("length", "reverse", "unroll")}
    consts, init, xs = _split(list(args), nc, ncar)
    const_uk, carry_uk, xs_uk = _split([trace.is_unknown(a) for a in args], nc, ncar)
    carry_uk, (known, unknown, out_uk, n_res) = common.carry_fixed_point(
        jaxpr, const_uk, carry_uk, xs_uk)
    keep = lambda vals, uk, want=False: [v for v, u in zip(vals, uk) if u == want]  # noqa: E731
    k_consts, k_init, k_xs = keep(consts, const_uk), keep(init, carry_uk), keep(xs, xs_uk)
    n_known_out = len(out_uk) - sum(out_uk)
    # Residuals that are known constants of the body go to the unknown scan as constants;
    # the others are stacked along the scan axis, one slice per iteration.
    kj = known.jaxpr
    const_pos = {v: i for i, v in enumerate(kj.invars[:len(k_consts)])}
    res_vars = kj.outvars[n_known_out:]
    fwd = [const_pos.get(v) if isinstance(v, Var) else None for v in res_vars]
    fwd_idx = [r for r, f in enumerate(fwd) if f is not None]
    stacked_idx = [r for r, f in enumerate(fwd) if f is None]
    known = common.with_signature(
        known, kj.invars, kj.outvars[:n_known_out] + [res_vars[r] for r in stacked_idx])
    n_kcarry = len(k_init)
    with set_current_trace(trace.parent):
        known_outs = scan_p.bind(*k_consts, *k_init, *k_xs, jaxpr=known,
                                 num_consts=len(k_consts), num_carry=n_kcarry, **rest)
    if not any(out_uk):  # unknown inputs feed only dead code
        return known_outs[:n_known_out]
    stacked = known_outs[n_known_out:]
    uj = unknown.jaxpr
    res_in, uk_in = uj.invars[:n_res], uj.invars[n_res:]
    n_ukc, n_ukcar = sum(const_uk), sum(carry_uk)
    unknown = common.with_signature(
        unknown,
        [*(res_in[r] for r in fwd_idx), *uk_in[:n_ukc + n_ukcar], *(res_in[r] for r in
                                                                     stacked_idx),
         *uk_in[n_ukc + n_ukcar:]],
        uj.outvars)
    staged_args = [*(k_consts[fwd[r]] for r in fwd_idx), *keep(consts, const_uk, True),
                   *keep(init, carry_uk, True), *stacked, *keep(xs, xs_uk, True)]
    unknown_outs = trace.stage(scan_p, staged_args, dict(
        jaxpr=unknown, num_consts=len(fwd_idx) + n_ukc, num_carry=n_ukcar, **rest))
    k_it, u_it = iter(known_outs[:n_known_out]), iter(unknown_outs)
    return [next(u_it) if u else next(k_it) for u in out_uk]


partial_eval.pe_rules[scan_p] = _scan_partial_eval


# --- transposition ------------------------------------------------------------------------------


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, init, xs = _split(args, num_consts, num_carry)
    lin_c, lin_x = [is_undefined(c) for c in consts], [is_undefined(x) for x in xs]
    res_c = [c for c in consts if not is_undefined(c)]
    res_x = [x for x in xs if not is_undefined(x)]
    in_avals = jaxpr.in_avals
    c_avals, carry_avals, x_avals = _split(in_avals, num_consts, num_carry)
    lin_c_avals = [a for a, lin in zip(c_avals, lin_c) if lin]
    y_avals = jaxpr.out_avals[num_carry:]
    n_rc, n_lc = len(res_c), len(lin_c_avals)

    # Carries are always linear here: a known initial value given to a linear scan (a zero
    # tangent instantiated by the jvp rule) is a constant whose cotangent nobody needs.
    def body_t(*vals):
        rc, acc = vals[:n_rc], vals[n_rc:n_rc + n_lc]
        ct_carry = vals[n_rc + n_lc:n_rc + n_lc + num_carry]
        rx = vals[n_rc + n_lc + num_carry:n_rc + n_lc + num_carry + len(res_x)]
        ct_y = vals[n_rc + n_lc + num_carry + len(res_x):]
        rc_it, rx_it = iter(rc), iter(rx)
        body_args = [UndefinedPrimal(a) if lin else next(rc_it) for a, lin in zip(c_avals, lin_c)]
        body_args += [UndefinedPrimal(a) for a in carry_avals]
        body_args += [UndefinedPrimal(a) if lin else next(rx_it) for a, lin in zip(x_avals,
                                                                                   lin_x)]
        cts_in = backward_pass(jaxpr.jaxpr, jaxpr.consts, body_args, [*ct_carry, *ct_y])
        ct_c, ct_init, ct_x = _split(cts_in, num_consts, num_carry)
        new_acc = [a if isinstance(c, Zero) else add_any(a, c)
                   for a, c in zip(acc, (c for c, lin in zip(ct_c, lin_c) if lin))]
        return [*new_acc, *(instantiate(c) for c in ct_init),
                *(instantiate(c) for c, lin in zip(ct_x, lin_x) if lin)]

    body_avals = [*(get_aval(c) for c in res_c), *lin_c_avals, *jaxpr.out_avals[:num_carry],
                  *(get_aval(x).update(shape=get_aval(x).shape[1:]) for x in res_x), *y_avals]
    body = common.trace_closed(body_t, body_avals, "transpose of a scan body")
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    outs = scan_p.bind(
        *res_c, *(zeros_like_aval(a) for a in lin_c_avals), *(instantiate(c) for c in ct_carry),
        *res_x, *(instantiate(c) for c in ct_ys),
        jaxpr=body, num_consts=n_rc, num_carry=n_lc + num_carry, length=length,
        reverse=not reverse, unroll=unroll)
    ct_consts, ct_init, ct_xs = iter(outs[:n_lc]), outs[n_lc:n_lc + num_carry], iter(
        outs[n_lc + num_carry:])
    return ([next(ct_consts) if lin else None for lin in lin_c]
            + [c if is_undefined(x) else None for c, x in zip(ct_init, init)]
            + [next(ct_xs) if lin else None for lin in lin_x])


transpose.transpose_rules[scan_p] = _scan_transpose


# --- batching -----------------------------------------------------------------------------------


def _scan_batch(axis, vals, dims, *, jaxpr, num_consts, num_carry, **params):
    consts, init, xs = _split(vals, num_consts, num_carry)
    c_dims, init_dims, x_dims = _split(dims, num_consts, num_carry)
    xs = [x if d is None else moveaxis(x, d, 1) for x, d in zip(xs, x_dims)]
    slice_dims = [None if d is None else 0 for d in x_dims]
    carry_b = [d is not None for d in init_dims]
    while True:
        carry_dims = [0 if b else None for b in carry_b]
        _, out_dims = batching.batch_jaxpr(jaxpr, axis, [*c_dims, *carry_dims, *slice_dims])
        new = [b or d is not None for b, d in zip(carry_b, out_dims)]
        if new == carry_b:
            break
        carry_b = new
    ys_dims = [None if d is None else 0 for d in out_dims[num_carry:]]
    body, _ = batching.batch_jaxpr(jaxpr, axis, [*c_dims, *carry_dims, *slice_dims],
                                   [*carry_dims, *ys_dims])
    init = [matchaxis(axis.size, d, 0, x) if b else x
            for x, d, b in zip(init, init_dims, carry_b)]
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=body, num_consts=num_consts,
                       num_carry=num_carry, **params)
    return outs, [*carry_dims, *(None if d is None else 1 for d in ys_dims)]


batching.batch_rules[scan_p] = _scan_batch


# --- the user-facing functions ------------------------------------------------------------------


def _trace_scan_body(f: Callable, carry_tree, x_tree, avals, n_carry: int):
    store: dict = {}

    def flat(*leaves):
        carry = tree_util.tree_unflatten(carry_tree, list(leaves[:n_carry]))
        x = tree_util.tree_unflatten(x_tree, list(leaves[n_carry:]))
        out = f(carry, x)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            got = (f"a single array {get_aval(out).str_short()}" if is_array_like(out)
                   else f"a {type(out).__name__}" + (f" of length {len(out)}" if isinstance(
                       out, (tuple, list)) else ""))
            raise TypeError(f"scan: the body function must return a pair (carry, y), got {got}")
        c_leaves, store["carry"] = common.flatten_values(out[0], "scan: body carry output")
        y_leaves, store["y"] = common.flatten_values(out[1], "scan: body y output")
        return [*c_leaves, *y_leaves]

    body, consts = common.trace_flat(flat, avals, f"scan({common.fun_name(f)}) tracing")
    return body, consts, store["carry"], store["y"]


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1):
    """Loop ``f`` over the leading axis of ``xs``, threading a carry, as ``jax.lax.scan``::

        def scan(f, init, xs, length=None):
            carry, ys = init, []
            for x in xs:
                carry, y = f(carry, x)
                ys.append(y)
            return carry, np.stack(ys)

    ``init``, ``xs`` and the results are pytrees; ``f`` must return a carry of the same
    structure, shapes and dtypes as ``init``. ``reverse=True`` scans from the end (``ys`` stay
    in the order of ``xs``). ``unroll`` is accepted for compatibility and ignored. ``f`` is
    traced once; the scan differentiates in both modes (reverse mode saves what the backward
    pass needs from every iteration) and batches.

    Example::

        >>> fx.lax.scan(lambda c, x: (c + x, c * x), 0.0, fnp.arange(4.0))
        (Array(6., dtype=float32), Array([0., 0., 2., 9.], dtype=float32))
    """
    return _scan(f, init, xs, length, reverse, unroll, "scan", "f")


def _scan(f, init, xs, length, reverse, unroll, what: str, fn: str, counted: bool = False):
    """:func:`scan`, with errors worded for ``what`` (``fori_loop`` scans ``(i, value)``
    pairs: ``counted``)."""
    init_leaves, carry_tree = common.flatten_values(init, what)
    x_leaves, x_tree = common.flatten_values(xs, what)
    lengths = []
    for x in x_leaves:
        a = get_aval(x)
        if not a.shape:
            raise ValueError(f"scan: got a value with no leading axis to scan over: "
                             f"{a.str_short()}")
        lengths.append(a.shape[0])
    if length is not None:
        length = operator.index(length)
        if any(n != length for n in lengths):
            raise ValueError(f"scan: got length={length}, which disagrees with the leading "
                             f"axis sizes {sorted(set(lengths))} of xs")
    elif not lengths:
        raise ValueError("scan: got no values to scan over (xs is None or empty) and no "
                         "length argument")
    elif len(set(lengths)) > 1:
        raise ValueError(f"scan: got values with different leading axis sizes: "
                         f"{', '.join(builtins.map(str, lengths))}")
    else:
        length = lengths[0]
    if config.disable_jit and all(builtins.map(common.is_concrete, init_leaves + x_leaves)):
        return _scan_in_python(f, init, x_leaves, x_tree, length, reverse)
    unroll = length if unroll is True else 1 if unroll is False else int(unroll)
    x_avals = [get_aval(x).update(shape=get_aval(x).shape[1:]) for x in x_leaves]
    avals = [get_aval(x) for x in init_leaves]
    n = len(avals)
    body, consts, c_tree, y_tree = _trace_scan_body(f, carry_tree, x_tree, avals + x_avals, n)
    if c_tree == carry_tree:
        init_leaves, changed = common.promote_weak_carry(init_leaves, avals, body.out_avals)
        if changed:  # a weakly typed initial value took the body's type: trace again
            avals = [get_aval(x) for x in init_leaves]
            body, consts, c_tree, y_tree = _trace_scan_body(f, carry_tree, x_tree,
                                                            avals + x_avals, n)
    common.check_carry(what, carry_tree, c_tree, avals, body.out_avals[:n], fn, counted)
    outs = scan_p.bind(*consts, *init_leaves, *x_leaves, jaxpr=body, num_consts=len(consts),
                       num_carry=n, length=length, reverse=bool(reverse), unroll=unroll)
    return (tree_util.tree_unflatten(carry_tree, outs[:n]),
            tree_util.tree_unflatten(y_tree, outs[n:]))


def _scan_in_python(f, init, x_leaves, x_tree, length: int, reverse: bool):
    """``fx.disable_jit()``: call ``f`` once per step in Python (prints show values)."""
    if length == 0:
        raise ValueError("scan: a zero-length scan is not supported under fx.disable_jit(), "
                         "since the type of its outputs is unknown without tracing")
    carry, ys = init, []
    for k in range(length):
        i = length - 1 - k if reverse else k
        x = tree_util.tree_unflatten(
            x_tree, [squeeze(slice_in_dim(v, i, i + 1), (0,)) for v in x_leaves])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    stacked = tree_util.tree_map(
        lambda *v: concatenate([expand_dims(common.as_value(e, "scan"), (0,)) for e in v], 0),
        *ys)
    return carry, stacked


def map(f: Callable, xs, *, batch_size: int | None = None):  # noqa: A001  (lax's name)
    """``f`` applied to every slice of ``xs`` along its leading axis, stacked, as
    ``jax.lax.map`` (a :func:`scan` without a carry). With ``batch_size``, slices are processed
    ``batch_size`` at a time with ``fx.vmap`` (the remainder in one more vmap).

    Example::

        >>> fx.lax.map(lambda x: x @ x, fnp.ones((4, 3)))
        Array([3., 3., 3., 3.], dtype=float32)
    """
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]

    def vmap(f):  # fx.vmap over the leading axis, without importing the API layer
        def batched(xs):
            leaves, tree = tree_util.tree_flatten(xs)
            store = {}

            def flat_f(*ls):
                out, store["tree"] = tree_util.tree_flatten(f(tree_util.tree_unflatten(tree, ls)))
                return [common.as_value(o, "map") for o in out]

            size = get_aval(leaves[0]).shape[0]
            outs = batching.batch_flat(flat_f, leaves, [0] * len(leaves),
                                       batching.BatchAxis(size, None), lambda i: 0)
            return tree_util.tree_unflatten(store["tree"], outs)

        return batched

    leaves, tree = common.flatten_values(xs, "map")
    if not leaves:
        raise ValueError("map: xs has no arrays to map over")
    n = get_aval(leaves[0]).shape[0]
    batch_size = builtins.min(operator.index(batch_size), builtins.max(n, 1))
    n_main = n // batch_size * batch_size
    main = [reshape(slice_in_dim(x, 0, n_main), (n_main // batch_size, batch_size,
                                                 *get_aval(x).shape[1:])) for x in leaves]
    ys = scan(lambda _, xb: ((), vmap(f)(xb)), (), tree_util.tree_unflatten(tree, main))[1]
    ys = tree_util.tree_map(lambda y: reshape(y, (n_main, *get_aval(y).shape[2:])), ys)
    if n_main == n:
        return ys
    rest = vmap(f)(tree_util.tree_unflatten(tree, [slice_in_dim(x, n_main, n) for x in leaves]))
    return tree_util.tree_map(lambda a, b: concatenate([a, b], 0), ys, rest)
