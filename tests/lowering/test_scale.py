"""Programs of thousands of equations: they compile (no stage recurses once per equation), give
eager's results (bit for bit where the operations are exact), and the compiler's work grows
linearly with their size.

The 10,000-equation variants are marked ``slow``; the default sizes are still far beyond
Python's recursion limit and several fusion groups long.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from harness import python_calls

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.lowering import pipeline
from fx.lowering.fusion.groups import MAX_GROUP_EQNS
from fx.runtime import cc

pytestmark = pytest.mark.skipif(cc.compiler() is None, reason="needs a C compiler")

LONG = [1500, pytest.param(10_000, marks=pytest.mark.slow)]


@pytest.fixture
def unrecorded(monkeypatch):
    """Programs of dozens of distinct kernels of one kind (the same operations with other
    constants or offsets) are not handed to the suite's end-of-run CUDA compile of every
    kernel: minutes of nvcc for kernels the op tables already check one at a time."""
    monkeypatch.setattr(pipeline, "observers", [])


def _bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.uint64 if a.dtype.itemsize == 8 else np.uint32)


def exact_chain(n: int):
    """Integer and float32 multiply-adds (exact operations: one rounding each, as in NumPy).
    The constants repeat, so most kernels are alike (the end of the test run compiles every
    distinct kernel for CUDA)."""
    def f(i, x):
        for k in range(n):
            i = i * 3 + (k % 5 + 1)  # wraps around: int32 arithmetic modulo 2**32
            x = x * 0.999 + np.float32(k % 4 * 0.25)
        return i, x
    return f


def sin_chain(n: int):
    def f(x):
        for _ in range(n):
            x = fnp.sin(x) + 1.0
        return x
    return f


@pytest.mark.parametrize("n", LONG)
def test_long_exact_chain_is_bit_identical_to_eager(n):
    f = exact_chain(n)
    i = np.arange(-8, 8, dtype=np.int32)
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    lowered = fx.jit(f).lower(i, x)
    stats = lowered.program.stats
    assert stats.eqns >= 4 * n
    assert stats.kernels >= stats.eqns // MAX_GROUP_EQNS  # split, not one giant kernel
    got, want = lowered.compile()(i, x), f(i, x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(_bits(g), _bits(w))


@pytest.mark.parametrize("n", LONG)
def test_long_transcendental_chain_matches_eager(n):
    f = sin_chain(n)
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(fx.jit(f)(x)), np.asarray(f(x)), rtol=2e-6)


@pytest.mark.parametrize("n", [1000, pytest.param(10_000, marks=pytest.mark.slow)])
def test_deep_gradient_matches_eager(n):
    def loss(x):
        return fnp.sum(sin_chain(n)(x) * x)

    x = np.linspace(-1, 1, 32, dtype=np.float32)
    want = fx.grad(loss)(x)
    np.testing.assert_allclose(np.asarray(fx.jit(fx.grad(loss))(x)), np.asarray(want),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(fx.grad(fx.jit(loss))(x)), np.asarray(want),
                               rtol=1e-5, atol=1e-6)


def test_wide_program_matches_eager(unrecorded):
    """Thousands of independent terms of one input, summed: siblings to merge, one long sum."""
    def f(i, x):
        a = sum(i * k for k in range(1, 2001))
        b = sum(fnp.sin(x * np.float32(k * 1e-3)) for k in range(1, 1001))
        return a, b

    i = np.arange(-8, 8, dtype=np.int32)
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    (ga, gb), (wa, wb) = fx.jit(f)(i, x), f(i, x)
    np.testing.assert_array_equal(_bits(ga), _bits(wa))
    np.testing.assert_allclose(np.asarray(gb), np.asarray(wb), rtol=1e-5)


def test_long_chains_of_index_maps_are_bit_identical(unrecorded):
    """Slices, pads and transposes compose into index arithmetic that would be as deep as the
    chain; it is bound to locals instead."""
    def f(x, m):
        for _ in range(600):
            x = lax.pad(x[1:], np.float32(0.5), [(0, 1, 0)]) * 1.5
            m = m.T + 1.0
        return x, m

    x = np.linspace(-1, 1, 32, dtype=np.float32)
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    for g, w in zip(fx.jit(f)(x, m), f(x, m)):
        np.testing.assert_array_equal(_bits(g), _bits(w))


_LOW_LIMIT_SCRIPT = textwrap.dedent("""
    import pickle, sys
    import numpy as np
    import fx, fx.numpy as fnp, fx.lax as lax
    from fx.lowering.render.renderer import CUDA, Renderer

    n = int(sys.argv[1])
    def f(x):
        for k in range(n):
            x = fnp.sin(x) * 0.5 + np.float32(k % 7)
        return x
    def moves(x):
        for _ in range(n // 4):
            x = lax.pad(x[1:], 0.0, [(0, 1, 0)]) + 1.0
        return x
    def loss(x):
        return fnp.sum(f(x))
    x = np.linspace(0, 1, 8, dtype=np.float32)
    xs = np.ones((3, 8), np.float32)
    sys.setrecursionlimit(int(sys.argv[2]))
    jaxpr = fx.make_jaxpr(f)(x)
    str(jaxpr)
    fx.jit(f)(x)
    fx.jit(moves)(x)
    fx.grad(loss)(x)
    fx.jit(fx.grad(loss))(x)
    fx.grad(fx.jit(loss))(x)
    fx.vmap(f)(xs)
    fx.jit(fx.vmap(f))(xs)
    fx.jvp(f, (x,), (x,))
    for g in (f, moves, fx.grad(loss)):
        lowered = fx.jit(g).lower(x)
        lowered.as_text()
        kernels = lowered.program.kernels
        pickle.dumps(kernels)
        {hash(k) for k in kernels}
        for k in kernels:
            Renderer(CUDA).kernel(k)
    print("ok")
""")


def test_no_stage_recurses_once_per_equation(tmp_path):
    """Tracing, printing, every transformation, the graph passes, fusion, codegen, rendering
    (both dialects), the kernel IR's hashing and pickling: a 600-step chain under a
    recursion limit of 250."""
    env = dict(os.environ, FX_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", _LOW_LIMIT_SCRIPT, "600", "250"], env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split()[-1] == "ok"


def _mlp_gradient_work(layers: int) -> int:
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((8, 8)).astype(np.float32),
               rng.standard_normal(8).astype(np.float32)) for _ in range(layers)]
    x = rng.standard_normal((4, 8)).astype(np.float32)

    def loss(params, x):
        for w, b in params:
            x = fnp.tanh(x @ w + b) * 0.5 + x
        return fnp.sum(fx.nn.log_softmax(x) * x)

    closed = []
    work = python_calls(lambda: closed.append(fx.make_jaxpr(fx.grad(loss))(params, x)))
    return work + python_calls(lambda: pipeline.lower(closed[0]))


def _chain_work(n: int) -> int:
    closed = fx.make_jaxpr(exact_chain(n))(np.int32(1), np.float32(1))
    return python_calls(lambda: pipeline.lower(closed))


@pytest.mark.parametrize("work, small", [(_mlp_gradient_work, 60), (_chain_work, 500)])
def test_compile_work_grows_linearly(work, small):
    """Four times the program, about four times the work (3.9-4.0 here; the memory planner
    that looped over every placed buffer per placement gave 4.9 on the MLP, and a pass fully
    quadratic in the number of equations gives up to sixteen)."""
    ratio = work(4 * small) / work(small)
    assert ratio < 4.3, ratio


def test_a_small_change_recompiles_only_its_translation_unit(tmp_path, monkeypatch, unrecorded):
    monkeypatch.setenv("FX_CACHE_DIR", str(tmp_path))
    compiled = []
    real = cc._compile
    monkeypatch.setattr(cc, "_compile", lambda *a: (compiled.append(a[1]), real(*a)))

    def program(c: float):
        def f(x):
            for k in range(3000):
                x = x * np.float32(1 + k % 101 * 1e-4) + np.float32(c if k == 2000 else k)
            return x
        return f

    x = np.linspace(-1, 1, 16, dtype=np.float32)
    first = fx.jit(program(0.25)).lower(x)
    units = first.program.stats.units
    assert units > 2
    np.testing.assert_array_equal(_bits(first.compile()(x)), _bits(program(0.25)(x)))
    assert len(compiled) == units
    changed = fx.jit(program(0.75)).lower(x)
    assert changed.program.stats.units == units
    np.testing.assert_array_equal(_bits(changed.compile()(x)), _bits(program(0.75)(x)))
    assert len(compiled) == units + 1  # only the unit holding step 2000 was compiled again
