"""The control-flow API beyond the transformation table: printed jaxprs (golden text), error
messages, weak-type promotion of carries, edge cases (empty scans and loops, clamped switch
indices, map in batches), ``fx.debug.disable_jit``, the shape of the reverse-mode scan, and a
training loop written with ``fori_loop`` inside one jitted function.
"""

from __future__ import annotations

import re
from textwrap import dedent

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_allclose, to_fx, to_jax
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.debug
import fx.numpy as fnp
from fx import lax, tree_util
from fx.jaxpr import check_jaxpr

F32 = np.float32


# --- printed jaxprs -----------------------------------------------------------------------------


def _golden(f, *args) -> None:
    return str(fx.make_jaxpr(f)(*args))


def test_cond_prints_its_branches_nested():
    text = _golden(lambda p, x: lax.cond(p, lambda x: x + 1.0, lambda x: x * 2.0, x), True,
                   F32(1))
    assert text == dedent("""\
        { lambda ; a:bool[] b:f32[]. let
            c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
            d:f32[] = cond[
              branches=({ lambda ; e:f32[]. let
                  f:f32[] = mul e 2.0:f32[]
                in (f,) }, { lambda ; g:f32[]. let
                  h:f32[] = add g 1.0:f32[]
                in (h,) })
            ] c b
          in (d,) }""")


def test_switch_clamps_its_index_in_the_jaxpr():
    text = _golden(lambda i, x: lax.switch(i, [lambda x: x, fnp.sin, lambda x: -x], x),
                   np.int32(1), F32(1))
    assert "c:i32[] = clamp 0:i32[] a 2:i32[]" in text
    assert "g:f32[] = sin f" in text and "i:f32[] = neg h" in text
    assert "] c b\n" in text  # one cond primitive over the clamped index


def test_while_prints_cond_and_body_with_hoisted_constants():
    w = fnp.asarray(np.ones(3, F32))
    text = _golden(lambda x: lax.while_loop(lambda c: c.sum() < 10.0, lambda c: c * w, x),
                   np.ones(3, F32))
    assert text == dedent("""\
        { lambda a:f32[3]; b:f32[3]. let
            c:f32[3] = while[
              body_jaxpr={ lambda ; d:f32[3] e:f32[3]. let
                  f:f32[3] = mul e d
                in (f,) }
              body_nconsts=1
              cond_jaxpr={ lambda ; g:f32[3]. let
                  h:f32[] = reduce_sum[axes=(0,)] g
                  i:bool[] = lt h 10.0:f32[]
                in (i,) }
              cond_nconsts=0
            ] a b
          in (c,) }""")


@pytest.mark.default_mode  # the golden text has the default mode's int32 counter
def test_static_fori_loop_is_a_scan_with_a_counter_carry():
    text = _golden(lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x), F32(1))
    assert text == dedent("""\
        { lambda ; a:f32[]. let
            b:i32[] c:f32[] = scan[
              jaxpr={ lambda ; d:i32[] e:f32[]. let
                  f:i32[] = add d 1:i32[]
                  g:f32[] = mul e 2.0:f32[]
                in (f, g) }
              length=3
              num_carry=2
              num_consts=0
              reverse=False
              unroll=1
            ] 0:i32[] a
          in (c,) }""")
    traced = _golden(lambda n, x: lax.fori_loop(0, n, lambda i, c: c * 2.0, x), np.int32(3),
                     F32(1))
    assert "= while[" in traced and "scan" not in traced


def test_reverse_mode_scan_stacks_residuals_and_passes_loop_constants_unstacked():
    w = np.full((2, 2), 0.5)
    xs = np.ones((5, 2))

    def f(w, xs):
        c, ys = lax.scan(lambda c, x: (fnp.tanh(w @ c + x), c.sum()), xs[0], xs)
        return c.sum() + ys.sum()

    closed = fx.make_jaxpr(fx.grad(f))(w, xs)
    check_jaxpr(closed)
    scans = [e for e in closed.eqns if e.primitive.name == "scan"]
    assert [e.params["reverse"] for e in scans] == [False, True]
    forward, backward = scans
    residuals = [v.aval.shape for v in forward.outvars[2:]]  # after the carry and the y
    assert residuals and all(s[0] == 5 for s in residuals)  # one slice per iteration
    # The weight is a constant of both scans, never stacked along the scan axis.
    assert closed.jaxpr.invars[0] in backward.invars[:backward.params["num_consts"]]
    assert all(v.aval.shape != (5, 2, 2) for e in scans for v in [*e.invars, *e.outvars])


