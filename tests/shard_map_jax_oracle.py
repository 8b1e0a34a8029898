"""Run the ``shard_map_cases`` rows ``(mesh kind, axis names, case, grad inside?)`` given as
JSON on stdin under ``jax.shard_map`` with 8 CPU
devices (x64) and print the path of an ``.npz`` holding each row's result as ``r<i>``.
Used by ``test_shard_map_collectives.py`` in a subprocess."""

import json
import sys
import tempfile

import jax
import numpy as np

jax.config.update("jax_num_cpu_devices", 8)
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import shard_map_cases as cases  # noqa: E402
from jax.sharding import Mesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402


def main():
    rows = json.load(sys.stdin)
    x = cases.global_input(np.float64)
    out = {}
    for i, (kind, names, case, inside) in enumerate(rows):
        shape, axis_names = cases.MESHES[kind]
        mesh = Mesh(np.array(jax.devices()[:8]).reshape(shape), axis_names)
        names = tuple(names)
        n = int(np.prod([mesh.shape[a] for a in names]))
        if inside:  # the gradient taken inside, unchecked (fx's meaning there)
            body = cases.grad_inside(jax.lax, jax.numpy, jax.grad, names, n, case)
        else:
            body = cases.CASES[case](jax.lax, names, n)
        every = P(tuple(axis_names))
        f = jax.shard_map(lambda v, body=body: body(v)[None], mesh=mesh, in_specs=every,
                          out_specs=every, check_vma=not inside)
        out[f"r{i}"] = np.asarray(f(x))
    path = tempfile.NamedTemporaryFile(suffix=".npz", delete=False).name
    np.savez(path, **out)
    print(path)


if __name__ == "__main__":
    main()
