"""``fx.jit``: trace once per signature, compile through the lowering pipeline, run compiled.

A jitted function caches one entry per (argument structure, abstract values, static
arguments). The traced jaxpr is bound as a ``jit`` call primitive, so transformations of a
jitted function transform its jaxpr and stay compiled; called with concrete arguments outside
any transformation, the cached executable runs directly (the fast path: flatten, look up,
call into C).
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fx import dtypes, jit_shardings, tree_util
from fx.array import Array
from fx.config import config
from fx.core import EVAL_TRACE, Tracer, current_trace
from fx.debug import check_nans
from fx.devices import default_backend
from fx.interpreters import batching
from fx.interpreters.call import eval_call_impl, jit_p
from fx.interpreters.physical import physicalize
from fx.jaxpr import ClosedJaxpr, Jaxpr
from fx.lowering.pipeline import Compilation
from fx.lowering.pipeline import lower as lower_program
from fx.lowering.select import backends
from fx.stages import (  # noqa: F401  (Compiled: re-exported)
    Compiled,
    Lowered,
    Traced,
    _const_buf,
    _out_array,
    _Signature,
)
from fx.tracing import abstractify, argument_names, flatten_fun, trace_to_jaxpr


def _fun_name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


def _hoist_consts(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list]:
    """Constants become leading inputs, so that tracers closed over by the function are
    visible to the transformations applied to the call."""
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr([], list(j.constvars) + list(j.invars), j.outvars, j.eqns), []), \
        list(closed.consts)


class _Once:
    """A value made once, by whichever thread asks first; threads asking meanwhile wait for
    it. If making it raises, the next caller tries again. (Re-entrant: a thread that asks
    again while making it recurses, as it would without the lock, rather than deadlocking.)"""

    __slots__ = ("lock", "value")

    def __init__(self):
        self.lock = threading.RLock()
        self.value = None

    def get(self, make: Callable[[], Any]):
        if self.value is None:
            with self.lock:
                if self.value is None:
                    self.value = make()
        return self.value


# jaxpr -> {(backend, donation): _Once(executable)}; the lock guards the dictionaries only,
# never a compilation, so different programs compile concurrently.
_compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_compiled_lock = threading.Lock()


def _backend(name: str | None) -> str:
    return name or default_backend()


def compiled_executable(jaxpr: ClosedJaxpr, backend: str, name: str = "f",
                        donated: tuple[bool, ...] = (), consts: tuple = ()):
    """The executable for a jit body, compiled once per jaxpr object, backend and donation,
    however many threads ask for it at once. ``consts``: the values of its leading inputs
    that are the trace's constants (lowering may specialize on them: sparse weights)."""
    with _compiled_lock:
        cell = _compiled.setdefault(jaxpr, {}).setdefault((backend, donated, bool(consts)),
                                                          _Once())
    return cell.get(lambda: lower_program(
        physicalize(jaxpr), backend, name, donated=donated, const_values=consts,
        have_compiler=backends.get(backend).compiler_available()).compile())


def _jit_impl(*bufs, jaxpr, name, donated, backend):
    if config.disable_jit:
        return eval_call_impl(*bufs, jaxpr=jaxpr)
    exe = compiled_executable(jaxpr, _backend(backend), name)
    outs = exe(list(bufs))
    if config.debug_nans or config.debug_infs:
        check_nans(jaxpr, bufs, outs, f"jit({name})")
    return outs


jit_p.def_impl(_jit_impl)


@dataclass(eq=False)
class _Entry:
    jaxpr: ClosedJaxpr  # consts hoisted to leading inputs
    consts: list
    out_tree: tree_util.PyTreeDef
    out_weak: tuple[bool, ...]
    executable: Any = None


