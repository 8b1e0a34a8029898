"""fx.pure_callback against jax.pure_callback: values, dtypes, how often and with what shapes the
callback runs (eagerly, under jit, under vmap with each vmap_method), the errors, and one jitted
function calling back from many threads at once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import run_doctests

import fx
import fx.numpy as fnp

# The same program written against each library: (pure_callback, ShapeDtypeStruct, jit, vmap,
# numpy module).
FX = (fx.pure_callback, fx.ShapeDtypeStruct, fx.jit, fx.vmap, fnp)
JAX = (jax.pure_callback, jax.ShapeDtypeStruct, jax.jit, jax.vmap, jnp)


class Recorder:
    """A callback computing ``x * 2 + y`` on the host and recording the shapes it got."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.lock = threading.Lock()

    def __call__(self, x, y):
        with self.lock:
            self.calls.append((np.shape(x), np.shape(y)))
        return np.asarray(x) * 2 + np.asarray(y)


def _program(lib, rec: Recorder, vmap_method=None):
    pure_callback, sds, _, _, np_ = lib

    def f(x, y):
        shape = np.broadcast_shapes(np.shape(x), np.shape(y))
        return pure_callback(rec, sds(shape, x.dtype), x, y, vmap_method=vmap_method)

    return f


def _both(run):
    """``run(lib, rec)`` with fx and with jax: both results (as NumPy) and both call logs."""
    out = {}
    for name, lib in (("fx", FX), ("jax", JAX)):
        rec = Recorder()
        res = run(lib, rec)
        out[name] = (jax.tree_util.tree_map(np.asarray, res), rec.calls)
    return out["fx"], out["jax"]


def _assert_same(got, want):
    (g_res, g_calls), (w_res, w_calls) = got, want
    g_leaves, w_leaves = jax.tree_util.tree_leaves(g_res), jax.tree_util.tree_leaves(w_res)
    assert len(g_leaves) == len(w_leaves)
    for g, w in zip(g_leaves, w_leaves):
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        np.testing.assert_allclose(g, w)
    assert g_calls == w_calls


X = np.arange(12, dtype=np.float32).reshape(4, 3)
Y = np.linspace(-1, 1, 3).astype(np.float32)


# --- eager and jit -------------------------------------------------------------------------------


def test_eager_matches_jax():
    _assert_same(*_both(lambda lib, rec: _program(lib, rec)(lib[4].asarray(X),
                                                            lib[4].asarray(Y))))


def test_jit_calls_back_every_run():
    def run(lib, rec):
        f = lib[2](_program(lib, rec))
        return [f(X, Y), f(X + 1, Y)]

    got, want = _both(run)
    _assert_same(got, want)
    assert len(got[1]) == 2


def test_callback_gets_fx_arrays_and_kwargs_and_returns_pytrees():
    seen = []

    def cb(x, *, scale):
        seen.append((type(x), type(scale)))
        return {"a": np.asarray(x) * np.asarray(scale), "b": (np.int32(7),)}

    def run(lib):
        pure_callback, sds, jit, _, np_ = lib
        spec = {"a": sds((3,), np.float32), "b": (sds((), np.int32),)}
        return jit(lambda x: pure_callback(cb, spec, x, scale=np.float32(2)))(np_.asarray(Y))

    got, want = run(FX), run(JAX)
    assert set(got) == {"a", "b"} and isinstance(got["b"], tuple)
    np.testing.assert_allclose(np.asarray(got["a"]), np.asarray(want["a"]))
    assert got["a"].dtype == np.float32 and got["b"][0].dtype == np.int32
    assert seen[0] == (fx.Array, fx.Array)  # as jax passes jax.Arrays
    assert all(issubclass(t, jax.Array) for t in seen[1])


def test_argument_is_a_private_read_only_copy():
    # Under jit the operands live in the program's arena, reused by the next call: what the
    # callback keeps must not change, and it cannot write into fx's buffers.
    kept = []

    def cb(x):
        kept.append(x)
        assert not np.asarray(x).flags.writeable
        return np.asarray(x) + 1

    f = fx.jit(lambda x: fx.pure_callback(cb, fx.ShapeDtypeStruct((3,), np.float32), x * 2) * 3)
    for i in range(3):
        f(fnp.full(3, float(i), dtype=np.float32))
    np.testing.assert_array_equal(np.stack([np.asarray(k) for k in kept]),
                                  np.repeat([[0.0], [2.0], [4.0]], 3, axis=1))


