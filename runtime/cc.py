"""Compiling generated C with the system compiler, with an on-disk cache.

A translation unit is compiled once into a shared library named by the hash of its source,
the compiler's version, the flags and the machine, under ``$FX_CACHE_DIR`` (default
``~/.cache/fx``). Writes are atomic (compile to a temporary name, then rename). Each library
embeds its own key (``fx_cache_key()``); a file that fails to load or carries another key is
rebuilt. No ``-ffast-math``: NaN and Inf behave as in NumPy.

``-fno-trapping-math`` lets GCC if-convert the branch-free selects of the float32
exp/log/tanh polynomials (and ``rintf``) on CPUs without AVX-512 masking: under the default
``-ftrapping-math`` it must assume a speculated operation could trap, and on AVX2 it left every
transcendental loop scalar. fx never enables floating-point traps, so results (NaN and Inf
included) do not change; only the sticky exception flags may differ. ``$FX_MARCH`` (default
``native``) picks the ``-march`` target, e.g. ``x86-64-v3`` to measure an AVX2 machine's code
on an AVX-512 one.

A large program's source is a :class:`Source`: several translation units, compiled in parallel
(one compiler process per core) and cached each under its own key, so a change to one part of
a program recompiles only the units it touched. ``build`` is safe to call from several threads:
a given unit compiles once however many threads ask for it.

A runtime library whose functions generated code calls by name is loaded with
``RTLD_GLOBAL`` (``build_global``). ``build_global_async`` starts such a build on a worker
thread: a program's units compile meanwhile, and every ``build`` loads the libraries started
so far before its own (whose undefined names they define), so a library and the first
program that calls it compile at the same time.
"""

from __future__ import annotations

import _ctypes
import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

# OpenMP threads that spin between parallel regions steal the cores BLAS runs on (and the
# reverse): a jitted train step alternates kernels and GEMMs, and on two cores spinning made
# it 5x slower. Sleeping threads cost a wake-up per region instead. Read when the OpenMP
# runtime loads with the first compiled library; the user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

MARCH = os.environ.get("FX_MARCH", "native")
FLAGS = ("-O3", f"-march={MARCH}", "-fopenmp", "-fno-math-errno", "-fno-trapping-math",
         "-ffp-contract=off", "-fPIC", "-shared", "-std=gnu11", "-w")


class CompileError(RuntimeError):
    pass


@functools.cache
def compiler() -> str | None:
    """The C compiler to use: ``$CC`` or the first of cc, gcc, clang on PATH."""
    for cand in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cand and shutil.which(cand):
            return shutil.which(cand)
    return None


@functools.cache
def compiler_version() -> str:
    cc = compiler()
    if cc is None:
        return "none"
    out = subprocess.run([cc, "--version"], capture_output=True, text=True)
    return out.stdout.splitlines()[0] if out.stdout else cc


@functools.cache
def target_macros() -> frozenset:
    """The names the compiler predefines for the target fx's kernels are compiled for
    (``-march=$FX_MARCH``): ``__AVX512VNNI__``, ``__x86_64__``, ... (empty without one)."""
    cc = compiler()
    if cc is None:
        return frozenset()
    out = subprocess.run([cc, f"-march={MARCH}", "-dM", "-E", "-x", "c", os.devnull],
                         capture_output=True, text=True)
    return frozenset(line.split()[1] for line in out.stdout.splitlines()
                     if line.startswith("#define "))


@functools.cache
def _machine() -> str:
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line
                    break
    except OSError:
        pass
    return platform.machine() + hashlib.sha1(flags.encode()).hexdigest()[:12]


def cache_dir() -> Path:
    d = Path(os.environ.get("FX_CACHE_DIR") or Path.home() / ".cache" / "fx")
    d.mkdir(parents=True, exist_ok=True)
    return d


