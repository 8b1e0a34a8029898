"""Sharded arrays: placing with ``fx.device_put``, building from pieces
(``make_array_from_callback`` and friends), shards, and arrays spanning processes (a
simulated layout of 2 processes with 4 CPU devices each: this process is either)."""

import numpy as np
import pytest
from cpu_devices import cpu_devices

import fx
import fx.numpy as fnp
from fx import processes
from fx.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

P = PartitionSpec


@pytest.fixture
def eight():
    """8 CPU devices for the test, 1 again afterwards."""
    with cpu_devices(8) as devices:
        yield devices



def _sharding(mesh_shape, names, spec):
    return NamedSharding(fx.make_mesh(mesh_shape, names), P(*spec))


# --- placing ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64, np.bool_,
                                   np.complex64])
def test_device_put_round_trips_bitwise(eight, dtype):
    value = (np.arange(32) % 7 - 3).astype(dtype).reshape(8, 4)
    for target in (eight[3], SingleDeviceSharding(eight[6]),
                   _sharding((2, 4), ("a", "b"), ("b", "a")),
                   _sharding((2, 2, 2), ("x", "y", "z"), (("x", "y", "z"),))):
        x = fx.device_put(value, target)
        back = np.asarray(x)
        assert back.dtype == value.dtype and back.tobytes() == value.tobytes()
        assert np.asarray(fx.device_put(x, fx.devices("cpu")[0])).tobytes() == value.tobytes()


def test_arrays_carry_their_device_and_sharding(eight):
    x = fx.device_put(np.arange(6.0), eight[3])
    assert x.device == eight[3] and x.devices() == {eight[3]}
    assert x.sharding == SingleDeviceSharding(eight[3])
    assert fx.device_put(x, eight[3]) is x
    s = _sharding((2, 4), ("a", "b"), ("a",))
    y = fx.device_put(np.arange(8.0).reshape(4, 2), s)
    assert y.sharding == s and y.device == s and y.devices() == set(eight)
    assert y.is_fully_addressable and not y.is_fully_replicated
    assert fx.device_put(y, s) is y
    # Every operation sees the unsharded value; its result lives where ordinary ones do.
    z = y * 2 + fnp.sum(y, axis=0)
    np.testing.assert_array_equal(np.asarray(z), np.arange(8.0).reshape(4, 2) * 2 + [12, 16])
    assert z.sharding == SingleDeviceSharding(eight[0])
    assert y.copy().sharding == s


def test_eager_operations_follow_their_operands_sharding(eight):
    # as jax: x + 1 keeps x's NamedSharding; a reduction's result is replicated on the mesh;
    # operands placed differently leave the default placement; values as unplaced
    mesh = fx.make_mesh((2, 4), ("a", "b"))
    rows = NamedSharding(mesh, P("a", "b"))
    v = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    x = fx.device_put(v, rows)
    for y, want in ((x + 1, v + 1), (fnp.sin(x) * v, np.sin(v) * v), (-x, -v)):
        assert y.sharding == rows, y.sharding
        np.testing.assert_array_equal(np.asarray(y), want.astype(np.float32))
    total = fnp.sum(x)
    assert total.sharding == NamedSharding(mesh, P()) and float(total) == v.sum()
    other = fx.device_put(v, NamedSharding(mesh, P("b", "a")))
    assert (x + other).sharding == SingleDeviceSharding(eight[0])
    assert (fx.device_put(v, eight[0]) + 1).sharding == SingleDeviceSharding(eight[0])


def test_shape_dtype_struct_carries_a_checked_sharding(eight):
    s = _sharding((2, 4), ("a", "b"), ("b",))
    spec = fx.ShapeDtypeStruct((8, 3), np.float32, sharding=s)
    assert spec.sharding == s and spec != fx.ShapeDtypeStruct((8, 3), np.float32)
    assert fx.jit(lambda v: v * 2).lower(spec).out_info.shape == (8, 3)
    with pytest.raises(ValueError, match="dimension 0 .* size 6"):
        fx.ShapeDtypeStruct((6, 3), np.float32, sharding=s)
    with pytest.raises(TypeError, match="Sharding"):
        fx.ShapeDtypeStruct((8, 3), np.float32, sharding=P("b"))