# --- error messages -----------------------------------------------------------------------------

ERRORS = [
    ("cond pred not scalar", lambda: lax.cond(fnp.ones(2) > 0, lambda: 1.0, lambda: 2.0),
     TypeError, r"cond: the predicate must be a scalar, got bool\[2\]"),
    ("cond branch types", lambda: lax.cond(True, lambda x: x, lambda x: fnp.ones(3), 1.0),
     TypeError, r"cond: true_fun output type f32\[\] does not match false_fun output type "
     r"f32\[3\]"),
    ("cond branch dtypes", lambda: lax.cond(True, lambda x: x, lambda x: x.astype(np.int32), 1.0),
     TypeError, r"true_fun output type f32\[\] does not match false_fun output type i32\[\]"),
    ("cond branch trees", lambda: lax.cond(True, lambda x: x, lambda x: (x,), 1.0),
     TypeError, r"true_fun output structure PyTreeDef\(\*\) does not match false_fun output "
     r"structure PyTreeDef\(\(\*,\)\)"),
    ("cond not callable", lambda: lax.cond(True, 1.0, lambda x: x), TypeError,
     r"true_fun and false_fun must be callable"),
    ("switch float index", lambda: lax.switch(1.5, [lambda: 1.0, lambda: 2.0]), TypeError,
     r"switch: the branch index must be an integer, got f32\[\]"),
    ("switch vector index", lambda: lax.switch(fnp.array([1, 2]), [lambda: 1.0, lambda: 2.0]),
     TypeError, r"switch: the branch index must be a scalar, got i32\[2\]"),
    ("switch no branches", lambda: lax.switch(0, []), ValueError, r"at least one branch"),
    ("switch branch types", lambda: lax.switch(0, [lambda: 1.0, lambda: fnp.ones(2)]),
     TypeError, r"switch: branch 1 output type f32\[2\] does not match branch 0 output type"),
    ("while non-bool cond", lambda: lax.while_loop(lambda x: x, lambda x: x, 1.0), TypeError,
     r"while_loop: cond_fun must return a boolean scalar, got f32\[\]"),
    ("while carry type", lambda: lax.while_loop(lambda x: x < 3, lambda x: fnp.ones(3), 0.0),
     TypeError, r"while_loop: body_fun output carry type f32\[3\] does not match the input "
     r"carry type f32\[\]"),
    ("while carry leaf", lambda: lax.while_loop(lambda x: x[0] < 3,
                                                lambda x: (x[0] + 1, fnp.ones(3)), (0, 0.0)),
     TypeError, r"carry type f32\[3\] does not match the input carry type f32\[\] "
     r"\(at carry\[1\]\)"),
    ("while carry tree", lambda: lax.while_loop(lambda x: x[0] < 3, lambda x: (x[0] + 1,),
                                                (0, 0.0)),
     TypeError, r"body_fun output carry structure PyTreeDef\(\(\*,\)\) does not match the "
     r"input carry structure PyTreeDef\(\(\*, \*\)\)"),
    ("scan carry type", lambda: lax.scan(lambda c, x: (fnp.ones(3), x), 0.0, fnp.ones(3)),
     TypeError, r"scan: f output carry type f32\[3\] does not match the input carry type "
     r"f32\[\]"),
    ("scan not a pair", lambda: lax.scan(lambda c, x: c, 0.0, fnp.ones(3)), TypeError,
     r"must return a pair \(carry, y\), got a single array f32\[\]"),
    ("scan lengths", lambda: lax.scan(lambda c, x: (c, x), 0.0, (fnp.ones(3), fnp.ones(4))),
     ValueError, r"different leading axis sizes: 3, 4"),
    ("scan nothing", lambda: lax.scan(lambda c, x: (c, x), 0.0, None), ValueError,
     r"no values to scan over"),
    ("scan length", lambda: lax.scan(lambda c, x: (c, x), 0.0, fnp.ones(3), length=4),
     ValueError, r"length=4, which disagrees with the leading axis sizes \[3\]"),
    ("scan 0-d xs", lambda: lax.scan(lambda c, x: (c, x), 0.0, 1.0), ValueError,
     r"no leading axis to scan over: f32\[\]"),
    ("scan non-array y", lambda: lax.scan(lambda c, x: (c, "s"), 0.0, fnp.ones(3)), TypeError,
     r"a leaf of type str is not an array"),
    ("fori float bound", lambda: lax.fori_loop(0.0, 3, lambda i, c: c, 1.0), TypeError,
     r"fori_loop: lower must be an integer scalar, got f32\[\]"),
    ("fori carry type", lambda: lax.fori_loop(0, 3, lambda i, c: c * fnp.ones(2), 1.0),
     TypeError, r"fori_loop: body_fun output carry type f32\[2\] does not match the input carry "
     r"type f32\[\];"),
    ("fori traced carry type", lambda: fx.jit(
        lambda n: lax.fori_loop(0, n, lambda i, c: c * fnp.ones(2), 1.0))(np.int32(3)),
     TypeError, r"fori_loop: body_fun output carry type f32\[2\] does not match the input carry "
     r"type f32\[\];"),
]


