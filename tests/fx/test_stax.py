"""fx.example_libraries.stax against jax.example_libraries.stax: initializers give jax's values
for the same key (bit-identical for uniform draws, a few ulps for normal ones), every layer's
init_fun gives jax's output shape and parameter structure, and apply_fun jax's outputs and
gradients on the same parameters. Dtypes are explicit (jax runs in 64-bit mode here, fx defaults
to float32)."""

from __future__ import annotations

import doctest

import jax
import jax.example_libraries.stax as jstax
import jax.nn.initializers as jinit
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

import fx
import fx.numpy as fnp
import fx.random as fr
from fx.example_libraries import stax

F32 = np.float32


def to_np(tree):
    return jax.tree_util.tree_map(lambda a: np.asarray(a), tree)


def to_jax(tree):
    return jax.tree_util.tree_map(lambda a: jnp.asarray(np.asarray(a)), tree)


def assert_trees_close(got, want, rtol=1e-5, atol=1e-6, what=""):
    g_leaves, g_def = jax.tree_util.tree_flatten(to_np(got))
    w_leaves, w_def = jax.tree_util.tree_flatten(to_np(want))
    assert g_def == w_def, f"{what}: structure {g_def} != {w_def}"
    for i, (g, w) in enumerate(zip(g_leaves, w_leaves)):
        assert g.shape == w.shape and g.dtype == w.dtype, \
            f"{what} leaf {i}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{what} leaf {i}")


# --- initializers ------------------------------------------------------------------------------

F64 = np.float64
DENSE, CONV = (5, 7), (3, 3, 2, 4)
INIT_CASES = [  # (name, fx constructor, jax constructor, kwargs, shape, dtype, bit-exact)
    ("glorot_normal", stax.glorot_normal, jinit.glorot_normal, {}, DENSE, F32, False),
    ("glorot_normal", stax.glorot_normal, jinit.glorot_normal, {}, CONV, F32, False),
    ("glorot_normal", stax.glorot_normal, jinit.glorot_normal, {}, DENSE, F64, False),
    ("glorot_normal_oihw", stax.glorot_normal, jinit.glorot_normal,
     dict(in_axis=1, out_axis=0), CONV, F32, False),
    ("glorot_uniform", stax.glorot_uniform, jinit.glorot_uniform, {}, CONV, F32, True),
    ("he_normal", stax.he_normal, jinit.he_normal, {}, CONV, F32, False),
    ("he_normal_batch_axis", stax.he_normal, jinit.he_normal, dict(batch_axis=0), CONV, F32,
     False),
    ("he_uniform", stax.he_uniform, jinit.he_uniform, {}, DENSE, F64, True),
    ("lecun_normal", stax.lecun_normal, jinit.lecun_normal, {}, DENSE, F32, False),
    ("lecun_uniform", stax.lecun_uniform, jinit.lecun_uniform, {}, DENSE, F32, True),
    ("normal", stax.normal, jinit.normal, dict(stddev=0.3), DENSE, F32, False),
    ("normal", stax.normal, jinit.normal, dict(stddev=0.3), DENSE, F64, False),
    ("uniform", stax.uniform, jinit.uniform, dict(scale=0.5), DENSE, F32, True),
]
SEED = 3


def test_initializers_match_jax():
    # One test and one jax.jit for every case: jax compiles each random program for a second
    # or more, which dominated this file's runtime when every case compiled its own.
    def all_cases(key):
        return [make(dtype=dtype, **kw)(key, shape)
                for _, _, make, kw, shape, dtype, _ in INIT_CASES]

    wants = jax.jit(all_cases)(jr.PRNGKey(SEED))
    for (name, fx_make, _, kwargs, shape, dtype, exact), want in zip(INIT_CASES, wants):
        what = f"{name} {shape} {np.dtype(dtype).name}"
        got, want = np.asarray(fx_make(dtype=dtype, **kwargs)(fr.key(SEED), shape)), \
            np.asarray(want)
        assert got.dtype == want.dtype == dtype, what
        if exact:
            np.testing.assert_array_equal(got, want, err_msg=what)
        else:
            np.testing.assert_allclose(got, want, rtol=64 * np.finfo(dtype).eps, atol=0,
                                       err_msg=what)