def test_dead_code_elimination_and_no_merging_match_jax():
    # Pure, as in jax: an unused result is not computed, but two equal calls are two calls.
    def run(lib, rec):
        pure_callback, sds, jit, _, _ = lib
        spec = sds((3,), np.float32)
        unused = jit(lambda y: (pure_callback(rec, spec, y, y), y + 1)[1])
        twice = jit(lambda y: pure_callback(rec, spec, y, y) + pure_callback(rec, spec, y, y))
        return [unused(Y), twice(Y)]

    got, want = _both(run)
    _assert_same(got, want)
    assert len(got[1]) == 2


def test_constant_operands_are_not_folded():
    # jax calls the callback at each run even when its operands are compile-time constants.
    def run(lib, rec):
        pure_callback, sds, jit, _, _ = lib
        f = jit(lambda: pure_callback(rec, sds((), np.float32), np.float32(1.5), np.float32(2)))
        return [f(), f()]

    got, want = _both(run)
    _assert_same(got, want)
    assert len(got[1]) == 2


def test_tracing_never_calls_back():
    def cb(x):
        raise AssertionError("called at trace time")

    def f(x):
        return fx.pure_callback(cb, fx.ShapeDtypeStruct(x.shape, x.dtype), x)

    assert "pure_callback[callback=test_tracing_never_calls_back.<locals>.cb" in str(
        fx.make_jaxpr(f)(Y))
    assert fx.eval_shape(f, Y).shape == (3,)
    text = fx.jit(f).lower(Y).as_text()
    assert "opaque[pure_callback]" in text and "numpy.opaque" in text


def test_inside_a_jitted_scan():
    def body(lib, rec, c, x):
        return c + lib[0](rec, lib[1]((3,), np.float32), x, c), ()

    def run(lib, rec):
        scan = jax.lax.scan if lib is JAX else fx.lax.scan
        return lib[2](lambda xs: scan(partial(body, lib, rec), np.zeros(3, np.float32), xs)[0])(X)

    _assert_same(*_both(run))
    # Two equal loops both run: common-subexpression elimination keeps them apart. (jax's XLA
    # happens to merge equal loops, though not two equal callbacks.)
    rec = Recorder()
    loop = partial(fx.lax.scan, partial(body, FX, rec), np.zeros(3, np.float32))
    fx.jit(lambda xs: loop(xs)[0] - loop(xs)[0])(X)
    assert len(rec.calls) == 2 * len(X)


# --- vmap ----------------------------------------------------------------------------------------

METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
           "legacy_vectorized"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("where", ["vmap", "jit(vmap)", "vmap(jit)"])
def test_vmap_methods_match_jax(method, where):
    def run(lib, rec):
        _, _, jit, vmap, np_ = lib
        f = _program(lib, rec, method)
        if where == "vmap(jit)":
            f = jit(f)
        g = vmap(f, in_axes=(1, None))  # a batch axis that is not in front
        if where == "jit(vmap)":
            g = jit(g)
        return g(np_.asarray(X.T), np_.asarray(Y))

    _assert_same(*_both(run))


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_nested_vmap_matches_jax(method):
    def run(lib, rec):
        _, _, _, vmap, np_ = lib
        f = vmap(vmap(_program(lib, rec, method), in_axes=(0, None)), in_axes=(None, 0))
        return f(np_.asarray(X), np_.asarray(np.stack([Y, 2 * Y])))

    _assert_same(*_both(run))


def test_vmap_without_a_method_raises_as_jax():
    for lib in (FX, JAX):
        f = lib[3](_program(lib, Recorder()), in_axes=(0, None))
        with pytest.raises(NotImplementedError, match=r"vmap is only supported for the "
                           r"pure_callback primitive when vmap_method is one of .*"
                           r"Got vmap_method=None"):
            f(X, Y)


def test_unknown_vmap_method_raises_as_jax():
    for lib in (FX, JAX):
        with pytest.raises(ValueError, match=r"vmap_method must be o.* allowed methods"):
            lib[0](np.sin, lib[1]((), np.float32), 1.0, vmap_method="vectorized")


# --- differentiation -----------------------------------------------------------------------------


def _sin_callback(lib, x):
    return lib[0](lambda a: np.sin(np.asarray(a)), lib[1](x.shape, x.dtype), x,
                  vmap_method="expand_dims")


@pytest.mark.parametrize("transform", ["grad", "jvp"])
def test_differentiating_raises_as_jax(transform):
    for lib, mod in ((FX, fx), (JAX, jax)):
        f = partial(_sin_callback, lib)
        with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
            if transform == "grad":
                mod.grad(f)(np.float32(1.0))
            else:
                mod.jvp(f, (np.float32(1.0),), (np.float32(1.0),))


