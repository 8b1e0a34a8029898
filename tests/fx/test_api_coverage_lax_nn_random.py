"""Coverage of ``jax.lax``, ``jax.nn``, ``jax.nn.initializers`` and ``jax.random`` by fx.

For each module, the public names of jax's module that fx's lacks must equal an explicit
exclusion list, each name with its reason: a name added to fx, or a new name in jax, fails
this test until the list is updated, so coverage cannot regress silently.
"""

from __future__ import annotations

import jax
import jax.nn.initializers
import pytest

import fx
import fx.lax
import fx.nn
import fx.random

_COLLECTIVE = "issue 18: collectives across devices/processes (pmap, shard_map)"
_NAMED_AXIS = ("ppermute/all_to_all are compositions of all_gather and axis_index in fx "
               "(fx/lax/permutes.py), no primitives of their own")
_TOKENS = "XLA side-effect tokens: fx orders effects by program order, it has no tokens"
_NO_PRIM = "composite in fx (no primitive of its own): the function is in fx.lax"
_XLA_ONLY = "an XLA-internal primitive with no fx counterpart"

LAX_EXCLUDED = {
    # Enums and records of options fx has no use for.
    "AccuracyMode": "per-op accuracy of transcendental functions: fx has one implementation",
    "Tolerance": "as AccuracyMode",
    "DotAlgorithm": "custom dot algorithm records; fx accepts DotAlgorithmPreset and Precision",
    "RandomAlgorithm": "rng_bit_generator's XLA algorithms (see rng_bit_generator)",
    "RaggedDotDimensionNumbers": "ragged_dot_general is not implemented (ragged_dot is)",
    "custom_linear_solve": "not built: its reverse mode needs transpose_solve as the transpose "
                           "of the tangent solve, i.e. a linear_solve primitive or a custom_vjp "
                           "inside a custom_jvp rule, which fx cannot transpose yet",
    "linear_solve_p": "as custom_linear_solve",
    # Multi-device collectives and sharding.
    "all_to_all_p": _NAMED_AXIS, "ppermute_p": _NAMED_AXIS,
    "pswapaxes": "shard_map's axis swap (issue 18); all_to_all is implemented",
    "psend": _COLLECTIVE, "precv": _COLLECTIVE,
    "pbroadcast": _COLLECTIVE,
    "ragged_all_to_all": _COLLECTIVE, "ragged_all_to_all_p": _COLLECTIVE,
    "sharding_constraint_p": "with_sharding_constraint is the identity on one device",
    "device_put_p": "fx.device_put is the top-level API's (issue 13), not a primitive",
    # Effects and XLA internals.
    "after_all": _TOKENS, "after_all_p": _TOKENS,
    "create_token": _TOKENS, "create_token_p": _TOKENS,
    "dce_sink": "keeps an effect alive against XLA's DCE: fx's DCE keeps effects itself",
    "dce_sink_p": "as dce_sink",
    "rng_bit_generator": "XLA's bits are implementation-defined per backend: use fx.random",
    "rng_bit_generator_p": "as rng_bit_generator",
    "rng_uniform": "as rng_bit_generator", "rng_uniform_p": "as rng_bit_generator",
    "shape_as_value": "dynamic shapes: fx shapes are static",
    "scaled_dot": "microscaling (MX) block-scaled float8 products: fx has no MX formats",
    "ragged_dot_general": "the general ragged contraction (ragged_dot is implemented)",
    "copy_p": _XLA_ONLY, "eq_to_p": _XLA_ONLY, "le_to_p": _XLA_ONLY, "lt_to_p": _XLA_ONLY,
    "optimization_barrier_p": "optimization_barrier is the identity in fx",
    "stage_p": "stage is the identity in fx",
    "approx_top_k_p": "approx_max_k/approx_min_k are exact: the sort primitive",
    "top_k_p": "top_k is a sort in fx",
    "reduce_p": "the generic reduce is a fold of elementwise ops or a reduction primitive",
    "reduce_window_p": "fx's reduce_window takes add/max/min: the reduce_window_*_p",
    "select_and_scatter_p": "fx has select_and_scatter_add_p, all max-pool gradients need",
    "scatter_sub_p": "scatter_sub is a scatter_add of the negated updates",
    # Composites of fx.lax whose functions exist.
    "clz_p": _NO_PRIM, "population_count_p": _NO_PRIM, "mulhi_p": _NO_PRIM,
    "reduce_precision_p": _NO_PRIM, "shift_right_arithmetic_p": _NO_PRIM,
    "split_p": _NO_PRIM, "stack_p": _NO_PRIM, "unstack_p": _NO_PRIM, "tile_p": _NO_PRIM,
}

NN_EXCLUDED = {
    "scaled_dot_general": "microscaling (MX) block-scaled float8 products: no MX formats",
    "scaled_matmul": "as scaled_dot_general",
    "get_scaled_dot_general_config": "as scaled_dot_general",
}

INITIALIZERS_EXCLUDED: dict[str, str] = {}

RANDOM_EXCLUDED = {
    "random_gamma_p": ("fx's gamma sampler is a composite of fx.lax while loops with a custom_jvp "
                       "(fx.lax.random_gamma_grad), no primitive of its own"),
}
RANDOM_EXCLUDED["key_dtype"] = ("typed key dtypes: fx keys are raw uint32 data (key_data and "
                                "wrap_key_data convert)")

MODULES = [
    ("jax.lax", jax.lax, fx.lax, LAX_EXCLUDED),
    ("jax.nn", jax.nn, fx.nn, NN_EXCLUDED),
    ("jax.nn.initializers", jax.nn.initializers, fx.nn.initializers, INITIALIZERS_EXCLUDED),
    ("jax.random", jax.random, fx.random, RANDOM_EXCLUDED),
]


def _public(module) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_")}


@pytest.mark.parametrize("name, jax_mod, fx_mod, excluded", MODULES, ids=[m[0] for m in MODULES])
def test_missing_names_are_exactly_the_exclusions(name, jax_mod, fx_mod, excluded):
    missing = _public(jax_mod) - set(dir(fx_mod))
    unexpected = sorted(missing - set(excluded))
    stale = sorted(set(excluded) - missing)
    assert not unexpected, f"{name}: names fx lacks without a reason: {unexpected}"
    assert not stale, (f"{name}: excluded names that fx now has (or jax no longer has); drop "
                       f"them from the list: {stale}")


@pytest.mark.parametrize("name, jax_mod, fx_mod, excluded", MODULES, ids=[m[0] for m in MODULES])
def test_exclusion_reasons_are_given(name, jax_mod, fx_mod, excluded):
    assert all(isinstance(r, str) and len(r) > 10 for r in excluded.values()), name


def test_primitive_names_are_fx_primitives():
    """Each ``*_p`` name fx.lax shares with jax.lax is an fx Primitive (not a stand-in)."""
    from fx.core import Primitive

    shared = sorted(n for n in _public(jax.lax) & set(dir(fx.lax)) if n.endswith("_p"))
    assert len(shared) > 100
    for n in shared:
        assert isinstance(getattr(fx.lax, n), Primitive), n


def test_import_forms_of_initializers():
    import fx.nn.initializers as by_path  # noqa: PLC0415
    from fx.nn import initializers

    assert by_path is initializers is fx.nn.initializers