def test_initializer_defaults_and_call_time_dtype():
    key = fr.key(1)
    assert stax.glorot_normal()(key, (2, 3)).dtype == np.float32
    assert stax.normal()(key, (2,), np.float64).dtype == np.float64
    np.testing.assert_array_equal(np.asarray(stax.zeros(key, (2, 3))), np.zeros((2, 3), F32))
    np.testing.assert_array_equal(np.asarray(stax.ones(key, (4,), np.float64)), np.ones(4))
    for fx_init, jax_init in [(stax.zeros, jinit.zeros), (stax.ones, jinit.ones)]:
        np.testing.assert_array_equal(np.asarray(fx_init(key, (3,))),
                                      np.asarray(jax_init(jr.PRNGKey(1), (3,), jnp.float32)))


def test_initializer_errors():
    with pytest.raises(ValueError, match="1-d weight shape \\(4,\\) has no input"):
        stax.glorot_normal()(fr.key(0), (4,))
    with pytest.raises(ValueError, match="mode 'fan_max'"):
        stax.variance_scaling(1.0, "fan_max", "normal")
    with pytest.raises(ValueError, match="distribution 'cauchy'"):
        stax.variance_scaling(1.0, "fan_in", "cauchy")


# --- layers: same key, same parameters, same outputs ---------------------------------------------

J_GLOROT, J_NORMAL, J_CONV_B = (jinit.glorot_normal(dtype=jnp.float32),
                                jinit.normal(dtype=jnp.float32), jinit.normal(1e-6, jnp.float32))
J_ZEROS = lambda key, shape: jinit.zeros(key, shape, jnp.float32)
J_ONES = lambda key, shape: jinit.ones(key, shape, jnp.float32)


def jconv(dn, *args, **kw):
    rhs = dn[1]
    return jstax.GeneralConv(dn, *args, W_init=jinit.glorot_normal(
        rhs.index("I"), rhs.index("O"), dtype=jnp.float32), b_init=J_CONV_B, **kw)


def jconv_t(dn, *args, **kw):
    rhs = dn[1]
    return jstax.GeneralConvTranspose(dn, *args, W_init=jinit.glorot_normal(
        rhs.index("I"), rhs.index("O"), dtype=jnp.float32), b_init=J_CONV_B, **kw)


LENET = (stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.Relu,
                     stax.MaxPool((2, 2), (2, 2)), stax.Flatten, stax.Dense(3)),
         jstax.serial(jconv(("NHWC", "HWIO", "NHWC"), 4, (3, 3), padding="SAME"), jstax.Relu,
                      jstax.MaxPool((2, 2), (2, 2)), jstax.Flatten,
                      jstax.Dense(3, J_GLOROT, J_NORMAL)), (2, 6, 6, 1))

