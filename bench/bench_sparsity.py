"""Sparsity on CPU: the CSR x dense kernel against dense products, and the pruned digits CNN.

Part 1, ``y = x @ W`` with ``W`` a constant ``(K, N)`` float32 weight at 90/95/99% (random)
sparsity, batch 1..256: fx sparse (``fx.jit`` with ``W`` closed over: ``cpu.sparse_gemm``, the
generated CSR kernel), fx dense (the same program with the rewrite off: BLAS), jax dense
(``jax.jit``, XLA) and scipy.sparse CSR (``W.T`` in CSR times ``x.T``). Medians; ratios
against fx sparse (above 1: fx sparse is faster).

Part 2, the digits LeNet of ``examples/cnn_digits.py``: trained dense, then fine-tuned under
``fx.sparsity.MagnitudePruning`` (Polynomial schedule over the first half of the fine-tuning)
at 50/80/90% unstructured (ERK distribution; 80% also uniform), 2:4 (NByM), and 25/50% output
channels (Channels(-1), the classifier excluded) — the channel-pruned params then compacted
(``fx.sparsity.compact``) and timed against the dense CNN at batch 256. Test accuracy per
seed and the mean; the dense baseline is fine-tuned as long without pruning, so the rows
differ only by the pruning.

Run: ``python bench/bench_sparsity.py`` (``--part matmul|cnn``, ``--seeds N``, ``--one-thread``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from bench_cpu import print_machine, restart_on_one_thread, timeit_each

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import fx  # noqa: E402
import fx.numpy as fnp  # noqa: E402
from fx import sparsity  # noqa: E402
from fx.lowering.kernels.sparse import sparse_gemm  # noqa: E402

SIZES = ((1024, 1024), (4096, 1024))
SPARSITIES = (0.9, 0.95, 0.99)
BATCHES = (1, 16, 256)


def _sparse_weight(rng, k, n, s):
    """A (k, n) weight with exactly round(s * k * n) zeros at random positions."""
    w = rng.standard_normal(k * n).astype(np.float32)
    w[rng.permutation(k * n)[:round(s * k * n)]] = 0
    return w.reshape(k, n)


def bench_matmul(repeat: int) -> None:
    import jax
    import scipy.sparse

    rng = np.random.default_rng(0)
    print(f"{'K x N':>11} {'sparsity':>8} {'batch':>5} | {'fx sparse':>10} | {'fx dense':>10} | "
          f"{'jax dense':>10} | {'scipy csr':>10} | dense/sparse | jax/sparse | scipy/sparse")
    for k, n in SIZES:
        for s in SPARSITIES:
            w = _sparse_weight(rng, k, n, s)
            wc = fnp.asarray(w)
            sp = fx.jit(lambda x, wc=wc: x @ wc)
            saved, sparse_gemm.DENSITY_THRESHOLD = sparse_gemm.DENSITY_THRESHOLD, 0.0
            dense = fx.jit(lambda x, wc=wc: x @ wc)
            dense(np.zeros((1, k), np.float32))  # compiled while the rewrite is off
            for b in BATCHES:
                dense(np.zeros((b, k), np.float32))
            sparse_gemm.DENSITY_THRESHOLD = saved
            jw = jax.device_put(w)
            jd = jax.jit(lambda x, jw=jw: x @ jw)
            wt = scipy.sparse.csr_matrix(w.T)
            for b in BATCHES:
                x = rng.standard_normal((b, k)).astype(np.float32)
                assert "sparse_gemm" in sp.lower(x).as_text()
                np.testing.assert_allclose(np.asarray(sp(x)), x @ w, rtol=1e-4, atol=1e-3)
                jx = jax.device_put(x)
                reps = repeat * (4 if b == 1 else 1)
                t = timeit_each([lambda f=sp, x=x: f(x).block_until_ready(),
                                 lambda f=dense, x=x: f(x).block_until_ready(),
                                 lambda f=jd, x=jx: f(x).block_until_ready(),
                                 lambda wt=wt, x=x: (wt @ x.T).T], reps)
                cells = " | ".join(f"{v * 1e3:7.3f} ms" for v in t)
                print(f"{k:>5}x{n:<5} {s:>8.0%} {b:>5} | {cells} | {t[1] / t[0]:11.2f}x | "
                      f"{t[2] / t[0]:9.2f}x | {t[3] / t[0]:11.2f}x", flush=True)


# --- the pruned CNN -------------------------------------------------------------------------------


def _trainer(apply_fn, opt):
    from mlp_digits import cross_entropy

    def loss_fn(params, x, y):
        return cross_entropy(apply_fn(params, x), y)

    @fx.jit
    def step(params, state, x, y):
        loss, grads = fx.value_and_grad(loss_fn)(params, x, y)
        updates, state = opt.update(grads, state, params)
        return fx.optim.apply_updates(params, updates), state, loss

    return step


def _run(apply_fn, params, opt, data, epochs: int, seed: int):
    x_train, y_train = data[0], data[1]
    state = opt.init(params)
    step = _trainer(apply_fn, opt)
    for epoch in range(epochs):
        for x, y in fx.data.batches(fx.random.fold_in(fx.random.key(seed), epoch),
                                    (x_train, y_train), 64):
            params, state, _ = step(params, state, x, y)
    return params, state


def _accuracy(apply_fn, params, x, y) -> float:
    return float(np.mean(np.argmax(np.asarray(fx.jit(apply_fn)(params, x)), -1) == y))


CONFIGS = (
    ("dense (fine-tuned as long)", None),
    ("50% unstructured, ERK", dict(sparsity=0.5, distribution="erk")),
    ("80% unstructured, ERK", dict(sparsity=0.8, distribution="erk")),
    ("90% unstructured, ERK", dict(sparsity=0.9, distribution="erk")),
    # Uniform: every layer at 80%, the 144-weight first convolution included.
    ("80% unstructured, uniform", dict(sparsity=0.8)),
    # The first convolution has one input channel: no groups of 4 along it.
    ("2:4 (NByM, first conv dense)", dict(structure=sparsity.NByM(2, 4),
                                          filter=lambda p, w: p != "[0][0]")),
    # The classifier keeps its 10 outputs.
    ("25% channels", dict(sparsity=0.25, structure=sparsity.Channels(-1),
                          filter=lambda p, w: p != "[9][0]")),
    ("50% channels", dict(sparsity=0.5, structure=sparsity.Channels(-1),
                          filter=lambda p, w: p != "[9][0]")),
)


def bench_cnn(seeds: int, epochs: int, finetune: int, repeat: int, lr: float) -> None:
    from mlp_digits import load_digits

    from fx.example_libraries import stax

    layers_of = {}

    def model():
        # examples/cnn_digits.py's lenet(), its layer list kept: compact() reads it.
        c1, c2, hidden = 16, 32, 128
        layers = [stax.Conv(c1, (3, 3), padding="SAME"), stax.Relu,
                  stax.MaxPool((2, 2), (2, 2)), stax.Conv(c2, (3, 3), padding="SAME"),
                  stax.Relu, stax.MaxPool((2, 2), (2, 2)), stax.Flatten, stax.Dense(hidden),
                  stax.Relu, stax.Dense(10), stax.LogSoftmax]
        layers_of["layers"] = layers
        return stax.serial(*layers)

    acc: dict[str, list[float]] = {name: [] for name, _ in CONFIGS}
    timing = {}
    for seed in range(seeds):
        data = load_digits(seed, image=True, standardize=True)
        init_fn, apply_fn = model()
        _, params = init_fn(fx.random.key(seed), (-1, 8, 8, 1))
        per_epoch = fx.data.num_batches(len(data[0]), 64)
        t0 = time.perf_counter()
        opt = fx.optim.adam(fx.optim.cosine_decay_schedule(2e-3, per_epoch * epochs, 0.05))
        dense, _ = _run(apply_fn, params, opt, data, epochs, seed)
        print(f"seed {seed}: dense CNN trained in {time.perf_counter() - t0:.1f} s, test "
              f"accuracy {100 * _accuracy(apply_fn, dense, data[2], data[3]):.2f}%", flush=True)
        steps = per_epoch * finetune
        for name, kw in CONFIGS:
            tune = fx.optim.adam(fx.optim.cosine_decay_schedule(lr, steps, 0.05))
            if kw is None:
                params, state = _run(apply_fn, dense, tune, data, finetune, seed + 100)
            else:
                pruner = sparsity.MagnitudePruning(
                    schedule=sparsity.Polynomial(0, steps // 2, every=max(per_epoch // 4, 1)),
                    **kw)
                params, state = _run(apply_fn, dense, pruner.wrap(tune), data, finetune,
                                     seed + 100)
                summ = sparsity.summary(params)
                if "channels" in name:
                    small = sparsity.compact(params, state, layers_of["layers"])
                    x = data[2][:1].repeat(256, 0)
                    fd, fs = fx.jit(apply_fn), fx.jit(apply_fn)
                    np.testing.assert_allclose(np.asarray(fs(small, x)),
                                               np.asarray(fd(params, x)), atol=1e-4)
                    t = timeit_each([lambda f=fd, p=dense, x=x: f(p, x).block_until_ready(),
                                     lambda f=fs, p=small, x=x: f(p, x).block_until_ready()],
                                    repeat)
                    shapes = [np.shape(e[0])[-1] for e in small if e]
                    timing.setdefault(name, []).append((t[0], t[1], shapes))
                    params = small
                name_sp = f" (total sparsity {100 * summ['total']:.1f}%)"
                print(f"  {name}{name_sp}", flush=True)
            acc[name].append(_accuracy(apply_fn, params, data[2], data[3]))
    base = np.mean(acc[CONFIGS[0][0]])
    print(f"\n{'configuration':<28} | " + " | ".join(f"seed {s}" for s in range(seeds))
          + " |   mean | vs dense")
    for name, _ in CONFIGS:
        a = acc[name]
        print(f"{name:<28} | " + " | ".join(f"{100 * v:5.2f}%" for v in a)
              + f" | {100 * np.mean(a):5.2f}% | {100 * (np.mean(a) - base):+5.2f} pp")
    print("\ncompacted CNN vs dense CNN, inference at batch 256 (median of the last seed):")
    for name, rows in timing.items():
        td, ts, shapes = rows[-1]
        print(f"  {name:<14} widths {shapes[:3]}: dense {td * 1e3:.3f} ms, compacted "
              f"{ts * 1e3:.3f} ms ({td / ts:.2f}x faster)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("matmul", "cnn", "all"), default="all")
    ap.add_argument("--one-thread", action="store_true")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--finetune", type=int, default=20)
    ap.add_argument("--finetune-lr", type=float, default=1e-3)
    args = ap.parse_args()
    if args.one_thread:
        restart_on_one_thread()
    print_machine()
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    if args.part in ("matmul", "all"):
        bench_matmul(args.repeat)
    if args.part in ("cnn", "all"):
        bench_cnn(args.seeds, args.epochs, args.finetune, args.repeat, args.finetune_lr)
    print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