def _custom_sin(lib, mod):
    @mod.custom_jvp
    def f(x):
        return _sin_callback(lib, x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        cos = lib[0](lambda a: np.cos(np.asarray(a)), lib[1](x.shape, x.dtype), x,
                     vmap_method="expand_dims")
        return f(x), cos * t

    return f


@pytest.mark.parametrize("compose", ["grad", "jit(grad)", "vmap(grad)", "grad(jit)"])
def test_custom_jvp_around_a_callback_differentiates(compose):
    results = []
    for lib, mod in ((FX, fx), (JAX, jax)):
        f = _custom_sin(lib, mod)
        x = np.float32(0.7)
        if compose == "grad":
            results.append(mod.grad(f)(x))
        elif compose == "jit(grad)":
            results.append(mod.jit(mod.grad(f))(x))
        elif compose == "grad(jit)":
            results.append(mod.grad(mod.jit(f))(x))
        else:
            results.append(mod.vmap(mod.grad(f))(np.linspace(0, 1, 4, dtype=np.float32)))
    got, want = (np.asarray(r) for r in results)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got, np.cos(np.float32(0.7)) if got.ndim == 0 else
                               np.cos(np.linspace(0, 1, 4, dtype=np.float32)), rtol=1e-6)


# --- errors --------------------------------------------------------------------------------------


def bad_shape(x):
    return np.zeros(4, np.float32)


def bad_dtype(x):
    return np.zeros(3, np.int32)


def bad_count(x):
    return np.zeros(3, np.float32), np.zeros(3, np.float32)


@pytest.mark.parametrize("cb, message", [
    (bad_shape, r"Incorrect output shape for return value #0: Expected: \(3,\), Actual: \(4,\)"),
    (bad_dtype, r"Incorrect output dtype for return value #0: Expected: float32, Actual: int32"),
    (bad_count, r"Mismatched number of outputs from callback. Expected: 1, Actual: 2"),
])
@pytest.mark.parametrize("jit", [False, True])
def test_wrong_results_raise_naming_the_callback(cb, message, jit):
    def f(x):
        return fx.pure_callback(cb, fx.ShapeDtypeStruct((3,), np.float32), x)

    with pytest.raises(RuntimeError, match=rf"callback '{cb.__name__}'.*{message}"):
        (fx.jit(f) if jit else f)(Y)
    with pytest.raises(Exception, match=message):  # jax's wording, inside its runtime error
        jax.pure_callback(cb, jax.ShapeDtypeStruct((3,), np.float32), Y)


def test_errors_of_the_callback_propagate():
    def boom(x):
        raise KeyError("boom")

    f = fx.jit(lambda x: fx.pure_callback(boom, fx.ShapeDtypeStruct((3,), np.float32), x))
    with pytest.raises(KeyError, match="boom") as info:
        f(Y)
    assert any("boom" in n and "fx.pure_callback" in n for n in info.value.__notes__)


@pytest.mark.default_mode
def test_default_mode_narrows_results_and_refuses_64_bit_declarations():
    for lib in (FX, JAX):
        out = lib[0](lambda: 1.5, lib[1]((), np.float32))  # a Python float comes back float64
        assert out.dtype == np.float32 and float(out) == 1.5
        with pytest.raises(ValueError, match="result_shape_dtypes cannot specify 64-bit types "
                           "when `jax_enable_x64` is disabled"):
            lib[0](lambda: 1.5, lib[1]((), np.float64))


def test_bad_result_shape_dtypes_and_operands():
    with pytest.raises(TypeError, match=r"result_shape_dtypes must have \.shape and \.dtype"):
        fx.pure_callback(np.sin, [3], 1.0)
    with pytest.raises(TypeError, match="fx.pure_callback"):
        fx.pure_callback(np.sin, fx.ShapeDtypeStruct((), np.float32), "text")


# --- threads -------------------------------------------------------------------------------------


def test_one_jitted_function_calls_back_from_many_threads():
    def cb(x, k):
        return np.asarray(x) * np.asarray(k)

    @fx.jit
    def f(x, k):
        y = fx.pure_callback(cb, fx.ShapeDtypeStruct(x.shape, x.dtype), x * 3, k)
        return y + 1

    base = np.linspace(0, 1, 257, dtype=np.float32)
    f(base, np.float32(0))  # compile once, then call concurrently

    def work(i):
        k = np.float32(i)
        # IEEE multiplications and adds: the C kernels and NumPy agree bit for bit, so any
        # mix-up between concurrent calls shows.
        return all(np.array_equal(np.asarray(f(base + j, k)), (base + j) * 3 * k + 1)
                   for j in range(20))

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(16)))


def test_docstring_example():
    import fx.callback

    assert run_doctests(fx.callback) >= 3