LAYERS = [  # (name, fx layer, jax layer, input shape)
    ("dense", stax.Dense(6), jstax.Dense(6, J_GLOROT, J_NORMAL), (4, 5)),
    ("dense_3d", stax.Dense(3), jstax.Dense(3, J_GLOROT, J_NORMAL), (2, 4, 5)),
    ("mlp", stax.serial(stax.Dense(8), stax.Relu, stax.Dense(8), stax.Gelu, stax.Dense(4),
                        stax.LogSoftmax),
     jstax.serial(jstax.Dense(8, J_GLOROT, J_NORMAL), jstax.Relu,
                  jstax.Dense(8, J_GLOROT, J_NORMAL), jstax.Gelu,
                  jstax.Dense(4, J_GLOROT, J_NORMAL), jstax.LogSoftmax), (6, 5)),
    ("activations", stax.serial(stax.Tanh, stax.Sigmoid, stax.Softplus, stax.Elu,
                                stax.LeakyRelu, stax.Exp, stax.Softmax, stax.Identity),
     jstax.serial(jstax.Tanh, jstax.Sigmoid, jstax.Softplus, jstax.Elu, jstax.LeakyRelu,
                  jstax.Exp, jstax.Softmax, jstax.Identity), (3, 4)),
    ("conv_nhwc_same", stax.Conv(3, (3, 3), padding="SAME"),
     jconv(("NHWC", "HWIO", "NHWC"), 3, (3, 3), padding="SAME"), (2, 6, 5, 2)),
    ("conv_nchw_strided", stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (3, 2), (2, 1)),
     jconv(("NCHW", "OIHW", "NCHW"), 4, (3, 2), (2, 1)), (2, 3, 7, 5)),
    ("conv_explicit_pad", stax.Conv(2, (2, 2), padding=[(1, 0), (0, 2)]),
     jconv(("NHWC", "HWIO", "NHWC"), 2, (2, 2), padding=[(1, 0), (0, 2)]), (1, 4, 4, 3)),
    ("maxpool", stax.MaxPool((2, 2), (2, 2)), jstax.MaxPool((2, 2), (2, 2)), (2, 5, 6, 3)),
    ("maxpool_same", stax.MaxPool((3, 3), (2, 2), "SAME"),
     jstax.MaxPool((3, 3), (2, 2), "SAME"), (2, 5, 6, 3)),
    ("avgpool_same", stax.AvgPool((3, 3), (1, 2), "SAME"),
     jstax.AvgPool((3, 3), (1, 2), "SAME"), (2, 5, 6, 3)),
    ("sumpool_nchw", stax.SumPool((2, 3), spec="NCHW"), jstax.SumPool((2, 3), spec="NCHW"),
     (2, 3, 5, 6)),
    ("avgpool_nchw", stax.AvgPool((2, 2), (2, 2), spec="NCHW"),
     jstax.AvgPool((2, 2), (2, 2), spec="NCHW"), (1, 2, 4, 4)),
    ("batchnorm", stax.BatchNorm(), jstax.BatchNorm(beta_init=jinit.zeros,
                                                     gamma_init=jinit.ones), (4, 3, 3, 2)),
    ("batchnorm_axis0_scale_only", stax.BatchNorm(0, center=False),
     jstax.BatchNorm(0, center=False), (6, 3)),
    ("flatten_dense", stax.serial(stax.Flatten, stax.Dense(3)),
     jstax.serial(jstax.Flatten, jstax.Dense(3, J_GLOROT, J_NORMAL)), (2, 3, 2, 2)),
    ("residual", stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(5), stax.Identity),
                             stax.FanInSum),
     jstax.serial(jstax.FanOut(2), jstax.parallel(jstax.Dense(5, J_GLOROT, J_NORMAL),
                                                  jstax.Identity), jstax.FanInSum), (3, 5)),
    ("concat", stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(2), stax.Tanh),
                           stax.FanInConcat()),
     jstax.serial(jstax.FanOut(2), jstax.parallel(jstax.Dense(2, J_GLOROT, J_NORMAL),
                                                  jstax.Tanh), jstax.FanInConcat()), (3, 4)),
    ("lenet", *LENET),
    ("selu", stax.Selu, jstax.Selu, (3, 4)),
    ("conv_transpose_same_s2", stax.ConvTranspose(3, (3, 3), (2, 2), "SAME"),
     jconv_t(("NHWC", "HWIO", "NHWC"), 3, (3, 3), (2, 2), "SAME"), (2, 4, 5, 2)),
    ("conv_transpose_valid", stax.ConvTranspose(2, (2, 3), (1, 2)),
     jconv_t(("NHWC", "HWIO", "NHWC"), 2, (2, 3), (1, 2)), (1, 3, 4, 3)),
    ("conv_transpose_pads_nchw",
     stax.GeneralConvTranspose(("NCHW", "OIHW", "NCHW"), 4, (3, 2), (2, 1), [(1, 2), (0, 1)]),
     jconv_t(("NCHW", "OIHW", "NCHW"), 4, (3, 2), (2, 1), [(1, 2), (0, 1)]), (2, 3, 4, 5)),
    ("conv1d_transpose", stax.Conv1DTranspose(3, (4,), (3,), "SAME"),
     jconv_t(("NHC", "HIO", "NHC"), 3, (4,), (3,), "SAME"), (2, 5, 2)),
]
LAYERS = [pytest.param(*c, id=c[0]) for c in LAYERS]


