"""``fx.quant``: int8 post-training quantization of dense and conv layers.

Two steps, as TensorRT's and onnxruntime's static quantization::

    cal = fx.quant.calibrate(apply_fn, params, batches, method="entropy")
    qfn = fx.quant.quantize(apply_fn, params, cal)     # qfn(x): int8 layers, float outputs
    fx.jit(qfn)(x)                                     # int8 x int8 -> int32 GEMM kernels

``calibrate`` observes the activations entering each ``dot_general``/``conv_general_dilated``
whose other operand comes from the parameters (``minmax``, ``percentile`` or ``entropy``
thresholds, see ``observers``). ``quantize`` rewrites those equations to symmetric int8
products with int32 accumulation and float dequantization (see ``quantize``'s module).
Tracing the model once per input shape is all it needs: the rewrite is an interpreter over
its jaxpr.

``fx.quant.nf4`` holds 4-bit NormalFloat weights (QLoRA) and their fused product.
"""

from fx.quant import nf4
from fx.quant.calibration import Calibration, Layer, LayerStats, calibrate, find_layers
from fx.quant.observers import Method, Observer
from fx.quant.quantize import QuantizedFunction, QuantizedLayer, quantize, quantize_tensor

__all__ = ["Calibration", "Layer", "LayerStats", "Method", "Observer", "QuantizedFunction",
           "QuantizedLayer", "calibrate", "find_layers", "nf4", "quantize", "quantize_tensor"]
