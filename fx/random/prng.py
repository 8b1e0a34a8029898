"""Typed PRNG keys: the ``key<fry>`` dtype and the primitives between keys and their data.

``fx.random.key(seed)`` returns a *typed key array*, as ``jax.random.key`` does: an fx value
of shape ``()`` (or any shape, for arrays of keys) whose dtype is a :class:`KeyDType`, an
extended dtype (``fx.extended_dtypes``) printed ``key<fry>``. Its stored data is the raw key,
``uint32[..., 2]`` (threefry2x32's two words), which ``fx.random.PRNGKey(seed)`` still returns
and every ``fx.random`` function still accepts.

Two primitives convert, as in jax:

- ``random_wrap[impl]``: ``uint32[*s, 2] -> key<fry>[*s]``;
- ``random_unwrap``: ``key<fry>[*s] -> uint32[*s, 2]``.

The samplers unwrap a typed key and compute on its data with ``fx.lax`` operations
(``fx.random.threefry``); ``split`` and ``fold_in`` wrap their result again when given a typed
key. Both primitives store the same data under another type, so their physical rule is the
identity and their eager impl returns the buffer it gets; batching maps the batch dimension
through. Key arrays are arrays to the rest of fx: pytree leaves, arguments and results of
``jit``/``vmap``/``scan``, indexed and reshaped by the structural primitives' physical rules.
Arithmetic on them raises a ``TypeError`` and mixing them with other dtypes a ``ValueError``,
as jax's.
"""

from __future__ import annotations

from dataclasses import dataclass

from fx import dtypes
from fx.avals import ShapedArray
from fx.core import Primitive, get_aval, physical_rules
from fx.interpreters import batching
from fx.interpreters.batching import moveaxis


@dataclass(frozen=True)
class PRNGImpl:
    """A key generator: its name, the short tag of its key dtype and the shape of one key's
    uint32 data. fx has one, threefry2x32 (jax's default)."""

    name: str
    tag: str
    key_shape: tuple[int, ...]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:  # (jaxprs print random_wrap[impl=fry], as jax's)
        return self.tag


THREEFRY = PRNGImpl("threefry2x32", "fry", (2,))
IMPLS = {THREEFRY.name: THREEFRY}


class KeyDType(dtypes.ExtendedDType):
    """The dtype of typed PRNG key arrays of one generator (``key<fry>``)."""

    type = dtypes.prng_key
    physical_dtype = dtypes.uint32

    def __init__(self, impl: PRNGImpl):
        self._impl = impl

    @property
    def name(self) -> str:
        return f"key<{self._impl.tag}>"

    @property
    def physical_shape(self) -> tuple[int, ...]:
        return self._impl.key_shape

    def __eq__(self, other) -> bool:
        return isinstance(other, KeyDType) and other._impl == self._impl

    def __hash__(self) -> int:
        return hash((KeyDType, self._impl))

    def __reduce__(self):
        return (KeyDType, (self._impl,))


def resolve_impl(name: str, impl) -> PRNGImpl:
    """The generator ``impl`` names (None: threefry2x32); fx has no other, and an unknown name
    is jax's ``ValueError``."""
    if impl is None or impl is THREEFRY:
        return THREEFRY
    found = IMPLS.get(str(impl))
    if found is None:
        raise ValueError(f"fx.random.{name}: impl {impl!r} is not available; fx has only "
                         f"{THREEFRY.name!r} (jax's default)")
    return found


def is_typed_key(x) -> bool:
    """Whether ``x`` is an fx value of a key dtype (a typed key array)."""
    aval = getattr(x, "aval", None)
    return aval is not None and isinstance(aval.dtype, KeyDType)


# --- random_wrap --------------------------------------------------------------------------------

random_wrap_p = Primitive("random_wrap")  # params: impl (PRNGImpl)


@random_wrap_p.def_abstract_eval
def _random_wrap_abstract_eval(x, *, impl):
    k = len(impl.key_shape)
    if x.dtype != dtypes.uint32 or x.ndim < k or x.shape[x.ndim - k:] != impl.key_shape:
        raise TypeError(
            f"random_wrap: invalid PRNG key data for {impl.name}: expected a uint32 array whose "
            f"shape ends with {impl.key_shape}, got {x.str_short()}")
    return ShapedArray(x.shape[:x.ndim - k], KeyDType(impl))


random_wrap_p.def_impl(lambda x, *, impl: x)  # the data is the key's storage
physical_rules[random_wrap_p] = lambda in_avals, out_avals, x, *, impl: x


def _random_wrap_batch(axis, vals, dims, *, impl):
    (x,), (d,) = vals, dims
    if d >= get_aval(x).ndim - len(impl.key_shape):  # batched along a key's own words
        x, d = moveaxis(x, d, 0), 0
    return random_wrap_p.bind(x, impl=impl), d


batching.batch_rules[random_wrap_p] = _random_wrap_batch


def random_wrap(data, impl: PRNGImpl = THREEFRY):
    """Typed keys from their raw ``uint32[..., 2]`` data."""
    return random_wrap_p.bind(data, impl=impl)


# --- random_unwrap ------------------------------------------------------------------------------

random_unwrap_p = Primitive("random_unwrap")


@random_unwrap_p.def_abstract_eval
def _random_unwrap_abstract_eval(keys):
    if not isinstance(keys.dtype, KeyDType):
        raise TypeError(f"random_unwrap: expected a typed key array, got {keys.str_short()}")
    return ShapedArray(keys.shape + keys.dtype.physical_shape, keys.dtype.physical_dtype)


random_unwrap_p.def_impl(lambda keys: keys)
physical_rules[random_unwrap_p] = lambda in_avals, out_avals, keys: keys
batching.batch_rules[random_unwrap_p] = lambda axis, vals, dims: (
    random_unwrap_p.bind(vals[0]), dims[0])


def random_unwrap(keys):
    """The raw ``uint32[..., 2]`` data of typed keys."""
    return random_unwrap_p.bind(keys)


def impl_of(keys) -> PRNGImpl:
    return get_aval(keys).dtype._impl

