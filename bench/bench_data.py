"""fx.data throughput: an augmentation pipeline over 60k synthetic 28x28 images, fx against
grain and a plain Python loop, and a training loop whose data time should be hidden.

    python bench/bench_data.py                # the table (about two minutes on 2 cores)
    python bench/bench_data.py --records 20000 --workers 0 1

The augmentation is per record, in NumPy: pad by 4, a random 28x28 crop, a random horizontal
flip, normalize to float32 (one ``numpy.random.Generator`` per record, as both libraries hand
out). Each pipeline shuffles, augments and batches 256 records (the last short batch dropped).
Throughput is examples/s over one epoch counted from the first batch, so the start of the
worker processes (each imports NumPy and its library) is reported on its own, not mixed in.
grain is a dev-only comparison (``pip install -e .[bench]``); its rows are skipped with a
message when it is missing.

The training part runs a jitted MLP step (784-1024-1024-10, Adam) on batches from the pipeline
(one worker process, prefetch 2) and on the same number of precomputed in-memory batches; the
goal is a step time within 1.1x of the in-memory one, i.e. the data time hidden behind compute.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# One thread per kernel and no concurrent steps: the training step keeps to one core, so on a
# small machine the pipeline's worker has the other (data time can hide only behind compute
# that leaves a core free). Set these yourself to override.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("FX_CONCURRENT", "0")

import numpy as np  # noqa: E402

BATCH = 256


def augment(record, rng):
    """Pad by 4 with zeros, crop 28x28 at a random offset, flip half of the images, normalize."""
    img = record["image"]
    padded = np.zeros((36, 36), np.uint8)
    padded[4:32, 4:32] = img
    dy, dx = rng.integers(0, 9, 2)
    out = padded[dy:dy + 28, dx:dx + 28]
    if rng.random() < 0.5:
        out = out[:, ::-1]
    return {"image": (out.astype(np.float32) - 33.0) * (1.0 / 78.0), "label": record["label"]}


class Images:
    """A random-access source of {"image": uint8[28, 28], "label": int32} records (grain and the
    plain loop read it; fx reads the same arrays through fx.data.ArraySource)."""

    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"image": self.images[i], "label": self.labels[i]}


def synthetic(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (n, 28, 28), dtype=np.uint8),
            rng.integers(0, 10, n).astype(np.int32))


def _time_epoch(it):
    """(seconds to the first batch, examples/s over the rest of the epoch)."""
    t0 = time.perf_counter()
    first = next(it)
    t1 = time.perf_counter()
    count = 0
    for b in it:
        count += len(b["label"])
    t2 = time.perf_counter()
    del first
    return t1 - t0, count / max(t2 - t1, 1e-9)


def plain_loop(images, labels, seed: int = 0):
    src = Images(images, labels)
    order = np.random.default_rng(seed).permutation(len(src))
    rng = np.random.default_rng(seed + 1)
    for b in range(len(src) // BATCH):
        recs = [augment(src[int(i)], rng) for i in order[b * BATCH:(b + 1) * BATCH]]
        yield {"image": np.stack([r["image"] for r in recs]),
               "label": np.array([r["label"] for r in recs])}


def fx_pipeline(images, labels, workers: int, kind: str = "processes"):
    import fx.data

    return fx.data.Dataset.from_source({"image": images, "label": labels}).shuffle(0) \
        .random_map(augment, seed=1, num_workers=workers, workers=kind) \
        .batch(BATCH, drop_remainder=True)


def grain_iterator(images, labels, workers: int):
    import grain
    from absl import flags

    if not flags.FLAGS.is_parsed():  # grain's workers read absl flags
        flags.FLAGS.mark_as_parsed()
    ds = grain.MapDataset.source(Images(images, labels)).shuffle(seed=0) \
        .random_map(augment, seed=1).batch(BATCH, drop_remainder=True).to_iter_dataset()
    if workers:
        ds = ds.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers))
    return iter(ds)


def throughput_table(images, labels, worker_counts) -> None:
    try:
        import grain  # noqa: F401
        have_grain = True
    except ImportError:
        have_grain = False
        print("grain is not installed (pip install -e .[bench]): its rows are skipped")
    print(f"\n{len(labels)} records, batches of {BATCH}: examples/s (first batch, seconds)")
    t_first, plain = _time_epoch(plain_loop(images, labels))
    print(f"{'plain Python loop':<24} {plain:10.0f}  ({t_first:.2f} s)", flush=True)
    for k in worker_counts:
        it = iter(fx_pipeline(images, labels, k))
        t_first, fx_rate = _time_epoch(it)
        it.close()
        cells = f"{'fx, ' + str(k) + ' workers':<24} {fx_rate:10.0f}  ({t_first:.2f} s)"
        if have_grain:
            git = grain_iterator(images, labels, k)
            g_first, g_rate = _time_epoch(git)
            del git
            cells += (f" | grain {g_rate:10.0f}  ({g_first:.2f} s) | fx/grain "
                      f"{fx_rate / g_rate:5.2f}x")
        print(cells + f" | fx/plain {fx_rate / plain:5.2f}x", flush=True)
    it = iter(fx_pipeline(images, labels, 2, "threads"))
    t_first, rate = _time_epoch(it)
    print(f"{'fx, 2 threads':<24} {rate:10.0f}  ({t_first:.2f} s) | fx/plain {rate / plain:5.2f}x")


def training_loop(images, labels, steps: int) -> None:
    import fx
    import fx.data
    import fx.numpy as fnp
    import fx.optim
    import fx.random
    from fx.example_libraries import stax

    init_fn, apply_fn = stax.serial(stax.Flatten, stax.Dense(1024), stax.Relu, stax.Dense(1024),
                                    stax.Relu, stax.Dense(10), stax.LogSoftmax)
    _, params = init_fn(fx.random.key(0), (-1, 28, 28))
    opt = fx.optim.adam(1e-3)

    def loss_fn(p, x, y):
        logp = apply_fn(p, x)
        return -fnp.mean(fnp.sum(fnp.where(y[:, None] == fnp.arange(10), logp, 0.0), axis=-1))

    @fx.jit
    def step(p, s, x, y):
        loss, g = fx.value_and_grad(loss_fn)(p, x, y)
        u, s = opt.update(g, s, p)
        return fx.optim.apply_updates(p, u), s, loss

    ds = fx_pipeline(images, labels, 1).repeat(None).prefetch(2).to_device("cpu")
    it = iter(ds)
    memory = [next(it) for _ in range(8)]  # in-memory batches, the same shapes

    def run(batches) -> float:
        p, s = params, opt.init(params)
        b = next(batches)
        p, s, loss = step(p, s, b["image"], b["label"])  # compile outside the timing
        float(loss)
        t = time.perf_counter()
        for _ in range(steps):
            b = next(batches)
            p, s, loss = step(p, s, b["image"], b["label"])
        float(loss)
        return (time.perf_counter() - t) / steps

    def cycle():
        while True:
            yield from memory

    t_mem = run(cycle())
    t_pipe = run(it)
    it.close()
    print(f"\ntraining step (MLP 784-1024-1024-10, batch {BATCH}), {steps} steps: in-memory "
          f"{t_mem * 1e3:.2f} ms, from the pipeline (1 worker, prefetch 2) {t_pipe * 1e3:.2f} "
          f"ms: {t_pipe / t_mem:.2f}x (goal <= 1.1x)")


def key_cost() -> None:
    """Why the per-record keys are computed in NumPy: fx.random.fold_in per record against
    fx.data.record_keys over a chunk of 256 (the same keys, bit for bit)."""
    import fx.data
    import fx.random

    base = fx.random.fold_in(fx.random.key(1), 0)
    t = time.perf_counter()
    for i in range(20):
        np.asarray(fx.random.fold_in(base, i))
    per_fx = (time.perf_counter() - t) / 20
    t = time.perf_counter()
    for _ in range(20):
        fx.data.record_keys(1, 0, np.arange(256))
    per_np = (time.perf_counter() - t) / 20 / 256
    print(f"\nper-record key: fx.random.fold_in {per_fx * 1e6:.0f} us/record, "
          f"fx.data.record_keys {per_np * 1e6:.2f} us/record (chunks of 256): "
          f"{per_fx / per_np:.0f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=60000)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_cpu import print_machine

    print_machine()
    images, labels = synthetic(args.records)
    key_cost()
    throughput_table(images, labels, args.workers)
    training_loop(images, labels, args.steps)


if __name__ == "__main__":
    main()
