"""The generated float32 exp/log family (the C prelude's vectorizable polynomials): error in
ulp against float64 NumPy over dense ranges, including the ends where they switch branches."""

from __future__ import annotations

import numpy as np
import pytest

import fx
import fx.numpy as fnp

CASES = [  # function, reference, points, max ulp
    ("exp", np.exp, np.linspace(-103.0, 88.7, 200_001), 1.0),
    ("log", np.log, np.geomspace(1e-37, 3e38, 200_001), 1.0),
    ("tanh", np.tanh, np.linspace(-10.0, 10.0, 200_001), 2.0),
    ("log1p", np.log1p, np.concatenate([np.linspace(-0.999, 1.0, 100_001),
                                        np.geomspace(1.0, 1e30, 100_000)]), 3.0),
    ("expm1", np.expm1, np.linspace(-20.0, 88.0, 200_001), 3.0),
]


@pytest.mark.parametrize("name,ref,points,bound", CASES, ids=[c[0] for c in CASES])
def test_generated_float32_transcendentals_are_within_a_few_ulp(name, ref, points, bound):
    x = points.astype(np.float32)
    got = np.asarray(fx.jit(getattr(fnp, name))(x)).astype(np.float64)
    want = ref(x.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    err = np.abs(got - want) / ulp
    worst = int(np.argmax(err))
    assert err[worst] <= bound, f"{name}({x[worst]!r}) = {got[worst]!r}, want {want[worst]!r}"
