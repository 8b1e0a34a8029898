"""Semantics that fx shares with jax, each checked against jax itself (issue 13, part A).

Each case is a program ported from jax unchanged but for its imports, and what it does in fx
(values, errors, retracing) is compared with what it does in jax.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fx
import fx.numpy as fnp

X = np.linspace(0.1, 1.0, 4).astype(np.float32)


def close(a, b, rtol=2e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-7)


# --- A7: checkpoints nested under grad --------------------------------------------------------


def _nested_checkpoints(checkpoint, np_, depth: int):
    g = lambda x: np_.sin(x) * x  # noqa: E731
    for _ in range(depth):
        g = (lambda inner: checkpoint(lambda x: inner(x) * x))(g)
    return lambda x: np_.sum(g(x))


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_grad_through_nested_checkpoints(depth):
    f_fx, f_jax = _nested_checkpoints(fx.checkpoint, fnp, depth), \
        _nested_checkpoints(jax.checkpoint, jnp, depth)
    want = jax.grad(f_jax)(X)
    close(fx.grad(f_fx)(X), want)
    close(fx.jit(fx.grad(f_fx))(X), want)
    close(fx.vmap(fx.grad(f_fx))(X), jax.vmap(jax.grad(f_jax))(X))
    second = lambda g, f: g(lambda x: g(f)(x).sum())  # noqa: E731
    close(second(fx.grad, f_fx)(X), second(jax.grad, f_jax)(X), rtol=1e-5)



# --- A1: static_argnames and static_argnums name the same parameters ---------------------------


def _scale(x, n):
    return x * n if n > 2 else x  # Python control flow on n: it must be static


@pytest.mark.parametrize("opts", [dict(static_argnames="n"), dict(static_argnums=1)])
@pytest.mark.parametrize("call", ["positional", "keyword"])
def test_static_argument_however_it_is_passed(opts, call):
    def run(jit, np_):
        f = jit(_scale, **opts)
        x = np_.ones(2, np.float32)
        return [f(x, 3), f(x, 1)] if call == "positional" else [f(x, n=3), f(x, n=1)]

    for got, want in zip(run(fx.jit, fnp), run(jax.jit, jnp)):
        close(got, want)


def test_static_argnames_retraces_per_value_not_per_spelling():
    traces = []

    def f(x, n):
        traces.append(n)
        return x * n

    g = fx.jit(f, static_argnames="n")
    g(X, 2)
    g(X, n=2)
    g(X, 3)
    assert traces == [2, 2, 3]  # keyword and positional calls key apart (as in jax)


def test_static_argnames_of_no_parameter_is_an_error():
    with pytest.raises(ValueError, match=r"static_argnames") as jax_err:
        jax.jit(_scale, static_argnames="m")
    with pytest.raises(ValueError, match=r"jit\(_scale\): static_argnames \['m'\].*\['x', 'n'\]"):
        fx.jit(_scale, static_argnames="m")
    assert jax_err.type is ValueError
    with pytest.raises(ValueError):
        jax.jit(_scale, static_argnums=2)
    with pytest.raises(ValueError, match=r"jit\(_scale\): static_argnums \[2\] are out of range"):
        fx.jit(_scale, static_argnums=2)
    # A static position left to its default is no error (jax neither).
    close(fx.jit(lambda x, n=3: x * n, static_argnums=1)(X),
          jax.jit(lambda x, n=3: x * n, static_argnums=1)(X))


def test_jit_takes_jax_options():
    def run(m, np_):
        x = np_.ones(3, np.float32)
        f = m.jit(lambda a, b: a + b, donate_argnames="a", inline=True, keep_unused=True)
        return f(x, np_.ones(3, np.float32)), x.is_deleted()

    (got, got_deleted), (want, want_deleted) = run(fx, fnp), run(jax, jnp)
    close(got, want)
    assert got_deleted == want_deleted
    with pytest.raises(ValueError, match="donate_argnames"):
        jax.jit(lambda a: a, donate_argnames="q")
    with pytest.raises(ValueError, match=r"jit\(<lambda>\): donate_argnames \['q'\]"):
        fx.jit(lambda a: a, donate_argnames="q")


# --- A2: a custom_jvp function and rule branching on primal values under grad -----------------


def _abs_like(custom_jvp):
    @custom_jvp
    def f(x):
        if x > 0:
            return x * x
        return -x

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), (2 * x * t if x > 0 else -t)

    return f


@pytest.mark.parametrize("x", [1.5, -2.0])
def test_custom_jvp_branches_on_concrete_primals(x):
    f_fx, f_jax = _abs_like(fx.custom_jvp), _abs_like(jax.custom_jvp)
    close(fx.grad(f_fx)(x), jax.grad(f_jax)(x))
    close(fx.grad(lambda v: f_fx(v) * v)(x), jax.grad(lambda v: f_jax(v) * v)(x))
    close(fx.jvp(f_fx, (x,), (1.0,))[1], jax.jvp(f_jax, (x,), (1.0,))[1])
    close(fx.value_and_grad(f_fx)(x)[0], jax.value_and_grad(f_jax)(x)[0])


def test_custom_jvp_branching_under_jit_is_a_concretization_error_as_in_jax():
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(jax.grad(_abs_like(jax.custom_jvp)))(1.5)
    with pytest.raises(fx.ConcretizationTypeError):
        fx.jit(fx.grad(_abs_like(fx.custom_jvp)))(1.5)


def _relu_like(custom_vjp, np_):
    @custom_vjp
    def f(x):
        if x > 0:
            return np_.sin(x)
        return 0.5 * x

    def fwd(x):
        return f(x), (x,)

    def bwd(res, g):
        (x,) = res
        return (g * np_.cos(x) if x > 0 else 0.5 * g,)

    f.defvjp(fwd, bwd)
    return f


@pytest.mark.parametrize("x", [1.5, -2.0])
def test_custom_vjp_fwd_and_bwd_branch_on_concrete_primals(x):
    f_fx, f_jax = _relu_like(fx.custom_vjp, fnp), _relu_like(jax.custom_vjp, jnp)
    close(fx.grad(f_fx)(x), jax.grad(f_jax)(x))
    close(fx.grad(lambda v: f_fx(v) * v)(x), jax.grad(lambda v: f_jax(v) * v)(x))


# --- A3: a custom_vjp bwd may return None for a zero cotangent ---------------------------------


def _scaled(custom_vjp, np_):
    @custom_vjp
    def f(p, y):
        return p["a"] * np_.sin(y) + p["b"]

    def fwd(p, y):
        return f(p, y), (p, y)

    def bwd(res, g):
        p, y = res
        return {"a": g * np_.sin(y), "b": None}, None  # None: a whole argument or one entry

    f.defvjp(fwd, bwd)
    return f


def test_custom_vjp_bwd_none_is_a_zero_cotangent():
    p = {"a": np.float32(2.0), "b": np.float32(1.0)}
    y = np.float32(0.5)
    got = fx.grad(_scaled(fx.custom_vjp, fnp), argnums=(0, 1))(p, y)
    want = jax.grad(_scaled(jax.custom_vjp, jnp), argnums=(0, 1))(p, y)
    for g, w in zip(fx.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        close(g, w)
    assert float(got[1]) == 0.0 and float(got[0]["b"]) == 0.0


def test_custom_vjp_bwd_structure_errors_still_name_the_function():
    @fx.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: ((g, g), None))
    with pytest.raises(TypeError, match=r"custom_vjp bwd of f returned cotangents of structure"):
        fx.grad(f)(2.0, 3.0)


def test_custom_rule_keywords_as_jax():
    def run(m, np_):
        @m.custom_vjp
        def f(x):
            return np_.sin(x)

        f.defvjp(lambda x: (f(x), x), lambda x, g: (g * 2 * np_.cos(x),), symbolic_zeros=False,
                 optimize_remat=True)

        @m.custom_jvp
        def h(x):
            return np_.sin(x)

        h.defjvp(lambda p, t: (h(p[0]), 3 * t[0]), symbolic_zeros=False)
        return m.grad(lambda x: f(x) + h(x))(0.5)

    close(run(fx, fnp), run(jax, jnp))
    with pytest.raises(NotImplementedError, match=r"custom_jvp.defjvp of sin: symbolic_zeros=True"):
        fx.custom_jvp(fnp.sin).defjvp(lambda p, t: (p, t), symbolic_zeros=True)


# --- A4: the function vjp returns is a pytree -------------------------------------------------


def test_jit_returns_the_vjp_function():
    def fwd(vjp, np_):
        return lambda x: vjp(lambda v: np_.sin(v) * v, x)

    y, f_vjp = fx.jit(fwd(fx.vjp, fnp))(X)
    y_j, f_vjp_j = jax.jit(fwd(jax.vjp, jnp))(X)
    close(y, y_j)
    close(f_vjp(np.ones_like(X))[0], f_vjp_j(np.ones_like(X))[0])
    # ... and it can be passed into jit and vmap, as jax's Partial can.
    apply = fx.jit(lambda f, c: f(c))
    close(apply(f_vjp, 2 * np.ones_like(X))[0], f_vjp_j(2 * np.ones_like(X))[0])
    eye = np.eye(4, dtype=np.float32)
    close(fx.vmap(f_vjp)(eye)[0], jax.vmap(f_vjp_j)(eye)[0])
    assert len(fx.tree_util.tree_leaves(f_vjp)) == len(jax.tree_util.tree_leaves(f_vjp_j)) > 0
    assert isinstance(f_vjp, fx.tree_util.Partial)  # (jax 0.10's is its own VJP pytree class)


def test_jit_returns_the_linearized_function():
    def fwd(linearize, np_):
        return lambda x: linearize(lambda v: np_.sin(v) * v, x)

    y, f_jvp = fx.jit(fwd(fx.linearize, fnp))(X)
    y_j, f_jvp_j = jax.jit(fwd(jax.linearize, jnp))(X)
    close(y, y_j)
    close(f_jvp(2 * X), f_jvp_j(2 * X))
    assert isinstance(f_jvp, fx.tree_util.Partial) and isinstance(f_jvp_j, jax.tree_util.Partial)
    close(fx.jit(lambda f, t: f(t))(f_jvp, X), f_jvp_j(X))


# --- A5: a traced boolean mask is an IndexError -------------------------------------------------


def test_traced_boolean_mask_raises_non_concrete_boolean_index_error():
    with pytest.raises(IndexError) as jax_err:
        jax.jit(lambda x: x[x > 0.5])(X)
    assert type(jax_err.value).__name__ == "NonConcreteBooleanIndexError"
    for transform in (fx.jit, fx.vmap):
        with pytest.raises(fx.errors.NonConcreteBooleanIndexError, match="boolean mask") as e:
            transform(lambda x: x[x > 0.5])(np.stack([X, X]))
        assert isinstance(e.value, IndexError)
    close(fx.numpy.asarray(X)[X > 0.5], jnp.asarray(X)[X > 0.5])  # a concrete mask still works


# --- A6: jit caches per function, not per wrapper -----------------------------------------------


def _count_traces(jit, np_):
    traces = []

    def f(x):
        traces.append(1)
        return np_.sin(x) + 1

    for _ in range(3):
        jit(f)(X)  # a new wrapper each time, as in a training loop written carelessly
    jit(f, static_argnums=())(X)  # the same options spelled differently
    jit(f)(X[:2])  # a new signature
    return len(traces)


def test_new_jit_wrapper_of_the_same_function_reuses_its_trace():
    assert _count_traces(fx.jit, fnp) == _count_traces(jax.jit, jnp) == 2


def test_wrappers_with_other_static_arguments_trace_apart():
    traces = []

    def f(x, n):
        traces.append(n)
        return x * n

    fx.jit(f, static_argnums=1)(X, 2)
    fx.jit(f)(X, 2)  # n traced: another cache
    fx.jit(f, static_argnames="n")(X, 2)  # the same options as the first, spelled by name
    assert len(traces) == 2


def test_the_shared_cache_lets_the_function_go():
    import gc
    import weakref

    def f(x):
        return x + 1

    fx.jit(f)(X)
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None


def test_clear_caches_retraces():
    traces = []

    def f(x):
        traces.append(1)
        return x * 2

    fx.jit(f)(X)
    fx.clear_caches()
    fx.jit(f)(X)
    assert len(traces) == 2


def test_threads_making_new_wrappers_trace_once():
    import threading

    traces = []
    barrier = threading.Barrier(4)

    def f(x):
        traces.append(1)
        return fnp.tanh(x) * 3

    results = [None] * 4

    def work(i):
        barrier.wait()
        results[i] = np.asarray(fx.jit(f)(X))  # each thread its own wrapper

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(traces) == 1
    for r in results:
        close(r, jnp.tanh(X) * 3)
