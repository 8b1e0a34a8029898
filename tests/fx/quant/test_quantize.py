"""``fx.quant.quantize`` on a digits MLP trained briefly: int8 accuracy within 0.5 percentage
points of float, int8 weights (about 4x smaller), int8 GEMM kernels under ``fx.jit``, and the
rewrite's shape on small models (dense layers either side of the weight, a convolution)."""

from __future__ import annotations

import numpy as np
import pytest

import fx
import fx.quant
from fx import lax
from fx.example_libraries import stax
from fx.runtime import cc


def _accuracy(fn, x, y) -> float:
    return float(np.mean(np.argmax(np.asarray(fn(x)), axis=-1) == y))


@pytest.mark.parametrize("method", ["entropy", pytest.param("minmax", marks=pytest.mark.slow),
                                    pytest.param("percentile", marks=pytest.mark.slow)])
def test_int8_mlp_accuracy_within_half_a_point(digits_mlp, method):
    apply, params, (x_train, _, x_test, y_test), _ = digits_mlp
    batches = [x_train[i:i + 256] for i in range(0, 1024, 256)]
    cal = fx.quant.calibrate(apply, params, batches, method=method)
    assert len(cal.layers) == 3
    qfn = fx.quant.quantize(apply, params, cal)
    float_acc = _accuracy(fx.jit(lambda x: apply(params, x)), x_test, y_test)
    jitted = fx.jit(qfn)
    int8_acc = _accuracy(jitted, x_test, y_test)
    print(f"\n{method}: float {100 * float_acc:.2f}%  int8 {100 * int8_acc:.2f}%  "
          f"bytes {qfn.float_bytes} -> {qfn.quantized_bytes} "
          f"({qfn.float_bytes / qfn.quantized_bytes:.2f}x)")
    assert float_acc > 0.9
    assert abs(int8_acc - float_acc) <= 0.005
    # The int8 weights, and what the compiled program does with them.
    assert all(q.weight.dtype == np.int8 for q in qfn.layers)
    assert qfn.float_bytes / qfn.quantized_bytes > 3.5
    if cc.compiler() is not None:
        text = jitted.lower(x_test).as_text("selection")
        assert text.count("cpu.int8_gemm ->") == 3, text
    # Eager (NumPy's int32 products) and compiled agree.
    eager = np.asarray(qfn(x_test[:50]))
    np.testing.assert_allclose(np.asarray(jitted(x_test[:50])), eager, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_int8_cnn_accuracy_within_half_a_point(mlp_example):
    ex = mlp_example
    x_train, y_train, x_test, y_test = ex.load_digits(seed=0, image=True)
    init, apply = stax.serial(  # examples/cnn_digits.py's LeNet, narrower
        stax.Conv(8, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
        stax.Conv(16, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
        stax.Flatten, stax.Dense(64), stax.Relu, stax.Dense(10), stax.LogSoftmax)
    params, _, _, _ = ex.train((init, apply), (x_train, y_train, x_test, y_test), seed=0,
                               epochs=1, batch_size=64, lr=3e-3, steps=200, backend=None,
                               name="cnn", progress=False)
    batches = [x_train[i:i + 256] for i in range(0, 1024, 256)]
    cal = fx.quant.calibrate(apply, params, batches, method="percentile")
    assert [s.layer.primitive for s in cal.layers] == ["conv_general_dilated"] * 2 + [
        "dot_general"] * 2
    qfn = fx.quant.quantize(apply, params, cal)
    float_acc = _accuracy(fx.jit(lambda x: apply(params, x)), x_test, y_test)
    jitted = fx.jit(qfn)
    int8_acc = _accuracy(jitted, x_test, y_test)
    print(f"\ncnn: float {100 * float_acc:.2f}%  int8 {100 * int8_acc:.2f}%  "
          f"bytes {qfn.float_bytes} -> {qfn.quantized_bytes}")
    assert float_acc > 0.9 and abs(int8_acc - float_acc) <= 0.005
    if cc.compiler() is not None:
        # (The first convolution, 3x3x1 = 9 products per output, stays float: min_depth.)
        assert len(qfn.layers) == 3
        # The int8 convolution reads its (int8) input in place; the dense layers are products.
        text = jitted.lower(x_test).as_text("selection")
        assert text.count("cpu.int8_conv ->") == 1 and text.count("cpu.int8_gemm ->") == 2, text


def test_quantized_program_is_int8_products_between_float_ops():
    init, apply = stax.serial(stax.Dense(6), stax.Relu, stax.Dense(3))
    _, params = init(fx.random.PRNGKey(1), (-1, 4))
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    qfn = fx.quant.quantize(apply, params, fx.quant.calibrate(apply, params, [x]), min_depth=0)
    text = str(fx.make_jaxpr(qfn)(x))
    assert text.count("preferred_element_type=int32") == 2
    assert text.count("i8[5,4]") == 1 and "i8[6,4]" in text  # (out, in) weights
    np.testing.assert_allclose(np.asarray(qfn(x)), np.asarray(apply(params, x)), atol=0.05)
    # Another batch size retraces; the int8 weights are the same constants.
    assert np.asarray(qfn(x[:2])).shape == (2, 3)


def test_weight_on_the_left_and_per_tensor_weights():
    w = np.random.default_rng(1).normal(size=(3, 7)).astype(np.float32)

    def fn(p, x):  # W @ x: the weight is the lhs, its rows the output channels
        return lax.dot_general(p["w"], x, (((1,), (0,)), ((), ())))

    x = np.random.default_rng(2).normal(size=(7, 4)).astype(np.float32)
    cal = fx.quant.calibrate(fn, {"w": w}, [x])
    assert cal.layers[0].layer.weight_operand == 0
    for scheme in ("per_channel_symmetric", "per_tensor_symmetric"):
        qfn = fx.quant.quantize(fn, {"w": w}, cal, weights=scheme, min_depth=0)
        np.testing.assert_allclose(np.asarray(qfn(x)), w @ x, atol=0.1)
        assert qfn.layers[0].weight_scale.shape == ((3, 1) if scheme.startswith("per_channel")
                                                    else (1, 1))
    with pytest.raises(ValueError, match="weights must be"):
        fx.quant.quantize(fn, {"w": w}, cal, weights="asymmetric")


def test_conv_layers_are_quantized():
    init, apply = stax.serial(stax.Conv(4, (3, 3)), stax.Relu, stax.Flatten, stax.Dense(2))
    _, params = init(fx.random.PRNGKey(2), (-1, 6, 6, 1))
    x = np.random.default_rng(3).uniform(size=(3, 6, 6, 1)).astype(np.float32)
    cal = fx.quant.calibrate(apply, params, [x])
    assert [s.layer.primitive for s in cal.layers] == ["conv_general_dilated", "dot_general"]
    # By default the 3x3x1 convolution (9 products per output) stays float.
    assert [q.layer.primitive for q in fx.quant.quantize(apply, params, cal).layers] == [
        "dot_general"]
    qfn = fx.quant.quantize(apply, params, cal, min_depth=0)
    want = np.asarray(apply(params, x))
    np.testing.assert_allclose(np.asarray(qfn(x)), want, atol=0.05 * np.abs(want).max())
    jitted = fx.jit(qfn)
    np.testing.assert_allclose(np.asarray(jitted(x)), np.asarray(qfn(x)), rtol=1e-5, atol=1e-5)
    # The int8 kernel stored (out, *window, in): under jit the convolution is its input's
    # patches times that matrix, and both layers are int8 GEMM steps.
    assert qfn.layers[0].weight.dtype == np.int8 and qfn.layers[0].weight.shape == (4, 3, 3, 1)
    if cc.compiler() is not None:
        assert jitted.lower(x).as_text("selection").count("cpu.int8_gemm ->") == 2


def test_conv_layouts_strides_and_padding():
    w = np.random.default_rng(4).normal(size=(5, 3, 3, 2)).astype(np.float32)  # OIHW

    def fn(p, x):  # NCHW input, stride 2, explicit padding, dilation
        return lax.conv_general_dilated(x, p, (2, 1), ((1, 2), (0, 1)), rhs_dilation=(1, 2),
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))

    x = np.random.default_rng(5).normal(size=(2, 3, 9, 8)).astype(np.float32)
    qfn = fx.quant.quantize(fn, w, fx.quant.calibrate(fn, w, [x]))
    assert qfn.layers[0].weight.shape == (5, 3, 2, 3)  # OIHW stored (O, H, W, I)
    want = np.asarray(fn(w, x))
    got = np.asarray(qfn(x))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=0.03 * np.abs(want).max())
    np.testing.assert_allclose(np.asarray(fx.jit(qfn)(x)), got, rtol=1e-5, atol=1e-5)
