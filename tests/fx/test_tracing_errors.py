"""Errors a user meets when Python code and tracing collide: data-dependent control flow,
escaped tracers, in-place updates, conversions of traced values, unhashable arrays, and shape
and dtype errors from fx.numpy. Each message must name the operation and say what to do."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx import ConcretizationTypeError, UnexpectedTracerError

# The messages name the default mode's dtypes.
pytestmark = pytest.mark.default_mode


def relu_branchy(x):
    if x > 0:
        return x * x
    return -3.0 * x


# --- Python control flow on traced values ---------------------------------------------------------


def test_if_under_make_jaxpr_names_the_argument_and_the_fixes():
    with pytest.raises(ConcretizationTypeError) as info:
        fx.make_jaxpr(relu_branchy)(1.0)
    msg = str(info.value)
    assert "bool() of a traced bool[] value inside make_jaxpr" in msg
    assert "argument 'x' (f32[])" in msg
    assert "fx.lax.cond" in msg and "static_argnums" in msg and "fx.numpy.where" in msg


def test_concretization_error_names_pytree_leaves():
    def f(params, scale):
        return params["w"] * 2 if params["w"] > scale else params["b"]

    with pytest.raises(ConcretizationTypeError, match=r"argument 'params\['w'\]' \(f32\[\]\), "
                                                     r"argument 'scale' \(f32\[\]\)"):
        fx.make_jaxpr(f)({"w": 1.0, "b": 2.0}, 0.5)


def test_concretization_error_is_a_type_error():
    assert issubclass(ConcretizationTypeError, TypeError)


@pytest.mark.parametrize("convert,what", [
    (int, "int()"), (float, "float()"), (bool, "bool()"), (np.asarray, "np.asarray"),
    (lambda t: t.item(), "item()"), (lambda t: t.tolist(), "tolist()"),
    (lambda t: range(t), "__index__"),
])
def test_conversions_of_traced_values(convert, what):
    arg = np.int32(3) if what == "__index__" else np.float32(3.0)
    with pytest.raises(ConcretizationTypeError) as info:
        fx.make_jaxpr(lambda t: convert(t))(arg)
    assert what in str(info.value)
    assert "argument 't'" in str(info.value)


def test_conversions_of_concrete_arrays_work():
    x = fnp.asarray(np.float32(2.5))
    assert float(x) == 2.5 and int(x) == 2 and bool(x)
    assert np.asarray(fnp.ones(2)).tolist() == [1.0, 1.0]
    assert list(range(fnp.asarray(np.int32(3)))) == [0, 1, 2]
    with pytest.raises(TypeError, match="only integer arrays can be used as an index, got "
                                        "float32"):
        range(x)


@pytest.mark.parametrize("x", [2.0, -1.5])
def test_python_control_flow_works_under_grad_and_jvp(x):
    # Without staging, values stay concrete, so each call takes one branch; its derivative
    # is the derivative of that branch.
    want = 2 * x if x > 0 else -3.0
    assert float(fx.grad(relu_branchy)(x)) == pytest.approx(want)
    assert float(fx.grad(relu_branchy)(x)) == pytest.approx(float(jax.grad(relu_branchy)(x)))
    y, t = fx.jvp(relu_branchy, (x,), (1.0,))
    assert float(y) == pytest.approx(relu_branchy(x)) and float(t) == pytest.approx(want)
    assert float(fx.grad(fx.grad(relu_branchy))(x)) == pytest.approx(2.0 if x > 0 else 0.0)
    _, pull = fx.vjp(relu_branchy, x)
    assert float(pull(1.0)[0]) == pytest.approx(want)


def test_python_loops_on_values_work_under_grad():
    def newton_sqrt(a):
        x = a
        while abs(x * x - a) > 1e-6:  # data-dependent trip count
            x = 0.5 * (x + a / x)
        return x

    g = fx.grad(newton_sqrt)(4.0)
    # The derivative of the unrolled iterations, close to d sqrt(a)/da = 1/4.
    assert float(g) == pytest.approx(0.25, abs=1e-3)


def test_control_flow_under_vmap_is_a_clear_error():
    with pytest.raises(ConcretizationTypeError, match=r"vmap: bool\(\) of a batched bool\[\] "
                                                     r"value.*fx.numpy.where"):
        fx.vmap(relu_branchy)(fnp.ones(3))
    # An unbatched value is concrete: branching on it is fine.
    out = fx.vmap(lambda x, s: x * 2 if s > 0 else x, in_axes=(0, None))(fnp.ones(3), 1.0)
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0, 2.0])


def test_control_flow_under_grad_of_make_jaxpr_is_an_error():
    with pytest.raises(ConcretizationTypeError, match="make_jaxpr"):
        fx.make_jaxpr(fx.grad(relu_branchy))(1.0)


def test_static_argnums_allows_python_control_flow():
    def f(x, n):
        for _ in range(n):
            x = fnp.sin(x)
        return x if n > 1 else -x

    assert len(fx.make_jaxpr(f, static_argnums=(1,))(1.0, 3).eqns) == 3
    assert len(fx.make_jaxpr(f, static_argnums=(1,))(1.0, 1).eqns) == 2


def test_static_argnums_keeps_argument_names_in_errors():
    with pytest.raises(ConcretizationTypeError, match="argument 'y'"):
        fx.make_jaxpr(lambda n, y: y if y > n else n, static_argnums=(0,))(1, 2.0)


# --- escaped tracers ------------------------------------------------------------------------------


def _leak(transform):
    box = []

    def f(x):
        box.append(x)
        return x * 2

    transform(f)
    return box[0]


LEAKS = {
    "make_jaxpr": lambda f: fx.make_jaxpr(f)(fnp.ones(3)),
    "grad": lambda f: fx.grad(lambda x: f(x))(1.0),
    "jvp": lambda f: fx.jvp(f, (fnp.ones(3),), (fnp.ones(3),)),
    "vmap": lambda f: fx.vmap(f)(fnp.ones(3)),
}


@pytest.mark.parametrize("kind", sorted(LEAKS))
def test_escaped_tracer_is_reported_where_it_is_used(kind):
    leaked = _leak(LEAKS[kind])
    uses = [
        lambda: leaked + 1,
        lambda: fnp.sin(leaked),
        lambda: lax.add(leaked, leaked),
        lambda: np.asarray(leaked),
        lambda: fx.make_jaxpr(lambda y: y + leaked)(1.0),
        lambda: fx.grad(lambda y: lax.reduce_sum(y * leaked, tuple(range(leaked.ndim))))(1.0),
    ]
    for use in uses:
        with pytest.raises(UnexpectedTracerError, match=r"value created inside .*which has "
                                                       r"finished.*escaped its transformation"):
            use()


def test_escaped_tracer_message_names_the_transformation_and_type():
    leaked = _leak(LEAKS["make_jaxpr"])
    with pytest.raises(UnexpectedTracerError, match=r"a f32\[3\] value created inside "
                                                   r"make_jaxpr, which has finished"):
        leaked * 3
    assert "f32[3]" in repr(leaked)  # printing a leaked tracer is harmless


# --- immutability and hashing ---------------------------------------------------------------------


def test_item_assignment_on_arrays_suggests_at():
    x = fnp.ones(3)
    with pytest.raises(TypeError, match=r"fx arrays are immutable.*x\.at\[idx\]\.set\(y\)"):
        x[0] = 1.0
    host = np.asarray(x)
    with pytest.raises(ValueError, match="read-only"):
        host[0] = 5.0  # the numpy view of an Array is read-only too
    np.testing.assert_array_equal(np.asarray(x), [1.0, 1.0, 1.0])


@pytest.mark.parametrize("transform", [
    lambda f: fx.make_jaxpr(f)(fnp.ones(3)),
    lambda f: fx.grad(lambda x: lax.reduce_sum(f(x), (0,)))(fnp.ones(3)),
    lambda f: fx.vmap(f)(fnp.ones((2, 3))),
], ids=["make_jaxpr", "grad", "vmap"])
def test_item_assignment_on_tracers_suggests_at(transform):
    def f(x):
        x[0] = 1.0
        return x

    with pytest.raises(TypeError, match=r"fx traced values are immutable.*\.at\[idx\]\.set"):
        transform(f)


def test_arrays_and_tracers_are_unhashable():
    with pytest.raises(TypeError, match="unhashable"):
        hash(fnp.ones(2))
    with pytest.raises(TypeError, match="unhashable"):
        {fnp.ones(2): 1}  # noqa: B018
    with pytest.raises(TypeError, match="unhashable"):
        fx.make_jaxpr(lambda x: hash(x))(1.0)


def test_len_and_iteration_of_scalars():
    with pytest.raises(TypeError, match=r"len\(\) of unsized object"):
        len(fnp.asarray(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d"):
        fx.make_jaxpr(lambda x: list(x))(1.0)
    assert [float(v) for v in fnp.arange(3.0)] == [0.0, 1.0, 2.0]


# --- shape and dtype errors from fx.numpy ---------------------------------------------------------


@pytest.mark.parametrize("call,err,message", [
    (lambda: fnp.add(fnp.ones(3), fnp.ones(4)), TypeError,
     r"fx.numpy.add: operands could not be broadcast together with shapes \(3,\) \(4,\)"),
    (lambda: fnp.ones((2, 3)) * fnp.ones((4, 3)), TypeError,
     r"fx.numpy.multiply: .* shapes \(2, 3\) \(4, 3\)"),
    (lambda: fnp.where(fnp.ones(3) > 0, fnp.ones(2), 0.0), ValueError,
     r"fx.numpy.where: .* shapes \(3,\) \(2,\) \(\)"),
    (lambda: fnp.maximum(fnp.ones(3), "a"), TypeError,
     r"fx.numpy.maximum: expected an array, scalar or nested list, got str"),
    (lambda: fnp.bitwise_or(fnp.ones(2), fnp.ones(2)), TypeError,
     r"fx.numpy.bitwise_or requires integer or bool operands, got f32\[2\], f32\[2\]"),
    (lambda: lax.add(fnp.ones(3, np.float32), fnp.ones(3, np.int32)), TypeError,
     r"add: operands must have the same dtype.*f32\[3\], i32\[3\]"),
    (lambda: lax.mul(fnp.ones(3), fnp.ones(4)), TypeError,
     r"mul: operands must have equal shapes .*use fx.numpy for broadcasting"),
])
def test_numpy_and_lax_errors_name_the_function_and_shapes(call, err, message):
    with pytest.raises(err, match=message):
        call()


def test_errors_inside_transformations_are_the_same():
    def f(x):
        return fnp.add(x, fnp.ones(4))

    calls = [lambda: fx.make_jaxpr(f)(fnp.ones(3)), lambda: fx.vmap(f)(fnp.ones((2, 3))),
             lambda: fx.jvp(f, (fnp.ones(3),), (fnp.ones(3),)), lambda: fx.grad(f)(fnp.ones(3))]
    for call in calls:
        with pytest.raises(TypeError, match=r"fx.numpy.add: .* shapes \(3,\) \(4,\)"):
            call()


def test_grad_errors_name_the_function():
    def loss(x):
        return x * 2

    with pytest.raises(TypeError, match=r"grad requires a scalar output, but loss returned "
                                        r"f32\[3\]"):
        fx.grad(loss)(fnp.ones(3))
    with pytest.raises(TypeError, match=r"grad requires floating-point or complex inputs, but "
                                        r"argument 0 of loss has dtype int32"):
        fx.grad(loss)(np.int32(1))
    assert float(jax.grad(lambda x: x * 2)(1.0)) == float(fx.grad(loss)(1.0))
