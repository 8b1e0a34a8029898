"""``ravel_pytree``: a pytree of arrays as one flat vector, and the function that undoes it.

Takes any pytree whose leaves are arrays or scalars; returns ``(flat, unravel)`` where ``flat``
is the leaves raveled in flatten order and concatenated, in the promotion of the leaves' dtypes
(Python scalars count with their mode's default dtype, as in jax), and ``unravel(flat)``
rebuilds the tree with each leaf's shape and dtype. Both are built from fx.numpy operations, so
they work on values and under ``jit``/``grad``/``vmap``. ``unravel`` is hashable (usable as a
static argument) and, when all leaves share a dtype, accepts a vector of any dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from fx import numpy as fnp
from fx import tree_util

# jax's fixed convention for a tree without leaves, in every mode; not a default dtype.
_EMPTY_DTYPE = np.dtype("float32")


@dataclass(frozen=True)
class _Unravel:
    """``unravel(flat)``: the pytree ``ravel_pytree`` flattened, with ``flat``'s values."""

    treedef: tree_util.PyTreeDef
    shapes: tuple[tuple[int, ...], ...]
    from_dtypes: tuple[np.dtype, ...]
    to_dtype: np.dtype | None  # None: one dtype throughout; any input dtype is kept

    def __call__(self, flat: Any) -> Any:
        if not self.shapes:
            return tree_util.tree_unflatten(self.treedef, [])
        flat = fnp.asarray(flat)
        size = sum(math.prod(s) for s in self.shapes)
        if flat.shape != (size,):
            raise ValueError(
                f"ravel_pytree's unravel: expected a flat array of shape ({size},), got shape "
                f"{tuple(flat.shape)}; pass a vector like the one ravel_pytree returned")
        if self.to_dtype is not None and flat.dtype != self.to_dtype:
            raise TypeError(
                f"ravel_pytree's unravel: given an array of dtype {flat.dtype}, but expected "
                f"dtype {self.to_dtype} (the promoted dtype of the tree's mixed leaves); cast it "
                f"with .astype({self.to_dtype.name!r}) first")
        leaves, start = [], 0
        for shape, dtype in zip(self.shapes, self.from_dtypes):
            n = math.prod(shape)
            leaf = flat[start:start + n].reshape(shape)
            leaves.append(leaf if self.to_dtype is None else leaf.astype(dtype))
            start += n
        return tree_util.tree_unflatten(self.treedef, leaves)


def ravel_pytree(pytree: Any) -> tuple[Any, _Unravel]:
    """Ravel a pytree of arrays and scalars into one 1-D array.

    Returns ``(flat, unravel)``: ``flat`` concatenates the raveled leaves (in
    ``tree_leaves`` order) in their promoted dtype; ``unravel(v)`` turns a vector shaped like
    ``flat`` back into the tree, each leaf with its original shape and dtype. A tree without
    leaves gives an empty float32 vector (jax's convention).

    Example::

        >>> flat, unravel = ravel_pytree({"w": fnp.ones((2, 2)), "b": fnp.zeros(2)})
        >>> flat.shape                    # 'b' comes first: dict keys are sorted
        (6,)
        >>> unravel(flat * 2)["w"].shape
        (2, 2)
    """
    leaves, treedef = tree_util.tree_flatten(pytree)
    if not leaves:
        return fnp.zeros((0,), _EMPTY_DTYPE), _Unravel(treedef, (), (), None)
    try:
        xs = [fnp.asarray(x) for x in leaves]
    except (TypeError, ValueError) as e:
        bad = next((type(x).__name__ for x in leaves if not _array_like(x)), "a leaf")
        raise TypeError(f"ravel_pytree: the leaves must be arrays or scalars, got {bad}: "
                        f"{e}") from None
    from_dtypes = tuple(np.dtype(x.dtype) for x in xs)
    to_dtype = np.dtype(fnp.result_type(*from_dtypes))
    mixed = any(d != to_dtype for d in from_dtypes)
    parts = [fnp.ravel(x).astype(to_dtype) if mixed else fnp.ravel(x) for x in xs]
    flat = parts[0] if len(parts) == 1 else fnp.concatenate(parts)
    shapes = tuple(tuple(x.shape) for x in xs)
    return flat, _Unravel(treedef, shapes, from_dtypes, to_dtype if mixed else None)


def _array_like(x) -> bool:
    return isinstance(x, (int, float, bool, complex, np.ndarray, np.generic)) or hasattr(
        x, "aval")
