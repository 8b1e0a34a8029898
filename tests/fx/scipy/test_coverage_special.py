"""The names of jax.scipy.special that fx.scipy.special lacks are exactly the excluded ones,
each with its reason (none now): coverage cannot regress silently, and a name that lands must
leave the list."""

from __future__ import annotations

import jax.scipy.special as jss

import fx.scipy.special as fss

EXCLUDED: dict[str, str] = {}  # every name of jax.scipy.special is in fx.scipy.special


def _public(module) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_")}


def test_every_jax_scipy_special_name_is_in_fx_or_excluded_with_a_reason():
    missing = _public(jss) - _public(fss)
    assert missing - set(EXCLUDED) == set(), "not in fx.scipy.special and not excluded"
    landed = set(EXCLUDED) - missing
    assert landed == set(), f"in fx.scipy.special now: remove from EXCLUDED: {sorted(landed)}"
    assert all(len(r) > 10 for r in EXCLUDED.values())
