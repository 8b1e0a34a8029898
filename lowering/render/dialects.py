"""The kernel dialects, one module each (``c_dialect``, ``cuda_dialect``, ``opencl_dialect``),
and what they share (``dialect_base``: the :class:`Dialect` record and the shared spelling
table), under one name for the renderer and the tests.

A new target is one more module defining a :class:`Dialect` (start from the closest one),
listed in :data:`DIALECTS`; the operation spellings come from ``dialect_base`` and the records
of ``fx.lax.elementwise_record``, overridden in the dialect's ``math`` only where it differs.
"""

# ruff: noqa: F401  (re-exports)

from fx.lowering.render.c_dialect import C
from fx.lowering.render.cuda_dialect import CUDA
from fx.lowering.render.dialect_base import (
    F32,
    F64,
    RECORD_HELPERS,
    Dialect,
    _keys,
    _kind,
    _promoted,
    _template,
    compute_type,
    record_libm,
    record_math,
    storage_type,
)
from fx.lowering.render.opencl_dialect import OPENCL

DIALECTS: tuple[Dialect, ...] = (C, CUDA, OPENCL)
