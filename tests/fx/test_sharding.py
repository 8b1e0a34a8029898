"""Shardings in one process: CPU devices (``num_cpu_devices``), NamedSharding and
SingleDeviceSharding against jax's (run in a subprocess with 8 CPU devices, since jax fixes its
device count when its backend starts), sharded arrays, their shards and errors."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from harness import run_doctests

import fx
import fx.numpy as fnp
from fx import processes
from fx.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

P = PartitionSpec


@pytest.fixture
def eight():
    """8 CPU devices for the test, 1 again afterwards."""
    old = fx.config.num_cpu_devices
    fx.config.update("fx_num_cpu_devices", 8)
    try:
        yield fx.devices("cpu")
    finally:
        fx.config.update("fx_num_cpu_devices", old)


# --- devices ------------------------------------------------------------------------------------


def test_num_cpu_devices_option_takes_effect_and_restores(eight):
    assert len(eight) == 8 and [d.id for d in eight] == list(range(8))
    assert fx.device_count("cpu") == fx.local_device_count("cpu") == 8
    assert fx.local_devices(backend="cpu") == eight
    assert fx.devices("cpu")[0] == fx.devices("cpu")[0] and eight[0] != eight[1]
    assert fx.config.jax_num_cpu_devices == 8 and fx.config.read("num_cpu_devices") == 8
    fx.config.update("jax_num_cpu_devices", 3)  # jax's spelling
    assert len(fx.devices("cpu")) == 3


def test_num_cpu_devices_restored_after_fixture():
    assert fx.config.num_cpu_devices == 1 and len(fx.devices("cpu")) == 1


@pytest.mark.parametrize("bad", [0, -1, 2.0, "4", True])
def test_num_cpu_devices_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="positive integer"):
        fx.config.update("num_cpu_devices", bad)
    assert fx.config.num_cpu_devices == 1


def test_env_variable_gives_devices():
    code = ("import fx; print(fx.device_count('cpu'), fx.local_device_count('cpu'), "
            "fx.devices('cpu')[-1], fx.numpy.ones(2).device)")
    env = dict(os.environ, FX_NUM_CPU_DEVICES="3", FX_PLATFORM="cpu")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["3", "3", "CpuDevice(id=2)", "CpuDevice(id=0)"]


def test_default_device_stays_device_0(eight):
    x = fnp.ones(3)
    assert x.device == eight[0] == fx.devices("cpu")[0]
    assert x.sharding == SingleDeviceSharding(eight[0])


# --- shardings against jax ----------------------------------------------------------------------

CASES = [  # (mesh shape, axis names, spec entries, global shape)
    ((8,), ("x",), ("x",), (16,)),
    ((8,), ("x",), (None, "x"), (3, 8)),
    ((8,), ("x",), (), (4, 2)),
    ((2, 4), ("a", "b"), ("a", "b"), (4, 8)),
    ((2, 4), ("a", "b"), (("b", "a"), None), (16, 3)),
    ((2, 4), ("a", "b"), ("b",), (8,)),
    ((2, 4), ("a", "b"), (None, ("a", "b")), (2, 8)),
    ((2, 4), ("a", "b"), ("a",), (6, 5)),
    ((2, 2, 2), ("x", "y", "z"), (("x", "z"), "y"), (4, 2, 3)),
    ((2, 2, 2), ("x", "y", "z"), ("y", None, "x"), (2, 3, 4)),
    ((2, 2, 2), ("x", "y", "z"), (("z", "y", "x"),), (8,)),
    ((2, 2, 2), ("x", "y", "z"), (None, "z"), (1, 6)),
    ((1, 8), ("a", "b"), ("a", "b"), (3, 8)),
]

_JAX_FACTS = textwrap.dedent("""
    import json, sys
    import jax
    jax.config.update("jax_num_cpu_devices", 8)
    jax.config.update("jax_platforms", "cpu")
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    out = []
    for mesh_shape, names, spec, shape in json.loads(sys.stdin.read()):
        mesh = jax.make_mesh(tuple(mesh_shape), tuple(names))
        s = NamedSharding(mesh, P(*[tuple(e) if isinstance(e, list) else e for e in spec]))
        shape = tuple(shape)
        x = jax.device_put(np.arange(np.prod(shape)).reshape(shape), s)
        out.append({
            "shard_shape": list(s.shard_shape(shape)),
            "indices": {str(d.id): [[i.start, i.stop] for i in idx]
                        for d, idx in s.devices_indices_map(shape).items()},
            "replicas": {str(sh.device.id): sh.replica_id for sh in x.addressable_shards},
            "order": [sh.device.id for sh in x.addressable_shards],
            "replicated": s.is_fully_replicated,
            "mesh_ids": [d.id for d in mesh.devices.flat],
        })
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def jax_facts():
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", _JAX_FACTS], input=json.dumps(CASES), env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _sharding(mesh_shape, names, spec):
    return NamedSharding(fx.make_mesh(mesh_shape, names), P(*spec))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_named_sharding_matches_jax(eight, jax_facts, case):
    mesh_shape, names, spec, shape = CASES[case]
    want = jax_facts[case]
    s = _sharding(mesh_shape, names, spec)
    assert [d.id for d in s.mesh.devices.flat] == want["mesh_ids"]
    assert list(s.shard_shape(shape)) == want["shard_shape"]
    got = {str(d.id): [[i.start, i.stop] for i in idx]
           for d, idx in s.devices_indices_map(shape).items()}
    assert got == want["indices"]
    assert s.is_fully_replicated == want["replicated"]
    value = np.arange(int(np.prod(shape))).reshape(shape)
    x = fx.device_put(value, s)
    shards = x.addressable_shards
    assert [sh.device.id for sh in shards] == want["order"]
    assert {str(sh.device.id): sh.replica_id for sh in shards} == want["replicas"]
    for sh in shards:
        assert sh.data.sharding == SingleDeviceSharding(sh.device)
        assert sh.data.shape == s.shard_shape(shape)
        np.testing.assert_array_equal(np.asarray(sh.data), value[sh.index])


