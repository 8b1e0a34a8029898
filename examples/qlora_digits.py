"""QLoRA on scikit-learn's 8x8 digits: a 4-bit base MLP adapted to classes it never saw.

    python examples/qlora_digits.py                 # 3 seeds
    python examples/qlora_digits.py --steps 20 --seeds 1   # a quick smoke run

An MLP (64-256-256-10) is pretrained on the digits 0-4 only. Its three weights are then
quantized to NF4 (``fx.quant.nf4``: block size 64, two codes per byte) and frozen, biases
included, and rank-``--rank`` LoRA adapters (``fx.example_libraries.lora``) are trained on all
ten classes; under ``fx.jit`` each base product runs on the fused dequantize-in-GEMM kernel.
The comparison: full float fine-tuning of every parameter from the same pretrained network
with the same steps and schedule, and LoRA on the float (unquantized) base. It prints the
base weights' bytes, the trainable parameter counts and the test accuracies on all classes
(mean ± std over the seeds).
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models: see mlp_digits.py

import numpy as np  # noqa: E402
from distill_digits import accuracy, fit, hard_loss  # noqa: E402
from mlp_digits import load_digits  # noqa: E402

from fx.example_libraries import lora, stax  # noqa: E402
from fx.quant import nf4  # noqa: E402

HIDDEN = 256


def mlp():
    return stax.serial(stax.Dense(HIDDEN), stax.Relu, stax.Dense(HIDDEN), stax.Relu,
                       stax.Dense(10))


def adapted(params, rank: int, quantize: bool):
    """The pretrained MLP with frozen (NF4 or float) weights and biases, LoRA adapters on
    each dense layer; returns the model and its frozen bases."""
    dense = [p for p in params if p]
    bases = [nf4.quantize(np.asarray(w), block_size=64) if quantize else np.asarray(w)
             for w, _ in dense]
    layers = []
    for i, (base, (_, b)) in enumerate(zip(bases, dense)):
        layers.append(lora.Dense(base, np.asarray(b), rank=rank, alpha=2.0 * rank))
        if i < len(dense) - 1:
            layers.append(stax.Relu)
    return stax.serial(*layers), bases


def run_seed(seed: int, args, model):
    x_train, y_train, x_test, y_test = load_digits(seed, standardize=True)
    old = y_train < 5
    pre = fit(model, x_train[old], y_train[old], None, hard_loss, seed=seed,
              steps=args.pretrain_steps, batch=args.batch, lr=2e-3)
    out = {"pretrained on 0-4": (accuracy(model[1], pre, x_test, y_test), 0)}

    full = fit(model, x_train, y_train, None, hard_loss, seed=seed + 1000, steps=args.steps,
               batch=args.batch, lr=args.full_lr, params=pre)
    n_full = lora.count_parameters(pre)
    out["full float fine-tuning"] = (accuracy(model[1], full, x_test, y_test), n_full)
    sizes = {}
    for name, quantize in (("LoRA, float base", False), ("QLoRA, NF4 base", True)):
        ad_model, bases = adapted(pre, args.rank, quantize)
        params = fit(ad_model, x_train, y_train, None, hard_loss, seed=seed + 1000,
                     steps=args.steps, batch=args.batch, lr=args.lr)
        out[name] = (accuracy(ad_model[1], params, x_test, y_test),
                     lora.count_parameters(params))
        sizes[name] = lora.base_bytes(bases)
    return out, sizes


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--steps", type=int, default=300, help="fine-tuning steps")
    p.add_argument("--pretrain-steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-3, help="adapters' learning rate")
    p.add_argument("--full-lr", type=float, default=1e-3)
    args = p.parse_args()
    model = mlp()
    results = [run_seed(s, args, model) for s in range(args.seeds)]
    sizes = results[0][1]
    float_bytes = sizes["LoRA, float base"]
    print(f"digits, {args.seeds} seeds; MLP 64-{HIDDEN}-{HIDDEN}-10 pretrained on digits 0-4 "
          f"({args.pretrain_steps} steps), fine-tuned on all ten ({args.steps} steps); "
          f"LoRA rank {args.rank}")
    print(f"base weights: float32 {float_bytes} B, NF4 {sizes['QLoRA, NF4 base']} B "
          f"({float_bytes / sizes['QLoRA, NF4 base']:.2f}x smaller)")
    print("| model | trainable parameters | test accuracy, all classes (mean ± std) |")
    print("|---|---|---|")
    for name in results[0][0]:
        accs = np.array([r[0][name][0] for r in results])
        count = results[0][0][name][1]
        print(f"| {name} | {count} | {100 * accs.mean():.2f}% ± {100 * accs.std():.2f} |")


if __name__ == "__main__":
    main()
