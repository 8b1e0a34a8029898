"""The unit of parallel work: one chunk of consecutive positions of an epoch.

A :class:`Plan` is what a worker needs to turn positions into records: the source and the
per-record operations (``map``, ``random_map``, ``filter``), plus the batch size and the batch
operations when each chunk is exactly one batch. :func:`run_chunk` is the same function for
every execution mode (inline, threads, processes), so results cannot depend on the mode: a
record's value is a function of (source index, epoch) and the plan only, and the chunk's output
keeps the positions of its surviving records, from which the consumer rebuilds the order.

Errors in user code become :class:`RecordError`, which names the record and carries the
traceback as text (a traceback object does not cross a process boundary).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from fx.data.keys import record_keys
from fx.tree_util import tree_flatten, tree_unflatten

__all__ = ["Chunk", "Op", "OpKind", "Plan", "RecordError", "run_chunk", "stack_records"]


class OpKind(Enum):
    MAP = "map"
    RANDOM_MAP = "random_map"
    FILTER = "filter"


@dataclass(frozen=True)
class Op:
    kind: OpKind
    fn: Callable
    seed: int = 0


@dataclass(frozen=True)
class Plan:
    source: Any
    record_ops: tuple[Op, ...]
    # Set when every chunk is one whole batch (batching and no filter): the worker stacks the
    # records and applies the batch operations itself.
    batch_size: int | None
    batch_ops: tuple[Op, ...]


@dataclass
class Chunk:
    """A finished chunk: ``positions`` of the surviving records (ascending) and either
    ``stacked`` (a pytree of arrays with a leading record axis) or ``records`` (a list)."""
    epoch: int
    start: int
    end: int
    positions: np.ndarray
    stacked: Any = None
    records: list | None = None

    def unstack(self) -> list:
        if self.records is not None:
            return self.records
        st = self.stacked
        if type(st) is dict and all(isinstance(v, np.ndarray) for v in st.values()):
            return [{k: v[j] for k, v in st.items()} for j in range(len(self.positions))]
        leaves, treedef = tree_flatten(st)
        return [tree_unflatten(treedef, [x[k] for x in leaves]) for k in range(len(self.positions))]


class RecordError(RuntimeError):
    """A user function failed on a record: ``index`` (the source index, or None for a batch
    operation), ``epoch``, ``position`` and the failing code's ``worker_traceback`` (text)."""

    def __init__(self, message: str, index: int | None, epoch: int, position: int,
                 worker_traceback: str):
        super().__init__(message)
        self.index, self.epoch, self.position = index, epoch, position
        self.worker_traceback = worker_traceback

    def __reduce__(self):
        return (RecordError, (self.args[0], self.index, self.epoch, self.position,
                              self.worker_traceback))


def _fail(what: str, index, epoch: int, position: int, err: BaseException) -> RecordError:
    tb = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    msg = (f"fx.data: {what} raised {type(err).__name__}: {err} (epoch {epoch}, position "
           f"{position}); the failing code's traceback:\n{tb}")
    return RecordError(msg, index, epoch, position, tb)


_PLAIN_LEAVES = (np.ndarray, np.generic, int, float, bool)


def _plain_dict_keys(records: list):
    """The sorted keys when every record is a dict of the same keys holding array or scalar
    leaves in the first record (the common case, stacked without fx's general pytree
    flattening, which costs tens of microseconds per record); else None. Later records are
    only checked for their keys: a container where an array belongs fails in the stacking."""
    first = records[0]
    if type(first) is not dict or \
            not all(isinstance(v, _PLAIN_LEAVES) for v in first.values()):
        return None
    keys = first.keys()
    if not all(type(r) is dict and r.keys() == keys for r in records):
        return None
    return sorted(keys)


def _stack_column(col, what: str):
    arrs = col if all(type(x) is np.ndarray for x in col) else [np.asarray(x) for x in col]
    first = arrs[0]
    if any(a.dtype == object for a in arrs):
        raise TypeError(f"fx.data.{what}: a record leaf is not numeric data "
                        f"({type(col[0]).__name__}); batch arrays and numbers")
    out = np.empty((len(arrs),) + first.shape, np.result_type(*{a.dtype for a in arrs}))
    for k, a in enumerate(arrs):
        # Row assignment costs a fraction of np.stack's per-array expand_dims.
        if a.shape != first.shape:
            shapes = sorted({x.shape for x in arrs})
            raise ValueError(f"fx.data.{what}: records have different shapes {shapes} in one "
                             "leaf; pad or crop them to one shape in a map before batching")
        out[k] = a
    return out


