"""Global switches: ``fx.config.update(name, value)`` or the matching ``FX_*`` environment
variable.

- ``log_compiles`` (``FX_LOG_COMPILES=1``): print each jit compilation and why it happened.
- ``disable_jit`` (``FX_DISABLE_JIT=1``): run jitted functions op by op.
- ``debug_nans`` (``FX_DEBUG_NANS=1``): when a jitted function returns a NaN, re-run it op by op
  and raise ``FloatingPointError`` naming the first primitive that produced one, with its line.
"""

from __future__ import annotations

import os


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class Config:
    # Options are plain attributes: every jitted call reads some, and an attribute read costs
    # a tenth of a __getattr__ hook.
    _names = ("log_compiles", "disable_jit", "debug_nans", "enable_x64")

    def __init__(self):
        self.log_compiles = _env_flag("FX_LOG_COMPILES")
        self.disable_jit = _env_flag("FX_DISABLE_JIT")
        self.debug_nans = _env_flag("FX_DEBUG_NANS")
        self.enable_x64 = False

    def update(self, name: str, value) -> None:
        if name not in self._names:
            raise KeyError(f"fx.config: unknown option {name!r}; known: {sorted(self._names)}")
        setattr(self, name, value)


config = Config()
