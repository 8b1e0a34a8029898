"""Debugging inside transformations: printing traced values, running jitted code op by op, and
finding the operation that produced a NaN.

- :func:`print` (``fx.debug.print``) stages a ``debug_print`` equation that prints the real
  values whenever the program runs: eagerly, inside ``jit``, ``vmap`` and ``grad``.
- :func:`disable_jit` is a context manager under which jitted functions and the control-flow
  constructs run op by op (``while_loop``, ``fori_loop``, ``scan`` and ``cond`` call the user's
  Python functions directly when their operands are concrete).
- :func:`check_nans` is the ``debug_nans`` hook: given a jaxpr, its inputs and its outputs, it
  re-runs the jaxpr op by op when an output holds a NaN and raises ``FloatingPointError``
  naming the first primitive that produced one and the user's source line that created it.
  Under ``debug_infs`` an inf counts as well.
- :func:`source_location` formats an equation's recorded source line for error messages.
"""

from __future__ import annotations

import builtins
import contextlib
import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from fx import dtypes, tree_util
from fx.array import Array
from fx.config import config
from fx.core import EVAL_TRACE, Primitive, is_array_like, set_current_trace
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.batching import moveaxis
from fx.interpreters.call import body_param
from fx.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, effectful_primitives
from fx.lax.control_flow import common
from fx.lax.control_flow.common import source_location
from fx.lax.control_flow.conditionals import cond_p, run_cond
from fx.lax.control_flow.loops import run_while, while_p
from fx.lax.control_flow.scans import run_scan, scan_p

__all__ = ["print", "disable_jit", "debug_nans", "debug_infs", "check_nans", "source_location",
           "debug_print_p"]

# --- fx.debug.print -----------------------------------------------------------------------------

debug_print_p = Primitive("debug_print", multiple_results=True)
# operands: the array leaves of (args, kwargs); params: fmt, in_tree, static (the non-array
# leaves as (position, value) pairs), lanes (one (size, batched-per-operand) pair per enclosing
# vmap, outermost first; a batched operand has those batch axes in front, in that order).
effectful_primitives.add(debug_print_p)


@debug_print_p.def_abstract_eval
def _debug_print_abstract_eval(*avals, fmt, in_tree, static, lanes):
    return []


def _host(buf) -> np.ndarray:
    if isinstance(buf, (np.ndarray, np.generic)):
        return np.asarray(buf)
    get = getattr(buf, "get", None)  # a CuPy buffer
    return np.asarray(get() if callable(get) else buf)


@debug_print_p.def_impl
def _debug_print_impl(*bufs, fmt, in_tree, static, lanes):
    host = [_host(b) for b in bufs]
    # Lane order follows jax, which unrolls each vmap level into one print per lane: the
    # innermost vmap's lanes vary slowest.
    for rev in itertools.product(*(range(size) for size, _ in reversed(lanes))):
        lane = rev[::-1]
        vals = []
        for k, x in enumerate(host):
            for level, (_, batched) in enumerate(lanes):
                if batched[k]:
                    x = x[lane[level]]
            vals.append(x[()] if x.ndim == 0 else x)  # a NumPy scalar takes format specs
        leaves = _merge_static(vals, static)
        args, kwargs = tree_util.tree_unflatten(in_tree, leaves)
        builtins.print(fmt.format(*args, **kwargs))
    return []


def _merge_static(dynamic: list, static: tuple) -> list:
    out, it, where = [], iter(dynamic), dict(static)
    for i in range(len(dynamic) + len(static)):
        out.append(where[i] if i in where else next(it))
    return out


def _debug_print_jvp(primals, tangents, **params):
    debug_print_p.bind(*primals, **params)  # the primal values, once
    return [], []


def _debug_print_batch(axis, vals, dims, *, lanes, **params):
    moved = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    level = (axis.size, tuple(d is not None for d in dims))
    debug_print_p.bind(*moved, lanes=(level, *lanes), **params)
    return [], []


jvp.jvp_rules[debug_print_p] = _debug_print_jvp
transpose.transpose_rules[debug_print_p] = lambda cts, *args, **params: [None] * len(args)
batching.batch_rules[debug_print_p] = _debug_print_batch


def print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:  # noqa: A001
    """Print ``fmt.format(*args, **kwargs)`` with the runtime values of traced arrays, as
    ``jax.debug.print``. It prints whenever the computation runs: eagerly, each call of a
    jitted function, inside ``cond`` branches that run and every loop iteration.

    Under ``vmap`` it prints once per lane (like jax; nested vmaps print the innermost vmap's
    lanes slowest). Under ``jvp``/``grad`` it prints the primal values, once per forward pass.
    Non-array arguments (strings, None) are formatted as they are. ``ordered`` is accepted for
    compatibility: prints always happen in program order.

    Example::

        >>> @fx.jit
        ... def f(x):
        ...     fx.debug.print("x = {x}, sum = {}", x.sum(), x=x)
        ...     return x * 2
        >>> f(fnp.arange(3.0))
        x = [0. 1. 2.], sum = 3.0
    """
    del ordered
    if not isinstance(fmt, str):
        raise TypeError(f"fx.debug.print: the format must be a str, got {type(fmt).__name__}")
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    dynamic, static = [], []
    for i, x in enumerate(leaves):
        if is_array_like(x):
            dynamic.append(common.as_value(x, "fx.debug.print"))
        else:
            static.append((i, x))
    try:
        hash(tuple(static))
    except TypeError:
        static = [(i, str(v)) for i, v in static]  # keep params hashable: format them now
    debug_print_p.bind(*dynamic, fmt=fmt, in_tree=in_tree, static=tuple(static), lanes=())


