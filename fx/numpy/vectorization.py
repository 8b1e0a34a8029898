"""``vectorize`` (NumPy's generalized-ufunc broadcasting on top of ``fx.vmap``), and
``ufunc``/``frompyfunc``: a scalar function made into an object with NumPy's ufunc methods
(``outer``, ``reduce``, ``accumulate``, ``reduceat``, ``at``); and ``apply_along_axis`` /
``apply_over_axes``, a function mapped over an array's 1-D slices or applied axis by axis.

``vectorize(f, signature="(n),(n)->()")`` splits each argument's shape into loop dimensions
and the core dimensions the signature names, broadcasts the loop dimensions, and maps ``f``
over them with one ``vmap`` per loop dimension, so ``f`` itself only ever sees core-shaped
arrays; the result traces, differentiates and batches like ``f``. Without a signature every
argument is a scalar to ``f``. ``ufunc`` methods loop with ``fx.lax.scan`` (one traced call of
the function, whatever the length).
"""

from __future__ import annotations

import functools
import re

import numpy as np

from fx import lax
from fx.core import get_aval
from fx.numpy._promote import (
    asarray,
    broadcast_shapes,
    broadcast_to_shape,
    canonical_axis,
    to_array,
)
from fx.numpy.manipulation import expand_dims
from fx.vectorize import vmap

__all__ = ["apply_along_axis", "apply_over_axes", "frompyfunc", "ufunc", "vectorize"]

_DIM = r"\w+"
_CORE = rf"\((?:{_DIM}(?:,\s*{_DIM})*)?\)"
_ARGS = rf"{_CORE}(?:,\s*{_CORE})*"
_SIGNATURE = re.compile(rf"^\s*({_ARGS})?\s*->\s*({_ARGS})\s*$")


def _parse_signature(signature: str):
    """``"(m,n),(n)->(m)"`` as ``([("m", "n"), ("n",)], [("m",)])``."""
    match = _SIGNATURE.match(signature)
    if match is None:
        raise ValueError(f"fx.numpy.vectorize: not a valid gufunc signature: {signature!r} "
                         "(expected e.g. '(m,n),(n)->(m)')")

    def parts(text):
        return [tuple(d.strip() for d in core[1:-1].split(",") if d.strip())
                for core in re.findall(_CORE, text or "")]

    return parts(match.group(1)), parts(match.group(2))


def _as_operand(x, name: str):
    return asarray(x) if isinstance(x, (list, tuple)) else to_array(x, name)


