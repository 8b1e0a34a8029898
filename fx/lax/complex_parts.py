"""Complex numbers: the ``real``, ``imag``, ``conj`` and ``complex`` primitives, and the
complex cases of ``abs``, ``sign`` and ``expm1``.

Conventions are jax's. Tangents of complex values are complex, and holomorphic functions
push them forward complex-linearly (``exp``'s rule ``t * exp(x)`` holds as written). A
transpose is taken for the real bilinear pairing ``<u, v> = Re(u * v)`` and never
conjugates: ``mul``'s transpose is ``ct * y`` for complex ``y`` as for real, ``real``'s is
``complex(ct, 0)`` and ``imag``'s ``complex(0, -ct)``. So ``grad`` of a real-valued ``f`` of
``z = x + iy`` returns ``df/dx - i df/dy`` (the conjugate of the steepest-ascent direction),
and ``grad(f, holomorphic=True)`` returns ``f'(z)``, as in jax.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval
from fx.interpreters import batching, jvp, transpose
from fx.interpreters.jvp import Zero
from fx.interpreters.transpose import is_undefined, unbroadcast
from fx.lax.base import shape_error
from fx.lax.elementwise import (
    COMPLEX,
    INEXACT,
    NUMERIC,
    _check_kind,
    _coerce,
    _const,
    _nary_shape,
    abs_p,
    div,
    eq,
    expm1_p,
    full_like,
    ge,
    mul,
    neg,
    select_n,
)

__all__ = ["complex", "conj", "imag", "real"]

_COMPLEX_PARTS = frozenset([dtypes.float32, dtypes.float64])


def _require(name: str, kinds, what: str, *avals: ShapedArray) -> None:
    for a in avals:
        if a.dtype not in kinds:
            raise TypeError(f"{name} requires {what} operands, got {a.dtype} ({a.str_short()})")


# --- real and imag ------------------------------------------------------------------------------


def _part(name: str, np_fn) -> Primitive:
    prim = Primitive(name)

    def abstract_eval(x):
        _require(name, COMPLEX, "complex", x)
        return x.update(dtype=dtypes.real_dtype(x.dtype))

    prim.def_abstract_eval(abstract_eval)
    prim.def_impl(lambda x: np.array(np_fn(x)))
    batching.vectorized_batcher(prim)
    return prim


real_p = _part("real", np.real)
imag_p = _part("imag", np.imag)

# --- conj ---------------------------------------------------------------------------------------

conj_p = Primitive("conj")  # params: input_dtype (a real input gives a complex result, as jax)


@conj_p.def_abstract_eval
def _conj_abstract_eval(x, *, input_dtype):
    _require("conj", INEXACT, "floating or complex", x)
    return x.update(dtype=dtypes.complex_dtype(x.dtype))


@conj_p.def_impl
def _conj_impl(x, *, input_dtype):
    return np.conj(x.astype(dtypes.complex_dtype(x.dtype), copy=False))


batching.vectorized_batcher(conj_p)

# --- complex ------------------------------------------------------------------------------------

complex_p = Primitive("complex")


@complex_p.def_abstract_eval
def _complex_abstract_eval(x, y):
    _require("complex", _COMPLEX_PARTS, "float32 or float64", x, y)
    shape = _nary_shape("complex", x, y)
    return ShapedArray(shape, dtypes.complex_dtype(x.dtype), x.weak_type and y.weak_type)


@complex_p.def_impl
def _complex_impl(x, y):
    # Parts assigned, not x + 1j * y: that would turn (inf, 0) into (inf, nan).
    out = np.empty(np.broadcast_shapes(np.shape(x), np.shape(y)), dtypes.complex_dtype(x.dtype))
    out.real, out.imag = x, y
    return out


batching.broadcasting_batcher(complex_p)

# --- transposes (for the pairing Re(u * v); see the module docstring) ---------------------------


def _zeros_of(ct):
    return full_like(ct, 0)


transpose.deflinear(real_p, lambda ct, x: [complex(ct, _zeros_of(ct))])
transpose.deflinear(imag_p, lambda ct, x: [complex(_zeros_of(ct), neg(ct))])


def _conj_transpose(ct, x, *, input_dtype):
    return [conj(ct) if dtypes.is_complex(input_dtype) else real(ct)]


transpose.deflinear(conj_p, _conj_transpose)


def _complex_transpose(ct, x, y):
    return [unbroadcast(real(ct), x.aval) if is_undefined(x) else None,
            unbroadcast(neg(imag(ct)), y.aval) if is_undefined(y) else None]


transpose.deflinear(complex_p, _complex_transpose)

# --- abs of a complex operand: its real modulus -------------------------------------------------


@abs_p.def_abstract_eval
def _abs_abstract_eval(x):
    _check_kind("abs", NUMERIC, x)
    return x.update(dtype=dtypes.real_dtype(x.dtype))


def _abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    ans = abs_p.bind(x)
    if isinstance(t, Zero):
        return ans, Zero.like(ans)
    if not dtypes.is_complex(get_aval(x).dtype):
        # d|x| = t where x >= 0, -t elsewhere (at 0 the right derivative, as jax).
        return ans, select_n(ge(x, _const(x, 0)), neg(t), t)
    # d|z| = Re(conj(z) t) / |z|, taken with |z| replaced by 1 at z == 0 (jax's rule).
    safe = select_n(eq(ans, _const(ans, 0)), ans, full_like(ans, 1))
    unit = div(conj(x), complex(safe, _zeros_of(safe)))
    return ans, real(mul(t, unit))


jvp.jvp_rules[abs_p] = _abs_jvp

# --- expm1 of a complex operand on the real axis ------------------------------------------------
# XLA's (jax's) complex expm1 gives ``expm1(a) + 0 + 0j`` for any ``a + 0j`` or ``a - 0j``, as
# the Array API standard asks for +inf + 0j and NaN + 0j; NumPy's computes the imaginary part
# as exp(a) * sin(b), so inf + 0j gave inf + NaNj, and -0 + 0j gave -0 + 0j. Jit runs complex
# expm1 as this NumPy step too (``lowering.fusion.primitive_rules.complex_prims`` has no expm1).
_expm1_real_impl = expm1_p.impl


@expm1_p.def_impl
def _expm1_impl(x):
    out = _expm1_real_impl(x)
    if not dtypes.is_complex(x.dtype):
        return out
    with np.errstate(all="ignore"):
        on_axis = (np.expm1(x.real) + 0.0).astype(x.dtype)  # + 0.0: -0 becomes +0, as XLA's
    return np.where(x.imag == 0, on_axis, out)

# --- the fx.lax functions -----------------------------------------------------------------------


def real(x):
    """The real part of a complex ``x`` (``real`` primitive)."""
    return real_p.bind(x)


def imag(x):
    """The imaginary part of a complex ``x`` (``imag`` primitive)."""
    return imag_p.bind(x)


def conj(x):
    """The complex conjugate; a real ``x`` gives a complex result, as ``jax.lax.conj``."""
    return conj_p.bind(x, input_dtype=get_aval(x).dtype)


def complex(x, y):  # noqa: A001
    """``x + i y`` from real float32 or float64 parts (``complex`` primitive)."""
    x, y = _coerce(x, y)
    ax, ay = get_aval(x), get_aval(y)
    if ax.dtype != ay.dtype:
        raise shape_error("complex", "the parts must have the same dtype", ax, ay)
    return complex_p.bind(x, y)
