"""The machine's measured peaks (fx.runtime.peaks): plausible values in sane relations (the
FMA loop runs on every thread, the stream runs past the caches), measured once per machine and
cached, a damaged cache or one of an older calibration measured again."""

import os

import pytest

from fx.runtime import cc, peaks

pytestmark = pytest.mark.skipif(cc.compiler() is None, reason="needs a C compiler")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(peaks, "_cached", None)
    return tmp_path


def test_peaks_are_plausible_and_cached(fresh_cache, monkeypatch):
    p = peaks.measure()
    # Any x86-64 core made this century: over 1 GFLOP/s of float32 FMAs and 100 MB/s of
    # copying; and under 100 TFLOP/s and 10 TB/s (a unit mistake would break these).
    assert 1e9 < p.flops < 1e14
    assert 1e8 < p.bytes_per_s < 1e13
    assert p.threads >= 1 and p.march == cc.MARCH
    assert p.balance == p.flops / p.bytes_per_s
    # Each thread: at most two FMA ports of 16 float32 lanes at 6 GHz (counting threads or
    # lanes twice would break this), and float32 FMAs outrun the bytes a core streams.
    assert p.flops / p.threads < 2 * 2 * 16 * 6e9
    assert p.balance > 1
    assert list(fresh_cache.glob("peaks-*.json"))

    # A second process (here: a cleared in-memory copy) reads the file instead of measuring.
    monkeypatch.setattr(peaks, "_cached", None)
    monkeypatch.setattr(peaks, "_measure", lambda lib: pytest.fail("measured again"))
    assert peaks.measure() == p


def test_a_damaged_cache_file_is_measured_again(fresh_cache, monkeypatch):
    path = peaks._cache_path()
    path.write_text("{not json")
    measured = peaks.Peaks(2e9, 3e9, 1, cc.MARCH)
    monkeypatch.setattr(peaks, "_measure", lambda lib: measured)
    assert peaks.measure() == measured
    monkeypatch.setattr(peaks, "_cached", None)
    assert peaks.measure() == measured  # and the rewritten file reads back
    assert peaks.measure(refresh=True) == measured


def test_an_older_calibration_is_measured_again(fresh_cache, monkeypatch):
    # A file of version 1 (wall-clock rates, memcpy) sits where that version kept it.
    old = fresh_cache / f"peaks-{cc.cache_key('peaks')[:16]}.json"
    old.write_text('{"flops": 1e9, "bytes_per_s": 1e8, "threads": 1, "march": "native"}')
    measured = peaks.Peaks(2e9, 3e9, 1, cc.MARCH)
    monkeypatch.setattr(peaks, "_measure", lambda lib: measured)
    assert peaks.measure() == measured
    assert peaks._cache_path() != old and f"-v{peaks.VERSION}-" in peaks._cache_path().name


def test_the_fma_loop_runs_on_every_thread():
    # (The tests run with OMP_NUM_THREADS=1, so the threads are asked for by number.)
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core")
    lib = peaks._library()
    # Each thread's rate is timed on its own clock, so a busy machine does not hide this.
    assert peaks.fma_rate(lib, 2, 0.02) > 1.3 * peaks.fma_rate(lib, 1, 0.02)


def test_the_stream_runs_past_the_caches():
    # The calibrated stream moves more than a core's L2 holds, so one that fits in L2 is
    # faster (a stream measured inside the caches would be no slower than this one).
    lib = peaks._library()
    threads = lib.fx_threads()
    assert peaks.STREAM_BYTES >= 64 << 20
    in_cache = peaks.stream_rate(lib, threads, 256 << 10, 0.02)
    assert in_cache > 1.2 * peaks.stream_rate(lib, threads, seconds=0.02)
