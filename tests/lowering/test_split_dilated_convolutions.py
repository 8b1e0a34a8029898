"""Convolutions of a dilated input (input gradients of strided convolutions) as one dense
convolution per output phase: the rewritten program computes what the original computes
(eager evaluation of both), for every stride, padding, kernel size (smaller than the stride
included), rank and layout; the rewritten convolutions do no multiply-adds by the dilation's
zeros; jitted gradients of strided convolutions match jax's."""

from __future__ import annotations

import ast
import re

import jax
import numpy as np
import pytest

import fx
import fx.lax as lax
from fx.interpreters.eval import eval_jaxpr
from fx.jaxpr import check_jaxpr
from fx.lowering.kernels.cpu.conv import conv_flops
from fx.lowering.passes.split_dilated_convolutions import split_dilated_convolutions

CASES = [  # lhs, rhs, params of a convolution with lhs_dilation
    ((2, 3, 5, 6), (4, 3, 3, 3), dict(lhs_dilation=(2, 2), padding=((2, 2), (2, 2)))),
    ((2, 3, 5, 6), (4, 3, 3, 3), dict(lhs_dilation=(2, 2), padding=((1, 2), (2, 1)))),
    ((2, 3, 4, 5), (4, 3, 5, 2), dict(lhs_dilation=(3, 2), padding=((0, 3), (-1, 2)))),
    ((1, 2, 7), (3, 2, 1), dict(lhs_dilation=(3,), padding=((0, 0),))),  # kernel < stride
    ((2, 2, 3, 3, 4), (2, 2, 3, 2, 3), dict(lhs_dilation=(2, 1, 2), padding=((2, 2), (1, 1),
                                                                          (0, 2)))),
    ((2, 5, 6, 3), (3, 3, 3, 4), dict(lhs_dilation=(2, 2), padding=((2, 2), (2, 2)),
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
]


def _conv(p):
    return lambda x, w: lax.conv_general_dilated(x, w, (1,) * (len(p["lhs_dilation"])), **p)


@pytest.mark.parametrize("lhs,rhs,params", CASES)
def test_phases_compute_the_same_values(lhs, rhs, params):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(lhs).astype(np.float32), rng.standard_normal(rhs).astype(
        np.float32)
    closed = fx.make_jaxpr(_conv(params))(x, w)
    j = split_dilated_convolutions(closed.jaxpr)
    check_jaxpr(j)
    convs = [e for e in j.eqns if e.primitive.name == "conv_general_dilated"]
    assert convs and all(all(d == 1 for d in e.params["lhs_dilation"]) for e in convs)
    # no multiply-adds by zeros: the phases' work is the original's over its nonzero terms
    original = conv_flops(closed.jaxpr.eqns[0])
    assert sum(conv_flops(e) for e in convs) < original
    want = eval_jaxpr(closed.jaxpr, closed.consts, x, w)[0]
    got = eval_jaxpr(j, closed.consts, x, w)[0]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("strides,padding", [((2, 2), "SAME"), ((2, 2), "VALID"),
                                              ((3, 2), ((1, 0), (2, 1)))])
def test_jitted_input_gradient_of_strided_conv_matches_jax(strides, padding):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 9, 8, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 5)).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(m):
        return lambda x, w: (m.lax.conv_general_dilated(x, w, strides, padding,
                                                        dimension_numbers=dn) ** 2).sum()

    got = fx.jit(fx.grad(loss(fx)))(x, w)
    want = jax.grad(loss(jax))(x, w)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)
    text = fx.jit(fx.grad(loss(fx))).lower(x, w).as_text()
    # nothing is dilated: no pad spreads an operand with interior zeros
    configs = [ast.literal_eval(c) for c in re.findall(r"padding_config=(\(\(.*?\)\))\]", text)]
    assert configs and all(interior == 0 for c in configs for _, _, interior in c), configs
