"""Tests of fx.tree_util: flatten/unflatten round trips, registered nodes, prefixes, errors."""

from __future__ import annotations

import collections

import jax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fx import tree_util as tu

Point = collections.namedtuple("Point", ["x", "y"])


class Pair:
    """A custom container registered below: two children plus a hashable tag."""

    def __init__(self, a, b, tag="t"):
        self.a, self.b, self.tag = a, b, tag

    def __eq__(self, other):
        return (
            isinstance(other, Pair)
            and (self.a, self.b, self.tag) == (other.a, other.b, other.tag)
        )

    def __repr__(self):
        return f"Pair({self.a!r}, {self.b!r}, {self.tag!r})"


tu.register_pytree_node(Pair, lambda p: ((p.a, p.b), p.tag), lambda tag, c: Pair(*c, tag))
jax.tree_util.register_pytree_node(Pair, lambda p: ((p.a, p.b), p.tag),
                                   lambda tag, c: Pair(*c, tag))

# (tree, its leaves in fx's (= jax's) order)
CASES = [
    (1, [1]),
    ((), []),
    ([], []),
    ({}, []),
    (None, []),
    ((1, 2), [1, 2]),
    ([1, [2, 3]], [1, 2, 3]),
    ({"b": 1, "a": 2, "c": 3}, [2, 1, 3]),
    ({"z": [1, None, 2], "a": (3,)}, [3, 1, 2]),
    (Point(1, (2, 3)), [1, 2, 3]),
    (Point(x={"q": 1, "p": 2}, y=None), [2, 1]),
    (Pair(1, [2, 3]), [1, 2, 3]),
    ([Pair(Point(1, 2), None, "u"), {"k": Pair(3, 4)}], [1, 2, 3, 4]),
    ((None, (None,), [None, 5]), [5]),
]


@pytest.mark.parametrize("tree,leaves", CASES, ids=[repr(c[0]) for c in CASES])
def test_flatten_unflatten_round_trip(tree, leaves):
    got, treedef = tu.tree_flatten(tree)
    assert got == leaves
    assert tu.tree_unflatten(treedef, got) == tree
    assert tu.tree_leaves(tree) == leaves
    assert tu.tree_structure(tree) == treedef
    assert treedef.num_leaves == len(leaves)
    assert hash(treedef) == hash(tu.tree_structure(tree))
    # Leaf order agrees with jax (the oracle), including sorted dict keys.
    assert got == jax.tree_util.tree_leaves(tree)


@pytest.mark.parametrize("tree,leaves", CASES, ids=[repr(c[0]) for c in CASES])
def test_tree_map_matches_jax(tree, leaves):
    assert tu.tree_map(lambda v: v * 10, tree) == jax.tree_util.tree_map(lambda v: v * 10, tree)
    assert tu.tree_map(lambda a, b: a - b, tree, tree) == tu.tree_map(lambda v: 0, tree)


def test_num_leaves_and_nodes():
    td = tu.tree_structure({"a": (1, 2), "b": [3]})
    assert td.num_leaves == 3
    assert td.num_nodes == 6  # dict, tuple, list and three leaves
    assert tu.treedef_is_leaf(tu.tree_structure(7))
    assert not tu.treedef_is_leaf(td)
    kids = tu.treedef_children(td)
    assert [k.num_leaves for k in kids] == [2, 1]


def test_treedef_equality_distinguishes_containers():
    s = tu.tree_structure
    assert s((1, 2)) != s([1, 2])
    assert s((1, 2)) != s(Point(1, 2))
    assert s({"a": 1}) != s({"b": 1})
    assert s(None) != s(())
    assert s(None) != s(1)  # None is an empty container, not a leaf
    assert s(Pair(1, 2, "t")) != s(Pair(1, 2, "u"))  # aux data is part of the structure
    assert s({"a": 1, "b": 2}) == s({"b": 5, "a": 6})


def test_treedef_repr():
    td = tu.tree_structure({"b": [1, None], "a": (2,)})
    assert repr(td) == "PyTreeDef({'a': (*,), 'b': [*, None]})"


def test_namedtuple_keeps_type():
    out = tu.tree_map(lambda v: v + 1, Point(1, 2))
    assert type(out) is Point and out == Point(2, 3)


def test_is_leaf_stops_descent():
    tree = {"a": (1, 2), "b": [3, (4, 5)]}
    leaves, td = tu.tree_flatten(tree, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), 3, (4, 5)]
    assert tu.tree_unflatten(td, leaves) == tree
    out = tu.tree_map(lambda t: sum(t) if isinstance(t, tuple) else t, tree,
                      is_leaf=lambda x: isinstance(x, tuple))
    assert out == {"a": 3, "b": [3, 9]}


def test_unregistered_objects_are_leaves():
    obj = object()
    assert tu.tree_leaves([obj, "s", 1.5]) == [obj, "s", 1.5]


def test_register_twice_raises():
    with pytest.raises(ValueError, match="Pair is already registered"):
        tu.register_pytree_node(Pair, lambda p: ((), None), lambda a, c: None)


