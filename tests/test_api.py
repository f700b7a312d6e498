"""The user's surface: spsolve/factorized as scipy drop-ins, refactorize, by-products, errors."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from test_numeric import (
    assert_solution,
    backward_error,
    dominant_symmetric,
    kkt,
    random_vector,
    unsymmetric_zero_diagonal,
)

import pastixpy
from pastixpy.gallery import (
    convection_diffusion3d,
    elasticity3d,
    helmholtz2d,
    laplacian,
    saddle_point,
)


def eig_inertia(A):
    """(positive, negative, zero) eigenvalue counts of a Hermitian matrix, by LAPACK."""
    w = np.linalg.eigvalsh(A.toarray())
    small = 1e-10 * np.abs(w).max()
    return int((w > small).sum()), int((w < -small).sum()), int((np.abs(w) <= small).sum())


def row_swapped(A, i=0, j=1):
    """A with rows i and j exchanged: an odd permutation away from A."""
    p = np.arange(A.shape[0])
    p[[i, j]] = p[[j, i]]
    return sp.csc_array(sp.csr_array(A)[p])


# ---------------------------------------------------------------------------- scipy drop-ins


def _describe(x):
    return type(x), x.shape, x.dtype


A_FORMS = {
    "csc_array": sp.csc_array,
    "csr_array": sp.csr_array,
    "csc_matrix": sp.csc_matrix,
    "csr_matrix": sp.csr_matrix,
    "coo_array": sp.coo_array,
}


def _rhs_forms(n):
    rng = np.random.default_rng(7)
    return {
        "vector": rng.standard_normal(n),
        "column": rng.standard_normal((n, 1)),
        "block": rng.standard_normal((n, 3)),
        "list": list(range(n)),
        "int": np.arange(n),
        "complex": rng.standard_normal(n) + 1j * rng.standard_normal(n),
        "sparse_array_block": sp.random_array((n, 3), density=0.3, rng=rng, format="csc"),
        "sparse_matrix_block": sp.csc_matrix(sp.random_array((n, 3), density=0.3, rng=rng)),
        "sparse_csr_block": sp.random_array((n, 2), density=0.3, rng=rng, format="csr"),
        "sparse_array_column": sp.random_array((n, 1), density=0.5, rng=rng, format="csc"),
        "sparse_matrix_column": sp.csc_matrix(sp.random_array((n, 1), density=0.5, rng=rng)),
    }


@pytest.mark.parametrize("aform", sorted(A_FORMS))
@pytest.mark.parametrize("bform", sorted(_rhs_forms(1)))
def test_spsolve_is_a_drop_in(aform, bform):
    A0 = unsymmetric_zero_diagonal(30, 1)
    A = A_FORMS[aform](A0)
    b = _rhs_forms(30)[bform]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
        ref = sla.spsolve(A, b)
    x = pastixpy.spsolve(A, b)
    assert _describe(x) == _describe(ref)
    if sp.issparse(ref):
        assert x.format == ref.format
        x, ref = x.toarray(), ref.toarray()
    np.testing.assert_allclose(x, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_spsolve_precisions_and_options(dtype):
    A = (helmholtz2d(5) if np.dtype(dtype).kind == "c" else laplacian((5, 5))).astype(dtype)
    b = np.ones(25, dtype=dtype)
    x = pastixpy.spsolve(A, b)
    ref = sla.spsolve(A, b)
    assert x.dtype == ref.dtype == dtype
    assert_solution(A, x, b, dtype)
    # Options pass through to factorize.
    y = pastixpy.spsolve(A, b, kind="lu", ordering="amd", refine="ir")
    assert_solution(A, y, b, dtype)
    with pytest.raises(pastixpy.OptionError, match="unknown kind 'qr'"):
        pastixpy.spsolve(A, b, kind="qr")


@pytest.mark.parametrize("aform", ["csc_array", "csc_matrix", "csr_array"])
def test_factorized_is_a_drop_in(aform):
    A = A_FORMS[aform](convection_diffusion3d(3, peclet=30.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sp.SparseEfficiencyWarning)
        ref_solve = sla.factorized(A)
    solve = pastixpy.factorized(A)
    rng = np.random.default_rng(0)
    for b in (rng.standard_normal(27), rng.standard_normal((27, 4))):
        ref = ref_solve(b)
        x = solve(b)
        assert _describe(x) == _describe(ref)
        np.testing.assert_allclose(x, ref, rtol=1e-10, atol=1e-12)
    # The function is reusable and has the factorization behind it.
    assert solve(np.zeros(27)).shape == (27,)


# ---------------------------------------------------------------------------- refactorize and reuse


REFACTOR_CASES = {
    "llt": (lambda: laplacian((6, 5)), "llt"),
    "llt-complex": (lambda: dominant_symmetric(30, 2, complex_=True), "llt"),
    "ldlt": (lambda: saddle_point((3, 3)), "ldlt"),
    "ldlt-complex": (lambda: helmholtz2d(5), "ldlt"),
    "ldlh": (lambda: kkt(18, 6, 3, complex_=True), "ldlh"),
    "lu-matched": (lambda: unsymmetric_zero_diagonal(30, 4), "lu"),
    "lu-complex-matched": (lambda: unsymmetric_zero_diagonal(30, 5, complex_=True), "lu"),
}


def _new_values(A, seed):
    """Same stored entries, new values: D₁ A D₂ (D₁ = D₂ for symmetric kinds), which keeps
    the symmetry class, the inertia and nonsingularity."""
    rng = np.random.default_rng(seed)
    A = sp.csc_array(A, copy=True)
    A.sort_indices()
    n = A.shape[0]
    r = rng.uniform(0.5, 2.0, n)
    symmetric = (abs(A - A.T)).count_nonzero() == 0 or (abs(A - A.conj().T)).count_nonzero() == 0
    c = r if symmetric else rng.uniform(0.5, 2.0, n)
    cols = np.repeat(np.arange(n), np.diff(A.indptr))
    A.data = A.data * (r[A.indices] * c[cols])  # r_i c_j == c_j r_i exactly: symmetry kept
    return A


@pytest.mark.parametrize("case", sorted(REFACTOR_CASES))
def test_refactorize_equals_a_fresh_factorization(case):
    builder, kind = REFACTOR_CASES[case]
    A = builder()
    A2 = _new_values(A, 1)
    assert np.array_equal(A2.indptr, sp.csc_array(A).indptr)
    assert abs(A2 - A).max() > 0
    n = A.shape[0]
    b = random_vector(np.random.default_rng(2), (n, 2), np.iscomplexobj(A.data))
    F = pastixpy.factorize(A)
    assert F.kind == kind
    perm = F.perm.copy()
    assert F.refactorize(A2) is F
    assert F.kind == kind
    np.testing.assert_array_equal(F.perm, perm)  # the analysis was reused
    x = F.solve(b)
    assert_solution(A2, x, b, np.float64)
    fresh = pastixpy.factorize(A2).solve(b)
    np.testing.assert_allclose(x, fresh, rtol=1e-9, atol=1e-10 * np.abs(fresh).max())
    # Back to the first values: the first answer again.
    F.refactorize(A)
    assert_solution(A, F.solve(b), b, np.float64)


def test_refactorize_spd_to_indefinite_falls_back_with_auto():
    A = laplacian((4, 4))
    A2 = sp.csc_array(A, copy=True)
    A2.setdiag(A2.diagonal() - 3.5)  # same pattern, eigenvalues of both signs
    b = np.ones(16)
    F = pastixpy.factorize(A)
    assert F.kind == "llt"
    F.refactorize(A2)
    assert F.kind == "ldlt"
    assert_solution(A2, F.solve(b), b, np.float64)
    G = pastixpy.factorize(A, kind="llt")
    with pytest.raises(pastixpy.NotPositiveDefiniteError, match="not positive definite"):
        G.refactorize(A2)
    # The old factors were freed first: no stale answer for A, a clear error instead ...
    for call in (lambda: G.solve(b), G.slogdet, G.inertia):
        with pytest.raises(pastixpy.PastixError, match="last refactorize.. failed"):
            call()
    # ... until a refactorize succeeds.
    G.refactorize(A)
    assert_solution(A, G.solve(b), b, np.float64)


def test_refactorize_holds_one_factor_at_a_time():
    # numpy's allocations are traced: the peak of a refactorization is one factor
    # (and its small work arrays), not the old factor plus the new one.
    import tracemalloc

    A = laplacian((16, 16, 16))
    A2 = _new_values(A, 3)
    tracemalloc.start()
    try:
        F = pastixpy.factorize(A, threads=1)
        held, _ = tracemalloc.get_traced_memory()  # the factor and what F keeps
        tracemalloc.reset_peak()
        F.refactorize(A2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    factor = F.stats["factor_bytes"]
    # Above the factor: the assembly's copies of A's values and the pivots' arrays.
    assert peak - held < 0.5 * factor, (peak - held, factor)


def test_refactorize_pattern_mismatch():
    A = laplacian((4, 4))
    F = pastixpy.factorize(A)
    B = A.tolil()
    B[0, 5] = B[5, 0] = -0.1
    with pytest.raises(pastixpy.PatternMismatchError, match="does not have the sparsity pattern"):
        F.refactorize(B.tocsc())
    # A dropped explicit zero is a pattern change too ...
    Z = sp.csc_array(A, copy=True)
    Z.data[1] = 0.0
    Z.eliminate_zeros()
    with pytest.raises(pastixpy.PatternMismatchError, match="does not have the sparsity pattern"):
        F.refactorize(Z)
    with pytest.raises(pastixpy.PatternMismatchError, match="does not have the sparsity pattern"):
        F.refactorize(laplacian((5, 5)))
    # A PatternMismatchError is an InvalidInputError.
    assert issubclass(pastixpy.PatternMismatchError, pastixpy.InvalidInputError)


def _with_stored_zeros(A, pairs):
    """A copy of A whose entries at ``pairs`` (and their transposes) are stored zeros."""
    Z = sp.csc_array(A, copy=True)
    Z.sort_indices()
    Z.data = Z.data.copy()
    for i, j in pairs:
        for r, c in ((i, j), (j, i)):
            k = Z.indptr[c] + np.flatnonzero(Z.indices[Z.indptr[c] : Z.indptr[c + 1]] == r)
            assert k.size == 1
            Z.data[k] = 0.0
    return Z


@pytest.mark.parametrize("direction", ["values-to-zeros", "zeros-to-values"])
@pytest.mark.parametrize("kind", ["llt", "ldlt", "lu"])
def test_refactorize_with_stored_zeros(kind, direction):
    # The pattern is the stored entries: a stored zero keeps it, in either direction.
    A = _new_values(laplacian((3, 3)), 5)
    Z = _with_stored_zeros(A, [(0, 1), (4, 7)])
    assert Z.nnz == A.nnz and Z.count_nonzero() == A.nnz - 4
    first, second = (A, Z) if direction == "values-to-zeros" else (Z, A)
    b = np.random.default_rng(0).standard_normal(9)
    F = pastixpy.factorize(first, kind=kind, refine="none")
    F.refactorize(second)
    x = F.solve(b)
    np.testing.assert_allclose(x, np.linalg.solve(second.toarray(), b), rtol=1e-12)
    assert F.stats["backward_error"] <= 1e-14


def test_refactorize_dtype_and_symmetry_checks():
    A = laplacian((4, 4))
    F = pastixpy.factorize(A)
    with pytest.raises(pastixpy.InvalidInputError, match="has dtype complex128"):
        F.refactorize(A.astype(np.complex128))
    F.refactorize(A.astype(np.float32))  # promoted to the factorization's dtype
    assert F.dtype == np.float64
    U = sp.csc_array(A, copy=True)
    U.data = U.data.copy()
    U.data[np.flatnonzero(U.indices == 0)[-1]] = -0.7  # one upper entry changed: unsymmetric
    # A symmetric kind on a matrix that is not: one triangle, with a warning.
    with pytest.warns(pastixpy.PastixWarning, match="refactorize: kind='llt' on a matrix that"):
        F.refactorize(U)


@pytest.mark.parametrize("case", ["llt", "ldlt", "ldlh", "lu-matched", "lu-complex-matched"])
def test_analysis_reuse(case):
    builder, kind = REFACTOR_CASES[case]
    A = builder()
    A2 = _new_values(A, 3)
    n = A.shape[0]
    b = random_vector(np.random.default_rng(4), n, np.iscomplexobj(A.data))
    F = pastixpy.factorize(A)
    # The analysis of a factorization serves another matrix of the same pattern ...
    G = pastixpy.factorize(A2, analysis=F.analysis)
    assert G.analysis is F.analysis
    assert G.kind == kind
    assert_solution(A2, G.solve(b), b, np.float64)
    # ... and the matrix it was made for.
    assert_solution(A, pastixpy.factorize(A, analysis=F.analysis).solve(b), b, np.float64)


def test_analysis_from_analyze_is_reused():
    A = laplacian((6, 6))
    an = pastixpy.analyze(A, ordering="amd")
    F = pastixpy.factorize(2 * A, analysis=an)
    assert F.analysis is an
    np.testing.assert_array_equal(F.perm, an.perm)
    b = np.ones(36)
    assert_solution(2 * A, F.solve(b), b, np.float64)
    C = convection_diffusion3d(3)
    an = pastixpy.analyze(C)
    assert_solution(C, pastixpy.factorize(C, analysis=an).solve(b[:27]), b[:27], np.float64)


def test_analysis_of_another_pattern_is_refused():
    an = pastixpy.analyze(laplacian((5, 6)))
    with pytest.raises(pastixpy.PatternMismatchError, match="analysis was made for another"):
        pastixpy.factorize(laplacian((6, 5)), analysis=an)
    with pytest.raises(pastixpy.PatternMismatchError, match="analysis was made for another"):
        pastixpy.factorize(laplacian((4, 4)), analysis=an)


# ---------------------------------------------------------------------------- inertia


@pytest.mark.parametrize(
    "builder",
    [
        lambda: saddle_point((3, 4)),
        lambda: saddle_point((2, 2, 2)),
        lambda: kkt(20, 8, 1),
        lambda: kkt(15, 14, 2),
        lambda: dominant_symmetric(30, 3, signs="mixed"),
        lambda: kkt(18, 7, 4, complex_=True),
        lambda: dominant_symmetric(30, 5, complex_=True, signs="mixed"),
        lambda: -laplacian((3, 3)),
        lambda: laplacian((3, 4)),
        lambda: elasticity3d((2, 1, 1)),
    ],
    ids=[
        "saddle2d",
        "saddle3d",
        "kkt",
        "kkt-square-ish",
        "dominant-indefinite",
        "hermitian-kkt",
        "hermitian-indefinite",
        "negative-definite",
        "spd",
        "elasticity",
    ],
)
def test_inertia_matches_eigenvalues(builder):
    A = builder()
    ref = eig_inertia(A)
    F = pastixpy.factorize(A)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pastixpy.PastixWarning)
        assert F.inertia() == ref
    kinds = ["ldlh"] if np.iscomplexobj(A.data) else ["ldlt", "ldlh"]
    if ref[1] == 0:
        kinds.append("llt")
    for kind in kinds:
        assert pastixpy.factorize(A, kind=kind).inertia() == ref


def test_inertia_of_gallery_saddle_point_is_known():
    for shape in [(4, 3), (3, 3, 2)]:
        A = saddle_point(shape)
        N = int(np.prod(shape))
        assert pastixpy.factorize(A).inertia() == (len(shape) * N, N, 0)


def test_inertia_single_precision():
    A = saddle_point((3, 3), dtype=np.float32)
    assert pastixpy.factorize(A).inertia() == eig_inertia(A.astype(np.float64))


def test_inertia_refused_for_lu_and_complex_symmetric():
    with pytest.raises(pastixpy.PastixError, match="inertia is defined for real symmetric"):
        pastixpy.factorize(convection_diffusion3d(3)).inertia()
    with pytest.raises(pastixpy.PastixError, match="not kind 'lu'"):
        pastixpy.factorize(laplacian((3, 3)), kind="lu").inertia()
    with pytest.raises(pastixpy.PastixError, match="inertia is defined for real symmetric"):
        pastixpy.factorize(helmholtz2d(4)).inertia()


def test_inertia_with_perturbed_pivots_warns():
    # Exactly singular: a stored zero on the diagonal of an otherwise SPD block diagonal.
    A = sp.csc_array(sp.block_diag([laplacian((4,)), sp.csc_array([[1.0]])], format="csc"))
    A.data[A.indptr[4]] = 0.0
    with pytest.warns(pastixpy.PastixWarning, match="perturbed"):
        F = pastixpy.factorize(A, kind="ldlt", refine="none")
    with pytest.warns(pastixpy.PastixWarning, match="inertia counts perturbed pivots as zero"):
        assert F.inertia() == (4, 0, 1)


# ---------------------------------------------------------------------------- determinants


def _slogdet_cases():
    return {
        "llt": (lambda: laplacian((3, 4)), "llt"),
        "llt-elasticity": (lambda: 10 * elasticity3d((2, 1, 1)), "llt"),
        "llt-complex": (lambda: dominant_symmetric(20, 1, complex_=True), "llt"),
        "ldlt-saddle": (lambda: saddle_point((3, 3)), "ldlt"),
        "ldlt-kkt": (lambda: kkt(15, 6, 2), "ldlt"),
        "ldlt-negative-det": (lambda: dominant_symmetric(21, 3, signs="mixed"), "ldlt"),
        "ldlt-complex-symmetric": (lambda: helmholtz2d(4), "ldlt"),
        "ldlt-complex-kkt": (lambda: kkt(14, 5, 4, complex_=True, hermitian=False), "ldlt"),
        "ldlh": (lambda: dominant_symmetric(20, 5, complex_=True, signs="mixed"), "ldlh"),
        "ldlh-kkt": (lambda: kkt(14, 5, 6, complex_=True), "ldlh"),
        "lu": (lambda: convection_diffusion3d(3, peclet=30.0), "lu"),
        "lu-matched": (lambda: unsymmetric_zero_diagonal(25, 7), "lu"),
        "lu-matched-complex": (lambda: unsymmetric_zero_diagonal(25, 8, complex_=True), "lu"),
        "lu-odd-row-swap": (lambda: row_swapped(laplacian((3, 3))), "lu"),
        "lu-odd-row-swap-complex": (
            lambda: row_swapped(dominant_symmetric(15, 9, complex_=True), 3, 11),
            "lu",
        ),
        "lu-odd-row-swap-indefinite": (
            lambda: row_swapped(convection_diffusion3d(2) - 2 * sp.eye_array(8), 0, 5),
            "lu",
        ),
    }


@pytest.mark.parametrize("case", sorted(_slogdet_cases()))
def test_slogdet_matches_numpy(case):
    builder, kind = _slogdet_cases()[case]
    A = sp.csc_array(builder())
    F = pastixpy.factorize(A)
    assert F.kind == kind
    sign, logabs = F.slogdet()
    ref_sign, ref_logabs = np.linalg.slogdet(A.toarray())
    assert logabs == pytest.approx(ref_logabs, rel=1e-10, abs=1e-9)
    assert abs(sign - ref_sign) < 1e-9, (sign, ref_sign)
    assert isinstance(logabs, float)
    assert isinstance(sign, complex if np.iscomplexobj(A.data) else float)
    if case.startswith("lu-odd"):
        # The pipeline's matching undoes the row swap: its parity must flip the sign.
        G = pastixpy.factorize(A, matching="on")
        assert G.stats["matching"] and G.slogdet()[0] == pytest.approx(sign)
    # Every admissible kind gives the same determinant.
    others = {"llt": [], "ldlt": ["lu"], "ldlh": ["lu"], "lu": []}[kind]
    if kind == "llt":
        others = ["ldlh", "lu"] if np.iscomplexobj(A.data) else ["ldlt", "ldlh", "lu"]
    for other in others:
        s2, l2 = pastixpy.factorize(A, kind=other).slogdet()
        assert l2 == pytest.approx(ref_logabs, rel=1e-10, abs=1e-9)
        assert abs(s2 - ref_sign) < 1e-9, (other, s2, ref_sign)


def test_slogdet_matching_sign_is_exercised():
    # A diagonal matrix with two rows swapped: det = -prod(d); only the matching can recover it.
    d = np.arange(1.0, 7.0)
    A = row_swapped(sp.diags_array(d), 1, 4)
    F = pastixpy.factorize(A, matching="on")  # the pipeline's matching, not the small path
    assert F.stats["matching"]
    sign, logabs = F.slogdet()
    assert sign == -1.0
    assert logabs == pytest.approx(np.log(np.prod(d)), rel=1e-14)
    # Three swaps of a cycle: even.
    p = np.array([1, 2, 0, 3, 4, 5])
    B = sp.csc_array(sp.csr_array(sp.diags_array(d))[p])
    assert pastixpy.factorize(B).slogdet()[0] == 1.0


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_slogdet_single_precision(dtype):
    A = (helmholtz2d(4) if np.dtype(dtype).kind == "c" else saddle_point((3, 3))).astype(dtype)
    sign, logabs = pastixpy.factorize(A).slogdet()
    ref_sign, ref_logabs = np.linalg.slogdet(A.toarray().astype(np.complex128))
    assert logabs == pytest.approx(ref_logabs, rel=1e-5, abs=1e-4)
    assert abs(sign - ref_sign) < 1e-4


def test_logdet():
    A = laplacian((4, 5))
    ref = np.linalg.slogdet(A.toarray())[1]
    assert pastixpy.factorize(A).logdet() == pytest.approx(ref, rel=1e-12)
    assert pastixpy.factorize(A, kind="ldlt").logdet() == pytest.approx(ref, rel=1e-12)
    H = dominant_symmetric(20, 3, complex_=True)
    logdet = pastixpy.factorize(H).logdet()
    assert isinstance(logdet, float)
    assert logdet == pytest.approx(np.linalg.slogdet(H.toarray())[1], rel=1e-12)
    assert pastixpy.factorize(H, kind="ldlh").logdet() == pytest.approx(logdet, rel=1e-12)


@pytest.mark.parametrize(
    "builder",
    [lambda: saddle_point((3, 3)), lambda: -laplacian((2, 2)), lambda: helmholtz2d(3)],
    ids=["indefinite", "negative-definite-positive-det", "complex-symmetric"],
)
def test_logdet_refuses_non_positive_definite(builder):
    F = pastixpy.factorize(builder())
    with pytest.raises(pastixpy.PastixError, match=r"logdet\(\) needs a symmetric/Hermitian"):
        F.logdet()


# ---------------------------------------------------------------------------- linear operator


@pytest.mark.parametrize(
    "builder",
    [
        lambda: laplacian((4, 4)),
        lambda: saddle_point((3, 3)),
        lambda: unsymmetric_zero_diagonal(20, 3),
        lambda: unsymmetric_zero_diagonal(20, 4, complex_=True),
        lambda: dominant_symmetric(20, 5, complex_=True, signs="mixed"),
        lambda: helmholtz2d(4),
    ],
    ids=["llt", "ldlt", "lu", "lu-complex", "ldlh", "ldlt-complex"],
)
def test_aslinearoperator(builder):
    A = builder()
    n = A.shape[0]
    Ainv = np.linalg.inv(A.toarray())
    Lop = pastixpy.factorize(A).aslinearoperator()
    assert isinstance(Lop, sla.LinearOperator)
    assert Lop.shape == (n, n)
    assert Lop.dtype == A.dtype
    rng = np.random.default_rng(0)
    complex_ = np.iscomplexobj(A.data)
    v = random_vector(rng, n, complex_)
    V = random_vector(rng, (n, 3), complex_)
    tol = dict(rtol=1e-10, atol=1e-12 * np.abs(Ainv).max() * n)
    np.testing.assert_allclose(Lop.matvec(v), Ainv @ v, **tol)
    np.testing.assert_allclose(Lop @ v, Ainv @ v, **tol)
    np.testing.assert_allclose(Lop.rmatvec(v), Ainv.conj().T @ v, **tol)
    np.testing.assert_allclose(Lop.H @ v, Ainv.conj().T @ v, **tol)
    np.testing.assert_allclose(Lop.matmat(V), Ainv @ V, **tol)
    np.testing.assert_allclose(Lop @ V, Ainv @ V, **tol)
    # As a preconditioner: GMRES converges at once.
    b = np.ones(n)
    x, info = sla.gmres(sp.csc_array(A), b, M=Lop, rtol=1e-12, atol=0.0, maxiter=3)
    assert info == 0
    np.testing.assert_allclose(x, Ainv @ b, rtol=1e-9, atol=1e-10 * np.abs(Ainv @ b).max())


# ---------------------------------------------------------------------------- stats


def test_stats_are_present_and_sensible():
    A = laplacian((8, 8))
    F = pastixpy.factorize(A, scaling="off")  # the pipeline's statistics (no small path)
    s = F.stats
    for key in (
        "kind",
        "seconds",
        "factor_entries",
        "factor_bytes",
        "perturbed_pivots",
        "pivot_tol",
        "matching",
        "scaling",
        "refinement_steps",
        "backward_error",
        "n",
        "nnz_L",
        "nnz_L_stored",
        "flops",
    ):
        assert key in s, key
    assert s["kind"] == "llt"
    assert s["n"] == 64
    assert s["factor_entries"] >= s["nnz_L"]
    assert s["factor_entries"] <= 2 * s["nnz_L_stored"]
    assert s["factor_bytes"] == 8 * s["factor_entries"]
    assert s["perturbed_pivots"] == 0
    assert s["pivot_tol"] > 0
    assert s["backward_error"] is None  # no solve yet
    for phase in ("check", "preprocess", "analysis", "factorize"):
        assert 0 <= s["seconds"][phase] < 60, phase
    F.solve(np.ones(64))
    assert "solve" not in s["seconds"]  # F.stats is a copy, made when read
    assert 0 <= F.stats["seconds"]["solve"] < 60
    assert isinstance(F.stats["refinement_steps"], int) and F.stats["refinement_steps"] >= 0
    assert 0 <= F.stats["backward_error"] <= 1e-12
    assert "kind=llt" in repr(F) and "64x64" in repr(F)


def test_stats_of_lu_and_refinement():
    A = unsymmetric_zero_diagonal(40, 9)
    F = pastixpy.factorize(A, kind="lu", refine="ir", matching="on", scaling="on")
    s = F.stats
    assert s["kind"] == "lu"
    assert s["matching"] is True and s["scaling"] is True
    assert s["factor_bytes"] == 8 * s["factor_entries"]
    b = np.ones(40)
    x = F.solve(b)
    s = F.stats
    assert isinstance(s["refinement_steps"], int) and s["refinement_steps"] >= 0
    assert s["backward_error"] == pytest.approx(backward_error(A, x, b).max(), rel=0.5, abs=1e-17)
    G = pastixpy.factorize(A, matching="off", scaling="off")
    assert G.stats["matching"] is False and G.stats["scaling"] is False
    Z = pastixpy.factorize(saddle_point((3, 3)))
    assert Z.stats["pairs"] > 0
    assert Z.stats["factor_entries"] >= Z.stats["nnz_L"]


def test_refinement_leaves_solved_columns_alone():
    # An inexact solve (A⁻¹ in single precision: backward error ~1e-7) makes iterative
    # refinement work; a zero right-hand side, solved exactly from the start, leaves
    # the active set, and the other columns are refined on their own.
    from pastixpy.refine import Operator, refine

    rng = np.random.default_rng(15)
    A = sp.csc_array(sp.random_array((30, 30), density=0.2, rng=rng) + 10 * sp.eye_array(30))
    dense = A.toarray()
    inv32 = np.linalg.inv(dense.astype(np.float32))

    def solve(R):
        return (inv32 @ R.astype(np.float32)).astype(np.float64)

    B = rng.standard_normal((30, 3))
    B[:, 1] = 0.0
    norm_a = float(abs(A).sum(axis=1).max())
    op = Operator(lambda X: A @ X)
    x, berr, steps, used = refine(op, solve, B, solve(B), norm_a, 1e-14, krylov=None)
    assert used == "ir"
    assert steps >= 2
    assert np.all(x[:, 1] == 0.0) and berr[1] == 0.0
    assert berr.max() <= 1e-14
    np.testing.assert_allclose(x, np.linalg.solve(dense, B), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("k", [1, 3])
def test_unrefined_solves_through_matching_and_scaling(complex_, k):
    # The row matching and both scalings enter on one side of the solve and leave on
    # the other, swapped for the transposed ops; refinement off, so that nothing
    # hides a wrong side: the plain triangular solves must match dense LAPACK's.
    A = unsymmetric_zero_diagonal(40, 11, complex_=complex_)
    F = pastixpy.factorize(A, kind="lu", refine="none", matching="on", scaling="on")
    assert F.stats["matching"] and F.stats["scaling"]
    rng = np.random.default_rng(12)
    b = random_vector(rng, (40, k), complex_)
    dense = A.toarray()
    for trans, op in (("N", dense), ("T", dense.T), ("H", dense.conj().T)):
        x = F.solve(b, trans=trans)
        np.testing.assert_allclose(x, np.linalg.solve(op, b), rtol=1e-9, atol=1e-12)
        assert backward_error(op, x, b).max() <= 1e-13


@pytest.mark.parametrize(
    "kind, builder",
    [
        ("llt", lambda: laplacian((6, 5))),
        ("llt", lambda: dominant_symmetric(30, 71, complex_=True)),
        ("ldlt", lambda: helmholtz2d(5)),
        ("ldlh", lambda: dominant_symmetric(30, 72, complex_=True, signs="mixed")),
        ("lu", lambda: convection_diffusion3d(3) + 0.5j * sp.eye_array(27)),
    ],
)
@pytest.mark.parametrize("trans", ["N", "T", "H"])
def test_stats_backward_error_is_that_of_the_solved_system(kind, builder, trans):
    # The figure comes from op(A)'s rows (A's columns, conjugated or not) where the
    # kind gives them: a wrong operator would report an error of order one.
    A = sp.csc_array(builder())
    F = pastixpy.factorize(A, kind=kind, refine="none")
    rng = np.random.default_rng(5)
    b = random_vector(rng, (A.shape[0], 2), np.iscomplexobj(A.data))
    x = F.solve(b, trans=trans)
    op = {"N": A, "T": A.T, "H": A.conj().T}[trans]
    expect = backward_error(op, x, b).max()
    assert expect <= 1e-13
    assert F.stats["backward_error"] == pytest.approx(expect, rel=0.5, abs=1e-16)


def test_stats_count_perturbed_pivots():
    A = sp.csc_array(np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]]))
    with pytest.warns(pastixpy.PastixWarning, match="perturbed"):
        F = pastixpy.factorize(A, kind="lu", matching="off", scaling="off")
        x = F.solve(np.array([1.0, 1.0, 1.0]))
    assert F.stats["perturbed_pivots"] == 1
    assert backward_error(A, x, np.array([1.0, 1.0, 1.0])).max() <= 1e-12


def test_progress_and_threads():
    seen = []
    pastixpy.factorize(laplacian((10, 10)), progress=seen.append)
    assert seen and seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    pytest.importorskip("threadpoolctl")
    F = pastixpy.factorize(laplacian((10, 10)), threads=1)
    assert_solution(laplacian((10, 10)), F.solve(np.ones(100)), np.ones(100), np.float64)


def test_dense_and_integer_input():
    with pytest.warns(sp.SparseEfficiencyWarning, match="dense"):
        F = pastixpy.factorize(np.array([[4, 1], [1, 3]]))
    assert F.dtype == np.float64
    np.testing.assert_allclose(F.solve([1, 2]), np.linalg.solve([[4, 1], [1, 3]], [1, 2]))


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize("ordering", ["metis", "amd", "rcm", "natural", "random", "reversed"])
def test_not_positive_definite_column_in_original_numbering(ordering):
    d = np.arange(1.0, 13.0)
    d[6] = -3.0
    A = sp.csc_array(sp.diags_array(d))
    # Removing column 9 of this Laplacian leaves it SPD: 9's pivot fails in any order.
    L = laplacian((4, 4)).tolil()
    L[9, 9] = -10.0
    for M, col in ((A, 6), (L.tocsc(), 9)):
        n = M.shape[0]
        o = {
            "random": np.random.default_rng(n).permutation(n),
            "reversed": np.arange(n)[::-1].copy(),
        }.get(ordering, ordering)
        with pytest.raises(
            pastixpy.NotPositiveDefiniteError, match=f"pivot of column {col} is not positive"
        ) as info:
            pastixpy.factorize(M, kind="llt", ordering=o)
        assert info.value.column == col
    # Complex Hermitian too.
    H = sp.csc_array(
        sp.diags_array([0.1j * np.ones(11), d, -0.1j * np.ones(11)], offsets=[1, 0, -1])
    )
    o = {"random": np.random.default_rng(1).permutation(12), "reversed": np.arange(12)[::-1].copy()}
    with pytest.raises(pastixpy.NotPositiveDefiniteError, match="column 6") as info:
        pastixpy.factorize(H, kind="llt", ordering=o.get(ordering, ordering))
    assert info.value.column == 6


def test_not_positive_definite_is_not_raised_with_auto():
    A = saddle_point((3, 3))
    with pytest.raises(pastixpy.NotPositiveDefiniteError, match="use kind='ldlt'"):
        pastixpy.factorize(A, kind="llt")
    assert pastixpy.factorize(A).kind == "ldlt"


def _without(A, j):
    """A with row and column j emptied (stored entries removed)."""
    A = sp.coo_array(A)
    keep = (A.row != j) & (A.col != j)
    return sp.csc_array((A.data[keep], (A.row[keep], A.col[keep])), shape=A.shape)


def test_structurally_singular():
    A = _without(laplacian((3, 3)), 4)
    with pytest.raises(pastixpy.SingularMatrixError, match="structurally singular") as info:
        pastixpy.factorize(A)
    assert info.value.columns == [4]
    assert "column(s) 4" in str(info.value)
    # An empty column alone (its row still has entries).
    B = sp.csc_array(laplacian((3, 3)), copy=True).tolil()
    B[:, 7] = 0.0
    B = sp.csc_array(B)
    B.eliminate_zeros()
    with pytest.raises(pastixpy.SingularMatrixError, match=r"structural rank 8 < 9") as info:
        pastixpy.factorize(B, kind="lu")
    assert info.value.columns == [7]
    # Through spsolve, as scipy's: a MatrixRankWarning saying why, and NaNs.
    with pytest.warns(sla.MatrixRankWarning, match="structurally singular"):
        assert np.isnan(pastixpy.spsolve(A, np.ones(9))).all()


def _singular_block_diagonal():
    """An explicit zero on the diagonal, column 6, of an otherwise SPD block-diagonal matrix."""
    A = sp.csc_array(
        sp.block_diag([laplacian((2, 3)), sp.csc_array([[1.0]]), laplacian((4,))], format="csc")
    )
    A.data[A.indptr[6]] = 0.0
    return A


@pytest.mark.parametrize("kind", ["auto", "ldlt", "lu"])
@pytest.mark.parametrize("ordering", ["metis", "natural", "reversed"])
def test_numerically_singular_names_the_column(kind, ordering):
    A = _singular_block_diagonal()
    n = A.shape[0]
    o = np.arange(n)[::-1].copy() if ordering == "reversed" else ordering
    F = pastixpy.factorize(A, kind=kind, ordering=o, refine="ir")
    assert F.stats["perturbed_pivots"] == 1
    with pytest.raises(pastixpy.SingularMatrixError, match="numerically singular") as info:
        F.solve(np.ones(n))
    assert info.value.columns == [6]
    assert "column(s) 6" in str(info.value)


@pytest.mark.parametrize("kind", ["auto", "ldlt", "lu"])
@pytest.mark.parametrize("ordering", ["metis", "natural", "reversed"])
def test_singular_is_never_silent(kind, ordering):
    # With the default refinement an inconsistent singular system either raises or warns.
    A = _singular_block_diagonal()
    n = A.shape[0]
    o = np.arange(n)[::-1].copy() if ordering == "reversed" else ordering
    F = pastixpy.factorize(A, kind=kind, ordering=o)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            x = F.solve(np.ones(n))
        except pastixpy.SingularMatrixError as exc:
            assert exc.columns == [6]
            return
    assert np.isfinite(x).all()
    assert backward_error(A, x, np.ones(n)).max() <= 1e-12
    assert any(
        issubclass(w.category, pastixpy.PastixWarning) and "column(s) 6" in str(w.message)
        for w in caught
    )


def test_rank_deficient_where_refinement_cannot_reach_tol():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((8, 8))
    M[:, 3] = M[:, 1] + M[:, 2]
    A = sp.csc_array(M)
    b = np.ones(8)
    F = pastixpy.factorize(A, refine="ir")
    assert F.stats["perturbed_pivots"] >= 1
    with pytest.raises(pastixpy.SingularMatrixError, match=r"backward error of .* not 1e-12") as e:
        F.solve(b)
    assert len(e.value.columns) >= 1
    assert all(0 <= c < 8 for c in e.value.columns)
    # Rank-deficient symmetric, solved with LDLᵀ.
    S = sp.csc_array(M @ M.T)
    with pytest.raises(pastixpy.SingularMatrixError, match="numerically singular"):
        pastixpy.factorize(S, kind="ldlt", refine="ir").solve(b)


@pytest.mark.parametrize(
    "b, exc, message",
    [
        (np.ones(8), pastixpy.InvalidInputError, r"b has shape \(8,\); expected \(9,\)"),
        (np.ones((9, 2, 1)), pastixpy.InvalidInputError, r"b has shape \(9, 2, 1\)"),
        (np.ones((3, 3)), pastixpy.InvalidInputError, r"b has shape \(3, 3\)"),
        (np.float64(1.0), pastixpy.InvalidInputError, r"b has shape \(\)"),
        (
            np.r_[np.ones(8), np.nan],
            pastixpy.InvalidInputError,
            r"NaN or Inf value at index \(8,\)",
        ),
        (np.r_[np.inf, np.ones(8)], pastixpy.InvalidInputError, "NaN or Inf"),
        (np.array(["a"] * 9), pastixpy.InvalidInputError, "b has dtype <U1; it must be numeric"),
        (np.array([object()] * 9), pastixpy.InvalidInputError, "it must be numeric"),
    ],
    ids=["short", "3d", "wrong-rows", "scalar", "nan", "inf", "strings", "objects"],
)
def test_bad_rhs(b, exc, message):
    F = pastixpy.factorize(laplacian((3, 3)))
    with pytest.raises(exc, match=message):
        F.solve(b)
    with pytest.raises(exc, match=message):
        pastixpy.spsolve(laplacian((3, 3)), b)


def test_bad_trans():
    F = pastixpy.factorize(laplacian((3, 3)))
    with pytest.raises(pastixpy.InvalidInputError, match="trans must be 'N', 'T' or 'H', got 'X'"):
        F.solve(np.ones(9), trans="X")


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_matrix(bad):
    A = laplacian((3, 3)).tolil()
    A[2, 3] = bad
    with pytest.raises(pastixpy.InvalidInputError, match="NaN or Inf value at row 2, column 3"):
        pastixpy.factorize(A.tocsc())
    with pytest.raises(pastixpy.InvalidInputError, match="NaN or Inf value at row 2, column 3"):
        pastixpy.spsolve(A.tocsc(), np.ones(9))
    F = pastixpy.factorize(laplacian((3, 3)))
    with pytest.raises(pastixpy.InvalidInputError, match="NaN or Inf value at row 2, column 3"):
        F.refactorize(A.tocsc())


def test_bad_matrices():
    with pytest.raises(pastixpy.InvalidInputError, match=r"must be square, got shape \(3, 4\)"):
        pastixpy.factorize(sp.csc_array(np.ones((3, 4))))
    with pytest.raises(pastixpy.InvalidInputError, match=r"empty \(0x0\)"):
        pastixpy.factorize(sp.csc_array((0, 0)))
    with pytest.raises(pastixpy.InvalidInputError, match=r"empty \(0x0\)"):
        pastixpy.spsolve(sp.csc_array((0, 0)), np.ones(0))
    with pytest.raises(pastixpy.InvalidInputError, match="must be 2-D"):
        pastixpy.factorize(np.ones(3))


@pytest.mark.parametrize(
    "A, kind, message",
    [
        (convection_diffusion3d(3), "llt", "kind='llt' on a matrix that is not symmetric"),
        (convection_diffusion3d(3), "ldlt", "kind='ldlt' on a matrix that is not symmetric"),
        (convection_diffusion3d(3), "ldlh", "kind='ldlh' on a matrix that is not symmetric"),
        (helmholtz2d(3), "llt", "kind='llt' on a matrix that is not Hermitian"),
        (helmholtz2d(3), "ldlh", "kind='ldlh' on a matrix that is not Hermitian"),
        (dominant_symmetric(9, 1, complex_=True), "ldlt", "not symmetric (it is hermitian)"),
        (unsymmetric_zero_diagonal(9, 2, complex_=True), "ldlh", "not Hermitian"),
    ],
    ids=["llt-unsym", "ldlt-unsym", "ldlh-unsym", "llt-csym", "ldlh-csym", "ldlt-herm", "ldlh-c"],
)
def test_kind_forced_on_a_matrix_it_does_not_fit_warns(A, kind, message):
    """A symmetric kind forced on a matrix that is not symmetric (Hermitian) as it asks
    is accepted, as CHOLMOD and MUMPS accept it: the matrix its lower triangle defines is
    factored, with a warning naming what A is."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pastixpy.PastixWarning)
        try:
            pastixpy.factorize(A, kind=kind, refine="none")
        except pastixpy.NotPositiveDefiniteError:
            pass  # a triangle's matrix need not be positive definite
    assert any(message in str(w.message) for w in caught), [str(w.message) for w in caught]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"kind": "foo"}, "unknown kind 'foo'"),
        ({"refine": "foo"}, "unknown refine 'foo'"),
        ({"refine": ("ir", {"bogus": 1})}, r"refine 'ir' got unknown parameter\(s\) \['bogus'\]"),
        ({"refine": ("none", {"tol": 1e-3})}, r"unknown parameter\(s\) \['tol'\]"),
        ({"refine": ("ir",)}, "is not understood"),
        ({"matching": "sometimes"}, "unknown matching 'sometimes'"),
        ({"scaling": "yes"}, "unknown scaling 'yes'"),
        ({"ordering": "scotch"}, "unknown ordering 'scotch'"),
    ],
)
def test_unknown_options(options, message):
    with pytest.raises(pastixpy.OptionError, match=message):
        pastixpy.factorize(laplacian((3, 3)), **options)


