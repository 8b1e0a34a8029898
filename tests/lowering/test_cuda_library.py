"""The linear-algebra and FFT primitives on the CUDA backend: cuSOLVER/cuBLAS/cuFFT calls
through CuPy (fx.lowering.kernels.cuda.cuda_library). Lowering for CUDA is pure, so the choice and
the routine in as_text() are tested here without a device; each routine runs with NumPy and
SciPy standing in for CuPy and cupyx.scipy.linalg, on the lowered step's buffers, against the
CPU implementation. Tests marked ``cuda`` run jit(backend="cuda") on a GPU where one is lent
(bench/gpu_check.sh)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import fx
import fx.numpy as fnp
from fx.devices import cupy_module
from fx.lax.fft import FftType, fft_p
from fx.lax.linalg import householder as linalg_householder
from fx.lax.linalg import solvers as linalg_solvers
from fx.lax.linalg import spectral as linalg_spectral
from fx.lowering.kernels.cuda import cuda_library
from fx.lowering.pipeline import lower

needs_gpu = pytest.mark.skipif(cupy_module() is None, reason="needs a CUDA device and CuPy")

F32, F64, C64 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64)
rng = np.random.default_rng(0)


def _matrix(shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _spd(shape, dtype):
    x = _matrix(shape, dtype)
    n = shape[-1]
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def _triangular(shape, dtype):
    n = shape[-1]
    return (_matrix(shape, dtype) + 3 * n * np.eye(n)).astype(dtype)


def _lowered(prim, args, params):
    """The CUDA program of one equation of ``prim`` and its step."""
    def f(*xs):
        return prim.bind(*xs, **params)

    low = lower(fx.make_jaxpr(f)(*args), "cuda")
    (step,) = [s for s in low.steps if s.group.eqns[0].primitive is prim]
    return low, step


def _run_with_numpy(prim, args, params):
    """The GPU routine run with NumPy/SciPy as the array modules, on the step's buffers."""
    low, step = _lowered(prim, args, params)
    assert step.choice.impl.name == "cuda.library" and step.placement == "device"
    assert cuda_library.ROUTINES[prim].routine in low.as_text()
    eqn = step.group.eqns[0]
    views = dict(zip(low.jaxpr.invars, args))
    views.update({v: np.full(v.aval.shape, -7, v.aval.dtype) for v in eqn.outvars})
    cuda_library.cuda_step(step, xp=np, xsl=scipy.linalg)(views)
    return [views[v] for v in eqn.outvars]


def _cpu(prim, args, params):
    out = prim.impl(*args, **params)
    return [np.asarray(o) for o in (out if prim.multiple_results else [out])]


def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if np.dtype(dtype) in (F32, C64) else dict(rtol=1e-9,
                                                                                    atol=1e-9)


def _same(got, want, dtype):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, **_tol(dtype))


def _columns_agree(a, b, dtype, axis=-2):
    """Unit vectors along ``axis`` equal up to a phase (eigenvectors, singular vectors)."""
    dots = np.abs(np.sum(np.conj(a) * b, axis=axis))
    np.testing.assert_allclose(dots, np.ones_like(dots), **_tol(dtype))


# --- lowering for CUDA: the GPU routine, named, on the device ---------------------------------

