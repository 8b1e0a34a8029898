"""The C compile cache: one build per source, reused across processes, rebuilt when corrupt
or stale; a source of several translation units compiles and caches each on its own, once
however many threads ask."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
import threading
import time

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


# --- programs of several translation units ------------------------------------------------------

PRELUDE = "static int fx_twice(int x) { return 2 * x; }\n"
UNIT_A = "int fx_a(void) { return fx_twice(1); }\n"
UNIT_B = "int fx_b(void) { return fx_twice(2); }\n"


def _counting_compiles(monkeypatch, delay: float = 0.0) -> list:
    calls = []
    real = cc._compile

    def compile_(source, path):
        calls.append(path)
        time.sleep(delay)
        real(source, path)

    monkeypatch.setattr(cc, "_compile", compile_)
    return calls


def test_units_compile_separately_and_load_as_one_library(cache, monkeypatch):
    calls = _counting_compiles(monkeypatch)
    source = cc.Source(PRELUDE, [UNIT_A, UNIT_B])
    assert source == PRELUDE + UNIT_A + UNIT_B and source.units == (PRELUDE + UNIT_A,
                                                                     PRELUDE + UNIT_B)
    lib = cc.build(source)
    assert (lib.fx_a(), lib.fx_b()) == (2, 4)
    assert len(calls) == 2 and len(_sos(cache)) == 2
    assert cc.build(str(source)).fx_b() == 4  # as text, one valid translation unit
    assert len(calls) == 3
    changed = cc.Source(PRELUDE, [UNIT_A, UNIT_B.replace("fx_twice(2)", "fx_twice(5)")])
    cc._loaded.clear()
    lib = cc.build(changed)
    assert (lib.fx_a(), lib.fx_b()) == (2, 10)
    assert len(calls) == 4  # the unchanged unit came from the disk cache
    assert pickle.loads(pickle.dumps(changed)).units == changed.units


def test_concurrent_builds_compile_each_unit_once(cache, monkeypatch):
    calls = _counting_compiles(monkeypatch, delay=0.3)
    source = cc.Source(PRELUDE, [UNIT_A, UNIT_B])
    start = threading.Barrier(6)
    results, errors = [], []

    def build():
        start.wait()
        try:
            results.append(cc.build(source))
        except Exception as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=build) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(calls) == 2
    assert all((lib.fx_a(), lib.fx_b()) == (2, 4) for lib in results) and len(results) == 6
    assert len({tuple(id(x) for x in lib.libs) for lib in results}) == 1  # one load each


# --- runtime libraries that programs call by name --------------------------------------------

def _named(cache, text: str) -> str:
    # global symbols outlive a test: each test's library names its functions after its cache
    return text.replace("NAME", f"fx_lib_{abs(hash(str(cache)))}")


def test_program_compiles_while_its_global_library_builds(cache, monkeypatch):
    library = _named(cache, "int NAME(void) { return 7; }\n")
    program = _named(cache, "int NAME(void);\nint fx_uses(void) { return 6 * NAME(); }\n")
    spans = {}
    real = cc._compile

    def compile_(source, path):
        start = time.monotonic()
        time.sleep(0.5 if "return 7" in source else 0.0)
        real(source, path)
        spans["library" if "return 7" in source else "program"] = (start, time.monotonic())

    monkeypatch.setattr(cc, "_compile", compile_)
    future = cc.build_global_async(library)
    assert cc.build(program).fx_uses() == 42  # loaded after the library: its name resolved
    assert future.done()
    assert spans["program"][0] < spans["library"][1]  # the two compiled at the same time


def test_program_after_a_failed_global_library_names_its_error(cache):
    future = cc.build_global_async(_named(cache, "int NAME(void) { return 7 }\n"))
    with pytest.raises(cc.CompileError, match="(?s)does not load.*failed to build"):
        cc.build(_named(cache, "int NAME(void);\nint fx_uses(void) { return NAME(); }\n"))
    assert isinstance(future.exception(), cc.CompileError)
    assert cc.build(SOURCE).fx_answer() == 42  # programs that do not call it still load


def test_a_process_forked_while_a_global_library_builds_builds_it_again(cache, monkeypatch):
    import multiprocessing

    library = _named(cache, "int NAME(void) { return 7; }\n")
    program = _named(cache, "int NAME(void);\nint fx_uses(void) { return 6 * NAME(); }\n")
    real = cc._compile
    monkeypatch.setattr(cc, "_compile", lambda source, path: (time.sleep(0.5), real(source, path)))
    cc.build_global_async(library)  # still compiling when the child starts

    def child(results):
        results.put(cc.build(program).fx_uses())

    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    p = ctx.Process(target=child, args=(results,))
    p.start()
    p.join(timeout=60)
    if p.is_alive():
        p.kill()
    assert p.exitcode == 0, "the child hung or failed"
    assert results.get(timeout=1) == 42
    assert cc.build(program).fx_uses() == 42
