"""fx.distributed in one process (no launcher): initialize's checks, pmap over the one local
device against vmap, the collective as a step of the compiled program, the errors for bad
arguments, and the transport's own checks (signature mismatch, deadline) on stand-in
communicators. The multi-process runs are in test_mpi.py."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

import fx
import fx.lax as lax
from fx.distributed import transport as tr


@pytest.fixture
def initialized():
    fx.distributed.initialize()
    try:
        yield
    finally:
        fx.distributed.shutdown()


def test_initialize_once_and_checked_places(initialized):
    assert fx.distributed.is_initialized()
    assert (fx.process_index(), fx.process_count()) == (0, 1)
    with pytest.raises(RuntimeError, match="already initialized"):
        fx.distributed.initialize()


@pytest.mark.parametrize("n,pid", [(2, 2), (2, -1), (0, 0)])
def test_initialize_refuses_a_wrong_process_id(n, pid):
    with pytest.raises(ValueError, match=f"process_id={pid} is not a process"):
        fx.distributed.initialize(num_processes=n, process_id=pid)
    assert not fx.distributed.is_initialized()


def test_initialize_without_launcher_names_mpiexec():
    with pytest.raises(RuntimeError, match="mpiexec -n 2"):
        fx.distributed.initialize("127.0.0.1:1234", num_processes=2, process_id=1)
    fx.distributed.initialize("127.0.0.1:1234", num_processes=1, process_id=0)
    fx.distributed.shutdown()
    assert not fx.distributed.is_initialized()


def test_devices_of_one_process():
    assert fx.devices() == fx.local_devices() and fx.device_count() == 1
    assert fx.local_devices()[0].process_index == 0
    with pytest.raises(ValueError, match="process_index 3"):
        fx.local_devices(3)


OPS = {
    "psum": lambda v: lax.psum(v, "i"), "pmax": lambda v: lax.pmax(v, "i"),
    "pmean": lambda v: lax.pmean(v, "i"), "all_gather": lambda v: lax.all_gather(v, "i"),
    "axis_index": lambda v: v * 0 + lax.axis_index("i"),
    "ppermute": lambda v: lax.ppermute(v, "i", [(0, 0)]),
}


@pytest.mark.parametrize("name", OPS)
def test_pmap_over_one_device_equals_vmap_over_one_lane(name):
    x = np.arange(6, dtype=np.int32).reshape(1, 6)
    got = np.asarray(fx.pmap(OPS[name], axis_name="i")(x))
    want = np.asarray(fx.vmap(OPS[name], axis_name="i")(x))
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_pmap_of_scalars_per_device_keeps_their_rank():
    # A (1,) argument maps to a scalar per device, and the outputs stack back to (1,), as in
    # jax; a scalar through the transport's collectives stays a scalar.
    for arg in (np.ones(1, np.float32), fx.numpy.ones(1)):
        out = fx.pmap(lambda v: lax.all_gather(v * 2, "i"), axis_name="i")(arg)
        assert np.asarray(out).shape == (1, 1), np.asarray(out).shape
    assert fx.pmap(lambda v: v + 1, axis_name="i")(np.ones(1, np.float32)).shape == (1,)


def test_in_axes_out_axes_and_the_compiled_step():
    f = fx.pmap(lambda a, b: (lax.psum(a * b, "i"), b), axis_name="i", in_axes=(1, None),
                out_axes=(0, None))
    a, b = np.ones((3, 1), np.float32), np.float32(2.0)
    s, same = f(a, b)
    assert np.asarray(s).shape == (1, 3) and np.all(np.asarray(s) == 2.0)
    assert np.asarray(same).shape == ()
    text = fx.pmap(OPS["psum"], axis_name="i").lower(np.ones((1, 2), np.float32)).as_text()
    assert "collective psum over 'i' (self, 1 process) (step" in text, text


def test_pmap_errors_name_the_problem():
    f = fx.pmap(OPS["psum"], axis_name="i")
    with pytest.raises(ValueError, match="has 4 along its mapped axis 0, but this process has 1"):
        f(np.ones((4, 2), np.float32))
    with pytest.raises(NameError, match="fx.pmap"):
        fx.jit(lambda v: lax.psum(v, "j"))(np.ones(2, np.float32))


@pytest.mark.parametrize("name", OPS)
def test_jit_of_pmap_in_one_process_equals_pmap(name):
    x = np.arange(6, dtype=np.int32).reshape(1, 6)
    f = fx.pmap(OPS[name], axis_name="i")
    got, want = np.asarray(fx.jit(f)(x)), np.asarray(f(x))
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_pmap_over_several_local_devices_is_a_vmap(monkeypatch):
    from fx.distributed import pmap as pmap_module

    monkeypatch.setattr(pmap_module, "_local_count", lambda: 4)
    x = np.arange(12.0).reshape(4, 3)

    def f(v, scale):
        return lax.psum(v, "i") * scale + lax.axis_index("i"), lax.all_gather(v, "i")

    pm = fx.pmap(f, axis_name="i", static_broadcasted_argnums=1)
    want = fx.vmap(lambda v: f(v, 2.0), axis_name="i")(x)
    for got in (pm(x, 2.0), fx.jit(lambda v: pm(v, 2.0))(x)):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    grad = fx.grad(lambda v: fx.numpy.sum(pm(v, 2.0)[0] ** 2))(x)
    # loss = sum over lanes i of (2 S + i)^2, S the sum of the lanes: each lane gets the same.
    s = x.sum(0)
    np.testing.assert_allclose(grad, np.broadcast_to(4 * (8 * s + 6), x.shape), rtol=1e-12)
    with pytest.raises(ValueError, match="has 5 along its mapped axis 0, but this process "
                                         "has 4 local device"):
        pm(np.ones((5, 3)), 2.0)


class _Table(tr.Transport):
    """A transport whose allgather returns given rows (what the other ranks sent)."""

    def __init__(self, rows):
        self.rows, self.size = rows, len(rows)

    def allgather(self, x, what):
        pad = [np.frombuffer(r.encode().ljust(x.size, b"\0"), np.uint8) for r in self.rows]
        return np.stack(pad)


def test_agree_lists_every_rank_signature():
    _Table(["psum of f32[3]", "psum of f32[3]"]).agree("psum of f32[3]", "psum")
    with pytest.raises(tr.CollectiveMismatchError,
                       match=r"rank 0: psum of f32\[3\]; rank 1: psum of i32\[3\]"):
        _Table(["psum of f32[3]", "psum of i32[3]"]).agree("psum of f32[3]", "fx.lax.psum")


class _Comm:
    """A communicator whose Allreduce blocks (another rank never joins) until aborted."""

    def __init__(self):
        self.released = threading.Event()

    def Get_rank(self):  # noqa: N802  (mpi4py's names)
        return 1

    def Get_size(self):  # noqa: N802
        return 2

    def Allreduce(self, src, out, op):  # noqa: N802
        assert self.released.wait(10), "the watchdog never aborted the blocked collective"


class _Aborts(tr.MpiTransport):
    messages: list = []

    def abort(self, message, code=1):  # instead of MPI_Abort: note it, unblock the caller
        self.messages.append(message)
        self.comm.released.set()


def test_mpi_collective_deadline_aborts_naming_the_rank():
    pytest.importorskip("mpi4py")
    t = _Aborts(_Comm(), timeout=0.2)
    t.allreduce(np.ones(3, np.float32), tr.ReduceOp.SUM, "fx.lax.psum over 'i'")
    (message,) = t.messages
    assert re.search(r"fx.lax.psum over 'i' timed out after 0\.\d s on rank 1 of 2", message), \
        message


def test_native_collective_library_compiles_for_both_handle_kinds():
    # Open MPI's handles are pointers, MPICH's ints: the runtime library that generated code
    # calls (fx.distributed.native) compiles for either, and exports what bind() fills.
    from fx.distributed import native
    from fx.runtime import cc

    if cc.compiler() is None:
        pytest.skip("needs a C compiler")
    for handle in ("void*", "int32_t"):
        lib = cc.build(native.library_source(handle))
        for symbol in ("fx_mpi_group", "fx_mpi_started_ns", "fx_mpi_what", "fx_mpi_allreduce",
                       "fx_mpi_allgather"):
            assert hasattr(lib, symbol), symbol  # (dlsym finds data and functions)


def test_native_collective_names_are_c_string_literals():
    from fx.distributed import native

    assert native._c_string("fx.lax.psum over 'i' of f32[3]") == \
        "\"fx.lax.psum over 'i' of f32[3]\""
    # quotes, backslashes, '?' (trigraphs), newlines and UTF-8 bytes become octal escapes
    assert native._c_string('a"b\\c?\n\u00e9') == '"a\\042b\\134c\\077\\012\\303\\251"'
