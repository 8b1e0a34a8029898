"""``fx.jit`` with ``in_shardings``/``out_shardings`` in one process: inputs placed,
outputs carrying their shardings, values bitwise those of the unsharded program."""

import numpy as np
import pytest
from cpu_devices import cpu_devices

import fx
import fx.numpy as fnp
from fx.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding

P = PartitionSpec


@pytest.fixture
def eight():
    """8 CPU devices for the test, 1 again afterwards."""
    with cpu_devices(8) as devices:
        yield devices



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