@pytest.mark.parametrize("pivot_tol", [0, 0.0, -1.0, float("nan")])
def test_pivot_tol_must_be_positive(pivot_tol):
    with pytest.raises(pastixpy.InvalidInputError, match="pivot_tol must be positive"):
        pastixpy.factorize(laplacian((3, 3)), pivot_tol=pivot_tol)


def test_pivot_tol_is_used():
    # A pivot of 1e-6 is kept under the default threshold and perturbed under a larger one.
    A = sp.csc_array(sp.diags_array([1.0, 1e-6, 1.0]))
    F = pastixpy.factorize(A, kind="lu", matching="off", scaling="off")
    assert F.stats["perturbed_pivots"] == 0
    with pytest.warns(pastixpy.PastixWarning, match=r"smaller than 1.00e-03 were perturbed"):
        G = pastixpy.factorize(A, kind="lu", pivot_tol=1e-3, matching="off", scaling="off")
        x = G.solve(np.ones(3))
    assert G.stats["pivot_tol"] == 1e-3
    assert G.stats["perturbed_pivots"] == 1
    np.testing.assert_allclose(x, [1.0, 1e6, 1.0], rtol=1e-10)


def test_perturbed_pivots_warn_and_still_solve():
    A = sp.csc_array(np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]]))
    b = np.array([2.0, 2.0, 1.0])  # consistent: in the range of A
    F = pastixpy.factorize(A, kind="lu")
    with pytest.warns(pastixpy.PastixWarning, match=r"1 pivot\(s\) smaller than .* perturbed"):
        x = F.solve(b)
    assert backward_error(A, x, b).max() <= 1e-12
    with pytest.warns(pastixpy.PastixWarning, match="slogdet is that of the matrix with perturbed"):
        F.slogdet()
    with pytest.warns(pastixpy.PastixWarning, match="perturbed"):
        pastixpy.factorize(A, kind="lu", refine="none")


