"""Train a multilayer perceptron on scikit-learn's bundled 8x8 digits with fx.

    python examples/mlp_digits.py                 # full run: ~98% test accuracy in seconds
    python examples/mlp_digits.py --steps 20      # a quick smoke run
    python examples/mlp_digits.py --plot loss.png --backend cuda

The model is a ``fx.example_libraries.stax`` network, the training step (``fx.value_and_grad``
of the loss plus an ``fx.optim.adam`` update) is one ``fx.jit``-compiled program, and batches
come from an ``fx.data.Dataset`` (reshuffled every epoch, prefetched to the device in a
background thread).
Everything is seeded, so a run is reproducible.
"""

from __future__ import annotations

import argparse
import os
import time

# These models are tiny: one thread per kernel beats a team of OpenMP/BLAS threads, whose
# spin-waits only compete for the cores of a small or busy machine (8x slower measured on a
# loaded 2-core machine). Set OMP_NUM_THREADS yourself to override. This must precede the
# imports of numpy and fx, which read it once.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import fx  # noqa: E402
import fx.data  # noqa: E402
import fx.numpy as fnp  # noqa: E402
import fx.optim  # noqa: E402
import fx.random  # noqa: E402
from fx.example_libraries import stax  # noqa: E402


def load_digits(seed: int, test_size: float = 0.2, image: bool = False,
                standardize: bool = False):
    """The 1797 digits split (stratified by class) into train and test sets: float32 features,
    rows of 64 (or ``(8, 8, 1)`` images with ``image=True``) scaled to [0, 1], or with
    ``standardize`` shifted and scaled per pixel by the training set's statistics; int32
    labels."""
    from sklearn.datasets import load_digits as sk_load_digits
    from sklearn.model_selection import train_test_split

    digits = sk_load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    if image:
        x = x.reshape(-1, 8, 8, 1)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_size, stratify=y, random_state=seed)
    if standardize:
        # The border pixels are almost always 0; the offset keeps their scale finite.
        mean, scale = x_train.mean(axis=0), x_train.std(axis=0) + 0.1
        x_train, x_test = ((x - mean) / scale for x in (x_train, x_test))
    return x_train, y_train, x_test, y_test


def mlp(hidden: int = 512):
    """Two ReLU hidden layers and a log-softmax over the 10 classes."""
    return stax.serial(stax.Dense(hidden), stax.Relu, stax.Dense(hidden), stax.Relu,
                       stax.Dense(10), stax.LogSoftmax)


def cross_entropy(log_probs, labels):
    """Mean negative log-likelihood of integer ``labels`` under ``log_probs``."""
    one_hot = labels[:, None] == fnp.arange(log_probs.shape[-1])
    return -fnp.mean(fnp.sum(fnp.where(one_hot, log_probs, 0.0), axis=-1))


def make_train_step(apply_fn, opt, backend: str | None):
    """The jitted training step (loss, gradients and the Adam update in one program) and the
    jitted accuracy."""

    def loss_fn(params, x, y):
        return cross_entropy(apply_fn(params, x), y)

    def train_step(params, opt_state, x, y):
        loss, grads = fx.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = opt.update(grads, opt_state, params)
        return fx.optim.apply_updates(params, updates), opt_state, loss

    def accuracy(params, x, y):
        return fnp.mean(fnp.argmax(apply_fn(params, x), axis=-1) == y)

    return fx.jit(train_step, backend=backend), fx.jit(accuracy, backend=backend)


def train(model, data, *, seed: int, epochs: int, batch_size: int, lr: float,
          steps: int | None, backend: str | None, name: str, progress: bool = True):
    """Train ``model`` with Adam (cosine-decayed learning rate); returns (params, losses,
    test accuracy, train accuracy)."""
    from tqdm import tqdm

    x_train, y_train, x_test, y_test = data
    init_fn, apply_fn = model
    _, init_key = fx.random.split(fx.random.key(seed))
    _, params = init_fn(init_key, (-1,) + x_train.shape[1:])
    device = fx.devices(backend)[0] if backend else None
    if device is not None:
        params = fx.tree_util.tree_map(lambda a: fx.device_put(a, device), params)
    # Each epoch is a new permutation of the training set (from the seed and the epoch
    # number); every batch is full, so the jitted step compiles once.
    train_data = fx.data.Dataset.from_source((x_train, y_train)).shuffle(seed) \
        .batch(batch_size, drop_remainder=True)
    per_epoch = len(train_data)
    total = per_epoch * epochs if steps is None else steps
    opt = fx.optim.adam(fx.optim.cosine_decay_schedule(lr, max(total, 1), alpha=0.05))
    opt_state = opt.init(params)
    if device is not None:
        opt_state = fx.tree_util.tree_map(lambda a: fx.device_put(a, device), opt_state)
    train_step, accuracy = make_train_step(apply_fn, opt, backend)

    # A background thread keeps two batches ready on the device.
    stream = iter(train_data.repeat(None).prefetch(2).to_device(device))

    losses = []
    bar = tqdm(total=total, desc=name, unit="step", disable=not progress)
    for step, (x, y) in zip(range(total), stream):
        params, opt_state, loss = train_step(params, opt_state, x, y)
        losses.append(float(loss))
        bar.update()
        if step % 10 == 0 or step == total - 1:
            bar.set_postfix(loss=f"{losses[-1]:.4f}", epoch=step // per_epoch)
    stream.close()
    bar.close()
    put = (lambda a: fx.device_put(a, device)) if device else fnp.asarray
    test_acc = float(accuracy(params, put(x_test), put(y_test)))
    train_acc = float(accuracy(params, put(x_train), put(y_train)))
    return params, losses, test_acc, train_acc


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install matplotlib") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_losses(path: str, curves: dict[str, list[float]]) -> None:
    plt = _pyplot()

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, losses in curves.items():
        ax.plot(losses, label=label)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"saved the loss curve to {path}")


def parse_args(description: str, epochs: int, lr: float, batch_size: int = 64):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=None,
                   help="stop after this many training steps (default: the full schedule)")
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--lr", type=float, default=lr)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", choices=["cpu", "cuda"], default=None,
                   help="where to run (default: fx's default backend)")
    p.add_argument("--plot", metavar="PNG", default=None, help="save the loss curve here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args()
    if args.plot:
        _pyplot()  # fail before training, not after, when matplotlib is missing
    return args


def report(model, name: str, data, args, what: str) -> None:
    """Train ``model`` on ``data`` as the command line asks, then print the steps, the time
    and the accuracies (and plot the loss curve with ``--plot``)."""
    start = time.perf_counter()
    print(f"digits: {len(data[0])} train / {len(data[2])} test {what}; "
          f"backend {args.backend or fx.default_backend()}")
    _, losses, test_acc, train_acc = train(
        model, data, seed=args.seed, epochs=args.epochs, batch_size=args.batch_size,
        lr=args.lr, steps=args.steps, backend=args.backend, name=name,
        progress=not args.no_progress)
    print(f"{len(losses)} steps in {time.perf_counter() - start:.1f} s; "
          f"final training loss {losses[-1]:.4f}")
    print(f"train accuracy: {100 * train_acc:.2f}%")
    print(f"test accuracy: {100 * test_acc:.2f}%")
    if args.plot:
        plot_losses(args.plot, {name: losses})


def main():
    args = parse_args(__doc__.splitlines()[0], epochs=30, lr=1e-3)
    report(mlp(), "mlp", load_digits(args.seed, standardize=True), args,
           "examples, 64 features")


if __name__ == "__main__":
    main()
