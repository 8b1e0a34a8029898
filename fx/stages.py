"""The ahead-of-time stages of a jitted function (as ``jax.stages``):
``jit(f).trace(*args)`` → :class:`Traced` → ``.lower()`` → :class:`Lowered` →
``.compile()`` → :class:`Compiled`.

Each stage is fixed to the signature it was made for: the structure, shapes and dtypes of
the dynamic arguments (static arguments are bound at tracing and are not passed to a
:class:`Compiled`). Every stage reports that signature (``args_info``, ``in_tree``) and the
outputs' types (``out_info``) without running anything; ``Lowered`` and ``Compiled`` show the
program (``as_text``) and estimate its cost (``cost_analysis``).

Example::

    >>> import fx, fx.numpy as fnp
    >>> traced = fx.jit(lambda x, y: {"z": x @ y}).trace(fnp.ones((2, 3)), fnp.ones((3, 4)))
    >>> traced.out_info["z"].shape
    (2, 4)
    >>> compiled = traced.lower().compile()
    >>> compiled(fnp.ones((2, 3)), fnp.ones((3, 4)))["z"].shape
    (2, 4)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fx import tree_util
from fx.api import ShapeDtypeStruct
from fx.array import Array
from fx.avals import ShapedArray
from fx.devices import to_host
from fx.jaxpr import ClosedJaxpr, Jaxpr
from fx.lowering.pipeline import Compilation
from fx.tracing import abstractify


@dataclass(frozen=True)
class ArgInfo:
    """The type of one argument leaf a stage was made for, and whether it is donated (as
    ``jax.stages.ArgInfo``)."""

    aval: ShapedArray
    donated: bool = False

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype


@dataclass(frozen=True)
class CompiledMemoryStats:
    """The memory a compiled program uses, in bytes (the attributes of jax's
    ``Compiled.memory_analysis()``): its arguments, its outputs, the outputs written in place
    of donated arguments (``alias``), the arena of temporaries (``temp``) and the kernel
    source it generated. fx's memory planner also reports its arena against a lower bound
    (the most bytes alive at once) and against one buffer per value (``naive``); those are
    read with ``stats["arena_bytes"]``, ``stats["lower_bound_bytes"]``,
    ``stats["naive_bytes"]`` and ``stats["inplace_reuses"]``."""

    argument_size_in_bytes: int
    output_size_in_bytes: int
    alias_size_in_bytes: int
    temp_size_in_bytes: int
    generated_code_size_in_bytes: int
    arena_bytes: int
    lower_bound_bytes: int
    naive_bytes: int
    inplace_reuses: int
    # The host side of a device program: fx keeps no separate host arena.
    host_argument_size_in_bytes: int = 0
    host_output_size_in_bytes: int = 0
    host_alias_size_in_bytes: int = 0
    host_temp_size_in_bytes: int = 0
    host_generated_code_size_in_bytes: int = 0

    @property
    def peak_memory_in_bytes(self) -> int:
        return (self.argument_size_in_bytes + self.output_size_in_bytes
                - self.alias_size_in_bytes + self.temp_size_in_bytes)

    _KEYS = ("arena_bytes", "lower_bound_bytes", "naive_bytes", "inplace_reuses")

    def __getitem__(self, key: str) -> int:
        if key not in self._KEYS:
            raise KeyError(f"memory_analysis: no entry {key!r}; the entries are "
                           f"{list(self._KEYS)} (the jax attributes are attributes)")
        return getattr(self, key)

    def keys(self) -> tuple[str, ...]:
        return self._KEYS


@dataclass(frozen=True, eq=False)
class _Signature:
    """What every stage of one trace shares: the traced function's name and jaxpr (its
    constants hoisted to leading inputs), the dynamic arguments' structure, types, names and
    donation, and the outputs' structure and weak types."""

    fun_name: str
    jaxpr: ClosedJaxpr
    consts: tuple
    in_tree: tree_util.PyTreeDef
    in_avals: tuple[ShapedArray, ...]
    arg_names: tuple[str, ...]
    donated: tuple[bool, ...]  # one per dynamic argument leaf
    out_tree: tree_util.PyTreeDef
    out_weak: tuple[bool, ...]

    def args_info(self):
        return tree_util.tree_unflatten(
            self.in_tree, [ArgInfo(a, d) for a, d in zip(self.in_avals, self.donated)])

    def out_info(self):
        return tree_util.tree_unflatten(self.out_tree, [
            ShapeDtypeStruct(a.shape, a.dtype, w)
            for a, w in zip(self.jaxpr.out_avals, self.out_weak)])


