"""ONNX export: a traced jaxpr translated, equation by equation, into an ``onnx.ModelProto``.

Takes a Python function and example arguments (pytrees of arrays); returns a model whose graph
inputs are the flattened argument leaves and whose outputs are the flattened results. The
translation is a table keyed by primitive (``onnx_rules``, in :mod:`fx.export.onnx_graph` with
the ``Ctx`` and ``Graph`` rules emit through, filled by :func:`register` in the
``onnx_rules_*`` modules, which this module imports): ``rule(ctx, *args: Value, **params)``
emits nodes through ``ctx`` and returns the names of its outputs. Call primitives (``jit``,
``checkpoint``, ``custom_jvp_call``, ``custom_vjp_call``) are inlined: their primal body is
translated in place. Closed-over arrays (the jaxpr's constvars) and every constant a rule needs
become initializers of the top graph, visible inside the subgraphs of ``If`` and ``Loop``.

Symbolic batch (``dynamic_batch=True``): the function is traced at three leading sizes and
:mod:`fx.export.onnx_batch` walks the traces to find which dimensions, integer parameters and
scalar literals follow the batch (as :class:`Sym`). Rules see symbolic shapes in
``Value.shape`` and, for the parameters they declare in ``register(..., shape_params=...)``,
symbolic parameters; they build runtime sizes with ``ctx.shape_tensor``/``ctx.dim``, computed
from a ``Shape`` of the first batched input. A batch-dependent parameter a rule did not
declare is refused, so no rule can bake the example's batch size into the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fx import tree_util
from fx.api import ShapeDtypeStruct
from fx.export import (  # noqa: F401  (each registers its rules in onnx_rules)
    onnx_rules_arrays,
    onnx_rules_control,
    onnx_rules_elementwise,
    onnx_rules_nn,
)
from fx.export.errors import ExportError, unsupported
from fx.export.onnx_batch import (
    BATCH,
    DYNAMIC_BATCH_HINT,
    Dim,
    NotPolymorphic,
    Polymorphism,
    Sym,
    dim_product,
    unsupported_poly,
)
from fx.export.onnx_graph import Ctx, Graph, Value, onnx_dtype, onnx_rules, register, value_info
from fx.export.onnx_qdq import qdq_layer
from fx.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, dce_jaxpr
from fx.tracing import make_jaxpr

__all__ = ["BATCH", "Ctx", "Dim", "ExportError", "Graph", "Sym", "Value", "dim_product",
           "onnx_rules", "register", "save_onnx", "to_onnx"]

MIN_OPSET = 18  # axes of ReduceMax & co. as inputs, BitwiseAnd, Pad with axes


# --- the translator ---------------------------------------------------------------------------


class Exporter:
    def __init__(self, poly: Polymorphism, opset: int, qdq: dict | None = None):
        self.poly = poly
        self.opset = opset
        # fx.quant's QDQ export: id(weight constant) -> (the constant, its quantized layer).
        self.qdq = qdq or {}
        self.const_of: dict[Var, Any] = {}

    def translate(self, jaxpr: ClosedJaxpr | Jaxpr, args: Sequence[Value], graph: Graph,
                  consts: Sequence[Value] | None = None) -> list[Value]:
        """Emit ``jaxpr`` applied to ``args`` into ``graph``; its results."""
        if isinstance(jaxpr, ClosedJaxpr):
            # (A quantized layer's dequantized weight is written as its int8 initializer by
            # the layer's QDQ rule, never as floats.)
            consts = [Value(f"unused_float_weight_{k}", self.poly.shape(v), v.aval.dtype)
                      if id(c) in self.qdq else self.constant(graph, v, c)
                      for k, (v, c) in enumerate(zip(jaxpr.jaxpr.constvars, jaxpr.consts))]
            if self.qdq:
                self.const_of.update(zip(jaxpr.jaxpr.constvars, jaxpr.consts))
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
        # One initializer per constant object, however often its body is inlined.
        known = graph.top._by_id.get(id(value))
        if known is None or known[0] is not value:
            known = graph.top._by_id[id(value)] = (value, graph.const(np.asarray(value)))
        return Value(known[1], self.poly.shape(var), var.aval.dtype)

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
        layer = self._quantized_weight(eqn)
        try:
            if layer is not None:
                names = qdq_layer(ctx, ins, *layer)
            else:
                names = rule.fn(ctx, *ins, **params)
        except ExportError as e:
            if e.located:
                raise
            raise unsupported(eqn, str(e)) from None
        if isinstance(names, str):
            names = [names]
        return [Value(n, s, d) for n, (s, d) in zip(names, outs)]


    def _quantized_weight(self, eqn: JaxprEqn):
        """``(operand index, fx.quant layer)`` where ``eqn`` is a layer of a quantized model
        being exported in QDQ form, else None."""
        if not self.qdq or eqn.primitive.name not in ("dot_general", "conv_general_dilated"):
            return None
        for k, v in enumerate(eqn.invars):
            value = self.const_of.get(v) if isinstance(v, Var) else None
            mark = self.qdq.get(id(value)) if value is not None else None
            if mark is not None and mark[0] is value:
                return k, mark[1]
        return None


# --- the public functions ---------------------------------------------------------------------


def _trace(fn: Callable, args: tuple, batch: int | None):
    leaves, tree = tree_util.tree_flatten(args)
    if batch is not None:
        leaves = [ShapeDtypeStruct((batch,) + _shape(x)[1:], _dtype(x),
                                   bool(getattr(getattr(x, "aval", None), "weak_type", False)))
                  if _shape(x) else x for x in leaves]
    closed, out_shape = make_jaxpr(fn, return_shape=True)(*tree_util.tree_unflatten(tree, leaves))
    jaxpr, _ = dce_jaxpr(closed.jaxpr)
    return ClosedJaxpr(jaxpr, closed.consts), out_shape


def _shape(x) -> tuple[int, ...]:
    aval = getattr(x, "aval", None)  # fx arrays, tracers and ShapeDtypeStructs
    return tuple(int(d) for d in (aval.shape if aval is not None else np.shape(x)))


def _dtype(x):
    aval = getattr(x, "aval", None)
    return aval.dtype if aval is not None else np.asarray(x).dtype


def to_onnx(fn: Callable, *example_args, opset: int = 21, dynamic_batch: bool = True,
            name: str | None = None):
    """Export ``fn``, traced on ``example_args``, as an ``onnx.ModelProto``.

    ``example_args`` are pytrees of arrays or ``fx.ShapeDtypeStruct``s. The model's inputs are
    their leaves in ``fx.tree_util`` order (``input_0``, ``input_1``, ...), its outputs the
    leaves of ``fn``'s result (``output_0``, ...). Arrays ``fn`` closes over become
    initializers, so close over the trained parameters rather than passing them::

        >>> import numpy as np, fx.numpy as fnp
        >>> w = np.ones((3, 2), np.float32)
        >>> model = fx.export.to_onnx(lambda x: fnp.tanh(x @ w), np.ones((4, 3), np.float32))
        >>> [i.name for i in model.graph.input]
        ['input_0']

    With ``dynamic_batch=True`` (the default) the leading dimension of every input of rank 1 or
    more is the symbolic dimension ``"batch"``, and so is every output dimension that follows
    it; a program whose structure or sizes are not polymorphic in it is refused with an error
    naming the equation. ``dynamic_batch=False`` exports the example's shapes exactly. An
    ``fx.quant.quantize`` model exports in QDQ form (QuantizeLinear/DequantizeLinear around
    each int8 layer, int8 weight initializers; see ``fx.export.onnx_qdq``). Raises
    :class:`ExportError` for a primitive with no ONNX translation, naming it, its operand types
    and the source line it came from. ``opset`` is the ONNX opset imported (18 or later).
    """
    try:
        from onnx import helper
    except ImportError:
        raise ImportError("fx.export.to_onnx needs the onnx package: pip install "
                          "'fx[export]' (onnx and onnxruntime)") from None

    if opset < MIN_OPSET:
        raise ValueError(f"fx.export.to_onnx: opset {opset} is below the supported minimum "
                         f"{MIN_OPSET}")
    qdq = None
    if callable(getattr(fn, "_onnx_qdq", None)):  # an fx.quant model: its QDQ form
        fn, qdq = fn._onnx_qdq()
    closed, _ = _trace(fn, example_args, None)
    leaves = tree_util.tree_leaves(example_args)
    batched = [i for i, x in enumerate(leaves) if _shape(x)]
    poly = Polymorphism()
    if dynamic_batch and batched:
        b0 = _shape(leaves[batched[0]])[0]
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
                    f"instead of passing them{DYNAMIC_BATCH_HINT}") from e
        try:
            poly.walk(traces)
        except NotPolymorphic as e:
            if e.located:
                raise
            raise NotPolymorphic(f"fx.export.to_onnx(dynamic_batch=True): {e}"
                                 f"{DYNAMIC_BATCH_HINT}") from None
    else:
        poly.walk([closed])
    graph = Graph()
    inputs = [Value(f"input_{i}", poly.shape(v), v.aval.dtype)
              for i, v in enumerate(closed.jaxpr.invars)]
    if dynamic_batch and batched:
        graph.batch_source = inputs[batched[0]]
    outs = Exporter(poly, opset, qdq).translate(closed, inputs, graph)
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
