"""The threefry2x32 counter-based PRNG: keys, key derivation and raw random bits.

A key's data is a ``uint32[2]`` array (a raw key, as ``PRNGKey`` makes; ``key`` makes a typed
key of dtype ``key<fry>`` holding it, see ``fx.random.prng``). Every random value is a pure
function of a key and a counter: the Threefry-2x32 block cipher (20 rounds, Salmon et al.,
"Parallel random numbers: as easy as 1, 2, 3", SC 2011) encrypts a pair of 32-bit counter
words under the key. The layout of the counters follows ``jax.random`` with
``jax_threefry_partitionable=True`` (jax's default), so the bits here are bit-identical to
jax's:

* ``random_bits(key, shape)``: element ``i`` (row-major) encrypts the 64-bit counter ``i`` split
  into ``(hi, lo)`` words; the 32-bit result is the xor of the two output words (64-bit results
  concatenate them, high word first).
* ``split(key, shape)``: key ``i`` is the pair of output words for counter ``i``.
* ``fold_in(key, data)``: the pair of output words for the counter ``(0, data)``.

Everything is written with ``fx.lax`` operations over whole arrays (the rounds are unrolled in
Python), so it runs eagerly, traces into jaxprs, and batches under ``vmap`` with no rules of its
own. uint32 arithmetic wraps modulo 2**32, as the cipher requires.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from fx import dtypes, lax
from fx.array import Array
from fx.core import Tracer, get_aval
from fx.lax.convert import to_dtype
from fx.random.prng import is_typed_key, random_unwrap, random_wrap, resolve_impl

# Rotation distances of the two alternating groups of four rounds, and the key-schedule parity
# constant of Threefish/Threefry.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA
_MAX_ELEMENTS = 2**32


def _u32(value: int) -> Array:
    return Array(np.asarray(value, dtype=dtypes.uint32))


def _rotate_left(x, r: int):
    return lax.or_(lax.shift_left(x, _u32(r)), lax.shift_right_logical(x, _u32(32 - r)))


def threefry2x32(k1, k2, x1, x2):
    """Threefry-2x32 (20 rounds) of the counter words ``(x1, x2)`` under the key ``(k1, k2)``.

    All four are uint32; the key words are scalars, the counter words share one shape. Returns
    the two output words.
    """
    # Key words are broadcast to the counters' shape: under vmap a batched scalar meeting an
    # unbatched array trips the elementwise batching rule.
    shape = get_aval(x1).shape
    k1, k2 = (lax.broadcast_in_dim(k, shape, ()) for k in (k1, k2))
    ks = (k1, k2, lax.xor(lax.xor(k1, k2), _u32(_PARITY)))
    x1, x2 = lax.add(x1, ks[0]), lax.add(x2, ks[1])
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x1 = lax.add(x1, x2)
            x2 = lax.xor(x1, _rotate_left(x2, r))
        # Key injection: the schedule rotates through the three key words, plus a round counter.
        x1 = lax.add(x1, ks[(i + 1) % 3])
        x2 = lax.add(x2, lax.add(ks[(i + 2) % 3], _u32(i + 1)))
    return x1, x2


# --- keys ---------------------------------------------------------------------------------------


def as_value(x, name: str, what: str):
    """An fx value for an argument: fx values pass through, nested Python data gets fx's
    default dtypes (as ``fx.numpy.asarray``), and numpy data (or anything with ``__array__``,
    like a jax array) becomes an Array of its canonical dtype."""
    if isinstance(x, (Array, Tracer)):
        return x
    if isinstance(x, (list, tuple)):
        from fx.numpy._promote import asarray  # fx.numpy imports fx.lax, which is below us

        return asarray(x)
    dtype_name = str(getattr(x, "dtype", ""))
    if dtype_name.startswith("key<"):
        raise TypeError(
            f"fx.random.{name}: {what} is a jax typed key ({dtype_name}); pass its data, "
            "jax.random.key_data(key), or fx.random.wrap_key_data of it instead"
        )
    try:
        host = np.asarray(x)
        return Array(np.asarray(host, dtype=dtypes.canonicalize(host.dtype)))
    except TypeError as e:
        raise TypeError(f"fx.random.{name}: {what} must be an array, got {x!r} ({e})") from None


def check_key(name: str, key):
    """Validate a single key (a typed key of shape ``()`` or raw ``uint32[2]`` data) and
    return its data as an fx value."""
    if is_typed_key(key):
        if get_aval(key).shape:
            raise ValueError(
                f"fx.random.{name} accepts a single key, but was given a key array of shape "
                f"{get_aval(key).shape} != (). Use fx.vmap for batching.")
        return random_unwrap(key)
    if isinstance(key, (bool, int, float)):
        raise TypeError(
            f"fx.random.{name}: expected a PRNG key (a typed key from fx.random.key, or a "
            f"uint32[2] array from PRNGKey), got the Python scalar {key!r}; make a key with "
            f"fx.random.key({key!r})"
        )
    key = as_value(key, name, "the key")
    aval = get_aval(key)
    if aval.dtype != dtypes.uint32 or not aval.shape or aval.shape[-1] != 2:
        raise TypeError(
            f"fx.random.{name}: expected a PRNG key: a typed key (fx.random.key) or a uint32 "
            f"array of shape (2,) (fx.random.PRNGKey); got {aval.str_short()}"
        )
    if aval.ndim != 1:
        raise ValueError(
            f"fx.random.{name} accepts a single key, but was given a key array of shape "
            f"{aval.shape} != (2,). Use fx.vmap for batching."
        )
    return key


def key_words(key):
    """The two uint32 scalars of a validated key."""
    return tuple(lax.reshape(lax.slice(key, (i,), (i + 1,)), ()) for i in (0, 1))


def _stack_words(w1, w2):
    """Join two equally shaped uint32 arrays along a new trailing axis of size 2."""
    shape = get_aval(w1).shape
    return lax.concatenate([lax.reshape(w, shape + (1,)) for w in (w1, w2)], len(shape))


def key(seed, *, impl=None) -> Array:
    """A typed PRNG key (shape ``()``, dtype ``key<fry>``) from an integer seed, as
    ``jax.random.key``; its data (``fx.random.key_data``) is :func:`PRNGKey`'s.

    The seed is read as a 64-bit integer ``(hi, lo)`` word pair:
    Python ints as int64 (as jax does with ``jax_enable_x64``; ints outside the int64 range are
    an error), 32-bit integer arrays zero-extended (a negative int32 keeps its 32 bits in
    ``lo``), int64 arrays split into their two words. ``seed`` may be traced.

    Example::

        >>> fx.random.key(42)
        Array((), dtype=key<fry>) overlaying:
        [ 0 42]
    """
    return random_wrap(_seed_data(seed, "key"), resolve_impl("key", impl))


def _seed_data(seed, name: str):
    """The raw key data of ``seed`` (see :func:`key`)."""
    if isinstance(seed, (bool, int)) and not isinstance(seed, np.generic):
        seed = int(seed)
        if not -(2**63) <= seed < 2**63:
            raise OverflowError(
                f"fx.random.{name}: seed {seed} is out of range for int64; use a seed in "
                "[-2**63, 2**63)"
            )
        bits = seed & (2**64 - 1)
        return Array(np.array([bits >> 32, bits & 0xFFFFFFFF], dtype=dtypes.uint32))
    if isinstance(seed, float):
        raise TypeError(f"fx.random.{name}: the seed must be an integer, got the float "
                        f"{seed!r}")
    seed = as_value(seed, name, "the seed")
    aval = get_aval(seed)
    if aval.shape:
        raise TypeError(
            f"fx.random.{name} accepts a scalar seed, but was given an array of shape "
            f"{aval.shape} != (). Use fx.vmap for batching."
        )
    if aval.dtype == dtypes.bool_:
        seed = lax.convert_element_type(seed, dtypes.uint32)
    elif not dtypes.is_int(aval.dtype):
        raise TypeError(f"fx.random.{name}: the seed must be an integer, got "
                        f"{aval.str_short()}")
    lo = lax.convert_element_type(seed, dtypes.uint32)
    if aval.dtype == dtypes.int64:
        hi = lax.convert_element_type(lax.shift_right_logical(seed, 32), dtypes.uint32)
    else:
        hi = lax.full((), 0, dtypes.uint32)
    return _stack_words(hi, lo)


def PRNGKey(seed, *, impl=None) -> Array:  # noqa: N802  (jax's name)
    """A raw PRNG key from an integer seed: a ``uint32[2]`` array, as ``jax.random.PRNGKey``
    (the data of :func:`key`).

    Example::

        >>> fx.random.PRNGKey(42)
        Array([ 0, 42], dtype=uint32)
    """
    resolve_impl("PRNGKey", impl)
    return _seed_data(seed, "PRNGKey")


def canonical_shape(name: str, shape) -> tuple[int, ...]:
    """A static shape: an int or a sequence of non-negative ints."""
    try:
        dims = (operator.index(shape),) if not isinstance(shape, Sequence) else tuple(
            operator.index(d) for d in shape
        )
    except TypeError:
        raise TypeError(
            f"fx.random.{name}: shape must be a tuple of non-negative Python ints, got {shape!r}"
        ) from None
    if any(d < 0 for d in dims):
        raise ValueError(f"fx.random.{name}: negative dimension in shape {dims}")
    return dims


def _counters(name: str, shape: tuple[int, ...]):
    """The 64-bit row-major index of each element of ``shape``, as ``(hi, lo)`` uint32 words."""
    size = math.prod(shape)
    if size > _MAX_ELEMENTS:
        raise ValueError(
            f"fx.random.{name}: shape {shape} has {size} elements; at most 2**32 are supported"
        )
    zero = lax.full(shape, 0, dtypes.uint32)
    if not shape:
        return zero, zero
    return zero, lax.reshape(lax.iota(dtypes.uint32, size), shape)


def split(key, num: int | Sequence[int] = 2) -> Array:
    """Split a key into ``num`` new keys; ``num`` may be a shape. A typed key gives typed keys
    of shape ``num``, raw data gives raw data (``uint32[num, 2]``).

    Example::

        >>> k1, k2 = fx.random.split(fx.random.key(0))
    """
    data = check_key("split", key)
    shape = canonical_shape("split", num)
    k1, k2 = key_words(data)
    return _like(key, _stack_words(*threefry2x32(k1, k2, *_counters("split", shape))))


def _like(key, data):
    """``data`` typed as ``key`` is: typed keys when ``key`` is one, else raw."""
    return random_wrap(data, get_aval(key).dtype._impl) if is_typed_key(key) else data


def split_pair(key) -> tuple:
    """``split(key)`` as two separate keys (jax's ``key, subkey = split(key)``)."""
    k1, k2 = key_words(key)
    return tuple(_stack_words(*threefry2x32(k1, k2, _u32(0), _u32(i))) for i in (0, 1))


def fold_in(key, data) -> Array:
    """A new key from ``key`` and 32-bit integer ``data`` (e.g. a step or device index).

    ``data`` is a Python int in ``[0, 2**32)`` or a scalar array (converted to uint32 with
    wrap-around, so a negative int32 -1 folds in as 2**32 - 1, as in jax).
    """
    typed_key, key = key, check_key("fold_in", key)
    if isinstance(data, (bool, int)) and not isinstance(data, np.generic):
        if not 0 <= int(data) < 2**32:
            raise OverflowError(
                f"fx.random.fold_in: data {data} is out of bounds for uint32; pass an integer "
                "in [0, 2**32) or a uint32/int32 array"
            )
        data = _u32(int(data))
    else:
        data = as_value(data, "fold_in", "data")
        if get_aval(data).shape:
            raise TypeError(
                f"fx.random.fold_in accepts a scalar, but was given an array of shape "
                f"{get_aval(data).shape} != (). Use fx.vmap for batching."
            )
        data = lax.convert_element_type(data, dtypes.uint32)
    k1, k2 = key_words(key)
    return _like(typed_key, _stack_words(*threefry2x32(k1, k2, _u32(0), data)))


# --- random bits --------------------------------------------------------------------------------


def random_words(name: str, key, shape: tuple[int, ...]):
    """The two uint32 output words of the cipher for every element of ``shape``."""
    k1, k2 = key_words(key)
    return threefry2x32(k1, k2, *_counters(name, shape))


def bits32(name: str, key, shape: tuple[int, ...]):
    """32 random bits per element (uint32): jax's ``random_bits(key, 32, shape)``."""
    return lax.xor(*random_words(name, key, shape))


def bits64(name: str, key, shape: tuple[int, ...]):
    """64 random bits per element, held in an int64 (fx has no uint64): the high word is the
    first output word, as in jax's ``random_bits(key, 64, shape)``."""
    hi, lo = (to_dtype(w, dtypes.int64) for w in random_words(name, key, shape))
    return lax.or_(lax.shift_left(hi, 32), lo)


def bits(key, shape: int | Sequence[int] = (), dtype=dtypes.uint32) -> Array:
    """Uniformly random bits of ``shape`` as unsigned integers.

    fx's only unsigned dtype is uint32, so ``dtype`` must be uint32 (jax's default with
    ``jax_enable_x64`` is uint64; jax's uint32 bits are identical to these).

    Example::

        >>> fx.random.bits(fx.random.key(0), (3,))
        Array([4070199207, 4202968722, 1427181096], dtype=uint32)
    """
    key = check_key("bits", key)
    shape = canonical_shape("bits", shape)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt != dtypes.uint32:
        raise TypeError(
            f"fx.random.bits: dtype must be uint32 (the only unsigned integer dtype fx has), "
            f"got {dtype!r}"
        )
    return bits32("bits", key, shape)
