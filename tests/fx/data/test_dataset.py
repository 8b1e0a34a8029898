"""fx.data.Dataset without worker processes: the epoch order (a jax permutation per epoch),
shard partitions, batching across epochs and filters, exact resume from every position, threads
giving the inline result under random per-record timing, per-record keys equal to
fx.random.fold_in, prefetch, lengths and errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import fx
import fx.data
import fx.random as fr
from fx.data import Dataset

sys.path.insert(0, str(Path(__file__).parent))
import fx_data_fns as fns  # noqa: E402


def _src(n=23):
    return {"x": np.arange(n * 2, dtype=np.float32).reshape(n, 2), "y": np.arange(n)}


def _ys(items):
    return [np.asarray(b["y"]).tolist() for b in items]


def _same(a, b):
    """Bitwise equality of two item lists (pytrees of arrays)."""
    assert len(a) == len(b)
    for u, v in zip(a, b, strict=True):
        lu, tu = fx.tree_util.tree_flatten(u)
        lv, tv = fx.tree_util.tree_flatten(v)
        assert tu == tv
        for p, q in zip(lu, lv, strict=True):
            p, q = np.asarray(p), np.asarray(q)
            assert p.dtype == q.dtype and p.shape == q.shape
            assert p.tobytes() == q.tobytes()


def test_shuffle_is_jax_permutation_per_epoch_and_differs_across_epochs():
    ds = Dataset.from_source(_src(23)).shuffle(5).repeat(3)
    ys = [int(r["y"]) for r in ds]
    epochs = [ys[i * 23:(i + 1) * 23] for i in range(3)]
    for e, order in enumerate(epochs):
        want = jax.random.permutation(jax.random.fold_in(jax.random.PRNGKey(5), e), 23)
        assert order == np.asarray(want).tolist()
        assert sorted(order) == list(range(23))
    assert epochs[0] != epochs[1] != epochs[2]
    assert len(ds) == 69


def _epoch(ds, e):
    """The items of epoch ``e`` alone (an iterator started at the epoch's first position)."""
    it = iter(ds.repeat(e + 1))
    it.set_state({**it.get_state(), "epoch": e, "position": 0})
    return list(it)


@pytest.mark.parametrize("count", [1, 3, 4])
def test_shard_partitions_each_epoch_exactly(count):
    base = Dataset.from_source(_src(23)).shuffle(1).filter(fns.keep_even_y)
    for e in range(2):
        whole = [int(r["y"]) for r in _epoch(base, e)]
        shards = [[int(r["y"]) for r in _epoch(base.shard(i, count), e)] for i in range(count)]
        assert sorted(sum(shards, [])) == sorted(whole) == list(range(0, 23, 2))
        order = np.asarray(base.epoch_indices(e))
        for i, s in enumerate(shards):  # shard i holds positions i, i + count, ...
            assert s == [int(v) for v in order[i::count] if v % 2 == 0]
    with pytest.raises(ValueError, match="index 3 must be below count 3"):
        base.shard(3, 3)


def test_batches_never_span_epochs_and_drop_remainder():
    ds = Dataset.from_source(_src(10)).batch(4).repeat(2)
    assert _ys(ds) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] * 2 and len(ds) == 6
    dropped = Dataset.from_source(_src(10)).batch(4, drop_remainder=True).repeat(2)
    assert _ys(dropped) == [[0, 1, 2, 3], [4, 5, 6, 7]] * 2 and len(dropped) == 4
    filt = Dataset.from_source(_src(10)).filter(fns.keep_even_y).batch(2).repeat(2)
    assert _ys(filt) == [[0, 2], [4, 6], [8]] * 2
    with pytest.raises(TypeError, match="filtered dataset is unknown"):
        len(filt)


def test_map_after_batch_maps_batches():
    ds = Dataset.from_source(_src(6)).batch(3).map(fns.add_batch_sum)
    got = list(ds)
    np.testing.assert_array_equal(got[1]["total"], np.asarray(_src(6)["x"][3:]).sum(axis=0))
    filt = Dataset.from_source(_src(6)).filter(fns.keep_even_y).batch(2).map(fns.add_batch_sum)
    assert [b["total"].tolist() for b in filt] == [[4.0, 6.0], [8.0, 9.0]]


