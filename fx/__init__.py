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
from fx.array import Array, Shard, device_put
from fx.autodiff import (
    fwd_and_bwd,
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
from fx.dtypes import enable_x64, numpy_dtype_promotion
from fx.core import ConcretizationTypeError, UnexpectedTracerError
from fx.custom_derivatives import custom_jvp, custom_vjp
from fx import debug
from fx.debug import debug_infs, debug_nans, disable_jit
from fx.devices import Device, default_backend, devices
from fx import sharding
from fx.sharding import NamedSharding, P, make_mesh
from fx.sharded_arrays import (
    make_array_from_callback,
    make_array_from_process_local_data,
    make_array_from_single_device_arrays,
)
from fx.spmd import shard_map
from fx import spmd_partition  # registers jit's partitioning over processes
from fx.jit_function import clear_caches, jit
from fx import stages
from fx.callback import pure_callback
from fx import dlpack
from fx import errors
from fx.api import (
    ShapeDtypeStruct,
    block_until_ready,
    device_count,
    device_get,
    ensure_compile_time_eval,
    eval_shape,
    local_device_count,
    local_devices,
    log_compiles,
    named_call,
    named_scope,
    process_count,
    process_index,
    typeof,
)
from fx.autodiff import jacobian, linear_transpose
from fx.custom_derivatives import closure_convert, custom_gradient
from fx import ad_checkpoint
from fx.ad_checkpoint import checkpoint, checkpoint_policies, remat
from fx.tracing import make_jaxpr
from fx.vectorize import vmap
from fx import scipy
from fx import export  # onnx itself is imported only when exporting
from fx import sparsity
from fx import distributed  # mpi4py itself is imported by initialize()
from fx.distributed.pmap import pmap
from fx import experimental

__version__ = "0.1.0"
