"""Precisions: mixed (single-precision factors refined to double accuracy), single and
double, every kind and dtype, on threads, their fallback and their errors."""

import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp
from test_numeric import backward_error, dominant_symmetric, kkt, unsymmetric_zero_diagonal

import pastixpy
from pastixpy.gallery import convection_diffusion3d, elasticity3d, helmholtz2d, laplacian

from conftest import load_shared, shared_params

CASES = {
    "llt": (lambda: laplacian((9, 8, 7)), "llt"),
    "llt-elasticity": (lambda: elasticity3d((5, 4, 4)), "llt"),
    "llt-complex": (lambda: dominant_symmetric(300, 3, complex_=True), "llt"),
    "ldlt-kkt": (lambda: kkt(200, 60, 4), "ldlt"),
    "ldlt-complex-symmetric": (lambda: helmholtz2d(20), "ldlt"),
    "ldlh": (lambda: dominant_symmetric(300, 5, complex_=True, signs="mixed"), "ldlh"),
    "lu": (lambda: convection_diffusion3d(8), "lu"),
    "lu-matched": (lambda: unsymmetric_zero_diagonal(300, 7), "lu"),
    "lu-complex": (lambda: unsymmetric_zero_diagonal(300, 8, complex_=True), "lu"),
}


def _rhs(A, k=None, seed=0):
    rng = np.random.default_rng(seed)
    shape = (A.shape[0],) if k is None else (A.shape[0], k)
    b = rng.standard_normal(shape)
    return b + 1j * rng.standard_normal(shape) if np.iscomplexobj(A.data) else b


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_mixed_reaches_double_accuracy_with_half_the_factor(case, threads):
    build, kind = CASES[case]
    A = sp.csc_array(build())
    # precision="double" named: the pipeline's factors, as mixed precision's (a small
    # unsymmetric matrix left to "auto" takes the small path's LU).
    double = pastixpy.factorize(A, kind=kind, threads=threads, precision="double")
    mixed = pastixpy.factorize(A, kind=kind, threads=threads, precision="mixed")
    s = mixed.stats
    assert s["precision"] == "mixed" and s["precision_fallback"] is None
    assert np.dtype(s["factor_dtype"]) == (np.complex64 if np.iscomplexobj(A.data) else np.float32)
    assert s["factor_bytes"] * 2 == double.stats["factor_bytes"]
    assert mixed.dtype == A.dtype  # the working precision: double
    for trans in ("N", "T", "H"):
        b = _rhs(A, 3)
        x = mixed.solve(b, trans=trans)
        assert x.dtype == A.dtype
        op = {"N": A, "T": A.T, "H": A.conj().T}[trans]
        assert backward_error(op, x, b).max() <= 1e-14
        assert 1 <= mixed.stats["refinement_steps"] <= 15 and "ir" in mixed.stats["refinement"]


def test_mixed_factors_in_single_precision_with_a_lower_pivot_threshold():
    A = laplacian((12, 12, 12))
    F = pastixpy.factorize(A, precision="mixed")
    assert F._factors.dtype == np.float32 and F._factors.panel(0).dtype == np.float32
    # sqrt(eps) of the factors' precision, relative to the largest entry of the factored
    # matrix (A itself: its uniform diagonal calls for no scaling).
    assert F.stats["pivot_tol"] == pytest.approx(np.sqrt(np.finfo(np.float32).eps) * 6.0)


def test_mixed_solves_on_threads_concurrently():
    A = laplacian((14, 14, 14))
    F = pastixpy.factorize(A, precision="mixed", threads=2)
    bs = [_rhs(A, seed=s) for s in range(8)]

    def work(b):
        x = F.solve(b)
        return backward_error(A, x, b).max(), F.stats["backward_error"]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, bs))
    for mine, reported in results:
        assert mine <= 1e-14 and reported <= 1e-14


def test_single_precision_of_a_double_matrix_is_single_accurate_without_refinement():
    A = laplacian((10, 10, 10))
    F = pastixpy.factorize(A, precision="single")
    b = _rhs(A)
    x = F.solve(b)
    assert F.stats["precision"] == "single" and F.stats["factor_dtype"] == "float32"
    assert F.stats["refinement_steps"] == 0 and F.stats["refinement"] == "none"
    assert x.dtype == np.float64
    assert 1e-9 < backward_error(A, x, b).max() <= 1e-5


