"""Calibration: the observers' thresholds on known data, and the layers found in a model."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from harness import run_doctests

import fx
import fx.quant
from fx.example_libraries import stax
from fx.quant.observers import BINS, Method, Observer, entropy_bin


def _observed(*batches) -> Observer:
    obs = Observer()
    for b in batches:
        obs.observe(b)
    return obs


def test_minmax_of_a_known_array():
    obs = _observed(np.array([0.5, -3.0, 2.0], np.float32), np.array([[1.0, 2.5]], np.float32))
    assert (obs.min, obs.max, obs.count) == (-3.0, 2.5, 5)
    assert obs.threshold(Method.MINMAX) == 3.0


def test_percentile_is_numpy_percentile_of_magnitudes():
    x = np.linspace(-1.0, 1.0, 100_001, dtype=np.float32)
    x[:3] = [50.0, -40.0, 30.0]  # three outliers: above the 99.99th percentile
    obs = _observed(x[:50_000], x[50_000:])
    t = obs.threshold(Method.PERCENTILE)
    assert t == pytest.approx(np.percentile(np.abs(x), 99.99))
    assert t < 1.001
    assert obs.threshold(Method.PERCENTILE, percentile=50.0) == pytest.approx(0.5, abs=1e-4)


def test_entropy_clips_heavy_tails():
    rng = np.random.default_rng(0)
    x = rng.standard_t(df=2, size=200_000).astype(np.float32)  # heavy tails
    obs = _observed(x)
    t = obs.threshold(Method.ENTROPY)
    assert 0.05 * obs.amax < t < 0.5 * obs.amax
    assert t > np.percentile(np.abs(x), 90)


def test_entropy_keeps_the_range_of_a_uniform_distribution():
    x = np.random.default_rng(1).uniform(-1, 1, 100_000).astype(np.float32)
    assert _observed(x).threshold(Method.ENTROPY) > 0.9


def test_entropy_bin_of_a_histogram_with_one_far_outlier():
    # Bins of varied counts up to 300: 128 levels over all 2048 bins would merge 16 of them
    # each; the lone maximum costs almost nothing to clip.
    hist = np.zeros(BINS)
    hist[:300] = np.random.default_rng(3).integers(100, 1000, 300)
    hist[-1] = 1.0
    i = entropy_bin(hist)
    assert 128 <= i <= 320


def test_calibrate_finds_the_dense_layers_and_their_input_ranges():
    init, apply = stax.serial(stax.Dense(16), stax.Relu, stax.Dense(3), stax.LogSoftmax)
    _, params = init(fx.random.PRNGKey(0), (-1, 5))
    rng = np.random.default_rng(2)
    batches = [rng.normal(size=(8, 5)).astype(np.float32) for _ in range(3)]
    cal = fx.quant.calibrate(apply, params, batches, method="minmax")
    assert [s.layer.primitive for s in cal.layers] == ["dot_general", "dot_general"]
    assert [s.layer.weight_operand for s in cal.layers] == [1, 1]
    first = cal.layers[0]
    allx = np.concatenate(batches)
    assert (first.min, first.max) == (allx.min(), allx.max())
    assert first.threshold == np.abs(allx).max()
    assert cal.layers[1].min >= 0.0  # after the ReLU
    assert "2 layers" in str(cal)
    for method in ("percentile", "entropy"):
        other = fx.quant.calibrate(apply, params, batches, method=method)
        assert all(0 < s.threshold <= m.threshold + 1e-6
                   for s, m in zip(other.layers, cal.layers))


def test_calibrate_errors():
    init, apply = stax.serial(stax.Dense(4))
    _, params = init(fx.random.PRNGKey(0), (-1, 2))
    with pytest.raises(ValueError, match="no calibration batches"):
        fx.quant.calibrate(apply, params, [])
    with pytest.raises(ValueError):
        fx.quant.calibrate(apply, params, [np.ones((1, 2), np.float32)], method="mse")


def test_docstring_examples():
    modules = [sys.modules[f"fx.quant.{m}"] for m in ("calibration", "quantize")]
    assert run_doctests(*modules) >= 10


def test_observer_keeps_a_bounded_sample():
    obs = Observer(max_samples=1000)
    x = np.linspace(-2.0, 2.0, 4000, dtype=np.float32)
    for _ in range(5):
        obs.observe(x)
    assert obs.count == 20_000 and (obs.min, obs.max) == (-2.0, 2.0)
    assert 500 < len(obs.magnitudes) <= 1000
    assert obs.threshold(Method.PERCENTILE, 50.0) == pytest.approx(1.0, abs=0.02)
