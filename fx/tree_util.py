"""Pytrees: nested containers of leaves that every transformation accepts and returns.

Containers are tuples, lists, dicts (flattened in sorted-key order), ``OrderedDict`` (insertion
order), ``defaultdict`` (sorted), None (a container with no children), namedtuples, and any type
registered with :func:`register_pytree_node` (or its variants: ``register_pytree_with_keys``,
``register_dataclass``, ``register_static``, the ``*_class`` decorators). Everything else is a
leaf. The API is ``jax.tree_util``'s: the same leaf order, the same key paths and ``keystr``.

``tree_flatten`` returns the leaves in order plus a ``PyTreeDef`` that ``tree_unflatten`` turns
back into the same structure. Treedefs are hashable (``fx.jit`` keys its cache on them) and
compare their nodes' aux data by value. Aux data should be hashable; unhashable aux data is
compared through a canonical form taken when the tree is flattened (dicts by their items, lists
and tuples by their elements, NumPy arrays by dtype, shape and bytes), and anything else by
``==`` where that answers True or False, else by identity. Mutating aux data after flattening
does not change the treedef's identity.

Node types, key entries, the registration functions and ``Partial`` are defined in
:mod:`fx.pytree_registry` and re-exported here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import numpy as np

from fx.pytree_registry import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    Partial,
    SequenceKey,
    _node_of,
    is_tree_node,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
)

__all__ = [
    "DictKey", "FlattenedIndexKey", "GetAttrKey", "KeyEntry", "KeyPath", "Partial", "PyTreeDef",
    "SequenceKey", "all_leaves", "broadcast_prefix", "flatten_one_level",
    "flatten_one_level_with_keys", "is_tree_node", "keystr", "register_dataclass",
    "register_pytree_node", "register_pytree_node_class", "register_pytree_with_keys",
    "register_pytree_with_keys_class", "register_static", "tree_all", "tree_broadcast",
    "tree_flatten", "tree_flatten_with_path", "tree_leaves", "tree_leaves_with_path", "tree_map",
    "tree_map_with_path", "tree_reduce", "tree_reduce_associative", "tree_structure",
    "tree_transpose", "tree_unflatten", "treedef_children", "treedef_is_leaf", "treedef_tuple",
]

# --- treedefs ------------------------------------------------------------------------------------


class _ByEquality:
    """Canonical form of an unhashable object that has no better one: equal to another when
    ``==`` says True (identity when ``==`` does not give a bool); hashed by type."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self) -> int:
        return hash(type(self.obj))

    def __eq__(self, other) -> bool:
        if not isinstance(other, _ByEquality) or type(self.obj) is not type(other.obj):
            return False
        if self.obj is other.obj:
            return True
        try:
            same = self.obj == other.obj
        except Exception:
            return False
        return bool(same) if isinstance(same, (bool, np.bool_)) else False


