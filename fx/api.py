"""Top-level utilities under jax's names: shapes without computing (``eval_shape``,
``ShapeDtypeStruct``, ``typeof``), host and device transfers (``device_get``,
``block_until_ready``, device counts), names on traced equations (``named_scope``,
``named_call``), ``ensure_compile_time_eval`` and the config switches as context managers.

They take and return pytrees as jax's do; none of them changes what a program computes.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from fx import dtypes, tree_util
from fx.array import Array
from fx.avals import ShapedArray
from fx.config import config
from fx.core import EVAL_TRACE, Trace, Tracer, current_trace, get_aval, set_current_trace
from fx.devices import Device, devices, devices_of_process
from fx.processes import layout as _layout
from fx.sharding.shardings import NamedSharding, Sharding
from fx.tracing import abstractify, flatten_fun, name_scope, trace_to_jaxpr

# --- shapes ---------------------------------------------------------------------------------


class ShapeDtypeStruct:
    """The shape and dtype of an array, without its data (as ``jax.ShapeDtypeStruct``).

    Wherever fx traces (``eval_shape``, ``jit(f).lower``, ``make_jaxpr``) it stands for an
    array of that type::

        >>> spec = fx.ShapeDtypeStruct((8, 3), fnp.float32)
        >>> print(fx.jit(fnp.sin).lower(spec).as_text())

    ``sharding`` (an ``fx.sharding.Sharding``, checked against the shape) says where such an
    array lives; it does not change the type, so tracing ignores it.
    """

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, weak_type: bool = False, *, sharding=None):
        if sharding is not None and not isinstance(sharding, Sharding):
            raise TypeError(f"fx.ShapeDtypeStruct: sharding must be an fx.sharding.Sharding, "
                            f"got {sharding!r}")
        self.sharding = sharding
        try:
            self.shape = tuple(int(d) for d in shape)
        except TypeError:
            raise TypeError(
                f"fx.ShapeDtypeStruct: shape must be a sequence of integers, got {shape!r}"
            ) from None
        if dtype is None:
            raise TypeError("fx.ShapeDtypeStruct: a dtype is required (got None)")
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        if isinstance(sharding, NamedSharding):
            sharding.check_shape(self.shape, "fx.ShapeDtypeStruct")

    @property
    def aval(self) -> ShapedArray:
        return ShapedArray(self.shape, dtypes.canonicalize(self.dtype), self.weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type
                and self.sharding == other.sharding)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type, self.sharding))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        where = f", sharding={self.sharding!r}" if self.sharding is not None else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak}{where})"


def eval_shape(fun: Callable, *args, **kwargs):
    """The shapes and dtypes ``fun(*args, **kwargs)`` would return, as a pytree of
    :class:`ShapeDtypeStruct`, found by tracing: nothing is computed. Arguments may be arrays
    or ``ShapeDtypeStruct`` (anything with ``.shape`` and ``.dtype``).

    Example::

        >>> fx.eval_shape(lambda x: x @ x.T, fx.ShapeDtypeStruct((4, 3), fnp.float32))
        ShapeDtypeStruct(shape=(4, 4), dtype=float32)
    """
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    avals = [_aval_of(x, i) for i, x in enumerate(leaves)]
    name = getattr(fun, "__name__", type(fun).__name__)
    flat, store = flatten_fun(fun, in_tree, name)
    closed = trace_to_jaxpr(flat, avals, (), f"eval_shape({name})")
    outs = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in closed.out_avals]
    return tree_util.tree_unflatten(store["tree"], outs)


def _aval_of(x, i: int) -> ShapedArray:
    if isinstance(x, (ShapeDtypeStruct, Array, Tracer)):
        return x.aval
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.ndarray):
        return ShapedArray(x.shape, dtypes.canonicalize(np.dtype(x.dtype)))  # e.g. a jax array
    try:
        return abstractify(x)
    except TypeError:
        raise TypeError(
            f"eval_shape: argument leaf {i} has type {type(x).__name__}; pass arrays, scalars "
            "or fx.ShapeDtypeStruct values"
        ) from None


def typeof(x) -> ShapedArray:
    """The abstract value (type) of ``x``: a ``ShapedArray`` with shape, dtype and weak type.

    Example::

        >>> fx.typeof(fnp.ones((2, 3)))
        ShapedArray(f32[2,3])
    """
    try:
        return get_aval(x)
    except TypeError:
        raise TypeError(f"fx.typeof: {type(x).__name__} is not an array type: {x!r}") from None


# --- host and devices -------------------------------------------------------------------------


def block_until_ready(x):
    """Wait until every array in the pytree ``x`` has been computed; returns ``x``."""
    for leaf in tree_util.tree_leaves(x):
        wait = getattr(leaf, "block_until_ready", None)
        if wait is not None:
            wait()
    return x


def device_get(x):
    """The pytree ``x`` with every fx array copied to the host as a NumPy array (other leaves
    unchanged), as ``jax.device_get``."""
    def get(leaf):
        if isinstance(leaf, Tracer):
            raise TypeError(
                f"fx.device_get: got a traced {leaf.aval.str_short()} value; device_get moves "
                "computed arrays to the host, so call it outside jit/vmap/grad"
            )
        return np.asarray(leaf) if isinstance(leaf, Array) else leaf

    return tree_util.tree_map(get, x)


def local_devices(process_index: int | None = None, backend: str | None = None) -> list[Device]:
    """The devices of process ``process_index`` (default: this process)."""
    g = _layout()
    if process_index is not None and not 0 <= process_index < g.process_count:
        raise ValueError(f"fx.local_devices: process_index {process_index} is not one of the "
                         f"{g.process_count} processes")
    return devices_of_process(g.process_index if process_index is None else process_index,
                              backend)


def device_count(backend: str | None = None) -> int:
    """How many devices the run has, over all its processes."""
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    """How many devices this process has."""
    return len(local_devices(backend=backend))


def process_index(backend: str | None = None) -> int:
    """This process's index among the processes of the run (0 unless
    ``fx.distributed.initialize`` joined it to several)."""
    return _layout().process_index


def process_count(backend: str | None = None) -> int:
    """How many processes take part in the run (see ``fx.distributed.initialize``)."""
    return _layout().process_count


# --- names on equations -----------------------------------------------------------------------


@contextlib.contextmanager
def named_scope(name: str) -> Iterator[None]:
    """Equations traced inside get ``name`` on their name stack (``outer/inner`` when scopes
    nest), shown by ``make_jaxpr`` after each equation and by ``fx.jit(f).lower(...).as_text()``
    in its optimized jaxpr and beside each schedule step (jax writes them as locations).

    Example::

        >>> def f(x):
        ...     with fx.named_scope("layer1"):
        ...         return fnp.tanh(x)
        >>> print(fx.make_jaxpr(f)(1.0))      # b:f32[] = tanh a  # layer1
    """
    if not isinstance(name, str):
        raise TypeError(f"fx.named_scope: the name must be a str, got {type(name).__name__}")
    with name_scope(name):
        yield


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """``fun`` whose traced equations carry ``name`` (default: ``fun.__name__``) on their
    name stack; see :func:`named_scope`."""
    scope = name or getattr(fun, "__name__", type(fun).__name__)

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with named_scope(scope):
            return fun(*args, **kwargs)

    return named


# --- evaluation at trace time -----------------------------------------------------------------


class _CompileTimeEvalTrace(Trace):
    """Runs operations on concrete values now, even inside jit; operations on traced values
    go to the trace that was current (so they are staged as usual)."""

    name = "ensure_compile_time_eval"

    def process_primitive(self, prim, args, params):
        if not any(isinstance(a, Tracer) for a in args):
            return EVAL_TRACE.process_primitive(prim, args, params)
        with set_current_trace(self.parent):
            return prim.bind(*args, **params)

    def describe(self) -> str:
        return self.parent.describe()


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """Inside, operations whose inputs are all concrete run immediately even while ``jit``
    traces, so their results are concrete values Python can branch on (as
    ``jax.ensure_compile_time_eval``); operations on traced values are staged as usual.

    Example::

        >>> @fx.jit
        ... def f(x):
        ...     with fx.ensure_compile_time_eval():
        ...         n = int(fnp.sum(fnp.arange(4)))      # 6, known while tracing
        ...     return x * n
    """
    trace = current_trace()
    if trace is EVAL_TRACE:
        yield
        return
    with set_current_trace(_CompileTimeEvalTrace(trace)):
        yield


# --- config switches as context managers (jax.log_compiles(True), ...) -----------------------


@contextlib.contextmanager
def log_compiles(enable: bool = True) -> Iterator[None]:
    """Within the block, each jit compilation is printed with why it happened (as
    ``fx.config.update("log_compiles", True)``)."""
    previous = config.log_compiles
    config.update("log_compiles", bool(enable))
    try:
        yield
    finally:
        config.update("log_compiles", previous)


__all__: list[Any] = [
    "ShapeDtypeStruct", "block_until_ready", "device_count", "device_get",
    "ensure_compile_time_eval", "eval_shape", "local_device_count", "local_devices",
    "log_compiles", "named_call", "named_scope", "process_count", "process_index", "typeof",
]
