"""``fx.export.to_onnx`` of an ``fx.quant`` model: the QDQ form (QuantizeLinear /
DequantizeLinear around each int8 layer, int8 weight initializers), valid ONNX, run by
onnxruntime on integer kernels, and computing what ``fx.jit`` of the quantized model computes
(the same int8 products: agreement to float rounding)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import fx  # noqa: E402
import fx.export  # noqa: E402
import fx.quant  # noqa: E402
from fx.example_libraries import stax  # noqa: E402

RNG = np.random.default_rng(0)


def _quantized(layers, in_shape, batch=16, **kw):
    init, apply = stax.serial(*layers)
    _, params = init(fx.random.PRNGKey(0), (-1, *in_shape))
    x = RNG.standard_normal((batch, *in_shape)).astype(np.float32)
    cal = fx.quant.calibrate(apply, params, [x, 0.5 * x], method="minmax")
    return fx.quant.quantize(apply, params, cal, **kw), x


def _run(model, x, optimized_path=None):
    opts = ort.SessionOptions()
    if optimized_path is not None:
        opts.optimized_model_filepath = str(optimized_path)
    session = ort.InferenceSession(model.SerializeToString(), opts,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"input_0": x})[0]


def _op_count(model, op: str) -> int:
    return sum(n.op_type == op for n in model.graph.node)


def test_mlp_exports_in_qdq_form_and_runs_on_integer_kernels(tmp_path):
    qfn, x = _quantized([stax.Dense(32), stax.Relu, stax.Dense(10), stax.LogSoftmax], (64,))
    model = fx.export.to_onnx(qfn, x)
    onnx.checker.check_model(model, full_check=True)
    assert _op_count(model, "QuantizeLinear") == 2  # one per layer's input
    assert _op_count(model, "DequantizeLinear") == 4  # its input and its weight
    # The weights are int8 initializers (per-channel scales beside them), no float copies.
    weights = {i.name: i for i in model.graph.initializer if len(i.dims) == 2}
    assert sorted(tuple(i.dims) for i in weights.values()) == [(32, 10), (64, 32)]
    assert all(i.data_type == onnx.TensorProto.INT8 for i in weights.values())
    # The same integer products: onnxruntime agrees with fx's int8 kernels to rounding, at
    # another batch size too (the batch is symbolic).
    for xs in (x, x[:5]):
        want = np.asarray(fx.jit(qfn)(xs))
        np.testing.assert_allclose(_run(model, xs), want, rtol=1e-5, atol=1e-5)
    # onnxruntime's optimizer fused the QDQ pattern into integer matmuls.
    _run(model, x, tmp_path / "opt.onnx")
    fused = [n.op_type for n in onnx.load(tmp_path / "opt.onnx").graph.node]
    assert fused.count("MatMulIntegerToFloat") == 2, fused


def test_cnn_and_per_tensor_weights():
    layers = [stax.Conv(4, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
              stax.Conv(8, (3, 3)), stax.Relu, stax.Flatten, stax.Dense(10)]
    for weights in ("per_channel_symmetric", "per_tensor_symmetric"):
        qfn, x = _quantized(layers, (8, 8, 1), weights=weights, min_depth=0)
        assert [q.layer.primitive for q in qfn.layers] == ["conv_general_dilated"] * 2 + [
            "dot_general"]
        model = fx.export.to_onnx(qfn, x)
        onnx.checker.check_model(model, full_check=True)
        assert _op_count(model, "QuantizeLinear") == 3 and _op_count(model, "Conv") == 2
        # OIHW int8 kernels feed their DequantizeLinear directly (no Transpose between).
        kernels = [i for i in model.graph.initializer if len(i.dims) == 4 and i.dims[0] > 1]
        assert sorted(tuple(i.dims) for i in kernels) == [(4, 1, 3, 3), (8, 4, 3, 3)]
        assert all(i.data_type == onnx.TensorProto.INT8 for i in kernels)
        np.testing.assert_allclose(_run(model, x), np.asarray(fx.jit(qfn)(x)),
                                   rtol=1e-5, atol=1e-5)


def test_float_layers_stay_float():
    # The 3x3x1 convolution has 9 products per output: below min_depth it stays float.
    qfn, x = _quantized([stax.Conv(4, (3, 3)), stax.Relu, stax.Flatten, stax.Dense(3)],
                        (6, 6, 1))
    model = fx.export.to_onnx(qfn, x)
    assert _op_count(model, "QuantizeLinear") == 1
    kernel = [i for i in model.graph.initializer if len(i.dims) == 4 and i.dims[0] > 1]
    assert [i.data_type for i in kernel] == [onnx.TensorProto.FLOAT]
    np.testing.assert_allclose(_run(model, x), np.asarray(qfn(x)), rtol=1e-4, atol=1e-4)
