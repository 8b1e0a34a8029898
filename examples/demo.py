"""A short tour of fx: grad, vmap and jit composing on a tiny regression model."""

import numpy as np

import fx
import fx.numpy as fnp


def loss(w, x, y):
    return fnp.mean((fnp.tanh(x @ w) - y) ** 2)


def main():
    rng = np.random.default_rng(0)
    x = fnp.asarray(rng.standard_normal((64, 4)).astype(np.float32))
    w_true = fnp.asarray(rng.standard_normal(4).astype(np.float32))
    y = fnp.tanh(x @ w_true)

    step = fx.jit(lambda w: w - 0.5 * fx.grad(loss)(w, x, y))
    w = fnp.zeros(4)
    print(f"loss at start: {float(loss(w, x, y)):.5f}")
    for _ in range(300):
        w = step(w)
    print(f"loss after 300 jitted gradient steps: {float(loss(w, x, y)):.2e}")

    per_example = fx.vmap(fx.grad(loss), in_axes=(None, 0, 0))(w, x[:, None], y[:, None])
    print("per-example gradients:", per_example.shape)
    hvp = fx.jvp(fx.grad(loss), (w, x, y), (fnp.ones(4), fnp.zeros_like(x), fnp.zeros_like(y)))[1]
    print("Hessian-vector product:", hvp)

    print("\nThe typed jaxpr of grad(loss):")
    print(fx.make_jaxpr(fx.grad(loss))(w, x, y))
    print("\nWhat jit compiled for one training step:")
    print(step.lower(w).as_text())


if __name__ == "__main__":
    main()