def stack_records(records: list, what: str = "batch"):
    """Stack records (pytrees of one structure and shapes) along a new leading axis."""
    keys = _plain_dict_keys(records)
    if keys is not None:
        return {k: _stack_column([r[k] for r in records], what) for k in keys}
    if all(isinstance(r, (np.ndarray, np.generic)) for r in records):
        return _stack_column(records, what)
    flat = [tree_flatten(r) for r in records]
    treedef = flat[0][1]
    for _, td in flat:
        if td != treedef:
            raise ValueError(f"fx.data.{what}: records have different structures, {treedef} "
                             f"and {td}; a batch needs records of one structure")
    cols = list(zip(*[leaves for leaves, _ in flat], strict=True))
    return tree_unflatten(treedef, [_stack_column(col, what) for col in cols])


_INC = 0x5851F42D4C957F2D  # PCG64's increment must be odd; a fixed one, the key is the state


def _seed_words(keys: np.ndarray) -> list[int]:
    """The 64-bit word of each key row, as Python ints (the PCG64 state is that word in both
    halves, so distinct keys give distinct streams; see fx.data.keys.record_generators)."""
    w = (keys[:, 0].astype(np.uint64) << np.uint64(32)) | keys[:, 1].astype(np.uint64)
    return w.tolist()


def run_chunk(plan: Plan, epoch: int, start: int, end: int, indices: np.ndarray) -> Chunk:
    """Read and transform the records at positions ``start..end`` (source ``indices``)."""
    positions = np.arange(start, end, dtype=np.int64)
    src, ops = plan.source, plan.record_ops
    if not ops and plan.batch_size is not None and hasattr(src, "read_many"):
        chunk = Chunk(epoch, start, end, positions, stacked=src.read_many(indices))
    else:
        # Each random op gets its keys for the whole chunk (one vectorized cipher call) and one
        # generator, re-seeded per record: the per-record cost is one state assignment.
        steps = []
        for op in ops:
            if op.kind is OpKind.RANDOM_MAP:
                bits = np.random.PCG64(0)
                steps.append((op.kind, op.fn, bits, np.random.Generator(bits),
                              _seed_words(record_keys(op.seed, epoch, indices))))
            else:
                steps.append((op.kind, op.fn, None, None, None))
        read = getattr(src, "read_unchecked", None) or src.__getitem__
        MAP, RANDOM = OpKind.MAP, OpKind.RANDOM_MAP  # noqa: N806  (locals for the hot loop)
        kept, records = [], []
        for k, index in enumerate(indices.tolist()):
            try:
                r = read(index)
                for kind, fn, bits, gen, words in steps:
                    if kind is MAP:
                        r = fn(r)
                    elif kind is RANDOM:
                        w = words[k]
                        bits.state = {"bit_generator": "PCG64",
                                      "state": {"state": (w << 64) | w, "inc": _INC},
                                      "has_uint32": 0, "uinteger": 0}
                        r = fn(r, gen)
                    elif not fn(r):
                        break
                else:
                    kept.append(start + k)
                    records.append(r)
            except Exception as e:  # noqa: BLE001  (reported with the record)
                raise _fail(f"reading or transforming record {index}", index, epoch,
                            start + k, e) from e
        chunk = Chunk(epoch, start, end, np.asarray(kept, dtype=np.int64), records=records)
        if plan.batch_size is not None:
            chunk.stacked, chunk.records = stack_records(records), None
    if plan.batch_size is not None and plan.batch_ops:
        try:
            for op in plan.batch_ops:
                chunk.stacked = op.fn(chunk.stacked)
        except Exception as e:  # noqa: BLE001
            raise _fail(f"a batch map on positions {start}..{end - 1}", None, epoch, start,
                        e) from e
    return chunk
