"""pastixpy as a drop-in for scipy's spsolve and factorized: scipy's keywords, its
behaviour on singular matrices and wrong shapes (scipy's own tests, adapted), matrices
symmetric up to rounding, kinds forced on matrices they do not fit, F as gmres's M=."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from hypothesis import given, settings
from hypothesis import strategies as st
from test_numeric import backward_error

import pastixpy
from pastixpy.gallery import elasticity3d, laplacian, saddle_point

# ---------------------------------------------------------------------------- scipy's tests


def test_spsolve_singular_warns_and_returns_nan_like_scipy():
    # scipy: TestLinsolve.test_singular
    A = sp.csc_array((5, 5), dtype="d")
    b = np.array([1, 2, 3, 4, 5], dtype="d")
    with pytest.warns(sla.MatrixRankWarning, match="Matrix is exactly singular"):
        x = pastixpy.spsolve(A, b)
    assert x.shape == (5,) and not np.isfinite(x).any()


def test_spsolve_singular_gh_3312():
    # scipy: TestLinsolve.test_singular_gh_3312 (a RuntimeError or a non-finite x).
    ij = np.array([(17, 0), (17, 6), (17, 12), (10, 13)], dtype=np.int32)
    v = np.array([0.284213, 0.94933781, 0.15767017, 0.38797296])
    A = sp.csc_array((v, ij.T), shape=(20, 20))
    with pytest.warns(sla.MatrixRankWarning):
        x = pastixpy.spsolve(A, np.arange(20))
    assert not np.isfinite(x).any()


def test_factorized_singular_raises_runtime_error():
    # scipy: TestFactorized.test_singular_without_umfpack
    with pytest.raises(RuntimeError, match="structurally singular"):
        pastixpy.factorized(sp.csc_array((5, 5), dtype="d"))(np.ones(5))
    assert issubclass(pastixpy.SingularMatrixError, RuntimeError)


def test_factorized_wrong_sizes_raise_value_error():
    # scipy: TestFactorized.test_call_with_incorrectly_sized_matrix_without_umfpack
    n = 5
    d = np.arange(n) + 1
    A = sp.dia_array(((d, 2 * d, d[::-1]), (-3, 0, 5)), shape=(n, n)).tocsc()
    solve = pastixpy.factorized(A)
    rng = np.random.default_rng(230498)
    for b in (rng.random(4), rng.random((4, 3)), rng.random((n, 3, 9))):
        with pytest.raises(ValueError, match="b has shape"):
            solve(b)
    with pytest.raises(ValueError, match="must be square"):
        pastixpy.factorized(A[:, :4])


def test_spsolve_shapes_are_checked_before_any_work(monkeypatch):
    # scipy: TestLinsolve.test_shape_compatibility's last case, and the issue's: a b of
    # the wrong shape is refused before the factorization runs.
    from pastixpy import api

    calls = []
    monkeypatch.setattr(api, "factorize", lambda *a, **k: calls.append(1))
    with pytest.raises(ValueError, match="b has shape"):
        pastixpy.spsolve(sp.csc_array((3, 3)), sp.csc_array((1, 3)))
    with pytest.raises(ValueError, match="b has shape"):
        pastixpy.spsolve(laplacian((10, 10)), np.ones(99))
    with pytest.raises(ValueError, match="NaN or Inf"):
        pastixpy.spsolve(laplacian((3, 3)), np.r_[np.ones(8), np.nan])
    assert calls == []


@pytest.mark.parametrize("permc_spec", [None, "NATURAL", "MMD_ATA", "MMD_AT_PLUS_A", "COLAMD"])
@pytest.mark.parametrize("use_umfpack", [True, False])
def test_spsolve_takes_scipy_keywords(permc_spec, use_umfpack):
    A = sp.csc_array(laplacian((6, 5)) + sp.eye_array(30, k=1) * 0.3)
    b = np.arange(30.0)
    x = pastixpy.spsolve(A, b, permc_spec=permc_spec, use_umfpack=use_umfpack)
    np.testing.assert_allclose(x, sla.spsolve(A, b), rtol=1e-12)
    with pytest.raises(pastixpy.InvalidInputError, match="permc_spec"):
        pastixpy.spsolve(A, b, permc_spec="METIS")
    with pytest.raises(pastixpy.InvalidInputError, match="not both"):
        pastixpy.spsolve(A, b, permc_spec="COLAMD", ordering="metis")


def test_exactly_singular_inconsistent_system_raises():
    # A 2x2 exactly singular matrix and a b outside its range: no 1e32 solution with a
    # warning, but the SingularMatrixError the docs promise.
    A = sp.csc_array(np.array([[1.0, 1.0], [1.0, 1.0]]))
    for kind in ("auto", "ldlt", "lu"):
        with pytest.raises(pastixpy.SingularMatrixError, match="numerically singular"):
            pastixpy.factorize(A, kind=kind).solve(np.array([1.0, 2.0]))
    F = pastixpy.factorize(A, kind="lu")
    # In its range, the singular system is solved (one solution of many).
    with pytest.warns(pastixpy.PastixWarning, match="perturbed"):
        x = F.solve(np.array([2.0, 2.0]))
    assert np.abs(A @ x - 2.0).max() <= 1e-12


def test_neumann_laplacian_inconsistent_rhs_raises():
    L = laplacian((12, 12))
    A = sp.csc_array(L - sp.diags_array(np.asarray(L.sum(axis=1)).ravel()))  # singular
    F = pastixpy.factorize(A, kind="ldlt")
    with pytest.raises(pastixpy.SingularMatrixError, match="not in its range"):
        F.solve(np.ones(144))
    b = A @ np.random.default_rng(0).standard_normal(144)  # compatible
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pastixpy.PastixWarning)
        x = F.solve(b)
    assert backward_error(A, x, b).max() <= 1e-14


# ---------------------------------------------------------------------------- symmetry


def _rounded_fem(seed=0):
    """A FEM matrix whose assembly left rounding asymmetry (relative 1e-17 to 1e-16)."""
    A = sp.csc_array(elasticity3d((4, 3, 3)))
    rng = np.random.default_rng(seed)
    noise = sp.csc_array(A, copy=True)
    noise.data = noise.data * rng.uniform(-1, 1, noise.nnz) * 1e-16
    return sp.csc_array(A + noise)


def test_symmetric_up_to_rounding_is_factored_as_symmetric():
    A = _rounded_fem()
    assert pastixpy.matrix.matrix_symmetry(pastixpy.matrix.canonical_csc(A)) == "general"
    F = pastixpy.factorize(A)
    assert F.kind == "llt"
    assert F.stats["symmetry"] == "symmetric" and 0 < F.stats["asymmetry"] < 1e-15
    b = np.arange(A.shape[0], dtype=float)
    x = F.solve(b)
    # Refined against A itself, not the symmetric matrix of its lower triangle.
    assert backward_error(A, x, b).max() <= 1e-15
    assert not F._solver.exact  # residuals from A's own product, not its transpose's
    lu = pastixpy.factorize(A, kind="lu", matching="on")  # the pipeline's LU
    assert F.stats["factor_entries"] < 0.6 * lu.stats["factor_entries"]


def test_a_symmetric_kind_forced_on_an_unsymmetric_matrix_reads_one_triangle():
    rng = np.random.default_rng(3)
    S = laplacian((8, 8))
    E = sp.random_array((64, 64), density=0.05, rng=rng) * 1e-3
    A = sp.csc_array(S + E.multiply(S != 0))  # the Laplacian's pattern, slightly unsymmetric
    with pytest.warns(pastixpy.PastixWarning, match="kind='llt' on a matrix that is not"):
        F = pastixpy.factorize(A, kind="llt")
    b = np.ones(64)
    x = F.solve(b)
    assert backward_error(A, x, b).max() <= 1e-14  # refinement made up the difference
    # Far from symmetric, refinement cannot: the solve says so.
    B = sp.csc_array(S + 3 * sp.triu(S, 1))
    with pytest.warns(pastixpy.PastixWarning, match="not symmetric"):
        G = pastixpy.factorize(B, kind="ldlt", refine="ir")
    with pytest.raises(pastixpy.SingularMatrixError):
        G.solve(b)


def test_saddle_point_skips_the_failed_cholesky():
    A = saddle_point((10, 10))
    F = pastixpy.factorize(A)
    assert F.kind == "ldlt" and F.stats["retries"] == []
    assert "diagonal entry 0 at column" in F.stats["kind_reason"]
    # Where Cholesky is tried and fails, its time still counts.
    B = sp.csc_array(laplacian((10, 10)) - 5.0 * sp.eye_array(100))
    B.setdiag(np.r_[np.full(99, 1.0), 4.0])  # positive diagonal, indefinite
    G = pastixpy.factorize(B)
    assert G.kind == "ldlt" and G.stats["retries"] == ["not positive definite: ldlt"]
    assert G.stats["seconds"]["factorize"] > 0


def test_an_unreachable_tolerance_is_an_option_error():
    with pytest.raises(pastixpy.OptionError, match="below what float64 can reach"):
        pastixpy.factorize(laplacian((5, 5)), refine=("ir", {"tol": 1e-17}))
    with pytest.raises(pastixpy.OptionError, match="precision='double' or 'mixed'"):
        pastixpy.factorize(laplacian((5, 5)).astype(np.float32), refine=("ir", {"tol": 1e-9}))
    # Reachable in double: accepted.
    pastixpy.factorize(
        laplacian((5, 5)).astype(np.float32), refine=("ir", {"tol": 1e-9}), precision="mixed"
    )


# ---------------------------------------------------------------------------- operators


@pytest.mark.parametrize("how", ["F", "aspreconditioner"])
def test_factorization_as_gmres_preconditioner(how):
    A = sp.csc_array(laplacian((15, 15)))
    P = pastixpy.factorize(A + 0.5 * sp.eye_array(225))  # a nearby matrix's factors
    M = P if how == "F" else P.aspreconditioner()
    b = np.ones(225)
    x, info = sla.gmres(A, b, M=M, rtol=1e-12, atol=0)
    assert info == 0 and np.abs(A @ x - b).max() <= 1e-9
    assert isinstance(sla.aslinearoperator(P), sla.LinearOperator)
    np.testing.assert_allclose(P.rmatvec(b), P.solve(b, trans="H"))


def test_singular_positive_semidefinite_and_b_outside_the_range():
    # Cholesky of a graph Laplacian takes its roundoff-sized last pivot as positive:
    # no pivot is perturbed, yet x grows to 1e17 for a b outside the range. The growth
    # check says so, as scipy's users expect (warning and NaNs; RuntimeError from F).
    A = sp.csc_array(laplacian((8, 8)))
    A = sp.csc_array(A - sp.diags_array(np.asarray(A.sum(axis=1)).ravel()))
    F = pastixpy.factorize(A)
    assert F.kind == "llt" and F.stats["perturbed_pivots"] == 0
    with pytest.raises(RuntimeError, match="not in its range"):
        F.solve(np.ones(64))
    b = A @ np.random.default_rng(1).standard_normal(64)
    assert backward_error(A, F.solve(b), b).max() < 1e-12


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 25),
    density=st.floats(0.05, 0.7),
    structure=st.sampled_from(["general", "symmetric", "hermitian", "symmetric-pattern"]),
    dtype=st.sampled_from([np.float32, np.float64, np.complex64, np.complex128]),
    seed=st.integers(0, 10**6),
)
def test_transpose_asymmetry_against_the_transposed_matrix(n, density, structure, dtype, seed):
    """The one-pass kernel behind symmetry_of, against C - Cᵀ and C - Cᴴ formed by scipy."""
    from pastixpy._graph import transpose_asymmetry
    from pastixpy.matrix import canonical_csc

    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="csc")
    if np.dtype(dtype).kind == "c":
        A = A + 1j * sp.random_array((n, n), density=density, rng=rng, format="csc")
    if structure == "symmetric":
        A = A + A.T
    elif structure == "hermitian":
        A = A + A.conj().T
    elif structure == "symmetric-pattern":  # same pattern, other values
        P = sp.csc_array(A + A.T)
        A = sp.csc_array((rng.standard_normal(P.nnz), P.indices, P.indptr), shape=P.shape)
    C = canonical_csc(sp.csc_array(A).astype(dtype))
    pattern, asym_t, asym_h, scale = transpose_asymmetry(n, C.indptr, C.indices, C.data)
    W = sp.csc_array(C, dtype=np.complex128)
    S = sp.csc_array((np.ones(C.nnz), C.indices, C.indptr), shape=C.shape)

    def max_abs(M):
        M = sp.csc_array(M)
        return float(np.abs(M.data).max()) if M.nnz else 0.0

    assert pattern == (abs(S - S.T).nnz == 0)
    assert asym_t == pytest.approx(max_abs(W - W.T), rel=1e-6, abs=1e-30)
    assert asym_h == pytest.approx(max_abs(W - W.conj().T), rel=1e-6, abs=1e-30)
    assert scale == pytest.approx(max_abs(W), rel=1e-6, abs=1e-30)
