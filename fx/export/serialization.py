"""``fx.export.export``: a jitted function, for given argument types, as an :class:`Exported`
that serializes to bytes and runs in another process without the user's Python code (as
``jax.export``).

What travels in the blob: the program's jaxpr (calls inlined; constants as values), the
argument and result types and tree structures, the backend, and the compiled program as it
was lowered when exporting — its generated source and its ``as_text()`` (the schedule, the
chosen implementations, the memory plan). Loading lowers the jaxpr again (lowering is
deterministic) and refuses to run if this fx would generate a different source than the
exporting one did (another fx version); the kernels then come from the compile cache, or are
compiled once. Primitives travel by name.

The format: ``FXEXPORT``, a format version (4 bytes, little-endian), the SHA-256 of the
payload, then the payload (a pickle, read back by an unpickler that accepts only fx's IR
classes, NumPy arrays and dtypes and plain containers). A truncated, corrupt or foreign blob,
or one of another format version, is refused with an error saying which. The checksum detects
damage, not tampering: load blobs from sources you trust.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import importlib
import io
import pickle
import struct
import threading
from dataclasses import dataclass, field

import numpy as np

from fx import dtypes, tree_util
from fx.array import Array
from fx.avals import ShapedArray
from fx.jaxpr import ClosedJaxpr, Jaxpr
from fx.lowering.passes.inline_calls import inline_calls
from fx.lowering.pipeline import lower

MAGIC = b"FXEXPORT"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sI32s")


class DeserializationError(ValueError):
    """A blob that is not a readable ``fx.export`` program."""


@dataclass(frozen=True, eq=False)
class Exported:
    """A function lowered for fixed argument types, ready to serialize and to call.

    ``in_avals``/``out_avals`` are the flat argument and result types, ``in_tree``/``out_tree``
    their structures (of ``(args, kwargs)`` and of the result)."""

    fun_name: str
    in_tree: tree_util.PyTreeDef
    in_avals: tuple[ShapedArray, ...]
    out_tree: tree_util.PyTreeDef
    out_avals: tuple[ShapedArray, ...]
    backend: str
    jaxpr: ClosedJaxpr  # the function's inputs: its hoisted constants, then the arguments
    consts: tuple[np.ndarray, ...]  # the hoisted constants' values
    source: str  # the generated source the exporting fx lowered the program to
    text: str  # that program's as_text()
    _exe: list = field(default_factory=list, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def as_text(self) -> str:
        return self.text

    def serialize(self) -> bytes:
        state = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                 if not f.name.startswith("_")}
        payload = pickle.dumps(state, protocol=5)
        return _HEADER.pack(MAGIC, FORMAT_VERSION, hashlib.sha256(payload).digest()) + payload

    def call(self, *args, **kwargs):
        """Run the program on arguments of the exported types (the same tree structure,
        shapes and dtypes; Python scalars take their argument's dtype)."""
        leaves, tree = tree_util.tree_flatten((args, kwargs))
        if tree != self.in_tree:
            raise TypeError(f"fx.export: {self.fun_name} was exported for arguments "
                            f"{self.in_tree}, got {tree}")
        bufs = [np.asarray(c) for c in self.consts]
        for i, (x, aval) in enumerate(zip(leaves, self.in_avals)):
            bufs.append(_argument(self.fun_name, i, x, aval))
        outs = self._executable()(bufs)
        return tree_util.tree_unflatten(
            self.out_tree, [Array._wrap(b, a) for b, a in zip(outs, self.out_avals)])

    def _executable(self):
        if not self._exe:
            with self._lock:
                if not self._exe:
                    program = lower(self.jaxpr, self.backend, self.fun_name)
                    if str(program.source) != self.source:
                        raise DeserializationError(
                            f"fx.export: this fx lowers {self.fun_name} to other code than the "
                            "fx that exported it (another fx version?): export it again with "
                            "this one")
                    self._exe.append(program.compile())
        return self._exe[0]


def _argument(name: str, i: int, x, aval: ShapedArray):
    if isinstance(x, (bool, int, float, complex)) and aval.shape == ():
        return np.asarray(x, aval.dtype)
    buf = x._buf if isinstance(x, Array) else x
    shape, dt = tuple(np.shape(buf)), np.asarray(buf).dtype if not hasattr(buf, "dtype") \
        else np.dtype(buf.dtype)
    if shape != tuple(aval.shape) or dt != aval.dtype:
        raise TypeError(f"fx.export: argument {i} of {name} must be {aval.str_short()}, got "
                        f"{dtypes.canonicalize(dt).name}{list(shape)}")
    return buf


def export(fn):
    """``export(jitted)(*args)`` lowers ``jitted`` (an ``fx.jit`` function; a plain function
    is jitted) for these arguments — arrays or ``fx.ShapeDtypeStruct`` s — into an
    :class:`Exported`."""
    from fx.jit_function import JitFunction, jit

    jitted = fn if isinstance(fn, JitFunction) else jit(fn)
    if jitted._static_argnums or jitted._static_argnames:
        raise ValueError("fx.export: export a function without static arguments (bind them "
                         "with functools.partial first)")

    def lowered(*args, **kwargs) -> Exported:
        low = jitted.lower(*args, **kwargs)
        key = jitted._signature(args, kwargs)[0]
        entry, program = low._entry, low.program
        closed = inline_calls(entry.jaxpr)
        _check_portable(closed, program.name)
        out_avals = tuple(ShapedArray(a.shape, a.dtype, w) for a, w in
                          zip(entry.jaxpr.out_avals, entry.out_weak))
        return Exported(program.name, key[0], tuple(key[1]), entry.out_tree, out_avals,
                        program.backend.name, closed, tuple(np.asarray(c) for c in entry.consts),
                        str(program.source), program.as_text())

    return lowered


def _check_portable(closed: ClosedJaxpr, name: str) -> None:
    """Every parameter of every equation (loop bodies included) is data: a Python function
    (a ``pure_callback``'s callback, a custom rule inside a loop body) cannot travel."""
    stack = [closed.jaxpr]
    while stack:
        jaxpr = stack.pop()
        for eqn in jaxpr.eqns:
            for k, v in eqn.params.items():
                for p in v if isinstance(v, (tuple, list)) else (v,):
                    if isinstance(p, ClosedJaxpr):
                        stack.append(p.jaxpr)
                    elif isinstance(p, Jaxpr):
                        stack.append(p)
                    elif callable(p) and not isinstance(p, (type, np.dtype)):
                        where = (f" ({eqn.source_info})" if eqn.source_info is not None
                                 else "")
                        raise ValueError(
                            f"fx.export: {name} calls Python code that cannot be serialized: "
                            f"{eqn.primitive.name}'s {k}={getattr(p, '__name__', p)!r}{where}")


def deserialize(blob: bytes) -> Exported:
    """The :class:`Exported` that ``serialize`` wrote into ``blob``."""
    blob = bytes(blob)
    if len(blob) < _HEADER.size or not blob.startswith(MAGIC):
        raise DeserializationError("fx.export: not an fx.export blob (it does not start with "
                                   f"{MAGIC!r}; {len(blob)} bytes)")
    _, version, digest = _HEADER.unpack_from(blob)
    if version != FORMAT_VERSION:
        raise DeserializationError(f"fx.export: the blob has format version {version}; this fx "
                                   f"reads version {FORMAT_VERSION}")
    payload = blob[_HEADER.size:]
    if hashlib.sha256(payload).digest() != digest:
        raise DeserializationError(f"fx.export: the blob is corrupt or truncated (its checksum "
                                   f"does not match its {len(payload)} bytes of payload)")
    try:
        state = _Unpickler(io.BytesIO(payload)).load()
    except DeserializationError:
        raise
    except Exception as e:
        raise DeserializationError(f"fx.export: the blob's program cannot be read: {e}") from e
    return Exported(**state)


# Plain values the payload may construct besides fx's data classes.
_SAFE = {
    ("builtins", n) for n in ("tuple", "list", "dict", "set", "frozenset", "slice", "range",
                              "complex", "float", "int", "bool", "str", "bytes", "bytearray",
                              "NoneType", "Ellipsis")
} | {("numpy", "dtype"), ("numpy", "ndarray"), ("numpy.core.multiarray", "_reconstruct"),
     ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
     ("numpy._core.multiarray", "scalar"), ("numpy._core.numeric", "_frombuffer"),
     ("numpy.core.numeric", "_frombuffer"), ("fx.core", "primitive_named")}


# fx's IR and value classes.
_IR = {("fx.jaxpr", n) for n in ("Var", "Literal", "JaxprEqn", "Jaxpr", "ClosedJaxpr",
                                 "SourceInfo")} | {("fx.avals", "ShapedArray"),
                                                   ("fx.tree_util", "PyTreeDef")}


class _Unpickler(pickle.Unpickler):
    """Reads only what an exported program holds: fx's IR and value classes (data classes,
    named tuples, enums), primitives by name, NumPy arrays, dtypes and scalars, ml_dtypes'
    types and plain containers."""

    def find_class(self, module: str, name: str):
        if (module, name) in _SAFE or module.startswith("numpy.dtypes") or (
                module == "ml_dtypes" or module.startswith("ml_dtypes.")):
            return super().find_class(module, name)
        if (module, name) in _IR:
            return super().find_class(module, name)
        if module == "fx" or module.startswith("fx."):
            obj = getattr(importlib.import_module(module), name, None)
            if isinstance(obj, type) and (dataclasses.is_dataclass(obj) or
                                          issubclass(obj, (tuple, enum.Enum))):
                return obj  # a parameter's value type (dimension numbers, precisions, ...)
        raise DeserializationError(f"fx.export: the blob refers to {module}.{name}, which an "
                                   "exported program never holds")


__all__ = ["DeserializationError", "Exported", "deserialize", "export"]