def test_key_arrays_shard_as_their_stored_data(eight):
    k = fx.random.split(fx.random.key(0), 8)
    s = _sharding((2, 4), ("a", "b"), (("a", "b"),))
    raw = np.asarray(fx.random.key_data(k))
    placed = fx.device_put(k, s)
    built = [placed,
             fx.make_array_from_callback((8,), s, lambda i: k[i]),
             fx.make_array_from_process_local_data(s, k),
             fx.make_array_from_single_device_arrays(
                 (8,), s, [sh.data for sh in placed.addressable_shards])]
    for x in built:
        assert x.dtype == k.dtype and x.sharding == s
        assert np.asarray(fx.random.key_data(x)).tobytes() == raw.tobytes()
        for sh in x.addressable_shards:
            assert sh.data.dtype == k.dtype and sh.data.shape == (1,)
            np.testing.assert_array_equal(np.asarray(fx.random.key_data(sh.data)),
                                          raw[sh.index])
    assert float(fx.random.uniform(placed[3])) == float(fx.random.uniform(k[3]))


def test_device_put_pytrees(eight):
    s = _sharding((8,), ("x",), ("x",))
    out = fx.device_put({"a": np.zeros(8), "b": [np.ones(8), 1.0]}, {"a": s, "b": eight[2]})
    assert out["a"].sharding == s and out["b"][0].device == eight[2]
    assert out["b"][1].weak_type and out["b"][1].device == eight[2]
    assert fx.device_put(np.arange(3.0)).dtype == np.float64  # x64 mode: kept


def test_make_array_from_callback_and_single_device_arrays(eight):
    value = np.arange(48.0).reshape(8, 6)
    s = _sharding((2, 4), ("a", "b"), ("b", "a"))
    calls = []
    x = fx.make_array_from_callback(value.shape, s, lambda i: calls.append(i) or value[i])
    assert len(calls) == 8 and x.sharding == s
    assert np.asarray(x).tobytes() == value.tobytes()
    pieces = [sh.data for sh in x.addressable_shards][::-1]  # any order: matched by device
    y = fx.make_array_from_single_device_arrays(value.shape, s, pieces)
    assert y.sharding == s and np.asarray(y).tobytes() == value.tobytes()
    with pytest.raises(ValueError, match="one array per device"):
        fx.make_array_from_single_device_arrays(value.shape, s, pieces[1:])
    with pytest.raises(ValueError, match="does not match the devices"):
        fx.make_array_from_single_device_arrays(value.shape, s, [fnp.ones((1, 6))] * 8)
    with pytest.raises(ValueError, match="has shape"):
        fx.make_array_from_callback(value.shape, s, lambda i: value)
    z = fx.make_array_from_process_local_data(s, value)
    assert z.sharding == s and np.asarray(z).tobytes() == value.tobytes()


# --- arrays spanning processes (a simulated layout of 2 processes with 4 devices each) -------


@pytest.fixture(params=[0, 1])
def two_processes(request):
    old = processes.layout()
    processes.set_layout(processes.ProcessLayout(request.param, 2, (4, 4)))
    try:
        yield request.param
    finally:
        processes.set_layout(old)