LOWERED = [
    ("cholesky", lambda a: fnp.linalg.cholesky(a), [_spd((4, 4), F32)],
     "cuSOLVER potrf through cupy.linalg.cholesky"),
    ("solve", lambda a, b: fnp.linalg.solve(a, b), [_spd((8, 8), F32), _matrix((8, 2), F32)],
     "cuSOLVER getrf per matrix through cupyx.scipy.linalg.lu_factor"),
    ("triangular", lambda a, b: fx.lax.linalg.triangular_solve(a, b, left_side=True, lower=True),
     [_triangular((5, 5), F32), _matrix((5, 3), F32)], "cuBLAS trsm through cupyx"),
    ("qr", lambda a: fnp.linalg.qr(a), [_matrix((6, 4), F32)],
     "cuSOLVER geqrf/orgqr through cupy.linalg.qr"),
    ("eigh", lambda a: fnp.linalg.eigh(a), [_spd((3, 5, 5), F32)],
     "cuSOLVER syevd/heevd through cupy.linalg.eigh"),
    ("svd", lambda a: fnp.linalg.svd(a), [_matrix((5, 3), F32)],
     "cuSOLVER gesvd through cupy.linalg.svd"),
    ("rfft", lambda x: fnp.fft.rfft(x) * 2, [np.ones(16, F32)], "cuFFT through cupy.fft"),
]


@pytest.mark.parametrize("name,f,args,routine", LOWERED, ids=[c[0] for c in LOWERED])
def test_cuda_lowering_chooses_the_gpu_routine(name, f, args, routine):
    low = lower(fx.make_jaxpr(f)(*args), "cuda")
    text = low.as_text()
    assert f"cuda.library ({routine}" in text and "on host" not in text
    calls = [s for s in low.steps if s.choice.impl.name == "cuda.library"]
    assert calls and all(s.placement == "device" for s in low.steps)
    assert "library_call " + routine in text  # the runtime call, in the program IR


HOST = [
    ("eig", lambda a: fnp.linalg.eigvals(a), [_matrix((4, 4), F32)]),
    ("qr_pivoting", lambda a: fx.lax.linalg.qr(a, pivoting=True), [_matrix((4, 4), F32)]),
    ("many_small_lu", lambda a: fx.lax.linalg.lu(a), [_matrix((100, 3, 3), F32)]),
    ("schur", lambda a: fx.scipy.linalg.schur(a), [_matrix((4, 4), F32)]),
]


@pytest.mark.parametrize("name,f,args", HOST, ids=[c[0] for c in HOST])
def test_what_cupy_lacks_stays_on_the_host(name, f, args):
    low = lower(fx.make_jaxpr(f)(*args), "cuda")
    assert "on host (no GPU implementation)" in low.as_text()
    assert not any(s.choice.impl.name == "cuda.library" for s in low.steps)


def test_every_gpu_routine_is_a_library_call_of_the_cpu():
    from fx.lowering.kernels.cpu import library_calls

    assert set(cuda_library.ROUTINES) <= set(library_calls.ROUTINES)
    assert {linalg_solvers.cholesky_p, linalg_solvers.triangular_solve_p, linalg_solvers.lu_p,
            linalg_solvers.lu_pivots_to_permutation_p, linalg_spectral.qr_p,
            linalg_spectral.eigh_p, linalg_spectral.svd_p, fft_p} <= set(cuda_library.ROUTINES)


# --- the routines, NumPy/SciPy standing in for CuPy, against the CPU ----------------------------


@pytest.mark.parametrize("shape,dtype", [((4, 4), F32), ((3, 5, 5), F64), ((2, 4, 4), C64),
                                         ((9, 3, 3), F32), ((70, 70), F32)])
def test_cholesky(shape, dtype):
    args, params = [_spd(shape, dtype)], {}
    _same(_run_with_numpy(linalg_solvers.cholesky_p, args, params),
          _cpu(linalg_solvers.cholesky_p, args, params), dtype)


def test_cholesky_of_a_matrix_that_is_not_positive_definite_is_nan():
    x = _spd((3, 4, 4), F32)
    x[1, 2, 2] = -50.0
    (got,) = _run_with_numpy(linalg_solvers.cholesky_p, [x], {})
    (want,) = _cpu(linalg_solvers.cholesky_p, [x], {})
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[1]).sum() == 10 and not np.isnan(got[[0, 2]]).any()
    np.testing.assert_allclose(got[[0, 2]], want[[0, 2]], rtol=2e-5, atol=2e-5)


