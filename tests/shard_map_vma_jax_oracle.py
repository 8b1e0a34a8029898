"""Run every ``shard_map_vma_cases`` case under ``jax.shard_map`` (check_vma=True) with 8 CPU
devices and print the path of an ``.npz`` holding case ``c``'s ``i``-th array as ``c/i``.
Used by ``tests/fx/test_shard_map_vma.py`` in a subprocess."""

import tempfile

import jax
import numpy as np

jax.config.update("jax_num_cpu_devices", 8)
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402
import shard_map_vma_cases as cases  # noqa: E402
from jax.sharding import Mesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402


def mesh(shape, names):
    return Mesh(np.array(jax.devices()[:int(np.prod(shape))]).reshape(shape), names)


def shard_map(f, *, mesh, in_specs, out_specs, axis_names=frozenset()):
    return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                         axis_names=set(axis_names), check_vma=True)


LIB = cases.Lib(jax.lax, jnp, jax.grad, jax.value_and_grad, jax.vjp, jax.jit, shard_map, P,
                mesh)


def main():
    out = {}
    for name, case in cases.CASES.items():
        for i, a in enumerate(case(LIB)):
            out[f"{name}/{i}"] = np.asarray(a)
    path = tempfile.NamedTemporaryFile(suffix=".npz", delete=False).name
    np.savez(path, **out)
    print(path)


if __name__ == "__main__":
    main()
