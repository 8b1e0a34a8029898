"""The memory planner: no two buffers alive at once overlap, packing is near the lower bound,
and in-place reuse happens only where it is legal."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.lax as lax
import fx.numpy as fnp
from fx.lowering.program.memory import BufferSpec, plan_memory


def _check_no_overlap(specs, plan, alignment):
    placed = []
    for b in specs:
        size = -(-max(b.nbytes, 1) // alignment) * alignment
        placed.append((plan.offsets[b.name], size, b))
    for i, (o1, s1, b1) in enumerate(placed):
        assert o1 % alignment == 0
        assert o1 + s1 <= plan.arena_bytes
        for o2, s2, b2 in placed[i + 1:]:
            alias = plan.inplace.get(b1.name) == b2.name or plan.inplace.get(b2.name) == b1.name
            live_together = not (b1.last < b2.first or b2.last < b1.first)
            if live_together and not alias:
                assert o1 + s1 <= o2 or o2 + s2 <= o1, (b1.name, b2.name)


@st.composite
def random_dag_lifetimes(draw):
    """Buffer lifetimes of a random DAG program: each step produces one value whose last use
    is a later step."""
    n = draw(st.integers(2, 40))
    specs = []
    for t in range(n):
        size = draw(st.sampled_from([64, 256, 1024, 4096, 65536]))
        span = draw(st.integers(0, min(6, n - 1 - t)))
        specs.append(BufferSpec(str(t), size, t, t + span))
    return specs


@given(random_dag_lifetimes())
def test_no_live_overlap_and_near_lower_bound(specs):
    plan = plan_memory(specs, 64)
    _check_no_overlap(specs, plan, 64)
    assert plan.lower_bound <= plan.arena_bytes <= plan.naive_bytes
    assert plan.arena_bytes <= 1.1 * plan.lower_bound + 64


def test_inplace_only_when_input_dies_at_the_consumer():
    a = BufferSpec("a", 1024, 0, 1)   # dies at step 1
    b = BufferSpec("b", 1024, 1, 2)   # born at step 1: may take a's storage
    c = BufferSpec("c", 1024, 1, 3)   # also born at step 1, but a is then taken
    d = BufferSpec("d", 1024, 0, 3)   # alive past step 1: cannot be reused
    e = BufferSpec("e", 1024, 1, 2)
    specs = [a, b, c, d, e]
    before = [(x.name, x.nbytes, x.first, x.last) for x in specs]
    plan = plan_memory(specs, 64, [("b", "a"), ("c", "a"), ("e", "d")])
    assert [(x.name, x.nbytes, x.first, x.last) for x in specs] == before  # a pure planner
    assert plan.inplace == {"b": "a"}
    assert plan.offsets["b"] == plan.offsets["a"]
    _check_no_overlap([a, b, c, d, e], plan, 64)


def test_long_lived_buffers_sit_at_the_bottom():
    specs = [BufferSpec("resid", 4096, 0, 9)] + [
        BufferSpec(f"t{i}", 8192, i, i + 1) for i in range(9)
    ]
    plan = plan_memory(specs, 64)
    assert plan.offsets["resid"] == 0
    _check_no_overlap(specs, plan, 64)


def test_compiled_program_reports_memory_analysis():
    def f(x):
        h = fnp.tanh(lax.dot(x, x))
        return lax.reduce_sum(lax.dot(h, h), (0, 1)) + lax.reduce_sum(fnp.exp(x), (0, 1))

    x = fnp.asarray(np.random.default_rng(0).standard_normal((32, 32)).astype(np.float32))
    compiled = fx.jit(f).lower(x).compile()
    mem = compiled.memory_analysis()
    assert mem["lower_bound_bytes"] <= mem["arena_bytes"] <= mem["naive_bytes"]
    assert mem["arena_bytes"] <= 1.1 * mem["lower_bound_bytes"] + 64
    np.testing.assert_allclose(np.asarray(compiled(x)), np.asarray(f(x)), rtol=1e-5)


def _rotation(x):
    # Two temporaries (w0, w1), a reduction reading both, then one flat elementwise group whose
    # two outputs the planner puts in place of w0 and w1, and which reads both for each.
    w0, w1 = fnp.sin(x) + 2.0, fnp.cos(x) * 3.0
    c = fnp.sum(w0 * w1)
    p, q = w0 * c - w1, w0 + w1 * c
    return fnp.dot(p, q)  # a product: p and q are stored, not recomputed in a consumer


def test_an_output_in_place_of_an_input_is_stored_after_every_read_of_the_iteration():
    x = np.linspace(-2, 2, 64).astype(np.float32)
    low = fx.jit(_rotation).lower(x)._program
    (step,) = [s for s in low.steps if len(s.outputs) == 2 and len(s.inputs) >= 2
               and any(low.plan.inplace.get(str(low.buffers[o].slot)) for o in s.outputs)]
    assert all(low.plan.inplace.get(str(low.buffers[o].slot)) for o in step.outputs)
    np.testing.assert_allclose(np.asarray(fx.jit(_rotation)(x)), np.asarray(_rotation(x)),
                               rtol=1e-5)
