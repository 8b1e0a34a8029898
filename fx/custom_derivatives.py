"""User-defined derivatives: ``custom_jvp``, ``custom_vjp``, and ``custom_gradient`` and
``closure_convert`` on top of them (rematerialization, ``checkpoint``, is in
:mod:`fx.ad_checkpoint`).

A decorated function is traced into a jaxpr and bound as a call primitive whose params carry
the user's rules, so the rules survive ``jit`` and compose with ``vmap``:

- ``custom_jvp_call``: evaluates the function; its jvp rule calls the user's jvp function.
- ``custom_vjp_call``: evaluates the function; its jvp rule runs the user's ``fwd`` and emits
  a ``custom_lin`` equation holding the residuals, whose transpose calls the user's ``bwd``.
  (Forward mode through a custom_vjp function is an error, as in JAX.)

Outside any transformation the decorated function simply runs. Values the function closes
over are treated as constants by the custom rules; closing over a value being differentiated
by an enclosing transformation is an error (UnexpectedTracerError), as in jax: pass it as an
argument instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from fx import tree_util
from fx.core import (
    EVAL_TRACE,
    Primitive,
    Trace,
    current_trace,
    get_aval,
    physical_rules,
    set_current_trace,
    to_array,
)
from fx.interpreters import batching, jvp, physical, transpose
from fx.interpreters.batching import BatchAxis, batch_flat, bdim_at_front
from fx.interpreters.call import body_param, eval_call_impl
from fx.interpreters.eval import eval_jaxpr
from fx.interpreters.jvp import JVPTrace, Zero, instantiate
from fx.interpreters.partial_eval import PartialEvalTrace
from fx.jaxpr import ClosedJaxpr, Jaxpr
from fx.lax import base
from fx.tracing import abstractify, flatten_fun, trace_to_jaxpr


def _name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


def _trace(fun: Callable, args: tuple, what: str):
    """``(jaxpr with consts hoisted, consts, arg leaves, in_tree, out_tree)``."""
    leaves, in_tree = tree_util.tree_flatten((args, {}))
    leaves = [to_array(x) for x in leaves]
    flat, store = flatten_fun(fun, in_tree, _name(fun))
    closed = trace_to_jaxpr(flat, [abstractify(x) for x in leaves], (), what)
    j = closed.jaxpr
    jaxpr = ClosedJaxpr(Jaxpr([], list(j.constvars) + list(j.invars), j.outvars, j.eqns), [])
    return jaxpr, list(closed.consts), leaves, in_tree, store["tree"]


def _no_symbolic_zeros(symbolic_zeros: bool, what: str, fun) -> None:
    if symbolic_zeros:
        raise NotImplementedError(
            f"{what} of {_name(fun)}: symbolic_zeros=True is not supported; fx passes zero "
            "tangents and cotangents to the rules as zero arrays (symbolic_zeros=False)"
        )


def _check_outs(what: str, expected: Sequence, got: Sequence) -> None:
    if len(expected) != len(got):
        raise TypeError(f"{what}: expected {len(expected)} outputs, got {len(got)}")
    for i, (e, g) in enumerate(zip(expected, got)):
        ga = get_aval(g)
        if ga.shape != e.shape or ga.dtype != e.dtype:
            raise TypeError(
                f"{what}: output {i} should be {e.str_short()} (the function's output type), "
                f"got {ga.str_short()}"
            )


# --- custom_jvp ---------------------------------------------------------------------------------

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
# params: call_jaxpr, jvp (flat function), num_consts


@custom_jvp_call_p.def_abstract_eval
def _custom_jvp_call_abstract_eval(*avals, call_jaxpr, jvp, num_consts):
    return list(call_jaxpr.out_avals)


custom_jvp_call_p.def_impl(lambda *bufs, call_jaxpr, jvp, num_consts:
                           eval_call_impl(*bufs, jaxpr=call_jaxpr))
body_param[custom_jvp_call_p] = "call_jaxpr"
physical_rules[custom_jvp_call_p] = physical.subjaxpr_rule(custom_jvp_call_p)


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts):
    args = primals[num_consts:]
    arg_tangents = [instantiate(t) for t in tangents[num_consts:]]
    outs, touts = jvp(args, arg_tangents)
    _check_outs("custom_jvp rule (primal outputs)", call_jaxpr.out_avals, outs)
    _check_outs("custom_jvp rule (tangent outputs)", call_jaxpr.out_avals, touts)
    return outs, touts


def _custom_jvp_call_batch(axis: BatchAxis, vals, dims, *, call_jaxpr, jvp, num_consts):
    vals = [v if d is None else bdim_at_front(v, d, axis.size) for v, d in zip(vals, dims)]
    in_dims = [None if d is None else 0 for d in dims]
    n_out = len(call_jaxpr.out_avals)
    body, _ = batching.batch_jaxpr(call_jaxpr, axis, in_dims, [0] * n_out)
    arg_dims = in_dims[num_consts:]

    def batched_jvp(primals, tangents):
        def flat(*pt):
            o, t = jvp(list(pt[:len(primals)]), list(pt[len(primals):]))
            return [*o, *t]

        res = batch_flat(flat, [*primals, *tangents], [*arg_dims, *arg_dims], axis,
                         [0] * (2 * n_out))
        return res[:n_out], res[n_out:]

    outs = custom_jvp_call_p.bind(*vals, call_jaxpr=body, jvp=batched_jvp,
                                  num_consts=num_consts)
    return outs, [0] * n_out


jvp.jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp
batching.batch_rules[custom_jvp_call_p] = _custom_jvp_call_batch


class custom_jvp:  # noqa: N801  (named like jax.custom_jvp)
    """A function with a user-defined jvp rule.

    Example::

        @fx.custom_jvp
        def log1pexp(x):
            return fnp.log1p(fnp.exp(x))

        @log1pexp.defjvp
        def log1pexp_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return log1pexp(x), t * fx.nn.sigmoid(x)
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None

    def defjvp(self, jvp_fn: Callable, symbolic_zeros: bool = False) -> Callable:
        """``jvp_fn(primals, tangents) -> (primal_out, tangent_out)``, tuples as in jax.
        Zero tangents reach the rule as zero arrays (``symbolic_zeros=False``, jax's
        default; fx has no symbolic-zero argument type)."""
        _no_symbolic_zeros(symbolic_zeros, "custom_jvp.defjvp", self.fun)
        self.jvp = jvp_fn
        return jvp_fn

    def defjvps(self, *jvps: Callable | None) -> None:
        """One function per argument: ``jvps[i](t_i, primal_out, *primals)`` is that
        argument's contribution to the output tangent (None: not differentiable)."""

        def jvp_fn(primals, tangents):
            out = self.fun(*primals)
            total = None
            for f, t in zip(jvps, tangents):
                if f is None:
                    continue
                c = f(t, out, *primals)
                total = c if total is None else tree_util.tree_map(lambda a, b: a + b, total, c)
            if total is None:
                total = tree_util.tree_map(lambda o: base.zeros_like_aval(get_aval(o)), out)
            return out, total

        self.defjvp(jvp_fn)

    def __call__(self, *args):
        if self.jvp is None:
            raise AttributeError(
                f"No JVP defined for custom_jvp function {_name(self.fun)}; use .defjvp"
            )
        static = {i: args[i] for i in self.nondiff_argnums}
        dyn = tuple(a for i, a in enumerate(args) if i not in static)

        def full(dyn_args):
            it = iter(dyn_args)
            return tuple(static[i] if i in static else next(it) for i in range(len(args)))

        fun = lambda *d: self.fun(*full(d))  # noqa: E731
        trace = _deciding_trace(tree_util.tree_leaves(dyn))
        if trace is EVAL_TRACE:
            with set_current_trace(EVAL_TRACE):
                return fun(*dyn)
        user_jvp, name = self.jvp, _name(self.fun)

        def flat_jvp(in_tree, out_tree, primal_leaves, tangent_leaves):
            p_args, _ = tree_util.tree_unflatten(in_tree, primal_leaves)
            t_args, _ = tree_util.tree_unflatten(in_tree, tangent_leaves)
            # As in jax: non-differentiable arguments first, then the tuples of the others.
            res = user_jvp(*static.values(), tuple(p_args), tuple(t_args))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(
                    f"custom_jvp rule of {name} must return a pair "
                    f"(primal_out, tangent_out), got {type(res).__name__}"
                )
            out, tout = res
            o_leaves, o_tree = tree_util.tree_flatten(out)
            t_leaves, t_tree = tree_util.tree_flatten(tout)
            if t_tree != o_tree or (out_tree is not None and o_tree != out_tree):
                raise TypeError(
                    f"custom_jvp rule of {name} returned outputs of structure "
                    f"{o_tree} / tangents {t_tree}; the function's output structure is "
                    f"{out_tree or o_tree}"
                )
            return [to_array(x) for x in o_leaves], [to_array(x) for x in t_leaves], o_tree

        what = f"custom_jvp({name})"
        if isinstance(trace, JVPTrace):
            # Differentiated here: only the rule runs (as in jax, the function itself is not
            # traced, so it is called as often as under jax).
            return _jvp_with_values(trace, dyn, flat_jvp, name)
        jaxpr, consts, leaves, in_tree, out_tree = _trace(fun, dyn, what)
        rule = lambda p, t: flat_jvp(in_tree, out_tree, p, t)[:2]  # noqa: E731
        outs = custom_jvp_call_p.bind(*consts, *leaves, call_jaxpr=jaxpr, jvp=rule,
                                      num_consts=len(consts))
        return tree_util.tree_unflatten(out_tree, outs)


