"""fx.jit's user-facing behaviour: caching, static arguments, logging, AOT inspection."""

from __future__ import annotations

import numpy as np
import pytest

import fx
import fx.numpy as fnp
from fx.runtime import cc

pytestmark = pytest.mark.usefixtures("strict_fallbacks")  # no unexpected NumPy fallback


@pytest.mark.default_mode  # the expected signatures are the default mode's
def test_same_signature_is_traced_once_and_new_shapes_retrace():
    traces = []

    @fx.jit
    def f(x):
        traces.append(x.shape)
        return fnp.sin(x) * 2.0

    f(fnp.ones(8))
    f(fnp.zeros(8))
    assert traces == [(8,)] and f.cache_size() == 1
    f(fnp.ones(16))
    assert traces == [(8,), (16,)] and f.cache_size() == 2
    with fx.enable_x64():
        f(fnp.ones(8, dtype=fnp.float64))
    assert f.cache_size() == 3


def test_static_argnums_and_argnames_key_the_cache():
    @fx.jit
    def f(x, n):
        return x * n

    g = fx.jit(lambda x, n: x * n if n > 0 else -x, static_argnums=1)
    np.testing.assert_allclose(np.asarray(g(fnp.ones(3), 2)), 2.0)
    np.testing.assert_allclose(np.asarray(g(fnp.ones(3), -1)), -1.0)
    assert g.cache_size() == 2
    h = fx.jit(lambda x, *, scale: x * scale, static_argnames="scale")
    np.testing.assert_allclose(np.asarray(h(fnp.ones(2), scale=3.0)), 3.0)
    np.testing.assert_allclose(np.asarray(f(fnp.ones(2), 3)), 3.0)


def test_unhashable_static_argument_is_a_clear_error():
    f = fx.jit(lambda x, shape: x.reshape(shape), static_argnums=1)
    with pytest.raises(TypeError, match=r"static argument 1 has unhashable type list.*tuple"):
        f(fnp.ones(4), [2, 2])


def test_python_control_flow_on_traced_value_points_to_cond_and_static_argnums():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(fx.ConcretizationTypeError, match=r"argument 'x'.*|static_argnums"):
        fx.jit(f)(fnp.ones(3))


@pytest.mark.default_mode  # the expected signatures are the default mode's
def test_log_compiles_explains_recompilation(capsys):
    fx.config.update("log_compiles", True)
    try:
        def fun(x):
            return x + 1.0

        f = fx.jit(fun)
        f(fnp.ones(8))
        f(fnp.ones(16))
    finally:
        fx.config.update("log_compiles", False)
    err = capsys.readouterr().err
    assert "compiling fun for (f32[8])" in err
    assert "recompiling fun because arg 0 changed f32[8] → f32[16]" in err


def test_lower_as_text_and_compiled_analyses():
    def f(w, b, x):
        return fnp.maximum(fx.lax.dot(x, w) + b, 0.0)

    args = (fnp.ones((6, 5)), fnp.ones(5), fnp.ones((4, 6)))
    lowered = fx.jit(f).lower(*args)
    text = lowered.as_text()
    for expected in ("# optimized jaxpr", "dot_general", "impl: cpu.blas_gemm",
                     "impl: cpu.fused_elementwise", "@arena+", "# memory: arena"):
        assert expected in text, expected
    compiled = lowered.compile()
    np.testing.assert_allclose(np.asarray(compiled(*args)), np.asarray(f(*args)), rtol=1e-6)
    assert compiled.cost_analysis()["flops"] >= 2 * 4 * 5 * 6
    assert compiled.memory_analysis()["arena_bytes"] >= 4 * 5 * 4
    if cc.compiler() is not None:
        assert "void fx_seg" in compiled.kernel_sources()


def test_without_a_c_compiler_jit_uses_numpy_kernels(monkeypatch):
    monkeypatch.setattr(cc, "compiler", lambda: None)
    monkeypatch.delenv("FX_STRICT")  # the fallback this test means
    f = fx.jit(lambda x: fnp.exp(x) * 2.0 + fx.lax.reduce_sum(x, (0,)))
    x = fnp.asarray(np.arange(4.0, dtype=np.float32))
    assert "numpy." in f.lower(x).as_text()
    np.testing.assert_allclose(np.asarray(f(x)), np.exp(np.arange(4.0)) * 2 + 6, rtol=1e-6)