class _NoRaising:
    """NumPy whose Cholesky, as CuPy's, never raises: potrf's partial factor comes back."""

    class linalg:  # noqa: N801
        LinAlgError = np.linalg.LinAlgError

        @staticmethod
        def cholesky(x):
            out = np.array(x)
            for a in out.reshape((-1, *x.shape[-2:])):
                a[...] = np.tril(scipy.linalg.lapack.get_lapack_funcs("potrf", (a,))(
                    a, lower=1, clean=0)[0])
            return out

    def __getattr__(self, name):
        return getattr(np, name)


def test_cholesky_flags_the_partial_factor_cupy_returns_as_nan():
    x = _spd((3, 5, 5), F64)
    x[2, 3, 3] = -40.0
    low, step = _lowered(linalg_solvers.cholesky_p, [x], {})
    out = step.group.eqns[0].outvars[0]
    views = {low.jaxpr.invars[0]: x, out: np.zeros(x.shape)}
    cuda_library.cuda_step(step, xp=_NoRaising(), xsl=scipy.linalg)(views)
    (want,) = _cpu(linalg_solvers.cholesky_p, [x], {})
    np.testing.assert_array_equal(np.isnan(views[out]), np.isnan(want))
    np.testing.assert_allclose(views[out][:2], want[:2], rtol=1e-12)


TRIANGULAR = [dict(left_side=left, lower=lower, transpose_a=tr, conjugate_a=conj,
                   unit_diagonal=unit)
              for left in (True, False) for lower in (True, False) for tr in (False, True)
              for conj, unit in ((False, False), (True, True))]


@pytest.mark.parametrize("params", TRIANGULAR,
                         ids=["".join(k[0] for k, v in p.items() if v) for p in TRIANGULAR])
@pytest.mark.parametrize("batch,dtype", [((), C64), ((2,), F64)])
def test_triangular_solve(params, batch, dtype):
    conj = params["conjugate_a"] and np.dtype(dtype).kind == "c"
    params = dict(params, conjugate_a=conj)
    a = _triangular((*batch, 4, 4), dtype)
    b = _matrix((*batch, 4, 3) if params["left_side"] else (*batch, 3, 4), dtype)
    prim = linalg_solvers.triangular_solve_p
    _same(_run_with_numpy(prim, [a, b], params), _cpu(prim, [a, b], params), dtype)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("shape,dtype", [((5, 5), F32), ((2, 6, 4), F64), ((3, 4, 6), C64),
                                         ((70, 70), F64)])
def test_lu(shape, dtype, transposed):
    args, params = [_matrix(shape, dtype)], dict(transposed=transposed)
    got = _run_with_numpy(linalg_solvers.lu_p, args, params)
    want = _cpu(linalg_solvers.lu_p, args, params)
    _same(got, want, dtype)
    np.testing.assert_array_equal(got[2], want[2])  # the same pivots, exactly


def test_lu_pivots_to_permutation():
    pivots = np.array([[2, 2, 3], [0, 3, 3]], np.int32)
    args, params = [pivots], dict(permutation_size=5)
    prim = linalg_solvers.lu_pivots_to_permutation_p
    np.testing.assert_array_equal(_run_with_numpy(prim, args, params)[0],
                                  _cpu(prim, args, params)[0])


@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("shape,dtype", [((6, 4), F32), ((2, 3, 5), F64), ((2, 5, 5), C64)])
def test_qr(shape, dtype, full_matrices):
    args, params = [_matrix(shape, dtype)], dict(pivoting=False, full_matrices=full_matrices)
    _same(_run_with_numpy(linalg_spectral.qr_p, args, params),
          _cpu(linalg_spectral.qr_p, args, params), dtype)


@pytest.mark.parametrize("shape,dtype", [((6, 4), F32), ((2, 3, 5), C64)])
def test_geqrf(shape, dtype):
    args = [_matrix(shape, dtype)]
    _same(_run_with_numpy(linalg_householder.geqrf_p, args, {}),
          _cpu(linalg_householder.geqrf_p, args, {}), dtype)