def _deciding_trace(leaves) -> Trace:
    """The trace that decides what a custom_jvp call does: the current one, skipping
    differentiation traces to which every argument is a constant (a jvp trace seeing only zero
    tangents, a linearize trace seeing only known values). Under ``grad`` outside ``jit`` this
    is a jvp trace over concrete primals, or the eval trace, so the function and its rule run
    on values and may use Python control flow on them, as in jax."""
    trace = current_trace()
    while True:
        if isinstance(trace, JVPTrace) and all(
                isinstance(trace.lift(x)[1], Zero) for x in leaves):
            trace = trace.parent
        elif isinstance(trace, PartialEvalTrace) and not any(trace.is_unknown(x)
                                                              for x in leaves):
            trace = trace.parent
        else:
            return trace


def _jvp_with_values(trace: JVPTrace, dyn: tuple, flat_jvp: Callable, name: str):
    """Apply the user's rule directly to the primals and tangents of ``trace``'s tracers,
    without tracing the function (the primals may be concrete: the rule may branch on them).
    Outputs are tracers of ``trace``."""
    leaves, in_tree = tree_util.tree_flatten((dyn, {}))
    primals, tangents = zip(*(trace.lift(to_array(x)) for x in leaves)) if leaves else ((), ())
    with set_current_trace(trace.parent):
        outs, touts, out_tree = flat_jvp(in_tree, None, list(primals),
                                         [instantiate(t) for t in tangents])
    _check_outs(f"custom_jvp rule of {name} (tangent outputs)", [get_aval(o) for o in outs],
                touts)
    return tree_util.tree_unflatten(out_tree, [trace.wrap(o, t) for o, t in zip(outs, touts)])


