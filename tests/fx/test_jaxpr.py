"""Tests of the IR: golden text of the jaxpr printer (JAX's format), the type checker on traced
and hand-built jaxprs, and make_jaxpr's options."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import fx
import fx.lax as lax
import fx.nn
import fx.numpy as fnp
from fx.avals import ShapedArray
from fx.core import Primitive
from fx.interpreters.eval import jaxpr_as_fun
from fx.jaxpr import (
    ClosedJaxpr,
    DropVar,
    Jaxpr,
    JaxprEqn,
    JaxprTypeError,
    Literal,
    Var,
    check_jaxpr,
)
from fx.lax.elementwise import add_p, mul_p, sin_p

# Golden text in the default mode's dtypes (Python scalars and NumPy data are 32-bit there).
pytestmark = pytest.mark.default_mode


def golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def f32(*shape):
    return ShapedArray(shape, np.float32)


def traced(f, *args, **kw):
    closed = fx.make_jaxpr(f, **kw)(*args)
    check_jaxpr(closed)
    return str(closed)


# --- golden printer tests on traced functions ---------------------------------------------------


def test_print_elementwise():
    got = traced(lambda x, y: fnp.sin(y) * x + 2.0, fnp.ones(8), fnp.ones(8))
    assert got == golden("""
        { lambda ; a:f32[8] b:f32[8]. let
            c:f32[8] = sin b
            d:f32[8] = mul c a
            e:f32[8] = add d 2.0:f32[]
          in (e,) }
    """)


def test_print_literals_keep_dtype():
    with fx.enable_x64():  # float64 data stays float64
        got = traced(lambda x, n: (x + 1, n * 2, n > 3), fnp.ones(2, np.float64), np.int32(1))
    assert got.splitlines()[:4] == golden("""
        { lambda ; a:f64[2] b:i32[]. let
            c:f64[2] = add a 1.0:f64[]
            d:i32[] = mul b 2:i32[]
            e:bool[] = gt b 3:i32[]
    """).splitlines()


def test_print_constvars_from_closure():
    c = fnp.arange(3.0)
    got = traced(lambda x: x * c + c, fnp.ones(3))
    assert got == golden("""
        { lambda a:f32[3]; b:f32[3]. let
            c:f32[3] = mul b a
            d:f32[3] = add c a
          in (d,) }
    """)
    closed = fx.make_jaxpr(lambda x: x * c)(fnp.ones(3))
    assert len(closed.consts) == 1
    np.testing.assert_array_equal(np.asarray(closed.consts[0]), [0.0, 1.0, 2.0])


def test_print_params():
    def f(x):
        y = lax.convert_element_type(x, np.int32)
        z = lax.broadcast_in_dim(x, (2, 3), (1,))
        return y, z, lax.integer_pow(x, 3)

    got = traced(f, fnp.ones(3))
    assert got.splitlines()[1:4] == [
        "    b:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] a",
        "    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] a",
        "    d:f32[3] = integer_pow[y=3] a",
    ]


def test_print_identity_and_constant_outputs():
    assert traced(lambda x: x, 1.0).splitlines() == ["{ lambda ; a:f32[]. let", "  in (a,) }"]
    assert traced(lambda x: 3.0, 1.0).endswith("in (3.0:f32[],) }")


def test_print_multiple_outputs_like_jax():
    got = traced(lambda x: (x, x + 1, {"a": x * 2}), fnp.ones(3))
    assert got == golden("""
        { lambda ; a:f32[3]. let
            b:f32[3] = add a 1.0:f32[]
            c:f32[3] = mul a 2.0:f32[]
          in (a, b, c) }
    """)


def test_print_mlp_loss():
    def loss(params, x):
        h = fnp.tanh(params["w1"] * x + params["b1"])
        h = fnp.maximum(h, 0.0)
        out = params["w2"] * h
        return lax.reduce_sum(out * out, (0,)) / 4

    params = {"w1": fnp.ones(4), "b1": fnp.zeros(4), "w2": fnp.ones(4)}
    # Dict leaves come in sorted-key order: b1, w1, w2, then x.
    assert traced(loss, params, fnp.ones(4)) == golden("""
        { lambda ; a:f32[4] b:f32[4] c:f32[4] d:f32[4]. let
            e:f32[4] = mul b d
            f:f32[4] = add e a
            g:f32[4] = tanh f
            h:f32[4] = max g 0.0:f32[]
            i:f32[4] = mul c h
            j:f32[4] = mul i i
            k:f32[] = reduce_sum[axes=(0,)] j
            l:f32[] = div k 4.0:f32[]
          in (l,) }
    """)
    batched = traced(fx.vmap(loss, in_axes=(None, 0)), params, fnp.ones((2, 4)))
    assert batched.splitlines()[0] == "{ lambda ; a:f32[4] b:f32[4] c:f32[4] d:f32[2,4]. let"
    assert "    n:f32[2] = reduce_sum[axes=(1,)] m" in batched
    # The gradient's jaxpr is typed and checks, and computes the same as the function.
    closed = fx.make_jaxpr(fx.grad(loss))(params, fnp.ones(4))
    check_jaxpr(closed)
    assert [str(a) for a in closed.out_avals] == ["f32[4]"] * 3
    x = fnp.asarray(np.linspace(-1, 1, 4, dtype=np.float32))
    direct = fx.grad(loss)(params, x)
    via_jaxpr = jaxpr_as_fun(closed)(params["b1"], params["w1"], params["w2"], x)
    for k, v in zip(["b1", "w1", "w2"], via_jaxpr):
        np.testing.assert_allclose(np.asarray(v), np.asarray(direct[k]), rtol=1e-6)


def test_print_matmul_mlp_loss():
    def loss(p, x, y):
        h = fx.nn.relu(fnp.tanh(x @ p["w1"] + p["b1"]))
        return fnp.mean((h @ p["w2"] - y) ** 2)

    params = {"w1": fnp.ones((3, 4)), "b1": fnp.zeros(4), "w2": fnp.ones((4, 2))}
    dot = "dot_general[dimension_numbers=(((1,), (0,)), ((), ())) precision=None " \
          "preferred_element_type=None]"
    assert traced(loss, params, fnp.ones((5, 3)), fnp.ones((5, 2))) == golden(f"""
        {{ lambda ; a:f32[4] b:f32[3,4] c:f32[4,2] d:f32[5,3] e:f32[5,2]. let
            f:f32[5,4] = {dot} d b
            g:f32[5,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(5, 4)] a
            h:f32[5,4] = add f g
            i:f32[5,4] = tanh h
            j:bool[5,4] = le i 0.0:f32[]
            k:f32[5,4] = broadcast_in_dim[broadcast_dimensions=() shape=(5, 4)] 0.0:f32[]
            l:f32[5,4] = select_n j i k
            m:f32[5,2] = {dot} l c
            n:f32[5,2] = sub m e
            o:f32[5,2] = integer_pow[y=2] n
            p:f32[] = reduce_sum[axes=(0, 1)] o
            q:f32[] = div p 10.0:f32[]
          in (q,) }}
    """)
    closed = fx.make_jaxpr(fx.grad(loss))(params, fnp.ones((5, 3)), fnp.ones((5, 2)))
    check_jaxpr(closed)
    assert [str(a) for a in closed.out_avals] == ["f32[4]", "f32[3,4]", "f32[4,2]"]


def test_print_variable_names_past_z():
    def f(x):
        for _ in range(27):
            x = fnp.sin(x)
        return x

    lines = traced(f, 1.0).splitlines()
    assert lines[25] == "    z:f32[] = sin y"
    assert lines[26] == "    ba:f32[] = sin z"
    assert lines[-1] == "  in (bb,) }"


# --- hand-built jaxprs --------------------------------------------------------------------------

# A two-output primitive local to these tests (the printer and checker must not care which).
split_p = Primitive("split2", multiple_results=True)
split_p.def_abstract_eval(lambda x: [x, x])
split_p.def_impl(lambda x: [x, x])

# A call-like primitive holding a jaxpr in its params.
call_p = Primitive("my_call", multiple_results=True)
call_p.def_abstract_eval(lambda *avals, jaxpr, name: list(jaxpr.out_avals))


def test_print_dropvar():
    a, b = Var(f32(3)), Var(f32(3))
    jaxpr = Jaxpr([], [a], [b], [JaxprEqn(split_p, [a], [DropVar(f32(3)), b], {})])
    check_jaxpr(jaxpr)
    assert str(jaxpr) == golden("""
        { lambda ; a:f32[3]. let
            _:f32[3] b:f32[3] = split2 a
          in (b,) }
    """)


def _nested():
    a, b = Var(f32(3)), Var(f32(3))
    inner = ClosedJaxpr(Jaxpr([], [a], [b], [JaxprEqn(sin_p, [a], [b], {})]), [])
    x, y, z = Var(f32(3)), Var(f32(3)), Var(f32(3))
    eqns = [JaxprEqn(call_p, [x], [y], {"jaxpr": inner, "name": "f"}),
            JaxprEqn(mul_p, [y, Literal(2.0, f32())], [z], {})]
    return Jaxpr([], [x], [z], eqns)


def test_print_nested_jaxpr():
    text = str(_nested())
    check_jaxpr(_nested())
    lines = text.splitlines()
    assert lines[0] == "{ lambda ; a:f32[3]. let"
    # The inner jaxpr is printed in place, deeper than the outer equations, and its variables
    # are named after the outer ones (no shadowing).
    inner = next(ln for ln in lines if "= sin c" in ln)
    assert inner.strip() == "d:f32[3] = sin c"
    assert len(inner) - len(inner.lstrip()) > 4
    assert "jaxpr={ lambda ; c:f32[3]. let" in text
    assert "    e:f32[3] = mul b 2.0:f32[]" in lines
    assert lines[-1] == "  in (e,) }"


def test_print_nested_params_are_indented():
    lines = str(_nested()).splitlines()
    eqn_start = next(i for i, ln in enumerate(lines) if "my_call[" in ln)
    eqn_end = next(i for i, ln in enumerate(lines) if ln.rstrip().endswith("] a"))
    for ln in lines[eqn_start + 1 : eqn_end]:  # the closing "] a" sits under the equation
        assert len(ln) - len(ln.lstrip()) > 4, ln


# --- the type checker ---------------------------------------------------------------------------


def _eqn(prim, ins, outs, **params):
    return JaxprEqn(prim, list(ins), list(outs), params)


def test_check_accepts_traced_jaxprs():
    fns = [
        (lambda x: fnp.sin(x) * 2.0, (fnp.ones(3),)),
        (lambda x, y: fnp.where(x > y, x, y), (fnp.ones(3), fnp.zeros((2, 3)))),
        (fx.grad(lambda x: fnp.tanh(x) * fnp.exp(x)), (1.5,)),
        (lambda x: fx.jvp(fnp.sin, (x,), (fnp.ones_like(x),)), (fnp.ones(2),)),
        (fx.vmap(lambda x, y: fnp.hypot(x, y), in_axes=(0, None)), (fnp.ones((4, 2)), 1.0)),
        (fx.hessian(lambda x: lax.reduce_sum(fnp.sin(x) ** 3, (0,))), (fnp.ones(3),)),
    ]
    for f, args in fns:
        check_jaxpr(fx.make_jaxpr(f)(*args))


def test_check_rejects_var_bound_twice():
    a, b = Var(f32(3)), Var(f32(3))
    jaxpr = Jaxpr([], [a], [b], [_eqn(sin_p, [a], [b]), _eqn(sin_p, [b], [b])])
    with pytest.raises(JaxprTypeError, match=r"variable \w+ is bound twice \(equation 1: sin\)"):
        check_jaxpr(jaxpr)
    with pytest.raises(JaxprTypeError, match=r"variable a is bound twice \(invars\)"):
        check_jaxpr(Jaxpr([], [a, a], [a], []))


def test_check_rejects_unbound_use():
    a, b, c = Var(f32(3)), Var(f32(3)), Var(f32(3))
    jaxpr = Jaxpr([], [a], [c], [_eqn(add_p, [a, b], [c])])
    with pytest.raises(JaxprTypeError, match=r"variable \w+ is used unbound \(equation 0: add\)"):
        check_jaxpr(jaxpr)
    with pytest.raises(JaxprTypeError, match=r"is used unbound \(outvars\)"):
        check_jaxpr(Jaxpr([], [a], [c], []))


def test_check_rejects_use_before_definition():
    a, b, c = Var(f32(3)), Var(f32(3)), Var(f32(3))
    jaxpr = Jaxpr([], [a], [c], [_eqn(sin_p, [b], [c]), _eqn(sin_p, [a], [b])])
    with pytest.raises(JaxprTypeError, match=r"used unbound \(equation 0: sin\)"):
        check_jaxpr(jaxpr)


def test_check_rejects_wrong_output_aval():
    a, b = Var(f32(3)), Var(f32(4))
    with pytest.raises(JaxprTypeError, match=r"equation 0: sin: outputs typed \['f32\[4\]'\] but "
                                             r"the primitive gives \['f32\[3\]'\]"):
        check_jaxpr(Jaxpr([], [a], [b], [_eqn(sin_p, [a], [b])]))
    c = Var(ShapedArray((3,), np.float64))
    with pytest.raises(JaxprTypeError, match=r"equation 0: sin: outputs typed \['f64\[3\]'\]"):
        check_jaxpr(Jaxpr([], [a], [c], [_eqn(sin_p, [a], [c])]))
    weak = Var(ShapedArray((3,), np.float32, weak_type=True))
    with pytest.raises(JaxprTypeError, match="equation 0: sin: outputs typed"):
        check_jaxpr(Jaxpr([], [a], [weak], [_eqn(sin_p, [a], [weak])]))


def test_check_rejects_wrong_input_dtype():
    a, b, c = Var(f32(3)), Var(ShapedArray((3,), np.float64)), Var(f32(3))
    with pytest.raises(JaxprTypeError, match=r"equation 0: add: abstract eval rejects its inputs"
                                             r".*same dtype"):
        check_jaxpr(Jaxpr([], [a, b], [c], [_eqn(add_p, [a, b], [c])]))
    i = Var(ShapedArray((3,), np.int32))
    with pytest.raises(JaxprTypeError, match=r"equation 0: sin.*sin requires floating"):
        check_jaxpr(Jaxpr([], [i], [c], [_eqn(sin_p, [i], [c])]))


def test_check_rejects_wrong_literal():
    a, b = Var(f32(3)), Var(f32(3))
    lit = Literal(2.0, f32())
    lit.value = np.float64(2.0)  # a float64 value typed f32[]
    with pytest.raises(JaxprTypeError, match=r"literal .* does not match its type "
                                             r"\(equation 0: mul\)"):
        check_jaxpr(Jaxpr([], [a], [b], [_eqn(mul_p, [a, lit], [b])]))


def test_check_rejects_non_scalar_literal():
    a, b = Var(f32(3)), Var(f32(3))
    bad = Literal(np.ones(2), f32())  # a value of shape (2,) typed as a scalar
    with pytest.raises(JaxprTypeError, match=r"does not match its type \(equation 0: mul\)"):
        check_jaxpr(Jaxpr([], [a], [b], [_eqn(mul_p, [a, bad], [b])]))


def test_check_error_names_match_the_printed_jaxpr():
    a, b, c = Var(f32(3)), Var(f32(3)), Var(f32(3))
    jaxpr = Jaxpr([], [a], [c], [_eqn(add_p, [a, b], [c])])
    assert "= add a c" in str(jaxpr)  # the unbound variable prints as c
    with pytest.raises(JaxprTypeError, match=r"variable c is used unbound"):
        check_jaxpr(jaxpr)


def test_check_rejects_wrong_number_of_outputs():
    a, b, c = Var(f32(3)), Var(f32(3)), Var(f32(3))
    with pytest.raises(JaxprTypeError, match=r"equation 0: split2: outputs typed \['f32\[3\]'\]"):
        check_jaxpr(Jaxpr([], [a], [b], [_eqn(split_p, [a], [b])]))
    check_jaxpr(Jaxpr([], [a], [b, c], [_eqn(split_p, [a], [b, c])]))


def test_check_closed_jaxpr_consts_and_nested():
    c = fnp.arange(3.0)
    closed = fx.make_jaxpr(lambda x: x * c)(fnp.ones(3))
    check_jaxpr(closed)
    with pytest.raises(JaxprTypeError, match="closed jaxpr has 0 consts for 1 constvars"):
        check_jaxpr(ClosedJaxpr(closed.jaxpr, []))
    # A nested jaxpr is checked too.
    a, b = Var(f32(3)), Var(f32(4))
    bad_inner = ClosedJaxpr(Jaxpr([], [a], [b], [_eqn(sin_p, [a], [b])]), [])
    x, y = Var(f32(3)), Var(f32(4))
    outer = Jaxpr([], [x], [y], [_eqn(call_p, [x], [y], jaxpr=bad_inner, name="g")])
    with pytest.raises(JaxprTypeError, match="equation 0: sin: outputs typed"):
        check_jaxpr(outer)


# --- make_jaxpr options -------------------------------------------------------------------------


def test_make_jaxpr_return_shape():
    with fx.enable_x64():  # int64 stays int64
        closed, shapes = fx.make_jaxpr(
            lambda x: {"y": x * 2, "z": (x > 0, x.astype(np.int64))},
            return_shape=True)(fnp.ones((2, 3), np.float32))
    check_jaxpr(closed)
    assert shapes == {"y": f32(2, 3), "z": (ShapedArray((2, 3), np.bool_),
                                           ShapedArray((2, 3), np.int64))}


def test_make_jaxpr_static_argnums():
    f = lambda x, n, y: x ** n + y  # noqa: E731
    closed = fx.make_jaxpr(f, static_argnums=(1,))(fnp.ones(3), 3, np.float32(2.0))
    assert str(closed) == golden("""
        { lambda ; a:f32[3] b:f32[]. let
            c:f32[3] = integer_pow[y=3] a
            d:f32[3] = add c b
          in (d,) }
    """)
    # A different static value gives a different jaxpr.
    assert "integer_pow[y=2]" in str(fx.make_jaxpr(f, static_argnums=(1,))(fnp.ones(3), 2, 2.0))


def test_make_jaxpr_keyword_and_pytree_arguments():
    with fx.enable_x64():  # float64 data stays float64
        closed = fx.make_jaxpr(lambda p, *, s: p["a"] * s + p["b"][0])(
            {"a": fnp.ones(2, np.float32), "b": [fnp.zeros(2, np.float32)]},
            s=fnp.ones(2, np.float64))
    check_jaxpr(closed)
    assert [str(a) for a in closed.in_avals] == ["f32[2]", "f32[2]", "f64[2]"]
    assert [str(a) for a in closed.out_avals] == ["f64[2]"]


def test_make_jaxpr_records_source_lines():
    closed = fx.make_jaxpr(lambda x: fnp.sin(x))(1.0)
    info = closed.eqns[0].source_info
    assert info is not None and info.file.endswith("test_jaxpr.py")


def test_make_jaxpr_rejects_non_array_outputs():
    with pytest.raises(TypeError, match=r"returned a value of type str at output\[1\]"):
        fx.make_jaxpr(lambda x: (x, "s"))(1.0)
