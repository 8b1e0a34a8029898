"""Layout assignment (``lowering.passes.assign_layouts``): the rewritten program computes the
same values (eager evaluation of both jaxprs, and the compiled program against eager fx), keeps
channels-last activations between the convolutions of a network written channels-first, leaves
only the layout changes where the user's layout meets the chosen one (each labelled), and never
adds a transpose."""

from __future__ import annotations

import numpy as np
import pytest

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.interpreters.eval import eval_jaxpr
from fx.jaxpr import check_jaxpr
from fx.lowering import pipeline
from fx.lowering.passes.assign_layouts import assign_layouts
from fx.lowering.passes.lower_convolutions import lower_convolutions

NCHW = ("NCHW", "OIHW", "NCHW")


def _transposes(jaxpr) -> int:
    return sum(e.primitive.name == "transpose" for e in jaxpr.eqns)


def _assigned(closed):
    """The jaxpr of ``closed`` with its convolutions lowered, before and after the pass."""
    before = lower_convolutions(closed.jaxpr)
    after = assign_layouts(before)
    check_jaxpr(after)
    assert _transposes(after) <= _transposes(before)
    return before, after


def _transposes_left_exactly(f, *args) -> int:
    """The transposes ``assign_layouts`` leaves in ``f``'s jaxpr, whose output it keeps bit
    for bit (the rewritten jaxpr checked)."""
    closed = fx.make_jaxpr(f)(*args)
    after = assign_layouts(closed.jaxpr)
    check_jaxpr(after)
    np.testing.assert_array_equal(eval_jaxpr(after, [], *args)[0],
                                  eval_jaxpr(closed.jaxpr, [], *args)[0])
    return _transposes(after)


def _same_values(closed, after, *args):
    want = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    got = eval_jaxpr(after, closed.consts, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=1e-10, atol=1e-10)


# --- a LeNet-style network written channels-first ------------------------------------------------

def _conv_block(x, w, b, stride=(1, 1), dilation=(1, 1), dims=NCHW, pool=True):
    nsp = x.ndim - 2
    y = lax.conv_general_dilated(x, w, stride, "SAME", rhs_dilation=dilation,
                                 dimension_numbers=dims)
    y = fnp.maximum(y + b.reshape((1, -1) + (1,) * nsp), 0.0)
    if not pool:
        return y
    window = (1, 1) + (2,) * nsp
    return lax.reduce_window(y, -fnp.inf, lax.max, window, window, "VALID")


def _lenet(params, x):
    w1, b1, w2, b2, w3, b3 = params
    h = _conv_block(_conv_block(x, w1, b1), w2, b2)
    return h.reshape(h.shape[0], -1) @ w3 + b3


def _loss(params, x, y):
    logits = _lenet(params, x)
    logp = logits - fnp.log(fnp.sum(fnp.exp(logits), axis=1, keepdims=True))
    return -fnp.mean(fnp.sum(logp * y, axis=1))


