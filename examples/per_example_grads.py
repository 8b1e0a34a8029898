"""Per-example gradients with ``fx.vmap(fx.grad(...))``, checked against a Python loop, then
used for a few steps of differentially-private-style SGD (clip each example's gradient, add
noise to the sum).

    python examples/per_example_grads.py              # check + 50 DP-SGD steps
    python examples/per_example_grads.py --steps 5

The gradient of the loss on *one* example, mapped over the batch axis of the data (and not of
the parameters: ``in_axes=(None, 0, 0)``), gives every example's gradient in one program:
``fx.vmap`` turns the single-example computation into batched matrix products, instead of a
loop of batch-size-1 backward passes.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny model: see mlp_digits.py

import numpy as np  # noqa: E402
from mlp_digits import cross_entropy, load_digits  # noqa: E402

import fx  # noqa: E402
import fx.data  # noqa: E402
import fx.numpy as fnp  # noqa: E402
import fx.random  # noqa: E402
from fx.example_libraries import stax  # noqa: E402
from fx.tree_util import tree_leaves, tree_map  # noqa: E402


def per_example_loss(apply_fn):
    """The loss of one example (``x`` of shape ``(64,)``, scalar label)."""
    def loss(params, x, y):
        return cross_entropy(apply_fn(params, x[None]), y[None])
    return loss


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=50, help="DP-SGD steps after the check")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--clip", type=float, default=1.0, help="per-example gradient norm bound")
    p.add_argument("--noise", type=float, default=0.5, help="noise multiplier")
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    x_train, y_train, x_test, y_test = load_digits(args.seed, standardize=True)
    init_fn, apply_fn = stax.serial(stax.Dense(64), stax.Tanh, stax.Dense(10), stax.LogSoftmax)
    _, init_key, noise_key = fx.random.split(fx.random.key(args.seed), 3)
    _, params = init_fn(init_key, (-1, 64))
    loss = per_example_loss(apply_fn)

    # 1. vmap(grad) against a loop of grads.
    x, y = fnp.asarray(x_train[:args.batch_size]), fnp.asarray(y_train[:args.batch_size])
    per_example = fx.jit(fx.vmap(fx.grad(loss), in_axes=(None, 0, 0)))
    grad_one = fx.jit(fx.grad(loss))
    batched = per_example(params, x, y)
    looped = [grad_one(params, x[i], y[i]) for i in range(len(x))]
    start = time.perf_counter()  # compiled now: time a second round of each
    per_example(params, x, y)
    t_vmap = time.perf_counter() - start
    start = time.perf_counter()
    for i in range(len(x)):
        grad_one(params, x[i], y[i])
    t_loop = time.perf_counter() - start
    worst = 0.0
    for i, g in enumerate(looped):
        for a, b in zip(tree_leaves(batched), tree_leaves(g)):
            worst = max(worst, float(np.max(np.abs(np.asarray(a)[i] - np.asarray(b)))))
    shapes = [tuple(a.shape) for a in tree_leaves(batched)]
    print(f"per-example gradients for {len(x)} examples: leaf shapes {shapes}")
    print(f"vmap(grad) vs a loop of grad: max |difference| = {worst:.2e} "
          f"(one vmapped call {1e3 * t_vmap:.2f} ms, {len(x)} calls {1e3 * t_loop:.2f} ms)")
    if worst > 1e-5:
        raise SystemExit("per-example gradients disagree with the loop")

    # 2. DP-SGD: clip every example's gradient to norm <= clip, sum, add Gaussian noise.
    def dp_step(params, x, y, key):
        grads = fx.vmap(fx.grad(loss), in_axes=(None, 0, 0))(params, x, y)
        norms = fnp.sqrt(sum(fnp.sum(fnp.reshape(g, (g.shape[0], -1)) ** 2, axis=1)
                             for g in tree_leaves(grads)))
        scale = fnp.minimum(1.0, args.clip / (norms + 1e-12))
        leaves = tree_leaves(grads)
        keys = fx.random.split(key, len(leaves))
        noisy = [fnp.sum(g * fnp.reshape(scale, (-1,) + (1,) * (g.ndim - 1)), axis=0)
                 + args.noise * args.clip * fx.random.normal(k, g.shape[1:])
                 for g, k in zip(leaves, keys)]
        noisy = fx.tree_util.tree_unflatten(fx.tree_util.tree_structure(params), noisy)
        new = tree_map(lambda p, g: p - args.lr * g / x.shape[0], params, noisy)
        return new, fnp.mean(norms)

    dp_step = fx.jit(dp_step)
    full_loss = fx.jit(lambda p, x, y: cross_entropy(apply_fn(p, x), y))
    xt, yt = fnp.asarray(x_test), fnp.asarray(y_test)
    print(f"DP-SGD (clip {args.clip}, noise multiplier {args.noise}): "
          f"test loss {float(full_loss(params, xt, yt)):.4f} at the start")
    # Shuffled anew each epoch (from the seed and the epoch), full batches, as long as needed.
    batches = iter(fx.data.Dataset.from_source((x_train, y_train)).shuffle(args.seed)
                   .batch(args.batch_size, drop_remainder=True).repeat(None))
    for step, (xb, yb) in zip(range(args.steps), batches):
        params, mean_norm = dp_step(params, xb, yb, fx.random.fold_in(noise_key, step))
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step:4d}: mean per-example gradient norm {float(mean_norm):.3f}, "
                  f"test loss {float(full_loss(params, xt, yt)):.4f}")
    acc = float(fnp.mean(fnp.argmax(apply_fn(params, xt), axis=-1) == yt))
    print(f"test accuracy after {args.steps} DP-SGD steps: {100 * acc:.2f}%")


if __name__ == "__main__":
    main()