def _canonical(x) -> Hashable:
    """A hashable stand-in for aux data ``x``: ``x`` itself when hashable, else a snapshot of
    its value (see the module docstring)."""
    try:
        hash(x)
        return x
    except TypeError:
        pass
    if isinstance(x, dict):
        return (type(x), frozenset((k, _canonical(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return (type(x), tuple(_canonical(v) for v in x))
    if isinstance(x, (set, bytearray)):
        return (type(x), frozenset(x) if isinstance(x, set) else bytes(x))
    if isinstance(x, np.ndarray):
        return (np.ndarray, x.dtype.str, x.shape, x.tobytes())
    return _ByEquality(x)


class PyTreeDef:
    """The structure of a pytree: a node type, its aux data and child structures; a leaf is
    ``PyTreeDef(None, None, ())`` (shown ``*``). Hashable and immutable; equal when the node
    types, aux data and children are.

    Example::

        >>> td = tree_structure({"a": (1, 2), "b": 3})
        >>> td, td.num_leaves, td.unflatten([4, 5, 6])
        (PyTreeDef({'a': (*, *), 'b': *}), 3, {'a': (4, 5), 'b': 6})
    """

    __slots__ = ("node_type", "aux", "_children", "_key", "_hash", "_num_leaves", "_num_nodes")

    def __init__(self, node_type: type | None, aux: Any, children: Iterable[PyTreeDef]):
        kids = tuple(children)
        key = None if aux is None else _canonical(aux)
        init = object.__setattr__
        init(self, "node_type", node_type)
        init(self, "aux", aux)
        init(self, "_children", kids)
        init(self, "_key", key)
        init(self, "_hash", hash((node_type, key, kids)))
        init(self, "_num_leaves", 1 if node_type is None else sum(c._num_leaves for c in kids))
        init(self, "_num_nodes", 1 + sum(c._num_nodes for c in kids))

    def __setattr__(self, name, value):
        raise AttributeError("PyTreeDef is immutable")

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return (self._hash == other._hash and self.node_type is other.node_type
                and self._key == other._key and self._children == other._children)

    def __reduce__(self):
        return (PyTreeDef, (self.node_type, self.aux, self._children))

    @property
    def num_leaves(self) -> int:
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        return self._num_nodes

    def children(self) -> list[PyTreeDef]:
        """The treedefs of the root's children."""
        return list(self._children)

    def node_data(self) -> tuple[type, Any] | None:
        """``(node_type, aux_data)`` of the root, or None for a leaf."""
        return None if self.node_type is None else (self.node_type, self.aux)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """``tree_unflatten(self, leaves)``."""
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """The subtrees of ``tree`` at this treedef's leaves (``tree`` must have this structure
        down to them); raises ``ValueError`` naming the key path where it does not."""
        return _flatten_up_to(self, tree, "flatten_up_to")

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The structure of this tree with every leaf replaced by a tree of structure
        ``inner``."""
        if not isinstance(inner, PyTreeDef):
            raise TypeError(f"PyTreeDef.compose: expected a PyTreeDef, got "
                            f"{type(inner).__name__}; pass tree_structure(inner_tree)")
        if self.node_type is None:
            return inner
        return PyTreeDef(self.node_type, self.aux, [c.compose(inner) for c in self._children])

    def __repr__(self) -> str:
        return f"PyTreeDef({_show(self)})"


_LEAF = PyTreeDef(None, None, ())


def _show(td: PyTreeDef) -> str:
    if td.node_type is None:
        return "*"
    kids = [_show(c) for c in td._children]
    if td.node_type is tuple:
        return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
    if td.node_type is list:
        return "[" + ", ".join(kids) + "]"
    if td.node_type is dict:
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(td.aux, kids)) + "}"
    if td.node_type is type(None):
        return "None"
    if _is_namedtuple(td.node_type):
        return f"{td.node_type.__name__}(" + ", ".join(kids) + ")"
    return f"{td.node_type.__name__}[{td.aux!r}](" + ", ".join(kids) + ")"


# --- flattening ----------------------------------------------------------------------------------


def _flatten(tree, is_leaf, with_path: bool, leaf_takes_path: bool = False):
    leaves: list[Any] = []

    def rec(x, path) -> PyTreeDef:
        if is_leaf is not None and (is_leaf(path, x) if leaf_takes_path else is_leaf(x)):
            leaves.append((path, x) if with_path else x)
            return _LEAF
        node = _node_of(type(x))
        if node is None:
            leaves.append((path, x) if with_path else x)
            return _LEAF
        if with_path:
            pairs, aux = node.keyed(x)
            kids = [rec(c, path + (k,)) for k, c in pairs]
        else:
            children, aux = node.flatten(x)
            kids = [rec(c, None) for c in children]
        return PyTreeDef(type(x), aux, kids)

    treedef = rec(tree, ())
    return leaves, treedef


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], PyTreeDef]:
    """``(leaves, treedef)`` of ``tree``; ``is_leaf(x)`` can stop the descent at ``x``.

    Example::

        >>> tree_flatten({"b": [1, 2], "a": None})
        ([1, 2], PyTreeDef({'a': None, 'b': [*, *]}))
    """
    return _flatten(tree, is_leaf, False)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like :func:`tree_flatten`, each leaf paired with its key path; ``is_leaf`` is called as
    ``is_leaf(path, x)`` when ``is_leaf_takes_path``.

    Example::

        >>> [(keystr(p), x) for p, x in tree_flatten_with_path({"a": [1, 2]})[0]]
        [("['a'][0]", 1), ("['a'][1]", 2)]
    """
    return _flatten(tree, is_leaf, True, is_leaf_takes_path)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of ``tree`` in flatten order."""
    return _flatten(tree, is_leaf, False)[0]


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[KeyPath, Any]]:
    """``(key_path, leaf)`` pairs in flatten order."""
    return _flatten(tree, is_leaf, True, is_leaf_takes_path)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The treedef of ``tree``."""
    return _flatten(tree, is_leaf, False)[1]


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild the pytree with structure ``treedef`` from ``leaves``."""
    if not isinstance(treedef, PyTreeDef):
        raise TypeError(f"tree_unflatten: expected a PyTreeDef as the first argument, got "
                        f"{type(treedef).__name__}; the call is tree_unflatten(treedef, leaves)")
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        few = "few" if len(leaves) < treedef.num_leaves else "many"
        raise ValueError(f"tree_unflatten: too {few} leaves for {treedef} "
                         f"(needs {treedef.num_leaves}, got {len(leaves)})")
    it = iter(leaves)

    def rec(td: PyTreeDef):
        if td.node_type is None:
            return next(it)
        return _node_of(td.node_type).unflatten(td.aux, [rec(c) for c in td._children])

    return rec(treedef)


class _StructureError(Exception):
    """Where (a key path) and how a tree departs from a treedef; callers word the error."""


def _flatten_up_to(treedef: PyTreeDef, tree, what: str) -> list:
    try:
        return _subtrees_at_leaves(treedef, tree)
    except _StructureError as e:
        raise ValueError(f"{what}: the tree does not have the structure {treedef}: {e}") from None


def _subtrees_at_leaves(treedef: PyTreeDef, tree) -> list:
    out: list = []

    def fail(trail, detail):
        path = tuple(_node_of(type(parent)).keyed(parent)[0][i][0] for parent, i in trail)
        raise _StructureError(f"at {keystr(path) or 'the root'}, {detail}")

    def rec(td, x, trail):
        if td.node_type is None:
            out.append(x)
            return
        name = td.node_type.__name__
        if type(x) is not td.node_type:
            fail(trail, f"expected {name}, got {type(x).__name__}")
        children, aux = _node_of(td.node_type).flatten(x)
        children = list(children)
        if len(children) != len(td._children):
            n = len(td._children)
            fail(trail, f"expected {name} with {n} {'child' if n == 1 else 'children'}, got "
                        f"{len(children)}")
        if (None if aux is None else _canonical(aux)) != td._key:
            fail(trail, f"expected {name} with aux data {td.aux!r}, got {aux!r}")
        for i, (c, ctd) in enumerate(zip(children, td._children)):
            rec(ctd, c, trail + ((x, i),))

    rec(treedef, tree, ())
    return out


def _rest_leaves(treedef: PyTreeDef, rest: tuple, what: str) -> list[list]:
    out = []
    for i, r in enumerate(rest):
        try:
            out.append(_subtrees_at_leaves(treedef, r))
        except _StructureError as e:
            raise ValueError(
                f"{what}: tree argument {i + 1} does not match the structure of the first tree "
                f"{treedef}: {e}; every tree must have the first one's structure down to its "
                "leaves") from None
    return out


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Apply ``f`` leaf-wise to ``tree`` and the trees in ``rest``, which must have ``tree``'s
    structure down to its leaves (where they may hold whole subtrees, passed to ``f``).

    Example::

        >>> tree_map(lambda x, y: x + y, {"a": 1, "b": (2,)}, {"a": 10, "b": (20,)})
        {'a': 11, 'b': (22,)}
    """
    leaves, treedef = _flatten(tree, is_leaf, False)
    others = _rest_leaves(treedef, rest, "tree_map")
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """Like :func:`tree_map` with ``f(key_path, leaf, *rest_leaves)``.

    Example::

        >>> tree_map_with_path(lambda p, x: keystr(p), {"a": [0]})
        {'a': ["['a'][0]"]}
    """
    pairs, treedef = _flatten(tree, is_leaf, True, is_leaf_takes_path)
    others = _rest_leaves(treedef, rest, "tree_map_with_path")
    return tree_unflatten(treedef, [f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


def _is_namedtuple(t) -> bool:
    return isinstance(t, type) and issubclass(t, tuple) and hasattr(t, "_fields")


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Any]:
    """``(children, aux_data)`` of the root node of ``tree`` (for a namedtuple the aux data is
    its class, as jax); ``ValueError`` for a leaf."""
    node = _node_of(type(tree))
    if node is None:
        raise ValueError(f"flatten_one_level: {type(tree).__name__} is a leaf, not a pytree node")
    children, aux = node.flatten(tree)
    return children, type(tree) if _is_namedtuple(type(tree)) else aux


def flatten_one_level_with_keys(tree: Any) -> tuple[list[tuple[KeyEntry, Any]], Any]:
    """``([(key, child), ...], aux_data)`` of the root node of ``tree``."""
    node = _node_of(type(tree))
    if node is None:
        raise ValueError(f"flatten_one_level_with_keys: {type(tree).__name__} is a leaf, not a "
                         "pytree node")
    pairs, aux = node.keyed(tree)
    return pairs, type(tree) if _is_namedtuple(type(tree)) else aux


# --- treedef helpers and reductions --------------------------------------------------------------


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The treedefs of the root's children."""
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """Whether ``treedef`` is one node: a leaf, or a container with no children (``None``,
    ``()``), as in jax."""
    return treedef.num_nodes == 1


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The treedef of a tuple whose children have the structures ``treedefs``."""
    treedefs = tuple(treedefs)
    bad = [type(t).__name__ for t in treedefs if not isinstance(t, PyTreeDef)]
    if bad:
        raise TypeError(f"treedef_tuple: expected PyTreeDefs, got {', '.join(bad)}")
    return PyTreeDef(tuple, None, treedefs)


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every element of ``iterable`` is a leaf (None is a container, not a leaf)."""
    return all((is_leaf is not None and is_leaf(x)) or _node_of(type(x)) is None
               for x in iterable)


class _Missing:
    def __repr__(self) -> str:
        return "<no initializer>"


_MISSING: Any = _Missing()


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _MISSING,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``functools.reduce(function, tree_leaves(tree), initializer)``.

    Example::

        >>> tree_reduce(lambda a, b: a + b, {"a": 1, "b": (2, 3)})
        6
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _MISSING:
        if not leaves:
            raise TypeError("tree_reduce: the tree has no leaves and no initializer was given; "
                            "pass initializer=")
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *,
                            identity: Any = _MISSING,
                            is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Reduce the leaves with an associative ``operation`` as a balanced binary tree (depth
    log2 of the leaf count); ``identity`` is the result for a tree without leaves."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _MISSING:
            raise TypeError("tree_reduce_associative: the tree has no leaves and no identity "
                            "was given; pass identity=")
        return identity

    def rec(lo, hi):
        if hi - lo == 1:
            return leaves[lo]
        mid = lo + (hi - lo) // 2
        return operation(rec(lo, mid), rec(mid, hi))

    return rec(0, len(leaves))


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every leaf is truthy (True for a tree without leaves)."""
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turn a tree of structure ``outer`` of trees of structure ``inner`` into an ``inner``
    tree of ``outer`` trees; ``inner_treedef=None`` takes it from the first outer leaf.

    Example::

        >>> tree_transpose(tree_structure([0, 0]), tree_structure((0, 0)), [(1, 2), (3, 4)])
        ([1, 3], [2, 4])
    """
    if inner_treedef is None:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        if not subtrees:
            raise ValueError("tree_transpose: the outer structure has no leaves, so the inner "
                             "structure cannot be inferred; pass inner_treedef")
        inner_treedef = tree_structure(subtrees[0])
    leaves, treedef = tree_flatten(pytree_to_transpose)
    expected = outer_treedef.compose(inner_treedef)
    if treedef != expected:
        raise TypeError(f"tree_transpose: the tree has structure {treedef}, but outer "
                        f"{outer_treedef} of inner {inner_treedef} is {expected}")
    n_in = inner_treedef.num_leaves
    rows = [leaves[i * n_in:(i + 1) * n_in] for i in range(outer_treedef.num_leaves)]
    columns = [tree_unflatten(outer_treedef, col) for col in zip(*rows)] if rows else \
        [tree_unflatten(outer_treedef, []) for _ in range(n_in)]
    return tree_unflatten(inner_treedef, columns)


# --- prefixes ------------------------------------------------------------------------------------


def _broadcast(prefix_tree, full_tree, is_leaf, none_is_leaf: bool) -> list:
    out: list = []

    def prefix_leaf(x) -> bool:
        return ((none_is_leaf and x is None) or (is_leaf is not None and is_leaf(x))
                or _node_of(type(x)) is None)

    def rec(p, f, path):
        if prefix_leaf(p):
            out.extend([p] * len(tree_leaves(f, is_leaf)))
            return
        pnode, fnode = _node_of(type(p)), _node_of(type(f))
        if type(p) is not type(f) or fnode is None or (is_leaf is not None and is_leaf(f)):
            raise ValueError(f"tree prefix mismatch at {path or 'root'}: expected "
                             f"{type(f).__name__}, got {type(p).__name__}")
        pc, paux = pnode.keyed(p)
        fc, faux = fnode.keyed(f)
        if _canonical(paux) != _canonical(faux) or len(pc) != len(fc):
            raise ValueError(
                f"tree prefix mismatch at {path or 'root'}: {_describe(p)} vs {_describe(f)}"
            )
        for (k, a), (_, b) in zip(pc, fc):
            rec(a, b, f"{path}{k}")

    rec(prefix_tree, full_tree, "")
    return out


def broadcast_prefix(prefix_tree: Any, full_tree: Any,
                     is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """Leaves of ``prefix_tree`` repeated so there is one per leaf of ``full_tree``; None in
    ``prefix_tree`` counts as a leaf (vmap's ``in_axes``/``out_axes`` convention).

    ``prefix_tree`` must have the structure of ``full_tree`` cut off at some nodes. Raises
    ``ValueError`` naming the path where they disagree.
    """
    return _broadcast(prefix_tree, full_tree, is_leaf, none_is_leaf=True)


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``full_tree``'s structure with each leaf taken from the ``prefix_tree`` leaf above it.

    Example::

        >>> tree_broadcast((1, {"a": 2}), ((3, 4), {"a": [5, 6]}))
        ((1, 1), {'a': [2, 2]})
    """
    values = _broadcast(prefix_tree, full_tree, is_leaf, none_is_leaf=False)
    return tree_unflatten(tree_structure(full_tree, is_leaf), values)


def _describe(x) -> str:
    if isinstance(x, dict):
        return f"dict with keys {sorted(x)}"
    if isinstance(x, (list, tuple)):
        return f"{type(x).__name__} of length {len(x)}"
    children, aux = _node_of(type(x)).flatten(x)
    n = len(list(children))
    return (f"{type(x).__name__} with {n} {'child' if n == 1 else 'children'} and aux data "
            f"{aux!r}")