PIPELINES = {
    "batched": lambda: Dataset.from_source(_src(11)).shuffle(2).batch(3).repeat(2),
    "dropped": lambda: Dataset.from_source(_src(11)).shuffle(2).batch(3, True).repeat(2),
    "filtered": lambda: Dataset.from_source(_src(11)).shuffle(2).filter(fns.keep_even_y)
    .batch(2).repeat(2),
    "records": lambda: Dataset.from_source(_src(7)).random_map(fns.noisy, seed=4).repeat(2),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_resume_from_every_position_equals_the_uninterrupted_run(name):
    ds = PIPELINES[name]()
    full = list(ds)
    it = iter(ds)
    states = [it.get_state()]
    for _ in full:
        next(it)
        states.append(json.loads(json.dumps(it.get_state())))
    with pytest.raises(StopIteration):
        next(it)
    for k, state in enumerate(states):
        fresh = iter(ds)
        fresh.set_state(state)
        _same(list(fresh), full[k:])
    # set_state on a running iterator, backwards.
    it.set_state(states[1])
    _same(list(it), full[1:])


def test_threads_give_the_inline_batches_under_random_timing():
    ds = Dataset.from_source(_src(40)).shuffle(9).map(fns.jitter_square) \
        .random_map(fns.noisy, seed=3).batch(5).repeat(2)
    inline = list(ds)
    for k in (1, 3):
        _same(list(ds.map(fns.jitter_square, num_workers=k, workers="threads")),
              [fns.jitter_square(b) | {"y": b["y"]} for b in inline])
    filt = Dataset.from_source(_src(40)).filter(fns.keep_even_y).map(fns.jitter_square).batch(3)
    _same(list(filt.map(fns.slow, num_workers=2, workers="threads")), list(filt))


def test_record_keys_equal_fx_and_jax_fold_in_bitwise():
    idx = [0, 1, 7, 2**31 + 5, 2**32 - 1]
    got = fx.data.record_keys(11, 3, idx)
    for i, row in zip(idx, got, strict=True):
        want = fr.fold_in(fr.fold_in(fr.key(11), 3), i)
        want_bits = np.asarray(fr.key_data(want)).view(np.uint32)
        assert want_bits.tolist() == row.view(np.uint32).tolist()
        jk = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(11), 3), i)
        assert np.asarray(jk).view(np.uint32).tolist() == row.tolist()
    big = fx.data.record_keys(2**40 + 3, 0, [4])[0]
    assert big.tolist() == np.asarray(
        fr.key_data(fr.fold_in(fr.fold_in(fr.key(2**40 + 3), 0), 4))).tolist()


def test_random_map_depends_on_seed_epoch_and_index_only():
    ds = Dataset.from_source(_src(8)).random_map(fns.noisy, seed=1).repeat(2)
    recs = list(ds)
    x0 = [r["x"] for r in recs[:8]]
    x1 = [r["x"] for r in recs[8:]]
    assert not any(np.array_equal(a, b) for a, b in zip(x0, x1, strict=True))  # per epoch
    shuffled = {int(r["y"]): r["x"] for r in
                Dataset.from_source(_src(8)).shuffle(3).random_map(fns.noisy, seed=1)}
    for i in range(8):  # the same record gets the same noise in any order
        assert shuffled[i].tobytes() == x0[i].tobytes()
    other = list(Dataset.from_source(_src(8)).random_map(fns.noisy, seed=2))
    assert not np.array_equal(other[0]["x"], x0[0])


def test_prefetch_keeps_order_and_reports_the_consumed_state():
    ds = Dataset.from_source(_src(20)).shuffle(4).batch(3).repeat(2)
    full = list(ds)
    it = iter(ds.prefetch(3))
    assert len(it) == len(full)
    got = [next(it) for _ in range(4)]
    state = it.get_state()
    assert len(it) == len(full) - 4
    rest = list(it)
    _same(got + rest, full)
    again = iter(ds.prefetch(2))
    again.set_state(state)
    _same(list(again), full[4:])


def test_to_device_cpu_gives_fx_arrays():
    ds = Dataset.from_source(_src(6)).batch(3).to_device("cpu")
    b = next(iter(ds))
    assert isinstance(b["x"], fx.Array) and b["x"].dtype == np.float32
    np.testing.assert_array_equal(np.asarray(b["y"]), [0, 1, 2])


def test_errors_name_the_operation_and_the_record():
    ds = Dataset.from_source(_src(20)).map(fns.fail_on_13).batch(4)
    it = iter(ds)
    assert _ys([next(it) for _ in range(3)]) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    with pytest.raises(fx.data.RecordError, match="record 13 raised ValueError: record 13 is "
                       "bad") as info:
        next(it)
    assert info.value.index == 13 and "fail_on_13" in info.value.worker_traceback
    with pytest.raises(fx.data.RecordError) as info:
        list(ds.map(fns.jitter_square, num_workers=2, workers="threads"))
    assert info.value.index == 13
    with pytest.raises(ValueError, match="call it before batch"):
        ds.filter(fns.keep_even_y)
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        Dataset.from_source(_src()).batch(0)
    with pytest.raises(ValueError, match="workers must be 'processes' or 'threads'"):
        Dataset.from_source(_src()).map(fns.slow, workers="gpus")
    with pytest.raises(ValueError, match="different shapes"):
        list(Dataset.from_source([np.zeros(2), np.zeros(3)]).batch(2))
    with pytest.raises(ValueError, match="seed 1 and shard"):
        iter(Dataset.from_source(_src()).shuffle(2)).set_state(
            iter(Dataset.from_source(_src()).shuffle(1)).get_state())
    with pytest.raises(TypeError, match="cannot read records from int"):
        Dataset.from_source(3)


def _draw(record, rng):
    return rng.random()


def test_random_map_generators_are_record_generators_of_the_record_keys():
    got = [float(v) for v in Dataset.from_source(np.arange(5)).shuffle(2).random_map(_draw, 7)]
    order = Dataset.from_source(np.arange(5)).shuffle(2).epoch_indices(0)
    keys = fx.data.record_keys(7, 0, order)
    want = [g.random() for g in fx.data.keys.record_generators(keys)]
    assert got == want and len(set(got)) == 5
