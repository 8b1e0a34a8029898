"""The OpenCL backend (pyopencl on Debian's PoCL CPU runtime in CI): the jit op tables
(tests/fx/test_jit_ops.py, tests/scientific_rows.py) run on it against eager results (bitwise
where the CPU jit test is bitwise, with its tolerances otherwise), the dialect's text, launch
sizes, and one executable called from many threads.

Without pyopencl or an OpenCL device the tests that run programs skip with the reason; the
rendering tests need neither. The default run takes a representative subset of the op table
(one row per kind of kernel and step); ``-m slow`` runs every other row.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import pathlib
import threading

import numpy as np
import pytest
from harness import assert_bitwise, to_fx
from hypothesis import given
from hypothesis import strategies as st
from jit_rows import _is_exact, assert_jit_close
from scientific_rows import ROWS as SCIENTIFIC_ROWS

import fx
import fx.numpy as fnp
from fx.lowering.pipeline import lower
from fx.lowering.render.opencl_dialect import OPENCL
from fx.lowering.render.renderer import CUDA, C, Renderer
from fx.lowering.select import backends
from fx.runtime import platforms
from fx.runtime.opencl import LOCAL_SIZE, global_size

needs_device = pytest.mark.skipif(
    not platforms.OPENCL.available(),
    reason="needs pyopencl and an OpenCL device (pip install fx[opencl]; Debian: apt-get "
           "install pocl-opencl-icd)")


def _load_op_table():
    path = pathlib.Path(__file__).resolve().parents[1] / "fx" / "test_jit_ops.py"
    spec = importlib.util.spec_from_file_location("_jit_op_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ROWS


ROWS = {r.name: r for r in (*_load_op_table(), *SCIENTIFIC_ROWS)}

# Rows that cannot pass on this backend, with the reason. None: every row of both tables passes
# (a row's own ``xfail`` is about eager against jax, which is not compared here).
XFAIL: dict[str, str] = {}

# The default run (~40 s with cold compile caches on 2 cores): one row per kind of kernel or
# step — float32/float64 libm and prelude functions, half precision, integer division and
# shifts, conversions with saturation, bit casts, complex pairs, NaN-propagating reductions,
# argmax's lanes, a matmul (a host step with copies), loops over compiled bodies, gather and
# scatter, windows, sorting and cumulative ops, selects over every dtype.
DEFAULT = ("sin-cos-tan-atan", "exp-exp2-expm1", "binary-half", "div-rem-int-signs", "shifts",
           "convert_element_type-special", "complex-parts", "bitcast_convert_type",
           "reductions-special", "argmax-argmin-special", "dot_general-batched",
           "while-fori-scan", "gather-1", "scatter_add", "reduce_window", "sort", "cumulative",
           "select_n-bool")


def _params(names, marks=()):
    out = []
    for name in names:
        m = list(marks)
        if name in XFAIL:
            m.append(pytest.mark.xfail(strict=True, reason=XFAIL[name]))
        out.append(pytest.param(ROWS[name], id=name, marks=m))
    return out


def check_row_on_opencl(row) -> None:
    """All of the row's argument sets through one program on OpenCL, against eager CPU."""
    sets = [s for _, s in row.argument_sets()]
    eager = [row.fx_fn(*to_fx(list(s))) for s in sets]
    exact = [_is_exact(fx.make_jaxpr(row.fx_fn)(*s)) for s in sets]
    got = fx.jit(lambda sets: [row.fx_fn(*s) for s in sets], backend="opencl")(sets)
    assert len(got) == len(sets)
    for s, g, e, ex in zip(sets, got, eager, exact):
        where = f"{row.name} args {[f'{a.dtype}{list(np.shape(a))}' for a in s]}"
        if ex:
            assert_bitwise(g, e, f"{where}: opencl jit vs eager (exact)")
        else:
            assert_jit_close(g, e, f"{where}: opencl jit vs eager", row.slack)


@needs_device
@pytest.mark.parametrize("row", _params(DEFAULT))
def test_op_table_subset_on_opencl(row):
    check_row_on_opencl(row)