@pytest.mark.parametrize("lower,subset", [(True, None), (False, (1, 3))])
@pytest.mark.parametrize("shape,dtype", [((5, 5), F32), ((3, 4, 4), F64), ((2, 4, 4), C64),
                                         ((2, 40, 40), F64)])
def test_eigh(shape, dtype, lower, subset):
    x = _spd(shape, dtype)
    params = dict(lower=lower, sort_eigenvalues=True, subset_by_index=subset)
    v, w = _run_with_numpy(linalg_spectral.eigh_p, [x], params)
    v0, w0 = _cpu(linalg_spectral.eigh_p, [x], params)
    assert (v.dtype, w.dtype, v.shape, w.shape) == (v0.dtype, w0.dtype, v0.shape, w0.shape)
    np.testing.assert_allclose(w, w0, **_tol(dtype))
    _columns_agree(v, v0, dtype)


@pytest.mark.parametrize("full_matrices,compute_uv,subset",
                         [(False, True, None), (True, True, None), (False, False, None),
                          (False, True, (0, 2))])
@pytest.mark.parametrize("shape,dtype", [((5, 3), F32), ((2, 3, 4), F64), ((4, 4), C64),
                                         ((2, 40, 33), F32)])
def test_svd(shape, dtype, full_matrices, compute_uv, subset):
    x = _matrix(shape, dtype)
    params = dict(full_matrices=full_matrices, compute_uv=compute_uv, subset_by_index=subset)
    got = _run_with_numpy(linalg_spectral.svd_p, [x], params)
    want = _cpu(linalg_spectral.svd_p, [x], params)
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    np.testing.assert_allclose(got[0], want[0], **_tol(dtype))
    if compute_uv:
        k = got[0].shape[-1]  # the vectors of the singular values (full ones span the rest)
        _columns_agree(got[1][..., :k], want[1][..., :k], dtype)
        _columns_agree(got[2][..., :k, :], want[2][..., :k, :], dtype, axis=-1)


def test_tridiagonal_solve():
    dl, d, du = (_matrix((2, 5), F64) for _ in range(3))
    args, params = [dl, d + 4, du, _matrix((2, 5, 3), F64)], dict(perturb_singular=False)
    prim = linalg_solvers.tridiagonal_solve_p
    _same(_run_with_numpy(prim, args, params), _cpu(prim, args, params), F64)


FFTS = [(FftType.FFT, (8,), (3, 8), C64), (FftType.IFFT, (4, 6), (2, 4, 6), np.complex128),
        (FftType.RFFT, (9,), (2, 9), F32), (FftType.RFFT, (4, 8), (4, 8), F64),
        (FftType.IRFFT, (10,), (3, 6), C64), (FftType.IRFFT, (4, 7), (2, 4, 4), np.complex128)]


@pytest.mark.parametrize("fft_type,lengths,shape,dtype", FFTS)
def test_fft(fft_type, lengths, shape, dtype):
    args, params = [_matrix(shape, dtype)], dict(fft_type=fft_type, fft_lengths=lengths)
    _same(_run_with_numpy(fft_p, args, params), _cpu(fft_p, args, params), dtype)


# --- on a GPU -------------------------------------------------------------------------------------