class vectorize:  # noqa: N801  (numpy's name)
    """``pyfunc`` applied elementwise with broadcasting, or over core dimensions given by a
    ``signature`` (NumPy's generalized ufuncs), vectorized with ``fx.vmap``.

    ``excluded`` names positional indices (ints) or keyword names (strs) passed to ``pyfunc``
    unchanged. Other keyword arguments are vectorized like positional ones.

    >>> dot = fx.numpy.vectorize(lambda a, b: (a * b).sum(), signature="(n),(n)->()")
    >>> dot(fx.numpy.ones((4, 3)), fx.numpy.arange(3.0)).shape
    (4,)
    """

    def __init__(self, pyfunc, *, excluded=frozenset(), signature: str | None = None):
        self.pyfunc = pyfunc
        self.excluded = frozenset(excluded)
        self.signature = signature
        self._cores = None if signature is None else _parse_signature(signature)
        functools.update_wrapper(self, pyfunc, updated=())

    def __call__(self, *args, **kwargs):
        name = f"fx.numpy.vectorize({getattr(self.pyfunc, '__name__', 'function')})"
        static_pos = {i: a for i, a in enumerate(args) if i in self.excluded}
        static_kw = {k: v for k, v in kwargs.items() if k in self.excluded}
        dyn_names = [k for k in kwargs if k not in self.excluded]
        # Sequences are data here, as in jax's vectorize.
        dyn = [_as_operand(a, name) for i, a in enumerate(args) if i not in self.excluded]
        dyn += [_as_operand(kwargs[k], name) for k in dyn_names]
        n_pos = len(args)

        def call(*values):
            it = iter(values)
            full = [static_pos[i] if i in static_pos else next(it) for i in range(n_pos)]
            kw = dict(static_kw)
            kw.update({k: next(it) for k in dyn_names})
            return self.pyfunc(*full, **kw)

        if self._cores is None:
            in_cores = [()] * len(dyn)
            out_cores = None
        else:
            in_cores, out_cores = self._cores
            if len(in_cores) != len(dyn):
                raise TypeError(f"{name}: the signature {self.signature!r} has {len(in_cores)} "
                                f"inputs, but it was called with {len(dyn)} vectorized "
                                "arguments")
        sizes: dict[str, int] = {}
        loops = []
        for k, (v, core) in enumerate(zip(dyn, in_cores)):
            shape = get_aval(v).shape
            if len(shape) < len(core):
                raise ValueError(f"{name}: argument {k} of shape {shape} has fewer dimensions "
                                 f"than its core dimensions {core} in {self.signature!r}")
            for d, size in zip(core, shape[len(shape) - len(core):]):
                if sizes.setdefault(d, size) != size:
                    raise ValueError(f"{name}: inconsistent size for core dimension {d!r}: "
                                     f"{sizes[d]} vs {size}")
            loops.append(shape[: len(shape) - len(core)])
        loop = broadcast_shapes(*loops, name=name) if loops else ()
        dyn = [broadcast_to_shape(v, loop + get_aval(v).shape[len(lp):], name)
               for v, lp in zip(dyn, loops)]

        def checked(*values):
            out = call(*values)
            if out_cores is not None:
                outs = out if isinstance(out, tuple) else (out,)
                if len(outs) != len(out_cores):
                    raise ValueError(f"{name}: the function returned {len(outs)} outputs, the "
                                     f"signature {self.signature!r} has {len(out_cores)}")
                for o, core in zip(outs, out_cores):
                    nd = get_aval(to_array(o, name)).ndim
                    if nd != len(core):
                        raise ValueError(f"{name}: an output has {nd} dimensions, but its "
                                         f"core dimensions are {core} in {self.signature!r}")
            return out

        f = checked
        for _ in loop:
            f = vmap(f)
        return f(*dyn)


# --- ufunc --------------------------------------------------------------------------------------


