"""Test configuration: jax (the oracle) in 64-bit mode, hypothesis profiles.

HYPOTHESIS_PROFILE=ci (default: derandomized, few examples, what CI runs) or thorough (many
examples, for long local runs) or dev.
"""

import os

# Tests run two per core (pytest -n 2): one thread each for OpenMP kernels and BLAS avoids
# oversubscribing the machine (set before NumPy and the kernels' OpenMP runtime load).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=12, derandomize=True, print_blob=True, **_common)
settings.register_profile("dev", max_examples=30, **_common)
settings.register_profile("thorough", max_examples=400, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --- every generated kernel must also compile for CUDA (sm_90) ------------------------------------
# Each test process records the kernels it generates, renders them in the CUDA dialect, and at
# the end compiles them with nvcc in one translation unit; a compile error or a register spill
# in an elementwise/reduction kernel fails the run. Skipped (with a note) without nvcc.

import dataclasses  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

from fx.lowering import pipeline as _pipeline  # noqa: E402
from fx.lowering.render import CUDA, Renderer, render_module  # noqa: E402

_cuda_kernels: dict[str, object] = {}


def _renamed(k, name):
    return k.renamed(name) if hasattr(k, "renamed") else dataclasses.replace(k, name=name)


def _record(low):
    for k in low.kernels:
        text = k.renamed("k").source if hasattr(k, "renamed") else Renderer(CUDA).kernel(
            dataclasses.replace(k, name="k"))
        _cuda_kernels.setdefault(text, k)


_pipeline.observers.append(_record)


def compile_cuda_kernels(kernels) -> tuple[bool, str]:
    """nvcc -cubin for sm_90 over uniquely renamed kernels; (ok, report)."""
    renamed = [_renamed(k, f"fx_test_k{i}") for i, k in enumerate(kernels)]
    with tempfile.TemporaryDirectory() as tmp:
        src = f"{tmp}/kernels.cu"
        with open(src, "w") as f:
            f.write(render_module(renamed, CUDA))
        proc = subprocess.run(
            ["nvcc", "-arch=sm_90", "-cubin", "--fmad=false", "-Xptxas", "-v", "-o",
             f"{tmp}/k.cubin", src],
            capture_output=True, text=True,
        )
    report = proc.stderr
    if proc.returncode != 0:
        return False, report[-6000:]
    spills = [line for line in report.splitlines()
              if "spill" in line and not line.strip().startswith("0 bytes stack frame, 0 bytes")]
    if spills:
        return False, "register spills:\n" + "\n".join(spills[:20])
    return True, report


def compile_cuda_kernels_nvrtc(kernels) -> tuple[bool, str]:
    """The same kernels through NVRTC with CuPy's options (what the CUDA runtime does)."""
    from fx.runtime import nvrtc

    renamed = [_renamed(k, f"fx_test_k{i}") for i, k in enumerate(kernels)]
    ok, log, _ = nvrtc.compile_source(render_module(renamed, CUDA))
    return ok, log[-6000:]


def pytest_sessionfinish(session, exitstatus):
    if not _cuda_kernels:
        return
    from fx.runtime import nvrtc

    checks = []
    if shutil.which("nvcc") is not None:
        checks.append(("nvcc", compile_cuda_kernels))
    if nvrtc.available():
        checks.append(("NVRTC", compile_cuda_kernels_nvrtc))
    if not checks:
        print("\nfx: neither nvcc nor NVRTC found; generated kernels were not compiled for CUDA")
    for tool, check in checks:
        ok, report = check(list(_cuda_kernels.values()))
        if not ok:
            print(f"\nfx: {len(_cuda_kernels)} generated kernels FAILED to compile for sm_90 "
                  f"with {tool}:\n{report}")
            session.exitstatus = 1
