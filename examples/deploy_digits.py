"""From a trained model to deployed ones: the digits CNN trained, frozen, quantized to int8,
exported to ONNX, and run in fx and onnxruntime, with one table to compare them.

    python examples/deploy_digits.py               # full training (~98% test accuracy)
    python examples/deploy_digits.py --steps 60    # a quick run

The steps:

1. train the LeNet of ``cnn_digits.py`` (Adam, as there);
2. ``fx.export.freeze``: the parameters become constants and the inference passes run (the
   counts are printed);
3. ``fx.quant``: calibrate on 8 training batches (entropy thresholds), quantize the conv and
   dense layers to int8 x int8 -> int32 products;
4. ``fx.export.to_onnx`` of the frozen float model and of the int8 one (QDQ form:
   QuantizeLinear/DequantizeLinear around each int8 layer, int8 weights); onnxruntime's own
   static quantization (QDQ, the same 8 calibration batches) makes its int8 model too;
5. the table: test accuracy, model bytes and median latency at batch 1 and 256 for fx float
   (jit of the frozen model), fx int8 (jit of the quantized one), onnxruntime running fx's
   float and int8 exports, and onnxruntime int8 (its own quantization), measured in this
   process, one after the other.

Needs the ``export`` extra (onnx, onnxruntime) besides the examples'.
"""

from __future__ import annotations

import os
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # as cnn_digits.py

import numpy as np  # noqa: E402
from cnn_digits import lenet  # noqa: E402
from mlp_digits import load_digits, parse_args, train  # noqa: E402

import fx  # noqa: E402
import fx.export  # noqa: E402
import fx.quant  # noqa: E402


def _median_seconds(fn, x, repeat: int) -> float:
    fn(x)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(x)
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))


def _ort_session(model_bytes: bytes):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
    return ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])


def _ort_int8(float_path: str, calib: list[np.ndarray], input_name: str) -> bytes:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calib)

        def get_next(self):
            x = next(self.it, None)
            return None if x is None else {input_name: x}

    with tempfile.TemporaryDirectory() as tmp:
        pre, out = os.path.join(tmp, "pre.onnx"), os.path.join(tmp, "int8.onnx")
        quant_pre_process(float_path, pre, skip_symbolic_shape=True)
        quantize_static(pre, out, Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        per_channel=True)
        with open(out, "rb") as f:
            return f.read()


def main():
    args = parse_args(__doc__.splitlines()[0], epochs=30, lr=2e-3)
    data = load_digits(args.seed, image=True, standardize=True)
    x_train, _, x_test, y_test = data
    params, _, test_acc, _ = train(lenet(), data, seed=args.seed, epochs=args.epochs,
                                   batch_size=args.batch_size, lr=args.lr, steps=args.steps,
                                   backend=args.backend, name="cnn",
                                   progress=not args.no_progress)
    apply_fn = lenet()[1]
    print(f"trained: test accuracy {100 * test_acc:.2f}%")

    frozen = fx.export.freeze(apply_fn, params)
    print("inference passes:", ", ".join(f"{k} {v}" for k, v in frozen.report(x_test).items()))
    calib = [x_train[i:i + 64] for i in range(0, 8 * 64, 64)]
    cal = fx.quant.calibrate(apply_fn, params, calib, method="entropy")
    qfn = fx.quant.quantize(apply_fn, params, cal)

    import onnx

    with tempfile.TemporaryDirectory() as tmp:
        float_path = os.path.join(tmp, "float.onnx")
        fx.export.save_onnx(float_path, frozen, x_test[:1])
        float_bytes = open(float_path, "rb").read()
        input_name = onnx.load_from_string(float_bytes).graph.input[0].name
        int8_bytes = _ort_int8(float_path, calib, input_name)
    qdq_bytes = fx.export.to_onnx(qfn, x_test[:1]).SerializeToString()
    ort_float, ort_int8 = _ort_session(float_bytes), _ort_session(int8_bytes)
    ort_qdq = _ort_session(qdq_bytes)

    fx_float, fx_int8 = fx.jit(frozen), fx.jit(qfn)
    param_bytes = sum(np.asarray(p).nbytes for p in fx.tree_util.tree_leaves(params))
    rows = [
        ("fx float", lambda x: np.asarray(fx_float(x)), param_bytes),
        ("fx int8", lambda x: np.asarray(fx_int8(x)), qfn.quantized_bytes),
        ("onnxruntime float", lambda x: ort_float.run(None, {input_name: x})[0],
         len(float_bytes)),
        ("onnxruntime fx-int8", lambda x: ort_qdq.run(None, {input_name: x})[0],
         len(qdq_bytes)),
        ("onnxruntime int8", lambda x: ort_int8.run(None, {input_name: x})[0], len(int8_bytes)),
    ]
    one, batch = x_test[:1], np.concatenate([x_test] * 2)[:256]
    print(f"\n{'model':<19} | accuracy | {'bytes':>9} | batch 1  | batch 256")
    for name, run, nbytes in rows:
        acc = float(np.mean(np.argmax(run(x_test), axis=-1) == y_test))
        t1, t256 = _median_seconds(run, one, 50), _median_seconds(run, batch, 20)
        print(f"{name:<19} | {100 * acc:7.2f}% | {nbytes:9d} | {t1 * 1e3:5.3f} ms | "
              f"{t256 * 1e3:6.2f} ms", flush=True)
    print("(fx rows' bytes: the parameters as arrays; onnxruntime's: the model file; "
          "fx-int8: fx's QDQ export of its int8 model)")


if __name__ == "__main__":
    main()
