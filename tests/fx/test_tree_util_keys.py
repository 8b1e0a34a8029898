"""fx.tree_util and fx.tree against jax (the oracle): key paths and keystr, the registration
front doors, Partial, reductions, transposes, treedef methods, treedef hashing with unhashable
aux data (through fx.jit's cache), and a coverage check of the public names."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import operator

import jax
import jax.tree_util as jtu
import numpy as np
import pytest
from harness import run_doctests
from hypothesis import given
from hypothesis import strategies as st

import fx
import fx.flatten_util
import fx.numpy as fnp
import fx.pytree_registry
from fx import tree_util as tu

Point = collections.namedtuple("Point", ["x", "y"])


class Box:
    """Registered in both libraries without keys: children get FlattenedIndexKey."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __eq__(self, other):
        return type(other) is Box and (self.a, self.b) == (other.a, other.b)


for _m in (tu, jtu):
    _m.register_pytree_node(Box, lambda b: ((b.a, b.b), "box"), lambda _, c: Box(*c))


class Keyed:
    """Registered with keys in both libraries (each with its own key classes)."""

    def __init__(self, w, b):
        self.w, self.b = w, b

    def __eq__(self, other):
        return type(other) is Keyed and (self.w, self.b) == (other.w, other.b)


for _m in (tu, jtu):
    _m.register_pytree_with_keys(
        Keyed, lambda k, m=_m: (((m.GetAttrKey("w"), k.w), (m.DictKey("bias"), k.b)), None),
        lambda _, c: Keyed(*c))