@pytest.mark.default_mode  # the messages name the default mode's dtypes
@pytest.mark.parametrize("name,fn,exc,pattern", ERRORS, ids=[e[0] for e in ERRORS])
def test_error_messages(name, fn, exc, pattern):
    with pytest.raises(exc, match=pattern):
        fn()


def test_grad_of_while_loop_points_at_the_loop_and_suggests_scan():
    def f(x):
        return lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)  # the loop's line

    line = f.__code__.co_firstlineno + 1
    cases = [(fx.grad(f), F32(1.5)), (fx.jit(fx.grad(f)), F32(1.5)),
             (fx.grad(fx.jit(f)), F32(1.5)),
             (fx.grad(lambda x: fx.vmap(f)(x).sum()), np.ones(2, F32))]
    for g, arg in cases:
        with pytest.raises(ValueError, match=r"Reverse-mode differentiation does not work for "
                           r"fx.lax.while_loop.*Try fx.lax.scan") as info:
            g(arg)
        assert f"{__file__}:{line} (f)" in str(info.value)
    # Forward mode works and agrees with jax.
    got = fx.jvp(f, (F32(1.5),), (F32(1.0),))
    want = jax.jvp(lambda x: jax.lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x),
                   (F32(1.5),), (F32(1.0),))
    assert_allclose(got, want)


def test_grad_of_fori_loop_with_traced_bounds_is_an_error():
    def f(x, n):
        return lax.fori_loop(0, n, lambda i, c: c * x, x)

    with pytest.raises(ValueError, match="static"):
        fx.jit(fx.grad(f))(F32(1.5), np.int32(3))


# --- types, weak types and edge cases -----------------------------------------------------------


def test_weakly_typed_initial_carry_takes_the_body_type():
    out = lax.while_loop(lambda x: x < 3, lambda x: x + fnp.asarray(1, np.float32), 0.0)
    assert out.dtype == np.float32 and not out.weak_type and float(out) == 3.0
    out = lax.fori_loop(0, 3, lambda i, x: x + fnp.asarray(0.5, np.float64), 0)
    assert out.dtype == np.float64 and float(out) == 1.5
    c, ys = lax.scan(lambda c, x: (c + x, c), 0, np.arange(4, dtype=np.int64))
    assert c.dtype == np.int64 and ys.dtype == np.int64 and int(c) == 6
    # Weak outputs of a strongly typed carry keep the carry's type.
    out = lax.while_loop(lambda x: x < 3, lambda x: x * 0.0 + 3.0, F32(0))
    assert out.dtype == np.float32 and not out.weak_type


def test_empty_loops_and_scans():
    xs = np.zeros((0, 2), np.float64)
    c, ys = lax.scan(lambda c, x: (c + x.sum(), (x * 2, c)), np.float64(1.5), xs)
    assert float(c) == 1.5 and ys[0].shape == (0, 2) and ys[1].shape == (0,)
    assert ys[0].dtype == np.float64
    assert float(lax.fori_loop(5, 2, lambda i, c: c * 2.0, F32(3))) == 3.0
    assert float(lax.while_loop(lambda c: c > 10, lambda c: c * 2.0, F32(3))) == 3.0
    g = fx.grad(lambda c: lax.scan(lambda c, x: (c * x.sum(), c), c, xs)[0])(1.5)
    assert float(g) == 1.0


@pytest.mark.parametrize("index,expected", [(-5, 0.0), (0, 0.0), (1, 1.0), (2, 2.0), (99, 2.0)])
def test_switch_clamps_out_of_range_indices(index, expected):
    branches = [lambda: F32(0), lambda: F32(1), lambda: F32(2)]
    assert float(lax.switch(index, branches)) == expected
    assert float(fx.jit(lambda i: lax.switch(i, branches))(np.int32(index))) == expected
    assert float(jax.lax.switch(index, branches)) == expected


