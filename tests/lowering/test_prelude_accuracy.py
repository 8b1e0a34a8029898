"""The generated float32 exp/log family (the C prelude's vectorizable polynomials): error in
ulp against float64 NumPy over dense ranges, including the ends where they switch branches.

Each function is checked twice: through ``fx.jit`` (the real pipeline and flags, so with a
fused multiply-add on a CPU that has one), and compiled straight from the prelude with
``__FP_FAST_FMAF`` undefined, the path a CPU without FMA (x86-64-v2) takes."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

import fx
import fx.numpy as fnp
from fx.lowering.render.prelude import PRELUDE
from fx.lowering.render.renderer import C
from fx.runtime import cc


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


CASES = [  # function, C name, reference, points, max ulp
    ("exp", "fx_expf", np.exp, np.linspace(-103.0, 88.7, 200_001), 1.0),
    ("log", "fx_logf", np.log, np.geomspace(1e-37, 3e38, 200_001), 1.0),
    ("tanh", "fx_tanhf", np.tanh, np.linspace(-10.0, 10.0, 200_001), 2.0),
    ("log1p", "fx_log1pf", np.log1p, np.concatenate([np.linspace(-0.999, 1.0, 100_001),
                                                     np.geomspace(1.0, 1e30, 100_000)]), 3.0),
    ("expm1", "fx_expm1f", np.expm1, np.linspace(-20.0, 88.0, 200_001), 3.0),
    ("logistic", "fx_logisticf", _logistic, np.linspace(-80.0, 80.0, 200_001), 2.0),
]
_FNS = {"logistic": fx.nn.sigmoid}


@pytest.fixture(scope="module")
def without_fma(tmp_path_factory):
    """The prelude compiled with the project's flags but no hardware fused multiply-add: one
    ``apply_<name>(x, y, n)`` per function."""
    if cc.compiler() is None:
        pytest.skip("no C compiler")
    calls = "\n".join(f"void apply_{c}(const float* x, float* y, long n) "
                      f"{{ for (long i = 0; i < n; i++) y[i] = {c}(x[i]); }}"
                      for _, c, *_ in CASES)
    d = tmp_path_factory.mktemp("nofma")
    src, lib = d / "prelude.c", d / "prelude.so"
    src.write_text(C.file_prelude + PRELUDE + calls)
    proc = subprocess.run(
        [cc.compiler(), *cc.FLAGS, "-U__FP_FAST_FMAF", str(src), "-o", str(lib), "-lm"],
        capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return ctypes.CDLL(str(lib))


def _check(name, got, want, x, bound):
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    err = np.abs(got.astype(np.float64) - want) / ulp
    worst = int(np.argmax(err))
    assert err[worst] <= bound, f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}"


@pytest.mark.parametrize("name,c_name,ref,points,bound", CASES, ids=[c[0] for c in CASES])
def test_generated_float32_transcendentals_are_within_a_few_ulp(name, c_name, ref, points,
                                                                bound):
    x = points.astype(np.float32)
    got = np.asarray(fx.jit(_FNS.get(name) or getattr(fnp, name))(x))
    _check(name, got, ref(x.astype(np.float64)), x, bound)


@pytest.mark.parametrize("name,c_name,ref,points,bound", CASES, ids=[c[0] for c in CASES])
def test_the_same_bounds_hold_without_fused_multiply_add(without_fma, name, c_name, ref, points,
                                                         bound):
    x = np.ascontiguousarray(points.astype(np.float32))
    got = np.empty_like(x)
    fn = getattr(without_fma, f"apply_{c_name}")
    fn(x.ctypes.data_as(ctypes.c_void_p), got.ctypes.data_as(ctypes.c_void_p),
       ctypes.c_long(x.size))
    _check(name, got, ref(x.astype(np.float64)), x, bound)
