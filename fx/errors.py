"""The errors fx raises where jax raises its own types, under jax's names (``jax.errors``).

- :class:`ConcretizationTypeError`: a traced value was used where Python needs a concrete one
  (``if``, ``int()``, a shape).
- :class:`NonConcreteBooleanIndexError`: a boolean mask under ``jit``/``vmap``: the result's
  shape would depend on the data. An ``IndexError``, as jax's; it is also a
  ``ConcretizationTypeError``, which fx raised here before.
- :class:`UnexpectedTracerError`: a traced value escaped its transformation.
- :class:`TypePromotionError`: two dtypes have no implicit promotion (strict mode, 8-bit
  floats); a ``ValueError``, as jax's ``jax.dtypes.TypePromotionError`` (the same class as
  ``fx.dtypes.TypePromotionError``).
"""

from fx.core import ConcretizationTypeError, UnexpectedTracerError
from fx.dtypes import TypePromotionError


class NonConcreteBooleanIndexError(IndexError, ConcretizationTypeError):
    """Boolean-mask indexing with a traced mask: use ``fx.numpy.where(mask, x, 0)`` to keep
    the shape, or ``size=`` where the function has it (``fx.numpy.nonzero``)."""


__all__ = ["ConcretizationTypeError", "NonConcreteBooleanIndexError", "TypePromotionError",
           "UnexpectedTracerError"]
