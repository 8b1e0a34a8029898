"""Operators and numpy-style methods shared by ``fx.Array`` and every tracer.

Installed onto both classes when ``fx.numpy`` is imported. Each method looks its function up
in ``fx.numpy`` when called, so a method is exactly the public function of the same name.
"""

from __future__ import annotations

import sys

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.core import Tracer, get_aval
from fx.numpy import array_api
from fx.numpy._promote import to_array


def aval_of(x):
    # Sequences too, as np.shape([1, 2]) (jax's shape/ndim/size take them).
    return get_aval(_fnp().asarray(x) if isinstance(x, (list, tuple)) else to_array(x))


def _fnp():
    # Methods resolve the public function at call time (fx.numpy imports this module).
    return sys.modules["fx.numpy"]


def _binop(name: str, reflected: bool = False):
    def method(self, other):
        if not _is_operand(other):
            return NotImplemented
        f = getattr(_fnp(), name)
        return f(other, self) if reflected else f(self, other)

    return method


def _is_operand(x) -> bool:
    return isinstance(x, (Array, Tracer, bool, int, float, complex, np.ndarray, np.generic, list,
                          tuple))


def _unop(name: str):
    def method(self):
        return getattr(_fnp(), name)(self)

    return method


def _forward(name: str):
    def method(self, *args, **kwargs):
        return getattr(_fnp(), name)(self, *args, **kwargs)

    method.__name__ = name
    return method


_BINOPS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
    "rshift": "right_shift",
}
_COMPARISONS = {
    "eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
    "ge": "greater_equal",
}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}
_METHODS = [
    "reshape", "astype", "sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all",
    "var", "std", "transpose", "squeeze", "ravel", "flatten", "clip", "round", "dot", "cumsum",
    "cumprod", "sort", "argsort", "take", "swapaxes", "repeat", "conj", "conjugate", "nonzero",
]


def _astype(self, dtype):
    return lax.convert_element_type(self, dtypes.canonicalize(dtype))


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return _fnp().transpose(self, axes or None)


def _reshape(self, *shape, order="C", copy=None):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return _fnp().reshape(self, shape, order=order, copy=copy)


def install() -> None:
    for cls in (Array, Tracer):
        for dunder, fname in _BINOPS.items():
            setattr(cls, f"__{dunder}__", _binop(fname))
            setattr(cls, f"__r{dunder}__", _binop(fname, reflected=True))
        for dunder, fname in _COMPARISONS.items():
            setattr(cls, f"__{dunder}__", _binop(fname))
        for dunder, fname in _UNARY.items():
            setattr(cls, f"__{dunder}__", _unop(fname))
        for name in _METHODS:
            setattr(cls, name, _forward(name))
        cls.astype = _astype
        cls.transpose = _transpose
        cls.reshape = _reshape
        cls.T = property(lambda self: _fnp().transpose(self))
        cls.mT = property(lambda self: _fnp().swapaxes(self, -1, -2))
        cls.real = property(lambda self: _fnp().real(self))
        cls.imag = property(lambda self: _fnp().imag(self))
        cls.__getitem__ = lambda self, idx: _fnp().getitem(self, idx)
        cls.at = property(lambda self: _fnp().AtIndexer(self))
        cls.__round__ = lambda self, ndigits=None: _fnp().round(self, ndigits or 0)
        cls.__array_namespace__ = array_api.array_namespace
        cls.to_device = array_api.to_device