GPU_CASES = [
    ("cholesky", lambda a: fnp.linalg.cholesky(a), lambda: [_spd((3, 6, 6), F32)]),
    ("cholesky_large", lambda a: fnp.linalg.cholesky(a), lambda: [_spd((200, 200), F64)]),
    ("solve", lambda a, b: fnp.linalg.solve(a, b),
     lambda: [_spd((40, 40), F64), _matrix((40, 3), F64)]),
    ("solve_small", lambda a, b: fnp.linalg.solve(a, b),
     lambda: [_spd((2, 3, 3), F32), _matrix((2, 3, 1), F32)]),
    ("triangular", lambda a, b: fx.lax.linalg.triangular_solve(a, b, left_side=False,
                                                               lower=True, transpose_a=True,
                                                               conjugate_a=True),
     lambda: [_triangular((2, 5, 5), C64), _matrix((2, 3, 5), C64)]),
    ("lu", lambda a: fx.lax.linalg.lu(a), lambda: [_matrix((3, 5, 4), F64)]),
    ("tridiagonal", lambda dl, d, du, b: fx.lax.linalg.tridiagonal_solve(dl, d, du, b),
     lambda: [_matrix((2, 6), F32), _matrix((2, 6), F32) + 5, _matrix((2, 6), F32),
              _matrix((2, 6, 3), F32)]),
    ("qr", lambda a: fnp.linalg.qr(a, mode="complete"), lambda: [_matrix((2, 7, 4), F64)]),
    ("eigh", lambda a: fnp.linalg.eigh(a), lambda: [_spd((3, 6, 6), F64)]),
    ("eigh_large", lambda a: fnp.linalg.eigh(a), lambda: [_spd((64, 64), F32)]),
    ("svd", lambda a: fnp.linalg.svd(a, full_matrices=False), lambda: [_matrix((2, 6, 4), F64)]),
    ("svd_large", lambda a: fnp.linalg.svd(a, full_matrices=False),
     lambda: [_matrix((50, 40), C64)]),
    ("rfft", lambda x: fnp.fft.rfft(x), lambda: [_matrix((3, 1000), F32)]),
    ("fft2", lambda x: fnp.fft.ifft2(fnp.fft.fft2(x) * 2), lambda: [_matrix((2, 16, 12), C64)]),
    ("irfft", lambda x: fnp.fft.irfft(x, 30), lambda: [_matrix((4, 16), np.complex128)]),
]


def _canonical(name, outs):
    """Decompositions up to the phases of their vectors: reconstructions and values."""
    if name.startswith("qr"):
        q, r = outs
        return [q @ r, np.abs(np.diagonal(r, axis1=-2, axis2=-1))]
    if name.startswith("eigh"):
        w, v = outs
        return [w, (v * w[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))]
    if name.startswith("svd"):
        u, s, vh = outs
        return [s, (u * s[..., None, :].astype(u.dtype)) @ vh]
    return outs


@pytest.mark.cuda
@needs_gpu
@pytest.mark.parametrize("name,f,make", GPU_CASES, ids=[c[0] for c in GPU_CASES])
def test_gpu_library_calls_match_cpu(name, f, make):
    args = make()
    cpu = fx.jit(f, backend="cpu")(*[fnp.asarray(a) for a in args])
    jitted = fx.jit(f, backend="cuda")
    assert "cuda.library" in jitted.lower(*args).as_text()
    gpu = jitted(*[fx.device_put(a, "cuda") for a in args])
    cpu, gpu = (list(o) if isinstance(o, tuple | list) else [o] for o in (cpu, gpu))
    assert all(g.device.platform == "cuda" for g in gpu)
    want = _canonical(name, [np.asarray(c) for c in cpu])
    got = _canonical(name, [np.asarray(g) for g in gpu])
    for g, w in zip(got, want):
        single = w.dtype in (F32, C64)
        np.testing.assert_allclose(g, w, rtol=2e-3 if single else 1e-8,
                                   atol=2e-3 if single else 1e-8)


@pytest.mark.cuda
@needs_gpu
def test_gpu_cholesky_of_a_matrix_that_is_not_positive_definite_is_nan():
    x = _spd((3, 4, 4), F32)
    x[1, 2, 2] = -50.0
    got = np.asarray(fx.jit(fx.lax.linalg.cholesky, backend="cuda")(fx.device_put(x, "cuda")))
    assert np.isnan(got[1]).any() and not np.isnan(got[[0, 2]]).any()
