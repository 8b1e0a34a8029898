"""``fx.lax``: the primitives and thin, strictly typed wrappers over them.

Unlike ``fx.numpy``, these functions do not broadcast or promote (apart from Python scalars,
which take the dtype of the array operands). Each primitive is declared, with its shape/dtype
rule, impl, and transformation rules, in the module of its family.
"""

# ruff: noqa: I001  (import order matters: fx.lax before the interpreters' users)

from fx.lax.base import (
    add_any,
    broadcast_in_dim,
    full,
    reduce_sum,
    reshape,
    transpose,
)
from fx.lax.elementwise import (  # noqa: A004
    abs,
    acos,
    acosh,
    add,
    and_,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitcast_convert_type,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cbrt,
    ceil,
    clamp,
    convert_element_type,
    cos,
    cosh,
    div,
    eq,
    exp,
    exp2,
    expm1,
    floor,
    full_like,
    ge,
    gt,
    integer_pow,
    is_finite,
    le,
    log,
    log1p,
    logistic,
    lt,
    max,
    min,
    mul,
    ne,
    neg,
    nextafter,
    or_,
    pow,
    rem,
    round,
    rsqrt,
    select,
    select_n,
    shift_left,
    shift_right_logical,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    stop_gradient,
    sub,
    tan,
    tanh,
    xor,
)
from fx.lax.special import digamma, erf, erf_inv, erfc, lgamma, polygamma
from fx.lax.special_functions import (
    bessel_i0e,
    bessel_i1e,
    betainc,
    igamma,
    igamma_grad_a,
    igammac,
    zeta,
)
from fx.lax.structural import (
    broadcasted_iota,
    concatenate,
    iota,
    pad,
    slice,
    slice_in_dim,
)
from fx.lax.sorting import (
    associative_scan,
    cumlogsumexp,
    cummax,
    cummin,
    cumprod,
    cumsum,
    sort,
    sort_key_val,
    top_k,
)
from fx.lax.general_indexing import (
    gather,
    scatter,
    scatter_add,
    scatter_max,
    scatter_min,
    scatter_mul,
)
from fx.lax.indexing import GatherScatterMode
from fx.lax.complex_parts import complex, conj, imag, real  # noqa: A004
from fx.lax.fft import FftType, fft
from fx.lax.reductions import (
    argmax,
    argmin,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_xor,
)
from fx.lax.linalg import (
    dot,
    dot_general,
)
from fx.lax.dynamic_slicing import (
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
)
from fx.lax.structural import (
    collapse,
    expand_dims,
    rev,
    squeeze,
)
from fx.lax.parallel import (
    all_gather,
    axis_index,
    pcast,
    pmax,
    pmean,
    pmin,
    psum,
    pvary,
)
from fx.lax.control_flow import (  # noqa: A004
    cond,
    fori_loop,
    map,
    scan,
    switch,
    while_loop,
)
from fx.lax.windowed import (
    padtype_to_pads,
    reduce_window,
)
from fx.lax.convolution import (
    ConvDimensionNumbers,
    conv,
    conv_dimension_numbers,
    conv_general_dilated,
    conv_transpose,
    conv_with_general_padding,
)
from fx.lax.composites import (  # noqa: A004
    approx_max_k,
    approx_min_k,
    axis_size,
    batch_matmul,
    broadcast,
    broadcast_like,
    broadcast_shapes,
    broadcast_to_rank,
    composite,
    dtype,
    empty,
    index_in_dim,
    index_take,
    optimization_barrier,
    platform_dependent,
    ragged_dot,
    reciprocal,
    reduce,
    scatter_apply,
    scatter_sub,
    split,
    stack,
    stage,
    tile,
    unstack,
    with_sharding_constraint,
)
from fx.lax.bits import (
    clz,
    mulhi,
    population_count,
    reduce_precision,
    shift_right_arithmetic,
)
from fx.lax.patches import (
    conv_general_dilated_local,
    conv_general_dilated_patches,
    conv_general_permutations,
    conv_general_shape_tuple,
    conv_shape_tuple,
    conv_transpose_shape_tuple,
    reduce_window_shape_tuple,
)
from fx.lax.options import (
    ConvGeneralDilatedDimensionNumbers,
    DotAlgorithmPreset,
    DotDimensionNumbers,
    GatherDimensionNumbers,
    Precision,
    PrecisionLike,
    RoundingMethod,
    ScatterDimensionNumbers,
)
from fx.lax.elementwise import zeros_like_array
from fx.lax.primitives import *  # noqa: E402, F403  (the *_p objects, jax's names)
from fx.lax.permutes import all_to_all, ppermute, pshuffle, psum_scatter
from fx.lax.implicit import custom_root
from fx.lax.random_gamma import random_gamma_grad
from fx.lax.elementwise_record import records as _records  # noqa: E402

# Each elementwise record's function (fx.lax.elementwise_record), where no module above
# defines one under its name: a new record needs no line here.
for _record in _records():
    globals().setdefault(_record.function_name, _record.function)
del _record
