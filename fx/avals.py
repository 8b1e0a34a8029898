"""Abstract values: what the tracer and the type checker know about an array.

``ShapedArray(shape, dtype, weak_type)`` is the static type of every value in a jaxpr. It is
immutable and hashable, so it can key compilation caches. ``weak_type`` marks values that came
from Python scalars and adopt the dtype of whatever strongly-typed value they meet. A dtype
may be an extended one (``fx.extended_dtypes``: typed PRNG keys), whose values are stored as
their :func:`physical_aval`.
"""

from __future__ import annotations

import math

import numpy as np

from fx import dtypes


class ShapedArray:
    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, ShapedArray)
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self) -> int:
        return self._hash

    def str_short(self) -> str:
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"

    __str__ = str_short


def physical_aval(aval: ShapedArray) -> ShapedArray:
    """The aval of the data that stores a value of ``aval``: itself for NumPy dtypes; for an
    extended dtype, its physical dtype with the dtype's physical shape appended."""
    dt = aval.dtype
    if not isinstance(dt, dtypes.ExtendedDType):
        return aval
    return ShapedArray(aval.shape + dt.physical_shape, dt.physical_dtype)


def physical_trailing(aval: ShapedArray) -> tuple[int, ...]:
    """The dimensions :func:`physical_aval` appends to ``aval``'s shape (none for NumPy
    dtypes)."""
    dt = aval.dtype
    return () if isinstance(dt, np.dtype) else dt.physical_shape
