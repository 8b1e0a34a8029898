"""``quantize``: a model's dense and conv layers rewritten to int8 × int8 → int32 products.

The rewrite works on the jaxpr of ``fn(params, x)``, traced once per input shape and dtype:
an interpreter (``calibration.run``) binds every equation on the current trace, so under
``fx.jit`` or ``fx.make_jaxpr`` it emits the rewritten program, and eagerly it computes it.
Each calibrated layer's equation is replaced by

    x_q = clip(round(x / s_x), -127, 127) as int8          # per-tensor, symmetric
    acc = dot_general(x_q, w_q, preferred_element_type=int32)   # (or conv_general_dilated)
    y   = acc as float32 * (s_x * s_w)                       # s_w per output channel

with ``w_q`` and ``s_w`` computed ahead of time (constants of the traced program: int8
weights, float32 scales). Everything else stays in float, so between two quantized layers the
bias, activation and the next layer's quantization are elementwise equations the compiler
fuses into one kernel after the int32 product (the requantization step).

Choices: weights are symmetric int8 in [-127, 127] per output channel (or per tensor), zero
point 0; activations are symmetric int8 per tensor, zero point 0, so both operands of the
product are int8 as the integer kernels take them (the CPU kernel offsets the activations to
uint8 itself for ``vpdpbusd``, see ``fx.lowering.kernels.int8.int8_gemm``). The output of the
model is float (the last layer's dequantization).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import fx.numpy as fnp
from fx import dtypes, tree_util
from fx.api import ShapeDtypeStruct
from fx.lax.convolution import conv_general_dilated_p
from fx.lax.linalg import dot_general_p
from fx.quant.calibration import Calibration, Layer, find_layers, run, trace

WEIGHT_SCHEMES = ("per_channel_symmetric", "per_tensor_symmetric")
ACTIVATION_SCHEMES = ("per_tensor",)
QMAX = 127


@dataclass(frozen=True)
class QuantizedLayer:
    layer: Layer
    weight: np.ndarray  # int8, the weight operand's shape
    weight_scale: np.ndarray  # float32, shaped to broadcast against the layer's output
    input_scale: float
    float_bytes: int  # of the float weight it replaces
    params: dict  # the int8 equation's parameters (e.g. a transposed weight's dimensions)
    # ``weight`` is the float weight's layout transposed by ``layout``; the scales are one per
    # index of ``channel_axes`` of that layout (or one in all when per-tensor).
    layout: tuple[int, ...] = ()
    channel_axes: tuple[int, ...] = ()
    per_channel: bool = True

    @property
    def output_scale(self) -> np.ndarray:
        return (self.weight_scale * np.float32(self.input_scale)).astype(np.float32)

    @property
    def original_weight(self) -> np.ndarray:
        """The int8 weight in the float weight's layout (the layer's equation's operand)."""
        if not self.layout:
            return self.weight
        return np.transpose(self.weight, np.argsort(self.layout))


