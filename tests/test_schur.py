"""The Schur complement: ``factorize(A, schur=idx)``, ``F.schur()``, and the partial solves
``F.schur_reduce`` / ``F.schur_expand``, against dense algebra for every kind and dtype.

The reference is numpy: S = A₂₂ − A₂₁ A₁₁⁻¹ A₁₂ from a dense solve, in double (complex
double) whatever A's dtype; a single-precision factorization is held to single precision's
roundoff times the condition number of A₁₁.
"""

import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import pastixpy
from pastixpy.errors import InvalidInputError, OptionError, PastixError, PastixWarning
from pastixpy.gallery import laplacian
from pastixpy.runtime import OPENMP

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def dense(A):
    D = A.toarray()
    return D.astype(np.complex128 if D.dtype.kind == "c" else np.float64)


def reference(D, idx):
    """S, and the reduced right-hand side's operator, densely."""
    n = D.shape[0]
    rest = np.setdiff1d(np.arange(n), idx)
    if rest.size == 0:
        return D[np.ix_(idx, idx)]
    A11, A12 = D[np.ix_(rest, rest)], D[np.ix_(rest, idx)]
    A21, A22 = D[np.ix_(idx, rest)], D[np.ix_(idx, idx)]
    return A22 - A21 @ np.linalg.solve(A11, A12)


def reduced_reference(D, idx, b):
    rest = np.setdiff1d(np.arange(D.shape[0]), idx)
    return b[idx] - D[np.ix_(idx, rest)] @ np.linalg.solve(D[np.ix_(rest, rest)], b[rest])


def tolerance(D, idx, dtype):
    rest = np.setdiff1d(np.arange(D.shape[0]), idx)
    cond = np.linalg.cond(D[np.ix_(rest, rest)]) if rest.size else 1.0
    return 50 * np.finfo(dtype).eps * max(cond, 1.0)


def matrices(dtype, n_grid=(7, 6, 3)):
    """One matrix per kind that fits ``dtype``: SPD (LLᵀ), symmetric indefinite (LDLᵀ),
    Hermitian indefinite (LDLᴴ, complex), unsymmetric (LU)."""
    A0 = laplacian(n_grid).astype(np.float64)
    n = A0.shape[0]
    complex_ = np.dtype(dtype).kind == "c"
    R = sp.random(n, n, density=0.02, random_state=3)
    spd = A0 + ((1j * R - 1j * R.T) * 0.3 if complex_ else 0)
    out = [("llt", spd)]
    out.append(("ldlt", A0 - 0.7 * sp.eye(n) + (0.2j * sp.eye(n) if complex_ else 0)))
    if complex_:
        out.append(("ldlh", spd - 0.7 * sp.eye(n)))
    out.append(("lu", A0 + R + (1j * R if complex_ else 0)))
    return [(kind, sp.csc_array(M).astype(dtype)) for kind, M in out]


CASES = [
    pytest.param(kind, M, id=f"{kind}-{np.dtype(dtype).name}")
    for dtype in DTYPES
    for kind, M in matrices(dtype)
]


@pytest.mark.parametrize("kind, A", CASES)
def test_schur_and_partial_solves_match_dense(kind, A):
    rng = np.random.default_rng(0)
    n = A.shape[0]
    idx = rng.choice(n, 17, replace=False)
    F = pastixpy.factorize(A, schur=idx, kind=kind)
    assert F.kind == kind and F.stats["schur"] == 17
    D = dense(A)
    tol = tolerance(D, idx, A.dtype)
    S_ref = reference(D, idx)
    S = F.schur()
    assert S.dtype == A.dtype and S.shape == (17, 17)
    assert np.abs(S - S_ref).max() <= tol * np.abs(S_ref).max()
    if kind != "lu":  # symmetric (Hermitian) kinds give a symmetric (Hermitian) S
        herm = kind in ("llt", "ldlh") and A.dtype.kind == "c"
        assert np.array_equal(S, S.conj().T if herm else S.T)
    b = rng.standard_normal((n, 2)).astype(A.dtype)
    y = F.schur_reduce(b)
    y_ref = reduced_reference(D, idx, b.astype(D.dtype))
    assert y.shape == (17, 2)
    assert np.abs(y - y_ref).max() <= tol * np.abs(y_ref).max()
    # The interface solved densely, then the back substitution: A x = b.
    x2 = np.linalg.solve(S_ref, y_ref)
    x = F.schur_expand(b, x2)
    assert x.shape == b.shape
    assert np.array_equal(x[idx], x2.astype(x.dtype))
    x_ref = np.linalg.solve(D, b.astype(D.dtype))
    assert np.abs(x - x_ref).max() <= tol * np.abs(x_ref).max()
    # A full solve goes through a dense LU of S, refined as any solve.
    x_full = F.solve(b[:, 0])
    berr = np.abs(D @ x_full - b[:, 0]).max() / (
        np.abs(D).sum(axis=1).max() * np.abs(x_full).max() + np.abs(b[:, 0]).max()
    )
    assert berr < 10 * np.finfo(x_full.dtype).eps


