"""The backend and platform registries: every target-dependent choice reads a record.

``fx.lowering.select.backends`` (compile targets) and ``fx.runtime.platforms`` (memory platforms)
are the only modules that compare backend or platform names; this test reads the sources of
fx/, interpreters/, lowering/ and runtime/ to keep it so.
"""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import fx
from fx.lowering import pipeline
from fx.lowering.select import backends
from fx.runtime import platforms

ROOT = pathlib.Path(__file__).resolve().parents[2]
REGISTRIES = {ROOT / "lowering" / "select" / "backends.py", ROOT / "runtime" / "platforms.py"}
NAMES = "|".join(sorted({*backends.BACKENDS, *platforms.PLATFORMS,
                         *(a for p in platforms.PLATFORMS.values() for a in p.aliases)}))
# name == x, x != name, x in ("cpu", ...), x.platform == ..., backend.startswith("cu")
COMPARISON = re.compile(
    rf"""(==|!=|\bin\b|\bnot in\b)\s*[(\[{{]?\s*["']({NAMES})["']"""
    rf"""|["']({NAMES})["']\s*(==|!=|\bin\b)""")


def _sources():
    for folder in ("fx", "interpreters", "lowering", "runtime"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path not in REGISTRIES:
                yield path


def test_the_scan_sees_the_sources_and_the_pattern_catches_comparisons():
    assert len(list(_sources())) > 100
    for line in ('if backend == "cuda":', "x if dev.platform != 'cpu' else y",
                 'backend in ("cpu", "cuda")', '"gpu" == name'):
        assert COMPARISON.search(line), line
    assert not COMPARISON.search('Device("cuda", 0)')


def test_no_backend_or_platform_name_is_compared_outside_the_registries():
    found = []
    for path in _sources():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if COMPARISON.search(code):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "compare a record's fields instead:\n" + "\n".join(found)


def test_every_backend_names_a_platform_dialect_executor_and_library():
    for name, b in backends.BACKENDS.items():
        assert b.name == name and str(b) == name
        assert b.platform is platforms.platform(b.platform.name)
        assert b.alignment >= 64 and b.alignment & (b.alignment - 1) == 0
        assert callable(b.executor) and callable(b.source)
        kinds = {impl.kind for impl in b.operators}
        assert len(kinds) == len(fx.lowering.fusion.groups.GroupKind), (name, kinds)
        assert all(impl.backend in (name, "any") for impl in b.operators)
    assert backends.CPU.platform.host_memory and not backends.CUDA.platform.host_memory
    assert backends.CPU.native_loops and not backends.CUDA.native_loops


def test_unknown_names_get_clear_errors():
    with pytest.raises(ValueError, match=r"unknown backend 'tpu'; expected one of 'cpu', 'cuda'"):
        backends.get("tpu")
    with pytest.raises(ValueError, match=r"unknown platform 'tpu'"):
        fx.devices("tpu")
    assert backends.get(backends.CUDA) is backends.CUDA


def test_a_lowered_program_carries_its_record(monkeypatch):
    monkeypatch.delenv("FX_STRICT")  # OpenCL has no GEMM implementation: its matmul is NumPy
    x = np.ones((8, 8), np.float32)
    closed = fx.make_jaxpr(lambda x: fx.numpy.sin(x @ x).sum(axis=0) @ x)(x)
    for name in backends.BACKENDS:
        low = pipeline.lower(closed, name)
        assert low.backend is backends.BACKENDS[name]
        assert f"for {name}:" in low.as_text()
        assert low.plan.offsets, "the program should have temporaries"
        assert all(off % low.backend.alignment == 0 for off in low.plan.offsets.values())


def test_as_text_shows_each_stage_alone():
    x = np.ones((8, 8), np.float32)
    low = fx.jit(lambda x: fx.numpy.tanh(x @ x).sum(axis=0)).lower(x)
    full = low.as_text()
    jaxpr, groups = low.as_text("jaxpr"), low.as_text("groups")
    selection, plan, source = low.as_text("selection"), low.as_text("plan"), low.as_text("source")
    assert "dot_general" in jaxpr and "step" not in jaxpr
    assert groups.count("step ") == full.count("  step ") and "impl:" not in groups
    assert selection.count("impl: ") == groups.count("step ") and "cost" in selection
    assert "arena+" in plan or "# memory" in plan
    assert "optimized jaxpr" not in plan and "# memory" in plan
    assert "void" in source and "fx_seg" in source
    with pytest.raises(ValueError, match=r"unknown stage 'ptx'; the stages are 'jaxpr'"):
        low.as_text("ptx")
