"""``fx.export.freeze``: a model with its trained parameters as an inference-time function of
its inputs alone, optimized for inference.

``freeze(apply_fn, params)(x)`` traces ``apply_fn(params, x)`` with the parameters as
constants (stax layers in inference mode: ``mode="inference"`` is passed where ``apply_fn``
takes keywords, so ``Dropout`` is the identity) and rewrites the jaxpr:

- **weights precomputed**: every equation whose operands are all constants (transposes,
  reshapes and casts of weights, products of constants) is evaluated once, but for
  broadcasts and anything else that would make a constant larger than its operands;
- **affine layers folded**: a chain of per-feature ``add``/``sub``/``mul``/``div`` by
  constants after a dense (``dot_general``) or convolution whose weights are constant — an
  inference-mode BatchNorm, a scale, a bias — becomes the layer with scaled weights plus one
  bias: ``(x @ W + b - mean) / s * g + beta`` is ``x @ (W * g / s) + (b - mean) * g / s +
  beta``;
- **softmax before argmax dropped**: ``argmax`` (``argmin``) over a softmax or log_softmax
  (or any ``exp``, shift by a per-row value, or division by a softmax denominator) of ``z``
  along its axis is ``argmax`` of ``z`` (equal up to ties created by rounding);
- **transposes cancelled**: a transpose is sunk through the elementwise operations after it
  (unary functions, and binary ones with a scalar literal) until it meets a transpose that
  undoes it, and both go (layout round trips such as NCHW -> NHWC -> NCHW around
  activations).

The result is an ordinary function: ``fx.jit`` compiles the optimized program and
``fx.export.to_onnx`` exports it (the constants become initializers). ``report(*args)``
counts what each pass did and ``as_text(*args)`` shows it with the optimized jaxpr. Results
agree with the original function to rounding (folding reassociates products), not bitwise.
"""

from __future__ import annotations

import inspect
import threading
from collections import Counter

import numpy as np

from fx import dtypes, tree_util
from fx.array import Array
from fx.core import EVAL_TRACE, get_aval, set_current_trace
from fx.interpreters.eval import eval_jaxpr
from fx.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, has_effects
from fx.lax.base import broadcast_in_dim_p
from fx.lax.elementwise import add_p
from fx.lowering.passes.eliminate_dead_code import eliminate_dead_code
from fx.lowering.passes.inline_calls import inline_calls
from fx.lowering.passes.rewrite import Renamer

PASSES = ("weights precomputed", "affine layers folded", "softmax before argmax dropped",
          "transposes cancelled")


def freeze(apply_fn, params, **kwargs):
    """``apply_fn(params, *inputs, **kwargs)`` as :class:`Frozen`, a function of the inputs."""
    return Frozen(apply_fn, params, kwargs)


class Frozen:
    """A model with constant parameters, optimized for inference per input signature."""

    def __init__(self, apply_fn, params, kwargs):
        self._fn, self._params = apply_fn, params
        self._kwargs = dict(kwargs)
        if "mode" not in self._kwargs and _takes_keywords(apply_fn):
            self._kwargs["mode"] = "inference"
        self._programs: dict = {}
        self._lock = threading.Lock()

    def __call__(self, *args):
        closed, out_tree, _ = self._program(args)
        outs = eval_jaxpr(closed.jaxpr, closed.consts, *tree_util.tree_leaves(args))
        return tree_util.tree_unflatten(out_tree, outs)

    def report(self, *args) -> dict[str, int]:
        """How many rewrites each pass made for these inputs."""
        return dict(self._program(args)[2])

    def as_text(self, *args) -> str:
        closed, _, counts = self._program(args)
        lines = [f"# inference passes: {', '.join(f'{p}: {counts[p]}' for p in PASSES)}",
                 str(closed)]
        return "\n".join(lines)

    def _program(self, args):
        from fx.api import ShapeDtypeStruct
        from fx.tracing import make_jaxpr

        leaves, in_tree = tree_util.tree_flatten(args)
        avals = tuple((a.shape, a.dtype) for a in map(get_aval, leaves))
        key = (in_tree, avals)
        with self._lock:
            hit = self._programs.get(key)
        if hit is not None:
            return hit
        specs = [ShapeDtypeStruct(s, d) for s, d in avals]
        store = {}

        def flat(*xs):
            out = self._fn(self._params, *tree_util.tree_unflatten(in_tree, xs),
                           **self._kwargs)
            leaves_out, store["tree"] = tree_util.tree_flatten(out)
            return leaves_out

        closed, counts = optimize_for_inference(make_jaxpr(flat)(*specs))
        entry = (closed, store["tree"], counts)
        with self._lock:
            self._programs.setdefault(key, entry)
        return entry


