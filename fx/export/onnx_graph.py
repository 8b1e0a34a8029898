"""The ONNX rule table and what a rule emits through: the leaf the ``onnx_rules_*`` modules
register into and :mod:`fx.export.onnx_export` translates with.

``onnx_rules`` maps a primitive to its :class:`ExportRule`, filled by :func:`register`. A rule
is called as ``rule(ctx, *args: Value, **params)``: it emits ONNX nodes through ``ctx`` (a
:class:`Ctx`, holding the :class:`Graph` being built and the equation translated) and returns
the names of its outputs. Shapes in a :class:`Value` may hold :class:`~fx.export.onnx_batch.Sym`
entries (sizes that follow the batch); a rule builds runtime sizes with ``ctx.shape_tensor`` and
``ctx.dim``. onnx itself is imported only when a graph is built.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from fx.core import Primitive
from fx.export.errors import ExportError, unsupported
from fx.export.onnx_batch import BATCH, Dim, Sym
from fx.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn

__all__ = ["Ctx", "ExportRule", "Graph", "Value", "onnx_dtype", "onnx_rules", "register",
           "value_info"]


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
            self._by_id: dict[int, tuple[Any, str]] = {}
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


class Translator(Protocol):
    """What a :class:`Ctx` asks of the exporter driving it (``onnx_export.Exporter``): the
    opset being written, and nested jaxprs (the bodies of ``If`` and ``Loop``) translated."""

    opset: int

    def translate(self, jaxpr: ClosedJaxpr | Jaxpr, args: Sequence[Value],
                  graph: Graph) -> list[Value]: ...


class Ctx:
    """What a rule sees: the graph it emits into and the equation it translates."""

    def __init__(self, graph: Graph, eqn: JaxprEqn, outs: list[tuple[tuple[Dim, ...], Any]],
                 exporter: Translator):
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
