"""Magnitude pruning: exact sparsity per layer and per N:M group, pruned weights staying zero
through optimizer steps, the schedules' formulas, the ERK distribution, and bad arguments."""

from __future__ import annotations

import math

import numpy as np
import pytest
from harness import run_doctests

import fx
import fx.numpy as fnp
from fx import sparsity
from fx.sparsity import Channels, MagnitudePruning, NByM, OneShot, Periodic, Polynomial


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return [(fnp.asarray(rng.standard_normal((3, 3, 4, 8)).astype(np.float32)),
             fnp.asarray(rng.standard_normal((1, 1, 1, 8)).astype(np.float32))), (),
            (fnp.asarray(rng.standard_normal((32, 12)).astype(np.float32)),
             fnp.asarray(rng.standard_normal(12).astype(np.float32)))]


def _masks_at(pruner, params, step=0):
    return pruner.update_masks(params, pruner.init_masks(params), step)


@pytest.mark.parametrize("s", [0.0, 0.3, 0.5, 0.8, 0.97])
def test_unstructured_sparsity_is_exact_per_layer(s):
    params = _params()
    masked = sparsity.apply_masks(params, _masks_at(MagnitudePruning(sparsity=s), params))
    summ = sparsity.summary(masked)
    for name, size in (("[0][0]", 288), ("[2][0]", 384)):
        assert summ[name] == round(s * size) / size
    assert "[0][1]" not in summ and "[2][1]" not in summ  # biases stay dense
    # The pruned weights are the smallest magnitudes.
    w, mw = np.asarray(params[2][0]), np.asarray(masked[2][0])
    if 0 < s:
        assert np.abs(w[mw == 0]).max() <= np.abs(w[mw != 0]).min()


def test_n_by_m_keeps_n_of_every_m_along_the_input_axis():
    params = _params(1)
    masks = _masks_at(MagnitudePruning(structure=NByM(2, 4)), params)
    conv = np.asarray(masks[0][0])  # HWIO: groups along I
    assert (conv.reshape(3, 3, 1, 4, 8).sum(axis=3) == 2).all()
    dense = np.asarray(masks[2][0])  # (in, out): groups along in
    assert (dense.reshape(8, 4, 12).sum(axis=1) == 2).all()
    w = np.abs(np.asarray(params[2][0])).reshape(8, 4, 12)
    g = dense.reshape(8, 4, 12)
    assert (np.where(g, w, np.inf).min(axis=1) >= np.where(g, -np.inf, w).max(axis=1)).all()


def test_channels_prune_whole_output_channels_and_their_bias():
    params = _params(2)
    masks = _masks_at(MagnitudePruning(sparsity=0.5, structure=Channels(-1)), params)
    ch = np.asarray(masks[0][0]).reshape(-1, 8)
    assert (ch.all(axis=0) | ~ch.any(axis=0)).all() and ch.any(axis=0).sum() == 4
    np.testing.assert_array_equal(np.asarray(masks[0][1]).reshape(8), ch.any(axis=0))
    norms = np.abs(np.asarray(params[0][0])).reshape(-1, 8).sum(axis=0)
    assert norms[ch.any(axis=0)].min() >= norms[~ch.any(axis=0)].max()


def test_pruned_weights_stay_zero_through_jitted_adam_steps():
    params = _params(3)
    pruner = MagnitudePruning(sparsity=0.75, schedule=Polynomial(start=1, end=4))
    tx = pruner.wrap(fx.optim.adam(0.05))
    state = tx.init(params)
    rng = np.random.default_rng(4)

    @fx.jit
    def step(params, state, g):
        updates, state = tx.update(g, state, params)
        return fx.optim.apply_updates(params, updates), state

    for t in range(7):
        g = fx.tree_util.tree_map(
            lambda p: fnp.asarray(rng.standard_normal(p.shape).astype(np.float32)), params)
        before = [np.asarray(m) for m in fx.tree_util.tree_leaves(state.masks)]
        params, state = step(params, state, g)
        expected = round(384 * float(Polynomial(1, 4)(t, 0.75))) / 384
        assert sparsity.summary(params)["[2][0]"] == expected, t
        for w, m, b in zip(fx.tree_util.tree_leaves(params),
                           fx.tree_util.tree_leaves(state.masks), before):
            m = np.broadcast_to(np.asarray(m), w.shape)
            assert not np.asarray(w)[~m].view(np.uint32).any()  # pruned: exactly +0.0
            assert (m <= np.broadcast_to(b, w.shape)).all()  # a pruned weight never regrows
    assert sparsity.summary(params)["[0][0]"] == round(0.75 * 288) / 288
    assert int(state.count) == 7


