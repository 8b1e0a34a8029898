"""The C compile cache: one build per source, reused across processes, rebuilt when corrupt
or stale."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from fx.runtime import cc

pytestmark = pytest.mark.skipif(cc.compiler() is None, reason="needs a C compiler")

SOURCE = "int fx_answer(void) { return 42; }\n"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FX_CACHE_DIR", str(tmp_path))
    cc._loaded.clear()
    yield tmp_path
    cc._loaded.clear()


def _sos(path):
    return sorted(p for p in path.iterdir() if p.suffix == ".so")


def test_build_compiles_once_and_loads(cache, monkeypatch):
    lib = cc.build(SOURCE)
    assert lib.fx_answer() == 42
    (so,) = _sos(cache)
    cc._loaded.clear()

    def no_compiler(*a, **k):
        raise AssertionError("recompiled although a valid cache entry exists")

    monkeypatch.setattr(cc, "_compile", no_compiler)
    assert cc.build(SOURCE).fx_answer() == 42
    assert _sos(cache) == [so]


_BUILD_SCRIPT = textwrap.dedent("""
    import sys
    from fx.runtime import cc
    calls = []
    real = cc._compile
    cc._compile = lambda *a: (calls.append(1), real(*a))
    lib = cc.build(sys.argv[1])
    print(lib.fx_answer(), len(calls))
""")


def _build_in_fresh_process(source, cache_dir):
    env = dict(os.environ, FX_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", _BUILD_SCRIPT, source], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), int(out[1])


def test_corrupt_entry_is_rebuilt(tmp_path):
    assert _build_in_fresh_process(SOURCE, tmp_path) == (42, 1)
    (so,) = _sos(tmp_path)
    so.unlink()
    so.write_bytes(b"not a shared library")  # e.g. a truncated file from a crashed writer
    assert _build_in_fresh_process(SOURCE, tmp_path) == (42, 1)
    assert _build_in_fresh_process(SOURCE, tmp_path) == (42, 0)


def test_stale_entry_with_another_key_is_rebuilt(tmp_path):
    other = "int fx_answer(void) { return 7; }\n"
    assert _build_in_fresh_process(other, tmp_path) == (7, 1)
    (other_so,) = _sos(tmp_path)
    target = tmp_path / f"fx_{cc.cache_key(SOURCE)}.so"
    target.write_bytes(other_so.read_bytes())  # a library that carries another key
    assert _build_in_fresh_process(SOURCE, tmp_path) == (42, 1)


def test_stale_entry_is_rebuilt_in_the_same_process(cache):
    other = "int fx_answer(void) { return 7; }\n"
    cc.build(other)
    (other_so,) = _sos(cache)
    target = cache / f"fx_{cc.cache_key(SOURCE)}.so"
    target.write_bytes(other_so.read_bytes())
    assert cc.build(SOURCE).fx_answer() == 42


def test_disk_cache_is_reused_across_processes(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, fx, fx.numpy as fnp
        from fx.runtime import cc
        calls = []
        real = cc._compile
        cc._compile = lambda *a: (calls.append(1), real(*a))
        f = fx.jit(lambda x: fnp.tanh(x) * 3.0 + 1.0)
        print(float(f(fnp.ones(8)).sum()), len(calls))
    """)
    env = dict(os.environ, FX_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.split() for _ in range(2)]
    assert runs[0][0] == runs[1][0]
    assert runs[0][1] == "1" and runs[1][1] == "0"  # the second process compiled nothing
