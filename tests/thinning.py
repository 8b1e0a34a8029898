"""Which rows of the largest table tests run by default.

Each table below names a test and the parameters that only vary a case (dtype, x32/x64
mode, shape, size, axis): the rows that differ in nothing else form a group, and the default
run keeps one row of each group, a different variant for different groups (chosen by a hash
of the group, so that every variant still runs for some function), while ``-m slow`` runs
them all. Every function of every table keeps a default row; only its duplicates in other
dtypes or shapes move. Deterministic (parameter values described without object addresses),
so every xdist worker collects the same tests.
"""

from __future__ import annotations

import zlib

import pytest

THIN: dict[str, tuple[str, ...]] = {
    "tests/fx/lax/test_elementwise.py::test_unary_eval_and_derivatives": ("dtype", "shape"),
    "tests/fx/lax/test_elementwise.py::test_binary": ("dtype", "shapes"),
    "tests/fx/numpy/test_setops.py::test_matches_jax": ("size",),
    "tests/fx/numpy/test_nan_reductions.py::test_values_and_dtypes": ("axis", "dtype"),
    "tests/fx/numpy/test_nan_reductions.py::test_nanquantile_and_nanpercentile": ("axis",),
    "tests/fx/numpy/test_sorting.py::test_eval_jvp_vjp": ("dtype",),
    "tests/fx/scipy/test_special.py::test_values_against_jax_and_scipy": ("dtype",),
    "tests/fx/lax/test_indexing.py::test_scatter_combining": ("mode",),
    "tests/fx/lax/test_indexing.py::test_scatter_add_and_set": ("mode",),
    "tests/fx/numpy/test_compaction.py::test_matches_jax": ("mode", "size"),
    "tests/fx/lax/test_sorting.py::test_cumulative_eval_jvp_vjp": ("shape", "axis"),
    "tests/fx/numpy/test_reductions.py::test_dtype_rules": ("mode",),
    "tests/fx/numpy/test_reductions.py::test_float_reductions": ("axis", "keepdims"),
    "tests/fx/test_random_distributions.py::test_matches_jax": ("x64",),
    "tests/fx/numpy/test_size_under_jit.py::test_jit_with_size_matches_jax_and_eager": ("mode",),
    "tests/fx/numpy/test_quantile_methods.py::test_matches_jax": ("mode",),
    "tests/fx/numpy/test_setops.py::test_matches_jax_both_modes": ("mode",),
    "tests/fx/numpy/test_creation.py::test_filled_arrays_match_jax": ("dtype",),
    "tests/fx/lax/test_composites.py::test_windowed_scatter_matches_jax": ("mode",),
    "tests/fx/numpy/test_windows_and_products.py::test_products_match_jax": ("dtype",),
    "tests/fx/test_random.py::test_randint": ("dtype",),
    "tests/fx/numpy/test_mathematical.py::test_result_dtypes": ("dtype",),
    "tests/fx/numpy/test_index_tricks.py::test_matches_jax": ("x64",),
    "tests/fx/test_stax.py::test_layer_matches_jax": ("shape",),
    "tests/fx/lax/test_indexing.py::test_gather": ("mode",),
    "tests/fx/numpy/test_sorting.py::test_vmap": ("shape",),
    "tests/fx/lax/test_sorting.py::test_sort_eval_jvp_vjp": ("dtype", "shape"),
    "tests/fx/test_vmap_sum_match.py::test_matches_jax": ("mode",),
    "tests/fx/test_nn.py::test_softmax_family_matches_jax": ("axis",),
    "tests/fx/test_nn.py::test_softmax_family_special_values": ("dtype",),
    "tests/fx/lax/test_reductions.py::test_logical_and_integer_reductions": ("dtype",),
    "tests/fx/lax/test_elementwise.py::test_unary_vmap": ("axis",),
    "tests/fx/test_jit_random_programs.py::test_exact_function_is_bit_identical": ("dtype",),
    "tests/fx/test_random_xla_math.py::test_matches_xla_bitwise": ("x64",),
    "tests/fx/numpy/test_linalg.py::test_norm": ("axis", "keepdims", "shape"),
    "tests/fx/lax/test_composites.py::test_windowed_gather_matches_jax": ("mode",),
}