class ufunc:  # noqa: N801  (numpy's name)
    """A function of ``nin`` scalars made into a NumPy-style ufunc: calling it broadcasts, and
    ``outer``, ``reduce``, ``accumulate``, ``reduceat`` and ``at`` are built on it (the
    reductions need ``nin == 2`` and ``nout == 1``). Use :func:`frompyfunc` to make one.

    >>> add = fx.numpy.frompyfunc(lambda a, b: a + b, 2, 1, identity=0)
    >>> add.reduce(fx.numpy.arange(5))
    Array(10, dtype=int32)
    """

    def __init__(self, func, /, nin: int, nout: int, *, name: str | None = None,
                 nargs: int | None = None, identity=None, call=None, reduce=None,
                 accumulate=None, at=None, reduceat=None):
        self._func = func
        self.nin, self.nout = int(nin), int(nout)
        self.nargs = self.nin if nargs is None else int(nargs)
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self._vectorized = vectorize(func)
        self._call, self._reduce, self._accumulate = call, reduce, accumulate
        self._at, self._reduceat = at, reduceat

    def __repr__(self) -> str:
        return f"<fx.numpy.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if out is not None:
            raise NotImplementedError(f"{self.__name__}: 'out' is not supported (arrays are "
                                      "immutable)")
        if where is not None:
            raise NotImplementedError(f"{self.__name__}: 'where' is not supported")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}: takes {self.nin} arguments, got {len(args)}")
        return (self._call or self._vectorized)(*args)

    def _binary(self, method: str):
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{self.__name__}.{method}: only supported for functions of two "
                             f"arguments with one output, this has nin={self.nin}, "
                             f"nout={self.nout}")

    def outer(self, A, B, /):  # noqa: N803
        """``f(A[i...], B[j...])`` for every pair: shape ``A.shape + B.shape``."""
        self._binary("outer")
        a, b = to_array(A, self.__name__), to_array(B, self.__name__)
        sa, sb = get_aval(a).shape, get_aval(b).shape
        grid = sa + sb
        return self(lax.broadcast_in_dim(a, grid, tuple(range(len(sa)))),
                    lax.broadcast_in_dim(b, grid, tuple(range(len(sa), len(grid)))))

    def _along(self, a, axis, method: str):
        x = to_array(a, f"{self.__name__}.{method}")
        if axis is None:
            return lax.reshape(x, (get_aval(x).size,)), 0
        return x, canonical_axis(axis, get_aval(x).ndim, f"{self.__name__}.{method}")

    def reduce(self, a, axis: int | None = 0, dtype=None, out=None, keepdims: bool = False,
               initial=None, where=None):
        """Fold ``f`` over ``axis`` from the left: ``f(...f(f(a0, a1), a2)..., an)``, starting
        from ``initial`` (or the identity for an empty axis)."""
        self._binary("reduce")
        if self._reduce is not None:
            return self._reduce(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                                initial=initial, where=where)
        if out is not None or where is not None or dtype is not None:
            raise NotImplementedError(f"{self.__name__}.reduce: 'out', 'where' and 'dtype' are "
                                      "not supported")
        x, axis = self._along(a, axis, "reduce")
        x = lax.transpose(x, (axis,) + tuple(i for i in range(get_aval(x).ndim) if i != axis))
        n = get_aval(x).shape[0]
        start = initial if initial is not None else self.identity
        if n == 0 and start is None:
            raise ValueError(f"{self.__name__}.reduce: zero-size reduction with no identity; "
                             "pass initial=")
        if start is None:
            carry, rest = x[0], lax.slice_in_dim(x, 1, n)
        else:
            start = lax.convert_element_type(to_array(start, self.__name__), get_aval(x).dtype)
            carry, rest = lax.broadcast_in_dim(start, get_aval(x).shape[1:], ()), x
        result, _ = lax.scan(lambda c, v: (self(c, v), None), carry, rest)
        if keepdims:
            result = lax.expand_dims(result, (axis,))
        return result

    def accumulate(self, a, axis: int = 0, dtype=None, out=None):
        """The running fold along ``axis``: ``[a0, f(a0, a1), f(f(a0, a1), a2), ...]``."""
        self._binary("accumulate")
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis, dtype=dtype, out=out)
        if out is not None or dtype is not None:
            raise NotImplementedError(f"{self.__name__}.accumulate: 'out' and 'dtype' are not "
                                      "supported")
        x, axis = self._along(a, axis, "accumulate")
        nd = get_aval(x).ndim
        perm = (axis,) + tuple(i for i in range(nd) if i != axis)
        x = lax.transpose(x, perm)
        n = get_aval(x).shape[0]
        if n == 0:
            return lax.transpose(x, tuple(np.argsort(perm)))

        def step(c, v):
            c = self(c, v)
            return c, c

        first = x[0]
        _, ys = lax.scan(step, first, lax.slice_in_dim(x, 1, n))
        ys = lax.concatenate([lax.expand_dims(first, (0,)), ys], 0)
        return lax.transpose(ys, tuple(int(p) for p in np.argsort(perm)))

    def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
        """:meth:`reduce` over the slices ``a[indices[i]:indices[i+1]]`` along ``axis`` (static
        ``indices``; ``a[indices[i]]`` where the next index is not larger), as NumPy."""
        self._binary("reduceat")
        if self._reduceat is not None:
            return self._reduceat(a, indices, axis=axis, dtype=dtype, out=out)
        x, axis = self._along(a, axis, "reduceat")
        idx = [int(i) for i in np.asarray(indices).ravel()]
        n = get_aval(x).shape[axis]
        pieces = []
        for k, i in enumerate(idx):
            j = idx[k + 1] if k + 1 < len(idx) else n
            if not 0 <= i < n:
                raise IndexError(f"{self.__name__}.reduceat: index {i} is out of bounds for an "
                                 f"axis of length {n}")
            stop = j if j > i else i + 1
            part = self.reduce(lax.slice_in_dim(x, i, stop, 1, axis), axis=axis)
            pieces.append(lax.expand_dims(part, (axis,)))
        return lax.concatenate(pieces, axis)

    def at(self, a, indices, b=None, /, *, inplace: bool = True):
        """``a`` with ``a[indices] = f(a[indices], b)`` applied once per index, in order
        (repeated indices apply repeatedly); needs ``inplace=False``."""
        if inplace:
            raise ValueError(f"{self.__name__}.at cannot modify arrays in place, because fx "
                             "arrays are immutable. Pass inplace=False to get the updated "
                             "array instead.")
        if self._at is not None:
            return self._at(a, indices, b, inplace=False)
        x = to_array(a, f"{self.__name__}.at")
        idx = to_array(indices, f"{self.__name__}.at")
        flat_idx = lax.reshape(idx, (get_aval(idx).size,))
        m = get_aval(flat_idx).shape[0]
        if b is None:
            if self.nin != 1:
                raise TypeError(f"{self.__name__}.at: needs b for a function of {self.nin} "
                                "arguments")
            vals = None
        else:
            self._binary("at")
            vals = broadcast_to_shape(
                lax.convert_element_type(to_array(b), get_aval(x).dtype),
                get_aval(idx).shape + get_aval(x).shape[1:], f"{self.__name__}.at")
            vals = lax.reshape(vals, (m,) + get_aval(x).shape[1:])

        def step(arr, k):
            i = flat_idx[k]
            cur = arr[i]
            new = self(cur) if vals is None else self(cur, vals[k])
            return arr.at[i].set(new), None

        out, _ = lax.scan(step, x, lax.iota(get_aval(flat_idx).dtype, m))
        return out


