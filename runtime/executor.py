"""What every executor shares: the lowered program's buffers sorted into temporaries,
constants, arguments and outputs; the outputs' sources; a pool of per-call states; and the
call protocol (check a state out, run, give it back, also when the run raises).

A target's executor implements only what differs: loading the program (``load``), making a
per-call state (``new_state``: its arena and whatever the launches read), moving a constant
to its memory (``device_constant``) and running one call over a state (``run``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from fx.runtime import pool
from fx.runtime.pool import StatePool


@dataclass(frozen=True)
class Slot:
    """One buffer of the program: its pointer-table slot and value, and for arguments the
    argument position (for outputs the donated argument's position, or -1)."""

    slot: int
    var: object
    position: int = -1
    offset: int = -1  # for temporaries: the arena offset

    @property
    def aval(self):
        return self.var.aval


class Executable:
    """A compiled program; immutable once built, so one can be called from many threads."""

    def __init__(self, low):
        self.name = low.name
        self.arena_bytes = low.plan.arena_bytes
        n_consts = len(low.consts)
        self.temps: list[Slot] = []
        self.inputs: list[Slot] = []
        self.outputs: list[Slot] = []
        self.const_views: dict = {}  # var -> the constant in this target's memory
        self.const_slots: list[tuple[int, object]] = []  # (slot, that array)
        buffers = sorted(low.buffers.values(), key=lambda b: b.slot)
        self.n_slots = max(len(buffers), 1)
        for b in buffers:
            if b.kind == "temp":
                self.temps.append(Slot(b.slot, b.var, offset=b.offset))
            elif b.kind == "const":
                host = np.ascontiguousarray(np.asarray(low.consts[b.position]), b.aval.dtype)
                arr = self.device_constant(host)
                self.const_views[b.var] = arr
                self.const_slots.append((b.slot, arr))
            elif b.kind == "input":
                self.inputs.append(Slot(b.slot, b.var, b.position - n_consts))
            else:
                donor = b.donor.position - n_consts if b.donor is not None else -1
                self.outputs.append(Slot(b.slot, b.var, donor))
        self.out_sources = [
            ("literal", src[1]) if src[0] == "literal" else ("buffer", src[1].var)
            for src in low.out_sources
        ]
        self.load(low)
        self.states: StatePool = StatePool(self.new_state)
        # Checks run once, before the first call's steps (see ``Compilation.first_run``); a call
        # that finds them not yet passed runs them under the lock (a check that raises is
        # run again by the next call).
        self._first_run = tuple(getattr(low, "first_run", ()))
        self._first_done = not self._first_run
        self._first_lock = threading.Lock()
        # The dependency schedule (``operations.Schedule.waves``): per wave, the calls this
        # thread runs and those handed to the worker threads. Empty: calls run in order.
        self.waves = ()
        if self.concurrent and pool.concurrency_enabled(self.threaded_libraries):
            self.waves = low.schedule.waves

    # --- what a target implements -----------------------------------------------------------

    def load(self, low) -> None:
        """Compile or load the program's source and prepare its steps."""
        raise NotImplementedError

    def device_constant(self, host: np.ndarray):
        return host

    def new_state(self):
        raise NotImplementedError

    def run(self, state, args: list) -> list:
        raise NotImplementedError

    # Whether independent calls of this target may run apart (see run_waves), and whether its
    # calls are multithreaded themselves (then only where they run on one thread each).
    concurrent = False
    threaded_libraries = False

    # --- the dependency schedule ------------------------------------------------------------

    def run_waves(self, call) -> None:
        """Run the program's calls wave by wave, ``call(i)`` running call ``i``: in a wave
        with several large calls all but the first go to the worker threads while this
        thread runs the rest; the wave ends when all have (also when one raises: the others
        still write the state's buffers)."""
        if pool.in_worker():
            for here, there in self.waves:
                for i in sorted(here + there):
                    call(i)
            return
        submit = pool.workers().submit
        for here, there in self.waves:
            futures = [submit(call, i) for i in there]
            try:
                for i in here:
                    call(i)
            finally:
                errors = [f.exception() for f in futures]
            for e in errors:
                if e is not None:
                    raise e

    # --- the call protocol ------------------------------------------------------------------

    def __call__(self, args: list) -> list:
        if not self._first_done:
            self._run_first_checks()
        state = self.states.acquire()
        try:
            return self.run(state, args)
        finally:
            self.release(state)

    # Whether ``run`` takes ``times`` (per-call seconds, for a profile).
    timed_calls = False

    def timed(self, args: list, times: list) -> list:
        """A call that adds each of its calls' seconds to ``times`` (see ``timed_calls``)."""
        if not self.timed_calls:
            raise NotImplementedError(f"{type(self).__name__} does not time its calls")
        if not self._first_done:
            self._run_first_checks()
        state = self.states.acquire()
        try:
            return self.run(state, args, times)
        finally:
            self.release(state)

    def _run_first_checks(self) -> None:
        with self._first_lock:
            if not self._first_done:
                for check in self._first_run:
                    check()
                self._first_done = True

    def release(self, state) -> None:
        self.states.release(state)
