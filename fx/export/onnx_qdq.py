"""The QDQ form of an ``fx.quant`` model: each int8 layer as ONNX's QuantizeLinear /
DequantizeLinear pairs around the float operator, the form onnxruntime's optimizer fuses into
integer kernels (``QLinearConv``, ``QLinearMatMul`` and kin) and other runtimes read as int8.

For a quantized layer ``y = conv(x, w)`` (or ``dot_general``) the exporter writes

    x_q  = QuantizeLinear(x, s_x, 128)        # uint8, per tensor
    x_dq = DequantizeLinear(x_q, s_x, 128)
    w_dq = DequantizeLinear(w_int8, s_w, 0, axis=channel)   # an int8 initializer
    y    = Conv(x_dq, w_dq) / MatMul(x_dq, w_dq)

with fx's own scales and int8 weights, so both runtimes compute the same integer products
(onnxruntime's optimizer keeps the float ops between layers, or fuses them further). The
activations are written as uint8 with zero point 128 — the same values as fx's int8 with zero
point 0, in the type onnxruntime's x86 kernels take (it rewrites int8 activations to uint8
itself, and its rewrite breaks on opset 21 models). One difference: fx clips activations to
[-127, 127] (symmetric, as the weights), QuantizeLinear to [-128, 127] here, so an activation
below -127.5 · s_x is one step apart.

Convolution kernels are written in ONNX's OIHW layout as the int8 initializer itself (no
Transpose between the DequantizeLinear and the Conv, which would hide the pattern); a dense
layer's weight as the ``(in, out)`` matrix MatMul takes.
"""

from __future__ import annotations

import numpy as np

from fx.export.onnx_graph import Ctx, Value, onnx_rules
from fx.lax.convolution import conv_general_dilated_p


def qdq_layer(ctx: Ctx, ins: list[Value], weight_operand: int, layer) -> list[str]:
    """Emit the layer ``ctx.eqn`` (whose operand ``weight_operand`` is the dequantized
    weight constant of ``layer``, an ``fx.quant.QuantizedLayer``) in QDQ form."""
    eqn = ctx.eqn
    params = dict(eqn.params)
    act = ins[1 - weight_operand]
    s_x = ctx.scalar(np.float32(layer.input_scale), np.float32)
    mid = ctx.scalar(128, np.uint8)
    x_q = ctx.op("QuantizeLinear", act, s_x, mid)
    x_dq = Value(ctx.op("DequantizeLinear", x_q, s_x, mid), act.shape, np.dtype(np.float32))
    if act.dtype != np.float32:
        x_dq = Value(ctx.cast(x_dq, act.dtype), act.shape, act.dtype)
    w = layer.original_weight
    axes = layer.channel_axes if layer.per_channel else ()
    if len(axes) > 1:
        raise ctx.error(f"a weight {tuple(w.shape)} with {len(axes)} output-channel axes "
                        f"{axes}: DequantizeLinear takes one scale axis")
    axis = axes[0] if axes else None
    if eqn.primitive is conv_general_dilated_p:
        lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
        w = np.transpose(w, rhs_spec)  # OIHW, as Conv takes it
        axis = 0 if axis is not None else None
        params["dimension_numbers"] = type(params["dimension_numbers"])(
            lhs_spec, tuple(range(w.ndim)), out_spec)
    else:
        (lc, rc), (lb, rb) = params["dimension_numbers"]
        if weight_operand == 1 and w.ndim == 2 and tuple(rc) == (1,) and not rb:
            w = w.T  # (in, out), as MatMul takes it
            axis = None if axis is None else 1 - axis
            params["dimension_numbers"] = ((tuple(lc), (0,)), ((), ()))
    scale = np.asarray(layer.weight_scale, np.float32).reshape(-1)
    if axis is None:
        dq = ctx.op("DequantizeLinear", ctx.const(np.ascontiguousarray(w, np.int8)),
                    ctx.scalar(scale[0], np.float32), ctx.scalar(0, np.int8))
    else:
        dq = ctx.op("DequantizeLinear", ctx.const(np.ascontiguousarray(w, np.int8)),
                    ctx.const(scale), ctx.const(np.zeros(scale.shape, np.int8)), axis=int(axis))
    w_dq = Value(dq, tuple(w.shape), np.dtype(np.float32))
    if act.dtype != np.float32:
        w_dq = Value(ctx.cast(w_dq, act.dtype), w_dq.shape, act.dtype)
    operands = [x_dq, w_dq] if weight_operand == 1 else [w_dq, x_dq]
    names = onnx_rules[eqn.primitive].fn(ctx, *operands, **params)
    return [names] if isinstance(names, str) else list(names)