# ---------------------------------------------------------------------------- why a solve failed


def test_a_tolerance_below_the_precision_is_named_as_such():
    A = laplacian((10, 10))
    # Refused before any work; and, should a solve still end at the precision's own
    # limit (a tolerance met by neither the factors nor refinement), its message says so.
    with pytest.raises(pastixpy.OptionError, match="tol=1e-30 is below what float64"):
        pastixpy.factorize(A, refine=("ir", {"tol": 1e-30}))
    import dataclasses

    F = pastixpy.factorize(A, refine="ir")
    F._solver = dataclasses.replace(F._solver, refine=("ir", {"tol": 1e-30}))
    with pytest.raises(pastixpy.SingularMatrixError, match="the limit of float64") as e:
        F.solve(np.ones(100))
    assert "tol=1e-30 asks for less" in str(e.value) and "ill-conditioned" not in str(e.value)


@pytest.mark.parametrize(
    "scale, diagnosis",
    [
        (3.0, r"although the matrix is not ill-conditioned \(condition number about"),
        (1e20, r"too ill-conditioned for this precision \(condition number about"),
    ],
)
def test_the_failure_message_follows_the_condition_number(scale, diagnosis):
    """Factors of A used for ``scale`` A, so that refinement diverges (its error map is
    1 - scale): the diagnosis must follow the condition number estimate, never call a
    well-conditioned matrix ill-conditioned."""
    import dataclasses

    from pastixpy.matrix import canonical_csc

    A = laplacian((8, 8))
    F = pastixpy.factorize(A, refine="ir")
    C = canonical_csc(scale * A)
    F._solver = dataclasses.replace(F._solver, C=C, norm_a=scale * F._solver.norm_a)
    with pytest.raises(pastixpy.SingularMatrixError, match=diagnosis) as e:
        F.solve(np.ones(64))
    estimate = float(str(e.value).split("condition number about ")[1].split(")")[0].split(",")[0])
    # ‖C‖₁ ‖M⁻¹‖₁, M the matrix factored: scale times κ₁(A) here.
    cond = scale * np.linalg.cond(A.toarray(), 1)
    assert cond / 3 <= estimate <= 3 * cond


