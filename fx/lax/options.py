"""The enums and records that ``jax.lax`` functions take as options, with jax's names.

``RoundingMethod`` is what ``fx.lax.round`` takes (an ``IntEnum``: ``round(x, 1)`` works too).
``Precision`` and ``DotAlgorithmPreset`` are accepted by ``dot_general``, ``dot``, ``conv*``
and ``batch_matmul`` as ``precision=`` for compatibility: fx computes every product at the
full precision of its operands' dtype (float32 products are float32 products, never bfloat16
passes), which meets the contract of each preset it accepts. The dimension-number records
have jax's fields; ``ConvGeneralDilatedDimensionNumbers`` is the argument type of the ``conv``
functions (three spec strings or a :class:`~fx.lax.ConvDimensionNumbers`).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NamedTuple

from fx.lax.convolution import ConvDimensionNumbers


class RoundingMethod(enum.IntEnum):
    """How ``fx.lax.round`` breaks ties: away from zero (0, the default) or to even (1)."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


class Precision(enum.Enum):
    """XLA's precision levels for products (``DEFAULT``, ``HIGH``, ``HIGHEST``). fx always
    computes at the operands' full precision, which is ``HIGHEST``."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    def __str__(self) -> str:
        return self.name


class DotAlgorithmPreset(enum.Enum):
    """jax's named dot algorithms (operand, accumulation and output types). fx computes
    products in the operands' dtype and accumulates half precision in float32, so the presets
    that match that (``DEFAULT``, ``F32_F32_F32``, ``F64_F64_F64``, ``BF16_BF16_F32``,
    ``F16_F16_F32``) describe what fx does; the others are accepted and computed the same way,
    at least as accurately as they ask."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __str__(self) -> str:
        return self.name


PrecisionLike = (None | str | Precision | DotAlgorithmPreset | tuple[str, str]
                 | tuple[Precision, Precision])

# ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``.
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]

ConvGeneralDilatedDimensionNumbers = None | ConvDimensionNumbers | tuple[str, str, str]


class GatherDimensionNumbers(NamedTuple):
    """XLA's description of a windowed gather (jax's fields): ``fx.lax.gather(operand,
    start_indices, dimension_numbers, slice_sizes)`` takes it (or jax's own record) in place
    of fx's ``axes``."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """XLA's description of a windowed scatter (jax's fields), taken by ``fx.lax.scatter``,
    ``scatter_add`` ... in place of ``axes``; see :class:`GatherDimensionNumbers`."""

    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()