def _lenet_data(batch=4, side=12, dtype=np.float64):
    r = np.random.default_rng(0)
    flat = 8 * (side // 4) ** 2
    shapes = [(4, 1, 5, 5), (4,), (8, 4, 5, 5), (8,), (flat, 10), (10,)]
    params = [(r.standard_normal(s) * 0.3).astype(dtype) for s in shapes]
    x = r.standard_normal((batch, 1, side, side)).astype(dtype)
    y = np.eye(10, dtype=dtype)[r.integers(0, 10, batch)]
    return params, x, y


def test_nchw_network_and_its_gradient_keep_their_values():
    params, x, y = _lenet_data()
    for f in (lambda p, x, y: _lenet(p, x), fx.value_and_grad(_loss)):
        closed = fx.make_jaxpr(f)(params, x, y)
        flat = [*params, x, y]
        _, after = _assigned(closed)
        _same_values(closed, after, *flat)


def test_nchw_gradient_keeps_only_the_boundary_layout_changes(monkeypatch):
    """Between the convolutions the activations stay channels-last (the bias, relu, pooling and
    their gradients read the products in place); the transposes left are the flatten before
    the dense layer and its gradient (a reshape reads the user's layout) and the two weight
    gradients returned in OIHW, each labelled in the program's text."""
    params, x, y = _lenet_data()
    closed = fx.make_jaxpr(fx.value_and_grad(_loss))(params, x, y)
    after = pipeline.optimize(closed.jaxpr, check=True)
    monkeypatch.setattr(pipeline, "PASSES",
                        tuple(p for p in pipeline.PASSES if p is not assign_layouts))
    before = pipeline.optimize(closed.jaxpr, check=True)
    assert _transposes(before) == 8
    assert _transposes(after) == 4
    _same_values(closed, after, *params, x, y)
    for e in after.eqns:
        if e.primitive.name == "transpose":
            assert e.source_info.name_stack.startswith("layout: ")
    # The first layer's one-channel input only needs its unit axis moved: a reshape.
    first = next(e for e in after.eqns if e.primitive.name == "conv_patches")
    assert first.invars[0] in [e.outvars[0] for e in after.eqns
                               if e.primitive.name == "reshape"]


def test_compiled_nchw_gradient_matches_eager_and_shows_its_layout_changes():
    params, x, y = _lenet_data(dtype=np.float32)
    f = fx.value_and_grad(_loss)
    args = ([fnp.asarray(a) for a in params], fnp.asarray(x), fnp.asarray(y))
    low = fx.jit(f).lower(*args)
    text = low.as_text()
    assert text.count("= transpose[") == 4
    assert text.count("# layout: ") >= 4
    got = fx.jit(f)(*args)
    want = f(*args)
    for g, w in zip(fx.tree_util.tree_leaves(got), fx.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-5)


def test_pipeline_runs_the_pass_right_after_lowering_convolutions():
    i = pipeline.PASSES.index(lower_convolutions)
    assert pipeline.PASSES[i + 1] is assign_layouts


# --- geometries: strides, dilation, 1-D and 3-D, pools -------------------------------------------

def _pool(y, kind, nsp):
    window = (1, 1) + (2,) * nsp
    if kind == "max":
        return lax.reduce_window(y, -fnp.inf, lax.max, window, window, "VALID")
    if kind == "sum":
        return lax.reduce_window(y, 0.0, lax.add, window, (1, 1) + (1,) * nsp, "SAME")
    return lax.reduce_window(y, fnp.inf, lax.min, window, window, ((0, 0), (0, 0))
                             + ((1, 0),) * nsp)


GEOMETRIES = [  # input shape, kernel shape, stride, rhs dilation, dimension numbers, pool
    ((2, 3, 9, 8), (4, 3, 3, 3), (1, 1), (1, 1), NCHW, "max"),
    ((2, 3, 9, 8), (4, 3, 3, 3), (2, 1), (1, 1), NCHW, "sum"),
    ((2, 2, 10, 9), (3, 2, 3, 2), (1, 2), (2, 1), NCHW, "min"),
    ((2, 3, 11), (4, 3, 3), (1,), (2,), ("NCH", "OIH", "NCH"), "max"),
    ((2, 2, 5, 6, 4), (3, 2, 2, 3, 2), (1, 1, 1), (1, 1, 1), ("NCDHW", "OIDHW", "NCDHW"),
     "max"),
    ((2, 9, 8, 3), (3, 3, 3, 4), (1, 1), (1, 1), ("NHWC", "HWIO", "NHWC"), "max"),
]


def _geometry_net(case):
    ls, rs, stride, dil, dims, kind = GEOMETRIES[case]
    nsp = len(ls) - 2
    channels_last = dims[0][-1] == "C"

    def f(x, w, w2, b):
        y = lax.conv_general_dilated(x, w, stride, "SAME", rhs_dilation=dil,
                                     dimension_numbers=dims)
        bias = b.reshape((1,) + (1,) * nsp + (-1,) if channels_last else (1, -1) + (1,) * nsp)
        y = fnp.tanh(y + bias)
        if not channels_last:
            y = _pool(y, kind, nsp)
        return lax.conv_general_dilated(y, w2, (1,) * nsp, "VALID", dimension_numbers=dims)

    r = np.random.default_rng(case)
    o = rs[dims[1].index("O")]
    w2_shape = tuple(o if c in "OI" else 1 for c in dims[1])
    return f, [r.standard_normal(ls), r.standard_normal(rs), r.standard_normal(w2_shape),
               r.standard_normal(o)]


@pytest.mark.parametrize("case", range(len(GEOMETRIES)))
def test_geometries_keep_their_values_and_gradients(case):
    f, args = _geometry_net(case)
    closed = fx.make_jaxpr(f)(*args)
    _, after = _assigned(closed)
    _same_values(closed, after, *args)
    loss = lambda *a: fnp.sum(f(*a) ** 2)  # noqa: E731
    closed = fx.make_jaxpr(fx.grad(loss, argnums=(0, 1, 2, 3)))(*args)
    before, after = _assigned(closed)
    _same_values(closed, after, *args)
    if GEOMETRIES[case][4] != GEOMETRIES[-1][4]:
        assert _transposes(after) < _transposes(before)


@pytest.mark.parametrize("case", [0, 2, 3, 4])
def test_compiled_geometries_match_eager(case):
    f, args = _geometry_net(case)
    args = [fnp.asarray(a.astype(np.float32)) for a in args]
    g = fx.grad(lambda *a: fnp.sum(f(*a) ** 2), argnums=(0, 1, 2, 3))
    for got, want in zip(fx.jit(g)(*args), g(*args)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-4, atol=2e-4)


# --- what the pass leaves alone ------------------------------------------------------------------

def test_a_window_whose_taps_would_change_order_stays_in_the_users_layout():
    """A windowed sum over two axes a transpose swaps: summed in the other layout, its taps
    would be added in another order, so the window reads the user's layout."""
    def f(x):
        t = lax.transpose(fnp.sin(x), (0, 2, 1))
        s = lax.reduce_window(t, 0.0, lax.add, (1, 2, 2), (1, 1, 1), "VALID")
        return lax.transpose(s, (0, 2, 1))

    x = np.random.default_rng(1).standard_normal((2, 5, 4))
    assert _transposes_left_exactly(f, x) == 2


def test_transposes_cancel_through_elementwise_chains():
    def f(x, y):
        t = lax.transpose(x, (0, 2, 3, 1))
        u = fnp.exp(t) * 2.0 + lax.transpose(y, (0, 2, 3, 1))
        return lax.transpose(fnp.maximum(u, 0.0), (0, 3, 1, 2))

    r = np.random.default_rng(2)
    x, y = r.standard_normal((2, 3, 4, 5)), r.standard_normal((2, 3, 4, 5))
    assert _transposes_left_exactly(f, x, y) == 0


# --- random programs ------------------------------------------------------------------------------

def _random_program(seed):
    """A random chain of transposes, elementwise operations, broadcasts of vectors, reductions,
    windows, pads, reversals, slices and unit reshapes over a rank-4 array."""
    r = np.random.default_rng(seed)
    steps = [int(k) for k in r.integers(0, 10, 12)]
    perms = [tuple(int(d) for d in r.permutation(4)) for _ in steps]

    def f(x, v):
        pool = [x]
        for k, perm in zip(steps, perms):
            a = pool[-1]
            if k in (0, 1):
                a = lax.transpose(a, perm)
            elif k == 2:
                a = fnp.tanh(a) * 0.5 + 0.25
            elif k == 3:
                same = [b for b in pool if b.shape == a.shape]
                a = a - same[0] if len(same) > 1 else fnp.sin(a)
            elif k == 4:
                d = perm[0] % a.ndim
                bias = lax.broadcast_in_dim(v[:a.shape[d]] if a.shape[d] <= v.shape[0]
                                            else fnp.ones(a.shape[d]), a.shape, (d,))
                a = fnp.where(a > 0, a + bias, a * 0.1)
            elif k == 5:
                s = fnp.sum(a, axis=(0, 2), keepdims=True)
                a = a - s
            elif k == 6:
                window = tuple(2 if a.shape[d] >= 2 and d in perm[:2] else 1 for d in range(4))
                a = lax.reduce_window(a, -fnp.inf, lax.max, window, (1,) * 4, "SAME")
            elif k == 7:
                a = lax.pad(a, 0.0, tuple((1, 0, 0) if d == perm[0] else (0, 0, 0)
                                          for d in range(4)))
                a = lax.rev(a, (perm[1],))
            elif k == 8:
                a = lax.slice(a, (0,) * 4, tuple(max(1, n - (d == perm[0])) for d, n in
                                                 enumerate(a.shape)))
            else:
                a = fnp.expand_dims(fnp.sum(a, axis=perm[0]), perm[0])
            pool.append(a)
        return pool[-1], pool[len(pool) // 2]

    x = r.standard_normal((2, 3, 4, 5))
    v = r.standard_normal(6)
    return f, (x, v)


@pytest.mark.parametrize("seed", range(40))
def test_random_programs_keep_values_and_never_gain_a_transpose(seed):
    f, args = _random_program(seed)
    closed = fx.make_jaxpr(f)(*args)
    after = assign_layouts(closed.jaxpr)
    check_jaxpr(after)
    assert _transposes(after) <= _transposes(closed.jaxpr)
    _same_values(closed, after, *args)
    closed = fx.make_jaxpr(fx.grad(lambda *a: fnp.sum(f(*a)[0] ** 2)))(*args)
    after = assign_layouts(closed.jaxpr)
    check_jaxpr(after)
    assert _transposes(after) <= _transposes(closed.jaxpr)
    _same_values(closed, after, *args)


# --- constant kernels -----------------------------------------------------------------------------

def test_a_constant_oihw_kernel_is_transposed_once_at_compile_time():
    """A closed-over OIHW kernel is stored in the order its BLAS product reads it, (H, W, I, O):
    the product reads that constant, and no step transposes it. (In float64: a float32 product
    of patches becomes ``conv_in_place``, whose kernel packs the weights itself.)"""
    r = np.random.default_rng(3)
    w = fnp.asarray(r.standard_normal((8, 4, 3, 3)))
    x = fnp.asarray(r.standard_normal((2, 4, 6, 6)))

    def f(x):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NCHW)

    text = fx.jit(f).lower(x).as_text("jaxpr")
    head, body = text.split(". let", 1)
    assert "f64[3,3,4,8]" in head  # the kernel in its compute layout, among the constants
    assert "transpose[permutation=(2, 3, 1, 0)]" not in body
    assert "= dot_general[dimension_numbers=(((3, 4, 5), (0, 1, 2))" in body
    np.testing.assert_allclose(np.asarray(fx.jit(f)(x)), np.asarray(f(x)), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("seed", [0, 5, 11, 38])
def test_compiled_random_programs_match_eager(seed):
    f, (x, v) = _random_program(seed)
    args = (fnp.asarray(x.astype(np.float32)), fnp.asarray(v.astype(np.float32)))
    for got, want in zip(fx.jit(f)(*args), f(*args)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_a_program_without_transposes_is_returned_as_it_is():
    j = fx.make_jaxpr(lambda x: fnp.sum(fnp.sin(x) * 2.0, axis=0))(np.ones((3, 4))).jaxpr
    assert assign_layouts(j) is j


def test_strided_nchw_gradient_keeps_only_the_boundary_layout_changes(monkeypatch):
    """A stride-2 convolution's input gradient is computed in phases interleaved by broadcasts,
    concatenations and reshapes (``split_dilated_convolutions``): the layout follows through
    them, so what remains is the input to channels-last, the two OIHW weight gradients and the
    input gradient returned in NCHW."""
    def f(x, w1, w2):
        h = fnp.maximum(lax.conv_general_dilated(x, w1, (2, 2), "SAME",
                                                 dimension_numbers=NCHW), 0.0)
        return fnp.sum(lax.conv_general_dilated(h, w2, (1, 1), "SAME",
                                                dimension_numbers=NCHW) ** 2)

    r = np.random.default_rng(4)
    args = [r.standard_normal((2, 4, 8, 8)), r.standard_normal((8, 4, 3, 3)),
            r.standard_normal((8, 8, 3, 3))]
    closed = fx.make_jaxpr(fx.grad(f, argnums=(0, 1, 2)))(*args)
    after = pipeline.optimize(closed.jaxpr, check=True)
    monkeypatch.setattr(pipeline, "PASSES",
                        tuple(p for p in pipeline.PASSES if p is not assign_layouts))
    before = pipeline.optimize(closed.jaxpr, check=True)
    assert _transposes(before) > 10
    assert _transposes(after) == 4
    _same_values(closed, after, *args)


def test_a_reshape_merging_axes_carries_the_layout():
    """A reshape merging two adjacent axes that the layout keeps together, in order, runs in
    the layout: the transposes around it cancel."""
    def f(x):
        t = lax.transpose(x, (0, 3, 1, 2))  # (2, 5, 3, 4)
        m = fnp.tanh(t).reshape(2, 5, 12)
        return lax.transpose(m * 2.0, (0, 2, 1))

    x = np.random.default_rng(5).standard_normal((2, 3, 4, 5))
    assert _transposes_left_exactly(f, x) == 0
