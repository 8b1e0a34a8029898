"""Convolutions in the compiler: the three CPU implementations (im2col, direct, Winograd)
against jax, their library steps on every layout and dtype, epilogue fusion, and operator
selection (Winograd for eligible 3x3 stride-1 convolutions) as shown by ``as_text()``."""

from __future__ import annotations

import types

import jax
import numpy as np
import pytest
from harness import assert_allclose, to_fx

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.lowering.fusion.groups import GroupKind
from fx.lowering.fusion.partition import fuse
from fx.lowering.kernels.cpu import conv as lconv
from fx.lowering.select import cost
from fx.lowering.select.op_impl import registry
from fx.lowering.select.op_info import Choice

IMPLS = {i.name: i for i in registry if i.name.startswith("cpu.conv_")}


def _canonical(rng, n, c, o, i, spatial, kernel):
    return rng.standard_normal((n, c) + spatial), rng.standard_normal((o, i) + kernel)


# (name, lhs (N, C, *S), rhs (O, I, *K), strides, padding, lhs dil, rhs dil, groups, batch groups)
GENERAL = [
    ("1d", (2, 3, 9), (4, 3, 3), (2,), ((1, 2),), (1,), (1,), 1, 1),
    ("2d_same", (2, 3, 6, 5), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1), 1, 1),
    ("2d_dilated", (1, 2, 7, 6), (3, 2, 2, 3), (2, 1), ((0, 1), (2, -1)), (2, 1), (1, 2), 1, 1),
    ("2d_groups", (2, 4, 5, 5), (6, 2, 3, 2), (1, 2), ((1, 1), (0, 0)), (1, 1), (1, 1), 2, 1),
    ("2d_batch_groups", (4, 2, 5, 4), (6, 2, 2, 2), (1, 1), ((0, 0), (1, 0)), (1, 1), (2, 1), 1,
     2),
    ("3d", (1, 2, 4, 3, 5), (2, 2, 2, 2, 3), (1, 1, 2), ((0, 0), (1, 0), (1, 1)), (1, 1, 1),
     (1, 1, 1), 1, 1),
    ("empty_output", (1, 2, 2, 2), (1, 2, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, 1),
]


def _jax_reference(x, w, strides, padding, ldil, rdil, groups, batch_groups):
    return jax.lax.conv_general_dilated(x, w, strides, padding, ldil, rdil,
                                        feature_group_count=groups,
                                        batch_group_count=batch_groups)


@pytest.mark.parametrize("kernel", [lax.convolution.conv_im2col, lconv.conv_direct],
                         ids=["im2col", "direct"])
@pytest.mark.parametrize("row", GENERAL, ids=[r[0] for r in GENERAL])
def test_general_kernels_match_jax(kernel, row):
    _, ls, rs, *geometry = row
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(ls), rng.standard_normal(rs)
    assert_allclose(kernel(x, w, *geometry), _jax_reference(x, w, *geometry), what=row[0])


@pytest.mark.parametrize("ls,rs,padding,groups", [
    ((2, 3, 6, 6), (4, 3, 3, 3), ((1, 1), (1, 1)), 1),  # even output: whole tiles
    ((1, 2, 7, 4), (3, 2, 3, 3), ((0, 0), (0, 0)), 1),  # odd output rows: a partial tile
    ((1, 4, 5, 6), (4, 2, 3, 3), ((2, -1), (0, 1)), 2),  # feature groups, cropping pads
    ((1, 3, 3, 3), (6, 1, 3, 3), ((1, 1), (1, 1)), 3),  # depthwise, one tile
    ((1, 1, 2, 5), (1, 1, 3, 3), ((0, 0), (0, 0)), 1),  # no output rows
])
def test_winograd_matches_jax(ls, rs, padding, groups):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(ls), rng.standard_normal(rs)
    want = _jax_reference(x, w, (1, 1), padding, (1, 1), (1, 1), groups, 1)
    assert_allclose(lconv.conv_winograd(x, w, padding, groups), want, rtol=1e-10, atol=1e-10,
                    what="winograd f64")
    got32 = lconv.conv_winograd(x.astype(np.float32), w.astype(np.float32), padding, groups)
    assert got32.dtype == np.float32
    assert_allclose(got32, np.asarray(want, np.float32), rtol=1e-4, atol=1e-4,
                    what="winograd f32")


