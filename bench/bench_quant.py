"""int8 vs float32 inference of a 784-1024-1024-10 MLP on CPU: fx float (``fx.jit`` with the
weights as constants: BLAS GEMMs), fx int8 (``fx.quant``: ``cpu.int8_gemm`` kernels with
the dequantization, bias, ReLU and next requantization fused), and onnxruntime float and
int8 (the same model exported by ``fx.export.to_onnx``, quantized by onnxruntime's
``quantize_static`` in QDQ form: uint8 activations, its x86 default, and per-channel int8
weights, calibrated on the same batches)
when onnx/onnxruntime are installed. Batch 1 and 256; medians; ratios against fx float
(above 1: faster). Model bytes: the parameters, float and int8 (+ float scales, biases).

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


def model():
    init, apply = stax.serial(stax.Dense(SIZES[1]), stax.Relu, stax.Dense(SIZES[2]), stax.Relu,
                              stax.Dense(SIZES[3]), stax.LogSoftmax)
    _, params = init(fx.random.PRNGKey(0), (-1, SIZES[0]))
    return apply, params


def onnxruntime_sessions(fn, calib: list, threads: int | None):
    """(float session, int8 session) of ``fn`` exported to ONNX, or None without onnxruntime."""
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
        f32, i8 = os.path.join(tmp, "f32.onnx"), os.path.join(tmp, "i8.onnx")
        onnx.save_model(fx.export.to_onnx(fn, calib[0]), f32)
        quantize_static(f32, i8, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        return tuple(ort.InferenceSession(p, options, providers=["CPUExecutionProvider"])
                     for p in (f32, i8))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--one-thread", action="store_true")
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    if args.one_thread:
        restart_on_one_thread()
    print_machine()
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    apply, params = model()
    rng = np.random.default_rng(0)
    calib = [rng.uniform(0, 1, (256, SIZES[0])).astype(np.float32) for _ in range(4)]

    def f32(x):
        return apply(params, x)

    qfn = fx.quant.quantize(apply, params, fx.quant.calibrate(apply, params, calib, "minmax"))
    print(f"model bytes: float {qfn.float_bytes:,}  int8 {qfn.quantized_bytes:,}  "
          f"({qfn.float_bytes / qfn.quantized_bytes:.2f}x smaller)")
    fx_f32, fx_i8 = fx.jit(f32), fx.jit(qfn)
    sessions = onnxruntime_sessions(f32, calib, 1 if args.one_thread else None)
    x = calib[0]
    agree = np.mean(np.argmax(np.asarray(fx_i8(x)), -1) == np.argmax(np.asarray(fx_f32(x)), -1))
    print(f"int8 top-1 agreement with float on a calibration batch: {100 * agree:.1f}%")
    print(f"{'':10} | {'fx float':>10} | {'fx int8':>10} | {'ort float':>10} | "
          f"{'ort int8':>10} | fx int8 vs fx float | fx int8 vs ort int8")
    for batch in BATCHES:
        xb = np.ascontiguousarray(x[:batch])
        fns = [lambda xb=xb: fx_f32(xb).block_until_ready(),
               lambda xb=xb: fx_i8(xb).block_until_ready()]
        if sessions:
            fns += [lambda s=s, xb=xb: s.run(None, {"input_0": xb}) for s in sessions]
        repeat = args.repeat * (10 if batch == 1 else 1)
        times = timeit_each(fns, repeat) + [None] * (4 - len(fns))
        cells = [f"{t * 1e3:7.3f} ms" if t else f"{'-':>10}" for t in times]
        vs_ort = f"{times[3] / times[1]:.2f}x" if times[3] else "-"
        print(f"batch {batch:<4} | " + " | ".join(cells)
              + f" | {times[0] / times[1]:18.2f}x | {vs_ort:>18}", flush=True)
    print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    print(fx_i8.lower(x).as_text("selection"))


if __name__ == "__main__":
    main()