class QuantizedFunction:
    """``qfn(x)``: the model with its calibrated layers computed in int8 (see the module's
    docstring). Traceable: ``fx.jit(qfn)`` compiles it, ``fx.make_jaxpr(qfn)(x)`` shows it.

    ``layers`` holds the int8 weights and scales; ``float_bytes`` and ``quantized_bytes``
    are the parameters' sizes before and after (the weights int8 plus their scales; other
    parameters, such as biases, stay float)."""

    def __init__(self, fn, params, layers: list[QuantizedLayer]):
        self.fn, self.params, self.layers = fn, params, layers
        self._by_index = {q.layer.index: q for q in layers}
        self._leaves = tree_util.tree_flatten(params)[0]
        self._traces: dict = {}
        self.float_bytes = sum(int(np.asarray(p).nbytes) for p in self._leaves)
        self.quantized_bytes = self.float_bytes - sum(
            q.float_bytes - q.weight.nbytes - q.weight_scale.nbytes for q in layers)

    def _trace(self, x):
        key = (tuple(x.shape), np.dtype(x.dtype))
        if key not in self._traces:
            closed, n_params = trace(self.fn, self.params, ShapeDtypeStruct(*key))
            found = {a.index: a for a in find_layers(closed, n_params)}
            for q in self.layers:
                if found.get(q.layer.index) != q.layer:
                    raise ValueError(f"fx.quant: input {key[1]}{list(key[0])} traces to a "
                                     "program whose dense/conv layers differ from the "
                                     "calibrated ones")
            self._traces[key] = closed
        return self._traces[key]

    def __call__(self, x):
        closed = self._trace(x)

        def replace(i, eqn, args):
            q = self._by_index.get(i)
            if q is None:
                return None
            return [_quantized_eqn(q, eqn, args[q.layer.activation_operand])]

        outs = run(closed, [*self._leaves, x], replace=replace)
        return outs[0] if len(outs) == 1 else outs


    def _onnx_qdq(self):
        """For ``fx.export.to_onnx``: a function of the input tracing the float model with each
        quantized layer's weight replaced by a constant (its int8 values dequantized), and
        those constants' ids mapped to their layers. The exporter writes each such layer as
        ``DequantizeLinear(QuantizeLinear(x))`` times ``DequantizeLinear(int8 weight)`` (the
        QDQ form onnxruntime runs in int8), not the dequantized floats."""
        marks, weights = {}, {}
        for q in self.layers:
            w = q.original_weight.astype(np.float32) * _scale_in_layout(q)
            weights[q.layer.index] = fnp.asarray(w.astype(np.float32))
            marks[id(weights[q.layer.index])] = (weights[q.layer.index], q)

        def float_program(x):
            closed = self._trace(x)

            def replace(i, eqn, args):
                if i not in weights:
                    return None
                args = list(args)
                args[self._by_index[i].layer.weight_operand] = weights[i]
                out = eqn.primitive.bind(*args, **eqn.params)
                return out if eqn.primitive.multiple_results else [out]

            outs = run(closed, [*self._leaves, x], replace=replace)
            return outs[0] if len(outs) == 1 else outs

        float_program.__name__ = getattr(self.fn, "__name__", "quantized")
        return float_program, marks


def _scale_in_layout(q: QuantizedLayer) -> np.ndarray:
    """The weight scales shaped to broadcast against ``q.original_weight``."""
    shape = [1] * len(q.layer.weight_shape)
    if q.per_channel:
        for d in q.channel_axes:
            shape[d] = q.layer.weight_shape[d]
    return np.asarray(q.weight_scale, np.float32).reshape(shape)


def _quantized_eqn(q: QuantizedLayer, eqn, x):
    out_dtype = eqn.outvars[0].aval.dtype
    x_q = quantize_tensor(x, q.input_scale)
    operands = [x_q, q.weight] if q.layer.weight_operand == 1 else [q.weight, x_q]
    acc = eqn.primitive.bind(*[fnp.asarray(o) for o in operands], **q.params)
    return (acc.astype(np.float32) * q.output_scale).astype(out_dtype)


def quantize_tensor(x, scale: float):
    """``clip(round(x / scale), -127, 127)`` as int8 (symmetric, zero point 0)."""
    inv = np.float32(1.0 / scale)
    return fnp.clip(fnp.round(x.astype(np.float32) * inv), -QMAX, QMAX).astype(np.int8)


def quantize_weight(w: np.ndarray, channel_axes: tuple[int, ...], per_channel: bool):
    """Symmetric int8 weights and their float32 scales (shape of ``w`` with 1 outside
    ``channel_axes``; one scale in all without ``per_channel``)."""
    w = np.asarray(w, np.float32)
    reduce = tuple(d for d in range(w.ndim) if not per_channel or d not in channel_axes)
    amax = np.max(np.abs(w), axis=reduce, keepdims=True)
    scale = np.where(amax > 0, amax / QMAX, 1.0).astype(np.float32)
    w_q = np.clip(np.rint(w / scale), -QMAX, QMAX).astype(np.int8)
    return w_q, scale


