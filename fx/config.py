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
    def __init__(self):
        self._values = {
            "log_compiles": _env_flag("FX_LOG_COMPILES"),
            "disable_jit": _env_flag("FX_DISABLE_JIT"),
            "debug_nans": _env_flag("FX_DEBUG_NANS"),
        }

    def update(self, name: str, value) -> None:
        if name not in self._values:
            raise KeyError(f"fx.config: unknown option {name!r}; known: {sorted(self._values)}")
        self._values[name] = value

    def __getattr__(self, name: str):
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        raise AttributeError(name)


config = Config()
