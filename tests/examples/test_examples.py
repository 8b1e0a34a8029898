"""Smoke tests: every example runs end to end with a few steps (each in a fresh interpreter,
as a user would run it) and prints what it promises. The accuracy targets need the full runs
(``python examples/mlp_digits.py`` etc.), which are too long for CI.

The default run trains the two classifiers (the README's main job is the MLP's); the other
examples (10-22 s each with a cold compile cache, most of it compiling in a fresh process)
run with ``-m slow``, as their parts are unit-tested: jit against jax, vmap of grad, Hessian
products."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str, timeout: float = 300) -> str:
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env.setdefault("FX_PLATFORM", "cpu")
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=EXAMPLES.parent)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _percent(pattern: str, text: str) -> float:
    m = re.search(pattern + r": ([0-9.]+)%", text)
    assert m, f"no '{pattern}' in the output:\n{text}"
    return float(m.group(1))


@pytest.mark.parametrize("name,steps,floor", [("mlp_digits.py", 40, 80.0),
                                              ("cnn_digits.py", 15, 10.0)])
def test_classifier_examples_train(name, steps, floor):
    out = run_example(name, "--steps", str(steps), "--no-progress", "--batch-size", "32")
    assert f"{steps} steps in" in out
    # A few steps already beat chance (10%) by far for the MLP; the CNN just has to run.
    assert _percent("test accuracy", out) >= floor
    assert _percent("train accuracy", out) >= floor


@pytest.mark.slow
def test_compare_with_jax_agrees():
    # The MLP only: jax's compilation of the CNN's initialisation alone takes several seconds.
    # The full run (both models, 100 steps) is what the example's default does.
    out = run_example("compare_with_jax.py", "--steps", "12", "--batch-size", "32",
                      "--models", "mlp")
    m = re.search(r"mlp: max relative difference ([0-9.e+-]+)", out)
    assert m and float(m.group(1)) <= 1e-4, out
    m = re.search(r"largest relative difference of the initial weights ([0-9.e+-]+)", out)
    assert m and float(m.group(1)) <= 1e-5, out
    assert "agree to 0.0001 relative over 12 steps" in out


@pytest.mark.slow
def test_per_example_grads():
    out = run_example("per_example_grads.py", "--steps", "2", "--batch-size", "8")
    m = re.search(r"max \|difference\| = ([0-9.e+-]+)", out)
    assert m and float(m.group(1)) <= 1e-5, out
    assert "test accuracy after 2 DP-SGD steps" in out


@pytest.mark.slow
def test_hessian_vector():
    out = run_example("hessian_vector.py", "--steps", "3")
    m = re.search(r"explicit H @ v: max \|difference\| ([0-9.e+-]+)", out)
    assert m and float(m.group(1)) <= 1e-10, out
    losses = [float(v) for v in re.findall(r"Newton step \d+: loss ([0-9.]+)", out)]
    assert len(losses) == 3 and losses[2] < losses[0], out


@pytest.mark.slow
def test_plot_option_without_matplotlib_is_a_clear_error(tmp_path):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        proc = subprocess.run([sys.executable, str(EXAMPLES / "mlp_digits.py"), "--steps", "1",
                               "--no-progress", "--plot", str(tmp_path / "loss.png")],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode != 0 and "--plot needs matplotlib" in proc.stderr
    else:
        run_example("mlp_digits.py", "--steps", "3", "--no-progress", "--plot",
                    str(tmp_path / "loss.png"))
        assert (tmp_path / "loss.png").stat().st_size > 0


@pytest.mark.slow
def test_deploy_digits_prints_the_four_models():
    pytest.importorskip("onnxruntime")
    out = run_example("deploy_digits.py", "--steps", "40", "--no-progress")
    rows = re.findall(r"^(fx float|fx int8|onnxruntime float|onnxruntime int8)\s+\|\s+"
                      r"([0-9.]+)%\s+\|\s+(\d+)", out, re.M)
    assert [r[0] for r in rows] == ["fx float", "fx int8", "onnxruntime float",
                                    "onnxruntime int8"], out
    acc = {name: float(a) for name, a, _ in rows}
    size = {name: int(b) for name, _, b in rows}
    assert abs(acc["fx int8"] - acc["fx float"]) <= 2.0, out  # a short training run
    assert size["fx int8"] * 3 < size["fx float"], out
    assert "inference passes:" in out


def test_tensor_parallel_example_on_four_cpu_devices_matches_one_device():
    pytest.importorskip("sklearn")
    env_before = os.environ.get("FX_NUM_CPU_DEVICES")
    os.environ["FX_NUM_CPU_DEVICES"] = "4"
    try:
        out = run_example("tensor_parallel_mlp.py", "--steps", "12")
    finally:
        if env_before is None:
            del os.environ["FX_NUM_CPU_DEVICES"]
        else:
            os.environ["FX_NUM_CPU_DEVICES"] = env_before
    assert "on one process" in out, out
    gap = float(out.split("largest difference between the curves: ")[1].split()[0])
    assert gap < 1e-5, out


def test_data_parallel_shard_map_example_on_two_cpu_devices_matches_one_device(monkeypatch):
    pytest.importorskip("sklearn")
    monkeypatch.setenv("FX_NUM_CPU_DEVICES", "2")
    out = run_example("data_parallel_shard_map.py", "--steps", "12")
    assert "mesh {'batch': 2} on one process" in out, out
    gap = float(out.split("largest difference between the curves: ")[1].split()[0])
    assert gap < 1e-5, out
