"""Table-driven tests of the jax.lax functions fx composes from its primitives
(fx/lax/composites.py, bits.py, patches.py) against jax.lax.

Each float row is checked for eval, jvp and vjp against jax, vmap over each array argument
against a loop (and jax.vmap), jit against eager bit for bit, and ``check_grads`` at order 2
in float64. Integer rows (the bit functions) are checked bit for bit against jax over edge
values and random draws, eagerly, under jit and under vmap.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from harness import (
    OpCase,
    assert_allclose,
    assert_bitwise,
    check_eval,
    check_grads_f64,
    check_jvp,
    check_vjp,
    check_vmap,
    run_doctests,
    to_fx,
)

import fx
import fx.lax as lax

F32 = np.float32


def _normal(*shape):
    return lambda rng: rng.standard_normal(shape).astype(F32)


def _const(v):
    return lambda rng: v


def _case(name, fx_fn, jax_fn, *draws, diff=(0,), **kw):
    return OpCase(name, fx_fn, jax_fn, lambda rng: [d(rng) for d in draws], diff_argnums=diff,
                  **kw)


def _same(name, *params, **kwparams):
    """A row calling ``fx.lax.<name>(*arrays, *params, **kwparams)`` and jax's twin."""
    def row(*draws, diff=(0,), tag="", **kw):
        return _case(f"{name}{tag}", lambda *a: getattr(lax, name)(*a, *params, **kwparams),
                     lambda *a: getattr(jax.lax, name)(*a, *params, **kwparams), *draws,
                     diff=diff, **kw)
    return row


def _max_then_scale(a, b):
    return lax.mul(lax.max(a, b), np.asarray(1.0, a.dtype))


def _jax_max_then_scale(a, b):
    return jax.lax.mul(jax.lax.max(a, b), np.asarray(1.0, a.dtype))


def _scalar(v, like):
    return np.asarray(v, like.dtype)


I1 = np.array([0, -1, 5, -9], np.int32)
I2 = np.array([1, 2, 3, 4], np.int32)
GROUPS = np.array([2, 0, 3], np.int32)

