"""CI's slice of the slow tests: the commit hash picks one sixteenth, and the slices partition
the slow set (every slow test runs for some commit, none twice in one run)."""

import zlib

import pytest
from thinning import SLICES, slow_slice


class _Item:
    def __init__(self, nodeid: str, slow: bool):
        self.nodeid = nodeid
        self._slow = slow

    def get_closest_marker(self, name):
        return pytest.mark.slow if name == "slow" and self._slow else None


def _seed_for(index: int) -> str:
    """A seed that picks slice ``index``."""
    n = 0
    while zlib.crc32(str(n).encode()) % SLICES != index:
        n += 1
    return str(n)


def test_slices_partition_the_slow_tests_and_keep_the_rest():
    items = [_Item(f"tests/t.py::test_{i}", slow=i % 3 != 0) for i in range(400)]
    slow = {it.nodeid for it in items if it._slow}
    seen: list[str] = []
    for index in range(SLICES):
        kept, dropped = slow_slice(items, _seed_for(index))
        assert {it.nodeid for it in kept} | {it.nodeid for it in dropped} == {
            it.nodeid for it in items}
        assert all(not it._slow for it in kept if it.nodeid not in slow) and all(
            it._slow for it in dropped)
        assert {it.nodeid for it in items if not it._slow} <= {it.nodeid for it in kept}
        seen += [it.nodeid for it in kept if it._slow]
    assert sorted(seen) == sorted(slow)  # each slow test in exactly one slice


def test_the_same_seed_picks_the_same_tests():
    items = [_Item(f"tests/t.py::test_{i}", slow=True) for i in range(200)]
    first = [it.nodeid for it in slow_slice(items, "213c7ae")[0]]
    assert first == [it.nodeid for it in slow_slice(items, "213c7ae")[0]]
    assert 0 < len(first) < len(items) // 4
