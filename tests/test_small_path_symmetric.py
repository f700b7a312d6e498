"""factorize's small path for symmetric and Hermitian matrices: the simplicial LDLᵀ
(LDLᴴ) without pivoting (csrc/simplicial_ldl.pyx, pastixpy/simplicial.py
``factor_symmetric``) behind the usual handle.

The kernel's factors against the dense permuted matrix; solves against dense LAPACK;
the kind, inertia and determinant against the pipeline's and dense references;
pickling, refactorization, and the pipeline's error for LLᵀ forced on an indefinite
matrix."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from test_numeric import backward_error

import pastixpy
from pastixpy import _simplicial_ldl, simplicial
from pastixpy.errors import NotPositiveDefiniteError
from pastixpy.gallery import laplacian
from pastixpy.matrix import canonical_csc


def symmetric(n, seed, variety):
    """A random sparse matrix of ``variety``: "spd", "indefinite" (a strong diagonal of
    both signs), "complex" (complex symmetric), "hpd" or "hindefinite" (Hermitian)."""
    rng = np.random.default_rng(seed)
    M = sp.random_array((n, n), density=0.1, rng=rng, format="csc")
    if variety in ("complex", "hpd", "hindefinite"):
        M = M + 1j * sp.random_array((n, n), density=0.1, rng=rng, format="csc")
    hermitian = variety in ("hpd", "hindefinite")
    S = M + (M.conj().T if hermitian else M.T)
    rowsum = abs(S).sum(axis=1) + 1.0
    if variety in ("indefinite", "hindefinite", "complex"):
        sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        sign[0] = -1.0  # indefinite for sure
    else:
        sign = np.ones(n)
    diag = sign * (rowsum + rng.random(n))
    if variety == "complex":
        diag = diag + 0.5j  # never Hermitian too (which would make it "ldlh")
    return canonical_csc(sp.csc_array(S + sp.diags_array(diag)))


VARIETIES = ("spd", "indefinite", "complex", "hpd", "hindefinite")
KIND = {"spd": "llt", "indefinite": "ldlt", "complex": "ldlt", "hpd": "llt", "hindefinite": "ldlh"}


@pytest.mark.parametrize("variety", VARIETIES)
@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 80), seed=st.integers(0, 10**6))
def test_kernel_reconstructs_the_permuted_matrix(variety, n, seed):
    A = symmetric(n, seed, variety)
    hermitian = variety in ("hpd", "hindefinite")
    F = simplicial.factor_symmetric(A, hermitian)
    assert F is not None
    L = sp.csc_array((F.Lx, F.Li, F.Lp), shape=(n, n)).toarray() + np.eye(n)
    Lt = L.conj().T if hermitian else L.T
    B = A.toarray()[np.ix_(F.p, F.p)]
    assert np.abs(L @ np.diag(F.D) @ Lt - B).max() <= 1e-13 * np.abs(B).max() * n


def test_kernel_reports_a_zero_pivot():
    A = canonical_csc(sp.csc_array(np.array([[0.0, 1.0], [1.0, 0.0]])))
    p = np.arange(2, dtype=np.int64)
    parent, Lp = _simplicial_ldl.ldl_symbolic(A.indptr, A.indices, p, p)
    status, step, *_ = _simplicial_ldl.ldl_numeric(
        A.indptr, A.indices, A.data, p, p, parent, Lp, False
    )
    assert (status, step) == (_simplicial_ldl.ZERO_PIVOT, 0)
    assert simplicial.factor_symmetric(A, False, "natural") is None


@pytest.mark.parametrize("variety", VARIETIES)
@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 80), seed=st.integers(0, 10**6), k=st.integers(1, 3))
def test_solves_match_dense_lapack(variety, n, seed, k):
    A = symmetric(n, seed, variety)
    F = pastixpy.factorize(A)
    assert F.stats["path"] == "simplicial"
    assert F.kind == KIND[variety] == F.stats["kind"]
    rng = np.random.default_rng(seed + 1)
    B = rng.standard_normal((n, k)) + 1j * rng.standard_normal((n, k))
    M = A.toarray()
    cond = np.linalg.cond(M)
    for trans in "NTH":
        Mt = {"N": M, "T": M.T, "H": M.conj().T}[trans]
        X = F.solve(B, trans=trans)
        assert backward_error(sp.csc_array(Mt), X, B).max() <= 1e-12
        Y = np.linalg.solve(Mt, B)
        assert np.abs(X - Y).max() <= 1e-14 * cond * np.abs(Y).max()


@pytest.mark.parametrize("variety", VARIETIES)
def test_kind_inertia_and_determinant_match_the_pipeline(variety):
    A = symmetric(60, 7, variety)
    F = pastixpy.factorize(A)
    G = pastixpy.factorize(A, matching="on")
    assert (F.stats["path"], G.stats["path"]) == ("simplicial", "supernodal")
    assert F.kind == G.kind
    for key in ("kind", "kind_reason", "retries"):
        assert F.stats[key] == G.stats[key], key
    M = A.toarray()
    sign, logdet = np.linalg.slogdet(M)
    s, ld = F.slogdet()
    assert np.isclose(ld, logdet, rtol=1e-12) and np.isclose(s, sign, rtol=1e-10)
    if variety != "complex":  # inertia is for real symmetric and Hermitian matrices
        w = np.linalg.eigvalsh(M)
        assert F.inertia() == G.inertia() == (int((w > 0).sum()), int((w < 0).sum()), 0)


def test_pickles_and_refactorizes():
    A = canonical_csc(sp.csc_array(laplacian((12, 12))))
    b = np.arange(A.shape[0], dtype=float)
    F = pastixpy.factorize(A)
    assert F.stats["path"] == "simplicial" and F.kind == "llt"
    F2 = pickle.loads(pickle.dumps(F))
    assert np.array_equal(F.solve(b), F2.solve(b))
    B = canonical_csc(sp.csc_array(A * 1.5))
    F.refactorize(B)
    assert backward_error(B, F.solve(b), b).max() <= 1e-12
    C = canonical_csc(sp.csc_array(A - 2.3 * sp.eye_array(A.shape[0])))  # indefinite
    F.refactorize(C)
    assert backward_error(C, F.solve(b), b).max() <= 1e-12


def test_llt_forced_on_an_indefinite_matrix_raises_as_the_pipeline():
    A = symmetric(40, 3, "indefinite")
    with pytest.raises(NotPositiveDefiniteError):
        pastixpy.factorize(A, kind="llt")
    with pytest.raises(NotPositiveDefiniteError):
        pastixpy.factorize(A, kind="llt", matching="on")


def test_a_tiny_pivot_is_left_to_the_pipeline():
    # D_0 = 1e-12 against its column's 1: LDLᵀ without pivots would grow; Bunch-Kaufman
    A = canonical_csc(sp.csc_array(np.array([[1e-12, 1.0, 0], [1.0, 1.0, 0], [0, 0, 2.0]])))
    F = pastixpy.factorize(A, ordering="natural")
    b = np.ones(3)
    assert backward_error(A, F.solve(b), b).max() <= 1e-12


def test_indefinite_with_a_positive_diagonal_falls_back_as_the_pipeline():
    # "auto" tries LLᵀ (the diagonal is positive); D says no: LDLᵀ, with the pipeline's retry
    block = sp.csc_array(np.array([[1.0, 2.0], [2.0, 1.0]]))
    A = sp.kron(sp.eye_array(20), block) + 0.01 * (sp.eye_array(40, k=2) + sp.eye_array(40, k=-2))
    A = canonical_csc(sp.csc_array(A))
    F = pastixpy.factorize(A)
    G = pastixpy.factorize(A, matching="on")
    assert (F.stats["path"], G.stats["path"]) == ("simplicial", "supernodal")
    for key in ("kind", "kind_reason", "retries"):
        assert F.stats[key] == G.stats[key], key
    assert F.kind == "ldlt" and F.stats["retries"] == ["not positive definite: ldlt"]
    assert F.inertia() == (20, 20, 0)
    assert np.isclose(F.slogdet()[1], np.linalg.slogdet(A.toarray())[1], rtol=1e-12)


@pytest.mark.parametrize("variety", VARIETIES)
@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 60), seed=st.integers(0, 10**6), k=st.integers(1, 3))
def test_one_call_refined_solve_against_dense_lapack(variety, n, seed, k):
    """The kernel's solve, check and refinement in one call (``refined_solve``): x against
    LAPACK's, its backward error and growth against their definitions computed here."""
    A = symmetric(n, seed, variety)
    hermitian = variety in ("hpd", "hindefinite")
    F = simplicial.factor_symmetric(A, hermitian)
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, k)).astype(A.dtype)
    X, berr, growth, steps = F.refined_solve(A, B, 1e-14, 3)
    dense = A.toarray()
    assert np.allclose(X, np.linalg.solve(dense, B), rtol=1e-8, atol=1e-10)
    norm_a = np.abs(dense).sum(axis=1).max()
    R = B - dense @ X
    xmax, bmax = np.abs(X).max(axis=0), np.abs(B).max(axis=0)
    expect = np.abs(R).max(axis=0) / (norm_a * xmax + bmax)
    # the residual is rounding's: the kernel's and numpy's sums differ by rounding
    assert np.allclose(berr, expect, rtol=1e-6, atol=4 * n * np.finfo(float).eps)
    assert np.allclose(growth, norm_a * xmax / bmax, rtol=1e-12)
    assert (berr <= 1e-14).all() and 0 <= steps <= 3 * k


