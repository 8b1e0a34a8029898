"""Every primitive has every rule it needs, or is listed here with the reason it has none.

A new primitive without a jvp rule, a batching rule, or (when declared linear) a transpose
rule fails this test until it gets the rule or an entry below.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import fx
from fx import dtypes
from fx.core import Primitive
from fx.interpreters import batching, jvp, transpose
from fx.lax.elementwise_record import INEXACT, records

# Primitives whose outputs are never differentiable (integer/bool results, or effects):
# their tangents are structurally zero, so they need no jvp rule. The elementwise records
# (fx.lax.elementwise_record) with such outputs are found from their dtypes; others are listed.
NONDIFFERENTIABLE = {
    "iota", "argmax", "argmin", "reduce_and", "reduce_or",
    "reduce_xor", "bitcast_convert_type", "axis_index", "rng_bit_generator",
    "debug_callback", "debug_print", "lu_pivots_to_permutation",
    "random_wrap", "random_unwrap",  # typed PRNG keys and their uint32 data
} | {r.name for r in records()
     if r.jvp is None and (r.out_dtype == dtypes.bool_ or not r.kinds & INEXACT)}
# Primitives that never see a batched operand.
NO_BATCHING = {
    "iota": "has no operands",
    "custom_lin": "exists only inside linear jaxprs being transposed; batching happens on "
                  "the transposed (bwd) computation instead",
}
# Rules that do not exist, each with the reason.
KNOWN_GAPS: dict[str, str] = {
    "custom_lin": "forward mode through a custom_vjp rule is undefined (as in jax); grad of "
                  "grad works because the transpose calls bwd on the outer trace",
    "pmax": "no derivative inside a named vmap, as in jax (outside it, the batched rule is "
            "a reduce_max, which is differentiable)",
    "pmin": "as pmax",
}

# Elementwise primitives (batched by the elementwise batchers) without a kernel rule: a jit
# runs a group holding one as an unfused NumPy step. Each entry says why.
NO_KERNEL: dict[str, str] = {}


def _all_primitives() -> dict[str, Primitive]:
    found: dict[str, Primitive] = {}
    packages = [fx, importlib.import_module("fx.interpreters")]
    for pkg in packages:
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if ".tests" in info.name:
                continue
            try:
                mod = importlib.import_module(info.name)
            except ImportError:
                continue
            for value in vars(mod).values():
                if isinstance(value, Primitive):
                    found.setdefault(value.name, value)
    return found


PRIMS = _all_primitives()


def test_enough_primitives_were_found():
    assert len(PRIMS) > 100, sorted(PRIMS)


@pytest.mark.parametrize("name", sorted(PRIMS))
def test_primitive_has_its_rules(name):
    prim = PRIMS[name]
    assert prim.abstract_eval is not None, f"{name}: no abstract eval rule"
    assert prim.impl is not None, f"{name}: no impl"
    if name not in NONDIFFERENTIABLE and name not in KNOWN_GAPS:
        assert prim in jvp.jvp_rules, f"{name}: no jvp rule (or list it as nondifferentiable)"
    if name not in NO_BATCHING:
        assert prim in batching.batch_rules, f"{name}: no batching rule"
    if prim in jvp.linear_prims:
        assert prim in transpose.transpose_rules, f"{name}: declared linear but no transpose"


def test_every_elementwise_primitive_has_a_kernel_rule_or_a_reason():
    from fx.lowering.fusion import primitive_rules

    elementwise = {p.name: p for p in batching.elementwise_prims}
    assert len(elementwise) > 60, sorted(elementwise)
    missing = {n for n, p in elementwise.items() if p not in primitive_rules.scalar_rules}
    assert missing - set(NO_KERNEL) == set(), "no kernel rule (primitive_rules) and no reason here"
    assert set(NO_KERNEL) - missing == set(), "has a kernel rule now: drop it from NO_KERNEL"
