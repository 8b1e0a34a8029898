"""fx.export.to_onnx: every ONNX rule against fx's eager result in onnxruntime.

One table of cases drives the checks (with a case derived from each elementwise record that
names its ONNX operator): each builds its arguments for a batch size, is exported
at ``BATCH`` (with a symbolic batch unless the case says otherwise), checked with
``onnx.checker.check_model(full_check=True)`` and run in onnxruntime at ``RUN_BATCH``, a
different size; floats agree to a tolerance, integers and bools exactly. Further tests cover
stax models, a scan RNN, the error messages and the coverage of the rule table.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import fx  # noqa: E402
import fx.numpy as fnp  # noqa: E402
from fx import lax, tree_util  # noqa: E402
from fx.core import Primitive  # noqa: E402
from fx.export import ExportError, save_onnx, to_onnx  # noqa: E402
from fx.export.onnx_export import onnx_rules  # noqa: E402
from fx.export.onnx_unsupported import NOT_EXPORTABLE  # noqa: E402
from fx.interpreters.call import body_param  # noqa: E402
from fx.jaxpr import subjaxprs  # noqa: E402
from fx.lax.elementwise_record import records  # noqa: E402

BATCH, RUN_BATCH = 3, 5
rng = np.random.default_rng(0)


def f32(*shape, lo=-2.0, hi=2.0):
    return lambda b: rng.uniform(lo, hi, (b, *shape)).astype(np.float32)


def i32(*shape, lo=-20, hi=20):
    return lambda b: rng.integers(lo, hi, (b, *shape)).astype(np.int32)


def boolean(*shape):
    return lambda b: rng.random((b, *shape)) < 0.5


@dataclass
class Case:
    name: str
    fn: Callable
    args: tuple  # each a function of the batch size, or a fixed array
    dynamic: bool = True
    tol: float = 1e-5

    def make(self, b: int) -> tuple:
        return tuple(a(b) if callable(a) else a for a in self.args)


def run_onnx(model, args) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    leaves = tree_util.tree_leaves(args)
    return sess.run(None, {f"input_{i}": np.asarray(x) for i, x in enumerate(leaves)})


def check(fn, args_at: Callable[[int], tuple], dynamic: bool = True, tol: float = 1e-5,
          opset: int = 21, batches: tuple[int, int] = (BATCH, RUN_BATCH)):
    model = to_onnx(fn, *args_at(batches[0]), dynamic_batch=dynamic, opset=opset)
    onnx.checker.check_model(model, full_check=True)
    args = args_at(batches[1] if dynamic else batches[0])
    want = [np.asarray(x) for x in tree_util.tree_leaves(fn(*args))]
    got = run_onnx(model, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, w)
    return model


# --- the table --------------------------------------------------------------------------------

UNARY_FLOAT = {
    "neg": lax.neg, "sign": lax.sign, "floor": lax.floor, "ceil": lax.ceil, "abs": lax.abs,
    "exp": lax.exp, "exp2": lax.exp2, "log": lambda x: lax.log(lax.abs(x) + 0.5),
    "log1p": lambda x: lax.log1p(lax.abs(x)), "expm1": lax.expm1,
    "log1p_tiny": lambda x: lax.log1p(x * 1e-6) * 1e6, "expm1_tiny": lambda x: lax.expm1(
        x * 1e-6) * 1e6,
    "round_halves": lambda x: (lax.round(fnp.array([0.5, -0.5, 1.5, 2.5, 0.49999997, -2.5],
                                                    np.float32)) + x[:1, :1]),
    "sqrt": lambda x: lax.sqrt(lax.abs(x)), "rsqrt": lambda x: lax.rsqrt(lax.abs(x) + 0.1),
    "cbrt": lax.cbrt, "tanh": lax.tanh, "logistic": lax.logistic, "sin": lax.sin,
    "cos": lax.cos, "tan": lambda x: lax.tan(x * 0.5), "asin": lambda x: lax.asin(x * 0.4),
    "acos": lambda x: lax.acos(x * 0.4), "atan": lax.atan, "sinh": lax.sinh, "cosh": lax.cosh,
    "asinh": lax.asinh, "acosh": lambda x: lax.acosh(lax.abs(x) + 1.0625),
    "atanh": lambda x: lax.atanh(x * 0.4), "erf": lax.erf, "erfc": lax.erfc,
    "is_finite": lambda x: lax.is_finite(lax.log(x)),
    "round_even": lambda x: lax.round(x * 2.0, 1), "round_away": lambda x: lax.round(x * 2.0),
    "stop_gradient": lax.stop_gradient, "square": lambda x: x ** 2,
    "integer_pow_5": lambda x: lax.integer_pow(x, 5),
    "integer_pow_neg": lambda x: lax.integer_pow(x + 3.0, -2),
    "integer_pow_0": lambda x: lax.integer_pow(x, 0),
    "softmax": lambda x: fx.nn.softmax(x, axis=-1), "log_softmax": fx.nn.log_softmax,
    "relu": fx.nn.relu, "gelu": fx.nn.gelu, "softplus": fx.nn.softplus,
}
BINARY_FLOAT = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div,
    "pow": lambda x, y: lax.pow(lax.abs(x) + 0.1, y), "max": lax.max, "min": lax.min,
    "rem": lambda x, y: lax.rem(x, y + 3.0), "atan2": lax.atan2, "eq": lambda x, y: x == x,
    "ne": lambda x, y: x != y, "lt": lax.lt, "le": lax.le, "gt": lax.gt, "ge": lax.ge,
    "scalar_broadcast": lambda x, y: x * 2.0 + 1.0,
    "clamp": lambda x, y: lax.clamp(-0.5, x, y),
    "where": lambda x, y: fnp.where(x > y, x, y),
}
BINARY_INT = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul, "max": lax.max, "min": lax.min,
    "div": lambda x, y: lax.div(x, fnp.where(y == 0, 7, y)),
    "rem": lambda x, y: lax.rem(x, fnp.where(y == 0, 7, y)),
    "and": lax.bitwise_and, "or": lax.bitwise_or, "xor": lax.bitwise_xor,
    "not": lambda x, y: lax.bitwise_not(x), "neg_abs_sign": lambda x, y: -lax.abs(x) * lax.sign(y),
    "eq": lax.eq, "ne": lax.ne, "lt": lax.lt, "ge": lax.ge,
    "shift_left": lambda x, y: lax.shift_left(x, lax.abs(y) % 40),
    "shift_right_logical": lambda x, y: lax.shift_right_logical(x, lax.abs(y) % 40),
    "integer_pow": lambda x, y: lax.integer_pow(x, 3),
    "to_float": lambda x, y: lax.convert_element_type(x, np.float32) / 3.0,
    "select_n": lambda x, y: lax.select_n(lax.clamp(-1, x % 5, 3), x, y, x * y),
    "clamp": lambda x, y: lax.clamp(-3, x, 4),
}
BINARY_BOOL = {
    "and": lax.bitwise_and, "or": lax.bitwise_or, "xor": lax.bitwise_xor,
    "not": lambda x, y: lax.bitwise_not(x), "eq": lax.eq, "lt": lax.lt, "ge": lax.ge,
    "select": lambda x, y: lax.select(x, y, x), "to_float": lambda x, y: x.astype(np.float32),
    "to_int": lambda x, y: x.astype(np.int32) + y.astype(np.int32),
}

W = rng.standard_normal((4, 6)).astype(np.float32)
IDX = np.array([2, 0, 3, 3, 1], np.int32)
KERNEL_OIHW = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
KERNEL_HWIO = rng.standard_normal((3, 3, 2, 4)).astype(np.float32)
KERNEL_GROUPED = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
_RNG_AFTER_IMPORT = rng.bit_generator.state


@pytest.fixture(autouse=True)
def _inputs_independent_of_test_order():
    """Each test draws its inputs from the state ``rng`` has after the module's own draws:
    what a test compares does not depend on which tests ran before it, so a row that fails
    in a whole run fails alone too."""
    rng.bit_generator.state = _RNG_AFTER_IMPORT


def _at(x):
    return fnp.asarray(x).at


def _nhwc_conv(x):
    return lax.conv_general_dilated(x, KERNEL_HWIO, (2, 1), ((1, 1), (0, 2)),
                                    rhs_dilation=(1, 2),
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _pool(kind, dims, strides, padding):
    init, op = {"max": (-np.inf, lax.max), "min": (np.inf, lax.min), "sum": (0.0, lax.add)}[kind]
    return lambda x: lax.reduce_window(x, np.float32(init), op, dims, strides, padding)


def _scan_cumulative(x):
    return lax.scan(lambda c, row: (c + row, c * row), fnp.zeros(x.shape[1:], x.dtype), x)


def _scan_fixed(x, reverse=False):
    def step(c, xt):
        h = fnp.tanh(c @ W[:, :4] + xt)
        return h, h.sum(axis=-1)

    return lax.scan(step, x, fnp.ones((6, 4), np.float32) * 0.1, reverse=reverse)


def _while(x):
    return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5 + 0.25),
                          (0, x))[1]


@fx.custom_jvp
def _custom(x):
    return fnp.sin(x) * 2.0


_custom.defjvp(lambda p, t: (_custom(p[0]), 2.0 * fnp.cos(p[0]) * t[0]))


@fx.custom_vjp
def _custom_v(x):
    return x * 3.0


_custom_v.defvjp(lambda x: (x * 3.0, None), lambda _, g: (g * 3.0,))

CASES = [
    *[Case(f"f32_{n}", fn, (f32(4),)) for n, fn in UNARY_FLOAT.items()],
    *[Case(f"f32_{n}", fn, (f32(4), f32(4))) for n, fn in BINARY_FLOAT.items()],
    *[Case(f"i32_{n}", fn, (i32(4), i32(4))) for n, fn in BINARY_INT.items()],
    *[Case(f"bool_{n}", fn, (boolean(4), boolean(4))) for n, fn in BINARY_BOOL.items()],
    Case("f32_to_bool_int", lambda x: (x.astype(bool), (x * 4).astype(np.int32)), (f32(4),)),
    Case("f64_ops", lambda x: fnp.exp(x) * x - 1.0,
         (lambda b: rng.standard_normal((b, 3)),)),
    # structural
    Case("broadcast_in_dim", lambda x: x[:, None, :] + fnp.zeros((1, 2, 1), np.float32),
         (f32(4),)),
    Case("broadcast_to_batch", lambda x: fnp.broadcast_to(x[:, :1], x.shape) * 2.0, (f32(4),)),
    Case("reshape_keep_batch", lambda x: x.reshape(x.shape[0], 2, 6), (f32(3, 4),)),
    Case("reshape_fold_batch", lambda x: x.reshape(-1) * 2.0, (f32(3, 4),)),
    Case("reshape_unfold", lambda x: x.reshape(-1, 2).reshape(x.shape[0], 12), (f32(3, 4),)),
    Case("transpose", lambda x: fnp.transpose(x, (2, 0, 1)), (f32(3, 4),)),
    Case("squeeze_expand", lambda x: fnp.expand_dims(fnp.squeeze(x, 1), 2), (f32(1, 4),)),
    Case("concatenate", lambda x, y: fnp.concatenate([x, y, x], axis=1), (f32(2), f32(3))),
    Case("concat_batch", lambda x: fnp.concatenate([x, x * 2.0], axis=0), (f32(3),)),
    Case("slice", lambda x: x[:, 1:4:2, ::-1], (f32(5, 3),)),
    Case("slice_batch", lambda x: x[1:] - x[:-1], (f32(3),)),
    Case("rev", lambda x: lax.rev(x, (0, 1)), (f32(3),)),
    Case("dynamic_slice", lambda x, i: lax.dynamic_slice(x, (0, i), (x.shape[0], 3)),
         (f32(6), np.array(4, np.int32))),
    Case("dynamic_update_slice", lambda x, i: lax.dynamic_update_slice(
        x, fnp.ones((2, 3), np.float32), (0, i)), (f32(6), np.array(2, np.int32))),
    Case("dynamic_update_slice_batch", lambda x, i: lax.dynamic_update_slice(
        x, fnp.ones((2, 3), np.float32), (i, 1)), (f32(6), np.array(-1, np.int32))),
    Case("pad", lambda x: lax.pad(x, np.float32(-1), ((0, 0, 0), (2, -1, 0))), (f32(5),)),
    Case("pad_interior", lambda x: lax.pad(x, np.float32(5), ((0, 0, 0), (1, -2, 2))),
         (f32(4),)),
    Case("scatter_add", lambda x: _at(x)[:, IDX].add(1.5), (f32(4),)),
    Case("scatter_mul_min_max", lambda x: (_at(x)[:, IDX].multiply(2.0), _at(x)[:, IDX].min(0.0),
                                           _at(x)[:, IDX + 1].max(0.5, mode="drop")), (f32(4),)),
    Case("scatter_batch_rows", lambda x, i, u: _at(x)[i].add(u),
         (f32(3), lambda b: rng.integers(0, b, (b,)), f32(3)), dynamic=False),
    Case("scatter_set", lambda x, u: _at(x)[:, np.array([3, 1, 3, 0, 1])].set(u[:, :5]),
         (f32(4), f32(6))),
    Case("scatter_set_drop", lambda x: _at(x)[:, np.array([5, 1, -9, 1])].set(
        fnp.arange(4, dtype=np.float32), mode="drop"), (f32(4),)),
    Case("scatter_set_rows", lambda x, i: _at(x)[i].set(7.0, mode="clip"),
         (i32(3), lambda b: np.array([0, b + 3, 1], np.int32)), dynamic=False),
    Case("sort", lambda x: (fnp.sort(x, axis=1), fnp.sort(x, axis=0)), (f32(5),)),
    Case("argsort_ties", lambda x: fnp.argsort(x, axis=1), (i32(8, lo=0, hi=3),)),
    Case("sort_bool", lambda x: fnp.sort(x, axis=1), (boolean(6),)),
    Case("take", lambda x: fnp.take(x, IDX, axis=1), (f32(4),)),
    Case("take_rows", lambda x, i: x[i], (f32(4), lambda b: rng.integers(0, b, (b,)))),
    Case("take_clip", lambda x: fnp.take(x, IDX + 2, axis=1, mode="clip"), (f32(4),)),
    Case("take_fill", lambda x: fnp.take(x, IDX + 2, axis=1, mode="fill", fill_value=-7.0),
         (f32(4),)),
    Case("take_along_axis", lambda x, i: fnp.take_along_axis(x, i, axis=1),
         (f32(4), lambda b: rng.integers(0, 4, (b, 2))), dynamic=False),
    Case("iota", lambda x: x + fnp.arange(x.shape[0], dtype=np.float32)[:, None], (f32(4),)),
    Case("iota_int", lambda x: fnp.arange(x.shape[1]) * 2 + x, (i32(4),)),
    Case("cumsum", lambda x: (fnp.cumsum(x, axis=1), lax.cumsum(x, axis=1, reverse=True)),
         (f32(4),)),
    Case("cumulative", lambda x: (lax.cumprod(x, axis=1), lax.cummax(x, axis=1),
                                  lax.cummin(x, axis=1, reverse=True),
                                  lax.cumlogsumexp(x, axis=1)), (f32(7),)),
    Case("cumulative_int", lambda x: (lax.cummax(x, axis=1), lax.cumprod(x % 3, axis=1,
                                                                          reverse=True)),
         (i32(5),)),
    # reductions
    Case("reductions", lambda x: (x.sum(1), x.max(1), x.min(0), fnp.prod(x, 1), x.mean(1),
                                  x.mean()),
         (f32(4),)),
    Case("reductions_int", lambda x: (x.sum(1), x.max(1), x.min(1)), (i32(4),)),
    Case("reductions_bool", lambda x: (x.any(1), x.all(1), lax.reduce_xor(x, (1,)),
                                       lax.reduce_max(x, (1,))), (boolean(4),)),
    Case("argmax_argmin", lambda x: (fnp.argmax(x, 1), fnp.argmin(x, 0).astype(np.int32)),
         (f32(4),)),
    Case("argmax_bool", lambda x: fnp.argmax(x, 1), (boolean(4),)),
    # contractions
    Case("matmul", lambda x: x @ W, (f32(4),)),
    Case("matmul_nd", lambda x: x @ W, (f32(2, 4),)),
    Case("matmul_transposed", lambda x: lax.dot_general(x, W.T, (((1,), (1,)), ((), ()))),
         (f32(4),)),
    Case("matvec", lambda x: x @ W[:, 0], (f32(4),)),
    Case("batched_matmul", lambda x, y: fnp.einsum("bij,bjk->bik", x, y),
         (f32(2, 3), f32(3, 4))),
    Case("einsum_general", lambda x: fnp.einsum("bij,kj->bki", x, np.ones((4, 3), np.float32)),
         (f32(2, 3),)),
    Case("dot_int", lambda x: x @ np.arange(8, dtype=np.int32).reshape(4, 2), (i32(4),)),
    # convolutions and pooling
    Case("conv_nchw", lambda x: lax.conv(x, KERNEL_OIHW, (1, 1), "SAME"), (f32(2, 6, 5),)),
    Case("conv_nhwc_strided_dilated", _nhwc_conv, (f32(7, 8, 2),)),
    Case("conv_grouped", lambda x: lax.conv_general_dilated(
        x, KERNEL_GROUPED, (1, 1), "VALID", feature_group_count=2), (f32(2, 5, 5),)),
    Case("conv_transpose", lambda x: lax.conv_transpose(
        x, KERNEL_HWIO, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
         (f32(4, 5, 2),)),
    Case("conv_lhs_dilated", lambda x: lax.conv_general_dilated(
        x, KERNEL_OIHW, (1, 1), ((2, 1), (0, 0)), lhs_dilation=(2, 3)), (f32(2, 4, 3),)),
    Case("max_pool_nhwc", _pool("max", (1, 2, 2, 1), (1, 2, 2, 1), "VALID"), (f32(4, 6, 3),)),
    Case("max_pool_padded", _pool("max", (1, 1, 3, 3), (1, 1, 1, 1), "SAME"), (f32(2, 4, 5),)),
    Case("min_pool", _pool("min", (1, 3), (1, 2), ((0, 0), (1, 1))), (f32(7),)),
    Case("sum_pool", _pool("sum", (1, 2, 2, 1), (1, 1, 2, 1), ((0, 0), (1, 0), (0, 1), (0, 0))),
         (f32(4, 4, 2),)),
    Case("sum_pool_2d", _pool("sum", (1, 2), (1, 2), "VALID"), (f32(6),)),
    # control flow and calls
    Case("cond", lambda p, x: lax.cond(p > 0, lambda v: v * 2.0, lambda v: -v, x),
         (np.array(1.0, np.float32), f32(3))),
    Case("cond_false", lambda p, x: lax.cond(p > 0, lambda v: v * 2.0, lambda v: -v, x),
         (np.array(-1.0, np.float32), f32(3))),
    *[Case(f"switch_{i}", lambda i, x: lax.switch(i, [lambda v: v + 1.0, lambda v: v * v,
                                                      lambda v: fnp.sin(v)], x),
           (np.array(i, np.int32), f32(3))) for i in (0, 1, 2)],
    Case("while", _while, (f32(3),)),
    Case("fori_loop", lambda x: lax.fori_loop(0, 4, lambda i, c: c * 0.5 + i, x), (f32(3),)),
    Case("scan", _scan_fixed, (f32(4),)),
    Case("scan_reverse", lambda x: _scan_fixed(x, reverse=True), (f32(4),)),
    Case("scan_over_batch", _scan_cumulative, (f32(3),)),
    Case("grad", fx.grad(lambda x: fnp.sum(x * fnp.sin(x))), (f32(3),)),
    Case("jit_call", fx.jit(lambda x: fnp.tanh(x) + 1.0), (f32(3),)),
    Case("custom_jvp", _custom, (f32(3),)),
    Case("custom_vjp", _custom_v, (f32(3),)),
    Case("checkpoint", fx.checkpoint(lambda x: fnp.sin(fnp.sin(x))), (f32(3),)),
    Case("closed_over_and_pytree", lambda d: {"y": d["a"] @ W + d["b"][:, :1]},
         (lambda b: {"a": f32(4)(b), "b": f32(2)(b)},)),
    Case("static_shapes", lambda x: x.reshape(-1)[: x.shape[0]], (f32(3),), dynamic=False),
]


def _record_case(record) -> Case:
    """The record's primitive on float32 operands (int32 where it takes no floats)."""
    draw = f32(4) if np.dtype(np.float32) in record.kinds else i32(4)
    return Case(f"record_{record.name}", record.function, (draw,) * record.nargs)


