#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU and CuPy (the lent H200 image has CuPy, jax
# with CUDA, numpy, pytest, hypothesis; nothing is installed). Run from the repository root:
#     OUT=/some/dir bash bench/gpu_check.sh
# Writes to $OUT: nvidia-smi.txt, cuda_tests.txt (the `cuda`-marked tests), gpu_bench.txt
# (elementwise bandwidth vs a device copy, generated GEMM vs cuBLAS, MLP step, CNN and
# residual-CNN value-and-grad vs jax), nccl_check.txt (fx.distributed on NCCL). Finishes in a
# few minutes.
set -uo pipefail
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
ROOT=$PWD

# fx without installing: assemble the package layout (interpreters/, lowering/, runtime/ live
# under fx/ once installed) in a temporary directory.
PKG=$(mktemp -d)
mkdir -p "$PKG/fx"
cp -r "$ROOT"/fx/* "$PKG/fx/"
for d in interpreters lowering runtime; do cp -r "$ROOT/$d" "$PKG/fx/$d"; done
export PYTHONPATH="$PKG:$ROOT/tests" FX_CACHE_DIR="$(mktemp -d)" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}

{ nvidia-smi; $PY -c "import cupy, jax; print('cupy', cupy.__version__, 'jax', jax.__version__,
jax.devices())"; } > "$OUT/nvidia-smi.txt" 2>&1

# -P: do not put the repository root (an uninstalled fx/) ahead of the assembled package.
timeout 300 $PY -P -m pytest -q -m cuda -p no:cacheprovider --rootdir "$ROOT" -c "$ROOT/pyproject.toml" \
    "$ROOT/tests/runtime/test_cuda.py" "$ROOT/tests/lowering/test_cuda_library.py" \
    "$ROOT/tests/lowering/test_cuda_int8_gemm.py" \
    "$ROOT/tests/lowering/test_cuda_conv_in_place.py" 2>&1 | tee "$OUT/cuda_tests.txt"

timeout 300 $PY -P "$ROOT/bench/bench_gpu.py" 2>&1 | tee "$OUT/gpu_bench.txt"

# fx.distributed's NCCL transport on real cupy.cuda.nccl (one rank), and a pmapped psum
# compiled for CUDA whose collective step runs on it.
timeout 120 $PY -P "$ROOT/bench/bench_distributed.py" --nccl 2>&1 | tee "$OUT/nccl_check.txt"
