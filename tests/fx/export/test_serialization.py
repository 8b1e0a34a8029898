"""fx.export.export / Exported.serialize / deserialize: a jitted function's program as bytes,
run again here and in a fresh process, and every kind of bad blob refused clearly."""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
from harness import assert_bitwise

import fx
import fx.numpy as jnp
from fx.export import DeserializationError, deserialize, export
from fx.export.serialization import _HEADER, FORMAT_VERSION, MAGIC

_W = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)


def _model(x, bias):
    h = jnp.tanh(x @ _W + bias["b"])  # _W is closed over: it travels as a constant
    h = fx.lax.fori_loop(0, 3, lambda i, v: v * 1.5 - 0.25, h)
    return {"y": h, "total": h.sum()}


def _args(n=2):
    return np.linspace(-1, 1, 4 * n, dtype=np.float32).reshape(n, 4), {
        "b": np.float32([0.1, -0.2, 0.3])}


def test_round_trip_is_bitwise_the_jitted_function():
    x, bias = _args()
    exp = export(fx.jit(_model))(x, bias)
    assert [a.str_short() for a in exp.in_avals] == ["f32[2,4]", "f32[3]"]
    back = deserialize(exp.serialize())
    got, want = back.call(x, bias), fx.jit(_model)(x, bias)
    for k in ("y", "total"):
        assert_bitwise(np.asarray(got[k]), np.asarray(want[k]))
    assert isinstance(got["y"], fx.Array)
    assert back.as_text() == fx.jit(_model).lower(x, bias).as_text()
    assert "scan" in back.as_text() and "# memory: arena" in back.as_text()


def test_exporting_from_shape_dtype_structs():
    x, bias = _args(5)
    exp = export(_model)(fx.ShapeDtypeStruct((5, 4), np.float32), {
        "b": fx.ShapeDtypeStruct((3,), np.float32)})
    assert_bitwise(np.asarray(deserialize(exp.serialize()).call(x, bias)["y"]),
                   np.asarray(fx.jit(_model)(x, bias)["y"]))


_CHILD = """
import sys, numpy as np, fx
exp = fx.export.deserialize(open(sys.argv[1], "rb").read())
x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
out = exp.call(x, {"b": np.float32([0.1, -0.2, 0.3])})
np.save(sys.argv[2], np.asarray(out["y"]))
print(sorted(sys.modules.get("__main__").__dict__).count("_model"))
"""


def test_a_fresh_process_runs_the_blob_without_the_users_code(tmp_path):
    x, bias = _args()
    blob, out = tmp_path / "model.fxexport", tmp_path / "y.npy"
    blob.write_bytes(export(fx.jit(_model))(x, bias).serialize())
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(blob), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "0"  # the child never defined (or imported) the model
    assert "test_serialization" not in proc.stderr
    assert_bitwise(np.load(out), np.asarray(fx.jit(_model)(x, bias)["y"]))


def _blob():
    return export(fx.jit(_model))(*_args()).serialize()


def _rewrap(payload: bytes, version=FORMAT_VERSION) -> bytes:
    return _HEADER.pack(MAGIC, version, hashlib.sha256(payload).digest()) + payload


def test_bad_blobs_are_refused_with_the_reason():
    blob = _blob()
    with pytest.raises(DeserializationError, match="not an fx.export blob"):
        deserialize(b"\x89PNG\r\n" + blob[6:])
    with pytest.raises(DeserializationError, match="not an fx.export blob"):
        deserialize(blob[:10])
    with pytest.raises(DeserializationError, match="corrupt or truncated"):
        deserialize(blob[:-100])
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0x40
    with pytest.raises(DeserializationError, match="corrupt or truncated"):
        deserialize(bytes(flipped))
    with pytest.raises(DeserializationError, match="format version 99; this fx reads version 1"):
        deserialize(_rewrap(blob[_HEADER.size:], version=99))


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("echo pwned",))


def test_a_blob_naming_other_code_is_refused_before_anything_runs():
    payload = pickle.dumps({"fun_name": _Evil()})
    with pytest.raises(DeserializationError, match=r"refers to (posix|os)\.system"):
        deserialize(_rewrap(payload))


def test_arguments_of_other_types_are_a_clear_error():
    x, bias = _args()
    exp = deserialize(_blob())
    with pytest.raises(TypeError, match=r"argument 0 of _model must be f32\[2,4\], got "
                                        r"float64\[2, 4\]"):
        exp.call(x.astype(np.float64), bias)
    with pytest.raises(TypeError, match="was exported for arguments"):
        exp.call(x)


def test_python_code_in_the_program_cannot_be_exported():
    def f(x):
        return fx.pure_callback(np.sin, fx.ShapeDtypeStruct(x.shape, x.dtype), x) * 2

    with pytest.raises(ValueError, match="calls Python code that cannot be serialized: "
                                         "pure_callback"):
        export(f)(np.ones(3, np.float32))


def test_a_blob_from_another_fxs_code_generator_is_refused():
    exp = deserialize(_blob())
    other = dataclasses.replace(exp, source=exp.source + "\n/* another fx */", _exe=[])
    with pytest.raises(DeserializationError, match="lowers _model to other code"):
        other.call(*_args())


def test_one_deserialized_program_called_from_many_threads():
    exp = deserialize(_blob())
    inputs = [(_args()[0] * (i + 1), _args()[1]) for i in range(6)]
    want = [np.asarray(fx.jit(_model)(*a)["y"]) for a in inputs]
    got = [None] * 6

    def work(i):
        got[i] = np.asarray(exp.call(*inputs[i])["y"])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for g, w in zip(got, want):
        assert_bitwise(g, w)
    assert len(exp._exe) == 1
