"""Key utilities with ``jax.random``'s names: ``key_data``, ``wrap_key_data``, ``key_impl``,
``clone``.

Typed keys (``fx.random.key``, dtype ``key<fry>``, see ``fx.random.prng``) and raw keys
(``fx.random.PRNGKey``, ``uint32[..., 2]``) convert in both directions: ``key_data(k)`` is a
typed key's data (a raw key is returned as it is, as jax does), ``wrap_key_data(data)`` types
raw data. ``key_impl`` names the generator (fx has one, threefry2x32) and ``clone`` is the
identity (fx arrays are never donated in place, so no copy is needed).
"""

from __future__ import annotations

from fx import dtypes
from fx.array import Array
from fx.core import get_aval
from fx.random.prng import (
    THREEFRY,
    is_typed_key,
    random_unwrap,
    random_wrap,
    resolve_impl,
)
from fx.random.threefry import as_value

IMPL = THREEFRY.name


def _raw_keys(name: str, keys, what: str = "keys"):
    """Validate raw key data (``uint32[..., 2]``) and return it as an fx value."""
    if isinstance(keys, (bool, int, float)):
        raise TypeError(f"fx.random.{name}: expected a PRNG key array, got the Python scalar "
                        f"{keys!r}; make a key with fx.random.key({keys!r})")
    keys = as_value(keys, name, what)
    aval = get_aval(keys)
    if aval.dtype != dtypes.uint32 or not aval.shape or aval.shape[-1] != 2:
        raise TypeError(
            f"fx.random.{name}: invalid PRNG key data: expected {what} as a uint32 array with "
            f"a trailing dimension of 2 (threefry2x32 key data, as fx.random.PRNGKey or "
            f"key_data make), got {aval.str_short()}")
    return keys


def key_data(keys) -> Array:
    """The raw ``uint32[..., 2]`` data of a typed key array; raw key data is returned as it
    is.

    Example::

        >>> fx.random.key_data(fx.random.key(42))
        Array([ 0, 42], dtype=uint32)
    """
    if is_typed_key(keys):
        return random_unwrap(keys)
    return _raw_keys("key_data", keys)


def wrap_key_data(key_bits_array, *, impl=None) -> Array:
    """A typed key array from raw ``uint32[..., 2]`` data (e.g. ``jax.random.key_data(k)``);
    ``impl`` must be ``None`` or ``"threefry2x32"``, the one generator fx has.

    Example::

        >>> fx.random.wrap_key_data(fx.random.PRNGKey(42))
        Array((), dtype=key<fry>) overlaying:
        [ 0 42]
    """
    impl = resolve_impl("wrap_key_data", impl)
    if is_typed_key(key_bits_array):
        raise TypeError("fx.random.wrap_key_data: the argument is already a typed key array; "
                        "pass its data (fx.random.key_data(k))")
    return random_wrap(_raw_keys("wrap_key_data", key_bits_array, "key_bits_array"), impl)


def key_impl(keys) -> str:
    """The name of the generator of ``keys`` (typed or raw): always ``'threefry2x32'``, what
    ``jax.random.key_impl`` gives."""
    if is_typed_key(keys):
        return str(get_aval(keys).dtype._impl)
    _raw_keys("key_impl", keys)
    return IMPL


def clone(key) -> Array:
    """The same key, typed or raw (fx arrays are never donated or mutated, so no copy is
    needed)."""
    if is_typed_key(key):
        return key
    return _raw_keys("clone", key, "key")