# Every elementwise record that names an ONNX operator or formula (its rule is derived from the
# record: a new one is checked without a line here).
CASES += [_record_case(r) for r in records() if r.onnx is not None]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rule(case):
    check(case.fn, case.make, dynamic=case.dynamic, tol=case.tol)


def _primitives_of(jaxpr, found: set) -> None:
    for eqn in jaxpr.eqns:
        found.add(eqn.primitive)
        for sub in subjaxprs(eqn):
            _primitives_of(sub.jaxpr if hasattr(sub, "jaxpr") else sub, found)


def test_every_rule_is_in_the_table():
    found: set[Primitive] = set()
    for case in CASES:
        _primitives_of(fx.make_jaxpr(case.fn)(*case.make(BATCH)).jaxpr, found)
    untested = sorted(p.name for p in onnx_rules if p not in found)
    assert not untested, f"ONNX rules without a case in CASES: {untested}"


# --- models -----------------------------------------------------------------------------------


def test_stax_mlp():
    from fx.example_libraries import stax

    init, apply = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(16), stax.Tanh,
                              stax.Dense(10), stax.LogSoftmax)
    _, params = init(fx.random.PRNGKey(0), (-1, 64))
    model = check(lambda x: apply(params, x), lambda b: (f32(64)(b),), tol=1e-4)
    ops = {n.op_type for n in model.graph.node}
    assert "MatMul" in ops and "Einsum" not in ops, ops