# --- library steps: layouts and dtypes through each impl -----------------------------------------

LAYOUT_CASES = [
    ("nhwc_same", (2, 6, 5, 3), (3, 3, 3, 4), np.float32, None,
     dict(window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ("mixed_layouts", (2, 3, 6, 5), (3, 3, 3, 4), np.float64, None,
     dict(window_strides=(1, 1), padding=[(1, 0), (2, 1)],
          dimension_numbers=("NCHW", "HWIO", "NHWC"))),
    ("depthwise_f16", (1, 6, 6, 4), (3, 3, 1, 8), np.float16, None,
     dict(window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
          feature_group_count=4)),
    ("f32_to_f64", (1, 2, 5, 5), (3, 2, 3, 3), np.float32, np.float64,
     dict(window_strides=(1, 1), padding="VALID")),
    ("int32_strided", (2, 2, 7, 6), (3, 2, 3, 2), np.int32, None,
     dict(window_strides=(2, 1), padding="SAME")),
    ("batch_groups", (4, 2, 5, 4), (4, 2, 2, 2), np.float64, None,
     dict(window_strides=(1, 1), padding="VALID", batch_group_count=2)),
]


def _conv_group(ls, rs, dtype, kw):
    closed = fx.make_jaxpr(lambda x, w: lax.conv_general_dilated(x, w, **kw))(
        np.zeros(ls, dtype), np.zeros(rs, dtype))
    (group,) = fuse(closed.jaxpr)
    return group


@pytest.mark.parametrize("impl", sorted(IMPLS))
@pytest.mark.parametrize("name,ls,rs,dtype,pet,kw", LAYOUT_CASES,
                         ids=[c[0] for c in LAYOUT_CASES])
def test_library_steps_match_jax(impl, name, ls, rs, dtype, pet, kw):
    kw = dict(kw, preferred_element_type=pet)
    group = _conv_group(ls, rs, dtype, kw)
    impl = IMPLS[impl]
    out_dtype = group.eqns[0].outvars[0].aval.dtype
    if not impl.applies(group) or not impl.supports(out_dtype):
        assert impl.name == "cpu.conv_winograd"
        assert name in ("int32_strided", "batch_groups")
        return
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 4, ls).astype(dtype)
    w = rng.integers(-3, 4, rs).astype(dtype)
    eqn = group.eqns[0]
    out = np.full(eqn.outvars[0].aval.shape, np.nan if out_dtype.kind == "f" else -1, out_dtype)
    widened = impl.widen.get(out_dtype)
    step = types.SimpleNamespace(group=group, choice=Choice(impl, "test", widened))
    impl.library(step)({eqn.invars[0]: x, eqn.invars[1]: w, eqn.outvars[0]: out})
    want = jax.lax.conv_general_dilated(x, w, **kw)
    tol = 1e-2 if dtype == np.float16 else 1e-5 if out_dtype == np.float32 else None
    assert_allclose(out, want, rtol=tol, atol=tol, what=f"{impl.name} {name}")


# --- fusion, selection, jit ----------------------------------------------------------------------


def _conv_bias_relu(x, w, b):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return fnp.maximum(y + b, 0.0)


def test_bias_and_activation_fuse_into_the_conv_group():
    args = [np.zeros((2, 6, 6, 8), np.float32), np.zeros((3, 3, 8, 8), np.float32),
            np.zeros(8, np.float32)]
    groups = fuse(fx.make_jaxpr(_conv_bias_relu)(*args).jaxpr)
    assert [g.kind for g in groups] == [GroupKind.GEMM]
    names = [e.primitive.name for e in groups[0].eqns]
    assert names[0] == "conv_general_dilated" and "add" in names and "max" in names


@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_reshape_and_transpose_prologues_are_views_of_the_operands(impl):
    # A transposed input (and a kernel reshaped from flat weights) fuse in front of the
    # convolution; every implementation reads them through the prologue.
    def f(x, w_flat):
        w = lax.reshape(w_flat, (6, 3, 3, 3))
        return lax.conv(lax.transpose(x, (0, 3, 1, 2)), w, (1, 1), "SAME") * 2.0

    rng = np.random.default_rng(5)
    x, w_flat = rng.standard_normal((2, 7, 6, 3)), rng.standard_normal(162)
    jaxpr = fx.make_jaxpr(f)(x, w_flat).jaxpr
    (group,) = fuse(jaxpr)
    assert sorted(e.primitive.name for e in group.prologue) == ["reshape", "transpose"]
    anchor = group.anchor
    out = np.empty(anchor.outvars[0].aval.shape)
    step = types.SimpleNamespace(group=group, choice=Choice(IMPLS[impl], "test", None))
    IMPLS[impl].library(step)({jaxpr.invars[0]: x, jaxpr.invars[1]: w_flat,
                               anchor.outvars[0]: out})
    want = jax.lax.conv(x.transpose(0, 3, 1, 2), w_flat.reshape(6, 3, 3, 3), (1, 1), "SAME")
    assert_allclose(out, want, what=impl)
    assert_allclose(fx.jit(f)(x, w_flat), 2 * want, what="jit")


def _costs(ls, rs, **kw):
    group = _conv_group(ls, rs, np.float32, kw)
    return {name: impl.cost(group) for name, impl in IMPLS.items() if impl.applies(group)}


@pytest.mark.parametrize("ls,rs,kw,best", [
    ((2, 32, 32, 32), (32, 32, 3, 3), dict(window_strides=(1, 1), padding="SAME"),
     "cpu.conv_winograd"),
    ((2, 64, 16, 16), (64, 32, 3, 3), dict(window_strides=(1, 1), padding="VALID",
                                           feature_group_count=2), "cpu.conv_winograd"),
    ((8, 64, 16, 16), (128, 64, 3, 3), dict(window_strides=(1, 1), padding="SAME"),
     "cpu.conv_winograd"),
    ((2, 32, 32, 32), (32, 32, 3, 3), dict(window_strides=(2, 2), padding="SAME"),
     "cpu.conv_im2col"),
    ((2, 32, 32, 32), (32, 32, 3, 3), dict(window_strides=(1, 1), padding="SAME",
                                           rhs_dilation=(2, 2)), "cpu.conv_im2col"),
    ((2, 32, 32, 32), (32, 32, 5, 5), dict(window_strides=(1, 1), padding="SAME"),
     "cpu.conv_im2col"),
    ((1, 4, 8, 8), (4, 4, 3, 3), dict(window_strides=(1, 1), padding="SAME"),
     "cpu.conv_im2col"),  # too small to repay Winograd's transforms
    ((2, 64, 16, 16), (64, 64, 1, 1), dict(window_strides=(1, 1), padding="VALID"),
     "cpu.conv_direct"),  # 1x1: no window matrix to build
])
def test_selection_among_conv_impls(ls, rs, kw, best):
    costs = _costs(ls, rs, **kw)
    assert min(costs, key=costs.get) == best, costs
    assert ("cpu.conv_winograd" in costs) == (rs[2:] == (3, 3) and kw["window_strides"] == (1, 1)
                                              and "rhs_dilation" not in kw)


@pytest.mark.parametrize("ls,rs,impl,anchor", [
    # Many channels: the generated Winograd kernel (fx.lowering.kernels.cpu.winograd) beats the
    # kernel reading the input in place (kernels.cpu.conv_in_place), the bias and relu in its
    # output transform; there are no patches either way.
    ((2, 16, 16, 32), (3, 3, 32, 32), "cpu.winograd_f",
     "conv_in_place, broadcast_in_dim, add, max"),
    # Few: the generated kernel reading the (padded) input in place, the bias and relu in its
    # store (fx.lowering.passes.lower_convolutions, then kernels.cpu.conv_in_place).
    ((2, 9, 9, 8), (3, 3, 8, 8), "cpu.in_place_conv", "conv_in_place, broadcast_in_dim, add, max"),
])
def test_jit_conv_bias_relu(ls, rs, impl, anchor):
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s).astype(np.float32) for s in (ls, rs, rs[-1:])]
    f = fx.jit(_conv_bias_relu)
    text = f.lower(*to_fx(args)).as_text()
    assert f"impl: {impl}" in text, text
    assert f"gemm[{anchor}]" in text
    assert ("elementwise[broadcast_in_dim, add, max]" in text) == ("max" not in anchor)
    assert "conv_patches" not in text
    want = jax.nn.relu(jax.lax.conv_general_dilated(
        args[0], args[1], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) + args[2])
    # Winograd F(4x4) rounds a few bits coarser than the direct sum (winograd.error_bound)
    tol = 1e-3 if impl.startswith("cpu.winograd") else 1e-4
    assert_allclose(f(*to_fx(args)), want, rtol=tol, atol=tol, what=impl)