def _output_scale(eqn, layer: Layer, scale: np.ndarray) -> np.ndarray:
    """The weight's scale (shaped like the weight) laid out to broadcast against the
    equation's output."""
    out_ndim = eqn.outvars[0].aval.ndim
    if eqn.primitive is conv_general_dilated_p:
        _, rhs_spec, out_spec = eqn.params["dimension_numbers"]
        shape = [1] * out_ndim
        shape[out_spec[1]] = scale.shape[rhs_spec[0]]
        return scale.reshape(shape)
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    contract, batch = (rc, rb) if layer.weight_operand == 1 else (lc, lb)
    w_ndim = scale.ndim
    free = [d for d in range(w_ndim) if d not in contract and d not in batch]
    kept = np.transpose(scale, list(batch) + free + list(contract))
    kept = kept.reshape([scale.shape[d] for d in list(batch) + free])
    other = eqn.invars[layer.activation_operand].aval.ndim - len(lc)  # its batch + free dims
    other_free = other - len(batch)
    if layer.weight_operand == 1:
        shape = [scale.shape[d] for d in batch] + [1] * other_free + [scale.shape[d] for d in free]
    else:
        shape = [scale.shape[d] for d in batch] + [scale.shape[d] for d in free] + [1] * other_free
    return kept.reshape(shape)


def _contiguous_rows(w_q: np.ndarray, layer: Layer, eqn):
    """A dense ``x @ W`` weight stored transposed, ``(out, in)``, contracting its dimension
    1: each output channel's weights are then one contiguous row, as the CPU int8 kernel reads
    them (it packs any other layout on every call)."""
    dn = eqn.params["dimension_numbers"]
    (lc, rc), (lb, rb) = dn
    if layer.weight_operand == 1 and w_q.ndim == 2 and not rb and tuple(rc) == (0,):
        return np.ascontiguousarray(w_q.T), ((tuple(lc), (1,)), ((), ())), (1, 0)
    return w_q, dn, tuple(range(w_q.ndim))


def _rows_first_kernel(w_q: np.ndarray, eqn):
    """A convolution kernel stored ``(O, *window, I)``: each output channel's weights one
    contiguous row in the order of the input's patches (window, then channels), so
    ``fx.jit`` runs the convolution as patches times this matrix on the int8 GEMM kernel
    without relaying it out (see ``fx.lowering.passes.lower_convolutions``)."""
    lhs_spec, rhs_spec, out_spec = eqn.params["dimension_numbers"]
    nsp = w_q.ndim - 2
    perm = (rhs_spec[0], *rhs_spec[2:], rhs_spec[1])
    spec = type(eqn.params["dimension_numbers"])(lhs_spec, (0, nsp + 1, *range(1, nsp + 1)),
                                                  out_spec)
    return np.ascontiguousarray(np.transpose(w_q, perm)), spec, perm


def _depth(eqn, layer: Layer) -> int:
    """The number of products summed into each output of the layer."""
    shape = layer.weight_shape
    if eqn.primitive is conv_general_dilated_p:
        return int(np.prod(shape)) // shape[eqn.params["dimension_numbers"][1][0]]
    (lc, rc), _ = eqn.params["dimension_numbers"]
    contract = rc if layer.weight_operand == 1 else lc
    return int(np.prod([shape[d] for d in contract]))


def _channel_axes(eqn, layer: Layer) -> tuple[int, ...]:
    if eqn.primitive is conv_general_dilated_p:
        return (eqn.params["dimension_numbers"][1][0],)
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    contract = rc if layer.weight_operand == 1 else lc
    return tuple(d for d in range(len(layer.weight_shape)) if d not in contract)