def test_analysis_orders_the_schur_unknowns_last_as_one_cblk():
    A = laplacian((12, 12))
    n = A.shape[0]
    idx = np.array([140, 5, 77, 3, 60])
    for ordering in ("auto", "metis", "amd", "natural", np.arange(n)[::-1]):
        an = pastixpy.analyze(A, schur=idx, ordering=ordering)
        an.check()
        assert np.array_equal(an.perm[-5:], idx)  # in the order given
        assert an.symbol.cblk_fcolnum[-1] == n - 5  # one cblk, the last
        assert an.stats["n_schur"] == 5
        assert np.array_equal(an.schur, idx)


def test_schur_on_disconnected_and_extreme_index_sets():
    A = sp.block_diag([laplacian((5, 5)), laplacian((4, 4))]).tocsc()
    D = dense(A)
    n = A.shape[0]
    for idx in ([30, 2], [0], list(range(n))[::-1], list(range(25))):
        F = pastixpy.factorize(A, schur=idx)
        np.testing.assert_allclose(F.schur(), reference(D, np.array(idx)), atol=1e-13)


def test_threaded_factorization_gives_the_same_schur():
    # Above PARALLEL_MIN_FLOPS: the threaded scheduler runs, the last cblk never factored.
    A = laplacian((26, 26, 26))
    n = A.shape[0]
    idx = np.flatnonzero(np.arange(n) % 676 < 26)[:200]
    F1 = pastixpy.factorize(A, schur=idx, threads=1)
    F2 = pastixpy.factorize(A, schur=idx, threads=2)
    assert F2.stats["threads"] == (2 if OPENMP else 1)  # one without OpenMP (setup.py)
    S1, S2 = F1.schur(), F2.schur()
    assert np.abs(S1 - S2).max() <= 1e-12 * np.abs(S1).max()
    b = np.random.default_rng(1).standard_normal(n)
    x = F2.schur_expand(b, np.linalg.solve(S2, F2.schur_reduce(b)))
    assert np.abs(A @ x - b).max() <= 1e-12 * np.abs(b).max()


def test_schur_with_a_given_analysis_and_refactorize():
    A = laplacian((8, 8))
    idx = [5, 6, 50]
    an = pastixpy.analyze(A, schur=idx)
    F = pastixpy.factorize(A, schur=idx, analysis=an)
    assert F.analysis is an
    F.refactorize(3 * A)
    np.testing.assert_allclose(F.schur(), 3 * reference(dense(A), np.array(idx)), rtol=1e-12)
    with pytest.raises(OptionError, match="analysis was made for 3 Schur unknowns"):
        pastixpy.factorize(A, analysis=an)
    with pytest.raises(OptionError, match="others"):
        pastixpy.factorize(A, schur=[5, 6, 51], analysis=an)
    with pytest.raises(OptionError, match="no Schur unknowns"):
        pastixpy.factorize(A, schur=idx, analysis=pastixpy.analyze(A))


