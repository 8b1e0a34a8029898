"""Primitives, traces and tracers: the machinery every transformation is built on.

A :class:`Primitive` is an operation with an abstract-eval rule (shape/dtype inference and type
errors) and an impl rule (NumPy/CuPy). Transformations attach further rules to primitives in
tables owned by their interpreters (``fx.interpreters.jvp.jvp_rules[prim] = ...``), never by
editing this module.

``prim.bind(*args, **params)`` hands the operation to the *current trace*, held in a context
variable. A trace interprets the operation: :class:`EvalTrace` runs it; the jvp, batching and
jaxpr-building traces wrap values in their own :class:`Tracer` subclass and usually finish by
binding on their ``parent`` trace (the one current when they were created). A value that is not
one of the current trace's own tracers is a constant to it. A trace is invalidated when its
transformation returns, so a tracer that escapes is reported where it is used.

Values of an extended dtype (typed PRNG keys, ``fx.extended_dtypes``) reach only primitives
with a rule in :data:`physical_rules`; the eval trace runs that rule on their stored data.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fx import dtypes
from fx.array import Array
from fx.avals import ShapedArray, physical_aval
from fx.devices import Device, default_device, device_of_buffer, put_buffer
from fx.sharding.mesh import PartitionSpec
from fx.sharding.shardings import NamedSharding


class ConcretizationTypeError(TypeError):
    """A traced value was used where Python needs a concrete value (``if``, ``int()``, ...)."""


class UnexpectedTracerError(RuntimeError):
    """A tracer was used outside the transformation that created it."""


class Primitive:
    """An operation of the IR.

    ``abstract_eval(*avals, **params)`` returns the output ``ShapedArray`` (a list of them when
    ``multiple_results``) or raises ``TypeError``/``ValueError`` naming the primitive and the
    offending shapes/dtypes. ``impl(*buffers, **params)`` computes on NumPy or CuPy buffers.
    """

    __slots__ = ("name", "multiple_results", "impl", "abstract_eval")

    def __init__(self, name: str, *, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        self.impl: Callable | None = None
        self.abstract_eval: Callable | None = None
        _PRIMITIVES.setdefault(name, []).append(self)

    def __reduce__(self):
        # Pickled by name (``fx.export``'s serialized programs): the rules live in code.
        if _PRIMITIVES.get(self.name) != [self]:
            raise TypeError(f"fx: primitive {self.name!r} is not the only one of its name; "
                            "it cannot be serialized")
        return (primitive_named, (self.name,))

    def def_impl(self, impl: Callable) -> Callable:
        self.impl = impl
        return impl

    def def_abstract_eval(self, rule: Callable) -> Callable:
        self.abstract_eval = rule
        return rule

    def bind(self, *args, **params):
        return current_trace().process_primitive(self, args, params)

    def out_avals(self, avals: Sequence[ShapedArray], params: dict) -> list[ShapedArray]:
        if self not in physical_rules:
            _refuse_extended(self, avals)
        out = self.abstract_eval(*avals, **params)
        return list(out) if self.multiple_results else [out]

    def __repr__(self) -> str:
        return self.name


# Every primitive by name (one each, but for primitives made at run time).
_PRIMITIVES: dict[str, list[Primitive]] = {}

# The primitives that accept values of an extended dtype (typed PRNG keys), each with its rule
# on the stored data: ``rule(in_avals, out_avals, *physical_args, **params)`` binds primitives
# on the physical values of the arguments (on the current trace) and returns the physical
# results. A declared registry: the modules declaring the primitives fill it, as the
# interpreters' rule tables are filled.
physical_rules: dict[Primitive, Callable] = {}


def has_extended(avals: Sequence[ShapedArray]) -> bool:
    return any(not isinstance(a.dtype, np.dtype) for a in avals)


def _refuse_extended(prim: Primitive, avals: Sequence[ShapedArray]) -> None:
    for a in avals:
        if not isinstance(a.dtype, np.dtype):
            shown = ", ".join(str(b.dtype) for b in avals)
            raise TypeError(f"{prim.name} does not accept dtype {a.dtype} (operand dtypes: "
                            f"{shown}); for a PRNG key's raw uint32 data use "
                            "fx.random.key_data(k)")


def primitive_named(name: str) -> Primitive:
    """The primitive called ``name`` (importing fx's modules if none is loaded yet)."""
    found = _PRIMITIVES.get(name)
    if not found:
        import importlib
        import os
        import pkgutil

        # fx's own folder (this module's), walked without importing the fx package here.
        for info in pkgutil.walk_packages([os.path.dirname(__file__)], "fx."):
            if ".tests" not in info.name:
                try:
                    importlib.import_module(info.name)
                except ImportError:  # an optional dependency's module
                    pass
        found = _PRIMITIVES.get(name)
    if not found or len(found) > 1:
        raise ValueError(f"fx: no unique primitive named {name!r} in this fx")
    return found[0]


# --- values and abstract values ----------------------------------------------------------------


def get_aval(x) -> ShapedArray:
    """The abstract value of an fx value, numpy value or Python scalar."""
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(np.shape(x), dtypes.canonicalize(x.dtype), False)
    if isinstance(x, (bool, int, float, complex)):
        dt, weak = dtypes.dtype_and_weak(x)
        return ShapedArray((), dt, weak)
    raise TypeError(f"fx: {type(x).__name__} is not a valid array value: {x!r}")


def is_array_like(x) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex))