# --- custom_vjp ---------------------------------------------------------------------------------

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
# params: call_jaxpr, fwd, bwd (flat functions), num_consts
custom_lin_p = Primitive("custom_lin", multiple_results=True)
# inputs: residuals, tangents; params: bwd, num_res, out_avals


@custom_vjp_call_p.def_abstract_eval
def _custom_vjp_call_abstract_eval(*avals, call_jaxpr, fwd, bwd, num_consts):
    return list(call_jaxpr.out_avals)


custom_vjp_call_p.def_impl(lambda *bufs, call_jaxpr, fwd, bwd, num_consts:
                           eval_call_impl(*bufs, jaxpr=call_jaxpr))
body_param[custom_vjp_call_p] = "call_jaxpr"
physical_rules[custom_vjp_call_p] = physical.subjaxpr_rule(custom_vjp_call_p)


@custom_lin_p.def_abstract_eval
def _custom_lin_abstract_eval(*avals, bwd, num_res, out_avals):
    return list(out_avals)


@custom_lin_p.def_impl
def _custom_lin_impl(*args, bwd, num_res, out_avals):
    raise TypeError(
        "can't apply forward-mode autodiff (jvp) to a custom_vjp function: it defines only a "
        "reverse-mode rule. Use fx.grad/fx.vjp/fx.jacrev, or define a custom_jvp instead."
    )


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts):
    outs, res = fwd(primals[num_consts:])
    _check_outs("custom_vjp fwd (primal outputs)", call_jaxpr.out_avals, outs)
    arg_tangents = [instantiate(t) for t in tangents[num_consts:]]
    touts = custom_lin_p.bind(*res, *arg_tangents, bwd=bwd, num_res=len(res),
                              out_avals=tuple(call_jaxpr.out_avals))
    return outs, touts