# ---------------------------------------------------------------------------- kinds of complex
# matrices whose values are real, inertia with perturbed pivots, badly scaled matrices


@pytest.mark.parametrize("kind", ["llt", "ldlt", "ldlh", "lu", "auto"])
@pytest.mark.parametrize(
    "dense",
    [[[2, 1], [1, 3]], [[2]], [[-2, 1, 0], [1, 4, 1], [0, 1, -3]]],
    ids=["2x2", "1x1", "3x3"],
)
def test_complex_matrices_with_real_values_take_every_fitting_kind(kind, dense):
    """Real values in a complex array make a matrix Hermitian and complex symmetric at
    once: every kind valid for either is accepted (LLᵀ only where it is definite)."""
    A = sp.csc_array(np.array(dense, dtype=complex))
    definite = np.all(np.linalg.eigvalsh(A.toarray()) > 0)
    if kind == "llt" and not definite:
        with pytest.raises(pastixpy.NotPositiveDefiniteError):
            pastixpy.factorize(A, kind=kind)
        return
    F = pastixpy.factorize(A, kind=kind)
    b = np.arange(1, A.shape[0] + 1) * (1 + 2j)
    x = F.solve(b)
    assert backward_error(A, x, b).max() <= 1e-15
    if F.kind != "lu":
        assert F.inertia() == eig_inertia(A)
    F.refactorize(2 * A)  # the same check on a new matrix
    assert backward_error(2 * A, F.solve(b), b).max() <= 1e-15