def as_buffer(x, aval: ShapedArray | None = None):
    """The NumPy/CuPy buffer of a concrete value (Python scalars use their aval's dtype)."""
    if isinstance(x, Array):
        return x._buf
    if isinstance(x, Tracer):
        raise escaped_tracer_error(x)
    aval = aval or get_aval(x)
    return np.asarray(x, dtype=aval.dtype)


# --- traces -------------------------------------------------------------------------------------


def to_value(x, name: str = "fx"):
    """An fx value for one leaf: arrays and tracers pass through, NumPy data becomes an Array
    with its canonical dtype (fx's own copy, as jax copies on ``device_put``), Python scalars
    weakly typed 0-d arrays. Nested lists are ``fx.numpy.asarray``'s business."""
    if isinstance(x, (Array, Tracer)):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return device_array(np.asarray(x, dtype=dtypes.canonicalize(x.dtype)))
    if isinstance(x, (bool, int, float, complex)):
        dt, weak = dtypes.dtype_and_weak(x)
        return Array(python_scalar_buffer(x, dt, name), weak)
    raise TypeError(
        f"{name}: expected an array, scalar or nested list, got {type(x).__name__}: {x!r}"
    )


def to_array(x, name: str = "fx.numpy"):
    """An fx value for an array argument ``x``: arrays pass through, Python scalars become
    weakly typed 0-d arrays, numpy data becomes an Array with its (canonicalized) dtype.
    Lists and tuples raise jax's ``TypeError`` (``ensure_arraylike``): functions that take
    sequences convert them with :func:`asarray` themselves."""
    if isinstance(x, (list, tuple)):
        ensure_arraylike(name, x)
    return to_value(x, name)


def ensure_arraylike(name: str, *args) -> None:
    """Refuse what jax's ``ensure_arraylike`` refuses: anything but arrays (fx values, NumPy
    arrays) and scalars; lists and tuples raise a ``TypeError`` (wrap them in ``asarray``)."""
    for i, x in enumerate(args):
        if not (isinstance(x, (Array, Tracer)) or isinstance(x, np.ndarray) or np.isscalar(x)):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got "
                            f"{type(x).__name__} at position {i} (pass fx.numpy.asarray(...) "
                            "for lists and tuples)")


def python_scalar_buffer(x, dtype, name: str = "fx") -> np.ndarray:
    """``x`` (a Python scalar) as a 0-d buffer of ``dtype``; an int out of its range is an
    ``OverflowError`` naming the mode, as in jax."""
    try:
        return np.asarray(x, dtype=dtype)
    except OverflowError:
        hint = ("" if dtypes.x64_enabled() else
                "; in x64 mode (fx.config.update('jax_enable_x64', True)) it would be int64")
        raise OverflowError(f"{name}: Python int {x} is too large to convert to {dtype}"
                            f"{hint}") from None


def device_array(host: np.ndarray) -> Array:
    """A copy of ``host`` on the default device: later writes to the NumPy array do not show
    through, and the copy can be donated."""
    dev = default_device()
    buf = np.array(host, copy=True) if dev.on_host else put_buffer(host, dev)
    return Array._wrap(buf, ShapedArray(buf.shape, buf.dtype))