CASES = [
    _case("stack", lambda a, b: lax.stack([a, b], 1), lambda a, b: jax.lax.stack([a, b], 1),
          _normal(3, 4), _normal(3, 4), diff=(0, 1)),
    _case("stack-last", lambda a, b: lax.stack([a, b], -1),
          lambda a, b: jax.lax.stack([a, b], -1), _normal(2), _normal(2), diff=(0, 1)),
    _case("unstack", lambda a: lax.unstack(a, 1), lambda a: jax.lax.unstack(a, 1),
          _normal(2, 3, 4)),
    _case("split", lambda a: lax.split(a, (1, 0, 4), 1), lambda a: jax.lax.split(a, (1, 0, 4), 1),
          _normal(2, 5)),
    _same("tile", (2, 1, 3))(_normal(2, 3, 2)),
    _same("tile", (0, 2))(_normal(2, 3), tag="-zero"),
    _same("broadcast", (2, 3))(_normal(4)),
    _same("broadcast", ())(_normal(), tag="-nothing"),
    _case("broadcast_like", lambda a, b: lax.broadcast_like(a, b),
          lambda a, b: jax.lax.broadcast_like(a, b), _normal(1, 4), _normal(3, 2, 4)),
    _same("broadcast_to_rank", 4)(_normal(2, 3)),
    _same("index_in_dim", -1, 1, False)(_normal(2, 3, 4)),
    _same("index_in_dim", 0, 0, True)(_normal(2, 3), tag="-keepdims"),
    _case("index_take", lambda a: lax.index_take(a, (I1, I2), (0, 2)),
          lambda a: jax.lax.index_take(a, (I1, I2), (0, 2)), _normal(3, 4, 5)),
    _case("reduce-add", lambda a: lax.reduce(a, 0.0, lax.add, (0, 2)),
          lambda a: jax.lax.reduce(a, F32(0), jax.lax.add, (0, 2)), _normal(3, 4, 5),
          tags={"sums"}),
    _case("reduce-mul-init", lambda a: lax.reduce(a, _scalar(2, a), lax.mul, (1,)),
          lambda a: jax.lax.reduce(a, F32(2), jax.lax.mul, (1,)), _normal(3, 4),
          tags={"jax-jvp-drops-init", "sums"}),
    _case("reduce-max", lambda a: lax.reduce(a, _scalar(-np.inf, a), lax.max, (0,)),
          lambda a: jax.lax.reduce(a, F32(-np.inf), jax.lax.max, (0,)), _normal(5, 3)),
    _case("reduce-generic", lambda a: lax.reduce(a, _scalar(-np.inf, a), _max_then_scale,
                                                 (0, 1)),
          lambda a: jax.lax.reduce(a, F32(-np.inf), _jax_max_then_scale, (0, 1)),
          _normal(5, 3, 2)),
    _case("reduce-variadic",
          lambda a, b: lax.reduce((a, b), (_scalar(0, a), _scalar(0, b)),
                                  lambda x, y: (lax.add(x[0], y[0]), lax.add(x[1], y[1])), (1,)),
          lambda a, b: jax.lax.reduce((a, b), (F32(0), F32(0)),
                                      lambda x, y: (x[0] + y[0], x[1] + y[1]), (1,)),
          _normal(3, 7), _normal(3, 7), diff=(0, 1), tags={"sums"}),
    _case("reduce-empty", lambda a: lax.reduce(a, F32(1.5), _max_then_scale, (1,)),
          lambda a: jax.lax.reduce(a, F32(1.5), _jax_max_then_scale, (1,)), _normal(3, 0),
          differentiable=False),
    _case("approx_max_k", lambda a: lax.approx_max_k(a, 2, 1)[0],
          lambda a: jax.lax.approx_max_k(a, 2, 1)[0], _normal(3, 5, 2)),
    _case("approx_max_k-indices", lambda a: lax.approx_max_k(a, 2, 1)[1],
          lambda a: jax.lax.approx_max_k(a, 2, 1)[1], _normal(3, 5, 2), differentiable=False),
    _case("approx_min_k", lambda a: lax.approx_min_k(a, 3)[0],
          lambda a: jax.lax.approx_min_k(a, 3)[0], _normal(2, 6)),
    _case("approx_min_k-indices", lambda a: lax.approx_min_k(a, 3)[1],
          lambda a: jax.lax.approx_min_k(a, 3)[1], _normal(2, 6), differentiable=False),
    _case("batch_matmul", lax.batch_matmul, jax.lax.batch_matmul, _normal(2, 3, 4),
          _normal(2, 4, 5), diff=(0, 1), tags={"sums"}),
    # jax cannot batch ragged_dot (NotImplementedError): vmap is checked against a loop only.
    _case("ragged_dot", lambda a, b: lax.ragged_dot(a, b, GROUPS),
          lambda a, b: jax.lax.ragged_dot(a, b, GROUPS), _normal(6, 4), _normal(3, 4, 2),
          diff=(0, 1), tags={"sums", "no-jax-vmap"}),
    _case("reciprocal", lax.reciprocal, jax.lax.reciprocal,
          lambda rng: (rng.uniform(0.5, 2, (3, 4)) * rng.choice([-1, 1], (3, 4))).astype(F32)),
    _same("reduce_precision", 5, 10)(_normal(4, 5), differentiable=False),
    _same("reduce_precision", 8, 7)(_normal(4, 5), differentiable=False, tag="-bf16"),
    _same("conv_general_dilated_patches", (2, 3), (1, 2), "SAME", rhs_dilation=(2, 1))(
        _normal(2, 3, 6, 7)),
    _same("conv_general_dilated_patches", (2, 2), (1, 1), [(1, 0), (0, 2)],
          lhs_dilation=(2, 1), dimension_numbers=("NHWC", "OIHW", "NHWC"))(
        _normal(2, 4, 5, 3), tag="-nhwc-dilated"),
    _same("conv_general_dilated_patches", (3,), (2,), "VALID")(_normal(1, 2, 7), tag="-1d"),
    _same("conv_general_dilated_local", (1, 1), "VALID", (2, 2))(
        _normal(2, 3, 6, 7), _normal(4, 12, 5, 6), diff=(0, 1), tags={"sums"}),
    _same("conv_general_dilated_local", (2, 1), "SAME", (3, 1),
          dimension_numbers=("NHWC", "HWIO", "NHWC"))(
        _normal(1, 5, 4, 2), _normal(3, 4, 6, 2), diff=(0, 1), tag="-nhwc", tags={"sums"}),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_eval_jvp_vjp(case):
    rng = np.random.default_rng(0)
    args = case.args(rng)
    check_eval(case, args)
    # jax's generic reduce forgets a non-identity init in its jvp (its eval keeps it): such
    # rows are differentiated against finite differences only (test_check_grads_order2).
    if case.differentiable and "jax-jvp-drops-init" not in case.tags:
        check_jvp(case, args, rng)
        check_vjp(case, args, rng)


@pytest.mark.parametrize("case", [c for c in CASES if c.differentiable], ids=repr)
def test_check_grads_order2(case):
    check_grads_f64(case, case.args(np.random.default_rng(1)))


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_vmap(case):
    rng = np.random.default_rng(2)
    draws = [case.args(rng) for _ in range(3)]
    arrays = [i for i, a in enumerate(draws[0]) if isinstance(a, np.ndarray)]
    for i in arrays:
        for ax in (0, np.ndim(draws[0][i])):
            in_axes = tuple(ax if j == i else None for j in range(len(draws[0])))
            batched = [np.stack([d[j] for d in draws], ax) if j == i else draws[0][j]
                       for j in range(len(draws[0]))]
            if "no-jax-vmap" in case.tags:
                _check_vmap_vs_loop(case, batched, in_axes)
            else:
                check_vmap(case, batched, in_axes)


def _check_vmap_vs_loop(case, batched, in_axes):
    got = fx.vmap(case.fx_fn, in_axes=in_axes)(*to_fx(batched))
    size = next(np.shape(a)[ax] for a, ax in zip(batched, in_axes) if ax is not None)
    rows = [case.fx_fn(*to_fx([a if ax is None else np.take(a, i, ax)
                               for a, ax in zip(batched, in_axes)])) for i in range(size)]
    assert_allclose(got, np.stack([np.asarray(r) for r in rows]), what=f"{case.name} vmap")


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_jit_equals_eager(case):
    """Bit for bit, except sums and products, whose order of accumulation the compiler picks."""
    args = to_fx(case.args(np.random.default_rng(3)))
    got, want = fx.jit(case.fx_fn)(*args), case.fx_fn(*args)
    if "sums" in case.tags:
        assert_allclose(got, want, what=f"{case.name} jit")
    else:
        assert_bitwise(got, want, what=f"{case.name} jit")


# --- the bit functions: exact, against jax, eager, jit and vmap -----------------------------------


def _ints(dtype, n, rng):
    info = np.iinfo(dtype)
    edge = np.array([0, 1, 2, 3, info.max, info.min, info.max - 1, info.min + 1, 0x5555, 1 << 20],
                    dtype=np.int64)
    draws = rng.integers(info.min, info.max, n, dtype=np.int64, endpoint=True)
    return np.concatenate([edge, draws]).astype(dtype)


BIT_FNS = ["population_count", "clz"]
BIT_BINARY = ["mulhi", "shift_right_arithmetic"]


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("name", BIT_FNS + BIT_BINARY)
def test_bit_functions_match_jax_bitwise(name, dtype):
    rng = np.random.default_rng(4)
    x = _ints(dtype, 300, rng)
    if name in BIT_BINARY:
        y = (rng.integers(-3, 40, x.size) if name == "shift_right_arithmetic"
             else _ints(dtype, 300, rng)[::-1]).astype(dtype)
        args = (x, y)
    else:
        args = (x,)
    fx_fn, jax_fn = getattr(lax, name), getattr(jax.lax, name)
    want = jax_fn(*args)
    assert_bitwise(fx_fn(*to_fx(args)), want, what=f"{name} eager")
    assert_bitwise(fx.jit(fx_fn)(*to_fx(args)), want, what=f"{name} jit")
    batched = [a.reshape(10, -1) for a in args]
    assert_bitwise(fx.vmap(fx_fn)(*to_fx(batched)), np.asarray(want).reshape(10, -1),
                   what=f"{name} vmap")


def test_reduce_precision_edge_values_match_jax_bitwise():
    rng = np.random.default_rng(5)
    specials = [1e38, -1e38, 1e-40, -1e-40, 0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65520,
                6e-8, 3e-5, 1 + 2**-11, 1 + 3 * 2**-11, 2**-14, 2**-15]
    v = np.concatenate([rng.standard_normal(200) * 1e3, specials]).astype(F32)
    for e, m in [(5, 10), (8, 7), (4, 3), (5, 2), (8, 23), (11, 52), (3, 0), (8, 0), (2, 1)]:
        want = jax.lax.reduce_precision(v, e, m)
        assert_bitwise(lax.reduce_precision(v, e, m), want, what=f"reduce_precision {e},{m}")
        assert_bitwise(fx.jit(lambda x, e=e, m=m: lax.reduce_precision(x, e, m))(v), want,
                       what=f"jit reduce_precision {e},{m}")
    v64 = rng.standard_normal(100) * 1e5
    for e, m in [(8, 23), (5, 10), (11, 20)]:
        with fx.enable_x64():
            got = lax.reduce_precision(v64, e, m)
        assert_bitwise(got, jax.lax.reduce_precision(v64, e, m), what=f"f64 {e},{m}")


# --- shape helpers, small functions and errors --------------------------------------------------


def test_shape_helpers_match_jax():
    dn = ("NHWC", "HWIO", "NHWC")
    assert lax.conv_general_permutations(dn) == jax.lax.conv_general_permutations(dn)
    for pads in ("SAME", "VALID", [(1, 2), (0, 1)]):
        args = ((2, 3, 8, 9), (4, 3, 3, 2), (2, 1), pads)
        assert lax.conv_shape_tuple(*args) == tuple(jax.lax.conv_shape_tuple(*args))
        args = ((2, 8, 9, 3), (3, 2, 3, 4), (2, 1), pads, dn)
        assert lax.conv_general_shape_tuple(*args) == tuple(
            jax.lax.conv_general_shape_tuple(*args))
        assert lax.conv_transpose_shape_tuple(*args) == tuple(
            jax.lax.conv_transpose_shape_tuple(*args))
    args = ((8, 9), (2, 3), (2, 1), [(1, 1), (0, 2)], (1, 2), (2, 1))
    assert lax.reduce_window_shape_tuple(*args) == tuple(jax.lax.reduce_window_shape_tuple(*args))
    assert lax.broadcast_shapes((2, 1), (3,), ()) == jax.lax.broadcast_shapes((2, 1), (3,), ())


def test_small_functions():
    assert lax.dtype(np.arange(3, dtype=np.int32)) == np.int32
    assert lax.dtype(1.0) == fx.dtypes.default_float_dtype()
    e = lax.empty((2, 3), np.float32)
    assert e.shape == (2, 3) and e.dtype == np.float32
    x = np.arange(4.0, dtype=F32)
    assert_bitwise(lax.optimization_barrier((x, x))[1], x)
    assert_bitwise(lax.with_sharding_constraint(x, None), x)
    assert_bitwise(lax.stage(x), x)
    assert lax.RoundingMethod.TO_NEAREST_EVEN == 1
    half = np.array([0.5, 1.5, 2.5, -0.5], F32)
    for method in lax.RoundingMethod:
        assert_bitwise(lax.round(half, method), jax.lax.round(half, method), what=str(method))
    assert_allclose(lax.dot(x, x, precision=lax.Precision.HIGHEST), np.float32(14.0))
    assert_allclose(lax.dot(x, x, precision=lax.DotAlgorithmPreset.F32_F32_F32),
                    np.float32(14.0))
    add = lax.composite(lambda a, b: lax.add(a, b), "my.add")
    assert add.composite_name == "my.add"
    assert_bitwise(add(x, x), x + x)
    got = lax.platform_dependent(x, cpu=lambda v: lax.neg(v), default=lambda v: v)
    from fx.devices import default_backend

    assert_bitwise(got, -x if default_backend() == "cpu" else x)
    assert_allclose(fx.vmap(lambda v: v * lax.axis_size("i"), axis_name="i")(x), 4 * x)
    with pytest.raises(NameError):
        lax.axis_size("nope")


def test_reduce_recognizes_monoids_written_as_lambdas():
    x = np.random.default_rng(8).standard_normal((4, 6)).astype(F32)
    for fx_fn, jax_fn, prim in [(lambda a, b: a + b, lambda a, b: a + b, "reduce_sum"),
                                (lambda a, b: lax.max(b, a), jax.lax.max, "reduce_max")]:
        text = str(fx.make_jaxpr(lambda v, f=fx_fn: lax.reduce(v, F32(0), f, (1,)))(x))
        assert prim in text, text
        assert_bitwise(lax.reduce(x, F32(0), fx_fn, (1,)), lax.reduce(x, F32(0), {
            "reduce_sum": lax.add, "reduce_max": lax.max}[prim], (1,)))
        assert_allclose(lax.reduce(x, F32(0), fx_fn, (1,)),
                        jax.lax.reduce(x, F32(0), jax_fn, (1,)))
    # Not a single monoid: folded pairwise, same values.
    text = str(fx.make_jaxpr(lambda v: lax.reduce(v, F32(0), lambda a, b: a + 2 * b, (1,)))(x))
    assert "reduce_sum" not in text


def test_scatter_sub_and_apply():
    x = np.arange(6.0, dtype=F32)
    idx = np.array([[1], [3], [1]], np.int32)
    upd = np.array([1.0, 2.0, 4.0], F32)
    assert_allclose(lax.scatter_sub(x, idx, upd, (0,)), np.array([0, -4, 2, 1, 4, 5], F32))
    # Applied once per index: position 1, indexed twice, is multiplied by 100 (as jax).
    assert_allclose(lax.scatter_apply(x, idx, lambda v: v * 10, (0,)),
                    np.array([0, 100, 2, 30, 4, 5], F32))
    dn = dict(update_window_dims=(1,), inserted_window_dims=(0,),
              scatter_dims_to_operand_dims=(0,))
    y = np.arange(12.0, dtype=F32).reshape(4, 3)
    rows = np.array([[1], [3], [1]], np.int32)
    for numbers in (JS(**dn), lax.ScatterDimensionNumbers(**dn)):
        want = jax.lax.scatter_apply(y, rows, lambda v: v * 10, JS(**dn), update_shape=(3, 2))
        got = lax.scatter_apply(y, rows, lambda v: v * 10, numbers, update_shape=(3, 2))
        assert_allclose(got, want)
        jitted = fx.jit(lambda a, r, n=numbers: lax.scatter_apply(a, r, lambda v: v * 10, n,
                                                                  update_shape=(3, 2)))
        assert_allclose(jitted(y, rows), want)
    g = fx.grad(lambda u: lax.scatter_sub(x, idx, u, (0,)).sum())(upd)
    assert_allclose(g, -np.ones(3, F32))


@pytest.mark.parametrize("call, match", [
    (lambda: lax.stack([np.ones(2), np.ones(3)]), r"stack: .*same shape"),
    (lambda: lax.stack([]), r"stack: needs at least one"),
    (lambda: lax.split(np.ones((3, 5)), (1, 3), 1), r"split: sizes \(1, 3\) .* size 5"),
    (lambda: lax.tile(np.ones((2, 3), F32), (2,)), r"tile: reps \(2,\) .* f32\[2,3\]"),
    (lambda: lax.index_in_dim(np.ones((2, 3)), 3, 1), r"index_in_dim: index 3 .* size 3"),
    (lambda: lax.broadcast_shapes((2,), (3,)), r"broadcast_shapes: incompatible"),
    (lambda: lax.batch_matmul(np.ones((2, 3), F32), np.ones((2, 2), F32)),
     r"batch_matmul: .*f32\[2,3\] and f32\[2,2\]"),
    (lambda: lax.reciprocal(np.ones(2, np.int32)), r"reciprocal: needs a floating"),
    (lambda: lax.population_count(np.ones(2, F32)), r"population_count: needs an integer"),
    (lambda: lax.reduce_precision(np.ones(2, np.int32), 5, 10), r"reduce_precision: needs a f"),
    (lambda: lax.reduce(np.ones((2, 3), F32), np.ones(2, F32), lax.add, (0,)),
     r"reduce: each init value must be a scalar"),
    (lambda: lax.ragged_dot(np.ones((4, 3)), np.ones((2, 3)), np.ones(2, np.int32)),
     r"ragged_dot: expected lhs \(m, k\)"),
    (lambda: lax.conv_general_dilated_patches(np.ones((1, 2, 5)), (2, 2), (1,), "VALID"),
     r"conv_general_dilated_patches: filter_shape \(2, 2\)"),
    (lambda: lax.platform_dependent(1, tpu=lambda v: v), r"platform_dependent: no branch"),
])
def test_errors_name_the_function_and_the_shapes(call, match):
    with pytest.raises((TypeError, ValueError, IndexError), match=match):
        call()


# --- jax's windowed gather and scatter (GatherDimensionNumbers / ScatterDimensionNumbers) -------

JG, JS = jax.lax.GatherDimensionNumbers, jax.lax.ScatterDimensionNumbers
GATHERS = [  # operand shape, start indices, dimension numbers, slice sizes
    ((5,), [[0], [2]], dict(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (1,)),
    ((10,), [[0], [2], [8]], dict(offset_dims=(1,), collapsed_slice_dims=(),
                                  start_index_map=(0,)), (3,)),
    ((10, 5), [[0], [2], [-1]], dict(offset_dims=(1,), collapsed_slice_dims=(0,),
                                     start_index_map=(0,)), (1, 3)),
    ((10, 5), [[0, 1], [2, 4], [9, 0]], dict(offset_dims=(0,), collapsed_slice_dims=(1,),
                                             start_index_map=(0, 1)), (2, 1)),
    ((2, 10, 5), [[[0], [2]], [[3], [7]]],
     dict(offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,),
          operand_batching_dims=(0,), start_indices_batching_dims=(0,)), (1, 1, 5)),
    ((3, 4, 5), [[1, 2], [0, 3]], dict(offset_dims=(1, 2), collapsed_slice_dims=(0,),
                                       start_index_map=(0, 2)), (1, 4, 2)),
]
SCATTERS = [  # operand shape, indices, updates shape, dimension numbers
    ((5,), [[0], [2], [2]], (3,), dict(update_window_dims=(), inserted_window_dims=(0,),
                                       scatter_dims_to_operand_dims=(0,))),
    ((10,), [[0], [2], [8]], (3, 3), dict(update_window_dims=(1,), inserted_window_dims=(),
                                          scatter_dims_to_operand_dims=(0,))),
    ((10, 5), [[0], [2], [9]], (3, 5), dict(update_window_dims=(1,), inserted_window_dims=(0,),
                                            scatter_dims_to_operand_dims=(0,))),
    ((10, 5), [[0, 1], [2, 4], [9, 0]], (2, 3),
     dict(update_window_dims=(0,), inserted_window_dims=(1,),
          scatter_dims_to_operand_dims=(0, 1))),
    ((2, 10, 5), [[[0], [2]], [[3], [7]]], (2, 2, 5),
     dict(update_window_dims=(2,), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
          operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))),
]
SCATTER_FNS = ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max",
               "scatter_sub"]


