"""``fx.ad_checkpoint``: rematerialization as ``jax.ad_checkpoint``.

``checkpoint`` (alias ``remat``) makes reverse mode recompute a function's intermediates
instead of saving them; ``checkpoint_policies`` holds the save policies fx supports;
``checkpoint_name`` names a value; ``print_saved_residuals`` shows what reverse mode of a
function saves from its forward pass, each residual with where it came from.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import SimpleNamespace

from fx import tree_util
from fx.api import ShapeDtypeStruct
from fx.core import EVAL_TRACE, current_trace, get_aval, new_trace
from fx.custom_derivatives import _name, _trace
from fx.interpreters.call import body_param, checkpoint_name_p, checkpoint_p
from fx.interpreters.jvp import is_differentiable
from fx.interpreters.partial_eval import linearize_flat
from fx.jaxpr import ClosedJaxpr, Jaxpr, Var
from fx.lax.linalg import dot_general_p
from fx.numpy._promote import to_array
from fx.tracing import JaxprTrace, JaxprTracer, argument_names, flatten_fun


def everything_saveable(*_, **__) -> bool:
    """The checkpoint policy that saves every intermediate (no rematerialization)."""
    return True


def nothing_saveable(*_, **__) -> bool:
    """The checkpoint policy that saves nothing but the inputs (fx.checkpoint's default)."""
    return False


def checkpoint(fun: Callable, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | tuple[int, ...] = ()) -> Callable:
    """Rematerialization: reverse mode recomputes ``fun``'s intermediates in the backward pass
    instead of saving them (only ``fun``'s inputs are saved). Same results, less memory.

    ``policy`` is one of ``fx.checkpoint_policies`` (``nothing_saveable``, the default;
    ``everything_saveable``; ``dots_saveable``, ...): a function ``policy(prim, *avals,
    **params) -> bool`` telling which equations' outputs reverse mode may save rather than
    recompute. ``static_argnums`` are passed through untraced (Python values the function may
    branch on)."""
    if policy is everything_saveable:
        return fun
    if policy is nothing_saveable:
        policy = None
    if policy is not None and not callable(policy):
        raise TypeError(
            f"fx.checkpoint({_name(fun)}): policy must be one of fx.checkpoint_policies (a "
            f"function of (primitive, *avals, **params) -> bool), got {type(policy).__name__}"
        )
    if policy is not None and getattr(policy, "__module__", "").startswith("jax"):
        raise TypeError(
            f"fx.checkpoint({_name(fun)}): the policy {_name(policy)} is jax's, which looks for "
            "jax's primitives; use the one of the same name in fx.checkpoint_policies"
        )
    statics = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    if statics:
        @functools.wraps(fun)
        def with_statics(*args):
            fixed = {i % len(args): args[i] for i in statics}
            dyn = [a for i, a in enumerate(args) if i not in fixed]

            def inner(*d):
                it = iter(d)
                return fun(*[fixed[i] if i in fixed else next(it) for i in range(len(args))])

            inner.__name__ = _name(fun)
            return checkpoint(inner, prevent_cse, policy)(*dyn)

        return with_statics

    @functools.wraps(fun)
    def remat_f(*args):
        if current_trace() is EVAL_TRACE:
            return fun(*args)
        jaxpr, consts, leaves, _, out_tree = _trace(fun, args, f"checkpoint({_name(fun)})")
        # A policy is a param only when there is one: plain checkpoints print as before.
        extra = {} if policy is None else {"policy": policy}
        outs = checkpoint_p.bind(*consts, *leaves, jaxpr=jaxpr, prevent_cse=prevent_cse,
                                 **extra)
        return tree_util.tree_unflatten(out_tree, outs)

    return remat_f


remat = checkpoint


def dots_saveable(prim, *avals, **params) -> bool:
    """Save the results of matrix products (``dot_general``), recompute the rest."""
    return prim is dot_general_p


def dots_with_no_batch_dims_saveable(prim, *avals, **params) -> bool:
    """Save the results of matrix products without batch dimensions, recompute the rest."""
    if prim is not dot_general_p:
        return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable:
    """Save what either policy saves."""
    def policy(prim, *avals, **params) -> bool:
        return policy_1(prim, *avals, **params) or policy_2(prim, *avals, **params)

    return policy


def checkpoint_name(x, name: str):
    """``x`` (a pytree) with its values named ``name``, for the save policies that select
    values by name (``save_only_these_names``, ...), as ``jax.ad_checkpoint``. The identity:
    outside a transformation it returns ``x`` itself."""
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: the name must be a str, got {type(name).__name__}")

    def named(v):
        if current_trace() is EVAL_TRACE:
            return v
        v = to_array(v)
        var = Var(get_aval(v))
        body = ClosedJaxpr(Jaxpr([], [var], [var], []), [])
        return checkpoint_name_p.bind(v, jaxpr=body, name=name)[0]

    return tree_util.tree_map(named, x)


def save_only_these_names(*names: str) -> Callable:
    """Save the values named (by :func:`checkpoint_name`) one of ``names``; recompute the
    rest."""
    chosen = frozenset(names)

    def policy(prim, *avals, **params) -> bool:
        return prim is checkpoint_name_p and params["name"] in chosen

    return policy


def save_any_names_but_these(*names: str) -> Callable:
    """Save every named value except those named one of ``names``; recompute the rest."""
    excluded = frozenset(names)

    def policy(prim, *avals, **params) -> bool:
        return prim is checkpoint_name_p and params["name"] not in excluded

    return policy


def save_anything_except_these_names(*names: str) -> Callable:
    """Save every value except those named one of ``names``."""
    excluded = frozenset(names)

    def policy(prim, *avals, **params) -> bool:
        return not (prim is checkpoint_name_p and params["name"] in excluded)

    return policy


checkpoint_policies = SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_from_both_policies=save_from_both_policies,
    save_only_these_names=save_only_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_anything_except_these_names=save_anything_except_these_names,
)