def _stable(v) -> str:
    """A description of a parameter value that is the same in every process (no addresses)."""
    if isinstance(v, (str, int, float, bool, type(None))):
        return repr(v)
    if isinstance(v, (tuple, list)):
        return "(" + ",".join(_stable(x) for x in v) + ")"
    if callable(v) and hasattr(v, "__qualname__"):
        return v.__qualname__
    text = repr(v)
    return type(v).__name__ if " at 0x" in text else text


# Single long tests whose checks other default tests share (each still runs with -m slow).
SLOW = {
    "tests/lowering/test_scale.py::test_compile_work_grows_linearly[_mlp_gradient_work-60]",
    "tests/lowering/test_scale.py::test_wide_program_matches_eager",
    "tests/fx/test_optimizers.py::test_mnist_example_on_digits_with_only_imports_changed",
    "tests/fx/numpy/test_polynomial.py::test_polyfit_jit_matches_eager_in_float64",
    "tests/fx/scipy/test_special.py::test_two_output_functions",
    "tests/examples/test_examples.py::test_classifier_examples_train[cnn_digits.py-15-10.0]",
}


# Tables whose rows cross two kinds of case (programs x compositions, index kinds x update
# ops, a function's several inputs): the default run keeps every K-th row of each group, the
# groups' offsets rotating, so that each case of either kind still runs for some rows.
# test -> (the parameter that varies within a group, or None: the row id's part after its
# last "-", the rest naming the group; K).
SPREAD: dict[str, tuple[str | None, int]] = {
    "tests/fx/test_jit_transforms.py::test_composition_matches_eager_and_jax": ("comp", 2),
    "tests/fx/numpy/test_indexing.py::test_at_updates": ("op", 2),
    "tests/fx/numpy/test_statistics.py::test_values_dtypes_shapes": (None, 2),
}


def _spread_key(item, base: str, variant: str | None):
    """(group, the row's variant) of a SPREAD row."""
    if variant is None:
        head, _, tail = item.nodeid[len(base) + 1:-1].rpartition("-")
        return (base, head), tail
    spec = item.callspec
    return (base, tuple(sorted((k, _stable(v)) for k, v in spec.params.items()
                               if k != variant))), _stable(spec.params[variant])


def thin(items) -> None:
    groups: dict[tuple, list] = {}
    spread: dict[tuple, list] = {}
    for item in items:
        if item.nodeid in SLOW:
            item.add_marker(pytest.mark.slow)
            continue
        base = item.nodeid.split("[")[0]
        variants = THIN.get(base)
        spec = getattr(item, "callspec", None)
        if spec is None or (variants is None and base not in SPREAD):
            continue
        if any(m.name in ("slow", "xfail", "skip") for m in item.iter_markers()):
            continue
        if base in SPREAD:
            key, variant = _spread_key(item, base, SPREAD[base][0])
            spread.setdefault(key, []).append((variant, item))
            continue
        key = (base, tuple(sorted((k, _stable(v)) for k, v in spec.params.items()
                                  if k not in variants)))
        groups.setdefault(key, []).append(item)
    for key, rows in groups.items():
        keep = zlib.crc32(repr(key).encode()) % len(rows)
        for i, item in enumerate(rows):
            if i != keep:
                item.add_marker(pytest.mark.slow)
    for key, rows in spread.items():
        every = SPREAD[key[0]][1]
        offset = zlib.crc32(repr(key).encode())
        for i, (_, item) in enumerate(sorted(rows, key=lambda r: r[0])):
            if (i + offset) % every:
                item.add_marker(pytest.mark.slow)


SLICES = 16


def slow_slice(items, seed: str) -> tuple[list, list]:
    """Split ``items`` into those to run and the slow ones outside the slice ``seed`` picks.

    A slow test belongs to slice ``crc32(node id) % SLICES``; ``seed`` (CI's commit hash) picks
    one slice, so a run takes about a sixteenth of the slow set and consecutive commits cover
    all of it. Deterministic, so every xdist worker keeps the same tests."""
    chosen = zlib.crc32(seed.encode()) % SLICES
    kept, dropped = [], []
    for item in items:
        if item.get_closest_marker("slow") and zlib.crc32(item.nodeid.encode()) % SLICES != chosen:
            dropped.append(item)
        else:
            kept.append(item)
    return kept, dropped