def test_arrays_spanning_processes_hold_their_shards(two_processes):
    me = two_processes
    devs = fx.devices("cpu")
    assert len(devs) == 8 and [d.process_index for d in devs] == [0] * 4 + [1] * 4
    assert len(set(devs)) == 8 and fx.local_devices(backend="cpu") == devs[4 * me:4 * me + 4]
    assert fnp.ones(2).device == devs[4 * me]  # this process's first device
    if fx.default_backend() == "cpu":
        assert fnp.__array_namespace_info__().devices() == devs[4 * me:4 * me + 4]
    mesh = Mesh(np.array(devs, dtype=object).reshape(2, 4), ("proc", "dev"))
    s = NamedSharding(mesh, P(("proc", "dev"), None))
    assert not s.is_fully_addressable and s.addressable_devices == set(devs[4 * me:4 * me + 4])
    value = np.arange(16.0).reshape(8, 2)
    mine = value[4 * me:4 * me + 4]
    x = fx.make_array_from_process_local_data(s, mine)
    assert x.shape == (8, 2) and not x.is_fully_addressable and x.sharding == s
    shards = x.addressable_shards
    assert [sh.device for sh in shards] == devs[4 * me:4 * me + 4]
    for sh in shards:
        np.testing.assert_array_equal(np.asarray(sh.data), value[sh.index])
    for read in (np.asarray, str, lambda a: a + 1):
        with pytest.raises(RuntimeError, match="spans non-addressable devices.*process_allgather"):
            read(x)
    # fx.jit partitions the program by the array's split (fx.spmd_partition) and runs it
    # with shard_map, whose process axis then needs the run's processes (tests/distributed
    # runs it under mpiexec); this simulated layout has one.
    with pytest.raises(NotImplementedError, match="one device of each of the run's 1 processes"):
        fx.jit(lambda v: v * 2)(x)
    assert repr(x) == "Array(shape=(8, 2), dtype=float64)"
    # The same array from a callback, from the global value, and from its shards.
    for y in (fx.make_array_from_callback((8, 2), s, lambda i: value[i]),
              fx.device_put(value, s),
              fx.make_array_from_single_device_arrays((8, 2), s, [sh.data for sh in shards]),
              fx.make_array_from_process_local_data(s, value, (8, 2))):
        assert [np.asarray(sh.data).tolist() for sh in y.addressable_shards] == \
            [np.asarray(sh.data).tolist() for sh in shards]
    with pytest.raises(ValueError, match="not"):
        fx.make_array_from_process_local_data(s, mine, (6, 2))


def test_global_shards_name_other_processes_without_data(two_processes):
    devs = fx.devices("cpu")
    mesh = Mesh(np.array(devs, dtype=object).reshape(2, 4), ("proc", "dev"))
    s = NamedSharding(mesh, P("dev"))
    x = fx.make_array_from_callback((8,), s, lambda i: np.arange(8)[i])
    shards = x.global_shards
    assert [sh.device for sh in shards] == devs
    assert [sh.data is None for sh in shards] == [p != two_processes for p in [0] * 4 + [1] * 4]
    assert [sh.replica_id for sh in shards] == [0] * 4 + [1] * 4
    assert np.asarray(x.addressable_data(1)).tolist() == [2, 3]


def test_replicated_across_processes_is_readable(two_processes):
    devs = fx.devices("cpu")
    mesh = Mesh(np.array(devs, dtype=object).reshape(2, 4), ("proc", "dev"))
    value = np.arange(8.0).reshape(4, 2)
    for spec in (P(), P("dev")):  # each process holds the whole value
        x = fx.make_array_from_callback((4, 2), NamedSharding(mesh, spec), lambda i: value[i])
        assert not x.is_fully_addressable
        np.testing.assert_array_equal(np.asarray(x + 1), value + 1)


def test_jit_over_meshes_spanning_processes_partitions_only_by_batch(two_processes):
    # fx.jit partitions such programs by one split dimension (tests/fx/test_spmd_partition.py,
    # and under mpiexec tests/distributed/mesh_checks.py); anything else names shard_map.
    mesh = Mesh(np.array(fx.devices("cpu"), dtype=object).reshape(2, 4), ("proc", "dev"))
    f = fx.jit(lambda v: v * 2, in_shardings=NamedSharding(mesh, P("proc", "dev")))
    with pytest.raises(NotImplementedError, match="splitting 2 dimensions.*shard_map"):
        f(np.zeros((4, 8), np.float32))




def test_a_scalar_shards_data_is_a_zero_dimensional_array():
    with cpu_devices(2) as devs:
        mesh = fx.sharding.Mesh(np.array(devs, dtype=object), ("i",))
        x = fx.device_put(fx.numpy.asarray(3.5), fx.sharding.NamedSharding(mesh, P()))
        for shard in x.addressable_shards:
            assert shard.index == () and shard.data.shape == ()
            assert float(shard.data) == 3.5
