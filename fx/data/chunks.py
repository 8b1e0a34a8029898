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
        leaves, treedef = tree_flatten(self.stacked)
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


def stack_records(records: list, what: str = "batch"):
    """Stack records (pytrees of one structure and shapes) along a new leading axis."""
    flat = [tree_flatten(r) for r in records]
    treedef = flat[0][1]
    for _, td in flat:
        if td != treedef:
            raise ValueError(f"fx.data.{what}: records have different structures, {treedef} "
                             f"and {td}; a batch needs records of one structure")
    cols = list(zip(*[leaves for leaves, _ in flat], strict=True))
    out = []
    for col in cols:
        arrs = [np.asarray(x) for x in col]
        shapes = {a.shape for a in arrs}
        if len(shapes) > 1:
            raise ValueError(f"fx.data.{what}: records have different shapes "
                             f"{sorted(shapes)} in one leaf; pad or crop them to one shape "
                             "in a map before batching")
        out.append(np.stack(arrs))
    return tree_unflatten(treedef, out)


def _reseed(bits: np.random.PCG64, key) -> None:
    word = (int(key[0]) << 32) | int(key[1])
    bits.state = {"bit_generator": "PCG64",
                  "state": {"state": (word << 64) | word, "inc": 0x5851F42D4C957F2D},
                  "has_uint32": 0, "uinteger": 0}


def run_chunk(plan: Plan, epoch: int, start: int, end: int, indices: np.ndarray) -> Chunk:
    """Read and transform the records at positions ``start..end`` (source ``indices``)."""
    positions = np.arange(start, end, dtype=np.int64)
    src, ops = plan.source, plan.record_ops
    if not ops and plan.batch_size is not None and hasattr(src, "read_many"):
        chunk = Chunk(epoch, start, end, positions, stacked=src.read_many(indices))
    else:
        # Per random op: its keys for the whole chunk (one vectorized cipher call) and one
        # generator re-seeded per record (see fx.data.keys.record_generators).
        keys = {j: record_keys(op.seed, epoch, indices) for j, op in enumerate(ops)
                if op.kind is OpKind.RANDOM_MAP}
        bits = {j: np.random.PCG64(0) for j in keys}
        gens = {j: np.random.Generator(b) for j, b in bits.items()}
        kept, records = [], []
        for k, index in enumerate(indices.tolist()):
            try:
                r = src[index]
                for j, op in enumerate(ops):
                    if op.kind is OpKind.MAP:
                        r = op.fn(r)
                    elif op.kind is OpKind.RANDOM_MAP:
                        _reseed(bits[j], keys[j][k])
                        r = op.fn(r, gens[j])
                    elif not op.fn(r):
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
