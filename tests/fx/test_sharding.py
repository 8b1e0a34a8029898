"""Shardings in one process: CPU devices (``num_cpu_devices``), NamedSharding and
SingleDeviceSharding against jax's (run in a subprocess with 8 CPU devices, since jax fixes its
device count when its backend starts), their errors and the docstring examples. Sharded arrays
are tested in ``test_sharded_arrays.py``, jit's shardings in ``test_jit_shardings.py``."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from cpu_devices import cpu_devices
from harness import run_doctests

import fx
import fx.numpy as fnp
from fx.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

P = PartitionSpec


@pytest.fixture
def eight():
    """8 CPU devices for the test, 1 again afterwards."""
    with cpu_devices(8) as devices:
        yield devices


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