def _takes_keywords(fn) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return any(p.kind is p.VAR_KEYWORD or p.name == "mode" for p in sig.parameters.values())


def optimize_for_inference(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, Counter]:
    """The inference passes over ``closed`` (its constants are the frozen parameters)."""
    counts: Counter = Counter({p: 0 for p in PASSES})
    closed = inline_calls(closed)
    values = dict(zip(closed.jaxpr.constvars, closed.consts))
    eqns = _precompute(closed.jaxpr.eqns, values, counts)
    eqns, outvars = _fold_affine(eqns, values, closed.jaxpr.outvars, counts)
    eqns = _drop_before_argmax(eqns, counts)
    eqns, outvars = _cancel_transposes(eqns, outvars, counts)
    jaxpr = Jaxpr([], closed.jaxpr.invars, outvars, eqns)
    jaxpr = eliminate_dead_code(jaxpr)
    used = {v for e in jaxpr.eqns for v in e.invars if isinstance(v, Var)}
    used |= {v for v in jaxpr.outvars if isinstance(v, Var)}
    constvars = [v for v in values if v in used]
    return ClosedJaxpr(Jaxpr(constvars, jaxpr.invars, jaxpr.outvars, jaxpr.eqns),
                       [values[v] for v in constvars]), counts


def _subjaxprs(eqn) -> bool:
    return any(isinstance(p, (ClosedJaxpr, Jaxpr)) or (
        isinstance(p, (tuple, list)) and any(isinstance(q, (ClosedJaxpr, Jaxpr)) for q in p))
        for p in eqn.params.values())


def _precompute(eqns, values: dict, counts: Counter) -> list[JaxprEqn]:
    """Evaluate equations over constants (``values``: constant variable -> value), adding
    their results to ``values``."""
    out = []
    for eqn in eqns:
        consts = [isinstance(v, Literal) or v in values for v in eqn.invars]
        # A constant never grows: broadcasts stay equations (free in a fused kernel, and a
        # broadcast to the batch's shape must stay one for the batch to stay symbolic).
        grows = eqn.primitive.name == "broadcast_in_dim" or sum(
            v.aval.size for v in eqn.outvars) > max(1, sum(v.aval.size for v in eqn.invars))
        if (not eqn.invars or not all(consts) or has_effects(eqn) or _subjaxprs(eqn)
                or grows):
            out.append(eqn)
            continue
        args = [Array(v.value, v.aval.weak_type) if isinstance(v, Literal) else
                Array(np.asarray(values[v]), v.aval.weak_type) for v in eqn.invars]
        with set_current_trace(EVAL_TRACE):
            res = eqn.primitive.bind(*args, **eqn.params)
        res = res if eqn.primitive.multiple_results else [res]
        for var, r in zip(eqn.outvars, res):
            values[var] = np.asarray(r._buf if isinstance(r, Array) else r)
        counts["weights precomputed"] += 1
    return out


def _feature_vector(v, values, producers, axis: int, ndim: int, n: int):
    """The per-feature values (length ``n`` along output axis ``axis``) of ``v`` if it is a
    constant, or a broadcast of one, that varies only along that axis; else None."""
    if isinstance(v, Literal):
        return np.full(n, v.value)
    if v in values:
        a = np.asarray(values[v])
    else:
        e = producers.get(v)
        if e is None or e.primitive.name != "broadcast_in_dim" or e.invars[0] not in values:
            return None
        src = np.asarray(values[e.invars[0]])
        shape = [1] * ndim
        for i, d in zip(e.params["broadcast_dimensions"], src.shape):
            shape[i] = d
        a = src.reshape(shape)
    if a.ndim == 0:
        return np.full(n, a)
    if a.ndim != ndim:
        return None
    first = a[tuple(slice(None) if i == axis else slice(0, 1) for i in range(ndim))]
    if not np.array_equal(np.broadcast_to(first, a.shape), a, equal_nan=True):
        return None  # it varies along another axis
    vec = first.reshape(-1)
    return np.broadcast_to(vec, (n,)) if vec.size in (1, n) else None


