"""fx.data: batches (order equal to jax.random.permutation, remainders, pytrees, errors) and
prefetch (order, exception propagation, early close)."""

from __future__ import annotations

import doctest
import importlib
import threading
import time

import jax
import numpy as np
import pytest

import fx
import fx.data
import fx.random as fr
from fx.data import batches, num_batches, prefetch


def _data(n=11):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int32)
    return x, y


@pytest.mark.parametrize("seed", [0, 7])
def test_shuffled_order_equals_jax_permutation(seed):
    x, y = _data(11)
    got = list(batches(fr.key(seed), {"x": x, "y": y}, 4, drop_last=False))
    order = np.asarray(jax.random.permutation(jax.random.PRNGKey(seed), 11))
    ys = np.concatenate([np.asarray(b["y"]) for b in got])
    np.testing.assert_array_equal(ys, order)
    xs = np.concatenate([np.asarray(b["x"]) for b in got])
    np.testing.assert_array_equal(xs, x[order])
    assert [b["y"].shape for b in got] == [(4,), (4,), (3,)]
    assert all(isinstance(b["x"], fx.Array) and b["x"].dtype == np.float32 for b in got)


def test_drop_last_and_in_order():
    x, y = _data(10)
    kept = list(batches(None, (x, y), 3, shuffle=False))
    assert len(kept) == 3 == num_batches(10, 3)
    np.testing.assert_array_equal(np.concatenate([np.asarray(b[1]) for b in kept]), y[:9])
    full = list(batches(None, (x, y), 3, shuffle=False, drop_last=False))
    assert len(full) == 4 == num_batches(10, 3, drop_last=False)
    np.testing.assert_array_equal(np.asarray(full[-1][0]), x[9:])
    assert list(batches(None, (x, y), 20, shuffle=False)) == []


def test_different_keys_give_different_orders_and_fx_inputs_work():
    x, y = _data(32)
    a = np.concatenate([np.asarray(b) for b in batches(fr.key(1), fx.numpy.asarray(y), 8)])
    b = np.concatenate([np.asarray(b) for b in batches(fr.key(2), y, 8)])
    assert sorted(a) == sorted(b) == list(range(32)) and not np.array_equal(a, b)


def test_batches_errors():
    x, y = _data(5)
    with pytest.raises(ValueError, match="same leading .* shapes \\(5, 3\\), \\(4,\\)"):
        next(batches(None, (x, y[:4]), 2, shuffle=False))
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        next(batches(None, x, 0, shuffle=False))
    with pytest.raises(ValueError, match="shuffle=True needs a key"):
        next(batches(None, x, 2))
    with pytest.raises(ValueError, match="holds no arrays"):
        next(batches(None, (), 2, shuffle=False))


def test_prefetch_preserves_order_with_a_jittery_producer():
    rng = np.random.default_rng(0)
    delays = rng.uniform(0, 0.002, 50)

    def slow():
        for i, d in enumerate(delays):
            time.sleep(d)
            yield i

    assert list(prefetch(slow(), size=3)) == list(range(50))
    x, y = _data(9)
    direct = [np.asarray(b[1]) for b in batches(fr.key(3), (x, y), 2)]
    ahead = [np.asarray(b[1]) for b in prefetch(batches(fr.key(3), (x, y), 2))]
    for a, b in zip(direct, ahead, strict=True):
        np.testing.assert_array_equal(a, b)


def test_prefetch_propagates_exceptions_after_earlier_items():
    def failing():
        yield 1
        yield 2
        raise KeyError("bad record 3")

    it = prefetch(failing(), size=1)
    assert next(it) == 1 and next(it) == 2
    with pytest.raises(KeyError, match="bad record 3"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)


def test_prefetch_close_stops_the_producer():
    produced = []

    def endless():
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    before = threading.active_count()
    it = prefetch(endless(), size=2)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it.close()
    deadline = time.time() + 5
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before, "the producer thread kept running after close()"
    assert len(produced) <= 3 + 2 + 1  # at most `size` items (plus one in hand) ran ahead
    with pytest.raises(StopIteration):
        next(it)


def test_prefetch_rejects_bad_size():
    with pytest.raises(ValueError, match="size must be a positive integer, got 0"):
        prefetch(iter([]), size=0)


@pytest.mark.parametrize("module", ["fx.data", "fx.data.batching", "fx.data.prefetch_thread",
                                    "fx.data.dataset", "fx.data.keys", "fx.data.records",
                                    "fx.data.sources", "fx.data.workers"])
def test_docstring_examples(module):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, extraglobs={"fx": fx}, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 1