@pytest.mark.xfail(not hasattr(cost, "flops_rules"), strict=True,
                   reason="until fx.lowering.select.cost counts conv flops, the op-by-op NumPy "
                          "fallback looks cheaper for a convolution without epilogue")
@pytest.mark.parametrize("dtype,impl", [
    (np.float16, "cpu.conv_winograd"),  # no kernel in place: Winograd beats the patches
    (np.float32, "cpu.winograd_f"),  # generated Winograd beats the kernel in place and NumPy
])
def test_as_text_picks_the_cheapest_form_of_a_plain_3x3_conv(dtype, impl):
    x = np.ones((2, 32, 32, 32), dtype)
    w = np.ones((32, 32, 3, 3), dtype)
    text = fx.jit(lambda x, w: lax.conv(x, w, (1, 1), "SAME")).lower(*to_fx([x, w])).as_text()
    assert f"impl: {impl}" in text, text


def test_jit_of_gradients_and_half_precision():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 3, 7, 6))
    w = rng.standard_normal((4, 3, 3, 2))
    kw = dict(window_strides=(2, 1), padding=[(1, 1), (0, 1)], rhs_dilation=(1, 2),
              feature_group_count=1)

    def loss(m, x, w):
        y = m.lax.conv_general_dilated(x, w, **kw)
        return (y * y).sum()

    # The cotangents are convolutions with lhs dilation and batch groups, compiled too.
    got = fx.jit(fx.grad(lambda x, w: loss(fx, x, w), argnums=(0, 1)))(*to_fx([x, w]))
    want = jax.grad(lambda x, w: loss(jax, x, w), argnums=(0, 1))(x, w)
    assert_allclose(got, want, what="jit(grad(conv))")
    x16, w16 = x.astype(np.float16), w.astype(np.float16)
    f = fx.jit(lambda x, w: lax.conv_general_dilated(x, w, **kw) * 2.0)
    text = f.lower(*to_fx([x16, w16])).as_text()
    assert "float16 computed in float32" in text or "numpy." in text
    assert_allclose(f(*to_fx([x16, w16])), jax.lax.conv_general_dilated(x16, w16, **kw) * 2.0,
                    rtol=1e-2, atol=1e-2, what="f16")


def test_conv_flops():
    group = _conv_group((2, 4, 6, 6), (8, 2, 3, 3), np.float32,
                        dict(window_strides=(1, 1), padding="SAME", feature_group_count=2))
    # Each of the 2*8*36 outputs sums 2 input features x 9 taps.
    assert lconv.conv_flops(group.eqns[0]) == 2.0 * 2 * 9 * (2 * 8 * 36)
