"""Finding a model's quantizable layers and calibrating the activations that enter them.

``find_layers`` takes the jaxpr of ``fn(params, x)`` and returns its top-level
``dot_general`` and ``conv_general_dilated`` equations with one operand computed from the
parameters alone (the weight) and the other from the input (the activation). ``calibrate``
runs that jaxpr on each calibration batch with an interpreter that binds every equation and
shows the activation operand of each such layer to an :class:`Observer`; the result is a
:class:`Calibration`: per layer, its equation index, the observed range and the threshold of
the chosen method.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from fx import tree_util
from fx.array import Array
from fx.jaxpr import ClosedJaxpr, Literal
from fx.lax.convolution import conv_general_dilated_p
from fx.lax.linalg import dot_general_p
from fx.quant.observers import Method, Observer
from fx.tracing import make_jaxpr

QUANTIZABLE = (dot_general_p, conv_general_dilated_p)


@dataclass(frozen=True)
class Layer:
    """A quantizable equation of the traced program."""

    index: int  # of the equation in the jaxpr's top level
    primitive: str
    weight_operand: int  # 0: the lhs is the weight, 1: the rhs
    weight_shape: tuple[int, ...]

    @property
    def activation_operand(self) -> int:
        return 1 - self.weight_operand


@dataclass(frozen=True)
class LayerStats:
    layer: Layer
    min: float
    max: float
    threshold: float  # the symmetric clipping range: scale = threshold / 127

    @property
    def scale(self) -> float:
        return self.threshold / 127.0 if self.threshold > 0 else 1.0


@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` observed: one :class:`LayerStats` per quantizable layer, in
    program order, and the method that chose the thresholds."""

    method: Method
    layers: tuple[LayerStats, ...]
    input_shape: tuple[int, ...] | None = None  # of the first batch (quantize retraces it)
    input_dtype: object = None

    def __str__(self) -> str:
        rows = [f"calibration ({self.method.value}): {len(self.layers)} layers"]
        for s in self.layers:
            rows.append(f"  eqn {s.layer.index:3d} {s.layer.primitive:22s} range "
                        f"[{s.min:.4g}, {s.max:.4g}] threshold {s.threshold:.4g}")
        return "\n".join(rows)


def trace(fn, params, x) -> tuple[ClosedJaxpr, int]:
    """The jaxpr of ``fn(params, x)`` and how many of its inputs are parameter leaves."""
    n_params = len(tree_util.tree_flatten(params)[0])
    return make_jaxpr(fn)(params, x), n_params


def find_layers(closed: ClosedJaxpr, n_params: int) -> list[Layer]:
    """The top-level dense/conv equations with exactly one parameter-only operand (for a
    convolution: its kernel)."""
    jaxpr = closed.jaxpr
    constant = set(jaxpr.constvars) | set(jaxpr.invars[:n_params])
    layers = []
    for i, eqn in enumerate(jaxpr.eqns):
        is_const = [isinstance(v, Literal) or v in constant for v in eqn.invars]
        if all(is_const):
            constant.update(eqn.outvars)
            continue
        if eqn.primitive not in QUANTIZABLE or sum(is_const) != 1:
            continue
        w = is_const.index(True)
        if eqn.primitive is conv_general_dilated_p and w != 1:
            continue
        if not _floating(eqn.invars[w]) or not _floating(eqn.invars[1 - w]):
            continue
        layers.append(Layer(i, eqn.primitive.name, w, tuple(eqn.invars[w].aval.shape)))
    return layers


def _floating(v) -> bool:
    return np.issubdtype(v.aval.dtype, np.floating)


def calibrate(fn, params, batches: Iterable, method: str = "minmax", *,
              percentile: float = 99.99) -> Calibration:
    """Observe the activations entering each dense and conv layer of ``fn(params, x)``.

    Args:
      fn: the model, ``fn(params, x) -> outputs`` (e.g. a stax ``apply_fun``).
      params: its parameters (any pytree); the weights are the layers' operands computed
        from them alone.
      batches: calibration inputs ``x``, one array per batch (a few hundred to a few thousand
        samples in all is typical).
      method: ``"minmax"`` (the largest magnitude), ``"percentile"`` (``percentile`` of the
        magnitudes, 99.99 by default) or ``"entropy"`` (TensorRT's KL-divergence threshold).

    Returns:
      A :class:`Calibration` for :func:`fx.quant.quantize`.

    >>> import numpy as np, fx, fx.quant
    >>> from fx.example_libraries import stax
    >>> init, apply = stax.serial(stax.Dense(8), stax.Relu, stax.Dense(2))
    >>> _, params = init(fx.random.PRNGKey(0), (-1, 4))
    >>> cal = fx.quant.calibrate(apply, params, [np.ones((3, 4), np.float32)])
    >>> len(cal.layers), cal.layers[0].threshold
    (2, 1.0)
    """
    method = Method(method)
    observers: dict[int, Observer] = {}
    layers = None
    first = None
    for x in batches:
        first = first or (tuple(np.shape(x)), np.asarray(x).dtype)
        closed, n_params = trace(fn, params, x)
        found = find_layers(closed, n_params)
        if layers is None:
            layers = found
            observers = {layer.index: Observer() for layer in layers}
        elif [(a.index, a.weight_shape) for a in found] != [(a.index, a.weight_shape)
                                                           for a in layers]:
            raise ValueError("fx.quant.calibrate: batches of this shape trace to another "
                             "program (its dense/conv layers differ)")
        at = {layer.index: layer.activation_operand for layer in layers}
        leaves = tree_util.tree_flatten(params)[0]

        def record(i, eqn, args, at=at, observers=observers):
            if i in at:
                observers[i].observe(np.asarray(args[at[i]]))

        run(closed, [*leaves, x], record)
    if layers is None:
        raise ValueError("fx.quant.calibrate: no calibration batches")
    stats = tuple(LayerStats(layer, observers[layer.index].min, observers[layer.index].max,
                             observers[layer.index].threshold(method, percentile))
                  for layer in layers)
    return Calibration(method, stats, *first)


def run(closed: ClosedJaxpr, args: list, before=None, replace=None) -> list:
    """Evaluate ``closed`` by binding its equations on the current trace. ``before(i, eqn,
    args)`` sees each equation's arguments; ``replace(i, eqn, args)`` may return the
    equation's outputs instead of binding it (None: bind as usual)."""
    jaxpr = closed.jaxpr
    env: dict = dict(zip(jaxpr.constvars, closed.consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return Array(v.value, v.aval.weak_type) if isinstance(v, Literal) else env[v]

    for i, eqn in enumerate(jaxpr.eqns):
        vals = [read(v) for v in eqn.invars]
        if before is not None:
            before(i, eqn, vals)
        outs = replace(i, eqn, vals) if replace is not None else None
        if outs is None:
            outs = eqn.primitive.bind(*vals, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]