class JitFunction:
    """A function compiled by :func:`jit`. Call it like the original function."""

    def __init__(self, fun: Callable, static_argnums=(), static_argnames=(), donate_argnums=(),
                 backend: str | None = None, in_shardings=None, out_shardings=None):
        functools.update_wrapper(self, fun)
        # None: unspecified (arguments stay where they are, outputs live where computed).
        self._in_shardings, self._out_shardings = in_shardings, out_shardings
        for what, s in (("in_shardings", in_shardings), ("out_shardings", out_shardings)):
            jit_shardings.check(s, what, _fun_name(fun))
        self._fun = fun
        nums = tuple(static_argnums) if not isinstance(static_argnums, int) \
            else (static_argnums,)
        names = (static_argnames,) if isinstance(static_argnames, str) else \
            tuple(static_argnames)
        self._static_argnums, self._static_argnames = _static_positions_and_names(
            fun, nums, names)
        self._donate = tuple(donate_argnums) if not isinstance(donate_argnums, int) \
            else (donate_argnums,)
        self._backend = backend
        # Every wrapper of the same function with the same options shares one cache, so
        # jit(f)(x) in a loop traces and compiles once (as jax caches per function).
        traces = _traces_for(fun, (self._static_argnums, self._static_argnames, self._donate,
                                   backend))
        self._traces = traces
        self._cache = traces.cache  # signature -> _Entry, once traced
        self._tracing = traces.tracing  # signature -> _Once(_Entry): one trace per signature
        self._lock = traces.lock  # guards _tracing (never held while tracing)
        # Fast path: calls with only positional fx Arrays, keyed by their avals.
        self._fast = traces.fast
        self._fast_ok = not self._static_argnums and not self._static_argnames and \
            in_shardings is None and out_shardings is None

    # -- signatures -----------------------------------------------------------------------------
    def _split(self, args, kwargs):
        nargs = len(args)
        # A static position the call does not fill (passed by keyword, or left to its
        # default) is not an error, as in jax.
        statics = tuple(sorted(i % nargs for i in self._static_argnums if -nargs <= i < nargs))
        static_vals = []
        for i in statics:
            static_vals.append((i, _hashable_static(args[i], f"argument {i}", self._fun)))
        for k in self._static_argnames:
            if k in kwargs:
                static_vals.append((k, _hashable_static(kwargs[k], f"argument '{k}'", self._fun)))
        dyn_args = tuple(a for i, a in enumerate(args) if i not in statics)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return statics, tuple(static_vals), dyn_args, dyn_kwargs

    def _signature(self, args, kwargs):
        statics, static_vals, dyn_args, dyn_kwargs = self._split(args, kwargs)
        leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        avals = tuple(abstractify(x) for x in leaves)
        # The modes are part of the key: they decide the dtypes of Python scalars and constants,
        # and which promotions trace; so are the bound named axes (inside vmap or shard_map):
        # their sizes, and whether a shard_map checks types (its vjp's typed cotangents).
        key = (in_tree, avals, static_vals, _backend(self._backend), dtypes.x64_enabled(),
               dtypes.promotion_mode(), batching.env_key())
        return key, leaves, statics, dyn_args, dyn_kwargs

    def _entry(self, key, args, kwargs, statics, dyn_args, dyn_kwargs) -> _Entry:
        entry = self._cache.get(key)
        if entry is not None:
            return entry
        with self._lock:
            cell = self._tracing.setdefault(key, _Once())
        return cell.get(lambda: self._trace(key, args, kwargs, statics))

    def _trace(self, key, args, kwargs, statics) -> _Entry:
        if config.log_compiles:
            self._log_compile(key, args, kwargs)
        self._traces.last_key = key
        in_tree, avals = key[0], key[1]

        def call_with_statics(*dyn, **kw):
            it = iter(dyn)
            full = [args[i] if i in statics else next(it) for i in range(len(args))]
            kw = dict(kw, **{k: kwargs[k] for k in self._static_argnames if k in kwargs})
            return self._fun(*full, **kw)

        flat_f, store = flatten_fun(call_with_statics, in_tree, _fun_name(self._fun))
        names = argument_names(self._fun, args, kwargs, statics, self._static_argnames)
        closed = trace_to_jaxpr(flat_f, list(avals), names,
                                f"jit({_fun_name(self._fun)}) tracing")
        jaxpr, consts = _hoist_consts(closed)
        entry = _Entry(jaxpr, consts, store["tree"], tuple(a.weak_type for a in
                                                             jaxpr.out_avals))
        self._cache[key] = entry
        return entry

    def _log_compile(self, key, args, kwargs):
        name = _fun_name(self._fun)
        old_key = self._traces.last_key
        if old_key is None:
            sig = ", ".join(a.str_short() for a in key[1])
            print(f"fx: compiling {name} for ({sig})", file=sys.stderr)
            return
        print(f"fx: recompiling {name} because {_explain(old_key, key)}", file=sys.stderr)

    # -- calling --------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if current_trace() is EVAL_TRACE:
            if config.disable_jit:
                return self._fun(*args, **kwargs)  # op by op, on values (as jax.disable_jit)
            if self._fast_ok and not kwargs and not (config.debug_nans or config.debug_infs):
                key = _fast_key(args)
                leaves = args
                if key is None and not self._donate:
                    key, leaves = _fast_tree_key(args)
                hit = self._fast.get(key) if key is not None else None
                if hit is not None:
                    exe, const_bufs, out_avals, rebuild = hit
                    outs = exe([*const_bufs, *[a._buf if type(a) is Array else a
                                               for a in leaves]])
                    for i in self._donate:
                        args[i].delete()
                    return rebuild([Array._wrap(b, v) for b, v in zip(outs, out_avals)])
        key, leaves, statics, dyn_args, dyn_kwargs = self._signature(args, kwargs)
        if current_trace() is EVAL_TRACE and any(_spans_processes(x) for x in leaves):
            # Each process holds only its shards: the program partitioned by the arguments'
            # shardings where they are data parallel (fx.spmd_partition); otherwise a call,
            # whose shard_maps compile their functions per process (one program each,
            # collectives between processes), any other operation on these arrays raising.
            out = None
            if not kwargs:
                out = self._spanning(args, kwargs, _fun_name(self._fun))
            return self._fun(*args, **kwargs) if out is None else out
        entry = self._entry(key, args, kwargs, statics, dyn_args, dyn_kwargs)
        name = _fun_name(self._fun)
        if current_trace() is EVAL_TRACE and not config.disable_jit and not any(
                isinstance(x, Tracer) for x in leaves):
            if entry.executable is None:
                entry.executable = compiled_executable(
                    entry.jaxpr, key[3], name, self._donated_leaves(args, statics, entry),
                    tuple(entry.consts))
            const_bufs = [_const_buf(c) for c in entry.consts]
            donated = self._donated_leaf_ids(args) if self._donate else ()
            bufs = const_bufs + [
                x._buf if isinstance(x, Array) else _unowned(x, id(x) in donated)
                for x in leaves
            ]
            raw = entry.executable(bufs)
            if config.debug_nans or config.debug_infs:  # before donated inputs are deleted
                check_nans(entry.jaxpr, bufs, raw, f"jit({name})")
            outs = [_out_array(b, w, a) for b, w, a in zip(raw, entry.out_weak,
                                                            entry.jaxpr.out_avals)]
            for i in self._donate:
                for leaf in tree_util.tree_leaves(args[i]):
                    if isinstance(leaf, Array):
                        leaf.delete()
            key = _fast_key(args) if self._fast_ok and not kwargs else None
            if key is None and self._fast_ok and not kwargs and not self._donate:
                key = _fast_tree_key(args)[0]
            if key is not None and all(type(args[i]) is Array for i in self._donate
                                       if -len(args) <= i < len(args)):
                self._fast[key] = (entry.executable, const_bufs, [o.aval for o in outs],
                                   _rebuilder(entry.out_tree))
        else:
            args_all = [*entry.consts, *leaves]
            donated = (False,) * len(args_all)
            outs = jit_p.bind(*args_all, jaxpr=entry.jaxpr, name=name, donated=donated,
                              backend=self._backend)
        return tree_util.tree_unflatten(entry.out_tree, outs)

    def _spanning(self, args, kwargs, name):
        """Arguments spanning processes: the program partitioned as they are placed, or None
        (fx.spmd_partition decides; a call then runs the function)."""
        statics, static_vals, dyn_args, _ = self._split(args, kwargs)
        caches = self.__dict__.setdefault("_spanning_plans", {})
        return jit_shardings.spanning_call(self._of_dynamic(args, statics, name), dyn_args,
                                           name, caches.setdefault(static_vals, {}))

    def _of_dynamic(self, args, statics, name) -> Callable:
        """The function of the dynamic arguments, the static ones of ``args`` fixed."""
        fixed = {i: args[i] for i in statics}

        def fun(*dyn):
            it = iter(dyn)
            return self._fun(*[fixed[i] if i in fixed else next(it)
                               for i in range(len(dyn) + len(fixed))])

        fun.__name__ = name
        return fun

    def _donated_leaf_ids(self, args) -> set[int]:
        return {id(leaf) for i in self._donate if -len(args) <= i < len(args)
                for leaf in tree_util.tree_leaves(args[i])}

    def _donated_leaves(self, args, statics, entry) -> tuple[bool, ...]:
        """One flag per input of the jit body (constants first, never donated)."""
        if not self._donate:
            return ()
        flags = [False] * len(entry.consts)
        for i, a in enumerate(args):
            if i in statics:
                continue
            flags += [i in self._donate or i - len(args) in self._donate] * len(
                tree_util.tree_leaves(a))
        return tuple(flags)

    # -- ahead-of-time ----------------------------------------------------------------------------
    def trace(self, *args, **kwargs) -> Traced:
        """Trace for these arguments, without lowering or compiling (as
        ``jax.jit(f).trace``): the :class:`fx.stages.Traced` has the jaxpr, the arguments'
        and outputs' types, and ``.lower()``.

        Example::

            >>> traced = fx.jit(lambda x: x * 2.0).trace(fnp.ones(3))
            >>> traced.out_info
            ShapeDtypeStruct(shape=(3,), dtype=float32)
        """
        key, leaves, statics, dyn_args, dyn_kwargs = self._signature(args, kwargs)
        entry = self._entry(key, args, kwargs, statics, dyn_args, dyn_kwargs)
        name, backend = _fun_name(self._fun), key[3]
        donated = self._donated_leaves(args, statics, entry)

        def lower() -> Compilation:
            return lower_program(physicalize(entry.jaxpr), backend, name, donated=donated,
                                 const_values=tuple(entry.consts),
                                 have_compiler=backends.get(backend).compiler_available())

        n_consts = len(entry.consts)
        sig = _Signature(
            name, entry.jaxpr, tuple(entry.consts), key[0], key[1],
            tuple(argument_names(self._fun, args, kwargs, statics, self._static_argnames)),
            donated[n_consts:] or (False,) * len(leaves), entry.out_tree, entry.out_weak)
        return Traced(sig, lower)

    def lower(self, *args, **kwargs) -> Lowered:
        """Trace and lower for these arguments (as ``jax.jit(f).lower``)."""
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        """The output shapes and dtypes for these arguments, as ``fx.ShapeDtypeStruct``
        values, without compiling or running (as ``jax.jit(f).eval_shape``)."""
        from fx.api import ShapeDtypeStruct  # fx.api builds on fx's tracing front end

        key, leaves, statics, dyn_args, dyn_kwargs = self._signature(args, kwargs)
        entry = self._entry(key, args, kwargs, statics, dyn_args, dyn_kwargs)
        outs = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in entry.jaxpr.out_avals]
        return tree_util.tree_unflatten(entry.out_tree, outs)

    def cache_size(self) -> int:
        """How many signatures have been traced and compiled."""
        return len(self._cache)

    _cache_size = cache_size

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()
            self._tracing.clear()
            self._fast.clear()

    def __repr__(self) -> str:
        return f"<fx.jit of {_fun_name(self._fun)}>"

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)