def jax_reference(jax_layer, shape, params, x):
    """jax's output shape and parameter shapes (traced, not compiled), and its outputs and
    gradients of sum(sin(outputs)) for the given (fx-initialised) params, from one jax.jit."""
    jax_init, jax_apply = jax_layer
    shapes = []

    def init_shapes(key):
        out_shape, p = jax_init(key, shape)
        shapes.append(out_shape)
        return p

    param_shapes = jax.eval_shape(init_shapes, jr.PRNGKey(0))

    def run(params, x):
        loss = lambda p, x: jnp.sum(jnp.sin(jax_apply(p, x)))
        return jax_apply(params, x), jax.grad(loss, argnums=(0, 1))(params, x)

    out, grads = jax.jit(run)(to_jax(params), jnp.asarray(x))
    return shapes[0], param_shapes, out, grads


@pytest.mark.parametrize("name,fx_layer,jax_layer,shape", LAYERS)
def test_layer_matches_jax(name, fx_layer, jax_layer, shape):
    fx_init, fx_apply = fx_layer
    x = np.random.default_rng(0).standard_normal(shape).astype(F32)
    out_shape, params = fx_init(fr.key(42), shape)
    j_out_shape, j_param_shapes, want, jg = jax_reference(jax_layer, shape, params, x)
    assert tuple(out_shape) == tuple(j_out_shape)
    p_leaves, p_def = jax.tree_util.tree_flatten(to_np(params))
    j_leaves, j_def = jax.tree_util.tree_flatten(j_param_shapes)
    assert p_def == j_def, f"parameter structure {p_def} != jax's {j_def}"
    assert [p.shape for p in p_leaves] == [j.shape for j in j_leaves]

    got = fx_apply(params, fnp.asarray(x))
    assert tuple(got.shape) == tuple(out_shape)
    assert_trees_close(got, want, what="outputs")

    def fx_loss(p, x):
        return fnp.sum(fnp.sin(fx_apply(p, x)))

    g = fx.grad(fx_loss, argnums=(0, 1))(params, fnp.asarray(x))
    assert_trees_close(g, jg, rtol=2e-4, atol=2e-5, what="gradients")


def test_network_init_matches_jax():
    # Every parameterised layer (with its default initializers) and combinator in two
    # networks, initialised from one key: the same keys must reach the same initializers.
    nets = [
        (stax.serial(stax.Conv(3, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2)),
                     stax.Flatten, stax.FanOut(2),
                     stax.parallel(stax.Dense(4), stax.serial(stax.Dense(4), stax.BatchNorm(0))),
                     stax.FanInSum),
         jstax.serial(jconv(("NHWC", "HWIO", "NHWC"), 3, (3, 3), padding="SAME"), jstax.Relu,
                      jstax.MaxPool((2, 2)), jstax.Flatten, jstax.FanOut(2),
                      jstax.parallel(jstax.Dense(4, J_GLOROT, J_NORMAL),
                                     jstax.serial(jstax.Dense(4, J_GLOROT, J_NORMAL),
                                                  jstax.BatchNorm(0, beta_init=J_ZEROS,
                                                                  gamma_init=J_ONES))),
                      jstax.FanInSum), (2, 5, 5, 2)),
        (stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (3, 2), (2, 1)),
         jconv(("NCHW", "OIHW", "NCHW"), 4, (3, 2), (2, 1)), (2, 3, 7, 5)),
    ]
    wants = jax.jit(lambda k: [net[1][0](k, net[2])[1] for net in nets])(jr.PRNGKey(7))
    for (layer, _, shape), want in zip(nets, wants):
        _, params = layer[0](fr.key(7), shape)
        assert_trees_close(params, want, rtol=64 * np.finfo(F32).eps, atol=0, what="params")


