"""Launched by test_mpi.py under ``mpiexec -n N`` (one launch runs every check: a launch costs
seconds). Each collective under ``fx.pmap`` across the N processes must equal its
single-process meaning: the same function under ``fx.vmap(axis_name=...)`` over the stacked
global data, which every process computes itself. Integers are compared bitwise, floats to
a few ulps (MPI may sum in another order than vmap's reduction). Each process prints
``PASS <check> rank <r>``; a failing check raises, which aborts every process. With the
argument ``then-mismatch`` the run ends with a shape mismatch instead of a shutdown.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import fx
import fx.lax as lax
import fx.numpy as fnp

T0 = time.perf_counter()  # after the imports: the times printed are the checks'
fx.distributed.initialize(timeout=60)
R, N = fx.process_index(), fx.process_count()
RNG = np.random.default_rng(7)  # the same data on every process
F32 = RNG.standard_normal((N, 5)).astype(np.float32)
F32[N - 1, 2] = np.nan  # NaN must win pmax/pmin as in vmap
I32 = RNG.integers(-(2 ** 31), 2 ** 31 - 1, (N, 5)).astype(np.int32)  # sums wrap
U8 = RNG.integers(0, 255, (N, 4)).astype(np.uint8)
F16 = RNG.standard_normal((N, 3)).astype(np.float16)


def passed(name: str) -> None:
    print(f"PASS {name} rank {R} {time.perf_counter() - T0:.1f}s", flush=True)


def per_process(f, *xs, **kw):
    """f pmapped over the processes, on this process's rows; this process's row back."""
    out = fx.pmap(f, axis_name="i", **kw)(*[x[R:R + 1] for x in xs])
    return fx.tree_util.tree_map(lambda o: np.asarray(o)[0], out)


def single(f, *xs):
    return fx.tree_util.tree_map(lambda o: np.asarray(o)[R],
                                 fx.vmap(f, axis_name="i")(*xs))


def same_bits(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, a.shape, b.dtype, b.shape)
    assert a.tobytes() == b.tobytes(), (what, a, b)


def close(a, b, what, rtol=1e-6):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, a.shape, b.dtype, b.shape)
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol,
                               atol=rtol, err_msg=what)


COLLECTIVES = {
    "psum": lambda v: lax.psum(v, "i"),
    "pmax": lambda v: lax.pmax(v, "i"),
    "pmin": lambda v: lax.pmin(v, "i"),
    "pmean": lambda v: lax.pmean(v, "i"),
    "all_gather": lambda v: lax.all_gather(v, "i"),
    "axis_index": lambda v: lax.axis_index("i") + v.astype(np.int32)[0] * 0,
    "ppermute": lambda v: lax.ppermute(v, "i", [(j, (j + 1) % N) for j in range(N)]),
    "psum_scatter": lambda v: lax.psum_scatter(fnp.concatenate([v] * N), "i", tiled=True),
    "all_to_all": lambda v: lax.all_to_all(fnp.stack([v] * N) + 1, "i", 0, 0),
    "psum(1)": lambda v: lax.psum(1, "i") + v.astype(np.int32) * 0,
}
EXACT = {"pmax", "pmin", "all_gather", "axis_index", "ppermute", "all_to_all", "psum(1)"}

for name, f in COLLECTIVES.items():
    for data in (F32, I32, U8, F16):
        dt = data.dtype.name
        got, want = per_process(f, data), single(f, data)
        if data.dtype.kind in "iu" or name in EXACT:
            same_bits(got, want, f"{name} {dt}")
        else:
            close(got, want, f"{name} {dt}", rtol=2e-3 if dt == "float16" else 1e-6)
    passed(name)

# A psum is a kernel of the compiled program calling MPI from the generated code (no Python
# step: it runs inside the C segment); a float pmax (a NaN must win) is a transport step.
text = fx.pmap(COLLECTIVES["psum"], axis_name="i").lower(F32[R:R + 1]).as_text()
assert (f"psum over 'i' as MPI_Allreduce called from the generated code (mpi, {N} "
        "processes)") in text and "segment fx_seg0: launch k0" in text, text
text = fx.pmap(COLLECTIVES["pmax"], axis_name="i").lower(F32[R:R + 1]).as_text()
assert f"collective pmax over 'i' (mpi, {N} processes)" in text, text
passed("as_text")
assert len(fx.devices()) == N and fx.local_devices()[0].process_index == R, fx.devices()
passed("devices")


# jit inside pmap, and pmap of a jitted function.
def scaled_sum(v):
    return lax.psum(v * 2.0, "i") + 1.0


close(per_process(lambda v: fx.jit(scaled_sum)(v), F32), single(scaled_sum, F32), "jit inside")
close(per_process(fx.jit(scaled_sum), F32), single(scaled_sum, F32), "pmap(jit)")
passed("jit")

# vmap inside pmap: a batch axis of 3 per process, the collective over the processes.
B = RNG.standard_normal((N, 3, 4)).astype(np.float32)
close(per_process(lambda v: fx.vmap(lambda u: lax.psum(u, "i"))(v), B),
      single(lambda v: fx.vmap(lambda u: lax.psum(u, "i"))(v), B), "vmap inside")
same_bits(per_process(lambda v: fx.vmap(lambda u: lax.all_gather(u, "i"))(v), B),
          single(lambda v: fx.vmap(lambda u: lax.all_gather(u, "i"))(v), B), "vmap gather")
passed("vmap")


# The psum kernel inside a loop compiled to C (the body's kernels called from the loop), and
# with a donated argument.
def looped(v):
    return lax.fori_loop(0, 3, lambda k, u: lax.psum(u, "i") * 0.5 + k, v)


text = fx.pmap(looped, axis_name="i").lower(F32[R:R + 1]).as_text()
assert "(native fx_loop" in text and "cpu.mpi_collective" in text, text
close(per_process(looped, F32), single(looped, F32), "psum in a C loop", rtol=1e-5)
donated = fx.pmap(COLLECTIVES["psum"], axis_name="i", donate_argnums=0)
same_bits(donated(I32[R:R + 1].copy())[0], single(COLLECTIVES["psum"], I32), "psum, donated")
passed("loop")


# grad through psum (its transpose is a psum) and through all_gather.
def loss(w, x):
    return lax.psum(fnp.sum(fnp.tanh(x * w) ** 2), "i")


W = RNG.standard_normal((N, 5)).astype(np.float32)
close(per_process(fx.grad(loss), W, F32 * 0 + 1), single(fx.grad(loss), W, F32 * 0 + 1), "grad")
close(per_process(fx.grad(lambda w: fnp.sum(lax.all_gather(w, "i") ** 3)), W),
      single(fx.grad(lambda w: fnp.sum(lax.all_gather(w, "i") ** 3)), W), "grad all_gather")
passed("grad")

# A data-parallel SGD step equals the full-batch step: each process holds 4 examples.
X = RNG.standard_normal((N * 4, 6)).astype(np.float32)
Y = RNG.standard_normal((N * 4, 2)).astype(np.float32)
P = {"w": RNG.standard_normal((6, 2)).astype(np.float32), "b": np.zeros(2, np.float32)}


def mse(p, x, y):
    return fnp.mean((x @ p["w"] + p["b"] - y) ** 2)


def dp_step(p, x, y):
    g = lax.pmean(fx.grad(mse)(p, x, y), "i")
    return fx.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)


step = fx.pmap(dp_step, axis_name="i", in_axes=(None, 0, 0), out_axes=None)
mine = step(P, X.reshape(N, 4, 6)[R:R + 1], Y.reshape(N, 4, 2)[R:R + 1])
full = fx.tree_util.tree_map(lambda a, b: a - 0.1 * b, P, fx.grad(mse)(P, X, Y))
for k in P:
    close(mine[k], full[k], f"sgd {k}", rtol=2e-6)
    # Every process ends with the same parameters, bit for bit.
    bits = per_process(lambda v: lax.all_gather(v, "i"), np.asarray(mine[k])[None].repeat(N, 0))
    assert all(bits[j].tobytes() == bits[0].tobytes() for j in range(N)), (k, bits)
passed("sgd")

if sys.argv[1:] == ["then-mismatch"]:
    # The last check ends the job (a launch costs seconds, so it shares this one): the
    # processes pass differently shaped values to one psum; all must raise, listing both.
    fx.pmap(COLLECTIVES["psum"], axis_name="i")(np.ones((1, 3 + R), np.float32))
    print(f"rank {R} finished: the mismatch did not stop it", flush=True)
fx.distributed.shutdown()
passed("shutdown")
sys.exit(0)
