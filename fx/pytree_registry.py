"""Pytree node types: key-path entries, the registry of container types and its front doors.

Takes a container class and its flatten/unflatten functions; records a ``_NodeType`` per class
that :mod:`fx.tree_util` walks. Builtin containers (tuple, list, dict, ``OrderedDict``,
``defaultdict``, None) are registered here; namedtuples are recognized without registration;
:class:`Partial` is a registered ``functools.partial``. A class is registered at most once.
Users import all of this from :mod:`fx.tree_util` (as ``jax.tree_util``).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

# --- key paths -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SequenceKey:
    """The key of a tuple or list element: ``str`` gives ``[0]``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclass(frozen=True)
class DictKey:
    """The key of a dict entry: ``str`` gives ``['name']``."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclass(frozen=True)
class GetAttrKey:
    """The key of a namedtuple field or dataclass attribute: ``str`` gives ``.name``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclass(frozen=True)
class FlattenedIndexKey:
    """The position of a child of a node registered without keys: ``[<flat index 0>]``."""

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyEntry = SequenceKey | DictKey | GetAttrKey | FlattenedIndexKey | Any
KeyPath = tuple[KeyEntry, ...]


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: ``keystr((DictKey('a'), SequenceKey(0)))`` is ``"['a'][0]"``.

    ``simple=True`` writes each key bare (``a``, ``0``), which with ``separator='/'`` gives
    ``"a/0"``; other objects in ``keys`` are written with ``str``.
    """
    return separator.join(_simple_key(k) if simple else str(k) for k in keys)


def _simple_key(k) -> str:
    for cls, field in ((SequenceKey, "idx"), (DictKey, "key"), (GetAttrKey, "name"),
                       (FlattenedIndexKey, "key")):
        if isinstance(k, cls):
            return str(getattr(k, field))
    return str(k)


# --- the registry --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _NodeType:
    flatten: Callable[[Any], tuple[Iterable[Any], Any]]
    unflatten: Callable[[Any, Iterable[Any]], Any]
    # ``x -> ([(key, child), ...], aux)``; None: children are keyed by FlattenedIndexKey.
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Any]] | None = None

    def keyed(self, x) -> tuple[list[tuple[Any, Any]], Any]:
        if self.flatten_with_keys is not None:
            pairs, aux = self.flatten_with_keys(x)
            return list(pairs), aux
        children, aux = self.flatten(x)
        return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux


_registry: dict[type, _NodeType] = {}
_namedtuple_nodes: dict[type, _NodeType] = {}


def _register(nodetype: type, node: _NodeType, what: str) -> None:
    if not isinstance(nodetype, type):
        raise TypeError(f"{what}: expected a class, got {nodetype!r} of type "
                        f"{type(nodetype).__name__}")
    if nodetype in _registry:
        raise ValueError(f"{what}: {nodetype.__name__} is already registered as a pytree node")
    for name in ("flatten", "unflatten"):
        if not callable(getattr(node, name)):
            raise TypeError(f"{what}: the {name} function for {nodetype.__name__} is not "
                            f"callable (got {getattr(node, name)!r})")
    _registry[nodetype] = node


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
    flatten_with_keys_func: Callable | None = None,
) -> None:
    """Make ``nodetype`` a container.

    ``flatten_func(x) -> (children, aux_data)`` and ``unflatten_func(aux_data, children) -> x``,
    where ``aux_data`` is hashable and carries everything about ``x`` that is not a child.
    ``flatten_with_keys_func(x) -> ([(key, child), ...], aux_data)`` names the children in
    key paths; without it they are ``FlattenedIndexKey(i)``.

    Example::

        class Point:
            def __init__(self, x, y): self.x, self.y = x, y
        register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda _, c: Point(*c))
    """
    _register(nodetype, _NodeType(flatten_func, unflatten_func, flatten_with_keys_func),
              "register_pytree_node")


def register_pytree_with_keys(
    nodetype: type,
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
    """Like :func:`register_pytree_node`, given the keyed flatten; ``flatten_func`` (a faster
    keyless flatten) defaults to dropping the keys.

    Example::

        register_pytree_with_keys(
            Point, lambda p: (((GetAttrKey("x"), p.x), (GetAttrKey("y"), p.y)), None),
            lambda _, c: Point(*c))
    """
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    _register(nodetype, _NodeType(flatten_func, unflatten_func, flatten_with_keys),
              "register_pytree_with_keys")


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: register ``cls`` by its ``tree_flatten(self)`` method and
    ``tree_unflatten(cls, aux_data, children)`` classmethod. Returns ``cls``."""
    _require_methods(cls, ("tree_flatten", "tree_unflatten"), "register_pytree_node_class")
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: register ``cls`` by its ``tree_flatten_with_keys(self)`` method and
    ``tree_unflatten`` classmethod (and ``tree_flatten`` if it has one). Returns ``cls``."""
    _require_methods(cls, ("tree_flatten_with_keys", "tree_unflatten"),
                     "register_pytree_with_keys_class")
    flat = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flat)
    return cls


def _require_methods(cls, names, what: str) -> None:
    missing = [n for n in names if not hasattr(cls, n)]
    if missing:
        raise TypeError(f"{what}: {getattr(cls, '__name__', cls)!r} has no "
                        f"{' or '.join(missing)}; define {', '.join(names)}")


def register_dataclass(nodetype: type, data_fields: Iterable[str] | None = None,
                       meta_fields: Iterable[str] | None = None,
                       drop_fields: Iterable[str] = ()) -> type:
    """Register a dataclass (or any class whose constructor takes its fields as keywords):
    ``data_fields`` are children (key ``GetAttrKey(name)``), ``meta_fields`` are aux data (they
    must be hashable) and ``drop_fields`` are neither (the constructor must fill them in).

    Without ``data_fields``/``meta_fields`` a dataclass's ``init`` fields are data unless their
    metadata has ``static=True`` (see :func:`fx.tree.static`). Usable as a decorator. Returns
    ``nodetype``.

    Example::

        @register_dataclass
        @dataclasses.dataclass
        class Layer:
            w: fx.Array
            act: str = fx.tree.static(default="relu")
    """
    what = "register_dataclass"
    if (data_fields is None) != (meta_fields is None):
        raise TypeError(f"{what}: pass both data_fields and meta_fields or neither "
                        f"(got data_fields={data_fields!r}, meta_fields={meta_fields!r})")
    drop = tuple(drop_fields)
    if data_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(f"{what}: {getattr(nodetype, '__name__', nodetype)!r} is not a "
                            "dataclass; pass data_fields and meta_fields explicitly")
        init = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop]
        meta = tuple(f.name for f in init if f.metadata.get("static", False))
        data = tuple(f.name for f in init if not f.metadata.get("static", False))
    else:
        data, meta = tuple(data_fields), tuple(meta_fields)
        if dataclasses.is_dataclass(nodetype):
            init = {f.name for f in dataclasses.fields(nodetype) if f.init}
            given = set(data) | set(meta) | set(drop)
            if given != init:
                raise ValueError(
                    f"{what}: the data, meta and drop fields of {nodetype.__name__} must be "
                    f"exactly its init fields; missing {sorted(init - given)}, unexpected "
                    f"{sorted(given - init)} (put fields the constructor fills in into "
                    "drop_fields)")

    def flatten_with_keys(x):
        return ([(GetAttrKey(n), getattr(x, n)) for n in data],
                tuple(getattr(x, n) for n in meta))

    def flatten(x):
        return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

    def unflatten(aux, children):
        return nodetype(**dict(zip(meta, aux)), **dict(zip(data, children)))

    _register(nodetype, _NodeType(flatten, unflatten, flatten_with_keys), what)
    return nodetype


def register_static(cls: type) -> type:
    """Register ``cls`` as a node with no children whose instances are aux data: they pass
    through transformations as static values (so they should be hashable). Returns ``cls``."""
    _register(cls, _NodeType(lambda x: ((), x), lambda x, _: x), "register_static")
    return cls


def _seq_keys(t):
    return [(SequenceKey(i), c) for i, c in enumerate(t)], None


def _sorted_keys(d) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError as e:
        kinds = sorted({type(k).__name__ for k in d})
        raise ValueError(
            f"pytree flattening: a dict's keys must be sortable (dicts flatten in sorted key "
            f"order), got keys of types {', '.join(kinds)} ({e}); use keys of one type") from None


def _dict_flatten(d):
    keys = _sorted_keys(d)
    return tuple(d[k] for k in keys), keys


def _dict_keys(d):
    keys = _sorted_keys(d)
    return [(DictKey(k), d[k]) for k in keys], keys


def _ordered_keys(d):
    return [(DictKey(k), v) for k, v in d.items()], tuple(d)


def _default_keys(d):
    pairs, keys = _dict_keys(d)
    return pairs, (d.default_factory, keys)


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c), _seq_keys)
register_pytree_node(list, lambda t: (t, None), lambda _, c: list(c), _seq_keys)
register_pytree_node(dict, _dict_flatten, lambda keys, c: dict(zip(keys, c)), _dict_keys)
register_pytree_node(type(None), lambda _: ((), None), lambda _, c: None, lambda _: ((), None))
register_pytree_node(
    collections.OrderedDict, lambda d: (tuple(d.values()), tuple(d)),
    lambda keys, c: collections.OrderedDict(zip(keys, c)), _ordered_keys)
register_pytree_node(
    collections.defaultdict, lambda d: (_dict_flatten(d)[0], (d.default_factory, _sorted_keys(d))),
    lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)), _default_keys)


def _node_of(t: type) -> _NodeType | None:
    node = _registry.get(t)
    if node is None and issubclass(t, tuple) and hasattr(t, "_fields"):
        node = _namedtuple_nodes.get(t)
        if node is None:  # namedtuples need no registration
            node = _namedtuple_nodes[t] = _NodeType(
                lambda nt: (tuple(nt), None), lambda _, c, t=t: t(*c),
                lambda nt: ([(GetAttrKey(f), v) for f, v in zip(nt._fields, nt)], None))
    return node


def is_tree_node(typ: type) -> bool:
    """Whether instances of the class ``typ`` are pytree containers (not leaves)."""
    return isinstance(typ, type) and _node_of(typ) is not None


# --- Partial -------------------------------------------------------------------------------------


class _Opaque:
    """Holds a ``functools.partial`` passed to :class:`Partial` as its function, so its
    arguments stay part of the function (aux data) instead of being merged into the leaves."""

    __slots__ = ("fun",)

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __hash__(self) -> int:
        return hash(self.fun)

    def __eq__(self, other) -> bool:
        return self.fun == (other.fun if isinstance(other, _Opaque) else other)

    def __repr__(self) -> str:
        return f"_Opaque({self.fun!r})"


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: its positional and keyword arguments are the
    children and its function is aux data, so it can be passed through ``jit``/``vmap``/``grad``
    as an argument. A ``functools.partial`` (or ``Partial``) given as the function keeps its own
    arguments as part of the function.

    Example::

        >>> p = Partial(lambda a, b: a + b, 1.0)
        >>> float(fx.jit(lambda p, x: p(x))(p, 2.0))
        3.0
    """

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            func = _Opaque(func)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial, lambda p: ((p.args, p.keywords), p.func),
    lambda func, c: Partial(func, *c[0], **c[1]))
