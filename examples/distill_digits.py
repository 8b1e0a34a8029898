"""Knowledge distillation on scikit-learn's 8x8 digits: a CNN teacher, a small MLP student.

    python examples/distill_digits.py               # 5 seeds, the full comparison
    python examples/distill_digits.py --steps 20 --seeds 1   # a quick smoke run

For each seed (which also draws the train/test split) a LeNet-style CNN teacher is trained
with cross entropy; then the same small MLP student (one hidden layer of ``--hidden`` units)
is trained twice from the same initialization: on the labels alone, and with Hinton's loss
``fx.nn.losses.distillation`` (softened teacher outputs at ``--temperature``, weight
``--alpha``, plus the labels). Every run has the same steps, batches and Adam schedule, so the
only difference is the loss. It prints each model's test accuracy as mean ± std over the
seeds, and the per-seed gain; on digits the gain may be small or nil — the numbers are what
was measured.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models: see mlp_digits.py

import numpy as np  # noqa: E402
from cnn_digits import lenet  # noqa: E402
from mlp_digits import load_digits  # noqa: E402

import fx  # noqa: E402
import fx.numpy as fnp  # noqa: E402
import fx.optim  # noqa: E402
from fx.example_libraries import stax  # noqa: E402
from fx.nn import losses  # noqa: E402


def student(hidden: int):
    return stax.serial(stax.Dense(hidden), stax.Relu, stax.Dense(10))


def teacher():
    init, apply = lenet()
    return init, lambda p, x: apply(p, x)  # log-probabilities: logits up to a constant


_STEPS: dict = {}


def fit(model, x, y, extra, loss, *, seed: int, steps: int, batch: int, lr: float,
        params=None):
    """Adam on ``loss(logits, y, extra)`` over shuffled batches from ``seed``'s init (or from
    ``params``); returns the parameters. ``extra`` (the teacher's logits, or None) is batched
    alongside ``y``. The jitted step is made once per model, loss and schedule, so later
    seeds reuse its compiled program."""
    init, apply = model
    if params is None:
        _, params = init(fx.random.key(seed), (-1,) + x.shape[1:])
    key = (apply, loss, steps, lr)
    if key not in _STEPS:
        opt = fx.optim.adam(fx.optim.cosine_decay_schedule(lr, steps, alpha=0.05))

        def step(params, state, xb, yb, eb):
            value, grads = fx.value_and_grad(lambda p: loss(apply(p, xb), yb, eb))(params)
            updates, state = opt.update(grads, state, params)
            return fx.optim.apply_updates(params, updates), state, value

        _STEPS[key] = opt, fx.jit(step)
    opt, step = _STEPS[key]
    state = opt.init(params)
    rng = np.random.default_rng(seed)
    order = np.empty(0, np.int64)
    for _ in range(steps):
        if order.size < batch:
            order = np.concatenate([order, rng.permutation(len(x))])
        idx, order = order[:batch], order[batch:]
        eb = extra[idx] if extra is not None else np.zeros((batch, 1), np.float32)
        params, state, _ = step(params, state, x[idx], y[idx], eb)
    return params


def accuracy(apply, params, x, y) -> float:
    return float(np.mean(np.argmax(np.asarray(apply(params, x)), axis=-1) == y))


def hard_loss(logits, y, _):
    return fnp.mean(losses.softmax_cross_entropy_with_integer_labels(logits, y))


def run_seed(seed: int, args, t_model, s_model, soft_loss) -> tuple[float, float, float]:
    xi_train, y_train, xi_test, y_test = load_digits(seed, image=True, standardize=True)
    x_train, x_test = xi_train.reshape(len(xi_train), -1), xi_test.reshape(len(xi_test), -1)
    t_params = fit(t_model, xi_train, y_train, None, hard_loss, seed=seed,
                   steps=args.teacher_steps, batch=args.batch, lr=2e-3)
    t_logits = np.asarray(t_model[1](t_params, xi_train))
    t_acc = accuracy(t_model[1], t_params, xi_test, y_test)
    accs = []
    for loss, extra in ((hard_loss, None), (soft_loss, t_logits)):
        # The same student initialization and batch order (seed + 1000) for both losses.
        params = fit(s_model, x_train, y_train, extra, loss, seed=seed + 1000,
                     steps=args.steps, batch=args.batch, lr=args.lr)
        accs.append(accuracy(s_model[1], params, x_test, y_test))
    return t_acc, accs[0], accs[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=400, help="student training steps")
    p.add_argument("--teacher-steps", type=int, default=600)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--temperature", type=float, default=4.0)
    p.add_argument("--alpha", type=float, default=0.9)
    args = p.parse_args()

    def soft_loss(logits, y, t):
        return losses.distillation(logits, t, y, temperature=args.temperature, alpha=args.alpha)

    t_model, s_model = teacher(), student(args.hidden)
    rows = np.array([run_seed(s, args, t_model, s_model, soft_loss) for s in range(args.seeds)])
    print(f"digits, {args.seeds} seeds; student MLP 64-{args.hidden}-10, {args.steps} steps; "
          f"teacher LeNet CNN, {args.teacher_steps} steps; T={args.temperature}, "
          f"alpha={args.alpha}")
    print("| model | test accuracy (mean ± std) |")
    print("|---|---|")
    names = ["teacher CNN", "student, labels only", "student, distilled"]
    for name, col in zip(names, rows.T):
        print(f"| {name} | {100 * col.mean():.2f}% ± {100 * col.std():.2f} |")
    gain = 100 * (rows[:, 2] - rows[:, 1])
    print(f"distillation gain per seed (pp): {', '.join(f'{g:+.2f}' for g in gain)}; "
          f"mean {gain.mean():+.2f}")


if __name__ == "__main__":
    main()
