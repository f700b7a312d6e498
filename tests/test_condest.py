"""F.condest(): Hager–Higham's estimate of κ₁(A), against the dense κ₁ for every kind
and dtype, on well- and ill-conditioned matrices, and where pivots were perturbed."""

import numpy as np
import pytest
import scipy.sparse as sp

import pastixpy
from pastixpy.gallery import laplacian


def dense_kappa1(A):
    D = A.toarray().astype(np.complex128 if np.iscomplexobj(A.data) else np.float64)
    return np.abs(D).sum(0).max() * np.abs(np.linalg.inv(D)).sum(0).max()


def matrix(kind, dtype, n=80, scale=1.0, seed=0):
    """A sparse matrix for ``kind`` with κ₁ growing with ``scale`` (a graded diagonal)."""
    rng = np.random.default_rng(seed)
    R = sp.random(n, n, density=0.05, random_state=rng, dtype=np.float64)
    if np.dtype(dtype).kind == "c":
        R = R + 1j * sp.random(n, n, density=0.05, random_state=rng)
    grade = np.logspace(0, np.log10(scale), n) if scale > 1 else np.ones(n)
    if kind == "llt":
        S = R @ R.conj().T
        return sp.csc_array((S + sp.diags(4.0 * grade)).astype(dtype))
    if kind == "ldlt":  # symmetric indefinite (complex symmetric for complex dtypes)
        S = R + R.T
        signs = np.where(np.arange(n) % 2, -1.0, 1.0)
        return sp.csc_array((S + sp.diags(4.0 * signs * grade)).astype(dtype))
    return sp.csc_array((R + sp.diags(4.0 * grade)).astype(dtype))


CASES = [
    (kind, dtype)
    for kind in ("llt", "ldlt", "lu")
    for dtype in (np.float64, np.complex128, np.float32, np.complex64)
]


@pytest.mark.parametrize("kind, dtype", CASES)
@pytest.mark.parametrize("scale", [1.0, 1e5])
def test_within_a_factor_of_three_of_the_dense_condition_number(kind, dtype, scale):
    single = np.dtype(dtype).char in "fF"
    if single and scale > 1:
        scale = 1e3  # inside what single precision resolves
    A = matrix(kind, dtype, scale=scale)
    F = pastixpy.factorize(A, kind=kind)
    est, true = F.condest(), dense_kappa1(A)
    # A lower bound (up to the solves' rounding), and at most 3x below.
    assert true / 3 <= est <= true * (1 + (1e-3 if single else 1e-8)), (est, true)


def test_perturbed_pivots_estimate_the_matrix_not_the_factors():
    """A pivot threshold above some pivots perturbs them: the factors invert another
    matrix, but refined solves apply A⁻¹ itself, so the estimate is A's."""
    A = sp.csc_array(laplacian((40, 3)) + 0.1 * sp.eye(120))
    F = pastixpy.factorize(A, kind="ldlt", pivot_tol=2.5)
    assert F.stats["perturbed_pivots"] > 0
    est, true = F.condest(), dense_kappa1(A)
    assert true / 3 <= est <= true * (1 + 1e-6), (est, true)


@pytest.mark.parametrize("kind", ["ldlt", "lu"])
def test_a_singular_matrix_shows_past_one_over_eps(kind):
    """A pure Neumann Laplacian (singular, one perturbed pivot): refined solves of
    right-hand sides outside its range grow without bound, and the estimate is past
    1/eps; with refine="none" it is the perturbed factors' (about 1/pivot_tol)."""
    L = laplacian((12, 12)).tolil()
    L.setdiag(0)
    L.setdiag(-np.asarray(L.sum(axis=1)).ravel())
    A = sp.csc_array(L)
    F = pastixpy.factorize(A, kind=kind)
    assert F.stats["perturbed_pivots"] == 1
    assert F.condest() * np.finfo(np.float64).eps > 1.0
    with pytest.warns(pastixpy.PastixWarning, match="perturbed"):
        plain = pastixpy.factorize(A, kind=kind, refine="none")
    tol = plain.stats["pivot_tol"]
    assert 0.1 / tol < plain.condest() < 1e4 / tol


def test_compressed_and_mixed_factors_estimate_a():
    A = laplacian((30, 30))
    true = dense_kappa1(A)
    for options in ({"compress": 1e-4}, {"precision": "mixed"}):
        est = pastixpy.factorize(A, **options).condest()
        assert true / 3 <= est <= true * (1 + 1e-6), (options, est, true)


def test_warnings_say_may_be_singular_only_with_an_estimate_that_shows_it():
    """Every message about perturbed pivots is worded from a condition estimate of A,
    refine="none" included: a well-conditioned matrix whose pivots a high threshold
    perturbed is called well conditioned, with its estimate; a singular one may be
    singular, with the estimate or the failed solves that show it."""
    A = sp.csc_array(laplacian((40, 3)) + 0.1 * sp.eye(120))
    with pytest.warns(pastixpy.PastixWarning) as caught:
        F = pastixpy.factorize(A, kind="ldlt", pivot_tol=2.5, refine="none")
    message = str(caught[0].message)
    assert "well conditioned (condition number about" in message
    assert "may be singular" not in message
    with pytest.warns(pastixpy.PastixWarning) as caught:
        F.slogdet()
    assert "may be singular" not in str(caught[0].message)

    L = laplacian((12, 12)).tolil()
    L.setdiag(0)
    L.setdiag(-np.asarray(L.sum(axis=1)).ravel())
    with pytest.warns(pastixpy.PastixWarning) as caught:
        pastixpy.factorize(sp.csc_array(L), kind="ldlt", refine="none")
    message = str(caught[0].message)
    assert "may be singular" in message
    assert "condition number at least" in message or "could not solve" in message


def test_the_estimate_in_the_statistics_when_asked():
    A = laplacian((20, 20))
    F = pastixpy.factorize(A, condest=True)
    assert F.stats["condest"] == pytest.approx(F.condest(), rel=1e-12)
    assert F.stats["seconds"]["condest"] >= 0
    assert "condest" not in pastixpy.factorize(A).stats
    F.refactorize(2 * A)  # the refactorization estimates its own matrix's
    assert F.stats["condest"] == pytest.approx(dense_kappa1(2 * A), rel=1e-8)
    with pytest.raises(pastixpy.InvalidInputError, match="condest must be True or False"):
        pastixpy.factorize(A, condest="yes")


def test_distributed_factorization_estimates_on_rank_zero():
    from pastixpy.distributed import run_ranks

    A = laplacian((12, 12))

    def rank(comm):
        F = pastixpy.factorize(A if comm.Get_rank() == 0 else None, comm=comm, condest=True)
        return F.stats.get("condest")

    got = run_ranks(2, rank)
    assert got[0] == pytest.approx(dense_kappa1(A), rel=1e-8)