def test_stax_cnn(tmp_path):
    from fx.example_libraries import stax

    init, apply = stax.serial(
        stax.Conv(8, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
        stax.Conv(8, (3, 3), strides=(2, 2)), stax.Relu, stax.AvgPool((2, 2)),
        stax.Flatten, stax.Dense(10), stax.Softmax)
    _, params = init(fx.random.PRNGKey(1), (-1, 12, 12, 1))
    fn = fx.jit(lambda x: apply(params, x))
    model = check(fn, lambda b: (f32(12, 12, 1)(b),), tol=1e-4)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert model.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert len(model.graph.initializer) >= 6  # the weights, closed over
    assert {"Conv", "MaxPool", "AveragePool", "MatMul"} <= {n.op_type for n in model.graph.node}
    path = tmp_path / "cnn.onnx"
    save_onnx(path, fn, f32(12, 12, 1)(2))
    assert onnx.load(str(path)).graph.node


def test_a_body_inlined_twice_shares_its_weights():
    big = rng.standard_normal((64, 64)).astype(np.float32)
    layer = fx.jit(lambda h: fnp.tanh(h @ big))
    model = check(lambda x: layer(layer(x)), lambda b: (f32(64)(b),), tol=1e-4)
    assert sum(np.prod(t.dims) == 64 * 64 for t in model.graph.initializer) == 1


def test_shape_dtype_structs_stand_for_the_examples():
    spec = fx.ShapeDtypeStruct((2, 4), np.float32)
    model = to_onnx(lambda x: fnp.tanh(x @ W), spec)
    onnx.checker.check_model(model, full_check=True)
    x = f32(4)(9)
    np.testing.assert_allclose(run_onnx(model, (x,))[0], np.tanh(x @ W), rtol=1e-5, atol=1e-5)


def test_scan_rnn():
    wx = rng.standard_normal((3, 8)).astype(np.float32) * 0.5
    wh = rng.standard_normal((8, 8)).astype(np.float32) * 0.3
    wo = rng.standard_normal((8, 2)).astype(np.float32)

    def rnn(xs):  # xs: (batch, time, features); scan over time
        def step(h, x):
            h = fnp.tanh(x @ wx + h @ wh)
            return h, h @ wo

        h0 = fnp.zeros((xs.shape[0], 8), np.float32)
        h, ys = lax.scan(step, h0, fnp.swapaxes(xs, 0, 1))
        return h, fnp.swapaxes(ys, 0, 1)

    model = check(rnn, lambda b: (f32(6, 3)(b),), tol=1e-4)
    assert any(n.op_type == "Loop" for n in model.graph.node)


# --- errors -----------------------------------------------------------------------------------


def test_unsupported_primitive_names_it_its_shapes_and_the_line():
    def f(x):
        return fnp.linalg.cholesky(x)  # the line the error points at

    with pytest.raises(ExportError) as e:
        to_onnx(f, np.eye(3, dtype=np.float32)[None], dynamic_batch=False)
    msg = str(e.value)
    assert "'cholesky'" in msg and "f32[1,3,3]" in msg and "test_onnx.py" in msg, msg
    assert "LAPACK" in msg  # the listed reason


def test_a_rule_that_refuses_names_the_equation():
    kernel = np.ones((2, 1, 3, 3), np.int32)
    with pytest.raises(ExportError, match=r"'conv_general_dilated' \(operands i32.*floating"):
        to_onnx(lambda x: lax.conv(x, kernel, (1, 1), "SAME"), np.ones((2, 1, 5, 5), np.int32))


def test_refuses_what_is_not_batch_polymorphic():
    with pytest.raises(ExportError, match="dynamic_batch=False"):
        to_onnx(lambda x: x[::2], np.ones((4, 3), np.float32))
    with pytest.raises(ExportError, match="dynamic_batch=False"):  # weights passed as inputs
        to_onnx(lambda x, w: x @ w, np.ones((4, 3), np.float32), np.ones((3, 2), np.float32))
    model = to_onnx(lambda x: x[::2], np.ones((4, 3), np.float32), dynamic_batch=False)
    assert model.graph.output[0].type.tensor_type.shape.dim[0].dim_value == 2


def test_refuses_a_constant_that_follows_the_batch():
    # take_along_axis builds NumPy row indices arange(x.shape[0]): a closed-over constant.
    args = (np.ones((4, 3), np.float32), np.zeros((4, 2), np.int32))
    with pytest.raises(ExportError, match="closed-over constant.*dynamic_batch=False"):
        to_onnx(lambda x, i: fnp.take_along_axis(x, i, axis=1), *args)


def test_rejects_old_opsets():
    with pytest.raises(ValueError, match="opset"):
        to_onnx(lambda x: x, np.ones(3, np.float32), opset=11)


# --- coverage ---------------------------------------------------------------------------------


def _all_primitives() -> dict[str, Primitive]:
    found: dict[str, Primitive] = {}
    for pkg in (fx, importlib.import_module("fx.interpreters")):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            try:
                mod = importlib.import_module(info.name)
            except ImportError:
                continue
            for value in vars(mod).values():
                if isinstance(value, Primitive):
                    found.setdefault(value.name, value)
    return found


def test_every_primitive_is_exportable_or_listed():
    prims = _all_primitives()
    assert len(prims) > 100
    missing = sorted(n for n, p in prims.items()
                     if p not in onnx_rules and p not in body_param and p not in NOT_EXPORTABLE)
    assert not missing, f"primitives with no ONNX rule and no reason in NOT_EXPORTABLE: {missing}"
    both = sorted(p.name for p in NOT_EXPORTABLE if p in onnx_rules)
    assert not both, f"listed as not exportable but have a rule: {both}"
    assert all(reason.strip() for reason in NOT_EXPORTABLE.values())


# --- slower sweeps (-m slow) ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("opset", [18, 19, 21])
def test_table_at_other_opsets_and_batch_sizes(opset):
    failures = []
    for export_batch, run_batch in ((2, 17), (6, 3)):
        for case in CASES:
            try:
                check(case.fn, case.make, case.dynamic, case.tol, opset=opset,
                      batches=(export_batch, run_batch))
            except Exception as e:  # collect all, report together
                failures.append(f"{case.name} at batch {export_batch}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)


# The exported models are valid ONNX, but onnxruntime's CPU provider has only float32 kernels
# for these functions ("Could not find an implementation for Acos(7)").
NO_FLOAT64_KERNEL = {"acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "erf", "erfc",
                     "sinh", "tan"}


# onnxruntime's CPU provider has no float16 kernels for most of these operators: it runs a
# chain of them in float32 and rounds to float16 only where the chain ends, where fx (as jax)
# rounds every operation's result. So a float16 row agrees to the tolerance only where its
# intermediate roundings move the result little: acosh's argument keeps off 1, where acosh's
# slope is unbounded (at |x| + 1.0, |x| < 1e-3 rounded to 1.0 gave 0 against ORT's 0.014-0.03).
@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.float16])
@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
def test_unary_in_other_float_dtypes(name, dtype):
    if dtype == np.float16 and name.endswith("_tiny"):
        pytest.skip("1e-6 underflows and 1e6 overflows in float16")
    if dtype == np.float64 and name in NO_FLOAT64_KERNEL:
        with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
            check(UNARY_FLOAT[name], lambda b: (f32(4)(b).astype(dtype),))
        return
    tol = 1e-2 if dtype == np.float16 else 1e-10
    check(UNARY_FLOAT[name], lambda b: (f32(4)(b).astype(dtype),), tol=tol)