def quantize(fn, params, calibration: Calibration, weights: str = "per_channel_symmetric",
             activations: str = "per_tensor", min_depth: int = 16) -> QuantizedFunction:
    """``fn(params, ·)`` with its calibrated dense and conv layers run in int8.

    Args:
      fn, params: the model as given to :func:`fx.quant.calibrate`.
      calibration: its result.
      weights: ``"per_channel_symmetric"`` (one scale per output channel) or
        ``"per_tensor_symmetric"``; int8 in [-127, 127], zero point 0.
      activations: ``"per_tensor"``: one symmetric int8 scale per layer input, from the
        calibration's threshold.
      min_depth: layers whose products sum fewer terms per output (a first convolution over
        one input channel: 3x3x1 = 9) stay float: the int8 kernels' dot-product instructions
        work on groups of 4 to 64 terms, so such a layer runs slower in int8, and its weights
        are tiny. 0 quantizes every layer.

    Returns:
      A :class:`QuantizedFunction` ``qfn(x)`` returning float outputs.

    >>> import numpy as np, fx, fx.quant
    >>> from fx.example_libraries import stax
    >>> init, apply = stax.serial(stax.Dense(8), stax.Relu, stax.Dense(2))
    >>> _, params = init(fx.random.PRNGKey(0), (-1, 4))
    >>> x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    >>> qfn = fx.quant.quantize(apply, params, fx.quant.calibrate(apply, params, [x]))
    >>> bool(np.allclose(qfn(x), apply(params, x), atol=0.05))
    True
    """
    if weights not in WEIGHT_SCHEMES:
        raise ValueError(f"fx.quant.quantize: weights must be one of {WEIGHT_SCHEMES}, "
                         f"got {weights!r}")
    if activations not in ACTIVATION_SCHEMES:
        raise ValueError(f"fx.quant.quantize: activations must be one of "
                         f"{ACTIVATION_SCHEMES}, got {activations!r}")
    if not calibration.layers:
        raise ValueError("fx.quant.quantize: the calibration found no dense or conv layers")
    # The weights: run the program once on zeros of any traced shape, reading each layer's
    # weight operand (a function of the parameters alone).
    leaves = tree_util.tree_flatten(params)[0]
    example = _example_input(fn, params, calibration)
    closed, n_params = trace(fn, params, example)
    by_index = {s.layer.index: s for s in calibration.layers}
    seen: dict[int, tuple] = {}

    def capture(i, eqn, args):
        if i in by_index:
            seen[i] = (eqn, np.asarray(args[by_index[i].layer.weight_operand]))

    run(closed, [*leaves, np.zeros(example.shape, example.dtype)], before=capture)
    layers = []
    for stats in calibration.layers:
        eqn, w = seen[stats.layer.index]
        if eqn.primitive is conv_general_dilated_p and eqn.params["batch_group_count"] != 1:
            continue
        if _depth(eqn, stats.layer) < min_depth:
            continue
        axes = _channel_axes(eqn, stats.layer)
        per_channel = weights == "per_channel_symmetric"
        w_q, scale = quantize_weight(w, axes, per_channel)
        int_params = dict(eqn.params, preferred_element_type=dtypes.int32)
        if eqn.primitive is dot_general_p:
            int_params["precision"] = None
            w_q, int_params["dimension_numbers"], layout = _contiguous_rows(w_q, stats.layer,
                                                                            eqn)
        else:
            w_q, int_params["dimension_numbers"], layout = _rows_first_kernel(w_q, eqn)
        layers.append(QuantizedLayer(stats.layer, w_q, _output_scale(eqn, stats.layer, scale),
                                     stats.scale, int(w.nbytes), int_params, tuple(layout),
                                     axes, per_channel))
    return QuantizedFunction(fn, params, layers)


def _example_input(fn, params, calibration: Calibration) -> ShapeDtypeStruct:
    """An input type the calibrated program was traced with."""
    shape, dtype = calibration.input_shape, calibration.input_dtype
    if shape is None:
        raise ValueError("fx.quant.quantize: the calibration has no input type")
    return ShapeDtypeStruct(shape, dtype)
