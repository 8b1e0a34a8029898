"""Smoke tests of the compression examples (``-m slow``: each trains several models in a fresh
interpreter, a minute on a loaded 2-core machine): they run end to end with a few steps and
print the tables they promise. Their parts are unit-tested in tests/fx/test_losses.py,
tests/fx/test_lora.py and tests/fx/quant/test_nf4.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str) -> str:
    """The example's stdout, run in a fresh interpreter on the CPU (as test_examples does)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env.setdefault("FX_PLATFORM", "cpu")
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True,
                          text=True, timeout=600, env=env, cwd=EXAMPLES.parent)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_distill_digits_prints_mean_and_std_per_model():
    out = run_example("distill_digits.py", "--steps", "10", "--teacher-steps", "10",
                      "--seeds", "2")
    for name in ("teacher CNN", "student, labels only", "student, distilled"):
        assert re.search(rf"\| {name} \| \d+\.\d\d% ± \d+\.\d\d \|", out), out
    assert re.search(r"distillation gain per seed \(pp\): [-+]\d", out), out


def test_qlora_digits_prints_bytes_parameters_and_accuracies():
    out = run_example("qlora_digits.py", "--steps", "10", "--pretrain-steps", "10",
                      "--seeds", "1")
    m = re.search(r"base weights: float32 (\d+) B, NF4 (\d+) B \((\d+\.\d\d)x smaller\)", out)
    assert m and 7.0 < float(m.group(3)) < 7.2, out
    rows = dict(re.findall(r"\| ([^|]+?) \| (\d+) \| \d+\.\d\d% ± \d+\.\d\d \|", out))
    assert int(rows["QLoRA, NF4 base"]) == int(rows["LoRA, float base"]) > 0, out
    assert int(rows["full float fine-tuning"]) > 9 * int(rows["QLoRA, NF4 base"]), out
