"""``cpu_devices(n)``: n CPU devices in this process for a block (``num_cpu_devices``), the
previous count again afterwards, so tests run sharded programs in one process without other
tests noticing. Fixture use::

    @pytest.fixture
    def eight():
        with cpu_devices(8) as devices:
            yield devices
"""

import contextlib

import fx


@contextlib.contextmanager
def cpu_devices(n: int):
    old = fx.config.num_cpu_devices
    fx.config.update("num_cpu_devices", n)
    try:
        yield fx.devices("cpu")
    finally:
        fx.config.update("num_cpu_devices", old)
