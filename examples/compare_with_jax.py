"""Train the same networks in fx and in jax from the same seed and compare the loss curves.

    python examples/compare_with_jax.py                  # MLP and CNN, 100 steps each
    python examples/compare_with_jax.py --steps 20 --models mlp

Both sides start from the same key: ``fx.random`` is bit-compatible with ``jax.random``, so
``fx.example_libraries.stax`` and ``jax.example_libraries.stax`` initialise the same weights
(to a few ulps, where truncated-normal draws go through differently computed transcendental
functions), and the minibatches come out in the same order (``fx.data.batches`` shuffles with
``fx.random.permutation``; the jax side shuffles with ``jax.random.permutation``: this is why
the script keeps ``batches`` rather than ``fx.data.Dataset``, whose shuffle is its own
function of the seed and the epoch). fx trains
with ``fx.optim.adam``, jax with ``jax.example_libraries.optimizers.adam`` (the same update
rule), both in float32. The script fails unless the two loss curves agree to ``--rtol``
(default 1e-4) at every step.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models: see mlp_digits.py

import numpy as np  # noqa: E402
from cnn_digits import lenet  # noqa: E402
from mlp_digits import load_digits, make_train_step, mlp  # noqa: E402

import fx  # noqa: E402
import fx.data  # noqa: E402
import fx.optim  # noqa: E402
import fx.random  # noqa: E402


def jax_models():
    from jax.example_libraries import stax as jstax

    def jax_mlp(hidden=512):
        return jstax.serial(jstax.Dense(hidden), jstax.Relu, jstax.Dense(hidden), jstax.Relu,
                            jstax.Dense(10), jstax.LogSoftmax)

    def jax_lenet(channels=(16, 32), hidden=128):
        c1, c2 = channels
        return jstax.serial(
            jstax.Conv(c1, (3, 3), padding="SAME"), jstax.Relu, jstax.MaxPool((2, 2), (2, 2)),
            jstax.Conv(c2, (3, 3), padding="SAME"), jstax.Relu, jstax.MaxPool((2, 2), (2, 2)),
            jstax.Flatten, jstax.Dense(hidden), jstax.Relu, jstax.Dense(10), jstax.LogSoftmax)

    return {"mlp": jax_mlp(), "cnn": jax_lenet()}


def train_fx(model, data, seed, steps, batch_size, lr):
    x_train, y_train = data[:2]
    init_fn, apply_fn = model
    key, init_key = fx.random.split(fx.random.key(seed))
    _, params = init_fn(init_key, (-1,) + x_train.shape[1:])
    init_params = [np.asarray(p) for p in fx.tree_util.tree_leaves(params)]
    opt = fx.optim.adam(lr)
    opt_state = opt.init(params)
    train_step, _ = make_train_step(apply_fn, opt, backend=None)
    losses, epoch, it = [], 0, iter(())
    while len(losses) < steps:
        batch = next(it, None)
        if batch is None:
            it = fx.data.batches(fx.random.fold_in(key, epoch), (x_train, y_train), batch_size)
            epoch += 1
            continue
        params, opt_state, loss = train_step(params, opt_state, *batch)
        losses.append(float(loss))
    return init_params, np.array(losses)


def train_jax(model, data, seed, steps, batch_size, lr):
    import jax
    import jax.numpy as jnp
    from jax.example_libraries import optimizers

    x_train, y_train = data[:2]
    init_fn, apply_fn = model
    n, per_epoch = len(x_train), len(x_train) // batch_size

    # Each jax operation run eagerly compiles on first use; jitting the set-up and the
    # shuffling keeps that to a few compilations.
    @jax.jit
    def setup(seed):
        key, init_key = jax.random.split(jax.random.PRNGKey(seed))
        return key, init_fn(init_key, (-1,) + x_train.shape[1:])[1]

    @jax.jit
    def permutation(key, epoch):
        return jax.random.permutation(jax.random.fold_in(key, epoch), n)

    key, params = setup(seed)
    init_params = [np.asarray(p) for p in jax.tree_util.tree_leaves(params)]
    opt_init, opt_update, get_params = optimizers.adam(lr)

    def loss_fn(params, x, y):
        log_probs = apply_fn(params, x)
        return -jnp.mean(jnp.take_along_axis(log_probs, y[:, None], axis=-1))

    @jax.jit
    def train_step(i, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(get_params(opt_state), x, y)
        return opt_update(i, grads, opt_state), loss

    opt_state = opt_init(params)
    losses, orders = [], {}
    for i in range(steps):
        epoch, b = divmod(i, per_epoch)
        if epoch not in orders:
            orders[epoch] = np.asarray(permutation(key, epoch))
        idx = orders[epoch][b * batch_size:(b + 1) * batch_size]
        opt_state, loss = train_step(i, opt_state, x_train[idx], y_train[idx])
        losses.append(float(loss))
    return init_params, np.array(losses)


def compare(name, fx_model, jax_model, data, args) -> float:
    start = time.perf_counter()
    fx_init, fx_losses = train_fx(fx_model, data, args.seed, args.steps, args.batch_size,
                                  args.lr)
    t_fx = time.perf_counter() - start
    start = time.perf_counter()
    jax_init, jax_losses = train_jax(jax_model, data, args.seed, args.steps, args.batch_size,
                                     args.lr)
    t_jax = time.perf_counter() - start
    init_diff = max(float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-30)))
                    for a, b in zip(fx_init, jax_init))
    print(f"\n{name}: {sum(a.size for a in fx_init)} parameters; largest relative difference "
          f"of the initial weights {init_diff:.1e}")
    rel = np.abs(fx_losses - jax_losses) / np.abs(jax_losses)
    print(f"{'step':>6} {'fx loss':>12} {'jax loss':>12} {'rel. diff':>10}")
    every = max(1, args.steps // 10)
    for i in range(args.steps):
        if i % every == 0 or i == args.steps - 1:
            print(f"{i:6d} {fx_losses[i]:12.7f} {jax_losses[i]:12.7f} {rel[i]:10.2e}")
    worst = int(np.argmax(rel))
    print(f"{name}: max relative difference {rel[worst]:.2e} (step {worst}); "
          f"fx {t_fx:.1f} s, jax {t_jax:.1f} s (compilation included)")
    return float(rel[worst])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--models", default="mlp,cnn", help="comma-separated: mlp, cnn")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rtol", type=float, default=1e-4)
    args = p.parse_args()

    import jax

    if jax.config.jax_enable_x64:
        raise SystemExit("run with jax in its default 32-bit mode (JAX_ENABLE_X64 unset)")
    jax_nets = jax_models()
    fx_nets = {"mlp": mlp(), "cnn": lenet()}
    worst = {}
    for name in args.models.split(","):
        data = load_digits(args.seed, image=name == "cnn", standardize=True)
        worst[name] = compare(name, fx_nets[name], jax_nets[name], data, args)
    bad = {k: v for k, v in worst.items() if not v <= args.rtol}
    if bad:
        raise SystemExit(f"loss curves differ by more than rtol={args.rtol}: {bad}")
    print(f"\nfx and jax loss curves agree to {args.rtol:g} relative over {args.steps} steps")


if __name__ == "__main__":
    main()