class Trace:
    """An interpreter of primitives. Subclasses implement ``process_primitive``."""

    name = "trace"

    def __init__(self, parent: Trace | None = None):
        self.parent = parent
        self.valid = True

    def process_primitive(self, prim: Primitive, args: Sequence[Any], params: dict):
        raise NotImplementedError

    def invalidate(self) -> None:
        self.valid = False

    def describe(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class EvalTrace(Trace):
    """Runs primitives on concrete buffers. Any tracer reaching it has escaped."""

    name = "eval"

    def process_primitive(self, prim, args, params):
        avals = [get_aval(a) for a in args]
        out_avals = prim.out_avals(avals, params)
        if has_extended(avals) or has_extended(out_avals):
            return _eval_physical(prim, args, avals, out_avals, params)
        device = _common_device(prim, args)
        bufs = [_buffer_on(a, av, device) for a, av in zip(args, avals)]
        outs = prim.impl(*bufs, **params)
        if not prim.multiple_results:
            outs = [outs]
        results = [_wrap(o, av, device) for o, av in zip(outs, out_avals)]
        placed = _placed_sharding(args)
        if placed is not None:
            _follow(results, *placed)
        return results if prim.multiple_results else results[0]


def _eval_physical(prim: Primitive, args, avals, out_avals, params):
    """Evaluate ``prim`` on values of extended dtypes: its physical rule on their data."""
    physical = [physical_value(a, av) for a, av in zip(args, avals)]
    outs = physical_rules[prim](avals, out_avals, *physical, **params)
    outs = outs if prim.multiple_results else [outs]
    results = [logical_value(o, av) for o, av in zip(outs, out_avals)]
    return results if prim.multiple_results else results[0]


def physical_value(x, aval: ShapedArray):
    """A concrete value of an extended dtype as its stored data (an Array of the physical
    aval); other values unchanged."""
    if isinstance(aval.dtype, np.dtype):
        return x
    return Array._wrap(as_buffer(x), physical_aval(aval))


def logical_value(x, aval: ShapedArray):
    """The concrete value of ``aval`` (an extended dtype) whose stored data is ``x``."""
    if isinstance(aval.dtype, np.dtype):
        return x
    buf = as_buffer(x, physical_aval(aval))
    if buf.shape != physical_aval(aval).shape:
        raise AssertionError(f"physical rule returned shape {buf.shape} for {aval}")
    return Array._wrap(buf, aval)


def _placed_sharding(args):
    """The NamedSharding the operands placed on several host devices of this process share,
    and the shape of the first such operand (None where none is placed so, or they differ):
    the results follow it, as jax's eager operations follow their operands' sharding."""
    found = shape = None
    for a in args:
        s = a._sharding if type(a) is Array else None
        if s is None or type(s) is not NamedSharding:
            continue
        if found is not None and s != found:
            return None
        if found is None:
            found, shape = s, a.aval.shape
    if found is None or found.mesh.is_multi_process or not all(
            d.on_host for d in found.mesh.devices.flat):
        return None
    return found, shape


def _follow(results: list, placed, shape: tuple) -> None:
    """Give each result ``placed`` where it has the shape of the operand placed so, and the
    mesh replicated otherwise (one process's CPU devices share the host's memory, so the
    value is whole either way)."""
    for r in results:
        r._sharding = placed if r.aval.shape == shape else NamedSharding(placed.mesh,
                                                                         PartitionSpec())


def _common_device(prim: Primitive, args) -> Device:
    device = None
    for a in args:
        if isinstance(a, Array):
            d = device_of_buffer(a._buf)
            if device is None:
                device = d
            elif d != device:
                raise ValueError(
                    f"{prim.name}: arguments live on different devices ({device} and {d}); "
                    "move them explicitly with fx.device_put"
                )
        elif isinstance(a, Tracer):
            raise escaped_tracer_error(a)
    return device or default_device()


def _buffer_on(x, aval, device: Device):
    buf = as_buffer(x, aval)
    if not device.on_host and isinstance(buf, np.ndarray):
        buf = put_buffer(buf, device)
    return buf


def _wrap(buf, aval: ShapedArray, device: Device) -> Array:
    if device.on_host:
        if type(buf) is not np.ndarray or buf.dtype != aval.dtype:
            buf = np.asarray(buf, dtype=aval.dtype)
    elif not hasattr(buf, "dtype") or buf.dtype != aval.dtype or not hasattr(buf, "shape"):
        buf = device.xp.asarray(buf, dtype=aval.dtype)
    if buf.shape != aval.shape:
        raise AssertionError(f"impl returned shape {buf.shape}, abstract eval says {aval}")
    if not device.on_host and isinstance(buf, np.ndarray):
        buf = put_buffer(buf, device)
    if isinstance(buf, np.ndarray) and (buf.base is not None or not buf.flags.writeable):
        return Array(buf, aval.weak_type)  # a view into an operand: keep it read-only
    return Array._wrap(buf, aval)


EVAL_TRACE = EvalTrace()
_current_trace: contextvars.ContextVar[Trace] = contextvars.ContextVar(
    "fx_current_trace", default=EVAL_TRACE
)


def current_trace() -> Trace:
    return _current_trace.get()


@contextlib.contextmanager
def set_current_trace(trace: Trace):
    token = _current_trace.set(trace)
    try:
        yield trace
    finally:
        _current_trace.reset(token)


@contextlib.contextmanager
def new_trace(trace: Trace):
    """Make ``trace`` current for the body, and invalidate it afterwards."""
    try:
        with set_current_trace(trace):
            yield trace
    finally:
        trace.invalidate()


# --- tracers ------------------------------------------------------------------------------------


class Tracer:
    """A value inside a transformation. Subclasses define ``aval`` and, when they wrap a
    concrete value, ``to_concrete``."""

    __slots__ = ("_trace", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, trace: Trace):
        self._trace = trace

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return self.aval.ndim

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    def to_concrete(self, context: str) -> Array:
        """The concrete value behind this tracer, or ``ConcretizationTypeError``."""
        raise ConcretizationTypeError(self._trace_is_abstract_message(context))

    def _trace_is_abstract_message(self, context: str) -> str:
        return (
            f"Abstract tracer value encountered where a concrete value is expected: {context} "
            f"of a traced {self.aval.str_short()} value inside {self._trace.describe()}.\n"
            "Python control flow cannot depend on traced values. Use fx.numpy.where or "
            "fx.lax.cond/switch/while_loop for data-dependent choices, or mark the argument "
            "static with jit(f, static_argnums=...) if it is a compile-time constant."
        )

    def _concrete(self, context: str) -> np.ndarray:
        if not self._trace.valid:
            raise escaped_tracer_error(self)
        return np.asarray(self.to_concrete(context))

    def __bool__(self):
        return bool(self._concrete("bool()"))

    def __int__(self):
        return int(self._concrete("int()"))

    def __float__(self):
        return float(self._concrete("float()"))

    def __complex__(self):
        return complex(self._concrete("complex()"))

    def __index__(self):
        if not dtypes.is_int(self.dtype):
            raise TypeError(f"only integer arrays can be used as an index, got {self.dtype}")
        return int(self._concrete("use as a Python index (__index__)"))

    def __array__(self, dtype=None, copy=None):
        out = self._concrete("conversion to a NumPy array (np.asarray)")
        return out if dtype is None else out.astype(dtype)

    def item(self):
        return self._concrete("item()").item()

    def tolist(self):
        return self._concrete("tolist()").tolist()

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d traced value)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced value")
        return (self[i] for i in range(self.shape[0]))

    __hash__ = None  # type: ignore[assignment]

    def __setitem__(self, idx, value):
        raise TypeError(
            "fx traced values are immutable: 'x[idx] = y' is not supported inside a "
            "transformation. Use the functional update 'x = x.at[idx].set(y)' instead."
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}<{self.aval.str_short()}>"


def escaped_tracer_error(tracer: Tracer) -> UnexpectedTracerError:
    trace = tracer._trace
    state = "has finished" if not trace.valid else "is not active here"
    return UnexpectedTracerError(
        f"Encountered an unexpected tracer: a {tracer.aval.str_short()} value created inside "
        f"{trace.describe()}, which {state}. This usually means a traced value escaped its "
        "transformation, e.g. was stored in a global, a closure or an object attribute, and "
        "was used after the transformed function returned. Return values from the "
        "transformed function instead of stashing them."
    )
