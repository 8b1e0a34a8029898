"""Tests of ``conv_general_dilated`` and its wrappers against jax.lax: every layout pairing,
padding mode, strides, both dilations, feature and batch groups; eval, jvp, vjp, second-order
gradients, vmap over either or both operands, dtypes and error messages."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    check_eval,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    to_fx,
)
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.lax as lax


def _shape(spec: str, sizes: dict) -> tuple[int, ...]:
    return tuple(sizes[c] for c in spec)


def _row(name, dn, lhs_sizes, rhs_sizes, **kw):
    """A case named by its layout strings: sizes are given per dimension letter."""
    lhs_spec, rhs_spec, _ = dn
    return (name, _shape(lhs_spec, lhs_sizes), _shape(rhs_spec, rhs_sizes),
            dict(dimension_numbers=dn, **kw))


NCHW = ("NCHW", "OIHW", "NCHW")
NHWC = ("NHWC", "HWIO", "NHWC")
L2 = dict(N=2, C=3, H=5, W=4)
K2 = dict(O=2, I=3, H=3, W=2)

CASES = [
    _row("1d_nch_valid", ("NCH", "OIH", "NCH"), dict(N=2, C=3, H=7), dict(O=4, I=3, H=3),
         window_strides=(1,), padding="VALID"),
    _row("1d_nhc_same_stride2", ("NHC", "HIO", "NHC"), dict(N=1, C=2, H=7),
         dict(O=3, I=2, H=3), window_strides=(2,), padding="SAME"),
    _row("1d_cross_layouts", ("HNC", "IHO", "CHN"), dict(N=2, C=2, H=6), dict(O=3, I=2, H=2),
         window_strides=(1,), padding=[(1, 2)]),
    _row("nchw_oihw_same", NCHW, L2, K2, window_strides=(1, 1), padding="SAME"),
    _row("nhwc_hwio_valid_strided", NHWC, L2, K2, window_strides=(2, 1), padding="VALID"),
    _row("nhwc_oihw_nchw", ("NHWC", "OIHW", "NCHW"), L2, K2, window_strides=(1, 2),
         padding="SAME"),
    _row("nchw_hwio_nhwc", ("NCHW", "HWIO", "NHWC"), L2, K2, window_strides=(1, 1),
         padding="VALID"),
    _row("permuted_spatial", ("NWHC", "HWIO", "NCWH"), L2, K2, window_strides=(2, 1),
         padding="SAME"),
    _row("same_lower", NCHW, L2, dict(O=2, I=3, H=2, W=2), window_strides=(2, 2),
         padding="SAME_LOWER"),
    _row("explicit_negative_padding", NCHW, L2, K2, window_strides=(1, 1),
         padding=[(2, -1), (-1, 1)]),
    _row("lhs_dilation", NHWC, L2, K2, window_strides=(1, 1), padding=[(1, 1), (0, 2)],
         lhs_dilation=(2, 3)),
    _row("rhs_dilation", NCHW, dict(N=1, C=3, H=7, W=6), K2, window_strides=(1, 1),
         padding="SAME", rhs_dilation=(2, 2)),
    _row("all_dilations_strides", NHWC, L2, K2, window_strides=(2, 3),
         padding=[(1, 0), (2, 1)], lhs_dilation=(2, 1), rhs_dilation=(1, 2)),
    _row("feature_groups", NCHW, dict(N=2, C=4, H=5, W=5), dict(O=6, I=2, H=3, W=3),
         window_strides=(1, 1), padding="SAME", feature_group_count=2),
    _row("depthwise_nhwc", NHWC, dict(N=1, C=3, H=5, W=5), dict(O=6, I=1, H=3, W=3),
         window_strides=(2, 2), padding="SAME", feature_group_count=3),
    _row("groups_dilated", NHWC, dict(N=1, C=4, H=6, W=5), dict(O=4, I=2, H=2, W=2),
         window_strides=(1, 2), padding=[(1, 1), (0, 1)], lhs_dilation=(2, 1),
         rhs_dilation=(2, 1), feature_group_count=2),
    _row("batch_groups", NCHW, dict(N=4, C=2, H=5, W=4), dict(O=4, I=2, H=2, W=2),
         window_strides=(1, 1), padding="VALID", batch_group_count=2),
    _row("batch_groups_strided_nhwc", NHWC, dict(N=6, C=2, H=6, W=5),
         dict(O=3, I=2, H=3, W=2), window_strides=(2, 1), padding=[(1, 0), (1, 1)],
         rhs_dilation=(1, 2), batch_group_count=3),
    _row("3d_ncdhw", ("NCDHW", "OIDHW", "NCDHW"), dict(N=1, C=2, D=4, H=3, W=4),
         dict(O=2, I=2, D=2, H=2, W=3), window_strides=(1, 2, 1), padding="SAME"),
    _row("kernel_larger_than_input", NCHW, dict(N=1, C=1, H=2, W=2), dict(O=1, I=1, H=3, W=3),
         window_strides=(1, 1), padding="VALID"),
    _row("no_spatial_dims", ("NC", "OI", "NC"), dict(N=3, C=4), dict(O=2, I=4),
         window_strides=(), padding="VALID"),
    _row("empty_batch", NCHW, dict(N=0, C=2, H=4, W=4), dict(O=3, I=2, H=2, W=2),
         window_strides=(1, 1), padding="SAME"),
    _row("empty_spatial", NHWC, dict(N=2, C=2, H=0, W=4), dict(O=3, I=2, H=2, W=2),
         window_strides=(1, 1), padding=[(0, 0), (0, 0)]),
]
IDS = [c[0] for c in CASES]
JVP_VS_JAX = {"1d_cross_layouts", "all_dilations_strides", "batch_groups", "empty_batch"}
SMALL = {"1d_nch_valid", "1d_cross_layouts", "permuted_spatial", "explicit_negative_padding",
         "lhs_dilation", "all_dilations_strides", "feature_groups", "depthwise_nhwc",
         "batch_groups", "batch_groups_strided_nhwc"}


def _case(name, ls, rs, kw, dtype=np.float64) -> OpCase:
    return OpCase(
        name=f"{name}:{np.dtype(dtype).name}",
        fx_fn=lambda a, b: lax.conv_general_dilated(a, b, **kw),
        jax_fn=lambda a, b: jax.lax.conv_general_dilated(a, b, **kw),
        args=lambda rng: [rng.uniform(-2, 2, ls).astype(dtype),
                          rng.uniform(-2, 2, rs).astype(dtype)],
        diff_argnums=(0, 1), rtol=1e-4 if dtype == np.float32 else None,
        atol=1e-4 if dtype == np.float32 else None,
    )


@pytest.mark.parametrize("name,ls,rs,kw", CASES, ids=IDS)
def test_eval_jvp_vjp(name, ls, rs, kw):
    rng = np.random.default_rng(0)
    case32 = _case(name, ls, rs, kw, np.float32)
    check_eval(case32, case32.args(rng))
    case = _case(name, ls, rs, kw)
    args = case.args(rng)
    check_eval(case, args)
    check_vjp(case, args, rng)  # both transpose rules, against jax
    if name in JVP_VS_JAX:  # the jvp is checked numerically for the SMALL cases too
        check_jvp(case, args, rng)


@pytest.mark.parametrize("name,ls,rs,kw", [c for c in CASES if c[0] in SMALL],
                         ids=sorted(SMALL, key=IDS.index))
def test_check_grads_order2(name, ls, rs, kw):
    # Second order runs the transposes' own transposes: feature groups become batch groups
    # and back, dilations and strides swap roles.
    case = _case(name, ls, rs, kw)
    check_grads_f64(case, case.args(np.random.default_rng(1)))


VMAP_ROWS = [c for c in CASES if c[0] in (
    "1d_cross_layouts", "permuted_spatial", "lhs_dilation", "feature_groups", "depthwise_nhwc",
    "batch_groups", "batch_groups_strided_nhwc", "empty_batch")]


@pytest.mark.parametrize("name,ls,rs,kw", VMAP_ROWS, ids=[c[0] for c in VMAP_ROWS])
def test_vmap(name, ls, rs, kw):
    # A batched lhs folds into the batch, a batched kernel into the output features (inside
    # each group), both into the groups: all against jax.vmap and a loop.
    rng = np.random.default_rng(2)
    case = _case(name, ls, rs, kw)
    for in_axes in [(0, None), (None, 0), (0, 0), (len(ls), 1), (None, len(rs))]:
        args = []
        for shape, ax in zip((ls, rs), in_axes):
            if ax is None:
                args.append(rng.uniform(-2, 2, shape))
            else:
                s = list(shape)
                s.insert(ax, 3)
                args.append(rng.uniform(-2, 2, s))
        if in_axes in [(0, 0), (None, len(rs))]:
            check_vmap(case, args, in_axes)  # against jax.vmap and a loop
        else:
            _vmap_vs_loop(case.fx_fn, args, in_axes)


def _vmap_vs_loop(fn, args, in_axes):
    got = fx.vmap(fn, in_axes=in_axes)(*to_fx(args))
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    rows = [fn(*to_fx([a if ax is None else np.take(a, i, ax) for a, ax in zip(args, in_axes)]))
            for i in range(size)]
    assert_allclose(got, np.stack([np.asarray(r) for r in rows]), what=f"vmap {in_axes}")


def test_vmap_of_grad_and_jit():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 2, 4, 5, 2))  # a batch of NHWC inputs
    w = rng.standard_normal((3, 3, 2, 4))

    def loss(m, x, w):
        y = m.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NHWC,
                                       feature_group_count=1)
        return (y * y).sum()

    got = fx.vmap(fx.grad(lambda x, w: loss(fx, x, w), argnums=(0, 1)), in_axes=(0, None))(
        *to_fx([x, w]))
    want = jax.vmap(jax.grad(lambda x, w: loss(jax, x, w), argnums=(0, 1)), in_axes=(0, None))(
        x, w)
    assert_allclose(got, want, what="vmap(grad(conv))")
    jitted = fx.jit(fx.grad(lambda x, w: loss(fx, x, w), argnums=1))(*to_fx([x[0], w]))
    assert_allclose(jitted, jax.grad(lambda x, w: loss(jax, x, w), argnums=1)(x[0], w),
                    what="jit(grad(conv))")


@st.composite
def _geometry(draw):
    nsp = draw(st.integers(1, 2))
    groups = draw(st.sampled_from([1, 1, 2]))
    batch_groups = 1 if groups > 1 else draw(st.sampled_from([1, 2]))
    sizes = st.integers(1, 5)
    lhs = (batch_groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2)))
    lhs += tuple(draw(sizes) for _ in range(nsp))
    rhs = (groups * batch_groups * draw(st.integers(1, 2)), lhs[1] // groups)
    rhs += tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    ints = st.lists(st.integers(1, 2), min_size=nsp, max_size=nsp).map(tuple)
    pads = st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 2)), min_size=nsp,
                    max_size=nsp).map(tuple)
    kw = dict(window_strides=draw(ints), padding=draw(pads), lhs_dilation=draw(ints),
              rhs_dilation=draw(ints), feature_group_count=groups,
              batch_group_count=batch_groups)
    return lhs, rhs, kw


@given(_geometry(), st.integers(0, 2**32 - 1))
def test_random_geometry(geometry, seed):
    lhs, rhs, kw = geometry
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(lhs), rng.standard_normal(rhs)]
    try:
        want = jax.lax.conv_general_dilated(*args, **kw)
    except (ValueError, TypeError):  # e.g. cropping more than the input holds
        with pytest.raises((ValueError, TypeError)):
            lax.conv_general_dilated(*to_fx(args), **kw)
        return
    case = _case("random", lhs, rhs, kw)
    assert_allclose(case.fx_fn(*to_fx(args)), want, what=f"eval {kw}")
    check_vjp(case, args, rng)


@pytest.mark.parametrize("in_dtype,pet", [
    (np.float32, None), (np.float32, np.float64), (np.float16, np.float32),
    (np.int32, None), (np.int32, np.int64), (np.int32, np.float32), (np.float16, None),
])
def test_dtypes(in_dtype, pet):
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (2, 3, 5, 4)).astype(in_dtype)
    b = rng.integers(-3, 4, (2, 3, 3, 2)).astype(in_dtype)
    kw = dict(window_strides=(1, 1), padding="SAME", preferred_element_type=pet)
    got = lax.conv_general_dilated(*to_fx([a, b]), **kw)
    assert_allclose(got, jax.lax.conv_general_dilated(a, b, **kw), what=f"{in_dtype}->{pet}")


def test_bool_convolution_is_or_of_ands():
    rng = np.random.default_rng(5)
    a, b = rng.random((1, 2, 5)) < 0.3, rng.random((2, 2, 2)) < 0.5
    got = lax.conv_general_dilated(*to_fx([a, b]), (1,), "VALID")
    assert_allclose(got, jax.lax.conv_general_dilated(a, b, (1,), "VALID"), what="bool")


def test_preferred_element_type_gradient_keeps_operand_dtype():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    b = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)

    def loss(m, a, b):
        y = m.lax.conv_general_dilated(a, b, (1, 1), "SAME", preferred_element_type=np.float64)
        return (y * y).sum()

    got = fx.grad(lambda a, b: loss(fx, a, b), argnums=(0, 1))(*to_fx([a, b]))
    want = jax.grad(lambda a, b: loss(jax, a, b), argnums=(0, 1))(a, b)
    assert_allclose(got, want, rtol=1e-5, atol=1e-5, what="grad with preferred_element_type")


def test_unbatched_kernel_stays_unbatched():
    f = fx.vmap(lambda x, w: lax.conv(x, w, (1,), "VALID"), in_axes=(0, None))
    jaxpr = fx.make_jaxpr(f)(np.ones((5, 2, 3, 6), np.float32), np.ones((4, 3, 2), np.float32))
    names = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert names.count("conv_general_dilated") == 1 and "broadcast_in_dim" not in names


# --- wrappers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("specs", [None, ("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"),
                                   ("NWHC", "HWIO", "NCWH"), ("CHWN", "OHWI", "HNWC"),
                                   jax.lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1),
                                                                (0, 3, 1, 2))])
def test_conv_dimension_numbers(specs):
    got = lax.conv_dimension_numbers((1, 2, 3, 4), (5, 6, 7, 8), specs)
    want = jax.lax.conv_dimension_numbers((1, 2, 3, 4), (5, 6, 7, 8), specs)
    assert tuple(got) == tuple(want)
    assert isinstance(got, lax.ConvDimensionNumbers)


def test_conv_and_conv_with_general_padding():
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 3, 2))
    for padding in ("SAME", "VALID"):
        assert_allclose(lax.conv(*to_fx([x, w]), (2, 1), padding),
                        jax.lax.conv(x, w, (2, 1), padding), what=f"conv {padding}")
    args = ((1, 2), [(1, 0), (2, -1)], (2, 1), (1, 2))
    assert_allclose(lax.conv_with_general_padding(*to_fx([x, w]), *args),
                    jax.lax.conv_with_general_padding(x, w, *args),
                    what="conv_with_general_padding")


@pytest.mark.parametrize("kw", [
    dict(strides=(2, 2), padding="SAME"),
    dict(strides=(2, 1), padding="VALID"),
    dict(strides=(3, 2), padding="SAME", rhs_dilation=(1, 2)),
    dict(strides=(2, 2), padding=[(1, 2), (0, 1)]),
    dict(strides=(2, 2), padding=[(1, 1), (0, 1)], use_consistent_padding=True),
    dict(strides=(2, 1), padding="SAME", transpose_kernel=True),
    dict(strides=(1, 2), padding="VALID", dimension_numbers=NCHW),
])
def test_conv_transpose(kw):
    rng = np.random.default_rng(8)
    nchw = kw.get("dimension_numbers") == NCHW
    x = rng.standard_normal((2, 3, 4, 5) if nchw else (2, 4, 5, 3))
    w = rng.standard_normal((3, 3, 3, 2) if not kw.get("transpose_kernel") else (3, 2, 2, 3))
    if nchw:
        w = rng.standard_normal((2, 3, 3, 2))
    case = OpCase("conv_transpose", lambda a, b: lax.conv_transpose(a, b, **kw),
                  lambda a, b: jax.lax.conv_transpose(a, b, **kw), lambda r: [x, w],
                  diff_argnums=(0, 1))
    check_eval(case, [x, w])
    check_vjp(case, [x, w], rng)


def test_docstring_examples():
    import doctest

    import fx.lax.convolution as module

    result = doctest.testmod(module, extraglobs={"fx": fx},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 4 and result.failed == 0


# --- errors ---------------------------------------------------------------------------------------


def _ones(*shape, dtype=np.float32):
    return fx.numpy.ones(shape, dtype)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: lax.conv(_ones(1, 2, 5), _ones(3, 2, 2, dtype=np.float64), (1,), "VALID"),
     TypeError, r"conv_general_dilated: operands must have the same dtype.*f32\[1,2,5\], "
                r"f64\[3,2,2\]"),
    (lambda: lax.conv(_ones(1, 2, 5), _ones(3, 3, 2), (1,), "VALID"),
     TypeError, r"feature_group_count=1, the lhs features \(2\) must be 1 x the kernel's "
                r"input features \(3\)"),
    (lambda: lax.conv_general_dilated(_ones(1, 4, 5), _ones(3, 2, 2), (1,), "VALID",
                                      feature_group_count=2),
     TypeError, r"kernel's output features \(3\) a multiple of 2"),
    (lambda: lax.conv_general_dilated(_ones(3, 2, 5), _ones(4, 2, 2), (1,), "VALID",
                                      batch_group_count=2),
     TypeError, r"batch_group_count=2, the lhs batch \(3\)"),
    (lambda: lax.conv_general_dilated(_ones(2, 4, 5), _ones(4, 2, 2), (1,), "VALID",
                                      feature_group_count=2, batch_group_count=2),
     TypeError, r"at most one of them above 1"),
    (lambda: lax.conv(_ones(1, 2, 5), _ones(3, 2), (1,), "VALID"),
     TypeError, r"lhs and rhs must have the same rank"),
    (lambda: lax.conv(_ones(1, 2, 5), _ones(3, 2, 0), (1,), "VALID"),
     TypeError, r"kernel spatial dimensions \(0,\) must be positive"),
    (lambda: lax.conv(_ones(1, 2, 5), _ones(3, 2, 2), (1, 1), "VALID"),
     ValueError, r"window_strides \(1, 1\) needs one entry per spatial dimension \(1\)"),
    (lambda: lax.conv(_ones(1, 2, 5), _ones(3, 2, 2), (0,), "VALID"),
     TypeError, r"window_strides \(0,\) must be positive"),
    (lambda: lax.conv(_ones(1, 2, 5), _ones(3, 2, 2), (1,), "FULL"),
     ValueError, r"padding must be 'VALID', 'SAME', 'SAME_LOWER'"),
    (lambda: lax.conv_general_dilated(_ones(1, 2, 5), _ones(3, 2, 2), (1,), "SAME",
                                      lhs_dilation=(2,)),
     ValueError, r"string padding is not supported with lhs_dilation"),
    (lambda: lax.conv_general_dilated(_ones(1, 2, 5), _ones(3, 2, 2), (1,), [(1,)]),
     ValueError, r"padding must be a string or a sequence of \(low, high\) pairs"),
    (lambda: lax.conv_general_dilated(_ones(1, 5, 2), _ones(2, 3, 2), (1,), "VALID",
                                      dimension_numbers=("NWC", "WIO", "NXC")),
     ValueError, r"out spec 'NXC' must have the kernel's spatial dimensions 'W'"),
    (lambda: lax.conv_general_dilated(_ones(1, 5, 2), _ones(2, 3, 2), (1,), "VALID",
                                      dimension_numbers=("NWW", "WIO", "NWC")),
     ValueError, r"lhs spec 'NWW' must name each of the 3 dimensions once"),
    (lambda: lax.conv_general_dilated(_ones(1, 5, 2), _ones(2, 3, 2), (1,), "VALID",
                                      dimension_numbers=((0, 1, 1), (0, 1, 2), (0, 1, 2))),
     TypeError, r"must each be a permutation of range\(3\)"),
    (lambda: lax.conv(_ones(1, 2, 5), _ones(3, 2, 2), (1,), "VALID",
                      preferred_element_type=np.int32),
     TypeError, r"preferred_element_type int32 is not floating point"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
