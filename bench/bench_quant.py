"""int8 vs float32 inference on CPU of a 784-1024-1024-10 MLP and of the digits LeNet CNN
(``examples/cnn_digits.py``'s, 8x8x1 images): fx float (``fx.jit`` with the weights as
constants: BLAS GEMMs), fx int8 (``fx.quant``: ``cpu.int8_gemm`` kernels with the
dequantization, bias, ReLU and next requantization fused; convolutions as patches times the
int8 kernel), and, when onnx/onnxruntime are installed, onnxruntime float (the model exported
by ``fx.export.to_onnx``), onnxruntime running fx's int8 model (its QDQ export, "ort fx-i8")
and onnxruntime int8 (its own ``quantize_static`` in QDQ form: uint8 activations, its x86
default, and per-channel int8 weights, calibrated on the same batches). Batch 1 and 256;
medians; ratios against fx float (above 1: faster). Model bytes: the parameters, float and
int8 (+ float scales, biases).

Run: ``python bench/bench_quant.py`` (``--one-thread``: OpenBLAS, OpenMP and onnxruntime on
one thread each, for a loaded machine; ``--repeat N``). The machine header is bench_cpu's;
the load average before and after is printed, since a busy 2-core machine moves every row.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np
from bench_cpu import print_machine, restart_on_one_thread, timeit_each

import fx
import fx.quant
from fx.example_libraries import stax

SIZES = (784, 1024, 1024, 10)
BATCHES = (1, 256)


def mlp():
    init, apply = stax.serial(stax.Dense(SIZES[1]), stax.Relu, stax.Dense(SIZES[2]), stax.Relu,
                              stax.Dense(SIZES[3]), stax.LogSoftmax)
    _, params = init(fx.random.PRNGKey(0), (-1, SIZES[0]))
    return apply, params, (SIZES[0],)


def cnn():
    init, apply = stax.serial(  # examples/cnn_digits.py's lenet()
        stax.Conv(16, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
        stax.Conv(32, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
        stax.Flatten, stax.Dense(128), stax.Relu, stax.Dense(10), stax.LogSoftmax)
    _, params = init(fx.random.PRNGKey(0), (-1, 8, 8, 1))
    return apply, params, (8, 8, 1)


def onnxruntime_sessions(fn, qfn, calib: list, threads: int | None):
    """(float, fx int8 QDQ, onnxruntime int8) sessions of ``fn`` and ``qfn`` exported to
    ONNX, or None without onnxruntime."""
    try:
        import onnx
        import onnxruntime as ort
        from onnxruntime.quantization import (
            CalibrationDataReader,
            QuantFormat,
            QuantType,
            quantize_static,
        )
    except ImportError:
        return None

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"input_0": b} for b in calib])

        def get_next(self):
            return next(self.it, None)

    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    with tempfile.TemporaryDirectory() as tmp:
        f32, qdq, i8 = (os.path.join(tmp, f"{n}.onnx") for n in ("f32", "qdq", "i8"))
        onnx.save_model(fx.export.to_onnx(fn, calib[0]), f32)
        onnx.save_model(fx.export.to_onnx(qfn, calib[0]), qdq)
        quantize_static(f32, i8, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        return tuple(ort.InferenceSession(p, options, providers=["CPUExecutionProvider"])
                     for p in (f32, qdq, i8))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--one-thread", action="store_true")
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    if args.one_thread:
        restart_on_one_thread()
    print_machine()
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    for name, model in (("MLP 784-1024-1024-10", mlp), ("LeNet CNN", cnn)):
        _bench(name, *model(), args)
    print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")


def _bench(name, apply, params, in_shape, args):
    rng = np.random.default_rng(0)
    calib = [rng.uniform(0, 1, (256, *in_shape)).astype(np.float32) for _ in range(4)]

    def f32(x):
        return apply(params, x)

    qfn = fx.quant.quantize(apply, params, fx.quant.calibrate(apply, params, calib, "minmax"))
    print(f"\n{name}: model bytes float {qfn.float_bytes:,}, int8 {qfn.quantized_bytes:,} "
          f"({qfn.float_bytes / qfn.quantized_bytes:.2f}x smaller); int8 layers "
          f"{len(qfn.layers)}")
    fx_f32, fx_i8 = fx.jit(f32), fx.jit(qfn)
    sessions = onnxruntime_sessions(f32, qfn, calib, 1 if args.one_thread else None)
    x = calib[0]
    agree = np.mean(np.argmax(np.asarray(fx_i8(x)), -1) == np.argmax(np.asarray(fx_f32(x)), -1))
    print(f"int8 top-1 agreement with float on a calibration batch: {100 * agree:.1f}%")
    print(f"{'':10} | {'fx float':>10} | {'fx int8':>10} | {'ort float':>10} | "
          f"{'ort fx-i8':>10} | {'ort int8':>10} | fx int8 vs fx float | fx int8 vs ort int8")
    for batch in BATCHES:
        xb = np.ascontiguousarray(x[:batch])
        fns = [lambda xb=xb: fx_f32(xb).block_until_ready(),
               lambda xb=xb: fx_i8(xb).block_until_ready()]
        if sessions:
            fns += [lambda s=s, xb=xb: s.run(None, {"input_0": xb}) for s in sessions]
        repeat = args.repeat * (10 if batch == 1 else 1)
        times = timeit_each(fns, repeat) + [None] * (5 - len(fns))
        cells = [f"{t * 1e3:7.3f} ms" if t else f"{'-':>10}" for t in times]
        vs_ort = f"{times[4] / times[1]:.2f}x" if times[4] else "-"
        print(f"batch {batch:<4} | " + " | ".join(cells)
              + f" | {times[0] / times[1]:18.2f}x | {vs_ort:>18}", flush=True)


if __name__ == "__main__":
    main()
