"""Compiled.profile (fx.profiling): every step of the schedule timed on its own, beside its
FLOPs, bytes and the machine's roofline."""

import numpy as np
import pytest

import fx
import fx.numpy as fnp
from fx import profiling
from fx.runtime import cc, peaks

pytestmark = pytest.mark.skipif(cc.compiler() is None, reason="needs a C compiler")

PEAKS = peaks.Peaks(flops=100e9, bytes_per_s=10e9, threads=2, march="native")


@pytest.fixture(autouse=True)
def _fixed_peaks(monkeypatch):
    monkeypatch.setattr(peaks, "measure", lambda refresh=False: PEAKS)


def _mlp_grad():
    def loss(w1, w2, x):
        return fnp.sum(fnp.tanh(x @ w1) @ w2 ** 2)

    rng = np.random.default_rng(0)
    args = [fnp.asarray(rng.standard_normal(s).astype(np.float32)) for s in
            ((256, 256), (256, 8), (256, 256))]
    return fx.jit(fx.grad(loss, (0, 1))), args


def test_every_step_is_timed_once_with_its_work():
    f, args = _mlp_grad()
    compiled = f.lower(*args).compile()
    prof = compiled.profile(*args, repeat=3)
    program = compiled._program
    steps = [s for c in prof.calls for s in c.steps]
    assert sorted(steps) == list(range(len(program.steps)))
    assert all(c.seconds > 0 for c in prof.calls)
    assert prof.flops == pytest.approx(compiled.cost_analysis()["flops"])
    assert any(c.bound(PEAKS) == "compute" for c in prof.calls)  # the products
    text = str(prof)
    assert text.startswith("profile of ") and "100.0 GFLOP/s float32 FMA peak" in text
    assert len(text.splitlines()) == 3 + len(prof.calls)
    assert "cpu.tiled_gemm" in text and "cpu.fused_elementwise" in text


def test_one_call_per_operation_computes_the_same_values():
    f, args = _mlp_grad()
    compiled = f.lower(*args).compile()
    split = compiled._program.one_call_per_operation()
    assert all(len(getattr(c, "ops", (c,))) == 1 for c in split.schedule.calls)
    bufs = [np.asarray(a) for a in args]
    want = compiled._exe(list(bufs))
    got = split.compile()(list(bufs))
    for w, g in zip(want, got):
        assert np.asarray(w).view(np.uint32).tolist() == np.asarray(g).view(np.uint32).tolist()


def test_donated_arguments_survive_a_profile():
    f = fx.jit(lambda x: x * 2.0 + 1.0, donate_argnums=0)
    x = fnp.arange(8.0)
    compiled = f.lower(x).compile()
    compiled.profile(x, repeat=2)
    assert np.array_equal(np.asarray(x), np.arange(8.0, dtype=np.float32))


def test_bad_arguments_are_refused_as_a_call_refuses_them():
    f, args = _mlp_grad()
    compiled = f.lower(*args).compile()
    with pytest.raises(TypeError, match="argument types differ"):
        compiled.profile(args[0], args[1], fnp.ones((3, 256)))
    with pytest.raises(ValueError, match="repeat must be at least 1"):
        compiled.profile(*args, repeat=0)


def test_the_roofline_arithmetic():
    compute = profiling.CallProfile((0,), "gemm", seconds=1e-3, flops=50e6, bytes=1e6)
    memory = profiling.CallProfile((1,), "add", seconds=1e-3, flops=1e6, bytes=5e6)
    idle = profiling.CallProfile((2,), "nothing", seconds=0.0, flops=0.0, bytes=0.0)
    # balance 10 FLOP/byte: 50 is above it, 0.2 below
    assert compute.bound(PEAKS) == "compute" and compute.fraction_of_peak(PEAKS) == 0.5
    assert memory.bound(PEAKS) == "memory" and memory.fraction_of_peak(PEAKS) == 0.5
    assert idle.intensity == 0.0 and idle.fraction_of_peak(PEAKS) == 0.0
    prof = profiling.Profile("f", (compute, memory, idle), PEAKS, 1)
    assert prof.seconds == 2e-3 and prof.flops == 51e6
    assert "compute   50.0  gemm" in str(prof) and "memory   50.0  add" in str(prof)
