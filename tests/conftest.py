"""Test configuration: jax (the oracle) in 64-bit mode, hypothesis profiles.

HYPOTHESIS_PROFILE=ci (default: derandomized, few examples, what CI runs) or thorough (many
examples, for long local runs) or dev.
"""

import os

import jax
from hypothesis import HealthCheck, settings

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=12, derandomize=True, print_blob=True, **_common)
settings.register_profile("dev", max_examples=30, **_common)
settings.register_profile("thorough", max_examples=400, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