@pytest.mark.parametrize("mode", [None, "clip", "fill", "promise_in_bounds"])
@pytest.mark.parametrize("shape, idx, dn, sizes", GATHERS, ids=[str(g[0]) for g in GATHERS])
def test_windowed_gather_matches_jax(shape, idx, dn, sizes, mode):
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape).astype(F32)
    idx = np.asarray(idx, np.int32)
    want = jax.lax.gather(x, idx, JG(**dn), sizes, mode=mode)
    for numbers in (JG(**dn), lax.GatherDimensionNumbers(**dn)):
        def f(v, numbers=numbers):
            return lax.gather(v, idx, numbers, sizes, mode=mode)
        assert_bitwise(f(x), want, what=f"gather {mode}")
        assert_bitwise(fx.jit(f)(x), want, what=f"jit gather {mode}")
    if mode in ("clip", "fill"):  # defined derivatives; 'promise' is undefined out of bounds
        ct = rng.standard_normal(want.shape).astype(F32)
        got = fx.vjp(f, x)[1](ct)[0]
        exp = jax.vjp(lambda v: jax.lax.gather(v, idx, JG(**dn), sizes, mode=mode), x)[1](ct)[0]
        assert_allclose(got, exp, what=f"gather vjp {mode}")
        xs = rng.standard_normal((3,) + shape).astype(F32)
        assert_allclose(fx.vmap(f)(xs), np.stack([np.asarray(f(v)) for v in xs]),
                        what="gather vmap")