def test_double_precision_of_a_single_matrix():
    A = laplacian((10, 10, 10)).astype(np.float32)
    F = pastixpy.factorize(A, precision="double")
    b = _rhs(A)
    x = F.solve(b)
    assert F.stats["factor_dtype"] == "float64" and x.dtype == np.float64
    assert backward_error(A, x, b).max() <= 1e-15
    # "auto" keeps the matrix's own precision.
    assert pastixpy.factorize(A).stats["factor_dtype"] == "float32"


def test_mixed_on_a_single_precision_matrix_works_in_double():
    A = laplacian((8, 8, 8)).astype(np.float32)
    F = pastixpy.factorize(A, precision="mixed")
    b = _rhs(A)
    x = F.solve(b)
    assert F.stats["precision"] == "mixed" and x.dtype == np.float64
    assert backward_error(A.astype(np.float64), x, b).max() <= 1e-14


def _ill_conditioned(n=120, cond=1e12, seed=0):
    """An unsymmetric matrix with singular values from 1 down to 1/cond: single-precision
    factors are no preconditioner for it."""
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((n, n)))
    V, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return sp.csc_array((U * np.logspace(0, -np.log10(cond), n)) @ V.T)


def test_mixed_falls_back_to_double_with_a_warning():
    A = _ill_conditioned()
    with pytest.warns(pastixpy.PastixWarning, match="refactored in double precision"):
        F = pastixpy.factorize(A, precision="mixed")
    s = F.stats
    assert s["precision"] == "double" and s["factor_dtype"] == "float64"
    assert "mixed precision could not reach" in s["precision_fallback"]
    assert "mixed precision fell back to double" in s["retries"]
    b = A @ _rhs(A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pastixpy.PastixWarning)  # its perturbed pivots
        x = F.solve(b)
    assert backward_error(A, x, b).max() <= 1e-12


def test_mixed_without_fallback_raises():
    with pytest.raises(pastixpy.MixedPrecisionError, match="refuses to refactor in double"):
        pastixpy.factorize(_ill_conditioned(), precision=("mixed", {"fallback": False}))
    # Where single precision does reach the tolerance, no fallback is needed.
    F = pastixpy.factorize(laplacian((6, 6, 6)), precision=("mixed", {"fallback": False}))
    assert F.stats["precision"] == "mixed"


@pytest.mark.parametrize(
    "precision, message",
    [
        ("quad", "unknown precision 'quad'"),
        (("mixed", {"fallback": "no"}), "fallback=True or False"),
        (("double", {"fallback": False}), "unknown parameter"),
        (3, "not understood"),
    ],
)
def test_bad_precision(precision, message):
    with pytest.raises(pastixpy.OptionError, match=message):
        pastixpy.factorize(laplacian((3, 3)), precision=precision)


def test_mixed_refactorize_and_determinant():
    A = laplacian((8, 8, 8))
    F = pastixpy.factorize(A, precision="mixed")
    F.refactorize(2 * A)
    b = _rhs(A)
    assert F.stats["precision"] == "mixed"
    assert backward_error(2 * A, F.solve(b), b).max() <= 1e-14
    sign, logabs = F.slogdet()
    ref = pastixpy.factorize(2 * A).slogdet()
    assert sign == ref[0] and logabs == pytest.approx(ref[1], rel=1e-5)


def test_mixed_memory_advice(monkeypatch):
    from pastixpy import memory

    A = laplacian((10, 10, 10))
    monkeypatch.setattr(memory, "headroom", lambda: memory.Headroom(1000, "a test's limit"))
    # Small factors are allocated without reading the limits: check these too.
    monkeypatch.setattr("pastixpy.numeric.factorize.MEMORY_CHECK_MIN_BYTES", 0)
    with pytest.raises(pastixpy.OutOfMemoryError, match="precision='mixed' halves the factors"):
        # The pipeline's allocation (a 1000-unknown SPD matrix would take the small path,
        # whose factors are allocated without reading the limits).
        pastixpy.factorize(A, precision="double")


