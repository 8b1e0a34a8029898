"""Convolution geometries the kernels reading their input in place are tested on (the CPU's,
``tests/lowering/test_conv_in_place.py``, and CUDA's, ``test_cuda_conv_in_place.py``): layouts,
strides, padding (cropping included), input and kernel dilation, 1-D to 3-D; and the two
helpers both files build their cases with."""

import numpy as np

import fx.lax as lax

CONVS = [  # lhs shape, rhs shape, params
    ((2, 3, 5, 6), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    ((2, 7, 6, 3), (3, 3, 3, 4), dict(window_strides=(2, 1), padding="SAME",
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((2, 5, 6, 3), (3, 3, 3, 4), dict(window_strides=(1, 2), padding=((1, 2), (0, 1)),
                                      rhs_dilation=(2, 1), lhs_dilation=(1, 2),
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((3, 9, 2), (3, 2, 4), dict(window_strides=(2,), padding="SAME",
                                dimension_numbers=("NWC", "WIO", "NWC"))),
    ((2, 4, 4, 4, 2), (2, 2, 2, 2, 3), dict(window_strides=(1, 2, 1), padding="SAME",
                                            dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))),
    ((2, 6, 6, 1), (5, 5, 1, 2), dict(window_strides=(1, 1), padding="SAME",
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((3, 5, 4, 2), (2, 2, 2, 5), dict(window_strides=(1, 1), padding="VALID",
                                      dimension_numbers=("NHWC", "HWIO", "NCHW"))),
    ((2, 3, 3, 1), (3, 3, 1, 2), dict(window_strides=(1, 1), padding="VALID",
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    # cropping (negative padding), columns past one vector (40) and rows past a tile
    ((2, 9, 11, 5), (3, 3, 5, 40), dict(window_strides=(1, 1), padding=((-1, 2), (1, -1)),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    # a 5x5 layer as the benchmark's (long contractions in the weight gradient: chunked)
    ((8, 14, 14, 16), (5, 5, 16, 32), dict(window_strides=(1, 1), padding="SAME",
                                           dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    # NCHW / OIHW as PyTorch writes it, strided
    ((2, 6, 9, 9), (8, 6, 3, 3), dict(window_strides=(2, 2), padding=((1, 1), (1, 1)))),
]


def conv(params):
    """``conv_general_dilated`` with ``params``, as a function of the operands."""
    return lambda x, w: lax.conv_general_dilated(x, w, **params)


def operands(lhs, rhs, seed=0):
    """float32 normal operands of the shapes ``lhs`` and ``rhs``."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(lhs).astype(np.float32),
            rng.standard_normal(rhs).astype(np.float32))