def frompyfunc(func, /, nin: int, nout: int, *, identity=None) -> ufunc:
    """A :class:`ufunc` from a Python function of ``nin`` scalars returning ``nout`` values.

    >>> mul = fx.numpy.frompyfunc(lambda a, b: a * b, 2, 1, identity=1)
    >>> mul.outer(fx.numpy.arange(1, 3), fx.numpy.arange(1, 4))
    Array([[1, 2, 3],
           [2, 4, 6]], dtype=int32)
    """
    return ufunc(func, nin, nout, identity=identity)


# --- applying a function along axes --------------------------------------------------------------


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """``func1d`` applied to every 1-D slice of ``arr`` along ``axis`` (vectorized with
    ``fx.vmap``); the dimensions of ``func1d``'s result replace ``axis``.

    >>> fx.numpy.apply_along_axis(lambda v: v.sum(), 1, fx.numpy.ones((2, 3)))
    Array([3., 3.], dtype=float32)
    """
    x = to_array(arr, "fx.numpy.apply_along_axis")
    nd = get_aval(x).ndim
    axis = canonical_axis(axis, nd, "fx.numpy.apply_along_axis")

    def f(v):
        return func1d(v, *args, **kwargs)

    # Map over the dimensions after axis, then over those before it, innermost first, so the
    # result's dimensions land where NumPy puts them.
    for _ in range(nd - axis - 1):
        f = vmap(f, in_axes=-1, out_axes=-1)
    for _ in range(axis):
        f = vmap(f, in_axes=0, out_axes=0)
    return to_array(f(x), "fx.numpy.apply_along_axis")


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied for each of ``axes`` in turn; a result with one dimension
    fewer gets it back (``expand_dims``), so the rank stays ``a``'s.

    >>> fx.numpy.apply_over_axes(fx.numpy.sum, fx.numpy.ones((2, 3)), [0, 1])
    Array([[6.]], dtype=float32)
    """
    x = to_array(a, "fx.numpy.apply_over_axes")
    nd = get_aval(x).ndim
    for ax in np.atleast_1d(axes):
        ax = int(ax)
        out = to_array(func(x, ax), "fx.numpy.apply_over_axes")
        if get_aval(out).ndim == nd - 1:
            out = expand_dims(out, ax)
        elif get_aval(out).ndim != nd:
            raise ValueError(f"fx.numpy.apply_over_axes: func must keep the rank {nd} or drop "
                             f"one dimension, got shape {get_aval(out).shape}")
        x = out
    return x