def test_right_hand_sides_vector_complex_and_shape_errors():
    A = laplacian((7, 7))
    n = A.shape[0]
    idx = [10, 20, 30]
    F = pastixpy.factorize(A, schur=idx)
    D = dense(A)
    b = np.arange(n, dtype=float) + 1j  # complex b, real A: two real solves
    y = F.schur_reduce(b)
    assert y.shape == (3,) and y.dtype == np.complex128
    x = F.schur_expand(b, np.linalg.solve(F.schur(), y))
    np.testing.assert_allclose(x, np.linalg.solve(D, b), atol=1e-12)
    with pytest.raises(InvalidInputError, match=r"x_schur must have shape \(3,\)"):
        F.schur_expand(np.ones(n), np.ones(4))
    with pytest.raises(InvalidInputError, match="x_schur"):
        F.schur_expand(np.ones((n, 2)), np.ones((3, 3)))
    with pytest.raises(InvalidInputError):
        F.schur_reduce(np.ones(n + 1))


@pytest.mark.parametrize(
    "schur, error, match",
    [
        ([1, 1], InvalidInputError, r"schur\[1\] = 1 repeats"),
        ([49], InvalidInputError, "not an unknown of a matrix with 49 columns"),
        ([-1], InvalidInputError, "negative"),
        ([[1]], InvalidInputError, "one-dimensional"),
        ([], InvalidInputError, "empty"),
        ([1.5], InvalidInputError, "dtype float64"),
    ],
)
def test_bad_schur_indices(schur, error, match):
    with pytest.raises(error, match=match):
        pastixpy.factorize(laplacian((7, 7)), schur=schur)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"compress": 1e-8}, "compress"),
        ({"precision": "mixed"}, "lower precision"),
        ({"precision": "single"}, "lower precision"),
    ],
)
def test_options_schur_does_not_combine_with(options, match):
    with pytest.raises(OptionError, match=match):
        pastixpy.factorize(laplacian((7, 7)), schur=[3], **options)


def test_schur_calls_need_a_schur_factorization_and_spsolve_refuses_it():
    A = laplacian((7, 7))
    F = pastixpy.factorize(A)
    for call in (F.schur, lambda: F.schur_reduce(np.ones(49))):
        with pytest.raises(PastixError, match="schur=indices"):
            call()
    with pytest.raises(OptionError, match="spsolve takes no schur"):
        pastixpy.spsolve(A, np.ones(49), schur=[1])
    Fs = pastixpy.factorize(A, schur=[1, 2])
    with pytest.raises(NotImplementedError, match="not factored"):
        Fs.slogdet()


def test_perturbed_pivots_get_wider_supernodes_then_are_said_when_s_is_read():
    # Refined solves would pass, but S carries the perturbation: wider supernodes first.
    n = 100
    A = sp.csc_array(laplacian((10, 10)) - 3.0 * sp.eye(n))
    F = pastixpy.factorize(A, schur=[5, 77, 3, 40, 41, 42], kind="ldlt")
    assert F.stats["perturbed_pivots"] == 0 and F.stats["coarsened"]
    assert "would leave S a nearby matrix's" in F.stats["retries"][0]
    idx = np.array([5, 77, 3, 40, 41, 42])
    np.testing.assert_allclose(F.schur(), reference(dense(A), idx), rtol=1e-9, atol=1e-9)
    # A₁₁ singular: no pivoting avoids the perturbation, and reading S says so.
    B = sp.csc_array(np.array([[1.0, 1, 1], [1, 1, 1], [1, 1, 3]]))
    G = pastixpy.factorize(B, schur=[2], kind="ldlt")
    assert G.stats["perturbed_pivots"] == 1
    with pytest.warns(PastixWarning, match="Schur complement is that of a nearby matrix"):
        G.schur()


def test_pairs_for_weak_diagonals_never_take_a_schur_unknown():
    # A KKT matrix whose constraints' zero diagonal is paired with strong unknowns, the
    # Schur unknowns (two of K's) kept out of every pair.
    K = laplacian((6, 6))
    C = sp.random(10, 36, density=0.2, random_state=1) + sp.eye(10, 36)
    M = sp.csc_array(sp.bmat([[K, C.T], [C, None]]))
    idx = np.array([0, 1])
    F = pastixpy.factorize(M, schur=idx)
    assert F.kind == "ldlt" and F.stats["pairs"] > 0 and F.stats["perturbed_pivots"] == 0
    pairs = pastixpy.preprocess.preprocess(M, F._state.kind, alone=idx).pairs
    assert pairs is not None and not np.isin(pairs, idx).any()
    np.testing.assert_allclose(F.schur(), reference(dense(M), idx), rtol=1e-10, atol=1e-12)
    with pytest.raises(InvalidInputError, match="pair holds a Schur unknown"):
        pastixpy.analyze(M, schur=[0, 1], pairs=[[1, 37]])