class _Stage:
    """The signature-derived attributes every stage has (as jax's stages)."""

    _sig: _Signature

    @property
    def fun_name(self) -> str:
        return self._sig.fun_name

    @property
    def in_tree(self) -> tree_util.PyTreeDef:
        """The structure of ``(args, kwargs)``, static arguments left out."""
        return self._sig.in_tree

    @property
    def out_tree(self) -> tree_util.PyTreeDef:
        return self._sig.out_tree

    @property
    def in_avals(self):
        return tree_util.tree_unflatten(self._sig.in_tree, list(self._sig.in_avals))

    @property
    def out_avals(self):
        return tree_util.tree_unflatten(self._sig.out_tree, [
            ShapedArray(a.shape, a.dtype, w)
            for a, w in zip(self._sig.jaxpr.out_avals, self._sig.out_weak)])

    @property
    def args_info(self):
        """``(args, kwargs)`` with an :class:`ArgInfo` for each dynamic argument leaf."""
        return self._sig.args_info()

    @property
    def out_info(self):
        """The outputs' structure with a ``fx.ShapeDtypeStruct`` for each leaf."""
        return self._sig.out_info()

    @property
    def donate_argnums(self) -> tuple[int, ...]:
        """The flat positions of the donated argument leaves."""
        return tuple(i for i, d in enumerate(self._sig.donated) if d)


class Traced(_Stage):
    """A jitted function traced for one signature (``jit(f).trace(*args, **kwargs)``).

    Example::

        >>> traced = fx.jit(lambda x: fnp.sin(x) * 2.0).trace(fnp.ones(3))
        >>> print(traced.jaxpr)
        { lambda ; a:f32[3]. let
            b:f32[3] = sin a
            c:f32[3] = mul b 2.0:f32[]
          in (c,) }
        >>> traced.out_info
        ShapeDtypeStruct(shape=(3,), dtype=float32)
    """

    def __init__(self, sig: _Signature, lower: Callable[[], Compilation]):
        self._sig = sig
        self._lower = lower

    @property
    def jaxpr(self) -> ClosedJaxpr:
        """The traced jaxpr, closed over its constants (as ``jax.stages.Traced.jaxpr``)."""
        j, n = self._sig.jaxpr.jaxpr, len(self._sig.consts)
        return ClosedJaxpr(Jaxpr(j.invars[:n], j.invars[n:], j.outvars, j.eqns),
                           list(self._sig.consts))

    def lower(self) -> Lowered:
        """Optimize, fuse, select kernels and plan memory: the :class:`Lowered` program."""
        return Lowered(self._lower(), self._sig)


class Lowered(_Stage):
    """A traced and lowered program (``jit(f).lower(*args)``).

    Example::

        >>> lowered = fx.jit(lambda a, b: a @ b).lower(fnp.ones((2, 3)), fnp.ones((3, 4)))
        >>> lowered.cost_analysis()["flops"]
        48.0
    """

    def __init__(self, program: Compilation, sig: _Signature):
        self._program = program
        self._sig = sig

    @property
    def _entry(self) -> _Signature:  # fx.export reads jaxpr, consts, out_tree, out_weak
        return self._sig

    def as_text(self, stage: str | None = None) -> str:
        """The optimized IR with fusion groups, chosen kernels and buffer placement; or one
        stage alone: ``"jaxpr"``, ``"groups"``, ``"selection"``, ``"plan"``, ``"source"``."""
        return self._program.as_text(stage)

    def compile(self) -> Compiled:
        """Build the kernels: the :class:`Compiled` program."""
        return Compiled(self._program, self._program.compile(), self._sig)

    def cost_analysis(self) -> dict:
        """Estimated ``"flops"`` and ``"bytes accessed"`` of the program, and its number of
        ``"kernels"`` (as jax's, a dict of floats keyed by name)."""
        return self._program.cost_analysis()

    @property
    def program(self) -> Compilation:
        return self._program


