"""Extended dtypes: element types that are not NumPy's, stored as NumPy data.

An :class:`ExtendedDType` (jax's ``jax.dtypes.extended``; fx has one family, the typed PRNG
keys of :mod:`fx.random.prng`) describes values whose elements are each a small block of a
NumPy dtype: an array of shape ``S`` and extended dtype ``d`` is stored as a *physical* array
of shape ``S + d.physical_shape`` and dtype ``d.physical_dtype`` (a ``key<fry>`` array of shape
``(4,)`` is ``uint32[4, 2]``). An fx value of an extended dtype has the logical shape in its
aval and the physical data in its buffer.

How the rest of fx treats them (one rule each, no per-dtype cases):

- ``fx.avals.ShapedArray`` accepts an extended dtype; ``fx.avals.physical_aval`` gives the
  aval of the stored data.
- A primitive accepts extended operands only if it has a physical rule
  (``fx.core.physical_rules``): its computation written on the physical data. Every other
  primitive refuses them in abstract eval with a ``TypeError``, as jax's do.
- Eager evaluation runs the physical rule on the stored data; ``fx.jit`` rewrites a jaxpr
  into its physical form (``fx.interpreters.physical``) before the compiler sees it, so the
  lowering never meets an extended dtype.
- Promotion: an extended dtype meets only itself (mixing it with anything else is a
  ``ValueError``, as in jax); arithmetic refuses it with a ``TypeError``.

This module sits below ``fx.dtypes`` (which re-exports its names) and imports only NumPy.
"""

from __future__ import annotations

import math

import numpy as np


class extended(np.generic):  # noqa: N801  (jax's name: jax.dtypes.extended)
    """The abstract scalar type of every extended dtype, for ``issubdtype``::

        fx.numpy.issubdtype(fx.random.key(0).dtype, fx.dtypes.extended)  # True
    """


class prng_key(extended):  # noqa: N801  (jax's name: jax.dtypes.prng_key)
    """The abstract scalar type of typed PRNG key dtypes (``key<fry>``), for ``issubdtype``;
    raw ``uint32`` keys (``fx.random.PRNGKey``) are not of it, as in jax."""


class ExtendedDType:
    """An element type stored as a block of ``physical_shape`` elements of
    ``physical_dtype``. Subclasses set ``type`` (the abstract scalar type ``issubdtype``
    tests against), ``name``, ``physical_dtype`` and ``physical_shape``, and compare equal
    when they describe the same element type."""

    type: type = extended
    name: str = "extended"
    physical_dtype: np.dtype = np.dtype(np.uint8)
    physical_shape: tuple[int, ...] = ()

    @property
    def itemsize(self) -> int:
        """Bytes per element (of the physical data)."""
        return math.prod(self.physical_shape) * self.physical_dtype.itemsize

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__


def is_extended(dtype) -> bool:
    """Whether ``dtype`` is an extended dtype (not one of NumPy's)."""
    return isinstance(dtype, ExtendedDType)


def join_extended(dtypes_: tuple) -> ExtendedDType:
    """The promotion of dtypes at least one of which is extended: the extended dtype itself
    when all are the same, else jax's ``ValueError``."""
    first = next(d for d in dtypes_ if is_extended(d))
    if all(d == first for d in dtypes_):
        return first
    others = ", ".join(str(d) for d in dtypes_ if d != first)
    raise ValueError(
        f"dtype={first} is not a valid dtype for type promotion: an array of {first} cannot "
        f"be combined with one of {others} (extended dtypes such as PRNG keys promote only "
        "with themselves; use fx.random.key_data(k) for a key's raw uint32 data)")


def refuse_extended(name: str, dtypes_) -> None:
    """Arithmetic refuses extended dtypes with jax's ``TypeError``."""
    bad = [d for d in dtypes_ if is_extended(d)]
    if bad:
        raise TypeError(
            f"{name} does not accept dtype {bad[0]}: arithmetic is not defined on "
            f"{bad[0]} arrays (use fx.random.key_data(k) for a key's raw uint32 data)")


def issubdtype_extended(arg1, arg2) -> bool:
    """``issubdtype`` when either argument is an extended dtype."""
    if is_extended(arg2):
        return arg1 == arg2
    if is_extended(arg1):
        if isinstance(arg2, type) and issubclass(arg2, np.generic):
            return issubclass(arg1.type, arg2)
        return False
    return False