def test_complex_symmetric_with_complex_values_is_not_hermitian():
    A = sp.csc_array(np.array([[2, 1j], [1j, 3]]))
    with pytest.warns(pastixpy.PastixWarning, match="not Hermitian"):
        pastixpy.factorize(A, kind="ldlh")
    B = sp.csc_array(np.array([[2, 1j], [-1j, 3]]))
    with pytest.warns(pastixpy.PastixWarning, match="not symmetric"):
        pastixpy.factorize(B, kind="ldlt")


def _random_kkt(seed, m=40):
    """[[H, Bᵀ], [B, 0]] with H SPD and B square and nonsingular: inertia (m, m, 0)."""
    rng = np.random.default_rng(seed)
    H = sp.random_array((m, m), density=0.1, rng=rng)
    H = H @ H.T + 0.1 * sp.eye_array(m)
    B = sp.random_array((m, m), density=0.1, rng=rng) + sp.eye_array(m) * rng.uniform(0, 1, m)
    return sp.csc_array(sp.block_array([[H, B.T], [B, None]]))


def test_inertia_of_nonsingular_kkt_matrices_is_exact():
    # Pairing by a maximum matching pairs every constraint (a greedy choice left 3-5 of
    # 40 unpaired on most of these, whose zero pivots made the inertia (38, 40, 2)).
    checked = 0
    for seed in range(30):
        A = _random_kkt(seed)
        if np.linalg.cond(A.toarray()) > 1e6:
            continue
        checked += 1
        with warnings.catch_warnings():
            warnings.simplefilter("error", pastixpy.PastixWarning)
            F = pastixpy.factorize(A)
            assert F.stats["pairs"] == 40 and F.stats["perturbed_pivots"] == 0
            assert F.inertia() == (40, 40, 0)
    assert checked >= 20