@pytest.mark.parametrize("variety", VARIETIES)
@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 60), seed=st.integers(0, 10**6))
def test_kernel_checks_match_their_definitions(variety, n, seed):
    """``ldl_checks``' top and smallest pivot, read by the small path's verdict, against
    numpy on the factors: the largest of |D| and |L D|, the least |D_k| over the largest
    entry of column p[k] of A."""
    A = symmetric(n, seed, variety)
    F = simplicial.factor_symmetric(A, variety in ("hpd", "hindefinite"))
    col = np.repeat(np.arange(n), np.diff(F.Lp))
    top = max(np.abs(F.Lx * F.D[col]).max(initial=0.0), np.abs(F.D).max())
    colmax = np.array([np.abs(A[:, [j]].toarray()).max() for j in F.p])
    got_top, got_smallest = F.pivot_checks(A)
    assert got_top == pytest.approx(top, rel=1e-12)
    assert got_smallest == pytest.approx((np.abs(F.D) / colmax).min(), rel=1e-12)


def test_too_many_entries_leave_without_a_graph(monkeypatch):
    """A matrix whose entries alone bound AMD's forecast past the budget goes to the
    pipeline before A + Aᵀ's graph is made (the analysis makes it once), and the
    verdict is the graph's."""
    # A banded matrix of half-bandwidth w: (n - w) w edges at least, the bound
    # 2 edges² / n past MAX_FLOPS (and so past any share of it).
    n, w = 2000, 60
    A = sp.diags_array(
        [np.full(n - abs(k), -1.0 if k else 2.0 * w + 1) for k in range(-w, w + 1)],
        offsets=list(range(-w, w + 1)),
        format="csc",
    )
    C = canonical_csc(A)
    edges = (C.nnz - n) / 2
    assert simplicial.forecast_lower_bound(edges, n) > simplicial.MAX_FLOPS
    made = []
    real = simplicial.symmetric_pattern
    monkeypatch.setattr(simplicial, "symmetric_pattern", lambda M: made.append(1) or real(M))
    assert simplicial.factor_symmetric(C, False) is None
    assert not made
    # The graph's own bound says the same.
    xadj, adjncy = real(C)
    assert simplicial.forecast_lower_bound(adjncy.size / 2, n) > simplicial.MAX_FLOPS
    # Below the entries' bound, the graph is made.
    small = canonical_csc(laplacian((20, 20)))
    assert simplicial.factor_symmetric(small, False) is not None
    assert made