def cache_key(source: str) -> str:
    h = hashlib.sha256()
    for part in (source, compiler_version(), " ".join(FLAGS), _machine()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


class Source(str):
    """C source text made of translation units that compile separately (see the module
    docstring): each unit is ``prelude`` followed by one of ``bodies``. As text it is the
    prelude followed by every body, itself one valid translation unit."""

    prelude: str
    bodies: tuple[str, ...]

    def __new__(cls, prelude: str, bodies: Iterable[str]):
        bodies = tuple(bodies)
        self = super().__new__(cls, prelude + "".join(bodies))
        self.prelude, self.bodies = prelude, bodies
        return self

    @property
    def units(self) -> tuple[str, ...]:
        return tuple(self.prelude + b for b in self.bodies)

    def __reduce__(self):
        return (Source, (self.prelude, self.bodies))


class Library:
    """The shared libraries of a program's translation units, looked up as one."""

    def __init__(self, libs: list[ctypes.CDLL]):
        self.libs = libs

    def __getattr__(self, name: str):
        for lib in self.libs:
            try:
                return getattr(lib, name)
            except AttributeError:
                pass
        raise AttributeError(f"no translation unit defines {name!r}")


_lock = threading.Lock()  # guards _loaded, _building, _globals, _failed and _pool
_loaded: dict[str, ctypes.CDLL] = {}
_building: dict[str, Future] = {}  # key -> the library another thread is building
_globals: dict[Future, str] = {}  # build_global_async's builds running -> their sources
_failed: list[BaseException] = []  # the errors of those that failed
_pool: ThreadPoolExecutor | None = None  # runs build_global_async's builds


def build(source: str) -> ctypes.CDLL | Library:
    """Load the shared library for ``source``, compiling it if no valid cached copy exists
    (each unit of a :class:`Source`, in parallel)."""
    units = getattr(source, "units", None)
    if not units or len(units) == 1:
        return _build_unit(units[0] if units else source)
    with ThreadPoolExecutor(max_workers=min(len(units), os.cpu_count() or 1)) as pool:
        return Library(list(pool.map(_build_unit, units)))


def build_global(source: str) -> ctypes.CDLL:
    """``build`` of one translation unit whose symbols later libraries link against: it is
    loaded again with ``RTLD_GLOBAL`` (the generated code of a program calls the functions
    of such a runtime library by name; see ``fx.distributed.native``)."""
    lib = _build_unit(source, after_globals=False)
    return ctypes.CDLL(lib._name, mode=os.RTLD_GLOBAL | os.RTLD_NOW)


def build_global_async(source: str) -> Future:
    """``build_global(source)`` on a worker thread; its future. Every ``build`` called while
    it runs compiles meanwhile and loads it (waiting for it) before loading its own
    libraries, so a program may call the library's functions by name. Where the build fails,
    a program that calls them fails to load with a ``CompileError`` naming that failure.

    >>> lib = "int fx_doc_seven(void) { return 7; }"
    >>> _ = build_global_async(lib)
    >>> build("int fx_doc_seven(void); int fx_doc(void) { return 6 * fx_doc_seven(); }").fx_doc()
    42
    """
    global _pool
    with _lock:
        if _pool is None:  # one core left to the program compiling meanwhile
            _pool = ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 1) - 1),
                                       thread_name_prefix="fx-cc")
        future = _pool.submit(build_global, source)
        _globals[future] = source

    def done(f: Future) -> None:
        with _lock:
            _globals.pop(f, None)
            if f.exception() is not None:
                _failed.append(f.exception())

    future.add_done_callback(done)
    return future


def _await_globals() -> None:
    with _lock:
        pending = list(_globals)
    for future in pending:
        future.exception()  # waits; a failure is reported by the library that needs it


def _after_fork_in_child() -> None:
    # The child has none of the parent's threads: the builds they ran never finish here.
    # Libraries already loaded stay loaded; the global builds in flight start again.
    global _lock, _pool
    _lock = threading.Lock()
    _pool = None
    _building.clear()
    pending = list(_globals.values())
    _globals.clear()
    for source in pending:
        build_global_async(source)


os.register_at_fork(before=lambda: _lock.acquire(), after_in_parent=lambda: _lock.release(),
                    after_in_child=_after_fork_in_child)


def _build_unit(source: str, after_globals: bool = True) -> ctypes.CDLL:
    key = cache_key(source)
    with _lock:
        if key in _loaded:
            return _loaded[key]
        pending = _building.get(key)
        if pending is None:
            pending = _building[key] = Future()
            mine = True
        else:
            mine = False
    if not mine:
        return pending.result()
    try:
        lib = _load_or_compile(source, key, after_globals)
        with _lock:
            _loaded[key] = lib
        pending.set_result(lib)
        return lib
    except BaseException as e:
        pending.set_exception(e)
        raise
    finally:
        with _lock:
            _building.pop(key, None)


def _load_or_compile(source: str, key: str, after_globals: bool) -> ctypes.CDLL:
    """The library of ``source`` loaded: from the cache, or compiled (while the global
    libraries build) and loaded after them (``after_globals``)."""
    path = cache_dir() / f"fx_{key}.so"
    keyed = source + f'\nconst char* fx_cache_key(void) {{ return "{key}"; }}\n'
    compiled = not path.exists()
    if compiled:
        _compile(keyed, path)
    if after_globals:
        _await_globals()
    lib = _try_load(path, key)
    if lib is None and not compiled:  # corrupt or stale: rebuild
        _compile(keyed, path)
        lib = _try_load(path, key)
    if lib is None:
        with _lock:
            failed = "".join(f"\nafter a runtime library failed to build: {e}" for e in _failed)
        raise CompileError(f"fx: compiled {path} but it does not load{failed}")
    return lib


def _try_load(path: Path, key: str) -> ctypes.CDLL | None:
    if not path.exists():
        return None
    try:
        lib = ctypes.CDLL(str(path))
    except OSError:
        lib = None
    if lib is not None:
        try:
            fn = lib.fx_cache_key
            fn.restype = ctypes.c_char_p
            if fn().decode() == key:
                return lib
        except (AttributeError, UnicodeDecodeError):
            pass
        _ctypes.dlclose(lib._handle)  # so that the rebuilt file is really loaded
    path.unlink(missing_ok=True)  # corrupt or stale: rebuild
    return None


def _compile(source: str, path: Path) -> None:
    cc = compiler()
    if cc is None:
        raise CompileError("fx: no C compiler found (set CC or install gcc)")
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        src = Path(tmp) / "kernels.c"
        src.write_text(source)
        out = Path(tmp) / "kernels.so"
        proc = subprocess.run([cc, *FLAGS, str(src), "-o", str(out), "-lm"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompileError(f"fx: C compilation failed:\n{proc.stderr[-4000:]}")
        os.replace(out, path)
