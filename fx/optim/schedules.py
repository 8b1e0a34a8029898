"""Learning-rate schedules: functions from the step count (an int32 array, or a Python int) to a
float32 scalar, written with ``fx.numpy`` so they trace under ``jit`` and can be passed
anywhere an optimizer takes a learning rate.

The formulas are optax's (same names, same argument order):

>>> sched = fx.optim.warmup_cosine_decay_schedule(0.0, 1e-3, warmup_steps=100,
...                                                decay_steps=1000)
>>> opt = fx.optim.adam(sched)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import fx.numpy as fnp
from fx import dtypes

__all__ = [
    "constant_schedule", "cosine_decay_schedule", "exponential_decay", "join_schedules",
    "linear_schedule", "piecewise_constant_schedule", "polynomial_schedule",
    "warmup_cosine_decay_schedule",
]

Schedule = Callable[[object], object]


def _steps(count):
    return fnp.asarray(count, dtypes.float32)


def _positive(name: str, what: str, value) -> None:
    if not value > 0:
        raise ValueError(f"fx.optim.{name}: {what} must be positive, got {value!r}")


def constant_schedule(value: float) -> Schedule:
    """The same ``value`` at every step."""
    return lambda count: fnp.full((), value, dtypes.float32)


def polynomial_schedule(init_value: float, end_value: float, power: float,
                        transition_steps: int, transition_begin: int = 0) -> Schedule:
    """From ``init_value`` to ``end_value`` over ``transition_steps`` steps after
    ``transition_begin``: ``(init - end) * (1 - t / transition_steps) ** power + end``."""
    if transition_steps <= 0:
        return constant_schedule(init_value)

    def schedule(count):
        t = fnp.clip(_steps(count) - transition_begin, 0, transition_steps)
        frac = 1 - t / transition_steps
        return (init_value - end_value) * frac**power + end_value

    return schedule


def linear_schedule(init_value: float, end_value: float, transition_steps: int,
                    transition_begin: int = 0) -> Schedule:
    """Linear interpolation from ``init_value`` to ``end_value`` (then constant)."""
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float,
                      transition_begin: int = 0, staircase: bool = False,
                      end_value: float | None = None) -> Schedule:
    """``init_value * decay_rate ** ((count - transition_begin) / transition_steps)``, held at
    ``init_value`` before ``transition_begin``; ``staircase`` floors the exponent;
    ``end_value`` bounds the result (below for decay, above for growth).

    >>> fx.optim.exponential_decay(1.0, 10, 0.5)(20)
    Array(0.25, dtype=float32)
    """
    _positive("exponential_decay", "transition_steps", transition_steps)
    if decay_rate == 0:
        raise ValueError("fx.optim.exponential_decay: decay_rate must not be 0")

    def schedule(count):
        decreased = _steps(count) - transition_begin
        p = decreased / transition_steps
        if staircase:
            p = fnp.floor(p)
        rate = fnp.asarray(decay_rate, dtypes.float32)
        value = fnp.where(decreased <= 0, init_value, init_value * fnp.power(rate, p))
        if end_value is not None:
            bound = fnp.maximum if decay_rate < 1 else fnp.minimum
            value = bound(value, end_value)
        return value

    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0,
                          exponent: float = 1.0) -> Schedule:
    """Half a cosine from ``init_value`` down to ``alpha * init_value`` over ``decay_steps``
    steps, then constant.

    >>> [round(float(fx.optim.cosine_decay_schedule(1.0, 100)(s)), 4) for s in (0, 50, 200)]
    [1.0, 0.5, 0.0]
    """
    _positive("cosine_decay_schedule", "decay_steps", decay_steps)

    def schedule(count):
        t = fnp.minimum(_steps(count), decay_steps)
        cosine = 0.5 * (1 + fnp.cos(math.pi * t / decay_steps))
        return init_value * ((1 - alpha) * cosine**exponent + alpha)

    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """``schedules[i]`` from ``boundaries[i-1]`` on, each seeing the steps since its start."""
    if len(boundaries) != len(schedules) - 1:
        raise ValueError(f"fx.optim.join_schedules: {len(schedules)} schedules need "
                         f"{len(schedules) - 1} boundaries, got {len(boundaries)}")

    def schedule(count):
        step = _steps(count)
        out = schedules[0](step)
        for boundary, s in zip(boundaries, schedules[1:]):
            out = fnp.where(step < boundary, out, s(step - boundary))
        return out

    return schedule


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                 decay_steps: int, end_value: float = 0.0,
                                 exponent: float = 1.0) -> Schedule:
    """Linear warmup from ``init_value`` to ``peak_value`` over ``warmup_steps``, then cosine
    decay to ``end_value`` at step ``decay_steps`` (which counts the warmup)."""
    if decay_steps <= warmup_steps:
        raise ValueError(f"fx.optim.warmup_cosine_decay_schedule: decay_steps ({decay_steps}) "
                         f"must exceed warmup_steps ({warmup_steps}); decay_steps includes "
                         "the warmup")
    alpha = 0.0 if peak_value == 0 else end_value / peak_value
    return join_schedules(
        [linear_schedule(init_value, peak_value, warmup_steps),
         cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)],
        [warmup_steps])


def piecewise_constant_schedule(init_value: float,
                                boundaries_and_scales: Mapping[int, float] | None = None
                                ) -> Schedule:
    """``init_value`` times every ``scale`` whose ``boundary`` the step count has passed
    (strictly).

    >>> sched = fx.optim.piecewise_constant_schedule(1.0, {10: 0.1, 20: 0.1})
    >>> [round(float(sched(s)), 6) for s in (10, 11, 25)]
    [1.0, 0.1, 0.01]
    """
    items = sorted((boundaries_and_scales or {}).items())
    for boundary, s in items:
        if s < 0:
            raise ValueError(f"fx.optim.piecewise_constant_schedule: scale {s} at boundary "
                             f"{boundary} must be non-negative")

    def schedule(count):
        step = _steps(count)
        value = fnp.full((), init_value, dtypes.float32)
        for boundary, s in items:
            value = fnp.where(step > boundary, value * s, value)
        return value

    return schedule
