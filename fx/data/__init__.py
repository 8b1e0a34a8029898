"""fx.data: input pipelines — sources, a lazy Dataset, parallel workers, checkpoints.

The pieces, each in its module:

- sources (``fx.data.sources``, ``fx.data.records``): in-memory arrays (:class:`ArraySource`),
  a directory of ``.npy``/``.npz`` shards (:class:`ShardSource`), fx's checksummed record file
  (:func:`write_records`, :class:`RecordSource`), scikit-learn's digits (:func:`digits`), or
  any object with ``__len__`` and ``__getitem__``;
- :class:`Dataset` (``fx.data.dataset``): ``Dataset.from_source(src).shuffle(seed).map(fn)
  .filter(pred).batch(n).repeat(epochs).shard(i, k).prefetch(n).to_device(d)``; its order is
  a function of (seed, epoch, index) only, for any number of workers;
- workers (``fx.data.workers``): ``map(fn, num_workers=k)`` over spawned processes that return
  chunks through shared memory, or ``workers="threads"``; a :class:`WorkerPool` can be shared;
- iterators (``fx.data.iterator``): ``get_state()``/``set_state()`` resume exactly; ``close()``,
  Ctrl-C and garbage collection stop the workers; ``len()`` where it is known;
- random per-record transforms (``fx.data.keys``): ``random_map(fn, seed)`` with the key
  ``fold_in(fold_in(key(seed), epoch), index)``;
- the original helpers: :func:`batches` (one epoch of in-memory minibatches in
  ``jax.random.permutation`` order) and :func:`prefetch` (any iterator, in a thread).

Scripts that use worker processes must guard their entry point with
``if __name__ == "__main__":`` (workers are spawned and import the main module), and their map
functions must pickle (module-level functions; ``functools.partial`` of them is fine).

>>> import numpy as np, fx.data
>>> ds = fx.data.Dataset.from_source({"x": np.arange(8.0), "y": np.arange(8)})
>>> it = iter(ds.shuffle(0).batch(4, drop_remainder=True).repeat(2))
>>> len(it), sorted(next(it)["y"].tolist() + next(it)["y"].tolist())
(4, [0, 1, 2, 3, 4, 5, 6, 7])
"""

from fx.data.batching import batches, num_batches
from fx.data.chunks import RecordError
from fx.data.dataset import Dataset
from fx.data.device import DeviceCopier
from fx.data.iterator import DatasetIterator, PrefetchIterator
from fx.data.keys import record_key, record_keys
from fx.data.prefetch_thread import prefetch
from fx.data.records import RecordFileError, RecordSource, write_records
from fx.data.sources import ArraySource, ShardSource, as_source, digits
from fx.data.workers import WorkerDied, WorkerPool

__all__ = ["ArraySource", "Dataset", "DatasetIterator", "DeviceCopier", "PrefetchIterator",
           "RecordError", "RecordFileError", "RecordSource", "ShardSource", "WorkerDied",
           "WorkerPool", "as_source", "batches", "digits", "num_batches", "prefetch",
           "record_key", "record_keys", "write_records"]