def _custom_lin_transpose(cts, *args, bwd, num_res, out_avals):
    res = args[:num_res]
    cts = [instantiate(c) if isinstance(c, Zero) else c for c in cts]
    arg_cts = bwd(list(res), cts)
    return [None] * num_res + list(arg_cts)


def _custom_vjp_call_batch(axis: BatchAxis, vals, dims, *, call_jaxpr, fwd, bwd, num_consts):
    vals = [v if d is None else bdim_at_front(v, d, axis.size) for v, d in zip(vals, dims)]
    in_dims = [None if d is None else 0 for d in dims]
    n_out = len(call_jaxpr.out_avals)
    body, _ = batching.batch_jaxpr(call_jaxpr, axis, in_dims, [0] * n_out)
    arg_dims = in_dims[num_consts:]
    n_res: list[int] = []

    def batched_fwd(args):
        def flat(*a):
            o, r = fwd(list(a))
            n_res[:] = [len(r)]
            return [*o, *r]

        res = batch_flat(flat, list(args), arg_dims, axis, lambda i: 0)
        return res[:n_out], res[n_out:]

    def batched_bwd(res, cts):
        def flat(*rc):
            return list(bwd(list(rc[:len(res)]), list(rc[len(res):])))

        arg_cts = batch_flat(flat, [*res, *cts], [0] * (len(res) + len(cts)), axis,
                             lambda i: 0)
        # An argument that did not vary along the batch gets the cotangent summed over it.
        return [c if d is not None else base.reduce_sum(c, (0,))
                for c, d in zip(arg_cts, arg_dims)]

    outs = custom_vjp_call_p.bind(*vals, call_jaxpr=body, fwd=batched_fwd, bwd=batched_bwd,
                                  num_consts=num_consts)
    return outs, [0] * n_out


def _custom_lin_batch(axis, vals, dims, **params):
    # Only forward mode batches a custom_lin (reverse mode transposes it before batching).
    _custom_lin_impl(**params)


jvp.jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp
transpose.transpose_rules[custom_lin_p] = _custom_lin_transpose
batching.batch_rules[custom_lin_p] = _custom_lin_batch
batching.batch_rules[custom_vjp_call_p] = _custom_vjp_call_batch