def test_single_branch_switch_calls_it_directly():
    assert float(lax.switch(3, [lambda x: x * 2.0], F32(2))) == 4.0


@pytest.mark.parametrize("batch_size", [None, 1, 3, 7, 10])
def test_map_matches_jax(batch_size):
    xs = np.linspace(-1, 1, 14).reshape(7, 2)
    got = lax.map(lambda r: (fnp.sin(r) * r.sum(), r[0]), to_fx(xs), batch_size=batch_size)
    want = jax.lax.map(lambda r: (jnp.sin(r) * r.sum(), r[0]), to_jax(xs),
                       batch_size=batch_size)
    assert_allclose(got, want)


@given(length=st.integers(0, 5), shape=st.lists(st.integers(0, 3), max_size=2),
       reverse=st.booleans(), seed=st.integers(0, 2**16))
def test_scan_matches_a_python_loop(length, shape, reverse, seed):
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((length, *shape))
    init = rng.standard_normal(shape)

    def step(c, x):
        return c * 0.5 + x, (c * x, x.sum())

    carry, ys = lax.scan(step, init, xs, reverse=reverse)
    c, want_ys = init, []
    for i in (reversed(range(length)) if reverse else range(length)):
        c, y = step(c, xs[i])
        want_ys.append(y)
    if reverse:
        want_ys.reverse()
    assert_allclose(carry, c)
    assert_allclose(ys[0], np.stack([y[0] for y in want_ys]) if length else np.zeros((0, *shape)))
    assert_allclose(ys[1], np.array([y[1] for y in want_ys]))
    # vmap over a batch of initial carries equals one scan per carry
    inits = np.stack([init, -init])
    batched = fx.vmap(lambda c: lax.scan(step, c, xs, reverse=reverse)[0])(inits)
    assert_allclose(batched[1], lax.scan(step, -init, xs, reverse=reverse)[0])


def test_scan_pytrees_and_reverse_match_jax():
    xs = {"a": np.arange(6.0).reshape(3, 2), "b": np.array([1.0, -1.0, 0.5])}

    def body(np_):
        def f(c, x):
            return {"s": c["s"] + x["a"] * x["b"], "n": c["n"] + 1}, [x["b"], c["s"].sum()]
        return f

    init = {"s": np.zeros(2), "n": np.int32(0)}
    for reverse in (False, True):
        got = lax.scan(body(fnp), to_fx(init), to_fx(xs), reverse=reverse, unroll=2)
        want = jax.lax.scan(body(jnp), to_jax(init), to_jax(xs), reverse=reverse, unroll=2)
        assert tree_util.tree_structure(got) == tree_util.tree_structure(
            tree_util.tree_map(np.asarray, want))
        assert_allclose(got, want)


def test_cond_operands_may_be_empty_and_branches_close_over_tracers():
    def f(x):
        return lax.cond(x > 0, lambda: x * 2.0, lambda: -x)  # closes over a traced x

    for v in (np.float64(1.5), np.float64(-1.5)):
        assert_allclose(fx.grad(f)(v), jax.grad(lambda x: jax.lax.cond(
            x > 0, lambda: x * 2.0, lambda: -x))(v), what=f"grad at {v}")
    assert_allclose(fx.vmap(f)(np.array([1.0, -2.0])), np.array([2.0, 2.0]))


def test_nested_vmap_of_while_with_batched_predicates():
    def f(n, x):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x), (0, x))[1]

    def fj(n, x):
        return jax.lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * x), (0, x))[1]

    n = np.array([0, 2, 4], np.int32)
    x = np.array([[1.5, 0.5], [2.0, -1.0], [1.1, 0.9]])
    got = fx.vmap(fx.vmap(f, (None, 0)), (0, None))(n, x)
    want = jax.vmap(jax.vmap(fj, (None, 0)), (0, None))(n, x)
    assert_allclose(got, want)


# --- disable_jit --------------------------------------------------------------------------------