def test_schur_complement_function_is_pythons_mumps_name():
    A = laplacian((6, 6))
    np.testing.assert_allclose(
        pastixpy.schur_complement(A, [0, 35]), reference(dense(A), np.array([0, 35])), atol=1e-14
    )


def test_pickle_and_save_load_in_a_fresh_process(tmp_path):
    A = sp.csc_array(laplacian((8, 8)) + sp.random(64, 64, 0.05, random_state=0))
    idx = [3, 9, 27, 60]
    F = pastixpy.factorize(A, schur=idx)
    G = pickle.loads(pickle.dumps(F))
    assert np.array_equal(G.schur(), F.schur())
    b = np.ones(64)
    path = F.save(tmp_path / "f.pastix")
    code = (
        "import sys, numpy as np, pastixpy\n"
        f"F = pastixpy.load({str(path)!r})\n"
        "b = np.ones(64)\n"
        "y = F.schur_reduce(b)\n"
        "x = F.schur_expand(b, np.linalg.solve(F.schur(), y))\n"
        "np.save(sys.argv[1], x)\n"
    )
    out = tmp_path / "x.npy"
    subprocess.run([sys.executable, "-c", code, str(out)], check=True, cwd=tmp_path)
    x = F.schur_expand(b, np.linalg.solve(F.schur(), F.schur_reduce(b)))
    assert np.array_equal(np.load(out), x)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(8, 40),
    density=st.floats(0.05, 0.4),
    k=st.integers(1, 8),
    kind=st.sampled_from(["llt", "ldlt", "lu"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_property_schur_matches_dense(n, density, k, kind, seed):
    rng = np.random.default_rng(seed)
    R = sp.random(n, n, density=density, random_state=rng)
    if kind == "lu":
        M = R + n * sp.eye(n)
    else:
        M = R + R.T + (n if kind == "llt" else 0.5) * sp.eye(n)
    A = sp.csc_array(M)
    idx = rng.choice(n, min(k, n), replace=False)
    D = dense(A)
    rest = np.setdiff1d(np.arange(n), idx)
    if rest.size and np.linalg.cond(D[np.ix_(rest, rest)]) > 1e8:
        return  # A₁₁ too close to singular for a meaningful comparison
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PastixWarning)
        F = pastixpy.factorize(A, schur=idx, kind=kind)
        if F.stats["perturbed_pivots"]:
            return  # static pivoting: the Schur complement of a nearby matrix
        S = F.schur()
    S_ref = reference(D, idx)
    assert np.abs(S - S_ref).max() <= tolerance(D, idx, np.float64) * max(1, np.abs(S_ref).max())


def test_a_memory_budget_keeps_a_schur_factorization_full_rank():
    A = laplacian((12, 12, 12))
    F = pastixpy.factorize(A, schur=[1, 2, 3], memory_limit="1GiB")
    budget = F.stats["memory_budget"]
    assert budget["chosen"] == "full-rank"
    assert set(budget["ruled_out"]) == {
        "mixed",
        "mixed+blr-jit",
        "mixed+blr-minmem",
        "blr-jit",
        "blr-minmem",
    }
    with pytest.raises(pastixpy.OutOfMemoryError, match="schur= keeps the Schur complement"):
        pastixpy.factorize(A, schur=[1, 2, 3], memory_limit="1MiB")


def test_the_selected_inverse_refuses_a_schur_factorization():
    F = pastixpy.factorize(laplacian((6, 6)), schur=[0, 35])
    for call in (F.inv_diag, F.inv_selected):
        with pytest.raises(PastixError, match="Schur complement unfactored"):
            call()