class Compiled(_Stage):
    """A compiled program (``jit(f).lower(*args).compile()``). Call it with the dynamic
    arguments of the signature it was compiled for (static ones left out); others are
    refused with a ``TypeError``, as jax's.

    Example::

        >>> compiled = fx.jit(lambda x: x + 1.0).lower(fnp.ones(3)).compile()
        >>> compiled(fnp.zeros(3))
        Array([1., 1., 1.], dtype=float32)
        >>> compiled.memory_analysis().argument_size_in_bytes
        12
    """

    def __init__(self, program: Compilation, executable, sig: _Signature):
        self._program = program
        self._exe = executable
        self._sig = sig

    @property
    def _entry(self) -> _Signature:
        return self._sig

    def __call__(self, *args, **kwargs):
        leaves, bufs = self._buffers(args, kwargs)
        sig = self._sig
        outs = [_out_array(b, w, a) for b, w, a in zip(self._exe(bufs), sig.out_weak,
                                                        sig.jaxpr.out_avals)]
        for x, donated in zip(leaves, sig.donated):
            if donated and isinstance(x, Array):
                x.delete()
        return tree_util.tree_unflatten(sig.out_tree, outs)

    def profile(self, *args, repeat: int = 20, **kwargs):
        """A roofline profile of this program on these arguments (``fx.profiling``): each
        call of its schedule timed on its own (median of ``repeat`` runs), with its FLOPs,
        bytes, achieved rates and % of this machine's peak. Donated arguments are not
        consumed. CPU programs only.

        Example::

            >>> compiled = fx.jit(lambda x: fnp.tanh(x) * 2.0).lower(fnp.ones(1000)).compile()
            >>> prof = compiled.profile(fnp.ones(1000), repeat=3)   # doctest: +SKIP
            >>> print(prof)                                         # doctest: +SKIP
            profile of <lambda>: 1 calls, 0.004 ms ...
        """
        from fx import profiling
        from fx.runtime import peaks

        if not self._exe.timed_calls:
            raise NotImplementedError(
                f"Compiled.profile: the {self._program.backend.name} backend's executor does "
                "not time its calls; profile the program on the cpu backend")
        if repeat < 1:
            raise ValueError(f"Compiled.profile: repeat must be at least 1, got {repeat}")
        _, bufs = self._buffers(args, kwargs)
        # Donation would let a run write into an argument the next run reads again.
        bufs = [b.copy() if d and hasattr(b, "copy") else b
                for b, d in zip(bufs, [False] * len(self._sig.consts) + list(self._sig.donated))]
        program = self._program.one_call_per_operation()
        return profiling.profile(program, program.compile(), bufs, peaks.measure(), repeat)

    def _buffers(self, args, kwargs):
        """The call's leaves, and the buffers the executable reads (constants first), after
        checking them against the signature compiled for."""
        leaves, tree = tree_util.tree_flatten((args, kwargs))
        sig = self._sig
        if tree != sig.in_tree:
            raise TypeError(
                f"Compiled {sig.fun_name}: the arguments' structure {tree} differs from the "
                f"structure it was compiled for, {sig.in_tree}. Function compiled with input "
                "pytree does not match the input pytree it was called with (static arguments "
                "are bound at tracing: leave them out of the call)")
        bufs = [_const_buf(c) for c in sig.consts]
        bad = []
        for x, want, name, donated in zip(leaves, sig.in_avals, sig.arg_names, sig.donated):
            got = abstractify(x)
            if got.shape != want.shape or got.dtype != want.dtype:
                bad.append(f"{name} compiled with {want.str_short()} and called with "
                           f"{got.str_short()}")
            elif isinstance(x, Array):
                bufs.append(x._buf)
            else:
                bufs.append(_host_argument(x, want.dtype, donated))
        if bad:
            raise TypeError(
                f"Compiled {sig.fun_name}: argument types differ from the types for which "
                "this computation was compiled (trace and compile it again for these, or "
                "call the jitted function). The mismatches are:\n" + "\n".join(bad))
        return leaves, bufs

    def memory_analysis(self) -> CompiledMemoryStats:
        """The bytes of the arguments, outputs, donated outputs and temporaries (as jax's,
        whose attribute names it has), with fx's memory plan behind them."""
        program, sig = self._program, self._sig
        plan = program.plan
        outputs = [b for b in program.buffers.values() if b.kind == "output"]
        return CompiledMemoryStats(
            argument_size_in_bytes=sum(a.nbytes for a in sig.in_avals),
            output_size_in_bytes=sum(a.nbytes for a in sig.jaxpr.out_avals),
            alias_size_in_bytes=sum(b.aval.nbytes for b in outputs if b.donor is not None),
            temp_size_in_bytes=plan.arena_bytes,
            generated_code_size_in_bytes=len(str(program.source).encode()),
            arena_bytes=plan.arena_bytes,
            lower_bound_bytes=plan.lower_bound,
            naive_bytes=plan.naive_bytes,
            inplace_reuses=len(plan.inplace),
        )

    def cost_analysis(self) -> dict:
        """As :meth:`Lowered.cost_analysis`."""
        return self._program.cost_analysis()

    def kernel_sources(self) -> str:
        return self._program.source

    def as_text(self, stage: str | None = None) -> str:
        return self._program.as_text(stage)


def _host_argument(x, dtype: np.dtype, donated: bool) -> np.ndarray:
    """A non-fx argument as an array the executable reads, in the compiled dtype (a Python
    scalar's NumPy type may be wider). A donated NumPy array is handed over as a view, which
    the executable never writes into: the caller still holds it."""
    a = np.asarray(x)
    if a.dtype != dtype:
        return a.astype(dtype)
    return a.view() if donated and a.base is None else a


__all__ = ["ArgInfo", "Compiled", "CompiledMemoryStats", "Lowered", "Traced"]


def _const_buf(c) -> np.ndarray:
    # A typed key constant goes to the executable as its stored data.
    return np.asarray(c) if isinstance(c.aval.dtype, np.dtype) else to_host(c._buf)


def _out_array(buf, weak: bool, aval: ShapedArray) -> Array:
    if isinstance(aval.dtype, np.dtype):
        return Array._wrap(buf, ShapedArray(buf.shape, buf.dtype, weak))
    return Array._wrap(buf, aval)  # an extended dtype (typed keys) over its stored data
