"""Tracing Python functions into jaxprs.

:class:`JaxprTrace` stages every primitive it sees into a jaxpr instead of running it. Values
that are not its own tracers (concrete arrays, tracers of enclosing transformations) become
constvars of the jaxpr, or inline :class:`Literal` s when they are concrete scalars. Each
equation records the user's source line. A traced value that Python needs concretely (``if``,
``int()``) raises ``ConcretizationTypeError`` naming the arguments it depends on.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fx import tree_util
from fx.array import Array
from fx.avals import ShapedArray
from fx.core import (
    ConcretizationTypeError,
    Primitive,
    Trace,
    Tracer,
    as_buffer,
    current_trace,
    escaped_tracer_error,
    get_aval,
    is_array_like,
    new_trace,
)
from fx.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, SourceInfo, Var


class JaxprTracer(Tracer):
    __slots__ = ("var",)

    def __init__(self, trace: JaxprTrace, var: Var):
        super().__init__(trace)
        self.var = var

    @property
    def aval(self) -> ShapedArray:
        return self.var.aval

    def to_concrete(self, context: str):
        raise ConcretizationTypeError(
            self._trace_is_abstract_message(context) + self._trace.provenance(self.var)
        )


class JaxprTrace(Trace):
    """Builds a jaxpr from the primitives bound while it is current."""

    name = "jaxpr tracing"

    def __init__(self, parent: Trace | None = None, description: str = "make_jaxpr"):
        super().__init__(parent)
        self.description = description
        self.eqns: list[JaxprEqn] = []
        self.invars: list[Var] = []
        self.arg_names: dict[Var, str] = {}
        self.constvars: list[Var] = []
        self.consts: list[Any] = []
        self._const_ids: dict[int, Var] = {}

    def describe(self) -> str:
        return self.description

    def new_arg(self, aval: ShapedArray, name: str = "") -> JaxprTracer:
        var = Var(aval)
        self.invars.append(var)
        if name:
            self.arg_names[var] = name
        return JaxprTracer(self, var)

    def to_atom(self, x) -> Var | Literal:
        if isinstance(x, JaxprTracer) and x._trace is self:
            return x.var
        if isinstance(x, Tracer):
            if not x._trace.valid:
                raise escaped_tracer_error(x)
            return self._constvar(x, x.aval)
        aval = get_aval(x)
        if not aval.shape and isinstance(aval.dtype, np.dtype):  # (a key is no literal)
            return Literal(as_buffer(x, aval), aval)
        return self._constvar(x, aval)

    def _constvar(self, x, aval: ShapedArray) -> Var:
        var = self._const_ids.get(id(x))
        if var is None:
            var = Var(aval)
            self._const_ids[id(x)] = var
            self.constvars.append(var)
            self.consts.append(x if isinstance(x, (Array, Tracer)) else Array(as_buffer(x)))
        return var

    def process_primitive(self, prim: Primitive, args: Sequence[Any], params: dict):
        atoms = [self.to_atom(a) for a in args]
        out_avals = prim.out_avals([a.aval for a in atoms], params)
        outvars = [Var(a) for a in out_avals]
        self.eqns.append(JaxprEqn(prim, atoms, outvars, params, user_source_info()))
        outs = [JaxprTracer(self, v) for v in outvars]
        return outs if prim.multiple_results else outs[0]

    def to_jaxpr(self, outs: Sequence[Any]) -> ClosedJaxpr:
        outvars = [self.to_atom(o) for o in outs]
        jaxpr = Jaxpr(list(self.constvars), list(self.invars), outvars, list(self.eqns))
        return ClosedJaxpr(jaxpr, list(self.consts))

    def provenance(self, var: Var) -> str:
        """Which traced arguments ``var`` depends on, for error messages."""
        deps = {var}
        for eqn in reversed(self.eqns):
            if any(v in deps for v in eqn.outvars):
                deps.update(v for v in eqn.invars if isinstance(v, Var))
        names = [
            f"{self.arg_names.get(v, f'argument {i}')} ({v.aval.str_short()})"
            for i, v in enumerate(self.invars)
            if v in deps
        ]
        if not names:
            return ""
        return "\nThe value depends on " + ", ".join(names) + "."


# --- source locations ---------------------------------------------------------------------------

# The names of the enclosing ``fx.named_scope`` blocks, outermost first.
_name_stack: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "fx_name_stack", default=())


@contextlib.contextmanager
def name_scope(name: str):
    """Push ``name`` on the name stack recorded with each traced equation."""
    token = _name_stack.set(_name_stack.get() + (name,))
    try:
        yield
    finally:
        _name_stack.reset(token)


@contextlib.contextmanager
def replaced_name_stack(label: str):
    """Record ``label`` as the whole name stack of the equations traced in the body (reverse
    mode labels the equations transposing a named one ``transpose(outer/inner)``)."""
    token = _name_stack.set((label,))
    try:
        yield
    finally:
        _name_stack.reset(token)


def user_source_info() -> SourceInfo | None:
    """The innermost stack frame outside fx (the user's line that caused this equation), with
    the current name stack."""
    frame = sys._getframe(2)
    names = "/".join(_name_stack.get())
    while frame is not None:
        mod = frame.f_globals.get("__name__", "")
        if not (mod == "fx" or mod.startswith("fx.")):
            code = frame.f_code
            return SourceInfo(code.co_filename, frame.f_lineno, code.co_name, names)
        frame = frame.f_back
    return SourceInfo("", 0, "", names) if names else None


# --- flattening functions over pytrees ----------------------------------------------------------


def flatten_fun(f: Callable, in_tree: tree_util.PyTreeDef, name: str = "function"):
    """``(flat_f, out_store)``: ``flat_f(*leaves)`` calls ``f`` on the unflattened arguments
    and returns its output leaves; ``out_store['tree']`` then holds the output structure."""
    store: dict[str, Any] = {}

    def flat_f(*leaves):
        args, kwargs = tree_util.tree_unflatten(in_tree, leaves)
        out = f(*args, **kwargs)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        for path, leaf in tree_util.tree_flatten_with_path(out)[0]:
            if not is_array_like(leaf):
                raise TypeError(
                    f"{name} returned a value of type {type(leaf).__name__} at output"
                    f"{tree_util.keystr(path)}, which is not an array; outputs must be "
                    "pytrees of arrays or scalars"
                )
        store["tree"] = out_tree
        return out_leaves

    return flat_f, store


def argument_names(f: Callable, args: tuple, kwargs: dict, static_argnums=(),
                   static_argnames=()) -> list[str]:
    """A readable name for each traced leaf of ``(args, kwargs)``: ``x``, ``params['w']``,
    ... (leaves of static arguments are left out)."""
    names = _all_argument_names(f, args, kwargs)
    if not static_argnums and not static_argnames:
        return names
    keep = []
    for i, a in enumerate(args):
        keep += [i not in static_argnums] * len(tree_util.tree_leaves(a))
    for k in sorted(kwargs):
        keep += [k not in static_argnames] * len(tree_util.tree_leaves(kwargs[k]))
    if len(keep) != len(names):
        return names
    return [n for n, k in zip(names, keep) if k]


def _all_argument_names(f: Callable, args: tuple, kwargs: dict) -> list[str]:
    try:
        sig = inspect.signature(f)
        bound = sig.bind(*args, **kwargs)
        by_name = list(bound.arguments.items())
        names = []
        params = sig.parameters
        for pname, value in by_name:
            kind = params[pname].kind
            if kind == inspect.Parameter.VAR_POSITIONAL:
                for i, v in enumerate(value):
                    names += _leaf_names(f"{pname}[{i}]", v)
            elif kind == inspect.Parameter.VAR_KEYWORD:
                for k in sorted(value):
                    names += _leaf_names(f"{pname}[{k!r}]", value[k])
            else:
                names += _leaf_names(pname, value)
        if len(names) == len(tree_util.tree_leaves((args, kwargs))):
            return [f"argument '{n}'" for n in names]
    except (TypeError, ValueError):
        pass
    leaves = tree_util.tree_flatten_with_path((args, kwargs))[0]
    return [f"argument {tree_util.keystr(p)}" for p, _ in leaves]


def _leaf_names(root: str, value) -> list[str]:
    return [root + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(value)[0]]


def trace_to_jaxpr(
    flat_f: Callable, in_avals: Sequence[ShapedArray], arg_names: Sequence[str] = (),
    description: str = "make_jaxpr",
) -> ClosedJaxpr:
    """Trace ``flat_f`` (leaves in, leaves out) at ``in_avals`` into a closed jaxpr."""
    trace = JaxprTrace(current_trace(), description)
    names = list(arg_names) or [""] * len(in_avals)
    with new_trace(trace):
        tracers = [trace.new_arg(a, n) for a, n in zip(in_avals, names)]
        outs = flat_f(*tracers)
        return trace.to_jaxpr(outs)


def abstractify(x) -> ShapedArray:
    """The aval a value gets as a traced argument (Python scalars are weakly typed)."""
    try:
        return get_aval(x)
    except TypeError:
        raise TypeError(
            f"argument of type {type(x).__name__} is not a valid fx type; pass arrays, "
            "scalars, or pytrees of them (or mark the argument static)"
        ) from None


def make_jaxpr(f: Callable, static_argnums: Sequence[int] = (), return_shape: bool = False):
    """A function that traces ``f`` on example arguments and returns its typed jaxpr.

    Example::

        >>> import fx, fx.numpy as fnp
        >>> print(fx.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(fnp.ones(3)))
        { lambda ; a:f32[3]. let
            b:f32[3] = sin a
            c:f32[3] = mul b 2.0:f32[]
          in (c,) }
    """
    static_argnums = tuple(static_argnums)

    def jaxpr_maker(*args, **kwargs):
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static_argnums)

        def g(*dyn, **kw):
            it = iter(dyn)
            full = [args[i] if i in static_argnums else next(it) for i in range(len(args))]
            return f(*full, **kw)

        leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
        avals = [abstractify(x) for x in leaves]
        names = argument_names(f, args, kwargs, static_argnums)
        flat_f, store = flatten_fun(g, in_tree, getattr(f, "__name__", "function"))
        closed = trace_to_jaxpr(flat_f, avals, names, "make_jaxpr")
        if return_shape:
            shapes = tree_util.tree_unflatten(store["tree"], closed.out_avals)
            return closed, shapes
        return closed

    return jaxpr_maker
