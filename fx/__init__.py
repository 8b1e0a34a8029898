"""fx: composable function transformations (grad, vmap, jit) with a compiler to C and CUDA."""

from fx import (  # noqa: F401
    dtypes,
    lax,  # noqa: F401  (first: declares the primitives the interpreters rely on)
    numpy,  # noqa: F401, E402
    tree_util,
)
from fx.array import Array  # noqa: F401
from fx.autodiff import (  # noqa: F401
    grad,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    value_and_grad,
    vjp,
)
from fx.config import config  # noqa: F401
from fx.custom_derivatives import checkpoint, custom_jvp, custom_vjp, remat  # noqa: F401
from fx.core import ConcretizationTypeError, UnexpectedTracerError  # noqa: F401
from fx.jit_function import jit  # noqa: F401
from fx.lax import stop_gradient  # noqa: F401
from fx.tracing import make_jaxpr  # noqa: F401
from fx.vectorize import vmap  # noqa: F401
