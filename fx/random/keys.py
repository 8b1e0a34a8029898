"""Key utilities with ``jax.random``'s names: ``key_data``, ``wrap_key_data``, ``key_impl``,
``clone``.

fx keys are raw ``uint32[..., 2]`` arrays (one generator, threefry2x32), which is what
``jax.random.key_data`` returns for jax's typed keys. So ``key_data`` and ``wrap_key_data``
check their argument and return it unchanged, ``key_impl`` names the one implementation, and
``clone`` is the identity (fx arrays are immutable; jax needs it only for donated typed keys).
Code written for typed keys runs unchanged: ``key_data(k)`` and ``wrap_key_data(data)``
convert in both directions, and ``fx.numpy.issubdtype(k.dtype, fx.dtypes.prng_key)`` is
False for fx keys, as it is for jax's raw keys.
"""

from __future__ import annotations

from fx import dtypes
from fx.array import Array
from fx.core import get_aval
from fx.random.threefry import _as_value

IMPL = "threefry2x32"


def _key_array(name: str, keys, what: str = "keys"):
    """Validate a key or an array of keys (``uint32[..., 2]``) and return it as an fx value."""
    if isinstance(keys, (bool, int, float)):
        raise TypeError(f"fx.random.{name}: expected a PRNG key array (uint32[..., 2]), got "
                        f"the Python scalar {keys!r}; make a key with fx.random.key({keys!r})")
    keys = _as_value(keys, name, what)
    aval = get_aval(keys)
    if aval.dtype != dtypes.uint32 or not aval.shape or aval.shape[-1] != 2:
        raise TypeError(
            f"fx.random.{name}: expected {what} as a uint32 array with a trailing dimension of "
            f"2 (threefry2x32 key data, as fx.random.key or jax.random.key_data make), got "
            f"{aval.str_short()}")
    return keys


def key_data(keys) -> Array:
    """The raw ``uint32[..., 2]`` data of a key or key array (for fx keys, the keys
    themselves)."""
    return _key_array("key_data", keys)


def wrap_key_data(key_bits_array, *, impl=None, dtype=None) -> Array:
    """A key array from raw ``uint32[..., 2]`` data (e.g. ``jax.random.key_data(k)``);
    ``impl`` must be ``None`` or ``"threefry2x32"``, the one generator fx has."""
    _check_impl("wrap_key_data", impl)
    if dtype is not None:
        raise TypeError("fx.random.wrap_key_data: dtype= (a typed key dtype) is not supported; "
                        "fx keys are raw uint32 data")
    return _key_array("wrap_key_data", key_bits_array, "key_bits_array")


def key_impl(keys) -> str:
    """The name of the generator of ``keys``: always ``'threefry2x32'`` (whose ``str`` is
    what ``str(jax.random.key_impl(k))`` gives)."""
    _key_array("key_impl", keys)
    return IMPL


def clone(key) -> Array:
    """The same key (fx arrays are never donated or mutated, so no copy is needed)."""
    return _key_array("clone", key, "key")


def _check_impl(name: str, impl) -> None:
    if impl is not None and str(impl) != IMPL:
        raise ValueError(f"fx.random.{name}: impl {impl!r} is not available; fx has only "
                         f"{IMPL!r} (jax's default)")
