"""Linear-algebra and FFT primitives are library calls: named in as_text(), on the host in a
CUDA program where CuPy has no routine for them, and every such primitive of fx.lax has its
routine listed."""

from __future__ import annotations

import importlib

import numpy as np

import fx
import fx.numpy as fnp
from fx.core import Primitive
from fx.lax.linalg import householder as linalg_householder
from fx.lax.linalg import schur_decomposition as linalg_schur
from fx.lax.linalg import solvers as linalg_solvers
from fx.lax.linalg import spectral as linalg_spectral
from fx.lowering.kernels.cpu import library_calls

A = (np.eye(4) * 3 + 0.5).astype(np.float32)


def test_every_linalg_and_fft_primitive_names_its_routine():
    mods = (linalg_solvers, linalg_spectral, linalg_schur, linalg_householder,
            importlib.import_module("fx.lax.fft"))  # (fx.lax.fft is also the function)
    prims = {v for m in mods for v in vars(m).values() if isinstance(v, Primitive)}
    assert len(prims) >= 15
    assert prims - set(library_calls.ROUTINES) == set()


def test_a_library_call_shows_its_routine_and_runs():
    f = fx.jit(lambda a: fnp.linalg.cholesky(a) * 2.0)
    text = f.lower(A).as_text("selection")
    assert "cpu.library (LAPACK potrf" in text
    np.testing.assert_allclose(np.asarray(f(A)), 2 * np.linalg.cholesky(A), rtol=1e-6)


def test_a_cuda_program_runs_library_calls_without_a_gpu_routine_on_the_host():
    # eig has no CuPy routine; the others are cuSOLVER/cuFFT calls (test_cuda_library.py).
    text = fx.jit(lambda x: fnp.linalg.eigvals(x) * 2, backend="cuda").lower(A).as_text()
    assert "opaque[eig]\n      on host (no GPU implementation)" in text