class _Traces:
    """The traces and executables of one function under one set of jit options."""

    __slots__ = ("cache", "tracing", "fast", "lock", "last_key")

    def __init__(self):
        self.cache: dict = {}
        self.tracing: dict = {}
        self.fast: dict = {}
        self.lock = threading.Lock()
        self.last_key = None  # the signature traced last, to explain a retrace

    def clear(self) -> None:
        with self.lock:
            self.cache.clear()
            self.tracing.clear()
            self.fast.clear()


# function -> {options: _Traces}. Weakly keyed: the caches go when the function does. A
# function that cannot be weakly referenced or hashed gets a cache of its own per wrapper.
_traces: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_traces_lock = threading.Lock()


def _traces_for(fun: Callable, options: tuple) -> _Traces:
    try:
        with _traces_lock:
            per_fun = _traces.get(fun)
            if per_fun is None:
                per_fun = _traces[fun] = {}
            return per_fun.setdefault(options, _Traces())
    except TypeError:  # not weakly referenceable, or unhashable
        return _Traces()


def clear_caches() -> None:
    """Drop every jitted function's traces and compiled programs (as ``jax.clear_caches``);
    the next call of each traces and compiles again. The on-disk cache of compiled C code
    (``$FX_CACHE_DIR``) is kept."""
    with _traces_lock:
        all_traces = [t for per_fun in _traces.values() for t in per_fun.values()]
    for t in all_traces:
        t.clear()
    with _compiled_lock:
        _compiled.clear()


