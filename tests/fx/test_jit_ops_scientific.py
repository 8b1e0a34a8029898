"""fx.jit against eager and jax.jit for the scientific primitives (rows in
tests/scientific_rows.py), and the special functions' kernels against eager at every
combination of the edge values (where jax's limits differ from fx's, or jax does not stop)."""

from __future__ import annotations

import numpy as np
import pytest
from harness import to_fx
from jit_rows import FLOATS, assert_jit_close, check_row
from scientific_rows import ROWS

import fx
from fx.lax import scipy_special
from fx.lax import special_functions as lax_special


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_jit_matches_eager_and_jax(row):
    check_row(row)


EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 30.0, 1e-30, -1e30, 1e30, np.inf,
                  -np.inf, np.nan])
SPECIAL_PRIMS = [
    lax_special.igamma_p, lax_special.igammac_p, lax_special.igamma_grad_a_p,
    lax_special.regularized_incomplete_beta_p, lax_special.zeta_p, lax_special.bessel_i0e_p,
    lax_special.bessel_i1e_p, scipy_special.expn_p, scipy_special.erfcx_p,
    scipy_special.dawsn_p, scipy_special.expi_p, scipy_special.spence_p,
    scipy_special.ndtri_p, scipy_special.si_p, scipy_special.ci_p, scipy_special.fresnel_s_p,
    scipy_special.fresnel_c_p,
]


# float32 runs with -m slow: the kernels compute in double either way, and these kernels are
# the longest the end-of-run CUDA compile check sees (CI's time budget).
@pytest.mark.parametrize("dtype", [pytest.param(d, marks=pytest.mark.slow)
                                   if np.dtype(d) == np.float32 else d for d in FLOATS],
                         ids=lambda d: np.dtype(d).name)
def test_special_function_kernels_match_eager_at_the_edges(dtype):
    """Every special function at every combination of EDGES and at random operands, in
    ``dtype``, each fused with a neighbouring op: one program of kernels (no NumPy step),
    compared with eager."""
    nargs = {"igamma": 2, "igammac": 2, "igamma_grad_a": 2, "zeta": 2, "expn": 2,
             "regularized_incomplete_beta": 3}
    rng = np.random.default_rng(0)
    cases = []
    for prim in SPECIAL_PRIMS:
        grids = np.meshgrid(*[EDGES] * nargs.get(prim.name, 1), indexing="ij")
        # then random operands of either sign over e^-4 ... e^4
        cases.append((prim, dtype, [np.concatenate([g.ravel(), rng.choice([-1, 1], 64) * np.exp(
            rng.uniform(-4, 4, 64))]).astype(dtype) for g in grids]))
    arrays = to_fx([a for _, _, a in cases])

    def f(arrays):
        return [prim.bind(*a) * 2 + 1 for (prim, _, _), a in zip(cases, arrays)]

    text = fx.jit(f).lower(arrays).as_text()
    assert "impl: numpy" not in text, text
    for (prim, dtype, _), got, want in zip(cases, fx.jit(f)(arrays), f(arrays)):
        assert_jit_close(got, want, f"{prim.name} {np.dtype(dtype)}")