def _linear_axes(eqn, values):
    """For a dense or convolution with constant weights: (weights var, the output's feature
    axis, the weights' output-feature axis); else None."""
    name = eqn.primitive.name
    if len(eqn.invars) != 2 or not isinstance(eqn.invars[1], Var) or eqn.invars[1] not in values:
        return None
    out = eqn.outvars[0]
    if name == "dot_general":
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        w = eqn.invars[1]
        free = [i for i in range(w.aval.ndim) if i not in rc and i not in rb]
        if len(free) != 1 or lb or rb:
            return None
        return w, out.aval.ndim - 1, free[0]
    if name == "conv_general_dilated":
        lhs_spec, rhs_spec, out_spec = eqn.params["dimension_numbers"]
        if eqn.params.get("feature_group_count", 1) != 1:
            return None
        return eqn.invars[1], out_spec[1], rhs_spec[0]
    return None


_AFFINE = {"add", "sub", "mul", "div"}


def _fold_affine(eqns, values: dict, outvars, counts: Counter):
    """Per-feature affine chains after linear layers with constant weights, folded in: the
    new equations and outputs."""
    producers = {v: e for e in eqns for v in e.outvars}
    uses = Counter(v for e in eqns for v in e.invars if isinstance(v, Var))
    uses.update(v for v in outvars if isinstance(v, Var))
    consumer = {}
    for e in eqns:
        for v in e.invars:
            if isinstance(v, Var):
                consumer.setdefault(v, e)
    replaced: dict[int, list[JaxprEqn]] = {}  # id(linear eqn) -> its new equations
    dead: set[int] = set()
    rename = Renamer()
    for e in eqns:
        axes = _linear_axes(e, values)
        if axes is None:
            continue
        w, axis, w_axis = axes
        y = e.outvars[0]
        if y.aval.dtype not in dtypes.FLOATING:
            continue
        n, ndim = y.aval.shape[axis], y.aval.ndim
        scale, shift = np.ones(n, np.float64), np.zeros(n, np.float64)
        chain, cur = [], y
        while uses[cur] == 1 and cur in consumer:
            c = consumer[cur]
            if c.primitive.name not in _AFFINE or c.outvars[0].aval.shape != y.aval.shape:
                break
            a, b = c.invars
            other = b if a is cur else a
            vec = _feature_vector(other, values, producers, axis, ndim, n)
            if vec is None or (c.primitive.name in ("sub", "div") and a is not cur):
                break
            vec = vec.astype(np.float64)
            if c.primitive.name == "add":
                shift = shift + vec
            elif c.primitive.name == "sub":
                shift = shift - vec
            elif c.primitive.name == "mul":
                scale, shift = scale * vec, shift * vec
            else:
                scale, shift = scale / vec, shift / vec
            chain.append(c)
            cur = c.outvars[0]
        if not any(c.primitive.name in ("mul", "div") for c in chain):
            continue
        wv = np.asarray(values[w])
        shape = [1] * wv.ndim
        shape[w_axis] = n
        new_w = Var(w.aval)
        values[new_w] = (wv.astype(np.float64) * scale.reshape(shape)).astype(wv.dtype)
        new_y = Var(y.aval)
        lin = e.replace(invars=[e.invars[0], new_w], outvars=[new_y])
        bias_v = Var(y.aval.update(shape=(n,), weak_type=False))
        values[bias_v] = shift.astype(y.aval.dtype)
        bias_b = Var(y.aval)
        bcast = JaxprEqn(broadcast_in_dim_p, [bias_v], [bias_b],
                         {"shape": tuple(y.aval.shape), "broadcast_dimensions": (axis,)},
                         e.source_info)
        out = Var(y.aval)
        add = JaxprEqn(add_p, [new_y, bias_b], [out], {}, e.source_info)
        replaced[id(e)] = [lin, bcast, add]
        dead.update(id(c) for c in chain)
        rename.bind(cur, out)
        counts["affine layers folded"] += 1
    result = []
    for e in eqns:
        if id(e) in dead:
            continue
        result.extend(replaced.get(id(e), [e]))
    return [rename.eqn(e) for e in result], [rename(v) for v in outvars]


def _row_constant(v, producers, axis: int) -> bool:
    """``v`` is a broadcast of a value that has one element along ``axis``."""
    e = producers.get(v)
    if e is None or e.primitive.name != "broadcast_in_dim":
        return False
    src = e.invars[0]
    dims = e.params["broadcast_dimensions"]
    return axis not in dims or src.aval.shape[dims.index(axis)] == 1