def test_inertia_with_perturbed_pivots_is_exact_or_says_it_is_not():
    # Without pairing, the constraints' zero pivots are perturbed. Where refinement
    # contracts (the perturbation is small next to A's smallest eigenvalues) the
    # inertia is exact and quiet; elsewhere it warns. Never a silently wrong count.
    exact = warned = 0
    for seed in range(30):
        A = _random_kkt(seed)
        F = pastixpy.factorize(A, matching="off")
        assert F.stats["perturbed_pivots"] > 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pastixpy.PastixWarning)
            inertia = F.inertia()
        if caught:
            warned += 1
            assert "it is unreliable: refinement shrinks errors by only" in str(caught[0].message)
            assert inertia[2] > 0
        else:
            exact += 1
            assert inertia == (40, 40, 0)
    assert exact >= 5 and warned >= 1


@pytest.mark.parametrize("kind", ["auto", "lu"])
def test_badly_scaled_matrices_get_a_finite_backward_error(kind):
    # Rows and columns scaled by 1e±150: ‖A‖∞ ‖x‖∞ is beyond the largest float. The
    # backward error is computed without overflow (no RuntimeWarning: they are errors
    # in this test suite) and is not reported as 0.
    rng = np.random.default_rng(0)
    for A0 in (laplacian((6, 6)), convection_diffusion3d(4)):
        n = A0.shape[0]
        d = 10.0 ** rng.choice([-150, 150], n)
        A = sp.csc_array(sp.diags_array(d) @ A0 @ sp.diags_array(1 / d))
        y = rng.standard_normal(n)
        b = A @ (d * y)
        F = pastixpy.factorize(A, kind=kind)
        x = F.solve(b)
        assert np.abs(x / d - y).max() <= 1e-10 * np.abs(y).max()
        assert 0 < F.stats["backward_error"] <= 1e-15