def test_flatten_with_path():
    tree = {"b": [1, Point(2, 3)], "a": 4}
    paths = tu.tree_flatten_with_path(tree)[0]
    D, S, A = tu.DictKey, tu.SequenceKey, tu.GetAttrKey
    assert paths == [((D("a"),), 4), ((D("b"), S(0)), 1), ((D("b"), S(1), A("x")), 2),
                     ((D("b"), S(1), A("y")), 3)]
    assert [tu.keystr(p) for p, _ in paths] == ["['a']", "['b'][0]", "['b'][1].x", "['b'][1].y"]


# --- broadcast_prefix (vmap's in_axes) ----------------------------------------------------------


def test_broadcast_prefix():
    full = ({"w": [1, 2], "b": 3}, (4, 5))
    assert tu.broadcast_prefix(0, full) == [0] * 5
    assert tu.broadcast_prefix((0, 1), full) == [0, 0, 0, 1, 1]
    assert tu.broadcast_prefix(({"w": None, "b": 1}, (0, 2)), full) == [1, None, None, 0, 2]
    assert tu.broadcast_prefix((None,), ((1, 2),)) == [None, None]


@pytest.mark.parametrize("prefix,full,message", [
    ((0, 1), (1, 2, 3), r"at root: tuple of length 2 vs tuple of length 3"),
    ({"a": 0}, {"b": 1}, r"at root: dict with keys \['a'\] vs dict with keys \['b'\]"),
    ([0, 1], (1, 2), r"at root: expected tuple, got list"),
    ((0, [1, 2]), (1, [2]), r"at \[1\]: list of length 2 vs list of length 1"),
    ({"a": (0, 0)}, {"a": 5}, r"at \['a'\]: expected int, got tuple"),
])
def test_broadcast_prefix_mismatch(prefix, full, message):
    with pytest.raises(ValueError, match="tree prefix mismatch " + message):
        tu.broadcast_prefix(prefix, full)


# --- errors -------------------------------------------------------------------------------------


def test_tree_map_structure_mismatch():
    with pytest.raises(ValueError, match=r"tree_map: tree argument 1 does not match the "
                                         r"structure of the first tree PyTreeDef\(\[\*, \*\]\): "
                                         r"at the root, expected list, got tuple"):
        tu.tree_map(lambda a, b: a, [1, 2], (1, 2))
    with pytest.raises(ValueError, match=r"at the root, expected dict with 1 child, got 2"):
        tu.tree_map(lambda a, b: a, {"a": 1}, {"a": 1, "b": 2})
    with pytest.raises(ValueError, match=r"tree argument 2 .* at \['b'\]\[1\], expected Pair "
                                         r"with aux data 't', got 'u'"):
        tu.tree_map(lambda a, b, c: a, {"b": [1, Pair(1, 2)]}, {"b": [1, Pair(3, 4)]},
                    {"b": [1, Pair(1, 2, "u")]})
    with pytest.raises(ValueError, match=r"at the root, expected list with 2 children, got 1"):
        tu.tree_map(lambda a, b: a, [1, 2], [1])


def test_unflatten_wrong_leaf_count():
    td = tu.tree_structure({"a": (1, 2), "b": 3})
    with pytest.raises(ValueError, match=r"too few leaves .* \(needs 3, got 2\)"):
        tu.tree_unflatten(td, [1, 2])
    with pytest.raises(ValueError, match=r"too many leaves .* \(needs 3, got 4\)"):
        tu.tree_unflatten(td, [1, 2, 3, 4])
    assert tu.tree_unflatten(tu.tree_structure(None), []) is None


# --- random pytrees -----------------------------------------------------------------------------

_leaf = st.integers(-5, 5)
_keys = st.text("abcxyz", min_size=1, max_size=3)


def _extend(children):
    return st.one_of(
        st.tuples(children, children),
        st.lists(children, max_size=3),
        st.dictionaries(_keys, children, max_size=3),
        st.builds(Point, children, children),
        st.builds(Pair, children, children, st.sampled_from(["p", "q"])),
        st.just(None),
    )


pytrees = st.recursive(_leaf, _extend, max_leaves=12)


@given(pytrees)
def test_random_pytrees_round_trip_like_jax(tree):
    leaves, td = tu.tree_flatten(tree)
    assert leaves == jax.tree_util.tree_leaves(tree)
    assert tu.tree_unflatten(td, leaves) == tree
    assert td.num_leaves == len(leaves)
    # Rebuilding from new leaves puts them back in flatten order.
    renamed = tu.tree_unflatten(td, list(range(len(leaves))))
    assert tu.tree_leaves(renamed) == list(range(len(leaves)))
    assert tu.tree_structure(renamed) == td
    assert tu.tree_map(lambda v: -v, tree) == jax.tree_util.tree_map(lambda v: -v, tree)
    assert tu.broadcast_prefix(1, tree) == [1] * len(leaves)
    assert tu.broadcast_prefix(tree, tree) == leaves