@pytest.mark.parametrize("mode", [None, "clip"])
@pytest.mark.parametrize("name", SCATTER_FNS)
@pytest.mark.parametrize("shape, idx, ushape, dn", SCATTERS, ids=[str(s[0]) for s in SCATTERS])
def test_windowed_scatter_matches_jax(shape, idx, ushape, dn, name, mode):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(F32)
    u = rng.standard_normal(ushape).astype(F32)
    idx = np.asarray(idx, np.int32)
    want = getattr(jax.lax, name)(x, idx, u, JS(**dn), mode=mode)

    def f(v, w):
        return getattr(lax, name)(v, idx, w, lax.ScatterDimensionNumbers(**dn), mode=mode)
    assert_allclose(f(x, u), want, what=f"{name} {mode}")
    assert_allclose(fx.jit(f)(x, u), want, what=f"jit {name} {mode}")
    if name in ("scatter_add", "scatter_sub"):
        ct = rng.standard_normal(shape).astype(F32)
        got = fx.vjp(f, x, u)[1](ct)
        exp = jax.vjp(lambda v, w: getattr(jax.lax, name)(v, idx, w, JS(**dn), mode=mode),
                      x, u)[1](ct)
        assert_allclose(got, exp, what=f"{name} vjp {mode}")
        us = rng.standard_normal((3,) + ushape).astype(F32)
        assert_allclose(fx.vmap(f, in_axes=(None, 0))(x, us),
                        np.stack([np.asarray(f(x, w)) for w in us]), what=f"{name} vmap")


def test_windowed_gather_errors():
    x = np.ones((4, 5), F32)
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
    with pytest.raises(TypeError, match=r"gather: slice_sizes \(1, 9\)"):
        lax.gather(x, np.zeros((2, 1), np.int32), dn, (1, 9))
    with pytest.raises(TypeError, match=r"gather: the index vector has 2 entries"):
        lax.gather(x, np.zeros((2, 2), np.int32), dn, (1, 3))


def test_docstring_examples():
    from fx.lax import bits, composites, implicit, patches, permutes

    assert run_doctests(bits, composites, implicit, patches, permutes) >= 10