def _canonical_int64(A):
    A = sp.csc_array(A)
    A.sum_duplicates()
    return sp.csc_array(
        (A.data.copy(), A.indices.astype(np.int64), A.indptr.astype(np.int64)), shape=A.shape
    )


def test_factorize_keeps_its_own_copy_of_a():
    """Refinement reads A: a caller changing its matrix afterwards changes nothing."""
    A = _canonical_int64(laplacian((8, 8, 8)))
    ref = A.copy()
    b = np.ones(A.shape[0])
    F = pastixpy.factorize(A)
    A.data[:] = 0.0
    x = F.solve(b)
    assert np.abs(ref @ x - b).max() <= 1e-10


def test_analyze_reads_a_canonical_matrix_in_place_and_leaves_it_alone():
    from pastixpy.matrix import canonical_csc

    A = _canonical_int64(laplacian((6, 6, 6)))
    arrays = (A.data, A.indices, A.indptr)
    before = [a.copy() for a in arrays]
    assert canonical_csc(A, copy=False) is A
    assert canonical_csc(A) is not A
    pastixpy.analyze(A)
    assert all(x is y for x, y in zip((A.data, A.indices, A.indptr), arrays, strict=True))
    assert all(np.array_equal(x, y) for x, y in zip(arrays, before, strict=True))
    # Not canonical (int32 indices, unsorted, a NaN): copied, or refused, as before.
    B = sp.csc_array(laplacian((4, 4)))
    assert canonical_csc(B, copy=False) is not B
    B.data[0] = np.nan
    with pytest.raises(pastixpy.InvalidInputError, match="NaN"):
        canonical_csc(_canonical_int64(B), copy=False)


