"""Convolutions rewritten as patches and a matmul: the rewritten program computes the same
values (eager evaluation of both jaxprs) for every layout, stride, padding and dilation, and
their gradients; the forward pass and the weight gradient share one set of patches."""

from __future__ import annotations

import numpy as np
import pytest

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.interpreters.eval import eval_jaxpr
from fx.jaxpr import check_jaxpr
from fx.lowering.passes.eliminate_common_subexpressions import eliminate_common_subexpressions
from fx.lowering.passes.lower_convolutions import lower_convolutions
from fx.lowering.passes.simplify_algebra import simplify_algebra

CONVS = [  # lhs shape, rhs shape, params
    ((2, 3, 5, 6), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    ((2, 7, 6, 3), (3, 3, 3, 4), dict(window_strides=(2, 1), padding="SAME",
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((2, 5, 6, 3), (3, 3, 3, 4), dict(window_strides=(1, 2), padding=((1, 2), (0, 1)),
                                      rhs_dilation=(2, 1), lhs_dilation=(1, 2),
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((3, 9, 2), (3, 2, 4), dict(window_strides=(2,), padding="SAME",
                                dimension_numbers=("NWC", "WIO", "NWC"))),
    ((2, 4, 4, 4, 2), (2, 2, 2, 2, 3), dict(window_strides=(1, 2, 1), padding="SAME",
                                            dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))),
    ((4, 2, 3, 3), (5, 2, 1, 1), dict(window_strides=(1, 1), padding="VALID")),
    ((2, 6, 6, 1), (5, 5, 1, 2), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    # Contractions of at most SMALL_K terms: sums of products (LeNet's first layer, one
    # channel first with strides and dilation, and two channels of a 2x2 kernel).
    ((2, 8, 8, 1), (3, 3, 1, 16), dict(window_strides=(1, 1), padding="SAME",
                                       dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((2, 1, 7, 6), (4, 1, 3, 3), dict(window_strides=(2, 1), padding=((1, 0), (2, 1)),
                                      rhs_dilation=(1, 2))),
    ((3, 5, 4, 2), (2, 2, 2, 5), dict(window_strides=(1, 1), padding="VALID",
                                      dimension_numbers=("NHWC", "HWIO", "NCHW"))),
    # A kernel larger than the output (which large contractions compute in the swapped form).
    ((2, 3, 3, 1), (3, 3, 1, 2), dict(window_strides=(1, 1), padding="VALID",
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
]


def _conv(p):
    return lambda x, w: lax.conv_general_dilated(x, w, **p)


def _rewritten(closed):
    j = lower_convolutions(closed.jaxpr)
    check_jaxpr(j)
    return j


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", range(len(CONVS)))
def test_rewritten_convolution_and_its_gradients_compute_the_same(case):
    ls, rs, p = CONVS[case]
    r = np.random.default_rng(case)
    x, w = r.standard_normal(ls), r.standard_normal(rs)
    f = _conv(p)
    closed = fx.make_jaxpr(f)(x, w)
    j = _rewritten(closed)
    assert "conv_general_dilated" not in [e.primitive.name for e in j.eqns]
    _close(eval_jaxpr(j, closed.consts, x, w)[0], eval_jaxpr(closed.jaxpr, closed.consts, x, w)[0])
    # Reverse mode: the input gradient and the weight gradient (the swapped form) too.
    loss = lambda x, w: fnp.sum(f(x, w) ** 2)
    closed = fx.make_jaxpr(fx.grad(loss, argnums=(0, 1)))(x, w)
    j = _rewritten(closed)
    assert "conv_general_dilated" not in [e.primitive.name for e in j.eqns]
    for got, want in zip(eval_jaxpr(j, closed.consts, x, w),
                         eval_jaxpr(closed.jaxpr, closed.consts, x, w)):
        _close(got, want)


def test_the_weight_gradient_shares_the_forward_patches():
    ls, rs, p = CONVS[6]  # NHWC, 5x5 SAME: the CNN example's layers
    x, w = np.ones(ls, np.float32), np.ones(rs, np.float32)
    loss = lambda x, w: fnp.sum(_conv(p)(x, w) ** 2)
    closed = fx.make_jaxpr(fx.value_and_grad(loss, argnums=1))(x, w)
    j = eliminate_common_subexpressions(simplify_algebra(_rewritten(closed)))
    patches = [e for e in j.eqns if e.primitive.name == "conv_patches"]
    assert len(patches) == 1  # the input has no gradient: one gather serves both products
    assert [e.primitive.name for e in j.eqns].count("dot_general") == 2


def test_grouped_and_integer_convolutions_are_left_alone():
    x, w = np.ones((1, 4, 5, 5), np.float32), np.ones((4, 2, 3, 3), np.float32)
    grouped = fx.make_jaxpr(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", feature_group_count=2))(x, w)
    assert [e.primitive.name for e in _rewritten(grouped).eqns] == ["conv_general_dilated"]
    xi, wi = np.ones((1, 2, 5, 5), np.int32), np.ones((3, 2, 3, 3), np.int32)
    ints = fx.make_jaxpr(_conv(dict(window_strides=(1, 1), padding="SAME")))(xi, wi)
    assert [e.primitive.name for e in _rewritten(ints).eqns] == ["conv_general_dilated"]


def _k(rs, p):
    """The contraction's length: the kernel's taps times its input features (all of the
    kernel but its output features, axis O: 0 in the default OIHW)."""
    spec = p.get("dimension_numbers")
    return int(np.prod(rs)) // rs[spec[1].index("O") if spec else 0]


@pytest.mark.parametrize("case", [i for i, (_, rs, p) in enumerate(CONVS) if _k(rs, p) <= 9])
def test_a_small_contraction_is_a_sum_of_products(case):
    # K <= SMALL_K terms per output: elementwise products of the patches' taps and the
    # kernel's rows, no matmul (so that the bias, relu and pool after it fuse in one kernel).
    ls, rs, p = CONVS[case]
    r = np.random.default_rng(case)
    x, w = r.standard_normal(ls).astype(np.float32), r.standard_normal(rs).astype(np.float32)
    closed = fx.make_jaxpr(_conv(p))(x, w)
    names = [e.primitive.name for e in _rewritten(closed).eqns]
    assert "dot_general" not in names and names.count("mul") == _k(rs, p), names
    got = fx.jit(_conv(p))(x, w)
    np.testing.assert_allclose(np.asarray(got), np.asarray(_conv(p)(x, w)), rtol=2e-6,
                               atol=2e-6)
