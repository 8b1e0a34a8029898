"""Hessian-vector products by forward-over-reverse differentiation, checked against the explicit
Hessian, then used by Newton-CG to fit an L2-regularised logistic regression (digit 3 vs 8).

    python examples/hessian_vector.py              # check + 8 Newton steps
    python examples/hessian_vector.py --steps 2

``hvp(w, v) = fx.jvp(fx.grad(loss), (w,), (v,))[1]`` costs about two gradients and never forms
the Hessian; ``fx.hessian(loss)(w)`` builds the whole matrix (one product per parameter). The
problem is small (65 parameters) and in float64, so both can be compared to rounding error.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny model: see mlp_digits.py

import numpy as np  # noqa: E402
from mlp_digits import load_digits  # noqa: E402

import fx  # noqa: E402
import fx.numpy as fnp  # noqa: E402
import fx.random  # noqa: E402

fx.config.update("jax_enable_x64", True)  # the Hessian checks compare in float64, as jax x64


def make_loss(x, y, l2: float):
    """Mean logistic loss of the linear model ``x @ w[:-1] + w[-1]`` plus ``l2/2 * |w|^2``."""

    def loss(w):
        logits = x @ w[:-1] + w[-1]
        # log(1 + exp(-t)) for the signed margin t, stably.
        margins = fnp.where(y, logits, -logits)
        return fnp.mean(fnp.logaddexp(0.0, -margins)) + 0.5 * l2 * fnp.sum(w * w)

    return loss


def conjugate_gradient(matvec, b, iters: int, tol: float = 1e-10):
    """Solve ``A x = b`` for symmetric positive definite ``A`` given as ``matvec``."""
    x = fnp.zeros_like(b)
    r = b
    p = r
    rs = float(fnp.vdot(r, r))
    for _ in range(iters):
        ap = matvec(p)
        alpha = rs / float(fnp.vdot(p, ap))
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = float(fnp.vdot(r, r))
        if rs_new < tol**2:
            break
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="Newton steps")
    parser.add_argument("--cg-iters", type=int, default=30)
    parser.add_argument("--l2", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    x_train, y_train, x_test, y_test = load_digits(args.seed, standardize=True)
    pick = (y_train == 3) | (y_train == 8)
    x = fnp.asarray(x_train[pick].astype(np.float64))
    y = fnp.asarray(y_train[pick] == 8)
    loss = make_loss(x, y, args.l2)
    grad = fx.jit(fx.grad(loss))
    hvp = fx.jit(lambda w, v: fx.jvp(fx.grad(loss), (w,), (v,))[1])

    # 1. Hessian-vector products against the explicit Hessian, at a random point.
    dim = x.shape[1] + 1
    k1, k2 = fx.random.split(fx.random.key(args.seed))
    w = 0.1 * fx.random.normal(k1, (dim,), np.float64)
    hessian = np.asarray(fx.jit(fx.hessian(loss))(w))
    vs = fx.random.normal(k2, (5, dim), np.float64)
    worst = max(float(np.max(np.abs(np.asarray(hvp(w, v)) - hessian @ np.asarray(v))))
                for v in vs)
    batched = np.asarray(fx.vmap(hvp, in_axes=(None, 0))(w, vs))
    worst_vmap = float(np.max(np.abs(batched - np.asarray(vs) @ hessian.T)))
    print(f"{dim} parameters, {x.shape[0]} examples (float64)")
    print(f"explicit Hessian: {hessian.shape}, symmetric to "
          f"{float(np.max(np.abs(hessian - hessian.T))):.1e}, smallest eigenvalue "
          f"{float(np.linalg.eigvalsh(hessian)[0]):.2e} (>= l2 = {args.l2})")
    print(f"jvp-of-grad vs explicit H @ v: max |difference| {worst:.1e}; "
          f"vmapped over 5 vectors {worst_vmap:.1e}")
    if max(worst, worst_vmap) > 1e-10:
        raise SystemExit("Hessian-vector products disagree with the explicit Hessian")

    # 2. Newton-CG: each step solves H d = -g with conjugate gradients on hvp, then halves the
    # step until the loss decreases enough (Armijo), which full steps far from the optimum
    # of a nearly separable problem need.
    w = fnp.zeros(dim, np.float64)
    for step in range(args.steps):
        g = grad(w)
        f = float(loss(w))
        d = conjugate_gradient(lambda v, w=w: hvp(w, v), -g, args.cg_iters)
        t, slope = 1.0, float(fnp.vdot(g, d))
        while float(loss(w + t * d)) > f + 1e-4 * t * slope and t > 1e-8:
            t /= 2
        print(f"Newton step {step}: loss {f:.10f}, |grad| {float(fnp.linalg.norm(g)):.2e}, "
              f"step length {t:g}")
        w = w + t * d
    print(f"final: loss {float(loss(w)):.10f}, |grad| {float(fnp.linalg.norm(grad(w))):.2e}")
    pick_test = (y_test == 3) | (y_test == 8)
    xt = fnp.asarray(x_test[pick_test].astype(np.float64))
    acc = float(fnp.mean(((xt @ w[:-1] + w[-1]) > 0) == fnp.asarray(y_test[pick_test] == 8)))
    print(f"test accuracy (3 vs 8): {100 * acc:.2f}%")


if __name__ == "__main__":
    main()
