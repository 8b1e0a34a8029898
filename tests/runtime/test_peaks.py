"""The machine's measured peaks (fx.runtime.peaks): plausible values, measured once per
machine and cached, a damaged cache measured again."""

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