@pytest.mark.parametrize("t", [0, 1, 5, 10, 17, 30, 31, 50])
def test_schedules_follow_their_formulas(t):
    target = 0.9
    poly = Polynomial(start=10, end=30, power=3)
    p = min(max((t - 10) / 20, 0.0), 1.0)
    assert math.isclose(float(poly(t, target)), target * (1 - (1 - p) ** 3), rel_tol=1e-6,
                        abs_tol=1e-7)
    assert bool(poly.updates(t)) == (10 <= t <= 30)
    assert float(OneShot(17)(t, target)) == pytest.approx(target if t >= 17 else 0.0)
    assert bool(OneShot(17).updates(t)) == (t == 17)
    per = Periodic(every=5, start=10, end=30)
    assert float(per(t, target)) == pytest.approx(target if t >= 10 else 0.0)
    assert bool(per.updates(t)) == (10 <= t <= 30 and (t - 10) % 5 == 0)


def test_erk_keeps_the_overall_density_and_favours_small_layers():
    shapes = {"a": (3, 3, 16, 32), "b": (64, 64), "c": (512, 512)}
    s = sparsity.erk_sparsities(shapes, 0.9)
    kept = sum((1 - s[k]) * math.prod(v) for k, v in shapes.items())
    assert kept == pytest.approx(0.1 * sum(math.prod(v) for v in shapes.values()))
    assert s["c"] > s["a"] > s["b"] >= 0  # densities follow sum(shape) / prod(shape)
    params = {k: fnp.ones(v) for k, v in shapes.items()}
    got = MagnitudePruning(sparsity=0.9, distribution="erk").layer_sparsities(params)
    assert got == {f"['{k}']": v for k, v in s.items()}


def test_filter_and_update_without_params():
    params = _params()
    pruner = MagnitudePruning(sparsity=0.5, filter=lambda name, w: name != "[2][0]")
    assert list(pruner.layers(params)) == ["[0][0]"]
    tx = pruner.wrap(fx.optim.sgd(0.1))
    with pytest.raises(ValueError, match="needs params"):
        tx.update(params, tx.init(params))


@pytest.mark.parametrize("kwargs, match", [
    (dict(sparsity=1.0), r"sparsity must be a number in \[0, 1\)"),
    (dict(sparsity=-0.1), r"in \[0, 1\)"),
    (dict(), r"in \[0, 1\)"),
    (dict(sparsity=0.5, distribution="gaussian"), "distribution must be one of"),
    (dict(sparsity=0.3, structure=NByM(2, 4)), "fixes the sparsity at 0.5"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MagnitudePruning(**kwargs)


def test_bad_structures_and_schedules():
    with pytest.raises(ValueError, match=r"0 < n <= m, got n=4, m=2"):
        NByM(4, 2)
    params = _params()
    with pytest.raises(ValueError, match=r"axis 4 is out of range for \[0\]\[0\] of shape"):
        MagnitudePruning(sparsity=0.5, structure=Channels(4)).init_masks(params)
    with pytest.raises(ValueError, match="not a multiple of 8"):
        MagnitudePruning(structure=NByM(2, 8, axis=-1)).init_masks(params)
    with pytest.raises(ValueError, match="end must be an int >= 11"):
        Polynomial(start=10, end=10)
    with pytest.raises(ValueError, match="every must be an int >= 1"):
        Periodic(every=0)
    with pytest.raises(TypeError, match="structure must be"):
        MagnitudePruning(sparsity=0.5, structure="2:4")


def test_doctests():
    run_doctests(sparsity.pruning, sparsity.schedules)