class custom_vjp:  # noqa: N801  (named like jax.custom_vjp)
    """A function with a user-defined reverse-mode rule.

    Example::

        @fx.custom_vjp
        def clip_gradient(x):
            return x

        def fwd(x):
            return x, None                         # (output, residuals)

        def bwd(res, g):
            return (fnp.clip(g, -1.0, 1.0),)       # one cotangent per argument

        clip_gradient.defvjp(fwd, bwd)
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """``fwd(*args) -> (out, residuals)`` and ``bwd(residuals, ct_out) -> tuple`` with one
        cotangent per (differentiable) argument (None for a zero one). ``symbolic_zeros``
        must be False (jax's default); ``optimize_remat`` is accepted and changes nothing
        (fx does not run fwd again under checkpoint to save memory)."""
        _no_symbolic_zeros(symbolic_zeros, "custom_vjp.defvjp", self.fun)
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        if self.fwd is None:
            raise AttributeError(
                f"No VJP defined for custom_vjp function {_name(self.fun)}; use .defvjp"
            )
        static = {i: args[i] for i in self.nondiff_argnums}
        dyn = tuple(a for i, a in enumerate(args) if i not in static)

        def full(dyn_args):
            it = iter(dyn_args)
            return tuple(static[i] if i in static else next(it) for i in range(len(args)))

        fun = lambda *d: self.fun(*full(d))  # noqa: E731
        trace = _deciding_trace(tree_util.tree_leaves(dyn))
        if trace is EVAL_TRACE:
            with set_current_trace(EVAL_TRACE):
                return fun(*dyn)
        what = f"custom_vjp({_name(self.fun)})"
        if isinstance(trace, JVPTrace):
            # As for custom_jvp: fwd runs on the primal values (it may branch on them), and
            # the function itself is not traced (as in jax).
            jaxpr = out_tree = None
            leaves, in_tree = tree_util.tree_flatten((dyn, {}))
            leaves = [to_array(x) for x in leaves]
        else:
            jaxpr, consts, leaves, in_tree, out_tree = _trace(fun, dyn, what)
        user_fwd, user_bwd, name = self.fwd, self.bwd, _name(self.fun)
        trees: dict[str, Any] = {"out": out_tree}
        arg_avals = [get_aval(x) for x in leaves]

        def flat_fwd(arg_leaves):
            a, _ = tree_util.tree_unflatten(in_tree, arg_leaves)
            res = user_fwd(*full(a))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(f"custom_vjp fwd of {name} must return (output, residuals)")
            out, residuals = res
            o_leaves, o_tree = tree_util.tree_flatten(out)
            if trees["out"] is None:
                trees["out"] = o_tree
            elif o_tree != trees["out"]:
                raise TypeError(
                    f"custom_vjp fwd of {name} returned output structure {o_tree}, but the "
                    f"function's is {trees['out']}"
                )
            r_leaves, trees["res"] = tree_util.tree_flatten(residuals)
            return [to_array(x) for x in o_leaves], [to_array(x) for x in r_leaves]

        def flat_bwd(res_leaves, ct_leaves):
            residuals = tree_util.tree_unflatten(trees["res"], res_leaves)
            cts = user_bwd(*static.values(), residuals,
                           tree_util.tree_unflatten(trees["out"], ct_leaves))
            n_args = len(args) - len(static)
            if not isinstance(cts, (tuple, list)) or len(cts) != n_args:
                got = type(cts).__name__
                if isinstance(cts, (tuple, list)):
                    got += f" of length {len(cts)}"
                raise TypeError(
                    f"custom_vjp bwd of {name} must return a tuple with one cotangent per "
                    f"differentiable argument ({n_args}), got {got}"
                )
            c_leaves = _cotangent_leaves(tuple(cts), tuple(dyn), arg_avals, name)
            out = []
            for i, (c, a) in enumerate(zip(c_leaves, arg_avals)):
                c = to_array(c)
                if get_aval(c).shape != a.shape:
                    raise ValueError(  # jax: ValueError
                        f"custom_vjp bwd of {name}: cotangent {i} has shape "
                        f"{get_aval(c).shape}, expected {a.shape} (the argument's shape)"
                    )
                out.append(c)
            return out

        if isinstance(trace, JVPTrace):
            return _vjp_with_values(trace, leaves, flat_fwd, flat_bwd, trees)
        outs = custom_vjp_call_p.bind(*consts, *leaves, call_jaxpr=jaxpr, fwd=flat_fwd,
                                      bwd=flat_bwd, num_consts=len(consts))
        return tree_util.tree_unflatten(out_tree, outs)


def _vjp_with_values(trace: JVPTrace, leaves: list, flat_fwd: Callable, flat_bwd: Callable,
                     trees: dict):
    """What the jvp rule of ``custom_vjp_call`` does, on ``trace``'s primals directly: run
    fwd, and emit a ``custom_lin`` of the tangents whose transpose calls bwd."""
    primals, tangents = zip(*(trace.lift(x) for x in leaves)) if leaves else ((), ())
    with set_current_trace(trace.parent):
        outs, res = flat_fwd(list(primals))
        out_avals = tuple(map(get_aval, outs))
        touts = custom_lin_p.bind(*res, *[instantiate(t) for t in tangents], bwd=flat_bwd,
                                  num_res=len(res), out_avals=out_avals)
    return tree_util.tree_unflatten(trees["out"],
                                    [trace.wrap(o, t) for o, t in zip(outs, touts)])


def _cotangent_leaves(cts: tuple, args: tuple, arg_avals: list, name: str) -> list:
    """The leaves of a custom_vjp bwd's cotangents, one per argument leaf. None stands for
    zero cotangents of the whole (sub)tree it replaces, as in jax."""
    args_tree = tree_util.tree_structure(args)
    mismatch = TypeError(
        f"custom_vjp bwd of {name} returned cotangents of structure "
        f"{tree_util.tree_structure(cts)}; they must match the arguments' structure {args_tree} "
        "(None stands for zero cotangents of a whole argument or subtree)"
    )
    c_leaves, c_tree = tree_util.tree_flatten(cts)
    if c_tree == args_tree:
        return c_leaves
    try:
        per_leaf = tree_util.broadcast_prefix(cts, args, is_leaf=lambda x: x is None)
    except ValueError:
        raise mismatch from None
    if sum(c is not None for c in per_leaf) != len(c_leaves):  # a leaf stood for a subtree
        raise mismatch
    return [base.zeros_like_aval(a) if c is None else c for c, a in zip(per_leaf, arg_avals)]


# --- closure conversion and custom_gradient ---------------------------------------------------


def closure_convert(fun: Callable, *example_args):
    """``(converted, consts)``: ``converted(*args, *consts)`` computes ``fun(*args)`` with the
    values ``fun`` closes over passed in explicitly (as ``jax.closure_convert``), so that a
    function closing over traced values can be handed to a custom rule. ``example_args`` give
    the argument types (their values are not used).

    Example::

        >>> def outer(x):
        ...     f = lambda y: y * x                 # closes over x
        ...     g, consts = fx.closure_convert(f, 1.0)
        ...     return g(2.0, *consts)              # == f(2.0)
    """
    leaves, in_tree = tree_util.tree_flatten((example_args, {}))
    avals = [abstractify(to_array(x)) for x in leaves]
    flat, store = flatten_fun(fun, in_tree, _name(fun))
    closed = trace_to_jaxpr(flat, avals, (), f"closure_convert({_name(fun)})")
    jaxpr, consts, out_tree = closed.jaxpr, list(closed.consts), store["tree"]
    n_args = len(example_args)

    def converted(*args_and_consts):
        if len(args_and_consts) != n_args + len(consts):
            raise TypeError(
                f"closure_convert({_name(fun)}): expected {n_args} arguments followed by "
                f"{len(consts)} constants, got {len(args_and_consts)} values"
            )
        args, cs = args_and_consts[:n_args], args_and_consts[n_args:]
        a_leaves, a_tree = tree_util.tree_flatten((tuple(args), {}))
        if a_tree != in_tree:
            raise TypeError(
                f"closure_convert({_name(fun)}): arguments of structure {a_tree}, but it was "
                f"converted for {in_tree}"
            )
        outs = eval_jaxpr(jaxpr, list(cs), *[to_array(x) for x in a_leaves])
        return tree_util.tree_unflatten(out_tree, outs)

    converted.__name__ = _name(fun)
    return converted, consts


class _ConvertedVjp:
    """A custom_gradient's vjp function as residuals: its closed-over values are the leaves,
    the converted function the aux data (so the residuals cross jit boundaries as arrays)."""

    __slots__ = ("fn", "consts")

    def __init__(self, fn: Callable, consts: list):
        self.fn, self.consts = fn, consts


tree_util.register_pytree_node(_ConvertedVjp, lambda r: (r.consts, r.fn),
                               lambda fn, consts: _ConvertedVjp(fn, list(consts)))


def custom_gradient(fun: Callable) -> Callable:
    """A function with a gradient given by ``fun`` itself (as ``jax.custom_gradient``):
    ``fun(*args)`` returns ``(output, vjp_fn)`` where ``vjp_fn(ct)`` returns the cotangents of
    the arguments (a tuple, or a single value for a single argument).

    Example::

        >>> @fx.custom_gradient
        ... def clipped_log(x):
        ...     return fnp.log(x), lambda g: g / fnp.maximum(x, 1e-3)
    """

    @custom_vjp
    def f(*args):
        return fun(*args)[0]

    def fwd(*args):
        res = fun(*args)
        if not (isinstance(res, (tuple, list)) and len(res) == 2 and callable(res[1])):
            raise TypeError(
                f"custom_gradient: {_name(fun)} must return a pair (output, vjp_fn), got "
                f"{type(res).__name__}"
            )
        out, vjp_fn = res
        converted, consts = closure_convert(vjp_fn, out)
        return out, _ConvertedVjp(converted, consts)

    def bwd(res: _ConvertedVjp, ct):
        cts = res.fn(ct, *res.consts)
        return tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)

    f.defvjp(fwd, bwd)
    functools.update_wrapper(f, fun)
    return f
