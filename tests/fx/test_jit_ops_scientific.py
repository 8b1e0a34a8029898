"""fx.jit against eager and jax.jit for the scientific primitives (rows in
tests/scientific_rows.py)."""

from __future__ import annotations

import pytest
from jit_rows import check_row
from scientific_rows import ROWS


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_jit_matches_eager_and_jax(row):
    check_row(row)
