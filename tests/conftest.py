"""Test configuration: jax (the oracle) and fx in 64-bit mode, hypothesis profiles.

HYPOTHESIS_PROFILE=ci (default: derandomized, few examples, what CI runs) or thorough (many
examples, for long local runs) or dev.
"""

import os
import sys

# Tests run two per core (pytest -n 2): one thread each for OpenMP kernels and BLAS avoids
# oversubscribing the machine (set before NumPy and the kernels' OpenMP runtime load).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

# fx in the oracle's mode: tests compare with jax in x64 mode, so fx runs in x64 mode too
# (tests of the default mode switch both with ``fx.enable_x64(False)`` and jax's config).
import fx  # noqa: E402

fx.config.update("jax_enable_x64", True)

@pytest.fixture(autouse=True)
def _mode(request):
    if request.node.get_closest_marker("default_mode") is None:
        yield
        return
    jax.config.update("jax_enable_x64", False)
    try:
        with fx.enable_x64(False):
            yield
    finally:
        jax.config.update("jax_enable_x64", True)


@pytest.fixture(scope="module")
def strict_fallbacks():
    """``FX_STRICT=1`` for a module of compiled-path tests: a group that runs as NumPy for an
    unexpected reason (no C compiler, no implementation; see ``fx.lowering.select.fallbacks``) fails
    its test. A test that means such a fallback unsets it (``monkeypatch.delenv``). Module
    scope: hypothesis refuses function-scoped fixtures around ``@given`` tests."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FX_STRICT", "1")
        yield


# Docstring examples show what users see in the default mode: every ``doctest.testmod`` of the
# suite runs them in it.
import doctest  # noqa: E402

_testmod = doctest.testmod


def _testmod_in_default_mode(*args, **kwargs):
    with fx.enable_x64(False):
        return _testmod(*args, **kwargs)


doctest.testmod = _testmod_in_default_mode

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

import pickle  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from fx.lowering import pipeline as _pipeline  # noqa: E402
from fx.lowering.render.renderer import CUDA, Renderer, render_module  # noqa: E402

_cuda_kernels: dict[str, object] = {}


def _renamed(k, name):
    return k.renamed(name)


_NUMBER = re.compile(r"\b\d+\b")


def _record(low):
    # Kernels equal but for their integer constants (extents, strides, offsets: the same op
    # at another shape) compile alike; one of each is compiled.
    for k in low.kernels:
        text = _NUMBER.sub("N", k.renamed("k").render(Renderer(CUDA)))
        if text:  # (a host-runtime call, fx.distributed.native's, has no CUDA form)
            _cuda_kernels.setdefault(text, k)


_pipeline.observers.append(_record)


def _compile_in_parts(renamed, command) -> list[tuple[str, int]]:
    """Render ``renamed`` kernels as one translation unit per core (one compiler over
    thousands of kernels takes minutes) and compile them at the same time with
    ``command(source_path, part)``; (stderr, return code) per part."""
    parts = max(1, min(os.cpu_count() or 1, len(renamed) // 200))
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for j in range(parts):
            src = f"{tmp}/kernels{j}.cu"
            with open(src, "w") as f:
                f.write(render_module(renamed[j::parts], CUDA))
            log = open(f"{tmp}/log{j}", "w+")  # (a file: a full pipe would stall the compiler)
            procs.append((subprocess.Popen(command(src, f"{tmp}/k{j}.cubin"),
                                           stdout=subprocess.DEVNULL, stderr=log), log))
        results = []
        for proc, log in procs:
            rc = proc.wait()
            log.seek(0)
            results.append((log.read(), rc))
            log.close()
    return results


def compile_cuda_kernels(kernels) -> tuple[bool, str]:
    """nvcc -cubin for sm_90 over uniquely renamed kernels; (ok, report)."""
    renamed = [_renamed(k, f"fx_test_k{i}") for i, k in enumerate(kernels)]
    results = _compile_in_parts(renamed, lambda src, out: [
        "nvcc", "-arch=sm_90", "-cubin", "--fmad=false", "-Xptxas", "-v", "-o", out, src])
    report = "".join(err for err, _ in results)
    if any(rc != 0 for _, rc in results):
        return False, "".join(err for err, rc in results if rc != 0)[-6000:]
    spills, function = [], "?"
    for line in report.splitlines():
        if "Function properties for" in line:
            function = line.split("for", 1)[1].strip()
        elif "spill" in line and re.search(r"[1-9]\d* bytes spill (stores|loads)", line):
            # A stack frame alone is fine (libdevice's sin/cos reduce huge arguments through
            # a small local array); spilled registers are not.
            spills.append(f"{function}: {line.strip()}")
    if spills:
        report = "register spills:\n" + "\n".join(spills[:20])
        m = re.match(r"fx_test_k(\d+):", spills[0])
        if m:
            k = renamed[int(m.group(1))]
            source = k.render(Renderer(CUDA))
            report += "\nthe first such kernel:\n" + source
        return False, report
    return True, report


_NVRTC_CHUNK = (
    "import sys; from fx.runtime import nvrtc\n"
    "ok, log, _ = nvrtc.compile_source(open(sys.argv[1]).read())\n"
    "sys.stderr.write(log[-6000:]); sys.exit(0 if ok else 1)\n")


def compile_cuda_kernels_nvrtc(kernels) -> tuple[bool, str]:
    """The same kernels through NVRTC with CuPy's options (what the CUDA runtime does)."""
    renamed = [_renamed(k, f"fx_test_k{i}") for i, k in enumerate(kernels)]
    results = _compile_in_parts(renamed,
                                lambda src, out: [sys.executable, "-c", _NVRTC_CHUNK, src])
    failed = [err for err, rc in results if rc != 0]
    return not failed, "".join(failed or [err for err, _ in results])[-6000:]


