"""The lowering tests compile: an unexpected NumPy fallback fails them (``FX_STRICT=1``, see
``strict_fallbacks`` in tests/conftest.py)."""

import pytest


@pytest.fixture(autouse=True, scope="module")
def _strict(strict_fallbacks):
    yield
