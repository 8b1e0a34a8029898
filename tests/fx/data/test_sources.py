"""fx.data sources: the record file (round trip of structures and dtypes, truncated and corrupt
files give errors naming the file and the record), .npy/.npz shard directories, sequences,
the digits, and sources pickling cheaply for workers."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import fx.data
from fx.data import Dataset, RecordFileError, RecordSource, ShardSource, write_records


def _examples(n=5):
    rng = np.random.default_rng(0)
    for i in range(n):
        yield {"image": rng.standard_normal((3, 2)).astype(np.float32),
               "label": np.int64(i), "meta": (np.arange(i, dtype=np.uint8), [np.float64(i / 2)])}


def test_record_file_round_trip(tmp_path):
    path = tmp_path / "a.fxrec"
    want = list(_examples(5))
    assert write_records(path, iter(want)) == 5
    src = RecordSource(path)
    assert len(src) == 5
    for i, w in enumerate(want):
        got = src[i]
        assert got["image"].tobytes() == w["image"].tobytes() and got["image"].dtype == np.float32
        assert got["label"] == i and got["label"].dtype == np.int64
        assert got["meta"][0].tolist() == list(range(i)) and isinstance(got["meta"], tuple)
        assert isinstance(got["meta"][1], list) and got["meta"][1][0] == i / 2
    assert src[-1]["label"] == 4
    with pytest.raises(IndexError, match="record 5 is out of range for 5 records"):
        src[5]
    again = pickle.loads(pickle.dumps(src))
    assert len(pickle.dumps(src)) < 200 and again[3]["label"] == 3
    big = np.zeros((3, 4), np.complex64) + 1j
    write_records(tmp_path / "b.fxrec", [big, np.array(True), np.float16(2.5)])
    b = RecordSource(tmp_path / "b.fxrec")
    assert b[0].tobytes() == big.tobytes() and b[1] and b[2] == np.float16(2.5)
    with pytest.raises(TypeError, match="dict keys must be strings"):
        write_records(tmp_path / "c.fxrec", [{1: np.zeros(2)}])


@pytest.fixture
def record_file(tmp_path):
    path = tmp_path / "d.fxrec"
    write_records(path, _examples(6))
    return path, path.read_bytes()


@pytest.mark.parametrize("cut", [0, 10, 40, -30, -1])
def test_truncated_record_files_are_refused(record_file, cut):
    path, data = record_file
    path.write_bytes(data[:cut] if cut else b"")
    with pytest.raises(RecordFileError, match="d.fxrec.*(truncated|too short)"):
        RecordSource(path)


def test_a_corrupt_record_is_named_and_the_others_still_read(record_file):
    path, data = record_file
    src = RecordSource(path)
    offset, length = (int(v) for v in src._index[3].tolist()[:2])
    bad = bytearray(data)
    bad[offset + length - 3] ^= 0x40
    path.write_bytes(bytes(bad))
    src = RecordSource(path)
    assert src[2]["label"] == 2 and src[4]["label"] == 4
    with pytest.raises(RecordFileError, match="record 3 is corrupt"):
        src[3]
    # Through a pipeline, the failure names the record too.
    with pytest.raises(fx.data.RecordError, match="record 3 raised RecordFileError"):
        list(Dataset.from_source(path).map(lambda r: r))


def test_corrupt_index_header_and_wrong_files(record_file, tmp_path):
    path, data = record_file
    bad = bytearray(data)
    bad[-30] ^= 1  # inside the index
    path.write_bytes(bytes(bad))
    with pytest.raises(RecordFileError, match="corrupt index"):
        RecordSource(path)
    bad = bytearray(data)
    bad[16] ^= 1  # the record count in the header
    path.write_bytes(bytes(bad))
    with pytest.raises(RecordFileError, match="truncated|corrupt header"):
        RecordSource(path)
    bad = bytearray(data)
    bad[8] = 9  # the version
    path.write_bytes(bytes(bad))
    with pytest.raises(RecordFileError, match="format version 9"):
        RecordSource(path)
    other = tmp_path / "x.bin"
    other.write_bytes(b"\x93NUMPY" + b"\0" * 100)
    with pytest.raises(RecordFileError, match="not an fx record file"):
        RecordSource(other)


def test_shard_directories(tmp_path):
    npy = tmp_path / "npy"
    npy.mkdir()
    x = np.arange(30, dtype=np.int16).reshape(10, 3)
    np.save(npy / "part0.npy", x[:4])
    np.save(npy / "part1.npy", x[4:])
    src = ShardSource(npy)
    assert len(src) == 10 and [src[i].tolist() for i in (0, 3, 4, 9)] == \
        [x[i].tolist() for i in (0, 3, 4, 9)]
    assert len(pickle.dumps(src)) < 1000 and pickle.loads(pickle.dumps(src))[5].tolist() == \
        x[5].tolist()
    npz = tmp_path / "npz"
    npz.mkdir()
    np.savez(npz / "a.npz", x=x[:6], y=np.arange(6))
    np.savez(npz / "b.npz", x=x[6:], y=np.arange(6, 10))
    batches = list(Dataset.from_source(str(npz)).batch(4))
    assert [b["y"].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    np.testing.assert_array_equal(batches[1]["x"], x[4:8])
    np.save(npz / "c.npy", x)
    with pytest.raises(ValueError, match="mixes .npy and .npz"):
        ShardSource(npz)
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        ShardSource(tmp_path / "missing")


class _Squares:
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return np.int32(i * i)


def test_sequences_and_arrays():
    assert [b.tolist() for b in Dataset.from_source(_Squares()).batch(2)] == [[0, 1], [4, 9],
                                                                            [16]]
    assert [r.tolist() for r in Dataset.from_source(np.arange(6).reshape(3, 2))] == \
        [[0, 1], [2, 3], [4, 5]]
    fx_src = fx.data.as_source(fx.numpy.arange(3))
    assert isinstance(fx_src, fx.data.ArraySource) and int(fx_src[2]) == 2


@pytest.mark.slow  # importing scikit-learn takes seconds; the examples load the digits anyway
def test_digits():
    pytest.importorskip("sklearn")
    d = fx.data.digits()
    assert len(d) == 1797 and d[0]["image"].shape == (8, 8) and 0 <= d[0]["image"].max() <= 1
