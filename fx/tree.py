"""``fx.tree``: the short names of :mod:`fx.tree_util`, as ``jax.tree``.

``fx.tree.map(f, tree)`` is ``fx.tree_util.tree_map(f, tree)`` and so on; the functions are
the same objects, so behaviour and errors are those documented in :mod:`fx.tree_util`.

Example::

    >>> import fx
    >>> fx.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
    {'a': 2, 'b': (4, 6)}
    >>> fx.tree.leaves_with_path({"a": [1]})
    [((DictKey(key='a'), SequenceKey(idx=0)), 1)]
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fx import tree_util

__all__ = [
    "all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map",
    "map_with_path", "reduce", "reduce_associative", "static", "structure", "transpose",
    "unflatten",
]

all = tree_util.tree_all  # jax.tree shadows the builtins all and map on purpose
broadcast = tree_util.tree_broadcast
flatten = tree_util.tree_flatten
flatten_with_path = tree_util.tree_flatten_with_path
leaves = tree_util.tree_leaves
leaves_with_path = tree_util.tree_leaves_with_path
map = tree_util.tree_map
map_with_path = tree_util.tree_map_with_path
reduce = tree_util.tree_reduce
reduce_associative = tree_util.tree_reduce_associative
structure = tree_util.tree_structure
transpose = tree_util.tree_transpose
unflatten = tree_util.tree_unflatten


def static(**kwargs: Any) -> Any:
    """A ``dataclasses.field(**kwargs)`` marked ``static``: with
    :func:`fx.tree_util.register_dataclass` the field is aux data (part of the treedef, so it
    must be hashable), not a child.

    Example::

        @fx.tree_util.register_dataclass
        @dataclasses.dataclass
        class Dense:
            w: fx.Array
            activation: str = fx.tree.static(default="relu")
    """
    metadata = {**(kwargs.pop("metadata", None) or {}), "static": True}
    return dataclasses.field(metadata=metadata, **kwargs)
