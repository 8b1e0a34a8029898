"""``fx.ad_checkpoint``: rematerialization as ``jax.ad_checkpoint``.

``checkpoint`` (alias ``remat``) makes reverse mode recompute a function's intermediates
instead of saving them; ``checkpoint_policies`` holds the save policies fx supports;
``checkpoint_name`` names a value; ``print_saved_residuals`` shows what reverse mode of a
function saves from its forward pass, each residual with where it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

from fx import tree_util
from fx.api import ShapeDtypeStruct
from fx.core import current_trace, get_aval, new_trace
from fx.custom_derivatives import checkpoint, everything_saveable, nothing_saveable, remat
from fx.interpreters.jvp import is_differentiable
from fx.interpreters.partial_eval import linearize_flat
from fx.numpy._promote import to_array
from fx.tracing import JaxprTrace, JaxprTracer, argument_names, flatten_fun

checkpoint_policies = SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
)


def checkpoint_name(x, name: str):
    """``x`` (a pytree), named ``name`` for save policies (as ``jax.ad_checkpoint``). fx's
    policies save everything or nothing, so the name changes nothing yet: the identity."""
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: the name must be a str, got {type(name).__name__}")
    return tree_util.tree_map(lambda v: v, x)


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
            eqn = producer[var]
            where = f" from {eqn.source_info}" if eqn.source_info is not None else ""
            what = f"output of {eqn.primitive.name}{where}"
        else:
            what = "a constant"
        out.append((spec, what))
    return out


def print_saved_residuals(fun: Callable, *args, **kwargs) -> None:
    """Print :func:`saved_residuals`, one residual per line (as jax's)."""
    for spec, what in saved_residuals(fun, *args, **kwargs):
        print(f"{get_aval(spec).str_short()} {what}")


__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals",
           "remat", "saved_residuals"]