class _ShardedJitFunction(JitFunction):
    """A jitted function with ``in_shardings`` or ``out_shardings``: it places its arguments
    and outputs around the unsharded call (:mod:`fx.jit_shardings`)."""

    def __call__(self, *args, **kwargs):
        name = _fun_name(self._fun)
        if current_trace() is EVAL_TRACE:
            mesh = jit_shardings.spanning_mesh(self._in_shardings, self._out_shardings, name)
            if mesh is not None:
                return self._partitioned_call(mesh, args, kwargs, name)
        given = args
        if self._in_shardings is not None:
            statics, _, dyn_args, _ = self._split(args, kwargs)
            placed = iter(jit_shardings.apply(
                self._in_shardings, jit_shardings.args_tree(dyn_args, kwargs, name),
                "in_shardings", name))
            args = tuple(a if i in statics else next(placed) for i, a in enumerate(args))
        out = super().__call__(*args, **kwargs)
        for i in self._donate:  # placing may have made new Arrays sharing the given buffers
            for leaf in tree_util.tree_leaves(given[i] if -len(given) <= i < len(given) else ()):
                if isinstance(leaf, Array):
                    leaf.delete()
        if self._out_shardings is None:
            return out
        return jit_shardings.apply(self._out_shardings, out, "out_shardings", name)

    def _partitioned_call(self, mesh, args, kwargs, name):
        """Over a mesh spanning processes: the program partitioned by its batch, one per
        set of static arguments."""
        statics, static_vals, dyn_args, _ = self._split(args, kwargs)
        jit_shardings.args_tree(dyn_args, kwargs, name)
        parts = self.__dict__.setdefault("_partitioned", {})
        run = parts.get(static_vals)
        if run is None:
            run = parts[static_vals] = jit_shardings.partitioned(
                self._of_dynamic(args, statics, name), mesh, self._in_shardings,
                self._out_shardings, name)
        return run(*dyn_args)


