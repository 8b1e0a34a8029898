"""Train a LeNet-style convolutional network on scikit-learn's 8x8 digits with fx.

    python examples/cnn_digits.py                 # full run: ~98% test accuracy
    python examples/cnn_digits.py --steps 20      # a quick smoke run

Two blocks of 3x3 convolution (SAME padding, so the 8x8 images keep their size) -> ReLU ->
2x2 max pooling take the images to 2x2x32 features, then a dense ReLU layer and a 10-way
log-softmax. Images are NHWC (``(batch, 8, 8, 1)``), kernels HWIO, as in ``stax.Conv``; pixels
are standardized with the training set's per-pixel statistics.
Training is the same jitted ``value_and_grad`` + Adam step as in ``mlp_digits.py``.
"""

from __future__ import annotations

import os

# One thread per kernel (see mlp_digits.py); set OMP_NUM_THREADS yourself to override.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from mlp_digits import load_digits, parse_args, report  # noqa: E402

from fx.example_libraries import stax  # noqa: E402


def lenet(channels: tuple[int, int] = (16, 32), hidden: int = 128):
    c1, c2 = channels
    return stax.serial(
        stax.Conv(c1, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
        stax.Conv(c2, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), (2, 2)),
        stax.Flatten, stax.Dense(hidden), stax.Relu, stax.Dense(10), stax.LogSoftmax)


def main():
    args = parse_args(__doc__.splitlines()[0], epochs=30, lr=2e-3)
    report(lenet(), "cnn", load_digits(args.seed, image=True, standardize=True), args,
           "images of 8x8x1")


if __name__ == "__main__":
    main()
