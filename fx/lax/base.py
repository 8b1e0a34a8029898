"""fx.lax's names for the primitives the interpreters emit and the shape-rule helpers, which are
declared in the core (:mod:`fx.core_primitives`) so that the interpreters, below fx.lax, can
emit them: ``add_any``, ``broadcast_in_dim``, ``reshape``, ``transpose``, ``reduce_sum`` (and
their ``*_p`` primitives), ``full``, ``zeros_like_aval``, ``shape_error``, ``canonical_axes``,
``canonical_axis``, ``accumulation_dtype``, ``as_array``. The fx.lax modules and the compiler
import them from here.
"""

from fx.core_primitives import (  # noqa: F401
    accumulation_dtype,
    add_any,
    add_any_p,
    as_array,
    broadcast_in_dim,
    broadcast_in_dim_p,
    canonical_axes,
    canonical_axis,
    full,
    reduce_sum,
    reduce_sum_p,
    reshape,
    reshape_p,
    shape_error,
    transpose,
    transpose_p,
    zeros_like_aval,
)