def _positive(v, producers) -> bool:
    """``v`` is a broadcast (through reshapes) of a sum of exponentials."""
    seen = 0
    while seen < 8:
        e = producers.get(v)
        if e is None:
            return False
        if e.primitive.name in ("broadcast_in_dim", "reshape"):
            v, seen = e.invars[0], seen + 1
            continue
        if e.primitive.name == "reduce_sum":
            src = producers.get(e.invars[0])
            return src is not None and src.primitive.name == "exp"
        return False
    return False


def _drop_before_argmax(eqns, counts: Counter) -> list[JaxprEqn]:
    """argmax/argmin over increasing per-row transforms of ``z`` read ``z`` itself."""
    producers = {v: e for e in eqns for v in e.outvars}
    out = []
    for e in eqns:
        if e.primitive.name in ("argmax", "argmin") and len(e.params["axes"]) == 1:
            (axis,) = e.params["axes"]
            v, dropped = e.invars[0], 0
            while isinstance(v, Var) and v in producers:
                p = producers[v]
                name = p.primitive.name
                if name == "exp":
                    v = p.invars[0]
                elif name in ("sub", "add") and isinstance(p.invars[1], Var) and \
                        _row_constant(p.invars[1], producers, axis):
                    v = p.invars[0]
                elif name == "div" and isinstance(p.invars[1], Var) and \
                        _row_constant(p.invars[1], producers, axis) and \
                        _positive(p.invars[1], producers):
                    v = p.invars[0]
                else:
                    break
                dropped += 1
            if dropped:
                e = e.replace(invars=[v])
                counts["softmax before argmax dropped"] += 1
        out.append(e)
    return out


# Elementwise primitives a transpose commutes with (one array operand; any other operand a
# scalar literal).
_LAYOUT_FREE = {"exp", "log", "tanh", "logistic", "neg", "abs", "sqrt", "rsqrt", "sin", "cos",
                "exp2", "log1p", "expm1", "sign", "floor", "ceil", "round", "erf", "square",
                "integer_pow", "convert_element_type", "max", "min", "add", "sub", "mul",
                "div", "pow", "select_n"}


def _cancel_transposes(eqns, outvars, counts: Counter):
    """``transpose(f(...(transpose(x, p))), q)`` with ``q`` undoing ``p`` and ``f`` layout-free
    elementwise operations of single use: ``f(...(x))``, the operations re-made in ``x``'s
    layout."""
    producers = {v: e for e in eqns for v in e.outvars}
    uses = Counter(v for e in eqns for v in e.invars if isinstance(v, Var))
    uses.update(v for v in outvars if isinstance(v, Var))
    remade: dict[int, JaxprEqn] = {}  # id(equation) -> it in the untransposed layout
    dropped: set[int] = set()
    rename = Renamer()
    for e in eqns:
        if e.primitive.name != "transpose":
            continue
        q = e.params["permutation"]
        chain, v, undone = [], e.invars[0], False
        while isinstance(v, Var) and v in producers and uses[v] == 1:
            p = producers[v]
            if p.primitive.name == "transpose":
                undone = tuple(p.params["permutation"][i] for i in q) == tuple(range(len(q)))
                break
            arrays = [a for a in p.invars if isinstance(a, Var)]
            if p.primitive.name not in _LAYOUT_FREE or len(arrays) != 1 or any(
                    isinstance(a, Literal) and a.aval.shape for a in p.invars):
                break
            chain.append(p)
            v = arrays[0]
        if not undone:
            continue
        inner = producers[v]
        if id(inner) in dropped or any(id(p) in remade for p in chain):
            continue  # part of a pair cancelled already
        src = inner.invars[0]
        cur = src
        for p in reversed(chain):  # innermost first
            out = Var(p.outvars[0].aval.update(shape=src.aval.shape))
            arrays = [a for a in p.invars if isinstance(a, Var)]
            remade[id(p)] = p.replace(invars=[cur if a is arrays[0] else a for a in p.invars],
                                      outvars=[out])
            cur = out
        dropped.update((id(e), id(inner)))
        rename.bind(e.outvars[0], cur)
        counts["transposes cancelled"] += 1
    if not dropped:
        return eqns, outvars
    out = [remade.get(id(e), e) for e in eqns if id(e) not in dropped]
    return [rename.eqn(e) for e in out], [rename(v) for v in outvars]
