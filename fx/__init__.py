"""fx: composable function transformations (grad, vmap, jit) with a compiler to C and CUDA.

    >>> import fx, fx.numpy as fnp
    >>> fx.grad(lambda x: fnp.sum(fnp.sin(x)))(fnp.zeros(3))
    Array([1., 1., 1.], dtype=float32)
"""

# ruff: noqa: I001  (import order matters: fx.lax declares the primitives the interpreters use)

from fx import dtypes, tree_util
from fx import lax
from fx import numpy
from fx import nn
from fx import data, example_libraries, optim
from fx import random
from fx import flatten_util, tree
from fx.array import Array, device_put
from fx.autodiff import (
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stop_gradient,
    value_and_grad,
    vjp,
)
from fx.config import config
from fx.core import ConcretizationTypeError, UnexpectedTracerError
from fx.custom_derivatives import checkpoint, custom_jvp, custom_vjp, remat
from fx import debug
from fx.debug import disable_jit
from fx.devices import default_backend, devices
from fx.jit_function import clear_caches, jit
from fx import errors
from fx.tracing import make_jaxpr
from fx.vectorize import vmap

__version__ = "0.1.0"
