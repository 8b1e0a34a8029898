"""A short tour of fx: grad and vmap composing, and the typed jaxprs behind them."""

import numpy as np

import fx
import fx.numpy as fnp


def f(x):
    return fnp.tanh(2.0 * x + 1.0) * fnp.sin(x) - fnp.exp(-x * x)


def main():
    x = fnp.asarray(np.linspace(-2.0, 2.0, 5).astype(np.float32))
    print("f(x)            =", f(x))
    print("d/dx via vmap   =", fx.vmap(fx.grad(f))(x))
    print("d2/dx2          =", fx.vmap(fx.grad(fx.grad(f)))(x))
    y, y_dot = fx.jvp(f, (x,), (fnp.ones_like(x),))
    print("jvp tangent     =", y_dot)
    print("jaxpr of grad(f):")
    print(fx.make_jaxpr(fx.grad(f))(fnp.asarray(0.5)))


if __name__ == "__main__":
    main()
