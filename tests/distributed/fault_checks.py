"""Launched by test_mpi.py under ``mpiexec -n 2`` to check that a failure in one process ends
every process with a clear message, never a hang. The mode is the first argument:

- ``mismatch``: the processes pass differently shaped values to the same psum;
- ``kill``: rank 1 dies (SIGKILL) while rank 0 waits in a psum;
- ``raise``: rank 1 raises while rank 0 waits in a psum;
- ``timeout``: rank 1 never joins (it sleeps): rank 0's psum misses its deadline;
- ``mesh-timeout``: the same in a compiled psum (a kernel calling MPI) over one axis of a
  1x2 mesh (its sub-communicator, fx.distributed.mesh).
"""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np

import fx
import fx.lax as lax

mode = sys.argv[1]
fx.distributed.initialize(timeout=float(sys.argv[2]) if len(sys.argv) > 2 else 60.0)
R = fx.process_index()
psum = fx.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
psum(np.ones((1, 2), np.float32))  # both processes run one collective first
if mode == "mesh-timeout":
    from fx.distributed import mesh as dmesh

    with dmesh.bind(fx.make_mesh((1, 2), ("x", "y"))) as axes:
        f = axes.jit(lambda v: lax.psum(v, "y"))
        f(np.ones(3, np.float32))  # together once (the first run's signature check)
        if R == 1:
            time.sleep(600)
        f(np.ones(3, np.float32))  # rank 0 alone, in the generated C
elif mode == "mismatch":
    psum(np.ones((1, 3 + R), np.float32))
elif R == 1:
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "raise":
        raise ValueError("rank 1 fails on purpose")
    time.sleep(600)
else:
    psum(np.ones((1, 4), np.float32))
print(f"rank {R} finished: the failure did not stop it", flush=True)