@tu.register_pytree_node_class
@jtu.register_pytree_node_class
class Scaled:
    def __init__(self, v, scale):
        self.v, self.scale = v, scale

    def __eq__(self, other):
        return type(other) is Scaled and (self.v, self.scale) == (other.v, other.scale)

    def tree_flatten(self):
        return (self.v,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
        return cls(children[0], scale)


@tu.register_pytree_with_keys_class
@jtu.register_pytree_with_keys_class
class KeyedClass:
    def __init__(self, p, q):
        self.p, self.q = p, q

    def __eq__(self, other):
        return type(other) is KeyedClass and (self.p, self.q) == (other.p, other.q)

    def tree_flatten_with_keys(self):
        m = tu if _building_for is tu else jtu
        return ((m.GetAttrKey("p"), self.p), (m.GetAttrKey("q"), self.q)), None

    @classmethod
    def tree_unflatten(cls, _, children):
        return cls(*children)


_building_for = tu  # which library's key classes KeyedClass hands out


@tu.register_dataclass
@jtu.register_dataclass
@dataclasses.dataclass
class Layer:
    w: object
    b: object
    name: str = fx.tree.static(default="dense")
    act: str = dataclasses.field(default="relu", metadata={"static": True})


@tu.register_static
@jtu.register_static
@dataclasses.dataclass(frozen=True)
class Config:
    depth: int


TREES = [
    1,
    None,
    (),
    [1, [2, 3]],
    {"b": [1, Point(2, (3,))], "a": None, "c": (4,)},
    collections.OrderedDict([("z", 1), ("a", [2, 3])]),
    collections.defaultdict(list, {"y": 1, "x": (2,)}),
    [Box(1, {"k": 2}), Box((3, 4), None)],
    {"m": Keyed(1, [2, 3])},
    (Scaled([1, 2], 0.5), Scaled(3, 2.0)),
    KeyedClass(1, (2, Point(3, 4))),
    [Layer(1, (2, 3)), Layer(4, 5, "out", "id")],
    [Config(3), 1, (Config(4), 2)],
    {"0": 1, "1": [2]},
]
IDS = [type(t).__name__ + str(i) for i, t in enumerate(TREES)]


def _key_value(k):
    """A library-neutral form of a key entry: (kind, value)."""
    for name, attr in (("SequenceKey", "idx"), ("DictKey", "key"), ("GetAttrKey", "name"),
                       ("FlattenedIndexKey", "key")):
        if type(k).__name__ == name:
            return name, getattr(k, attr)
    raise AssertionError(f"unexpected key entry {k!r}")


def _neutral(pairs):
    return [(tuple(_key_value(k) for k in path), leaf) for path, leaf in pairs]


@contextlib.contextmanager
def _jax_keys():
    """KeyedClass hands out jax's key classes inside this block."""
    global _building_for
    _building_for = jtu
    try:
        yield
    finally:
        _building_for = tu


def _jax_pairs(tree):
    with _jax_keys():
        return jtu.tree_flatten_with_path(tree)[0]


@pytest.mark.parametrize("tree", TREES, ids=IDS)
def test_paths_leaves_and_keystr_match_jax(tree):
    pairs, td = tu.tree_flatten_with_path(tree)
    jpairs = _jax_pairs(tree)
    assert _neutral(pairs) == _neutral(jpairs)
    assert [tu.keystr(p) for p, _ in pairs] == [jtu.keystr(p) for p, _ in jpairs]
    assert ([tu.keystr(p, simple=True, separator="/") for p, _ in pairs]
            == [jtu.keystr(p, simple=True, separator="/") for p, _ in jpairs])
    assert tu.tree_leaves(tree) == jtu.tree_leaves(tree)
    assert [x for _, x in tu.tree_leaves_with_path(tree)] == tu.tree_leaves(tree)
    assert td == tu.tree_structure(tree)
    assert td.num_leaves == jtu.tree_structure(tree).num_leaves
    assert td.num_nodes == jtu.tree_structure(tree).num_nodes
    assert tu.tree_unflatten(td, tu.tree_leaves(tree)) == tree
    # tree_map and tree_map_with_path rebuild the same containers as jax.
    f = lambda x: (x, "seen")
    assert tu.tree_map(f, tree) == jtu.tree_map(f, tree)
    got = tu.tree_map_with_path(lambda p, x: tu.keystr(p), tree)
    with _jax_keys():
        assert got == jtu.tree_map_with_path(lambda p, x: jtu.keystr(p), tree)


def test_key_entries_behave_as_jax():
    for fk, jk in [(tu.SequenceKey(2), jtu.SequenceKey(2)), (tu.DictKey("a"), jtu.DictKey("a")),
                   (tu.DictKey(3), jtu.DictKey(3)), (tu.GetAttrKey("w"), jtu.GetAttrKey("w")),
                   (tu.FlattenedIndexKey(1), jtu.FlattenedIndexKey(1))]:
        assert str(fk) == str(jk) and repr(fk) == repr(jk)
        assert hash(fk) == hash(type(fk)(*[getattr(fk, f) for f in fk.__match_args__]))
    assert tu.DictKey("a") != tu.GetAttrKey("a")
    assert tu.keystr(("a", 1)) == jtu.keystr(("a", 1)) == "a1"
    match tu.SequenceKey(4):
        case tu.SequenceKey(idx=i):
            assert i == 4


def test_is_leaf_with_and_without_path():
    tree = {"a": (1, 2), "b": [3, (4,)]}
    for kw in [dict(is_leaf=lambda x: isinstance(x, tuple)),
               dict(is_leaf=lambda p, x: len(p) == 2, is_leaf_takes_path=True)]:
        jkw = dict(kw)
        if "is_leaf_takes_path" in kw:
            jkw["is_leaf"] = lambda p, x: len(p) == 2
        assert _neutral(tu.tree_flatten_with_path(tree, **kw)[0]) == _neutral(
            jtu.tree_flatten_with_path(tree, **jkw)[0])
        g = lambda p, x: (len(p), x)
        assert tu.tree_map_with_path(g, tree, **kw) == jtu.tree_map_with_path(g, tree, **jkw)
    assert tu.tree_leaves([1, None], is_leaf=lambda x: x is None) == [1, None]


def test_tree_map_takes_subtrees_of_the_other_trees_like_jax():
    a, b = [1, 2], [(1, 2), {"k": 3}]
    f = lambda x, y: (x, y)
    assert tu.tree_map(f, a, b) == jtu.tree_map(f, a, b)
    g = lambda p, x, y: (tu.keystr(p), y)
    assert tu.tree_map_with_path(g, a, b) == [("[0]", (1, 2)), ("[1]", {"k": 3})]


# --- reductions, predicates, treedef helpers -----------------------------------------------------


def test_reductions_match_jax():
    tree = {"b": (2, 3), "a": [1, None, 4]}
    assert tu.tree_reduce(operator.add, tree) == jtu.tree_reduce(operator.add, tree) == 10
    assert tu.tree_reduce(operator.sub, tree, 100) == jtu.tree_reduce(operator.sub, tree, 100)
    cat = lambda x, y: f"({x}{y})"
    for n in range(1, 9):
        letters = list("abcdefgh"[:n])
        assert (tu.tree_reduce_associative(cat, letters)
                == jtu.tree_reduce_associative(cat, letters))
    assert tu.tree_reduce_associative(operator.add, [], identity=0) == 0
    with pytest.raises(TypeError, match="tree_reduce: the tree has no leaves .* initializer="):
        tu.tree_reduce(operator.add, [None])
    with pytest.raises(TypeError, match="tree_reduce_associative: .* identity="):
        tu.tree_reduce_associative(operator.add, {})
    for t in [[1, True, (2,)], [1, 0], [], {"a": None}, (1, [False])]:
        assert tu.tree_all(t) == jtu.tree_all(t)
    for it, kw in [([1, 2], {}), ([1, None], {}), ([1, [2]], {}), ([(1,)], {}),
                   ([(1,)], dict(is_leaf=lambda x: isinstance(x, tuple))), ([], {}),
                   ([Config(1)], {}), ([Point(1, 2)], {})]:
        assert tu.all_leaves(it, **kw) == jtu.all_leaves(it, **kw), it


def test_treedef_helpers_match_jax():
    trees = [1, None, (), [1], {"a": 1, "b": [2, None]}, Point(1, 2), Box(1, 2)]
    for t in trees:
        td, jtd = tu.tree_structure(t), jtu.tree_structure(t)
        assert tu.treedef_is_leaf(td) == jtu.treedef_is_leaf(jtd), t
        assert [c.num_leaves for c in tu.treedef_children(td)] == [
            c.num_leaves for c in jtu.treedef_children(jtd)]
        assert [c.num_nodes for c in td.children()] == [c.num_nodes for c in jtd.children()]
        assert tu.is_tree_node(type(t)) == jtu.is_tree_node(type(t))
        if td.node_type is not None:
            children, aux = tu.flatten_one_level(t)
            jchildren, jaux = jtu.flatten_one_level(t)
            assert list(children) == list(jchildren) and aux == jaux
            keys = [(_key_value(k), c) for k, c in tu.flatten_one_level_with_keys(t)[0]]
            if isinstance(t, Point):
                # jax 0.10.2 names every namedtuple field after the first here (x, x); fx
                # gives the fields' names, as jax's own tree_flatten_with_path does.
                assert keys == [(("GetAttrKey", "x"), 1), (("GetAttrKey", "y"), 2)]
            else:
                assert keys == [(_key_value(k), c)
                                for k, c in jtu.flatten_one_level_with_keys(t)[0]]
            (typ, aux), (jtyp, jaux) = td.node_data(), jtd.node_data()
            # jax shows a dict's keys as a list here (a tuple elsewhere); fx keeps the tuple.
            assert typ is jtyp and aux == (tuple(jaux) if isinstance(jaux, list) else jaux)
        else:
            assert td.node_data() is jtd.node_data() is None
    for t in [[None, (1,), {"a": 2}], {"a": (1, 2), "b": [3]}, ((),)]:  # builtins print alike
        assert repr(tu.tree_structure(t)) == repr(jtu.tree_structure(t))
    with pytest.raises(ValueError, match="flatten_one_level: int is a leaf"):
        tu.flatten_one_level(3)
    tup = tu.treedef_tuple([tu.tree_structure(1), tu.tree_structure([1, 2])])
    jtup = jtu.treedef_tuple([jtu.tree_structure(1), jtu.tree_structure([1, 2])])
    assert repr(tup) == repr(jtup) == "PyTreeDef((*, [*, *]))"
    assert tup == tu.tree_structure((0, [0, 0]))
    with pytest.raises(TypeError, match="treedef_tuple: expected PyTreeDefs, got list"):
        tu.treedef_tuple([[1]])


def test_treedef_methods():
    td = tu.tree_structure({"a": (1, 2), "b": 3})
    jtd = jtu.tree_structure({"a": (1, 2), "b": 3})
    assert td.unflatten([4, 5, 6]) == jtd.unflatten([4, 5, 6])
    up = {"a": ([1], 2), "b": {"q": 3}}
    assert td.flatten_up_to(up) == jtd.flatten_up_to(up)
    with pytest.raises(ValueError, match=r"flatten_up_to: .* at \['a'\], expected tuple, got list"):
        td.flatten_up_to({"a": [1, 2], "b": 3})
    outer, inner = tu.tree_structure((1, 2)), tu.tree_structure([1, 1])
    assert repr(outer.compose(inner)) == repr(
        jtu.tree_structure((1, 2)).compose(jtu.tree_structure([1, 1])))
    with pytest.raises(AttributeError, match="immutable"):
        td.aux = ("x",)
    with pytest.raises(TypeError, match=r"tree_unflatten: expected a PyTreeDef .* got list"):
        tu.tree_unflatten([1, 2], td)


def test_transpose_and_broadcast_match_jax():
    cases = [
        ((0, 0), {"a": 0, "b": 0}, ({"a": 1, "b": 2}, {"a": 3, "b": 4})),
        ([0, 0], (0, 0, 0), [(1, 2, 3), (4, 5, 6)]),
        ([0], [0, (0, 0)], [[1, (2, 3)]]),
    ]
    for outer, inner, tree in cases:
        o, i = tu.tree_structure(outer), tu.tree_structure(inner)
        jo, ji = jtu.tree_structure(outer), jtu.tree_structure(inner)
        assert tu.tree_transpose(o, i, tree) == jtu.tree_transpose(jo, ji, tree)
        assert tu.tree_transpose(o, None, tree) == jtu.tree_transpose(jo, None, tree)
        assert fx.tree.transpose(o, i, tree) == jax.tree.transpose(jo, ji, tree)
    with pytest.raises(TypeError, match=r"tree_transpose: the tree has structure "
                                        r"PyTreeDef\(\[\(\*, \*, \*\), \(\*, \*, \*\)\]\)"):
        tu.tree_transpose(tu.tree_structure([0, 0]), tu.tree_structure((0, 0)),
                          [(1, 2, 3), (4, 5, 6)])
    for prefix, full in [((1, {"a": 2}), ((3, 4), {"a": [5, 6]})), (7, [1, (2, 3)]),
                         ([1, 2], [{"x": 0}, (0, 0)])]:
        assert tu.tree_broadcast(prefix, full) == jtu.tree_broadcast(prefix, full)
        assert fx.tree.broadcast(prefix, full) == jax.tree.broadcast(prefix, full)
    with pytest.raises(ValueError, match="tree prefix mismatch"):
        tu.tree_broadcast((1, 2), (1, 2, 3))
    with pytest.raises(ValueError, match="tree prefix mismatch"):  # None is a node here
        tu.tree_broadcast([None], [[1, 2]])


# --- registration front doors --------------------------------------------------------------------


def test_register_dataclass_fields_and_errors():
    layer = Layer(np.ones(2), 3.0, "x", "tanh")
    leaves, td = tu.tree_flatten(layer)
    assert td.node_data() == jtu.tree_structure(layer).node_data() == (Layer, ("x", "tanh"))
    assert tu.tree_unflatten(td, [5, 6]) == Layer(5, 6, "x", "tanh")
    with pytest.raises(ValueError, match=r"tree prefix mismatch at root: Layer with 2 children "
                                         r"and aux data \('a', 'relu'\) vs Layer with 2 "
                                         r"children and aux data \('b', 'relu'\)"):
        tu.broadcast_prefix(Layer(0, 0, "a"), Layer(1, 2, "b"))
    assert tu.broadcast_prefix(Layer(0, None), Layer([1, 2], 3)) == [0, 0, None]

    @dataclasses.dataclass
    class Three:
        x: int
        y: int
        z: int

    with pytest.raises(ValueError, match=r"register_dataclass: .* missing \['z'\], unexpected "
                                         r"\[\]"):
        tu.register_dataclass(Three, data_fields=["x"], meta_fields=["y"])
    with pytest.raises(TypeError, match="pass both data_fields and meta_fields or neither"):
        tu.register_dataclass(Three, data_fields=["x"])
    with pytest.raises(TypeError, match="'int' is not a dataclass"):
        tu.register_dataclass(int)
    tu.register_dataclass(Three, data_fields=["x", "z"], meta_fields=["y"])
    assert tu.tree_leaves(Three(1, 2, 3)) == [1, 3]

    class Plain:  # not a dataclass: the fields must be named
        def __init__(self, a, b):
            self.a, self.b = a, b

    assert tu.register_dataclass(Plain, data_fields=["a"], meta_fields=["b"]) is Plain
    p = tu.tree_unflatten(tu.tree_structure(Plain(1, "m")), [9])
    assert (p.a, p.b) == (9, "m")


def test_unsortable_dict_keys():
    with pytest.raises(ValueError):  # jax refuses them too
        jtu.tree_leaves({1: "a", "b": "c"})
    with pytest.raises(ValueError, match=r"a dict's keys must be sortable .* got keys of types "
                                         r"int, str"):
        tu.tree_leaves({1: "a", "b": "c"})


def test_register_errors():
    with pytest.raises(ValueError, match="register_pytree_node: Box is already registered"):
        tu.register_pytree_node(Box, lambda b: ((), None), lambda a, c: None)
    with pytest.raises(ValueError, match="register_static: Config is already registered"):
        tu.register_static(Config)
    with pytest.raises(TypeError, match="register_pytree_node: expected a class, got 3"):
        tu.register_pytree_node(3, lambda b: ((), None), lambda a, c: None)

    class NoMethods:
        pass

    with pytest.raises(TypeError, match="register_pytree_node_class: .*NoMethods.* has no "
                                        "tree_flatten or tree_unflatten"):
        tu.register_pytree_node_class(NoMethods)

    class Lazy:
        pass

    with pytest.raises(TypeError, match="the unflatten function for Lazy is not callable"):
        tu.register_pytree_node(Lazy, lambda x: ((), None), "not a function")


def test_register_static_values_are_aux_data():
    tree = {"cfg": Config(2), "x": 1.0}
    leaves, td = tu.tree_flatten(tree)
    assert leaves == [1.0] and td == tu.tree_structure({"cfg": Config(2), "x": 5})
    assert td != tu.tree_structure({"cfg": Config(3), "x": 1.0})
    traces = []

    @fx.jit
    def f(t):
        traces.append(1)
        return t["x"] * t["cfg"].depth

    assert float(f({"cfg": Config(2), "x": 1.5})) == 3.0
    assert float(f({"cfg": Config(2), "x": 2.5})) == 5.0
    assert float(f({"cfg": Config(4), "x": 2.5})) == 10.0
    assert len(traces) == 2


# --- Partial -------------------------------------------------------------------------------------


def _add3(a, b, c=1):
    return a + b + c


def test_partial_is_a_pytree_like_jax():
    p, jp = tu.Partial(_add3, 1, c=3), jtu.Partial(_add3, 1, c=3)
    assert tu.tree_leaves(p) == jtu.tree_leaves(jp) == [1, 3]
    assert _neutral(tu.tree_flatten_with_path(p)[0]) == _neutral(
        jtu.tree_flatten_with_path(jp)[0])
    assert p(2) == jp(2) == 6
    assert tu.tree_map(lambda x: x * 10, p)(2) == jtu.tree_map(lambda x: x * 10, jp)(2) == 42
    assert tu.tree_structure(tu.Partial(_add3)) == tu.tree_structure(tu.Partial(_add3))
    assert tu.tree_structure(tu.Partial(_add3, 1)) != tu.tree_structure(tu.Partial(len, 1))
    # A partial given as the function keeps its arguments inside the function.
    inner = tu.Partial(_add3, 100)
    outer, jouter = tu.Partial(inner, 5), jtu.Partial(jtu.Partial(_add3, 100), 5)
    assert tu.tree_leaves(outer) == jtu.tree_leaves(jouter) == [5]
    assert outer() == jouter() == 106
    assert tu.tree_leaves(tu.Partial(functools.partial(_add3, 7), 8)) == [8]


def test_partial_through_transformations():
    scale = tu.Partial(lambda s, x: s * x, fnp.asarray(3.0))
    assert float(fx.jit(lambda p, x: p(x))(scale, 2.0)) == 6.0
    g = fx.grad(lambda p, x: p(x))(scale, 2.0)  # the gradient is a Partial of cotangents
    assert isinstance(g, tu.Partial) and float(g.args[0]) == 2.0
    out = fx.vmap(lambda p, x: p(x), in_axes=(None, 0))(scale, fnp.arange(3.0))
    np.testing.assert_allclose(np.asarray(out), [0.0, 3.0, 6.0])


# --- treedef hashing with unhashable aux data ----------------------------------------------------


class Meta:
    """A node whose aux data is whatever it is given (a dict, a list, an array, ...)."""

    def __init__(self, x, meta):
        self.x, self.meta = x, meta


tu.register_pytree_node(Meta, lambda m: ((m.x,), m.meta), lambda meta, c: Meta(c[0], meta))


class ValueEq:
    """Unhashable (defines __eq__ only), compared by value."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, ValueEq) and self.v == other.v

    __hash__ = None


class ArrayEq:
    """Unhashable and ``==`` answers elementwise: only identity can say equal."""

    def __init__(self, v):
        self.v = np.asarray(v)

    def __eq__(self, other):
        return self.v == other.v

    __hash__ = None


def test_dict_aux_data_through_jit_twice_hits_the_cache():
    traces = []

    @fx.jit
    def f(m):
        traces.append(1)
        return m.x * m.meta["scale"]

    x = fnp.ones(3)
    np.testing.assert_allclose(np.asarray(f(Meta(x, {"scale": 2.0, "tag": [1, 2]}))), 2.0)
    np.testing.assert_allclose(np.asarray(f(Meta(x, {"tag": [1, 2], "scale": 2.0}))), 2.0)
    assert len(traces) == 1  # an equal dict (in any order) is a cache hit
    np.testing.assert_allclose(np.asarray(f(Meta(x, {"scale": 3.0, "tag": [1, 2]}))), 3.0)
    assert len(traces) == 2  # a different value is a new structure: retraced, not stale


@pytest.mark.parametrize("make,equal,different", [
    (lambda: {"a": [1, {"b": 2}]}, True, {"a": [1, {"b": 3}]}),
    (lambda: [1, 2], True, [1, 3]),
    (lambda: np.arange(3), True, np.arange(1, 4)),
    (lambda: (1, [2]), True, (1, [3])),
    (lambda: {1, 2}, True, {1, 3}),
    (lambda: ValueEq([1]), True, ValueEq([2])),
    (lambda: ArrayEq([1, 2]), False, ArrayEq([1, 3])),
], ids=["nested-dict", "list", "ndarray", "tuple-with-list", "set", "value-eq", "array-eq"])
def test_unhashable_aux_data_hash_and_equality(make, equal, different):
    a, b = make(), make()
    ta, tb = tu.tree_structure(Meta(1, a)), tu.tree_structure(Meta(2, b))
    assert (ta == tb) is equal
    if equal:
        assert hash(ta) == hash(tb)
        assert len({ta, tb}) == 1
    assert ta == tu.tree_structure(Meta(3, a))  # the same object is always equal
    assert ta != tu.tree_structure(Meta(1, different))
    assert tu.tree_unflatten(ta, [5]).meta is a  # unflatten hands back the aux object itself


def test_mutating_aux_data_after_flattening_does_not_change_the_treedef():
    meta = {"scale": 2.0}
    td = tu.tree_structure(Meta(1, meta))
    key = hash(td)
    meta["scale"] = 5.0
    assert hash(td) == key
    assert td == tu.tree_structure(Meta(1, {"scale": 2.0}))
    assert td != tu.tree_structure(Meta(1, {"scale": 5.0}))


# --- coverage: every public name of jax.tree_util / jax.tree, or a reason ------------------------

TREE_UTIL_EXCLUDED = {
    "default_registry": "fx keeps one process-wide registry; there are no PyTreeRegistry "
                        "objects to pass around (register_* functions write to it)",
}
TREE_EXCLUDED: dict[str, str] = {}


def _public(module):
    return {n for n in dir(module) if not n.startswith("_")}


def test_tree_util_covers_jax():
    assert _public(jtu) - _public(tu) == set(TREE_UTIL_EXCLUDED)


def test_tree_covers_jax():
    assert _public(jax.tree) - _public(fx.tree) == set(TREE_EXCLUDED)
    tree = {"b": [1, 2], "a": (3, None)}
    assert fx.tree.leaves(tree) == jax.tree.leaves(tree)
    assert fx.tree.map(lambda x: -x, tree) == jax.tree.map(lambda x: -x, tree)
    assert fx.tree.reduce(operator.add, tree) == jax.tree.reduce(operator.add, tree)
    assert fx.tree.all(tree) == jax.tree.all(tree)
    leaves, td = fx.tree.flatten(tree)
    assert fx.tree.unflatten(td, leaves) == tree and td == fx.tree.structure(tree)
    assert [fx.tree_util.keystr(p) for p, _ in fx.tree.leaves_with_path(tree)] == [
        jax.tree_util.keystr(p) for p, _ in jax.tree.leaves_with_path(tree)]
    assert fx.tree.map_with_path(lambda p, x: len(p), tree) == jax.tree.map_with_path(
        lambda p, x: len(p), tree)
    assert len(fx.tree.flatten_with_path(tree)[0]) == 3
    assert fx.tree.reduce_associative(operator.add, tree) == 6
    field = fx.tree.static(default=1, metadata={"doc": "d"})
    assert field.metadata == {"doc": "d", "static": True} and field.default == 1


def test_docstring_examples():
    assert run_doctests(fx.tree_util, fx.pytree_registry, fx.tree, fx.flatten_util) >= 17


# --- random pytrees of every node kind, against jax ----------------------------------------------

# A drawn tree is a recipe ``build(partial_cls)``, built once with fx's Partial and once with
# jax's (every other node type is registered with both libraries), so the jax twin is made
# without fx's flattening.
_leaf = st.integers(-5, 5).map(lambda v: lambda P: v)
_key = st.sampled_from(["a", "b", "c", "zz"])


def _recipe_dict(kind):
    def build(items):
        return lambda P: kind((k, f(P)) for k, f in items)
    return build


def _nodes(c):
    items = st.lists(st.tuples(_key, c), max_size=3, unique_by=lambda kv: kv[0])
    return st.one_of(
        st.tuples(c, c).map(lambda t: lambda P: (t[0](P), t[1](P))),
        st.lists(c, max_size=3).map(lambda fs: lambda P: [f(P) for f in fs]),
        items.map(_recipe_dict(dict)),
        items.map(_recipe_dict(collections.OrderedDict)),
        items.map(lambda it: lambda P: collections.defaultdict(list, _recipe_dict(dict)(it)(P))),
        st.tuples(c, c).map(lambda t: lambda P: Point(t[0](P), t[1](P))),
        st.tuples(c, c).map(lambda t: lambda P: Box(t[0](P), t[1](P))),
        st.tuples(c, c).map(lambda t: lambda P: Keyed(t[0](P), t[1](P))),
        st.tuples(c, c, st.sampled_from(["p", "q"])).map(
            lambda t: lambda P: Layer(t[0](P), t[1](P), t[2])),
        st.tuples(c, c).map(lambda t: lambda P: P(_add3, t[0](P), c=t[1](P))),
        st.just(lambda P: None),
        st.integers(0, 1).map(lambda d: lambda P: Config(d)),
    )


random_trees = st.recursive(_leaf, _nodes, max_leaves=10)


@given(random_trees, random_trees)
def test_random_trees_match_jax(make_a, make_b):
    a, b = make_a(tu.Partial), make_b(tu.Partial)
    ja, jb = make_a(jtu.Partial), make_b(jtu.Partial)
    pairs = tu.tree_flatten_with_path(a)[0]
    jpairs = _jax_pairs(ja)
    assert _neutral(pairs) == _neutral(jpairs)
    assert [tu.keystr(p) for p, _ in pairs] == [jtu.keystr(p) for p, _ in jpairs]
    assert tu.tree_structure(a).num_nodes == jtu.tree_structure(ja).num_nodes
    renumbered = tu.tree_unflatten(tu.tree_structure(a), range(len(pairs)))
    assert tu.tree_leaves(renumbered) == list(range(len(pairs)))
    # Treedef equality agrees with jax's, and equal treedefs hash alike.
    same = tu.tree_structure(a) == tu.tree_structure(b)
    assert same == (jtu.tree_structure(ja) == jtu.tree_structure(jb))
    if same:
        assert hash(tu.tree_structure(a)) == hash(tu.tree_structure(b))