def test_jit_grad_of_networks_equals_eager():
    # The compiled path against the op-by-op one (checked against jax above) for a conv net
    # and a ReLU MLP.
    nets = [
        (stax.serial(stax.Conv(3, (3, 3), padding="SAME"), stax.Tanh,
                     stax.AvgPool((2, 2), (2, 2)), stax.MaxPool((2, 2), (1, 1)), stax.Flatten,
                     stax.Dense(8), stax.Gelu, stax.Dense(3), stax.LogSoftmax), (4, 6, 6, 2)),
        (stax.serial(stax.Dense(8), stax.Relu, stax.Dense(8), stax.Relu, stax.Dense(3)), (6, 5)),
    ]
    for (init, apply), shape in nets:
        x = fnp.asarray(np.random.default_rng(2).standard_normal(shape).astype(F32))
        _, params = init(fr.key(42), shape)
        loss = lambda p, x, apply=apply: fnp.sum(fnp.sin(apply(p, x)))
        assert_trees_close(fx.jit(fx.grad(loss, argnums=(0, 1)))(params, x),
                           fx.grad(loss, argnums=(0, 1))(params, x), what="jit gradients")


def test_unknown_batch_dimension_in_shapes():
    init, _ = stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.MaxPool((2, 2), (2, 2)),
                          stax.Flatten, stax.Dense(10))
    shape, _ = init(fr.key(0), (-1, 8, 8, 1))
    assert shape == (-1, 10)


