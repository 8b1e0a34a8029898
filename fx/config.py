"""Global switches: ``fx.config.update(name, value)`` or the matching ``FX_*`` environment
variable.

- ``log_compiles`` (``FX_LOG_COMPILES=1``): print each jit compilation and why it happened.
- ``disable_jit`` (``FX_DISABLE_JIT=1``): run jitted functions op by op.
- ``enable_x64`` (``FX_ENABLE_X64=1``; jax's name ``"jax_enable_x64"`` works too): jax's 64-bit
  mode, see :mod:`fx.dtypes` (per thread: the ``fx.enable_x64()`` context manager).
- ``debug_nans`` (``FX_DEBUG_NANS=1``): when a jitted function returns a NaN, re-run it op by op
  and raise ``FloatingPointError`` naming the first primitive that produced one, with its line.
- ``debug_infs`` (``FX_DEBUG_INFS=1``): the same for infinities.
- ``num_cpu_devices`` (``FX_NUM_CPU_DEVICES=N``; jax's name ``"jax_num_cpu_devices"``): this
  process presents N CPU devices (default 1), as jax's ``--xla_force_host_platform_device_count``:
  ``fx.devices("cpu")``, ``fx.local_device_count()`` (on the CPU backend) and meshes see N.
  They share the host's memory; an array placed on one is a host buffer that says where it
  lives. Set it before first use, as jax requires: arrays already placed keep their devices,
  and a mesh or sharding made earlier still names the old ones. (The option takes effect when
  updated, so a test may set it and restore it.)
- ``numpy_dtype_promotion`` (``FX_NUMPY_DTYPE_PROMOTION=strict``; jax's name
  ``"jax_numpy_dtype_promotion"``): ``"standard"`` or ``"strict"`` type promotion, see
  :mod:`fx.dtypes` (per context: the ``fx.numpy_dtype_promotion(mode)`` context manager;
  ``fx.config.jax_numpy_dtype_promotion`` reads the mode in effect, as jax's).

Each has jax's spelling too: ``fx.config.update("jax_debug_nans", True)``.

The promotion mode's context (:func:`numpy_dtype_promotion`, :func:`promotion_mode`) lives here
beside its option, and :mod:`fx.dtypes` gives the same names. This module imports nothing of fx
but the platform records (``fx.runtime.platforms``), which hold the CPU device count.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator

from fx.runtime import platforms


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class Config:
    # Options are plain attributes: every jitted call reads some, and an attribute read costs
    # a tenth of a __getattr__ hook.
    _names = ("log_compiles", "disable_jit", "debug_nans", "debug_infs", "enable_x64",
              "numpy_dtype_promotion", "num_cpu_devices")

    def __init__(self):
        self.log_compiles = _env_flag("FX_LOG_COMPILES")
        self.disable_jit = _env_flag("FX_DISABLE_JIT")
        self.debug_nans = _env_flag("FX_DEBUG_NANS")
        self.debug_infs = _env_flag("FX_DEBUG_INFS")
        self.enable_x64 = _env_flag("FX_ENABLE_X64") or _env_flag("JAX_ENABLE_X64")
        self.numpy_dtype_promotion = (os.environ.get("FX_NUMPY_DTYPE_PROMOTION")
                                      or os.environ.get("JAX_NUMPY_DTYPE_PROMOTION")
                                      or "standard").strip().lower()
        self.num_cpu_devices = platforms.host_device_count()

    # jax's spellings of the options, and fx's own prefixed ones.
    _aliases = {
        "jax_enable_x64": "enable_x64",
        "fx_enable_x64": "enable_x64",
        "jax_debug_nans": "debug_nans",
        "jax_debug_infs": "debug_infs",
        "jax_disable_jit": "disable_jit",
        "jax_log_compiles": "log_compiles",
        "jax_numpy_dtype_promotion": "numpy_dtype_promotion",
        "jax_num_cpu_devices": "num_cpu_devices",
        "fx_num_cpu_devices": "num_cpu_devices",
    }
    # Options with a context manager: jax's spelling reads the value in effect here.
    _in_context = frozenset({"numpy_dtype_promotion"})

    def __getattr__(self, name: str):
        # Only reached when the attribute is missing: fx.config.jax_enable_x64 reads
        # enable_x64 (plain reads of fx's own names never come here).
        option = type(self)._aliases.get(name)
        if option is None:
            raise AttributeError(f"fx.config has no option {name!r}; known: "
                                 f"{sorted(self._names)} (or jax's spelling, jax_...)")
        return self.read(option)

    def read(self, name: str):
        """The value of option ``name`` (fx's or jax's spelling), as ``jax.config.read``."""
        option = self._aliases.get(name, name)
        if option in self._in_context:
            return promotion_mode()
        return getattr(self, option)

    def update(self, name: str, value) -> None:
        name = self._aliases.get(name, name)
        if name not in self._names:
            raise KeyError(f"fx.config: unknown option {name!r}; known: {sorted(self._names)}")
        if name == "numpy_dtype_promotion":
            value = check_promotion_mode(value)
        if name == "num_cpu_devices":
            platforms.set_host_device_count(value)
            value = platforms.host_device_count()
        setattr(self, name, value)


config = Config()


# --- the promotion mode: "standard" (jax's lattice) or "strict" (no implicit promotion) ------

PROMOTION_MODES = ("standard", "strict")
# ``numpy_dtype_promotion`` contexts: a contextvars variable, so each thread and each asyncio
# task sees its own (a new thread starts from the global option).
_promotion = contextvars.ContextVar("fx_numpy_dtype_promotion", default=None)


def check_promotion_mode(mode) -> str:
    """``mode`` if it names a promotion mode, else ``ValueError`` (as jax's)."""
    if not isinstance(mode, str) or mode not in PROMOTION_MODES:
        raise ValueError(f"{mode!r} is not a valid dtype promotion mode "
                         f"(jax_numpy_dtype_promotion); use one of {PROMOTION_MODES}")
    return mode


def promotion_mode() -> str:
    """The promotion mode in effect here: the innermost :func:`numpy_dtype_promotion`
    context, else the ``jax_numpy_dtype_promotion`` option."""
    mode = _promotion.get()
    if mode is not None:
        return mode
    return config.numpy_dtype_promotion


def numpy_dtype_promotion(mode: str) -> contextlib.AbstractContextManager:
    """A context in which fx.numpy promotes dtypes by ``mode``, as ``jax.numpy_dtype_promotion``.

    ``"strict"`` refuses implicit promotion between different dtypes (a
    :class:`TypePromotionError`); Python scalars still adopt an array's dtype where their
    kind fits. It applies to tracing under ``jit``/``grad``/``vmap`` in the context too.

        >>> import fx, fx.numpy as fnp
        >>> with fx.numpy_dtype_promotion("strict"):
        ...     print((fnp.ones(2, fnp.float32) * 2).dtype)
        ...     try:
        ...         fnp.ones(2, fnp.float32) + fnp.ones(2, fnp.int32)
        ...     except fx.errors.TypePromotionError:
        ...         print("refused")
        float32
        refused
    """
    return _promotion_context(check_promotion_mode(mode))


@contextlib.contextmanager
def _promotion_context(mode: str) -> Iterator[None]:
    token = _promotion.set(mode)
    try:
        yield
    finally:
        _promotion.reset(token)