# --- disable_jit and debug_nans -----------------------------------------------------------------


@contextlib.contextmanager
def disable_jit(disable: bool = True) -> Iterator[None]:
    """Within the block, jitted functions run op by op instead of compiled, and
    ``cond``/``switch``/``while_loop``/``fori_loop``/``scan`` with concrete operands call their
    Python functions directly, so ``print`` and debuggers see values.

    Example::

        >>> with fx.disable_jit():
        ...     f(x)
    """
    previous = config.disable_jit
    config.update("disable_jit", bool(disable))
    try:
        yield
    finally:
        config.update("disable_jit", previous)


@contextlib.contextmanager
def debug_nans(enable: bool = True) -> Iterator[None]:
    """Within the block, a jitted function returning a NaN raises ``FloatingPointError`` naming
    the first primitive that produced one (same as ``fx.config.update("debug_nans", True)`` or
    ``FX_DEBUG_NANS=1``)."""
    previous = getattr(config, "debug_nans", False)
    config.update("debug_nans", bool(enable))
    try:
        yield
    finally:
        config.update("debug_nans", previous)


@contextlib.contextmanager
def debug_infs(enable: bool = True) -> Iterator[None]:
    """As :func:`debug_nans`, for infinities: within the block, a jitted function returning
    an inf raises ``FloatingPointError`` naming the first primitive that produced one (same
    as ``fx.config.update("debug_infs", True)`` or ``FX_DEBUG_INFS=1``)."""
    previous = config.debug_infs
    config.update("debug_infs", bool(enable))
    try:
        yield
    finally:
        config.update("debug_infs", previous)


class _NanFound(Exception):
    def __init__(self, eqn: JaxprEqn, inputs_had_nan: bool):
        super().__init__(eqn.primitive.name)
        self.eqn = eqn
        self.inputs_had_nan = inputs_had_nan


def _has_nan(x) -> bool:
    buf = x._buf if isinstance(x, Array) else x
    dt = np.dtype(buf.dtype)
    if not dtypes.is_float(dt):
        return False
    host = _host(buf)
    if dt.itemsize < 4:
        host = host.astype(np.float32)
    # Under debug_infs an inf counts too (what jax's flag of that name checks).
    bad = np.isnan(host) | np.isinf(host) if config.debug_infs else np.isnan(host)
    return bool(bad.any())


def _evaluate(closed: ClosedJaxpr, args: list) -> list:
    return _eval_checking(closed.jaxpr, closed.consts, args)


def _eval_checking(jaxpr: Jaxpr, consts: Sequence, args: Sequence) -> list:
    """Evaluate op by op, descending into calls and control flow, and raise ``_NanFound`` at
    the first primitive whose outputs hold a NaN."""
    env: dict = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return Array(v.value, v.aval.weak_type) if isinstance(v, Literal) else env[v]

    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        prim, params = eqn.primitive, eqn.params
        if prim in body_param:
            body = params[body_param[prim]]
            outs = _eval_checking(body.jaxpr, body.consts, ins)
        elif prim in _runners:
            outs = _runners[prim](_evaluate, *ins, **params)
        else:
            outs = prim.bind(*ins, **params)
            outs = outs if prim.multiple_results else [outs]
            if any(_has_nan(o) for o in outs):
                raise _NanFound(eqn, any(_has_nan(i) for i in ins))
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


_runners = {cond_p: run_cond, while_p: run_while, scan_p: run_scan}


def check_nans(closed: ClosedJaxpr, args: Sequence, outs: Sequence, name: str = "function"
               ) -> None:
    """If any of ``outs`` (the results of running ``closed`` on ``args``: buffers or Arrays)
    holds a NaN, re-run ``closed`` op by op and raise ``FloatingPointError`` naming the first
    primitive that produced a NaN and the source line that created it.

    This is the ``debug_nans`` hook of ``fx.jit``; ``args`` are the jaxpr's inputs (hoisted
    constants first).
    """
    if not any(_has_nan(o) for o in outs):
        return
    what = "nan or inf" if config.debug_infs else "nan"
    values = [a if isinstance(a, Array) else Array(a, v.aval.weak_type)
              for a, v in zip(args, closed.jaxpr.invars)]
    try:
        with set_current_trace(EVAL_TRACE), np.errstate(all="ignore"):
            _eval_checking(closed.jaxpr, closed.consts, values)
    except _NanFound as found:
        eqn = found.eqn
        origin = (" Its operands already held NaN, so the NaN came from the inputs of "
                  f"{name}." if found.inputs_had_nan else "")
        raise FloatingPointError(
            f"invalid value ({what}) encountered in {eqn.primitive.name} at "
            f"{source_location(eqn)}: {name} returned {what} and, run op by op, this is the "
            f"first operation to produce one.{origin}") from None
    raise FloatingPointError(
        f"{name} returned {what}, but running it op by op produced none: it comes from the "
        "compiled program (a fused or reordered computation); run it under fx.disable_jit() "
        "to compare")
