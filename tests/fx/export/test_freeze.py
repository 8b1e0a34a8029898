"""fx.export.freeze: parameters as constants and the inference passes, each counted on a known
graph, with results equal to the training-time function to rounding, under jit and ONNX."""

from __future__ import annotations

import numpy as np
import pytest

import fx
import fx.numpy as jnp
from fx.example_libraries import stax
from fx.export import freeze

_RNG = np.random.default_rng(0)


def _f32(*shape, positive=False):
    a = _RNG.standard_normal(shape).astype(np.float32)
    return np.abs(a) + 0.5 if positive else a


def _bn_dense(p, x):
    """A dense layer, an inference-mode BatchNorm (constant statistics: its sqrt is computed
    once), a ReLU, a dense layer whose weights are transposed at run time, softmax and
    argmax."""
    w, b, mean, var, gamma, beta, w2 = p
    h = (x @ w + b - mean) / jnp.sqrt(var + 1e-5) * gamma + beta
    logits = jnp.maximum(h, 0) @ jnp.transpose(w2)
    return jnp.argmax(fx.nn.softmax(logits, axis=-1), axis=-1), logits


_BN_PARAMS = (_f32(5, 3), _f32(3), _f32(3), _f32(3, positive=True), _f32(3), _f32(3),
              _f32(4, 3))


def _eqn_names(frozen, *args):
    return [e.primitive.name for e in frozen._program(args)[0].jaxpr.eqns]


def test_each_pass_on_a_known_graph():
    x = _f32(6, 5)
    frozen = freeze(_bn_dense, _BN_PARAMS)
    assert frozen.report(x) == {"weights precomputed": 2, "affine layers folded": 1,
                                "softmax before argmax dropped": 1, "transposes cancelled": 0}
    names = _eqn_names(frozen, x)
    # Left: dense (folded weights) + bias, ReLU, dense (pre-transposed weights), argmax.
    assert names == ["dot_general", "broadcast_in_dim", "add", "max", "dot_general", "argmax"]
    assert "transpose" not in names and "exp" not in names and "div" not in names
    got, want = frozen(x), _bn_dense(_BN_PARAMS, x)
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=1e-5, atol=1e-5)
    jitted = fx.jit(frozen)(x)
    np.testing.assert_allclose(np.asarray(jitted[1]), np.asarray(want[1]), rtol=1e-5,
                               atol=1e-5)
    assert "affine layers folded: 1" in frozen.as_text(x)


def test_log_softmax_before_argmin_and_no_fold_across_other_uses():
    w = _f32(5, 3)

    def f(p, x):
        y = x @ p * 2.0
        return jnp.argmin(fx.nn.log_softmax(y), axis=-1), y  # y is also returned

    x = _f32(4, 5)
    frozen = freeze(f, w)
    counts = frozen.report(x)
    assert counts["softmax before argmax dropped"] == 1
    assert counts["affine layers folded"] == 1  # the * 2 has one use: folded into w
    np.testing.assert_array_equal(np.asarray(frozen(x)[0]), np.asarray(f(w, x)[0]))


def test_a_scale_that_varies_across_the_batch_is_not_folded():
    w, s = _f32(5, 3), _f32(4, 3)

    def f(p, x):
        return (x @ p[0]) * p[1]

    x = _f32(4, 5)
    frozen = freeze(f, (w, s))
    assert frozen.report(x)["affine layers folded"] == 0
    np.testing.assert_allclose(np.asarray(frozen(x)), np.asarray(f((w, s), x)), rtol=1e-6)


def test_stax_dropout_is_the_identity_when_frozen():
    init, apply = stax.serial(stax.Dense(16), stax.Relu, stax.Dropout(0.5), stax.Dense(4),
                              stax.LogSoftmax)
    _, params = init(fx.random.key(0), (-1, 8))
    x = _f32(3, 8)
    with pytest.raises(ValueError, match="needs a key"):
        apply(params, x)  # training mode: dropout wants a key
    frozen = freeze(apply, params)
    names = _eqn_names(frozen, x)
    assert not any("random" in n or "threefry" in n for n in names)
    test_mode = stax.serial(stax.Dense(16), stax.Relu, stax.Dropout(0.5, mode="test"),
                            stax.Dense(4), stax.LogSoftmax)[1]
    np.testing.assert_allclose(np.asarray(frozen(x)), np.asarray(test_mode(params, x)),
                               rtol=1e-6, atol=1e-6)


def test_conv_scale_folds_into_the_kernel_and_exports_to_onnx():
    pytest.importorskip("onnxruntime")
    import onnxruntime as ort

    from fx.export import to_onnx

    k, scale, shift = _f32(3, 3, 2, 4), _f32(4, positive=True), _f32(4)

    def f(p, x):
        y = fx.lax.conv_general_dilated(x, p[0], (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return fx.nn.relu(y * p[1] + p[2])

    x = _f32(2, 6, 6, 2)
    frozen = freeze(f, (k, scale, shift))
    assert frozen.report(x)["affine layers folded"] == 1
    assert _eqn_names(frozen, x).count("mul") == 0
    want = np.asarray(f((k, scale, shift), x))
    np.testing.assert_allclose(np.asarray(frozen(x)), want, rtol=1e-5, atol=1e-5)
    model = to_onnx(frozen, x, dynamic_batch=False)
    assert [n.op_type for n in model.graph.node].count("Mul") == 0
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_layout_round_trips_around_activations_cancel():
    def f(p, x):  # NCHW -> NHWC, activation and scale, NHWC -> NCHW; then again
        y = jnp.transpose(jnp.tanh(jnp.transpose(x, (0, 2, 3, 1)) * 2.0), (0, 3, 1, 2))
        z = jnp.transpose(jnp.exp(jnp.transpose(y, (0, 2, 3, 1))), (0, 3, 1, 2))
        kept = jnp.transpose(y, (0, 2, 3, 1))  # a transpose with no inverse stays
        return z + p, kept

    x = _f32(2, 3, 4, 5)
    frozen = freeze(f, np.float32(1.0))
    assert frozen.report(x)["transposes cancelled"] == 2
    assert _eqn_names(frozen, x).count("transpose") == 1
    for a, b in zip(frozen(x), f(np.float32(1.0), x)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))  # exact: same ops