def saved_residuals(fun: Callable, *args, **kwargs) -> list[tuple[ShapeDtypeStruct, str]]:
    """What reverse mode of ``fun`` at these arguments' types saves from the forward pass:
    one ``(type, description)`` per residual, the description naming the argument it is or
    the operation and source line that computed it."""
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    leaves = [to_array(x) for x in leaves]
    names = argument_names(fun, args, kwargs)
    flat, _ = flatten_fun(fun, in_tree, getattr(fun, "__name__", "function"))
    trace = JaxprTrace(current_trace(), "saved_residuals")
    with new_trace(trace):
        ins = [trace.new_arg(get_aval(x), n) for x, n in zip(leaves, names)]
        diff = [is_differentiable(get_aval(x)) for x in leaves]
        _, linear = linearize_flat(flat, ins, diff)
    producer = {v: eqn for eqn in trace.eqns for v in eqn.outvars}
    arg_of = dict(zip(trace.invars, names))
    out = []
    for c in linear.consts:
        aval = get_aval(c)
        spec = ShapeDtypeStruct(aval.shape, aval.dtype, aval.weak_type)
        var = c.var if isinstance(c, JaxprTracer) and c._trace is trace else None
        if var in arg_of:
            what = "from the " + arg_of[var].replace("'", "", 2)  # argument x, as jax
        elif var in producer:
            eqn = _origin(producer[var], var)
            where = f" from {eqn.source_info}" if eqn.source_info is not None else ""
            what = (f"named {eqn.params['name']!r}{where}" if eqn.primitive is checkpoint_name_p
                    else f"output of {eqn.primitive.name}{where}")
        else:
            what = "from a constant"
        out.append((spec, what))
    return out


def _origin(eqn, var):
    """The equation that computed ``var``, looking through calls (a checkpoint with a save
    policy returns the values it saves from inside its body)."""
    while eqn.primitive in body_param:
        body = eqn.params[body_param[eqn.primitive]].jaxpr
        inner = body.outvars[eqn.outvars.index(var)]
        found = next((e for e in body.eqns if inner in e.outvars), None)
        if found is None:
            break
        eqn, var = found, inner
    return eqn


def print_saved_residuals(fun: Callable, *args, **kwargs) -> None:
    """Print :func:`saved_residuals`, one residual per line (as jax's)."""
    for spec, what in saved_residuals(fun, *args, **kwargs):
        print(f"{get_aval(spec).str_short()} {what}")


__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals",
           "remat", "saved_residuals"]
