"""fx's int8 quantization against onnxruntime's own (``quantize_static``, QDQ, per-channel
int8 weights) on the same float model and the same calibration batches: fx's int8 digits MLP
is at least as accurate, and within 0.5 percentage points of float."""

from __future__ import annotations

import os

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

import fx  # noqa: E402
import fx.export  # noqa: E402
import fx.quant  # noqa: E402


def _accuracy(outputs, y) -> float:
    return float(np.mean(np.argmax(np.asarray(outputs), axis=-1) == y))


def ort_static_int8(float_path, batches, method: str, out_path):
    """onnxruntime's static quantization of the float model at ``float_path``: QDQ,
    per-channel int8 weights, its default uint8 activations, calibrated on ``batches``."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(batches)

        def get_next(self):
            x = next(self.it, None)
            return None if x is None else {"input_0": x}

    methods = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
               "percentile": CalibrationMethod.Percentile}
    quantize_static(str(float_path), str(out_path), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, weight_type=QuantType.QInt8,
                    calibrate_method=methods[method])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
    return ort.InferenceSession(str(out_path), opts, providers=["CPUExecutionProvider"])


def _compare(label, apply, params, batches, method, x_test, y_test, tmp_path):
    """fx's and onnxruntime's int8 accuracy on the same float model and calibration batches:
    fx's within 0.5 points of float and no worse than onnxruntime's."""
    frozen = fx.export.freeze(apply, params)
    fx.export.save_onnx(tmp_path / "float.onnx", frozen, x_test[:1])
    session = ort_static_int8(tmp_path / "float.onnx", batches, method, tmp_path / "int8.onnx")
    ort_acc = _accuracy(session.run(None, {"input_0": x_test})[0], y_test)
    qfn = fx.quant.quantize(apply, params, fx.quant.calibrate(apply, params, batches, method))
    fx_acc = _accuracy(fx.jit(qfn)(x_test), y_test)
    float_acc = _accuracy(frozen(x_test), y_test)
    print(f"\n{label}: float {100 * float_acc:.2f}%  fx int8 {100 * fx_acc:.2f}%  "
          f"onnxruntime int8 {100 * ort_acc:.2f}%")
    assert abs(fx_acc - float_acc) <= 0.005
    assert fx_acc >= ort_acc


@pytest.mark.parametrize("method", ["minmax", pytest.param("entropy", marks=pytest.mark.slow),
                                    pytest.param("percentile", marks=pytest.mark.slow)])
def test_fx_int8_is_no_worse_than_onnxruntime_int8(digits_mlp, method, tmp_path):
    apply, params, (x_train, _, x_test, y_test), _ = digits_mlp
    batches = [x_train[i:i + 256] for i in range(0, 1024, 256)]
    _compare(method, apply, params, batches, method, x_test, y_test, tmp_path)


@pytest.mark.slow
def test_fx_int8_cnn_is_no_worse_than_onnxruntime_int8(mlp_example, tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(mlp_example.__file__).parent))
    from cnn_digits import lenet

    ex = mlp_example
    data = ex.load_digits(seed=0, image=True, standardize=True)
    x_train, _, x_test, y_test = data
    params, _, _, _ = ex.train(lenet(), data, seed=0, epochs=1, batch_size=64, lr=2e-3,
                               steps=300, backend=None, name="cnn", progress=False)
    batches = [x_train[i:i + 64] for i in range(0, 8 * 64, 64)]
    _compare("cnn", lenet()[1], params, batches, "entropy", x_test, y_test, tmp_path)