@pytest.mark.parametrize("bare", [True, False])
def test_canonical_copy_behaves_as_scipy_constructs_it(monkeypatch, bare):
    """canonical_csc's copy of a canonical input is made without scipy's constructor
    where this scipy's attributes allow (matrix._bare_attributes), with it otherwise:
    either way an array that answers as one scipy's constructor made."""
    import pickle

    from pastixpy import matrix

    if not bare:
        monkeypatch.setattr(matrix, "_bare_attributes", lambda: None)
    elif matrix._bare_attributes() is None:
        pytest.skip("this scipy sets other attributes: the constructor makes the copy")
    rng = np.random.default_rng(5)
    A = _canonical_int64(sp.random_array((40, 40), density=0.1, rng=rng) + sp.eye_array(40))
    C = matrix.canonical_csc(A)
    D = sp.csc_array((A.data.copy(), A.indices.copy(), A.indptr.copy()), shape=A.shape)
    assert type(C) is sp.csc_array and C.shape == (40, 40) and C.nnz == A.nnz
    assert C.indices.dtype == C.indptr.dtype == np.int64 and C.has_canonical_format
    assert not np.shares_memory(C.data, A.data) and not np.shares_memory(C.indices, A.indices)
    x = rng.standard_normal(40)
    np.testing.assert_array_equal(C @ x, D @ x)
    np.testing.assert_array_equal(C.T @ x, D.T @ x)
    np.testing.assert_array_equal(C.toarray(), D.toarray())
    np.testing.assert_array_equal(C.diagonal(), D.diagonal())
    assert (abs(C) - abs(D)).nnz == 0 and (C.tocsr() != D.tocsr()).nnz == 0
    assert repr(C) == repr(D)
    E = pickle.loads(pickle.dumps(C))
    np.testing.assert_array_equal(E.toarray(), D.toarray())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_inf_norm_kernel(dtype):
    from pastixpy._graph import inf_norm

    rng = np.random.default_rng(4)
    A = sp.random_array((30, 30), density=0.2, rng=rng, format="csc")
    if np.dtype(dtype).kind == "c":
        A = A + 1j * sp.random_array((30, 30), density=0.2, rng=rng, format="csc")
    A = _canonical_int64(A.astype(dtype))
    want = float(abs(sp.csc_array(A, dtype=np.complex128)).sum(axis=1).max())
    assert inf_norm(30, A.indptr, A.indices, A.data) == pytest.approx(want, rel=1e-6)
    empty = _canonical_int64(sp.csc_array((5, 5), dtype=dtype))
    assert inf_norm(5, empty.indptr, empty.indices, empty.data) == 0.0


def test_options_of_call_keeps_one_instance_per_hashable_call():
    """factorize's options are parsed once per distinct call (Options.of_call): the same
    instance for the same hashable arguments, a fresh parse for arrays, dicts, callbacks;
    1 and True are different calls (threads=True is refused)."""
    from pastixpy.options import Options

    a = Options.of_call(kind="auto", threads=2)
    assert a is Options.of_call(kind="auto", threads=2) and a.threads == 2
    assert Options.of_call(kind="lu") is not Options.of_call(kind="llt")
    assert Options.of_call(threads=1).threads == 1
    with pytest.raises(pastixpy.InvalidInputError, match="threads"):
        Options.of_call(threads=True)
    ordering = np.arange(3)
    b = Options.of_call(ordering=ordering)
    assert b is not Options.of_call(ordering=ordering) and b.ordering is ordering
    refine = ("ir", {"tol": 1e-10})
    c = Options.of_call(refine=refine)
    assert c.refine == refine and c is not Options.of_call(refine=refine)
    calls = []
    d = Options.of_call(progress=calls.append)
    assert d is not Options.of_call(progress=calls.append)


def test_options_changed_names_the_fields_off_their_defaults():
    from pastixpy.options import Options

    assert Options.parse().changed == frozenset() == Options().changed
    assert Options.parse(matching="on").changed == {"preprocess_asked"}
    assert Options.parse(matching="off", threads=2).changed == {"matching", "threads"}
    assert Options.parse(ordering=np.arange(4)).changed == {"ordering"}
    assert Options.parse(schur=[0]).changed == {"schur"}
    assert Options.parse(refine=("auto", {"tol": 1e-10})).changed == {"refine"}
    assert Options.parse(kind="lu", precision="double").changed == {"kind", "precision"}