def pytest_addoption(parser):
    parser.addoption(
        "--slow-slice", metavar="SEED", default=None,
        help="keep only the 1/16 of the slow tests that SEED picks (CI passes the commit "
             "hash with -m slow, so every slow row runs for some commits)")


@pytest.hookimpl(tryfirst=True)  # before -m deselects the rows it marks slow
def pytest_collection_modifyitems(config, items):
    from thinning import slow_slice, thin

    thin(items)
    seed = config.getoption("--slow-slice")
    if seed is not None:
        kept, dropped = slow_slice(items, seed)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_configure(config):
    # The xdist controller gives its workers (spawned later, inheriting the environment) a
    # folder where each leaves the kernels it generated; the controller compiles them all.
    if not hasattr(config, "workerinput") and "FX_TEST_KERNEL_DIR" not in os.environ:
        config.fx_kernel_dir = tempfile.mkdtemp(prefix="fx-test-kernels-")
        os.environ["FX_TEST_KERNEL_DIR"] = config.fx_kernel_dir


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput"):  # an xdist worker: hand the kernels to the controller
        folder = os.environ.get("FX_TEST_KERNEL_DIR")
        if folder and _cuda_kernels:
            path = os.path.join(folder, f"{config.workerinput['workerid']}.pkl")
            with open(path + ".tmp", "wb") as f:
                pickle.dump(list(_cuda_kernels.items()), f)
            os.replace(path + ".tmp", path)
        return
    kernels = dict(_cuda_kernels)
    folder = getattr(config, "fx_kernel_dir", None)
    if folder:
        for name in sorted(os.listdir(folder)):
            if name.endswith(".pkl"):
                with open(os.path.join(folder, name), "rb") as f:
                    for text, k in pickle.load(f):
                        kernels.setdefault(text, k)
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop("FX_TEST_KERNEL_DIR", None)
    if not kernels:
        return
    from fx.runtime import nvrtc

    checks = []
    if shutil.which("nvcc") is not None:
        checks.append(("nvcc", compile_cuda_kernels))
    if nvrtc.available():
        checks.append(("NVRTC", compile_cuda_kernels_nvrtc))
    if not checks:
        print("\nfx: neither nvcc nor NVRTC found; generated kernels were not compiled for CUDA")
    every = list(kernels.values())
    for tool, check in checks:
        # nvcc compiles every kernel; NVRTC (the runtime's compiler: the same source, its own
        # headers) an evenly spread sample of at most 400, which meets every dialect feature
        # the run used many times over (all of them took NVRTC minutes).
        chosen = every if tool == "nvcc" else every[::-(-len(every) // 400)]
        start = time.perf_counter()
        ok, report = check(chosen)
        print(f"\nfx: {tool} compiled {len(chosen)} of {len(kernels)} generated kernels for "
              f"sm_90 in {time.perf_counter() - start:.0f} s")
        if not ok:
            print(f"\nfx: {len(kernels)} generated kernels FAILED to compile for sm_90 "
                  f"with {tool}:\n{report}")
            session.exitstatus = 1