def test_disable_jit_runs_python_bodies_with_concrete_values():
    seen = []

    def body(i, c):
        seen.append((int(i), float(c)))  # concrete values: no tracer in sight
        return c * 2.0

    @fx.jit
    def f(x):
        return lax.fori_loop(0, 3, lambda i, c: c * 2.0, x)

    with fx.debug.disable_jit():
        assert float(lax.fori_loop(0, 3, body, F32(1))) == 8.0
        assert float(f(F32(1))) == 8.0
        assert float(lax.cond(F32(1) > 0, lambda: F32(1), lambda: seen.append("no"))) == 1.0
        c, ys = lax.scan(lambda c, x: (seen.append(float(x)) or c + x, c), F32(0),
                         np.arange(3, dtype=F32))
        n = lax.while_loop(lambda c: seen.append(int(c)) or c < 2, lambda c: c + 1, 0)
    assert seen == [(0, 1.0), (1, 2.0), (2, 4.0), 0.0, 1.0, 2.0, 0, 1, 2]
    assert float(c) == 3.0 and ys.tolist() == [0.0, 0.0, 1.0] and int(n) == 2
    assert not fx.config.disable_jit
    assert float(f(F32(1))) == 8.0  # compiled outside the block
    with pytest.raises(ValueError, match="zero-length scan"):
        with fx.debug.disable_jit():
            lax.scan(lambda c, x: (c, x), F32(0), np.zeros(0, F32))


def test_disable_jit_falls_back_to_the_primitive_under_vmap():
    with fx.debug.disable_jit():
        out = fx.vmap(lambda n: lax.while_loop(lambda c: c < n, lambda c: c + 1, 0))(
            np.array([1, 3], np.int32))
    assert out.tolist() == [1, 3]


# --- a training loop inside one jitted function -------------------------------------------------


def _loss(np_):
    def loss(p, x, y):
        h = np_.tanh(x @ p["w1"] + p["b1"])
        return ((h @ p["w2"] - y) ** 2).mean()

    return loss


def _train(L, np_, grad):
    loss = _loss(np_)

    def train(p, x, y):
        def step(i, p):
            g = grad(loss)(p, x, y)
            return tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)

        return L.fori_loop(0, 25, step, p)

    return train


def test_training_loop_with_fori_loop_in_jit_matches_python_loop_and_jax():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 3))
    y = np.sin(x).sum(1, keepdims=True)
    p = {"w1": rng.standard_normal((3, 8)) * 0.5, "b1": np.zeros(8),
         "w2": rng.standard_normal((8, 1)) * 0.5}
    loss = _loss(fnp)
    trained = fx.jit(_train(lax, fnp, fx.grad))(*to_fx((p, x, y)))
    python = to_fx(p)
    for _ in range(25):
        g = fx.grad(loss)(python, to_fx(x), to_fx(y))
        python = tree_util.tree_map(lambda a, b: a - 0.1 * b, python, g)
    assert_allclose(trained, python, rtol=1e-12, atol=1e-12, what="fori_loop vs Python loop")
    want = jax.jit(_train(jax.lax, jnp, jax.grad))(*to_jax((p, x, y)))
    assert_allclose(trained, want, what="vs jax")
    assert float(loss(trained, to_fx(x), to_fx(y))) < float(loss(to_fx(p), to_fx(x), to_fx(y)))

    # The gradient of the final loss with respect to the initial parameters differentiates
    # through all 25 steps (second order through the scan).
    def meta(L, np_, grad):
        train = _train(L, np_, grad)
        return lambda p: _loss(np_)(train(p, x, y), x, y)

    got = fx.grad(meta(lax, fnp, fx.grad))(to_fx(p))
    want = jax.jit(jax.grad(meta(jax.lax, jnp, jax.grad)))(to_jax(p))
    assert_allclose(got, want, rtol=1e-9, atol=1e-11, what="meta-gradient")


def test_errors_inside_bodies_name_the_transformation():
    with pytest.raises(fx.ConcretizationTypeError, match=re.escape("scan(<lambda>) tracing")):
        lax.scan(lambda c, x: (c + (1.0 if x > 0 else 0.0), x), F32(0), np.ones(3, F32))


def test_partial_eval_of_scan_whose_unknown_inputs_feed_only_dead_code():
    from fx.core import new_trace
    from fx.interpreters.partial_eval import PartialEvalTrace
    from fx.tracing import JaxprTrace

    def body(c, x):
        fnp.sin(x) * c  # dead, but staged: the known carry c becomes a residual
        return c * 2.0, c

    (eqn,) = fx.make_jaxpr(lambda c, xs: lax.scan(body, c, xs))(F32(1), np.ones(3, F32)).eqns
    known = JaxprTrace(None, "known")
    with new_trace(known):
        pe = PartialEvalTrace(known, "unknown")
        with new_trace(pe):
            c, xs = known.new_arg(eqn.invars[0].aval), pe.new_arg(eqn.invars[1].aval)
            outs = eqn.primitive.bind(c, xs, **eqn.params)
    assert len(outs) == 2 and not any(pe.is_unknown(o) for o in outs)