@needs_device
@pytest.mark.slow
@pytest.mark.parametrize("row", _params([n for n in ROWS if n not in DEFAULT]))
def test_op_table_on_opencl(row):
    check_row_on_opencl(row)


# --- rendering: needs no device ----------------------------------------------------------------

GOLDEN_OPENCL = """\
__kernel void k(__global const float* restrict in0, __global const float* restrict in1, \
__global float* restrict out0) {
  for (int i0 = 0 + (int)get_global_id(0); i0 < 16; i0 += (int)get_global_size(0)) {
    const float t0 = in0[i0];
    const float t1 = tanhf(t0);
    const float t2 = in1[i0];
    const float t3 = (t1 * t2);
    const float t4 = (t3 + 1.0f);
    out0[i0] = t4;
  }
}"""


@pytest.mark.default_mode  # NumPy float64 data: float32 in the default mode, as written
def test_golden_opencl_kernel_and_the_other_dialects_unchanged():
    low = lower(fx.make_jaxpr(lambda x, y: fnp.tanh(x) * y + 1.0)(fnp.ones(16), fnp.ones(16)),
                "opencl")
    (k,) = low.kernels
    k = dataclasses.replace(k, name="k")
    assert Renderer(OPENCL).kernel(k) == GOLDEN_OPENCL
    # The address-space field is the only new one, empty for C and CUDA: their text is as
    # before (tests/lowering/test_render.py holds their golden kernels).
    assert C.pointer_space == "" and CUDA.pointer_space == ""
    assert "__global " not in Renderer(C).kernel(k) + Renderer(CUDA).kernel(k)
    assert low.source.startswith(OPENCL.file_prelude)
    assert "__kernel void k0(" in low.source and "#include" not in low.source


def test_the_backend_record():
    b = backends.get("opencl")
    assert b.platform is platforms.OPENCL and b.dialect is OPENCL and not b.native_loops
    assert b.host_steps_need_copies and not platforms.OPENCL.eager
    # Never the default platform, even where a device is present (fx arrays live on the host).
    assert platforms.preferred() is not platforms.OPENCL


@given(st.integers(0, 10**8), st.integers(1, 64))
def test_global_size_is_whole_groups_covering_the_work_or_filling_the_device(iters, units):
    g = global_size(iters, units)
    assert g % LOCAL_SIZE == 0 and g >= LOCAL_SIZE
    assert g >= iters or g == LOCAL_SIZE * units * 16


# --- running programs -----------------------------------------------------------------------------


@needs_device
def test_results_are_host_fx_arrays_and_match_cpu():
    def f(w, x):
        return fnp.tanh(x @ w).sum(axis=0), fnp.maximum(x, 0.0)

    w, x = np.random.default_rng(0).standard_normal((2, 8, 8))
    got = fx.jit(f, backend="opencl")(w, x)
    want = fx.jit(f, backend="cpu")(w, x)
    for g, e in zip(got, want):
        assert isinstance(g, fx.Array)
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-12, atol=1e-12)
    assert float((got[1] + 1.0).sum()) == pytest.approx(float((want[1] + 1.0).sum()))


@needs_device
def test_one_executable_called_from_many_threads():
    def f(x, y):
        h = fnp.tanh(x @ y + 1.0)
        return (h @ y).sum(axis=1), fnp.exp(-h).max(axis=0)

    rng = np.random.default_rng(1)
    cases = [(rng.standard_normal((64, 32)), rng.standard_normal((32, 32))) for _ in range(8)]
    jf = fx.jit(f, backend="opencl")  # one executable: every case has the same shapes
    want = [[np.asarray(o) for o in jf(*c)] for c in cases]
    errors, barrier = [], threading.Barrier(4)

    def work(k):
        try:
            barrier.wait()
            for rep in range(6):
                i = (k + rep) % len(cases)
                for g, w in zip(jf(*cases[i]), want[i]):
                    assert np.array_equal(np.asarray(g), w)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_without_a_device_the_backend_says_what_to_install(monkeypatch):
    monkeypatch.setattr(platforms, "opencl_devices", lambda: ())
    assert not platforms.OPENCL.available()
    with pytest.raises(RuntimeError, match="pocl-opencl-icd"):
        fx.jit(lambda x: x * 2.0 + 1.0, backend="opencl")(np.ones(3))