def _static_positions_and_names(fun: Callable, nums: tuple, names: tuple):
    """``static_argnums`` and ``static_argnames`` completed from each other through the
    signature of ``fun`` (as jax: a static parameter is static however it is passed). When
    both are given they are taken as they are."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):  # no signature (some builtins): take them as given
        return nums, names
    if names and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        known = {p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL}
        bad = sorted(set(names) - known)
        if bad:
            raise ValueError(
                f"jit({_fun_name(fun)}): static_argnames {bad} name no parameter of "
                f"{_fun_name(fun)}, whose parameters are {[p.name for p in params]}"
            )
    takes_varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    n_positional = sum(p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                  inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params)
    bad_nums = [i for i in nums if not takes_varargs and not -n_positional <= i < n_positional]
    if bad_nums:
        raise ValueError(
            f"jit({_fun_name(fun)}): static_argnums {bad_nums} are out of range: "
            f"{_fun_name(fun)} takes {n_positional} positional arguments"
        )
    if nums and names:
        return nums, names
    positional = [(i, p.name) for i, p in enumerate(params)
                  if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    if names:
        nums = tuple(i for i, n in positional if n in names)
    elif nums:
        names = tuple(n for i, n in positional if i in nums)
    return nums, names


def _fast_key(args: tuple):
    """The fast path's cache key: positional fx Arrays (by abstract value) and NumPy arrays (by
    shape and dtype: their abstract value follows from those), or None for anything else."""
    key = [dtypes.x64_enabled(), dtypes.promotion_mode()]
    for a in args:
        t = type(a)
        if t is Array:
            key.append(a.aval)
        elif t is np.ndarray and a.dtype in _KEPT_DTYPES[key[0]]:
            key.append((a.shape, a.dtype))
        else:
            return None  # also NumPy data that the mode converts (float64 in default mode)
    return tuple(key)


def _spans_processes(x) -> bool:
    return type(x) is Array and x._sharding is not None and not x.is_fully_addressable


def _fast_tree_key(args: tuple):
    """The fast path's key for pytree arguments, and their leaves: the tree structure and each
    leaf as :func:`_fast_key` keys it (None for anything else). Outputs fed back as the next
    call's arguments carry the cached output avals themselves, so the key compares by
    identity."""
    leaves, treedef = tree_util.tree_flatten(args)
    x64 = dtypes.x64_enabled()
    kept = _KEPT_DTYPES[x64]
    key = [x64, dtypes.promotion_mode(), treedef]
    for a in leaves:
        t = type(a)
        if t is Array:
            key.append(a.aval)
        elif t is np.ndarray and a.dtype in kept:
            key.append((a.shape, a.dtype))
        else:
            return None, leaves
    return tuple(key), leaves


# NumPy dtypes that an argument keeps in each mode (x64 on / off): their buffers go to the
# executable as they are.
_KEPT_DTYPES = {x64: frozenset(d for d in dtypes.SUPPORTED if x64 or d not in dtypes.WIDE)
                for x64 in (False, True)}


def _unowned(x, donated: bool) -> np.ndarray:
    """A non-fx argument as an array the executable reads. Only an fx Array's buffer can be
    donated: a NumPy array the caller still holds is handed over as a view, which the
    executable never writes into (it allocates the output instead)."""
    a = np.asarray(x)
    dt = dtypes.canonicalize(a.dtype)
    if dt != a.dtype:
        return a.astype(dt)  # the mode converts it (float64 data in the default mode)
    return a.view() if donated and a.base is None else a


def _rebuilder(out_tree: tree_util.PyTreeDef):
    if out_tree.num_leaves == 1 and tree_util.treedef_is_leaf(out_tree):  # (None is a node)
        return lambda outs: outs[0]
    return functools.partial(tree_util.tree_unflatten, out_tree)


def _hashable_static(value, what: str, fun):
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"jit({_fun_name(fun)}): static {what} has unhashable type "
            f"{type(value).__name__}; static arguments key the compilation cache, so they must "
            "be hashable (use a tuple instead of a list, or make it a traced argument)"
        ) from None
    return value


def _explain(old, new) -> str:
    (ot, oa, os_, ob, ox, op, oe), (nt, na, ns, nb, nx, np_, ne) = old, new
    if oe != ne:
        return f"the bound named axes (name, size, checked) changed {oe} → {ne}"
    if ox != nx:
        return f"x64 mode was {'enabled' if nx else 'disabled'}"
    if op != np_:
        return f"the dtype promotion mode changed {op} → {np_}"
    if ob != nb:
        return f"the backend changed {ob} → {nb}"
    if ot != nt:
        return f"the argument structure changed {ot} → {nt}"
    for i, (a, b) in enumerate(zip(oa, na)):
        if a != b:
            return f"arg {i} changed {a.str_short()} → {b.str_short()}" + (
                " (weak type)" if a.str_short() == b.str_short() else "")
    if os_ != ns:
        return f"static arguments changed {os_} → {ns}"
    return "the signature changed"


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Sequence[str] = (), backend: str | None = None,
        keep_unused: bool = False, inline: bool = False, in_shardings=None,
        out_shardings=None):
    """Compile ``fun``: trace it once per signature into a jaxpr, optimize, fuse, plan memory
    and generate kernels; later calls with the same signature run the compiled program.

    ``static_argnums``/``static_argnames`` name the arguments that are Python values keying
    the cache (either names a parameter however it is passed); ``donate_argnums``/
    ``donate_argnames`` the positional arguments whose buffers the call may reuse. As in
    jax, ``keep_unused`` and ``inline`` are accepted: fx always inlines nested jitted calls
    into the caller's program, and unused arguments change no result.

    ``in_shardings``/``out_shardings`` (pytree prefixes of the positional arguments and of the
    outputs, leaves shardings or None) place the arguments and give the outputs those
    shardings (see :mod:`fx.jit_shardings`); values are the unsharded program's. Over a
    mesh spanning processes the program is partitioned by its batch (:mod:`fx.spmd_partition`).

    Example::

        >>> f = fx.jit(lambda x: fnp.tanh(2 * x + 1) * fx.nn.sigmoid(x))
        >>> f(fnp.ones(4))          # compiles
        >>> f(fnp.zeros(4))         # cached: no retracing
        >>> print(f.lower(fnp.ones(4)).as_text())
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                                 backend=backend, keep_unused=keep_unused, inline=inline,
                                 in_shardings=in_shardings, out_shardings=out_shardings)
    if donate_argnames:
        donate_argnums = _donated_positions(fun, donate_argnums, donate_argnames)
    if in_shardings is None and out_shardings is None:
        return JitFunction(fun, static_argnums, static_argnames, donate_argnums, backend)
    return _ShardedJitFunction(fun, static_argnums, static_argnames, donate_argnums, backend,
                               in_shardings, out_shardings)


def _donated_positions(fun: Callable, nums, names) -> tuple[int, ...]:
    """``donate_argnums`` with the positions of the parameters ``donate_argnames`` names
    added (fx donates positional arguments; one passed by keyword is not donated)."""
    names = (names,) if isinstance(names, str) else tuple(names)
    nums = (nums,) if isinstance(nums, int) else tuple(nums)
    params = list(inspect.signature(fun).parameters.values())
    positions = {p.name: i for i, p in enumerate(params)
                 if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD}
    bad = sorted(set(names) - {p.name for p in params})
    if bad:
        raise ValueError(
            f"jit({_fun_name(fun)}): donate_argnames {bad} name no parameter of "
            f"{_fun_name(fun)}, whose parameters are {[p.name for p in params]}"
        )
    return tuple(sorted(set(nums) | {positions[n] for n in names if n in positions}))
