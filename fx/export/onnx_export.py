"""ONNX export: a traced jaxpr translated, equation by equation, into an ``onnx.ModelProto``.

Takes a Python function and example arguments (pytrees of arrays); returns a model whose graph
inputs are the flattened argument leaves and whose outputs are the flattened results. The
translation is a table keyed by primitive (``onnx_rules``, filled by :func:`register` in the
``onnx_rules_*`` modules): ``rule(ctx, *args: Value, **params)`` emits nodes through ``ctx`` and
returns the names of its outputs. Call primitives (``jit``, ``checkpoint``, ``custom_jvp_call``,
``custom_vjp_call``) are inlined: their primal body is translated in place. Closed-over arrays
(the jaxpr's constvars) and every constant a rule needs become initializers of the top graph,
visible inside the subgraphs of ``If`` and ``Loop``.

Symbolic batch (``dynamic_batch=True``): the function is traced three times, at the example's
leading size and at two others, and the three jaxprs are walked in step. A dimension or an
integer parameter that differs between them is ``scale * batch + offset`` (a :class:`Sym`), found
from the three values; anything else that differs (the program's structure, a non-linear size)
is refused with an error that says to pass ``dynamic_batch=False``. Rules see symbolic shapes in
``Value.shape`` and, for the parameters they declare in ``register(..., shape_params=...)``,
symbolic parameters; they build runtime shapes with ``ctx.shape_tensor``, which computes a
symbolic dimension from a ``Shape`` of the first batched input. A parameter that differs but is
not declared is refused the same way, so a rule can never bake the example's batch size in.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fx import tree_util
from fx.api import ShapeDtypeStruct
from fx.core import Primitive
from fx.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, dce_jaxpr
from fx.tracing import make_jaxpr

BATCH = "batch"
MIN_OPSET = 18  # axes of ReduceMax & co. as inputs, BitwiseAnd, Pad with axes


class ExportError(NotImplementedError):
    """The function cannot be exported to ONNX as asked (an unsupported primitive, or a
    batch-dependent shape under ``dynamic_batch=True``). ``located`` errors already name the
    equation and its source line."""

    located = False


@dataclass(frozen=True)
class Sym:
    """A dimension that depends on the batch size: ``scale * batch + offset``."""

    scale: int
    offset: int = 0

    @staticmethod
    def make(scale: int, offset: int) -> Dim:
        return Sym(scale, offset) if scale else offset

    def __add__(self, k: Dim) -> Dim:
        if isinstance(k, Sym):
            return Sym.make(self.scale + k.scale, self.offset + k.offset)
        return Sym(self.scale, self.offset + k)

    __radd__ = __add__

    def __neg__(self) -> Sym:
        return Sym(-self.scale, -self.offset)

    def __sub__(self, k: Dim) -> Dim:
        return self + (-k)

    def __rsub__(self, k: int) -> Dim:
        return -self + k

    def __mul__(self, k: int) -> Dim:
        if isinstance(k, Sym):
            raise ExportError("a size that is the product of two batch-dependent sizes")
        return Sym.make(self.scale * k, self.offset * k)

    __rmul__ = __mul__

    def __str__(self) -> str:
        s = BATCH if self.scale == 1 else f"{self.scale}*{BATCH}"
        return s if not self.offset else f"{s}{self.offset:+d}"


Dim = int | Sym


def dim_product(dims: Sequence[Dim]) -> Dim:
    out: Dim = 1
    for d in dims:
        out = d * out if isinstance(d, Sym) else out * d
    return out


@dataclass(frozen=True)
class Value:
    """An ONNX tensor: its name and its (possibly symbolic) shape and dtype."""

    name: str
    shape: tuple[Dim, ...]
    dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)


Rule = Callable[..., Any]


@dataclass(frozen=True)
class ExportRule:
    fn: Rule
    shape_params: frozenset[str] = frozenset()


onnx_rules: dict[Primitive, ExportRule] = {}


def register(*prims: Primitive, shape_params: Sequence[str] = ()) -> Callable[[Rule], Rule]:
    """Register the decorated function as the ONNX rule of ``prims``.

    ``shape_params`` names the parameters the rule accepts with :class:`Sym` entries (sizes
    that follow the batch); any other parameter that depends on the batch is refused.
    """

    def deco(fn: Rule) -> Rule:
        for p in prims:
            onnx_rules[p] = ExportRule(fn, frozenset(shape_params))
        return fn

    return deco


# --- the graph being built ----------------------------------------------------------------------


def onnx_dtype(dtype) -> int:
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def value_info(name: str, shape: Sequence[Dim], dtype):
    from onnx import helper

    dims = [BATCH if d == Sym(1) else (str(d) if isinstance(d, Sym) else int(d)) for d in shape]
    return helper.make_tensor_value_info(name, onnx_dtype(dtype), dims)


class Graph:
    """Nodes of one ONNX graph (the top graph or a subgraph of If/Loop); initializers, the
    name counter and the batch tensor live on the top graph."""

    def __init__(self, parent: Graph | None = None):
        self.top: Graph = parent.top if parent is not None else self
        self.nodes: list = []
        if parent is None:
            self.initializers: list = []
            self._counter = itertools.count()
            self._consts: dict[tuple, str] = {}
            self.batch_source: Value | None = None
            self._batch: str | None = None

    def fresh(self, hint: str = "t") -> str:
        return f"{hint}_{next(self.top._counter)}"

    def node(self, op_type: str, inputs: Sequence[str], n_out: int = 1, **attrs) -> list[str]:
        from onnx import helper

        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           name=self.fresh("n_" + op_type), **attrs))
        return outs

    def const(self, value, dtype=None) -> str:
        """An initializer of the top graph holding ``value`` (shared between equal constants)."""
        from onnx import numpy_helper

        arr = np.asarray(value, dtype=dtype)
        top = self.top
        key = (arr.dtype.str, arr.shape, arr.tobytes()) if arr.size <= 64 else None
        if key is not None and key in top._consts:
            return top._consts[key]
        name = top.fresh("const")
        top.initializers.append(numpy_helper.from_array(np.array(arr, order="C"), name))
        if key is not None:
            top._consts[key] = name
        return name

    def batch(self) -> str:
        """A 1-D int64 tensor ``[batch]``, computed once in the top graph."""
        top = self.top
        if top._batch is None:
            src = top.batch_source
            if src is None:
                raise ExportError("a batch-dependent size with no batched input")
            (top._batch,) = top.node("Shape", [src.name], start=0, end=1)
        return top._batch

    def dim(self, d: Dim) -> str:
        """A 1-D int64 tensor ``[d]``."""
        if not isinstance(d, Sym):
            return self.const(np.asarray([d], np.int64))
        out = self.batch()
        if d.scale != 1:
            out = self.node("Mul", [out, self.const(np.asarray([d.scale], np.int64))])[0]
        if d.offset:
            out = self.node("Add", [out, self.const(np.asarray([d.offset], np.int64))])[0]
        return out


class Ctx:
    """What a rule sees: the graph it emits into and the equation it translates."""

    def __init__(self, graph: Graph, eqn: JaxprEqn, outs: list[tuple[tuple[Dim, ...], Any]],
                 exporter: Exporter):
        self.graph = graph
        self.eqn = eqn
        self.outs = outs  # (symbolic shape, dtype) of each output
        self.exporter = exporter

    @property
    def out_shape(self) -> tuple[Dim, ...]:
        return self.outs[0][0]

    @property
    def out_dtype(self) -> np.dtype:
        return self.outs[0][1]

    def op(self, op_type: str, *inputs: str | Value, n_out: int = 1, **attrs) -> Any:
        names = [i.name if isinstance(i, Value) else i for i in inputs]
        outs = self.graph.node(op_type, names, n_out, **attrs)
        return outs[0] if n_out == 1 else outs

    def const(self, value, dtype=None) -> str:
        return self.graph.const(value, dtype)

    def ints(self, values: Sequence[int]) -> str:
        return self.graph.const(np.asarray(list(values), np.int64).reshape(-1))

    def scalar(self, value, dtype) -> str:
        return self.graph.const(np.asarray(value, dtype=dtype))

    def dim(self, d: Dim) -> str:
        """A 1-D int64 tensor ``[d]``, computed from the batch if ``d`` is symbolic."""
        return self.graph.dim(d)

    def shape_tensor(self, dims: Sequence[Dim]) -> str:
        """A 1-D int64 tensor of ``dims``, symbolic entries computed from the batch."""
        if not any(isinstance(d, Sym) for d in dims):
            return self.ints(dims)
        parts, run = [], []
        for d in dims:
            if isinstance(d, Sym):
                if run:
                    parts.append(self.ints(run))
                    run = []
                parts.append(self.dim(d))
            else:
                run.append(d)
        if run:
            parts.append(self.ints(run))
        return parts[0] if len(parts) == 1 else self.op("Concat", *parts, axis=0)

    def cast(self, x: Value | str, dtype) -> str:
        name = x.name if isinstance(x, Value) else x
        if isinstance(x, Value) and np.dtype(x.dtype) == np.dtype(dtype):
            return name
        return self.op("Cast", name, to=onnx_dtype(dtype))

    def where(self, cond: str, a: Value | str, b: Value | str, dtype) -> str:
        """``Where`` for any dtype (onnxruntime's has no bool kernel: bools go through
        uint8)."""
        if np.dtype(dtype) != np.bool_:
            return self.op("Where", cond, a, b)
        a8, b8 = (self.op("Cast", x, to=onnx_dtype(np.uint8)) for x in (a, b))
        return self.op("Cast", self.op("Where", cond, a8, b8), to=onnx_dtype(np.bool_))

    def subgraph(self, build: Callable[[Graph], Sequence[Value]],
                 inputs: Sequence[Value] = (), name: str = "body", parent: Graph | None = None):
        """A GraphProto (a child of ``parent``, default the current graph) whose nodes
        ``build(graph)`` emits and whose outputs are the values it returns, each through an
        Identity (subgraph outputs must be produced inside); its ``inputs`` are declared."""
        from onnx import helper

        g = Graph(parent or self.graph)
        outs = build(g)
        out_names = [g.node("Identity", [o.name])[0] for o in outs]
        return helper.make_graph(
            g.nodes, g.fresh(name), [value_info(v.name, v.shape, v.dtype) for v in inputs],
            [value_info(n, o.shape, o.dtype) for n, o in zip(out_names, outs)])

    def translate(self, jaxpr: ClosedJaxpr | Jaxpr, args: Sequence[Value],
                  graph: Graph | None = None) -> list[Value]:
        """Emit ``jaxpr`` on ``args`` into ``graph`` (default: the current graph)."""
        return self.exporter.translate(jaxpr, args, graph or self.graph)

    def error(self, message: str) -> ExportError:
        return unsupported(self.eqn, message)


def describe_eqn(eqn: JaxprEqn) -> str:
    shapes = ", ".join(v.aval.str_short() for v in eqn.invars) or "no operands"
    where = f" at {eqn.source_info}" if eqn.source_info is not None else ""
    return f"'{eqn.primitive.name}' (operands {shapes}){where}"


def unsupported(eqn: JaxprEqn, message: str) -> ExportError:
    e = ExportError(f"fx.export.to_onnx: cannot export {describe_eqn(eqn)}: {message}")
    e.located = True
    return e


# --- batch polymorphism: three traces walked in step --------------------------------------------


class NotPolymorphic(ExportError):
    pass


_HINT = ("; pass dynamic_batch=False to export a model for the example's batch size only")


def _sym(values: Sequence[int], batches: Sequence[int]) -> Dim:
    if all(v == values[0] for v in values):
        return values[0]
    scale, rem = divmod(values[1] - values[0], batches[1] - batches[0])
    offset = values[0] - scale * batches[0]
    if rem or any(v != scale * b + offset for v, b in zip(values, batches)):
        raise NotPolymorphic(f"a size takes the values {list(values)} at batch sizes "
                             f"{list(batches)}, not a linear function of the batch")
    return Sym(scale, offset)


def _sym_param(values: Sequence[Any], batches: Sequence[int]) -> Any:
    first = values[0]
    if isinstance(first, (bool, np.bool_)) or not isinstance(first, (int, np.integer, tuple)):
        raise NotPolymorphic(f"a parameter takes the values {list(values)}")
    if isinstance(first, tuple):
        if any(not isinstance(v, tuple) or len(v) != len(first) for v in values):
            raise NotPolymorphic(f"a parameter takes the values {list(values)}")
        return tuple(_sym_param(col, batches) for col in zip(*values))
    return _sym([int(v) for v in values], batches)


def _same(a, b) -> bool:
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else np.array_equal(a, b)
    except Exception:
        return a is b


@dataclass
class Polymorphism:
    """Symbolic shapes of variables and symbolic parameters of equations."""

    batches: tuple[int, ...] = ()
    shapes: dict[Var, tuple[Dim, ...]] = field(default_factory=dict)
    params: dict[JaxprEqn, dict[str, Any]] = field(default_factory=dict)
    literals: dict[tuple[JaxprEqn, int], Sym] = field(default_factory=dict)

    def shape(self, v) -> tuple[Dim, ...]:
        return self.shapes.get(v, v.aval.shape) if isinstance(v, Var) else v.aval.shape

    def walk(self, jaxprs: Sequence[Jaxpr | ClosedJaxpr]) -> None:
        closed = [j for j in jaxprs if isinstance(j, ClosedJaxpr)]
        jaxprs = [j.jaxpr if isinstance(j, ClosedJaxpr) else j for j in jaxprs]
        for attr in ("constvars", "invars", "outvars", "eqns"):
            if len({len(getattr(j, attr)) for j in jaxprs}) != 1:
                raise NotPolymorphic(f"the traced program has a different number of {attr} "
                                     "at another batch size")
        for vs in itertools.chain(zip(*(j.constvars for j in jaxprs)),
                                  zip(*(j.invars for j in jaxprs))):
            self._bind(vs)
        if len(closed) == len(jaxprs):
            for var, values in zip(jaxprs[0].constvars, zip(*(c.consts for c in closed))):
                arrays = [np.asarray(v) for v in values]
                if any(a.shape != arrays[0].shape or not np.array_equal(a, arrays[0],
                                                                        equal_nan=True)
                       for a in arrays[1:]):
                    raise NotPolymorphic(
                        f"a closed-over constant {var.aval.str_short()} has a different value "
                        "at another batch size (an array computed from the batch size, such "
                        "as NumPy's arange(x.shape[0]))")
        for eqns in zip(*(j.eqns for j in jaxprs)):
            eqn = eqns[0]
            if any(e.primitive is not eqn.primitive for e in eqns):
                raise NotPolymorphic(f"the traced program differs at another batch size "
                                     f"({eqn.primitive.name} vs {eqns[1].primitive.name})")
            try:
                for k, vs in enumerate(zip(*(e.invars for e in eqns))):
                    if isinstance(vs[0], Literal):
                        self._literal(eqn, k, vs)
                for vs in zip(*(e.outvars for e in eqns)):
                    self._bind(vs)
                sym = {}
                for key, p in eqn.params.items():
                    ps = [e.params[key] for e in eqns]
                    subs = p if isinstance(p, tuple) else (p,)
                    if subs and all(isinstance(s, (Jaxpr, ClosedJaxpr)) for s in subs):
                        for group in zip(*(q if isinstance(q, tuple) else (q,) for q in ps)):
                            self.walk(group)
                    elif callable(p):  # custom rules (jvp, fwd, bwd): not exported
                        continue
                    elif not all(_same(p, q) for q in ps[1:]):
                        try:
                            sym[key] = _sym_param(ps, self.batches)
                        except NotPolymorphic as e:
                            raise NotPolymorphic(f"parameter {key}: {e}") from None
                if sym:
                    self.params[eqn] = sym
            except NotPolymorphic as e:
                if e.located:
                    raise
                raise unsupported_poly(eqn, str(e)) from None
        for vs in zip(*(j.outvars for j in jaxprs)):
            self._bind(vs)

    def _literal(self, eqn: JaxprEqn, k: int, vs: Sequence[Any]) -> None:
        """A scalar literal that follows the batch (a size, or the count a mean divides by)
        becomes a :class:`Sym` computed at run time; any other difference is refused."""
        values = [v.value for v in vs]
        if all(np.array_equal(v, values[0], equal_nan=True) for v in values[1:]):
            return
        if values[0].shape == () and all(np.isfinite(v) and v == np.round(v) for v in values):
            try:
                self.literals[(eqn, k)] = _sym([int(v) for v in values], self.batches)
                return
            except NotPolymorphic:
                pass
        raise NotPolymorphic(f"the constant {vs[0].pretty()} takes the values "
                             f"{[v.pretty() for v in vs]} at batch sizes {list(self.batches)}")

    def _bind(self, vs: Sequence[Any]) -> None:
        if isinstance(vs[0], Literal):
            return
        shapes = [v.aval.shape for v in vs]
        if len({len(s) for s in shapes}) != 1:
            raise NotPolymorphic(f"a value has ranks {[len(s) for s in shapes]} at batch sizes "
                                 f"{list(self.batches)}")
        self.shapes[vs[0]] = tuple(_sym(col, self.batches) for col in zip(*shapes))


def unsupported_poly(eqn: JaxprEqn, message: str) -> NotPolymorphic:
    e = NotPolymorphic(f"fx.export.to_onnx(dynamic_batch=True): {describe_eqn(eqn)} is not "
                       f"polymorphic in the batch dimension: {message}{_HINT}")
    e.located = True
    return e


# --- the translator ---------------------------------------------------------------------------


class Exporter:
    def __init__(self, poly: Polymorphism, opset: int):
        self.poly = poly
        self.opset = opset

    def translate(self, jaxpr: ClosedJaxpr | Jaxpr, args: Sequence[Value], graph: Graph,
                  consts: Sequence[Value] | None = None) -> list[Value]:
        """Emit ``jaxpr`` applied to ``args`` into ``graph``; its results."""
        if isinstance(jaxpr, ClosedJaxpr):
            consts = [self.constant(graph, v, c) for v, c in zip(jaxpr.jaxpr.constvars,
                                                                   jaxpr.consts)]
            jaxpr = jaxpr.jaxpr
        env: dict[Var, Value] = dict(zip(jaxpr.constvars, consts or ()))
        env.update(zip(jaxpr.invars, args))

        def read(a) -> Value:
            if isinstance(a, Literal):
                return Value(graph.const(a.value), a.aval.shape, a.aval.dtype)
            return env[a]

        for eqn in jaxpr.eqns:
            ins = [self.literal(graph, a, self.poly.literals.get((eqn, k)))
                   if isinstance(a, Literal) else read(a) for k, a in enumerate(eqn.invars)]
            outs = self.equation(graph, eqn, ins)
            env.update(zip(eqn.outvars, outs))
        return [read(a) for a in jaxpr.outvars]

    def literal(self, graph: Graph, lit: Literal, sym: Sym | None) -> Value:
        if sym is None:
            return Value(graph.const(lit.value), lit.aval.shape, lit.aval.dtype)
        (scalar,) = graph.node("Squeeze", [graph.dim(sym), graph.const(np.asarray([0]))])
        (value,) = graph.node("Cast", [scalar], to=onnx_dtype(lit.aval.dtype))
        return Value(value, (), lit.aval.dtype)

    def constant(self, graph: Graph, var: Var, value) -> Value:
        return Value(graph.const(np.asarray(value)), self.poly.shape(var), var.aval.dtype)

    def equation(self, graph: Graph, eqn: JaxprEqn, ins: list[Value]) -> list[Value]:
        from fx.interpreters.call import body_param

        body = body_param.get(eqn.primitive)
        if body is not None:  # a call: its primal body, in place
            return self.translate(eqn.params[body], ins, graph)
        rule = onnx_rules.get(eqn.primitive)
        if rule is None:
            from fx.export.onnx_unsupported import NOT_EXPORTABLE

            reason = NOT_EXPORTABLE.get(eqn.primitive, "no ONNX rule is registered for it")
            raise unsupported(eqn, reason)
        params = dict(eqn.params)
        sym = self.poly.params.get(eqn, {})
        for key, value in sym.items():
            if key not in rule.shape_params:
                raise unsupported_poly(eqn, f"its parameter {key}={eqn.params[key]!r} follows "
                                            f"the batch size ({value!r})")
            params[key] = value
        outs = [(self.poly.shape(v), v.aval.dtype) for v in eqn.outvars]
        ctx = Ctx(graph, eqn, outs, self)
        try:
            names = rule.fn(ctx, *ins, **params)
        except ExportError as e:
            if e.located:
                raise
            raise unsupported(eqn, str(e)) from None
        if isinstance(names, str):
            names = [names]
        return [Value(n, s, d) for n, (s, d) in zip(names, outs)]


# --- the public functions ---------------------------------------------------------------------


def _trace(fn: Callable, args: tuple, batch: int | None):
    leaves, tree = tree_util.tree_flatten(args)
    if batch is not None:
        leaves = [ShapeDtypeStruct((batch,) + tuple(np.shape(x))[1:], _dtype(x),
                                   bool(getattr(getattr(x, "aval", None), "weak_type", False)))
                  if np.ndim(x) >= 1 else x for x in leaves]
    closed, out_shape = make_jaxpr(fn, return_shape=True)(*tree_util.tree_unflatten(tree, leaves))
    jaxpr, _ = dce_jaxpr(closed.jaxpr)
    return ClosedJaxpr(jaxpr, closed.consts), out_shape


def _dtype(x):
    aval = getattr(x, "aval", None)
    return aval.dtype if aval is not None else np.asarray(x).dtype


def to_onnx(fn: Callable, *example_args, opset: int = 21, dynamic_batch: bool = True,
            name: str | None = None):
    """Export ``fn``, traced on ``example_args``, as an ``onnx.ModelProto``.

    The model's inputs are the leaves of ``example_args`` (flattened as pytrees, in
    ``fx.tree_util`` order, named ``input_0``, ``input_1``, ...), its outputs the leaves of
    ``fn``'s result (``output_0``, ...). Arrays ``fn`` closes over become initializers, so close
    over the trained parameters rather than passing them::

        >>> import numpy as np, fx.numpy as fnp
        >>> w = np.ones((3, 2), np.float32)
        >>> model = fx.export.to_onnx(lambda x: fnp.tanh(x @ w), np.ones((4, 3), np.float32))
        >>> [i.name for i in model.graph.input]
        ['input_0']

    With ``dynamic_batch=True`` (the default) the leading dimension of every input of rank 1 or
    more is the symbolic dimension ``"batch"``, and so is every output dimension that follows
    it; a program whose structure or sizes are not polymorphic in it is refused with an error
    naming the equation. ``dynamic_batch=False`` exports the example's shapes exactly. Raises
    :class:`ExportError` for a primitive with no ONNX translation, naming it, its operand types
    and the source line it came from.
    """
    try:
        from onnx import helper
    except ImportError:
        raise ImportError("fx.export.to_onnx needs the onnx package: pip install "
                          "'fx[export]' (onnx and onnxruntime)") from None

    from fx.export import (  # noqa: F401  (registers the rules)
        onnx_rules_arrays,
        onnx_rules_control,
        onnx_rules_elementwise,
        onnx_rules_nn,
    )

    if opset < MIN_OPSET:
        raise ValueError(f"fx.export.to_onnx: opset {opset} is below the supported minimum "
                         f"{MIN_OPSET}")
    closed, _ = _trace(fn, example_args, None)
    leaves = tree_util.tree_leaves(example_args)
    batched = [i for i, x in enumerate(leaves) if np.ndim(x) >= 1]
    poly = Polymorphism()
    if dynamic_batch and batched:
        b0 = int(np.shape(leaves[batched[0]])[0])
        poly.batches = (b0, b0 + 2, b0 + 5)
        traces = [closed]
        for b in poly.batches[1:]:
            try:
                traces.append(_trace(fn, example_args, b)[0])
            except ExportError:
                raise
            except Exception as e:
                raise NotPolymorphic(
                    f"fx.export.to_onnx(dynamic_batch=True): tracing with a leading dimension "
                    f"of {b} on every input (instead of {b0}) failed: {type(e).__name__}: {e}."
                    " Every input's leading dimension is the batch: close over the parameters "
                    f"instead of passing them{_HINT}") from e
        try:
            poly.walk(traces)
        except NotPolymorphic as e:
            if e.located:
                raise
            raise NotPolymorphic(f"fx.export.to_onnx(dynamic_batch=True): {e}{_HINT}") from None
    else:
        poly.walk([closed])
    graph = Graph()
    inputs = [Value(f"input_{i}", poly.shape(v), v.aval.dtype)
              for i, v in enumerate(closed.jaxpr.invars)]
    if dynamic_batch and batched:
        graph.batch_source = inputs[batched[0]]
    outs = Exporter(poly, opset).translate(closed, inputs, graph)
    out_names = []
    for i, o in enumerate(outs):
        out_names.append(f"output_{i}")
        graph.nodes.append(helper.make_node("Identity", [o.name], [out_names[-1]],
                                            name=f"n_output_{i}"))
    g = helper.make_graph(
        graph.nodes, name or getattr(fn, "__name__", "fx_function"),
        [value_info(v.name, v.shape, v.dtype) for v in inputs],
        [value_info(n, o.shape, o.dtype) for n, o in zip(out_names, outs)],
        initializer=graph.initializers)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="fx")
    model.ir_version = min(model.ir_version, 10)  # what current onnxruntime releases read
    return model


def save_onnx(path, fn: Callable, *example_args, **kw) -> None:
    """Export ``fn`` as :func:`to_onnx` does (same keyword arguments) and write it to
    ``path``."""
    import onnx

    onnx.save_model(to_onnx(fn, *example_args, **kw), str(path))
