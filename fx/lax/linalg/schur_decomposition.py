"""The Schur decomposition: the ``schur`` primitive (``fx.lax.linalg.schur``), with jax's
signature and outputs.

``schur(a)`` returns ``(t, q)`` with ``a = q t q^H``, ``q`` unitary and ``t`` upper
triangular for complex ``a``, quasi upper triangular for real ``a`` (LAPACK's standardized
2x2 blocks on the diagonal for complex-conjugate eigenvalue pairs). Operands are batches of
square matrices, batch dimensions leading; the impl calls LAPACK's ``gees`` through SciPy one
matrix at a time (the routine jax's CPU backend calls too), and a matrix whose QR iteration
fails comes back as NaNs, as jax's. The form is not unique (any eigenvalue order is one), so
jax defines no derivative: the jvp rule refuses, as jax's does.
"""

from __future__ import annotations

import numpy as np

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive
from fx.lax.linalg._common import (
    batch_at_front,
    check_matrix,
    lapack,
    lapack_per_matrix,
    refuse_jvp,
)

__all__ = ["schur"]

# params: compute_schur_vectors, sort_eig_vals (must be False), select_callable (unused)
schur_p = Primitive("schur", multiple_results=True)  # -> t, [q]


@schur_p.def_abstract_eval
def _schur_abstract_eval(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    check_matrix("schur", x, square=True)
    if sort_eig_vals:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not "
                                  "implemented.")
    out = x.strip_weak_type()
    return [out, out] if compute_schur_vectors else [out]


@schur_p.def_impl
def _schur_impl(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    x = np.asarray(x)
    routine = lapack("gees", x.dtype)
    real = not dtypes.is_complex(x.dtype)

    def one(a):
        if a.shape[-1] == 0:
            return (a, a), True
        out = routine(lambda *_: None, a, compute_v=int(compute_schur_vectors))
        t, vs, info = out[0], out[4 if real else 3], out[-1]
        return (t, vs if compute_schur_vectors else t), info == 0

    avals = [ShapedArray(x.shape, x.dtype)] * 2
    outs = lapack_per_matrix(one, [x], x.shape[:-2], avals)
    return outs if compute_schur_vectors else outs[:1]


refuse_jvp(schur_p, "the Schur form is not unique (the eigenvalues may come in any order)")
batch_at_front(schur_p)


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
    """Schur decomposition ``x = q t q^H``, as ``jax.lax.linalg.schur``: returns ``[t, q]``,
    or ``[t]`` without ``compute_schur_vectors``. ``t`` is upper triangular
    (complex ``x``) or quasi upper triangular (real ``x``). ``sort_eig_vals`` must be False
    and ``select_callable`` is unused, as in jax.

    >>> import numpy as np
    >>> t, q = fx.lax.linalg.schur(np.array([[1., 2.], [0., 3.]]))
    >>> t
    Array([[1., 2.],
           [0., 3.]], dtype=float32)
    """
    return schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                        sort_eig_vals=bool(sort_eig_vals), select_callable=select_callable)