def test_jit_returns_inputs_literals_and_pytrees():
    f = fx.jit(lambda d: {"same": d["a"], "const": 1.0, "pair": (d["a"] * 2, None)})
    out = f({"a": fnp.arange(3.0)})
    np.testing.assert_allclose(np.asarray(out["same"]), [0, 1, 2])
    assert float(out["const"]) == 1.0 and out["pair"][1] is None
    np.testing.assert_allclose(np.asarray(out["pair"][0]), [0, 2, 4])


def test_donated_input_is_reused_for_the_output_and_deleted():
    step = fx.jit(lambda w, g: w - 0.5 * g, donate_argnums=0)
    w = fnp.asarray(np.ones(4, np.float32))
    g = fnp.asarray(np.arange(4, dtype=np.float32))
    assert "(in donated a)" in step.lower(w, g).as_text()
    buf = w._buf
    w2 = step(w, g)
    np.testing.assert_allclose(np.asarray(w2), [1.0, 0.5, 0.0, -0.5])
    assert w.is_deleted() and w2._buf is buf
    with pytest.raises(RuntimeError, match="donated"):
        _ = w + 1.0
    np.testing.assert_allclose(np.asarray(step(w2, g)), [1.0, 0.0, -1.0, -2.0])


def test_a_donated_numpy_argument_is_neither_written_nor_frozen():
    # Only fx Arrays' buffers are donated: the output must not alias the caller's NumPy array
    # (it wrote the result into it and marked it read-only).
    f = fx.jit(lambda w: w * 2.0, donate_argnums=0)
    for _ in range(2):  # the first call and the cached one
        host = np.ones(4, np.float32)
        out = f(host)
        np.testing.assert_array_equal(host, 1.0)
        assert host.flags.writeable
        host[:] = 5.0
        np.testing.assert_array_equal(np.asarray(out), 2.0)


def test_numpy_arguments_take_the_fast_path_by_shape_and_dtype():
    traced = []

    def f(x, y):
        traced.append(1)
        return x * 2.0 + y

    jf = fx.jit(f)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for x, y in [(a, a), (a + 1, a), (a.T.copy().T, a), (a[:, ::-1], a[:, ::-1])]:
        np.testing.assert_array_equal(np.asarray(jf(x, y)), x * 2 + y)
    assert len(traced) == 1 and len(jf._fast) == 1  # one signature, non-contiguous included
    b = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(jf(b, b)), b * 2.0 + b)
    assert len(traced) == 2  # another dtype: another signature
    mixed = jf(fnp.asarray(a), a)
    np.testing.assert_array_equal(np.asarray(mixed), a * 2 + a)
    assert len(traced) == 2 and len(jf._fast) == 3


def test_pytree_arguments_take_the_fast_path_keyed_by_structure():
    traced = []

    def step(params, state):
        traced.append(1)
        return {k: v * state[0] for k, v in params.items()}, (state[0] + 1,)

    jf = fx.jit(step)
    params = {"w": fnp.ones((2, 3)), "b": fnp.zeros(3)}
    state = (fnp.asarray(2.0),)
    for _ in range(3):  # outputs fed back: the same signature, one trace, one fast entry
        params, state = jf(params, state)
    np.testing.assert_array_equal(np.asarray(params["w"]), np.full((2, 3), 2.0 * 3 * 4))
    assert float(state[0]) == 5.0 and len(traced) == 1 and len(jf._fast) == 1
    # Another structure, a weak-typed leaf or a Python scalar leaf is another key (or none).
    other, _ = jf({"w": fnp.ones((2, 3)), "c": fnp.zeros(3)}, state)
    assert set(other) == {"w", "c"} and len(traced) == 2
    weak, _ = jf(params, (fnp.asarray(2),))
    assert weak["w"].dtype == params["w"].dtype and len(traced) == 3
    scalar, _ = jf(params, (3.0,))
    np.testing.assert_array_equal(np.asarray(scalar["b"]), np.zeros(3))
    assert len(jf._fast) == 3  # the Python scalar leaf is never a fast key


def test_numpy_data_is_copied_so_donation_never_writes_user_arrays():
    host = np.ones(4, np.float32)
    w = fnp.asarray(host)
    fx.jit(lambda w: w * 2.0, donate_argnums=0)(w)
    np.testing.assert_array_equal(host, 1.0)