@pytest.mark.parametrize("name", shared_params())
def test_mixed_on_shared_matrices_is_accurate_or_falls_back(name):
    """Every shared matrix: mixed precision reaches a backward error of 1e-12, or says it
    fell back to double (and then reaches it there), or is refused as double is."""
    A = load_shared(name)
    x0 = _rhs(A)
    b = A @ x0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pastixpy.PastixWarning)
        try:
            F = pastixpy.factorize(A, precision="mixed")
            x = F.solve(b)
        except pastixpy.SingularMatrixError:
            with pytest.raises(pastixpy.SingularMatrixError):
                pastixpy.factorize(A).solve(b)
            return
    fell_back = F.stats["precision_fallback"] is not None
    assert F.stats["precision"] == ("double" if fell_back else "mixed")
    if fell_back:
        assert any("refactored in double precision" in str(w.message) for w in caught)
    assert backward_error(A, x, b).max() <= 1e-12


def test_cli_precision(tmp_path):
    import os
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(pastixpy.__file__).parents[1])}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pastixpy",
            "solve",
            "--example",
            "lap3d:10",
            "--precision",
            "mixed",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=env,
    ).stdout
    assert "precision         mixed" in out and "float32" in out


# ---------------------------------------------------------------- answers in b's precision


@pytest.mark.parametrize(
    ("adtype", "bdtype"),
    [
        (np.float32, np.float64),
        (np.complex64, np.complex128),
        (np.complex64, np.float64),
        (np.float32, np.complex128),
    ],
)
@pytest.mark.parametrize("case", ["llt", "ldlt-kkt", "lu", "ldlt-complex-symmetric"])
def test_single_matrix_double_rhs_gets_double_accuracy(case, adtype, bdtype):
    """A float32 (complex64) matrix with a float64 (complex128) b: x in b's precision
    and of its accuracy, where scipy gives double (it gave single-precision accuracy)."""
    A0 = CASES[case][0]()
    if np.iscomplexobj(A0.data) and np.dtype(adtype).kind != "c":
        pytest.skip("a complex matrix is not converted to a real dtype")
    A = A0.astype(adtype)
    rng = np.random.default_rng(5)
    b = rng.standard_normal(A.shape[0])
    if np.dtype(bdtype).kind == "c":
        b = b + 1j * rng.standard_normal(A.shape[0])
    F = pastixpy.factorize(A)
    x = F.solve(b)
    assert x.dtype == np.promote_types(adtype, bdtype)
    assert F.stats["factor_dtype"] == np.dtype(adtype).name  # the factors stay single
    assert backward_error(A.astype(x.dtype), x, b).max() <= 1e-12
    assert F.stats["backward_error"] <= 1e-12
    x2 = pastixpy.spsolve(A, b)
    assert backward_error(A.astype(x2.dtype), x2, b).max() <= 1e-12
    # A b in the matrix's own precision keeps the single-precision solve as it was.
    xs = F.solve(b.astype(np.complex64 if b.dtype.kind == "c" else np.float32))
    assert np.finfo(xs.dtype).bits == 32


def test_single_precision_asked_keeps_single_accuracy_for_a_double_rhs():
    """precision="single" is the one way to a float64 x of float32 accuracy: as asked."""
    A = laplacian((30, 30)).astype(np.float32)
    b = np.random.default_rng(0).standard_normal(900)
    F = pastixpy.factorize(A, precision="single")
    x = F.solve(b)
    assert x.dtype == np.float64
    assert F.stats["refinement"] == "none"
    assert 1e-12 < backward_error(A.astype(np.float64), x, b).max() <= 1e-5


def test_the_issue_reproducer_matches_scipy():
    A = laplacian((30, 30)).astype(np.float32)
    b = np.random.default_rng(0).standard_normal(900)
    x = pastixpy.spsolve(A, b)
    import scipy.sparse.linalg as sla

    ref = sla.spsolve(sp.csc_matrix(A), b)
    assert x.dtype == np.float64
    np.testing.assert_allclose(x, ref, rtol=1e-10, atol=1e-12)