def test_numpy_steps_copy_to_the_host_and_say_so():
    """NumPy cannot read OpenCL buffers: the program IR marks every NumPy step (here the
    matmul with its epilogue, NumPy's on this backend) as copying, and as_text() says so; a
    CPU program's steps do not copy."""

    def f(a, b):
        return fnp.tanh(a @ b)

    a = np.ones((8, 8), np.float32)
    cl_text = fx.jit(f, backend="opencl").lower(a, a).as_text()
    assert "host_call (copies to the host and back) (step 0)" in cl_text
    cpu = fx.jit(f, backend="cpu").lower(a, a)
    assert not any(op.copies for op in cpu.program.ops)
    assert "copies to the host" not in cpu.as_text()


def test_fx_platform_refuses_a_compile_only_target():
    devices = importlib.import_module("fx.devices")  # (fx.devices is also the function)
    with pytest.raises(ValueError, match=r"'opencl' is a compile target only.*backend='opencl'"):
        devices._default_backend("opencl")
    assert devices._default_backend("cpu") == "cpu"


def _loops(x, w):
    def body(c, xi):
        return fnp.tanh(c * 0.5 + xi), (c.sum(), xi * 2, 3.0)  # a literal result too

    c, (s, ys, threes) = fx.lax.scan(body, x[0], x)
    back, _ = fx.lax.scan(lambda c, xi: (c + xi, None), c, x, reverse=True)
    passthrough, _ = fx.lax.scan(lambda c, xi: ((c[0], c[1] + xi), None), (c, c), x)
    empty, _ = fx.lax.scan(lambda c, xi: (c * xi, c), c, x[:0])
    y = fx.lax.fori_loop(0, 3, lambda i, v: v + fnp.sin(v) * i, c)
    z = fx.lax.while_loop(lambda v: v[0] < 10.0, lambda v: v * 1.5 + 1.0, fnp.abs(c) + 0.1)
    q = fx.lax.cond(w[0, 0] > 0, lambda a: a * 2.0, lambda a: a - 1.0, c)
    return y, s, ys, threes, back, passthrough, empty, z, q


@needs_device
def test_loops_run_on_the_device_as_the_host_loop_does(monkeypatch):
    """Loops whose bodies are all kernels run as launch sequences on the device
    (fx.runtime.device_loops): bitwise the results of the host loop over the compiled body,
    close to the CPU's; a while reads its predicate once per iteration."""
    rng = np.random.default_rng(0)
    x = rng.random((5, 4), np.float32)
    w = rng.random((4, 4), np.float32)
    closed = fx.make_jaxpr(_loops)(x, w)
    device = lower(closed, backends.OPENCL)
    kinds = [op.label for op in device.ops if op.label.startswith(("loop", "conditional"))]
    assert len(kinds) == 7 and all("launched on the device" in k for k in kinds), kinds
    assert "launched on the device" in device.as_text()
    host = lower(closed, dataclasses.replace(backends.OPENCL, device_loops=False))
    assert not any(op.device for op in host.ops)
    from fx.runtime import opencl

    reads = []
    real_read = opencl._OpenCLMemory.read
    monkeypatch.setattr(opencl._OpenCLMemory, "read",
                        lambda self, v: reads.append(1) or real_read(self, v))
    got = fx.tree_util.tree_leaves(device.compile()([x, w]))
    want = fx.tree_util.tree_leaves(host.compile()([x, w]))
    for a, b in zip(got, want):
        assert_bitwise(np.asarray(a), np.asarray(b))
    cpu = fx.tree_util.tree_leaves(fx.jit(_loops)(x, w))
    for a, b in zip(got, cpu):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6)
    c = np.asarray(fx.lax.scan(lambda c, xi: (fnp.tanh(c * 0.5 + xi), None), x[0], x)[0])
    v, trips = np.abs(c) + np.float32(0.1), 0
    while v[0] < 10.0:
        v, trips = v * 1.5 + 1.0, trips + 1
    assert len(reads) == (trips + 1) + 1  # the while's predicate per test, the cond's index
