"""Fusion decisions on known graphs: how many kernels, and which equations share one."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
from harness import python_calls

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.lowering.fusion.groups import GroupKind
from fx.lowering.pipeline import lower


def _program(f, *args):
    closed = fx.make_jaxpr(f)(*args)
    return lower(closed, "cpu", check=True)


def _kinds(low):
    return [s.group.kind for s in low.steps]


def test_ten_op_elementwise_chain_is_one_kernel():
    def f(x):
        y = fnp.sin(x) * 2.0 + 1.0
        y = fnp.exp(-y) - fnp.tanh(y)
        y = fnp.maximum(y, 0.1) / (1.0 + fnp.abs(x))
        return fnp.sqrt(y * y + 1.0)

    low = _program(f, fnp.ones((8, 16)))
    assert len(low.jaxpr.eqns) >= 10
    assert _kinds(low) == [GroupKind.ELEMENTWISE]
    assert len(low.kernels) == 1


def test_broadcasts_transposes_and_reshapes_fold_into_the_kernel():
    def f(x, b):
        return (x.T + b).reshape(4, 6) * fnp.arange(24.0).reshape(4, 6)

    low = _program(f, fnp.ones((6, 4)), fnp.ones((6,)))
    assert _kinds(low) == [GroupKind.ELEMENTWISE]


def test_softmax_is_one_kernel():
    def softmax(x):
        m = lax.reduce_max(x, (1,))
        e = fnp.exp(x - lax.broadcast_in_dim(m, x.shape, (0,)))
        return e / lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), x.shape, (0,))

    low = _program(softmax, fnp.ones((4, 8)))
    assert _kinds(low) == [GroupKind.REDUCTION]


def test_logsumexp_with_epilogue_is_one_kernel():
    def lse(x):
        m = lax.stop_gradient(lax.reduce_max(x, (1,)))
        s = lax.reduce_sum(fnp.exp(x - lax.broadcast_in_dim(m, x.shape, (0,))), (1,))
        return fnp.log(s) + m

    low = _program(lse, fnp.ones((4, 8)))
    assert _kinds(low) == [GroupKind.REDUCTION]


def test_mlp_layer_is_one_gemm_and_one_epilogue():
    def layer(w, b, x):
        return fnp.maximum(lax.dot_general(x, w, (((1,), (0,)), ((), ()))) + b, 0.0)

    low = _program(layer, fnp.ones((6, 5)), fnp.ones(5), fnp.ones((4, 6)))
    assert _kinds(low) == [GroupKind.GEMM, GroupKind.ELEMENTWISE]
    assert low.steps[0].choice.impl.name == "cpu.blas_gemm"
    assert len(low.kernels) == 1


def test_value_read_twice_by_one_consumer_is_not_materialized():
    def f(x):
        t = fnp.tanh(x)
        return t * 2.0 + t * 3.0 + fnp.exp(-x) * fnp.exp(-x)

    low = _program(f, fnp.ones(16))
    assert len(low.steps) == 1


def test_value_read_by_two_kernels_is_materialized_once():
    def f(x):
        e = fnp.exp(x)
        return lax.reduce_sum(e, (0,)), e * 2.0

    low = _program(f, fnp.ones((8, 4)))
    produced = [v for s in low.steps for v in s.outputs]
    assert len(produced) == len(set(produced))


def test_fusion_results_match_eager():
    rng = np.random.default_rng(0)
    x = fnp.asarray(rng.standard_normal((5, 7)).astype(np.float32))

    def f(x):
        m = lax.reduce_max(x, (1,))
        e = fnp.exp(x - lax.broadcast_in_dim(m, x.shape, (0,)))
        s = e / lax.broadcast_in_dim(lax.reduce_sum(e, (1,)), x.shape, (0,))
        return s.T * 2.0, m

    got, want = fx.jit(f)(x), f(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-7)


def test_outputs_over_one_space_share_one_kernel():
    """Multi-output fusion: a returned value that a consumer recomputes is stored by that
    consumer, and siblings reading a common input make one pass over it."""
    def f(x, i, d):
        h = x * 2.0 + i.astype(np.float32)
        return h, (d * 3.0).astype(np.float32) + h, i + 1, fnp.sin(x)

    rng = np.random.default_rng(0)
    args = (rng.standard_normal(64).astype(np.float32), np.arange(64, dtype=np.int32),
            rng.standard_normal(64))
    low = _program(f, *map(fnp.asarray, args))
    assert len(low.steps) == 1 and len(low.steps[0].outputs) == 4
    for g, w in zip(fx.jit(f)(*args), f(*args)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)  # sinf: 1 ulp


def test_siblings_of_different_spaces_or_joined_through_a_reduction_stay_apart():
    def f(x, y):
        s = lax.reduce_sum(x * 2.0, (1,))  # reads x, feeds the second elementwise pass
        return fnp.exp(x), fnp.exp(y) + lax.broadcast_in_dim(s, y.shape, (0,)), s

    low = _program(f, fnp.ones((8, 4)), fnp.ones((8, 4)))
    kinds = _kinds(low)
    assert kinds.count(GroupKind.REDUCTION) == 1
    x, y = np.arange(32.0).reshape(8, 4) / 10, np.ones((8, 4))
    for g, w in zip(fx.jit(f)(x, y), f(x, y)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)


def _group_of(low, name):
    return next(i for i, s in enumerate(low.steps)
                if any(e.primitive.name == name for e in s.group.eqns))


def test_gathers_read_a_stored_producer_instead_of_recomputing_it():
    # The convolution reads each input element 25 times (on the CPU in place, elsewhere
    # through its patches), the max-pool gradient every window element for each of them:
    # their (expensive) producers are stored once, not fused in.
    x = np.ones((2, 8, 8, 3), np.float32)
    w = np.ones((5, 5, 3, 4), np.float32)
    conv = fx.make_jaxpr(lambda x, w: lax.conv_general_dilated(
        fnp.tanh(x), w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))(x, w)
    low = lower(conv)
    assert _group_of(low, "tanh") != _group_of(low, "conv_in_place")

    def pool_grad(x):
        return fx.grad(lambda x: fnp.sum(fnp.cos(lax.reduce_window(
            fnp.exp(x), -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"))))(x)

    low = lower(fx.make_jaxpr(pool_grad)(x))
    scatter = _group_of(low, "select_and_scatter_add")
    assert _group_of(low, "sin") != scatter  # the pooled values, through cos'
    assert not any(e.primitive.name == "exp" for e in low.steps[scatter].group.eqns)


def test_a_gather_and_the_producer_of_its_operand_stay_apart_through_a_common_consumer():
    # relu, max-pool, and the relu gradient multiplying the pool gradient: the product reads
    # both the scatter and the relu's group, which must not merge (the scatter would recompute
    # the relu at every window tap, and GCC left that loop scalar: 3x slower).
    x = np.ones((2, 8, 8, 3), np.float32)

    def f(x):
        return fx.grad(lambda x: fnp.sum(fnp.sin(lax.reduce_window(
            fnp.maximum(x, 0.0), -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"))))(x)

    low = lower(fx.make_jaxpr(f)(x))
    scatter = low.steps[_group_of(low, "select_and_scatter_add")].group
    assert not any(e.primitive.name == "max" for e in scatter.eqns), scatter.label()


def test_a_split_gemm_epilogue_recomputes_the_prologue_values_it_reads():
    # The broadcast ones are a matmul operand (the GEMM group's prologue) and read again by
    # the epilogue; BLAS writes only the product, so the epilogue's kernel must compute them
    # itself (it used to read a value no step wrote: a KeyError while generating kernels).
    def f(x):
        ones = lax.broadcast_in_dim(1.0, (4, 4), ())
        return (x @ ones) / (ones + fnp.eye(4, dtype=np.float32))

    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    low = lower(fx.make_jaxpr(f)(x))
    gemm = [s for s in low.steps if s.group.kind is GroupKind.GEMM]
    assert gemm and all(s.choice.impl.name == "cpu.blas_gemm" for s in gemm)
    np.testing.assert_array_equal(np.asarray(fx.jit(f)(x)), np.asarray(f(x)))


def test_a_cheap_value_read_at_two_indices_is_recomputed_a_dear_one_stored():
    # Each kernel computes what it reads at the index it reads it: the cheap y (two
    # operations) twice per element, in the one kernel; the dear y (ten) once, in its own
    # kernel that stores it, and the product loads it at both indices.
    def cheap(x):
        y = x * 2.0 + 1.0
        return y[1:] * y[:-1]

    def dear(x):
        y = x
        for _ in range(5):
            y = fnp.sin(y) * 2.0
        return y[1:] * y[:-1]

    x = np.linspace(-1, 1, 16, dtype=np.float32)
    low = _program(cheap, x)
    assert len(low.steps) == 1
    low = _program(dear, x)
    assert [len(s.outputs) for s in low.steps] == [1, 1]
    assert low.steps[0].outputs[0].aval.shape == (16,)  # y itself, not its two slices


def _shifted_chain(depth: int):
    """Each level reads the one before at two shifted slices: fused without a bound, one
    element of the last level would compute the first ``2**depth`` times."""
    def f(x):
        for _ in range(depth):
            x = x[2:] * 0.5 + x[1:-1] * 0.25
        return x
    return f


def _lowered_chain(depth: int) -> tuple[int, int]:
    """The source length and the lowering work of ``_shifted_chain(depth)``."""
    x = np.linspace(-1, 1, 64 + 2 * depth, dtype=np.float32)
    closed = fx.make_jaxpr(_shifted_chain(depth))(x)
    low = []
    work = python_calls(lambda: low.append(lower(closed, "cpu")))
    return len(low[0].source), work


def test_values_read_at_two_shifted_slices_per_level_compile_linearly():
    # Code and compile work linear in the depth: k times the levels, at most 1.5k times the
    # source and the lowering work (recomputing every level at both slices multiplies them by
    # 2**levels; the middle depth fails such a compiler before the deep one runs).
    source, work = _lowered_chain(8)
    for depth in (12, 32):
        bound = 1.5 * depth / 8
        s, w = _lowered_chain(depth)
        assert s < bound * source and w < bound * work, (depth, s, source, w, work)
    x = np.linspace(-1, 1, 128, dtype=np.float32)
    f = _shifted_chain(32)
    np.testing.assert_allclose(np.asarray(fx.jit(f)(x)), np.asarray(f(x)), rtol=1e-6, atol=0)


_SOURCE_HASH = r"""
import hashlib, numpy as np, fx, fx.numpy as fnp
from fx.lowering.pipeline import lower

def chain(x):
    for _ in range(8):
        x = x[2:] * 0.5 + x[1:-1] * 0.25
    return x

def mlp_loss(w1, w2, x):
    return fnp.sum(fnp.tanh(fnp.tanh(x @ w1) @ w2) ** 2)

x = np.linspace(-1, 1, 80, dtype=np.float32)
w1, w2 = np.ones((16, 32), np.float32), np.ones((32, 8), np.float32)
b = np.ones((4, 16), np.float32)
programs = [fx.make_jaxpr(chain)(x), fx.make_jaxpr(fx.grad(mlp_loss, (0, 1)))(w1, w2, b),
            fx.make_jaxpr(fx.grad(lambda v: fnp.prod(v)))(x[:33])]
print(hashlib.sha256("".join(lower(p, "cpu").source for p in programs).encode()).hexdigest())
"""


def test_generated_source_does_not_depend_on_the_process():
    # Fusion walks sets of groups and values, which iterate in address (or hash-seed) order:
    # every choice it makes must not, or a program's kernels differ from process to process
    # (and miss the compile cache).
    hashes = set()
    for seed in ("1", "2", "6"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", _SOURCE_HASH], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        hashes.add(out.stdout.strip())
    assert len(hashes) == 1, hashes
