"""Pytrees: nested containers of leaves that every transformation accepts and returns.

Containers are tuples, lists, dicts (flattened in sorted-key order), None (a container with no
children), namedtuples, and any type registered with :func:`register_pytree_node`. Everything
else is a leaf. ``tree_flatten`` returns the leaves in order plus a hashable ``PyTreeDef`` that
``tree_unflatten`` turns back into the same structure.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, NamedTuple


class _NodeType(NamedTuple):
    to_iterable: Callable[[Any], tuple[Any, Hashable]]
    from_iterable: Callable[[Hashable, Any], Any]


_registry: dict[type, _NodeType] = {}


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Any, Hashable]],
    unflatten_func: Callable[[Hashable, Any], Any],
) -> None:
    """Make ``nodetype`` a container.

    ``flatten_func(x) -> (children, aux_data)`` and ``unflatten_func(aux_data, children) -> x``,
    where ``aux_data`` is hashable and carries everything about ``x`` that is not a child.

    Example::

        class Point:
            def __init__(self, x, y): self.x, self.y = x, y
        register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda _, c: Point(*c))
    """
    if nodetype in _registry:
        raise ValueError(f"register_pytree_node: {nodetype.__name__} is already registered")
    _registry[nodetype] = _NodeType(flatten_func, unflatten_func)


def _dict_flatten(d):
    keys = sorted(d)
    return [d[k] for k in keys], tuple(keys)


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
register_pytree_node(list, lambda t: (t, None), lambda _, c: list(c))
register_pytree_node(dict, _dict_flatten, lambda keys, c: dict(zip(keys, c)))
register_pytree_node(type(None), lambda _: ((), None), lambda _, c: None)


def _node_type(x) -> _NodeType | None:
    t = type(x)
    node = _registry.get(t)
    if node is None and issubclass(t, tuple) and hasattr(t, "_fields"):
        node = _NodeType(lambda nt: (tuple(nt), None), lambda _, c, t=t: t(*c))
    return node


@dataclass(frozen=True)
class PyTreeDef:
    """The structure of a pytree: a node type, its aux data and child structures; leaves are
    ``PyTreeDef(None, None, ())`` ("*")."""

    node_type: type | None
    aux: Hashable
    children: tuple[PyTreeDef, ...]

    @property
    def num_leaves(self) -> int:
        if self.node_type is None:
            return 1
        return sum(c.num_leaves for c in self.children)

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children)

    def __repr__(self) -> str:
        return f"PyTreeDef({_show(self)})"


_LEAF = PyTreeDef(None, None, ())


def _show(td: PyTreeDef) -> str:
    if td.node_type is None:
        return "*"
    kids = [_show(c) for c in td.children]
    if td.node_type is tuple:
        return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
    if td.node_type is list:
        return "[" + ", ".join(kids) + "]"
    if td.node_type is dict:
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(td.aux, kids)) + "}"
    if td.node_type is type(None):
        return "None"
    return f"{td.node_type.__name__}[{td.aux!r}](" + ", ".join(kids) + ")"


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """``(leaves, treedef)`` of ``tree``; ``is_leaf(x)`` can stop the descent at ``x``."""
    leaves: list[Any] = []

    def rec(x) -> PyTreeDef:
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return _LEAF
        node = _node_type(x)
        if node is None:
            leaves.append(x)
            return _LEAF
        children, aux = node.to_iterable(x)
        return PyTreeDef(type(x), aux, tuple(rec(c) for c in children))

    treedef = rec(tree)
    return leaves, treedef


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    """Rebuild the pytree with structure ``treedef`` from ``leaves``."""
    leaves = list(leaves)
    it = iter(leaves)

    def rec(td: PyTreeDef):
        if td.node_type is None:
            return next(it)
        children = [rec(c) for c in td.children]
        node = _node_type_of_def(td)
        return node.from_iterable(td.aux, children)

    try:
        out = rec(treedef)
    except StopIteration:
        raise ValueError(
            f"tree_unflatten: too few leaves for {treedef} "
            f"(needs {treedef.num_leaves}, got {len(leaves)})"
        ) from None
    if next(it, _SENTINEL) is not _SENTINEL:
        raise ValueError(
            f"tree_unflatten: too many leaves for {treedef} "
            f"(needs {treedef.num_leaves}, got {len(leaves)})"
        )
    return out


_SENTINEL = object()


def _node_type_of_def(td: PyTreeDef) -> _NodeType:
    node = _registry.get(td.node_type)
    if node is None:  # namedtuple
        t = td.node_type
        node = _NodeType(lambda nt: (tuple(nt), None), lambda _, c: t(*c))
    return node


def tree_leaves(tree, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree, *rest, is_leaf=None):
    """Apply ``f`` leaf-wise to ``tree`` and the trees in ``rest``, which must share its
    structure."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        r_leaves, r_def = tree_flatten(r, is_leaf)
        if r_def != treedef:
            raise ValueError(f"tree_map: structures differ: {treedef} vs {r_def}")
        others.append(r_leaves)
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return list(treedef.children)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.node_type is None


def broadcast_prefix(prefix_tree, full_tree, is_leaf=None) -> list:
    """Leaves of ``prefix_tree`` repeated so there is one per leaf of ``full_tree``.

    ``prefix_tree`` must have the structure of ``full_tree`` cut off at some nodes (as vmap's
    ``in_axes``). Raises ``ValueError`` naming the path where they disagree.
    """
    out: list = []

    def rec(p, f, path):
        if _is_prefix_leaf(p):
            out.extend([p] * len(tree_leaves(f, is_leaf)))
            return
        pnode, fnode = _node_type(p), _node_type(f)
        if type(p) is not type(f) or pnode is None or fnode is None:
            raise ValueError(
                f"tree prefix mismatch at {path or 'root'}: expected {type(f).__name__}, "
                f"got {type(p).__name__}"
            )
        pc, paux = pnode.to_iterable(p)
        fc, faux = fnode.to_iterable(f)
        if paux != faux or len(pc) != len(fc):
            raise ValueError(
                f"tree prefix mismatch at {path or 'root'}: {_describe(p)} vs {_describe(f)}"
            )
        keys = paux if isinstance(p, dict) else range(len(pc))
        for k, a, b in zip(keys, pc, fc):
            rec(a, b, f"{path}[{k!r}]")

    rec(prefix_tree, full_tree, "")
    return out


def _is_prefix_leaf(x) -> bool:
    return x is None or _node_type(x) is None


def _describe(x) -> str:
    if isinstance(x, dict):
        return f"dict with keys {sorted(x)}"
    return f"{type(x).__name__} of length {len(x)}"


def keystr(path: tuple) -> str:
    return "".join(f"[{k!r}]" for k in path)


def tree_flatten_with_path(tree) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
    """Like :func:`tree_flatten` but each leaf comes with its key path (a tuple of keys)."""
    out: list = []

    def rec(x, path):
        node = _node_type(x)
        if node is None:
            out.append((path, x))
            return
        children, aux = node.to_iterable(x)
        keys = aux if isinstance(x, dict) else range(len(children))
        if not isinstance(x, (dict, list, tuple)) and x is not None:
            keys = range(len(children))
        for k, c in zip(keys, children):
            rec(c, path + (k,))

    rec(tree, ())
    return out, tree_structure(tree)
