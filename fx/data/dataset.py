"""``fx.data.Dataset``: a lazy, composable description of an input pipeline.

Each method returns a new Dataset; nothing runs until iteration. The record stream of epoch
``e`` is fixed by (seed, epoch) alone: the source's indices, permuted by
``fx.random.permutation(fold_in(key(seed), e), n)`` after ``shuffle(seed)`` (the permutation
``jax.random.permutation`` gives for the same key), then every ``count``-th position from
``index`` after ``shard(index, count)``. A record's value is a function of its source index and
the epoch (random maps get the key ``fold_in(fold_in(key(seed), epoch), index)``), so workers,
their number and their timing never change the output.

Semantics worth knowing:

- ``shuffle`` and ``shard`` act on records wherever they appear in the chain; ``shard``
  partitions each epoch's positions before ``filter`` runs, so the shards of a filtered
  dataset still partition it exactly.
- ``batch`` stacks consecutive surviving records; batches never span epochs (the last batch of
  an epoch is short, or dropped with ``drop_remainder=True``). ``map`` after ``batch`` maps
  whole batches (NumPy pytrees).
- ``repeat(epochs)`` sets the number of epochs (``None``: forever); the default is one.
- ``map(fn, num_workers=k)`` runs the record stage (reading, maps, filters, stacking) in ``k``
  worker processes (``workers="threads"`` for threads); ``k=0`` runs it in the consumer.
- Batches are pytrees of NumPy arrays; ``to_device(d)`` makes them fx arrays on ``d``.

>>> import numpy as np, fx.data
>>> ds = fx.data.Dataset.from_source(np.arange(10)).filter(lambda r: r % 3 != 0).batch(3)
>>> [b.tolist() for b in ds]
[[1, 2, 4], [5, 7, 8]]
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fx.data.chunks import Op, OpKind, Plan
from fx.data.sources import as_source

__all__ = ["Dataset"]


def _positive(name: str, what: str, value, allow_none: bool = False, zero: bool = False):
    if allow_none and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or \
            value < (0 if zero else 1):
        kind = "non-negative" if zero else "positive"
        raise ValueError(f"fx.data.Dataset.{name}: {what} must be a {kind} integer"
                         f"{' or None' if allow_none else ''}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Dataset:
    """A pipeline description; build one with :meth:`from_source`."""

    source: Any
    seed: int | None = None
    shard_index: int = 0
    shard_count: int = 1
    epochs: int | None = 1
    record_ops: tuple[Op, ...] = ()
    batch_size: int | None = None
    drop_remainder: bool = False
    batch_ops: tuple[Op, ...] = ()
    num_workers: int = 0
    workers: str = "processes"
    prefetch_size: int = 0
    device: Any = None

    @staticmethod
    def from_source(source: Any) -> Dataset:
        """A dataset of ``source``'s records: a source (``ArraySource``, ``ShardSource``,
        ``RecordSource``, any object with ``__len__`` and ``__getitem__``), arrays or a pytree
        of arrays, a directory of ``.npy``/``.npz`` shards, or a record file's path."""
        return Dataset(as_source(source))

    def _replace(self, **kw) -> Dataset:
        return dataclasses.replace(self, **kw)

    def _parallel(self, name: str, num_workers, workers) -> dict:
        kw: dict = {}
        if num_workers is not None:
            kw["num_workers"] = _positive(name, "num_workers", num_workers, zero=True)
        if workers is not None:
            if workers not in ("processes", "threads"):
                raise ValueError(f"fx.data.Dataset.{name}: workers must be 'processes' or "
                                 f"'threads', got {workers!r}")
            kw["workers"] = workers
        return kw

    def shuffle(self, seed: int) -> Dataset:
        """Take each epoch's records in a fresh random order: a permutation per epoch, from
        ``seed`` and the epoch number."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"fx.data.Dataset.shuffle: seed must be an integer, got {seed!r}")
        return self._replace(seed=int(seed))

    def map(self, fn: Callable, num_workers: int | None = None,
            workers: str | None = None) -> Dataset:
        """Apply ``fn`` to every record (or, after :meth:`batch`, to every batch).
        ``num_workers``/``workers`` set the parallelism of the whole record stage."""
        if not callable(fn):
            raise TypeError(f"fx.data.Dataset.map: fn must be callable, got {fn!r}")
        op = Op(OpKind.MAP, fn)
        kw = self._parallel("map", num_workers, workers)
        if self.batch_size is not None:
            return self._replace(batch_ops=self.batch_ops + (op,), **kw)
        return self._replace(record_ops=self.record_ops + (op,), **kw)

    def random_map(self, fn: Callable, seed: int = 0, num_workers: int | None = None,
                   workers: str | None = None) -> Dataset:
        """Apply ``fn(record, rng)`` to every record, ``rng`` a ``numpy.random.Generator``
        seeded by the record's key ``fold_in(fold_in(key(seed), epoch), index)`` (``index`` the
        source index; :func:`fx.data.record_key` gives that key as an fx array). The generator
        is valid only during the call."""
        if self.batch_size is not None:
            raise ValueError("fx.data.Dataset.random_map: random maps act on records; call it "
                             "before batch()")
        if not callable(fn):
            raise TypeError(f"fx.data.Dataset.random_map: fn must be callable, got {fn!r}")
        op = Op(OpKind.RANDOM_MAP, fn, int(seed))
        return self._replace(record_ops=self.record_ops + (op,),
                             **self._parallel("random_map", num_workers, workers))

    def filter(self, predicate: Callable) -> Dataset:
        """Keep the records for which ``predicate(record)`` is true (length becomes unknown)."""
        if self.batch_size is not None:
            raise ValueError("fx.data.Dataset.filter: filters act on records; call it before "
                             "batch()")
        return self._replace(record_ops=self.record_ops + (Op(OpKind.FILTER, predicate),))

    def batch(self, batch_size: int, drop_remainder: bool = False) -> Dataset:
        """Stack ``batch_size`` consecutive records into one pytree of arrays."""
        if self.batch_size is not None:
            raise ValueError("fx.data.Dataset.batch: the dataset is already batched")
        return self._replace(batch_size=_positive("batch", "batch_size", batch_size),
                             drop_remainder=bool(drop_remainder))

    def repeat(self, epochs: int | None = None) -> Dataset:
        """Iterate ``epochs`` epochs (``None``: forever)."""
        return self._replace(epochs=_positive("repeat", "epochs", epochs, allow_none=True))

    def shard(self, index: int, count: int) -> Dataset:
        """Keep positions ``index, index + count, ...`` of every epoch: ``count`` shards with
        the same seed partition each epoch's records exactly."""
        count = _positive("shard", "count", count)
        index = _positive("shard", "index", index, zero=True)
        if index >= count:
            raise ValueError(f"fx.data.Dataset.shard: index {index} must be below count {count}")
        if self.shard_count != 1:
            raise ValueError("fx.data.Dataset.shard: the dataset is already sharded")
        return self._replace(shard_index=index, shard_count=count)

    def prefetch(self, size: int = 2) -> Dataset:
        """Produce up to ``size`` items ahead in a background thread (with transfers)."""
        return self._replace(prefetch_size=_positive("prefetch", "size", size))

    def to_device(self, device=None) -> Dataset:
        """Deliver batches as fx arrays on ``device`` (default: the default device); on CUDA
        through pinned buffers and a copy stream (``fx.data.device``)."""
        from fx.data.device import resolve_device

        return self._replace(device=resolve_device(device))

    # --- derived facts ---------------------------------------------------------------------

    def plan(self) -> Plan:
        direct = self.batch_size is not None and not any(
            op.kind is OpKind.FILTER for op in self.record_ops)
        return Plan(self.source, self.record_ops, self.batch_size if direct else None,
                    self.batch_ops if direct else ())

    @functools.cached_property
    def _num_records(self) -> int:
        return len(self.source)

    def epoch_length(self) -> int:
        """Positions per epoch (records after sharding, before filtering)."""
        n = self._num_records
        return max(0, -(-(n - self.shard_index) // self.shard_count))

    def epoch_indices(self, epoch: int) -> np.ndarray:
        """The source indices of epoch ``epoch``, in order (int64)."""
        n = self._num_records
        if self.seed is None:
            order = np.arange(n, dtype=np.int64)
        else:
            import fx.random

            key = fx.random.fold_in(fx.random.key(self.seed), epoch)
            order = np.asarray(fx.random.permutation(key, n)).astype(np.int64)
        return order[self.shard_index::self.shard_count]

    def items_per_epoch(self) -> int | None:
        if any(op.kind is OpKind.FILTER for op in self.record_ops):
            return None
        m = self.epoch_length()
        if self.batch_size is None:
            return m
        return m // self.batch_size if self.drop_remainder else -(-m // self.batch_size)

    def __len__(self) -> int:
        per = self.items_per_epoch()
        if per is None:
            raise TypeError("fx.data.Dataset: the length of a filtered dataset is unknown")
        if self.epochs is None:
            raise TypeError("fx.data.Dataset: the length of a dataset repeated forever is "
                            "unknown")
        return per * self.epochs

    def __iter__(self):
        return self.iterator()

    def iterator(self, pool=None):
        """A new iterator (see ``fx.data.iterator.DatasetIterator``); ``pool`` is a
        :class:`fx.data.WorkerPool` to share (processes only; its worker count wins)."""
        from fx.data.iterator import make_iterator

        return make_iterator(self, pool)
