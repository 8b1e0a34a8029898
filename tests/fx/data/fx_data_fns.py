"""Module-level functions for the fx.data tests: worker processes receive the pipeline by
pickling, so its functions must be importable by name in the (spawned) workers. The tests put
this directory on sys.path, which spawned workers inherit."""

from __future__ import annotations

import os
import time

import numpy as np


def jitter_square(record):
    """A per-record map with a random sleep (a function of the record, so reruns agree on
    the value but not on the timing of the workers)."""
    x = np.asarray(record["x"])
    time.sleep(float(np.random.default_rng().uniform(0, 0.003)))
    return {"x": x * x, "y": record["y"]}


def augment(record, rng):
    """A random crop with padding, a random flip and a normalization (the benchmark's)."""
    img = np.asarray(record["image"], dtype=np.float32)
    padded = np.zeros((img.shape[0] + 8, img.shape[1] + 8), np.float32)
    padded[4:-4, 4:-4] = img
    dy, dx = rng.integers(0, 9, 2)
    out = padded[dy:dy + img.shape[0], dx:dx + img.shape[1]]
    if rng.random() < 0.5:
        out = out[:, ::-1]
    return {"image": (out - 0.5) / 0.25, "label": record["label"]}


def noisy(record, rng):
    return {"x": np.asarray(record["x"], np.float32) + rng.standard_normal(2).astype(np.float32),
            "y": record["y"]}


def keep_even_y(record):
    return int(record["y"]) % 2 == 0


def fail_on_13(record):
    if int(record["y"]) == 13:
        raise ValueError("record 13 is bad")
    return record


def die_on_13(record):
    if int(record["y"]) == 13:
        os._exit(7)
    return record


def slow(record):
    time.sleep(0.05)
    return record


def add_batch_sum(batch):
    return {**batch, "total": np.asarray(batch["x"]).sum(axis=0)}


def double(record):
    return record * 2