def test_relu_derivative_at_zero_is_zero_like_jax():
    _, relu = stax.Relu
    g = fx.grad(lambda x: fnp.sum(relu((), x)))(fnp.asarray([-1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0, 1.0])


def test_dropout_mask_matches_jax_and_rate_is_keep_probability():
    x = np.ones((1000,), F32)
    _, apply = stax.Dropout(0.75)
    _, japply = jstax.Dropout(np.float32(0.75))  # float32 draws, as fx (jax runs in x64 here)
    got = np.asarray(apply((), fnp.asarray(x), rng=fr.key(5)))
    want = np.asarray(jax.jit(japply)((), jnp.asarray(x), rng=jr.PRNGKey(5)))
    np.testing.assert_array_equal(got, want)
    assert 0.7 < np.mean(got > 0) < 0.8 and set(np.unique(got)) == {0.0, np.float32(1 / 0.75)}
    _, test_apply = stax.Dropout(0.5, mode="test")
    np.testing.assert_array_equal(np.asarray(test_apply((), fnp.asarray(x))), x)


def test_serial_splits_rng_per_layer_like_jax():
    layer = stax.serial(stax.Dropout(0.5), stax.Dense(4), stax.Dropout(0.5))
    jlayer = jstax.serial(jstax.Dropout(np.float32(0.5)), jstax.Dense(4, J_GLOROT, J_NORMAL),
                          jstax.Dropout(np.float32(0.5)))
    _, params = layer[0](fr.key(0), (3, 6))
    x = np.random.default_rng(1).standard_normal((3, 6)).astype(F32)
    got = layer[1](params, fnp.asarray(x), rng=fr.key(9))
    want = jax.jit(jlayer[1])(to_jax(params), jnp.asarray(x), rng=jr.PRNGKey(9))
    assert_trees_close(got, want)
    # Dropout under jit and vmap, keys as arguments.
    per_key = fx.jit(fx.vmap(lambda k: layer[1](params, fnp.asarray(x), rng=k)))(
        fr.split(fr.key(9), 3))
    assert_trees_close(per_key[0], layer[1](params, fnp.asarray(x), rng=fr.split(fr.key(9), 3)[0]))


def test_jit_grad_through_two_dropout_layers():
    init, apply = stax.serial(stax.Dense(8), stax.Dropout(0.8), stax.Dense(8), stax.Dropout(0.8),
                              stax.Dense(3))
    _, params = init(fr.key(0), (-1, 5))
    x = fnp.asarray(np.random.default_rng(0).standard_normal((4, 5)).astype(F32))
    loss = lambda p, x, k: fnp.sum(apply(p, x, rng=k))
    assert_trees_close(fx.jit(fx.grad(loss))(params, x, fr.key(1)),
                       fx.grad(loss)(params, x, fr.key(1)))


def test_layer_errors():
    _, apply = stax.Dropout(0.5)
    with pytest.raises(ValueError, match="Dropout: apply_fun needs a key"):
        apply((), fnp.ones(3))
    with pytest.raises(ValueError, match="keep probability\\) must be in \\(0, 1\\], got 0"):
        stax.Dropout(0.0)
    with pytest.raises(ValueError, match="GeneralConv: filter_shape \\(3,\\) needs one size"):
        stax.Conv(2, (3,))
    with pytest.raises(ValueError, match="MaxPool: a 2-d window needs inputs of rank 4"):
        stax.MaxPool((2, 2))[0](fr.key(0), (3, 4))
    with pytest.raises(ValueError, match="padding 'FULL'"):
        stax.Conv(2, (3, 3), padding="FULL")[0](fr.key(0), (1, 4, 4, 1))


def test_batchnorm_negative_axes():
    init, apply = stax.BatchNorm(axis=(-4, -3, -2))
    shape, (beta, gamma) = init(fr.key(0), (4, 3, 3, 2))
    assert shape == (4, 3, 3, 2) and beta.shape == gamma.shape == (2,)
    x = np.random.default_rng(3).standard_normal((4, 3, 3, 2)).astype(F32)
    z = np.asarray(apply((beta, gamma), fnp.asarray(x)))
    np.testing.assert_allclose(z.mean(axis=(0, 1, 2)), 0, atol=1e-5)
    np.testing.assert_allclose(z.std(axis=(0, 1, 2)), 1, rtol=1e-3)


def test_shape_dependent():
    layer = stax.shape_dependent(lambda s: stax.Dense(s[-1] * 2))
    shape, params = layer[0](fr.key(0), (2, 3))
    assert shape == (2, 6)
    assert layer[1](params, fnp.ones((2, 3))).shape == (2, 6)


def test_docstring_examples():
    result = doctest.testmod(stax, extraglobs={"fx": fx}, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 4


# Names jax's stax module holds only because it imported them.
JAX_STAX_IMPORTS = {"functools", "lax", "math", "random"}


def test_every_name_jax_stax_exports_is_in_fx():
    public = {n for n in dir(jstax) if not n.startswith("_")} - JAX_STAX_IMPORTS
    assert not sorted(public - set(dir(stax)))
    assert not sorted(public - set(stax.__all__) - {"jnp"})


@pytest.mark.parametrize("name", ["elu", "gelu", "leaky_relu", "log_softmax", "logsoftmax",
                                  "relu", "selu", "sigmoid", "softmax", "softplus",
                                  "standardize"])
def test_lowercase_activations_match_jax(name):
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(F32)
    want = getattr(jstax, name)(jnp.asarray(x))
    got = getattr(stax, name)(fnp.asarray(x))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=1e-6)
    g = fx.grad(lambda v: fnp.sum(fnp.sin(getattr(stax, name)(v))))(fnp.asarray(x))
    jg = jax.grad(lambda v: jnp.sum(jnp.sin(getattr(jstax, name)(v))))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=2e-5, atol=2e-6)


def test_lowercase_initializers_match_jax():
    # glorot and randn are jax's glorot_normal and normal under their old names.
    for fx_init, jax_init in ((stax.glorot(), jstax.glorot(dtype=jnp.float32)),
                              (stax.randn(0.5), jstax.randn(0.5, jnp.float32))):
        got = fx_init(fr.key(3), (4, 6))
        want = jax_init(jr.PRNGKey(3), (4, 6))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-7)
    assert stax.jnp is fnp
