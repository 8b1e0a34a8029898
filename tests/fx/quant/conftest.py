"""The digits MLP the quantization tests share, trained briefly once per session."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _example():
    spec = importlib.util.spec_from_file_location("mlp_digits_for_quant",
                                                  EXAMPLES / "mlp_digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def digits_mlp():
    ex = _example()
    data = ex.load_digits(seed=0)
    model = ex.mlp(hidden=64)
    params, _, test_acc, _ = ex.train(model, data, seed=0, epochs=1, batch_size=64, lr=3e-3,
                                      steps=150, backend=None, name="mlp", progress=False)
    return model[1], params, data, test_acc




@pytest.fixture(scope="session")
def mlp_example():
    """examples/mlp_digits.py as a module (its data loading and training loop)."""
    return _example()
