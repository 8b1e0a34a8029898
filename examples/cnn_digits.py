"""Train a LeNet-style convolutional network on scikit-learn's 8x8 digits with fx.

    python examples/cnn_digits.py                 # full run: ~99% test accuracy
    python examples/cnn_digits.py --steps 20      # a quick smoke run

Two blocks of 3x3 convolution (SAME padding, so the 8x8 images keep their size) -> ReLU ->
2x2 max pooling take the images to 2x2x32 features, then a dense ReLU layer and a 10-way
log-softmax. Images are NHWC (``(batch, 8, 8, 1)``), kernels HWIO, as in ``stax.Conv``; pixels
are standardized with the training set's per-pixel statistics.
Training is the same jitted ``value_and_grad`` + Adam step as in ``mlp_digits.py``.
"""

from __future__ import annotations

import os
import time

# One thread per kernel (see mlp_digits.py); set OMP_NUM_THREADS yourself to override.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from mlp_digits import load_digits, parse_args, plot_losses, train  # noqa: E402

import fx  # noqa: E402
from fx.example_libraries import stax  # noqa: E402


def lenet(channels: tuple[int, int] = (16, 32), hidden: int = 128):
    c1, c2 = channels
    return stax.serial(
        stax.Conv(c1, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
        stax.Conv(c2, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
        stax.Flatten, stax.Dense(hidden), stax.Relu, stax.Dense(10), stax.LogSoftmax)


def main():
    args = parse_args(__doc__.splitlines()[0], epochs=30, lr=2e-3)
    start = time.perf_counter()
    data = load_digits(args.seed, image=True, standardize=True)
    print(f"digits: {len(data[0])} train / {len(data[2])} test images of 8x8x1; "
          f"backend {args.backend or fx.default_backend()}")
    _, losses, test_acc, train_acc = train(
        lenet(), data, seed=args.seed, epochs=args.epochs, batch_size=args.batch_size,
        lr=args.lr, steps=args.steps, backend=args.backend, name="cnn",
        progress=not args.no_progress)
    print(f"{len(losses)} steps in {time.perf_counter() - start:.1f} s; "
          f"final training loss {losses[-1]:.4f}")
    print(f"train accuracy: {100 * train_acc:.2f}%")
    print(f"test accuracy: {100 * test_acc:.2f}%")
    if args.plot:
        plot_losses(args.plot, {"cnn": losses})


if __name__ == "__main__":
    main()