def test_sharding_properties(eight):
    mesh = fx.make_mesh((2, 4), ("a", "b"))
    s = NamedSharding(mesh, P("b"))
    assert s.mesh is mesh and s.spec == P("b") and s.memory_kind == "device"
    assert s.num_devices == 8 and s.device_set == set(eight)
    assert s.addressable_devices == set(eight) and s.is_fully_addressable
    assert s.addressable_devices_indices_map((8,)) == s.devices_indices_map((8,))
    assert s == NamedSharding(mesh, P("b")) and hash(s) == hash(NamedSharding(mesh, P("b")))
    assert s != NamedSharding(mesh, P("a")) and s != NamedSharding(mesh, P("b", None))
    assert s.is_equivalent_to(NamedSharding(mesh, P("b", None)), 2)
    assert NamedSharding(mesh, P()).is_fully_replicated
    one = SingleDeviceSharding(eight[5])
    assert one.device_set == {eight[5]} and one.num_devices == 1 and one.is_fully_replicated
    assert one.devices_indices_map((2, 3)) == {eight[5]: (slice(None), slice(None))}
    assert one == SingleDeviceSharding(eight[5]) != SingleDeviceSharding(eight[4])
    assert repr(one) == "SingleDeviceSharding(device=CpuDevice(id=5), memory_kind=device)"


# --- errors -------------------------------------------------------------------------------------


def test_indivisible_dimension_names_dim_size_axes_and_product(eight):
    s = _sharding((2, 4), ("a", "b"), (None, ("a", "b")))
    for call in (lambda: s.shard_shape((3, 12)), lambda: s.devices_indices_map((3, 12)),
                 lambda: fx.device_put(np.zeros((3, 12)), s)):
        with pytest.raises(ValueError, match=r"dimension 1 .* size 12.*\('a', 'b'\).*= 8"):
            call()


def test_spec_errors_are_value_errors(eight):
    mesh = fx.make_mesh((2, 4), ("a", "b"))
    with pytest.raises(ValueError, match="'a' more than once"):
        NamedSharding(mesh, P("a", ("b", "a")))
    with pytest.raises(ValueError, match="'c', which is not an axis of the mesh"):
        NamedSharding(mesh, P("c"))
    with pytest.raises(ValueError, match="rank at least 2.*rank 1"):
        NamedSharding(mesh, P("a", "b")).shard_shape((8,))
    with pytest.raises(TypeError):
        NamedSharding(mesh, ("a",))


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
    for read in (np.asarray, str, lambda a: a + 1, lambda a: fx.jit(lambda v: v * 2)(a)):
        with pytest.raises(RuntimeError, match="spans non-addressable devices.*process_allgather"):
            read(x)
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


