"""The primitive objects of ``fx.lax``, under jax's names (``fx.lax.add_p`` ...).

For code that walks jaxprs (``eqn.primitive is fx.lax.sin_p``) or binds a primitive directly.
The elementwise primitives declared by a record (``fx.lax.elementwise_record``) are derived
from the records; the others are imported from their modules below. Each is fx's own
primitive: its parameters are fx's (see its module), which for most equal jax's. ``add_any_p``
is fx's name for jax's ``add_jaxvals_p``.
"""

# ruff: noqa: F401  (re-exports)

from fx.lax.base import (
    add_any_p,
    broadcast_in_dim_p,
    reduce_sum_p,
    reshape_p,
    transpose_p,
)
from fx.lax.complex_parts import (
    complex_p,
    conj_p,
    imag_p,
    real_p,
)
from fx.lax.control_flow import (
    cond_p,
    scan_p,
    while_p,
)
from fx.lax.convert import (
    bitcast_convert_type_p,
    convert_element_type_p,
)
from fx.lax.convolution import (
    conv_general_dilated_p,
)
from fx.lax.dynamic_slicing import (
    dynamic_slice_p,
    dynamic_update_slice_p,
)
from fx.lax.elementwise import (
    integer_pow_p,
    round_p,
    select_n_p,
)
from fx.lax.elementwise_record import records
from fx.lax.fft import (
    fft_p,
)
from fx.lax.indexing import (
    gather_p,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    scatter_p,
)
from fx.lax.linalg import (
    dot_general_p,
)
from fx.lax.parallel import (
    all_gather_p,
    axis_index_p,
    pmax_p,
    pmin_p,
    psum_p,
)
from fx.lax.reductions import (
    argmax_p,
    argmin_p,
    reduce_and_p,
    reduce_max_p,
    reduce_min_p,
    reduce_or_p,
    reduce_prod_p,
    reduce_xor_p,
)
from fx.lax.sorting import (
    cumlogsumexp_p,
    cummax_p,
    cummin_p,
    cumprod_p,
    cumsum_p,
    sort_p,
)
from fx.lax.special import (
    polygamma_p,
)
from fx.lax.structural import (
    concatenate_p,
    iota_p,
    pad_p,
    rev_p,
    slice_p,
    squeeze_p,
)
from fx.lax.windowed import (
    reduce_window_max_p,
    reduce_window_min_p,
    reduce_window_sum_p,
    select_and_gather_add_p,
    select_and_scatter_add_p,
)

# Every elementwise record's primitive, under its name plus "_p" (see fx.lax.elementwise_record:
# the modules declaring records are imported by fx.lax before this one).
globals().update({f"{r.name}_p": r.primitive for r in records()})

__all__ = sorted(name for name in globals() if name.endswith("_p"))