def test_replicated_across_processes_is_readable(two_processes):
    devs = fx.devices("cpu")
    mesh = Mesh(np.array(devs, dtype=object).reshape(2, 4), ("proc", "dev"))
    value = np.arange(8.0).reshape(4, 2)
    for spec in (P(), P("dev")):  # each process holds the whole value
        x = fx.make_array_from_callback((4, 2), NamedSharding(mesh, spec), lambda i: value[i])
        assert not x.is_fully_addressable
        np.testing.assert_array_equal(np.asarray(x + 1), value + 1)


def test_jit_refuses_meshes_spanning_processes(two_processes):
    mesh = Mesh(np.array(fx.devices("cpu"), dtype=object).reshape(2, 4), ("proc", "dev"))
    with pytest.raises(NotImplementedError, match="spanning processes.*shard_map"):
        fx.jit(lambda v: v, in_shardings=NamedSharding(mesh, P("proc")))


# --- jit ----------------------------------------------------------------------------------------


def test_jit_shardings_place_inputs_and_outputs(eight):
    mesh = fx.make_mesh((2, 4), ("data", "model"))
    rows, cols = NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P(None, "model"))
    rep = NamedSharding(mesh, P())

    def f(x, w):
        h = fnp.tanh(x @ w)
        return {"h": h, "loss": fnp.mean(h ** 2)}

    x, w = np.linspace(-1, 1, 24).reshape(4, 6), np.linspace(0, 1, 48).reshape(6, 8)
    sharded = fx.jit(f, in_shardings=(rows, cols), out_shardings={"h": cols, "loss": rep})
    got, want = sharded(x, w), fx.jit(f)(x, w)
    assert got["h"].sharding == cols and got["loss"].sharding == rep
    for k in want:
        assert np.asarray(got[k]).tobytes() == np.asarray(want[k]).tobytes()
    one = fx.jit(lambda a, b: a + b, in_shardings=rows,
                 out_shardings=SingleDeviceSharding(eight[2]))(x, x)
    assert one.device == eight[2]
    np.testing.assert_array_equal(np.asarray(one), 2 * x)
    # Under a transformation the shardings change no value.
    g = fx.grad(lambda v: sharded(v, w)["loss"])(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(fx.grad(lambda v: f(v, w)["loss"])(x)))


def test_jit_shardings_errors(eight):
    mesh = fx.make_mesh((2, 4), ("data", "model"))
    s = NamedSharding(mesh, P("model"))
    with pytest.raises(ValueError, match=r"jit\(.*in_shardings.*dimension 0 .* size 6"):
        fx.jit(lambda v: v, in_shardings=s)(np.zeros(6))
    with pytest.raises(ValueError, match="pytree prefix"):
        fx.jit(lambda v: v, in_shardings=(s, s))(np.zeros(8))
    with pytest.raises(ValueError, match=r"out_shardings.*rank at least"):
        fx.jit(lambda v: v.sum(), out_shardings=s)(np.zeros(8))
    with pytest.raises(ValueError, match="keyword"):
        fx.jit(lambda v: v, in_shardings=s)(v=np.zeros(8))
    with pytest.raises(TypeError, match="shardings"):
        fx.jit(lambda v: v, in_shardings=P("model"))


def test_doctests():
    import doctest

    import fx.devices
    import fx.sharded_arrays
    import fx.sharding.mesh
    import fx.sharding.shardings

    ran = run_doctests(fx.sharding, fx.sharding.mesh, fx.sharding.shardings, fx.sharded_arrays,
                       sys.modules["fx.devices"])
    # fx.array's module holds a deleted-buffer sentinel doctest cannot inspect: its examples
    # one by one.
    array = sys.modules["fx.array"]
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for name, obj in (("device_put", array.device_put),
                      ("addressable_shards", array.Array.addressable_shards)):
        for test in doctest.DocTestFinder().find(obj, name, globs={"fx": fx, "np": np}):
            runner.run(test)
    assert runner.failures == 0 and ran + runner.tries >= 12
