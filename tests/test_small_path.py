"""factorize's small path (pastixpy/pipeline.py ``_small_path``): a small unsymmetric
matrix factored by the simplicial LU (pastixpy/simplicial.py) behind the same handle.

Its solves (plain, transposed, conjugate-transposed, several right-hand sides, complex
b with real A) against dense LAPACK; everything that needs the supernodal factors
(analysis, determinants, selected inverse, condition estimate) against dense references
once the handle has made them; pickling, refactorization, which matrices and options
take the path, and that what it cannot certify goes to the pipeline with its answer."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from test_numeric import backward_error

import pastixpy
from pastixpy import simplicial
from pastixpy.errors import SingularMatrixError
from pastixpy.gallery import convection_diffusion3d, laplacian
from pastixpy.matrix import canonical_csc

from conftest import load_shared, shared_params

#: Shared matrices singular on purpose.
SINGULAR = {"zenios", "mbeacxc", "neumann", "cryg2500", "reorientation_1"}


def unsymmetric(n, seed, complex_=False, density=0.05):
    """A random unsymmetric, well-conditioned matrix with a weak diagonal (pivots leave it)."""
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="csc")
    if complex_:
        A = A + 1j * sp.random_array((n, n), density=density, rng=rng, format="csc")
    A = A + sp.eye_array(n, k=1) + 0.3 * sp.eye_array(n, k=-(n - 1)) + 0.5 * sp.eye_array(n)
    return sp.csc_array(A)


def solve_dense(A, b, trans="N"):
    M = A.toarray()
    M = {"N": M, "T": M.T, "H": M.conj().T}[trans]
    return np.linalg.solve(M, b)


@pytest.mark.parametrize("complex_", [False, True])
@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 120), seed=st.integers(0, 10**6), k=st.integers(1, 3))
def test_solves_match_dense_lapack(complex_, n, seed, k):
    A = unsymmetric(n, seed, complex_)
    F = pastixpy.factorize(A)
    assert F.stats["path"] == "simplicial" and F.kind == "lu"
    rng = np.random.default_rng(seed + 1)
    B = rng.standard_normal((n, k)) + 1j * rng.standard_normal((n, k))
    for trans in "NTH":
        X = F.solve(B, trans=trans)
        M = {"N": A, "T": A.T, "H": A.conj().T}[trans]
        assert backward_error(M, X, B).max() <= 1e-12  # refine's default tol
        np.testing.assert_allclose(X, solve_dense(A, B, trans), rtol=1e-8, atol=1e-10)
    x = F.solve(B[:, 0].real)  # a real vector: real solution for a real matrix
    assert x.shape == (n,) and x.dtype == A.dtype
    actual = backward_error(A, x, B[:, 0].real).max()
    assert actual <= 1e-12
    assert abs(F.stats["backward_error"] - actual) <= 1e-15  # the statistics do not flatter


def test_statistics_say_what_was_done():
    A = unsymmetric(200, 1)
    F = pastixpy.factorize(A)
    s = F.stats
    assert s["path"] == "simplicial" and s["kind"] == "lu" and s["threads"] == 1
    assert s["n"] == 200 and s["nnz_A"] == A.nnz and s["perturbed_pivots"] == 0
    assert s["factor_entries"] >= A.nnz - 200 and s["factor_bytes"] > 0
    assert s["flops"] > 0 and s["strategy"] in ("symmetric", "unsymmetric")
    assert set(s["seconds"]) >= {"check", "factorize"} and s["retries"] == []
    assert "kind=lu" in repr(F)


def test_symmetric_matrices_and_options_take_the_pipeline():
    A = unsymmetric(100, 2)
    # symmetric kinds take the simplicial LDLᵀ (tests/test_small_path_symmetric.py)
    assert pastixpy.factorize(laplacian((10, 10))).stats["path"] == "simplicial"
    assert pastixpy.factorize(laplacian((10, 10)), kind="lu").stats["path"] == "simplicial"
    assert pastixpy.factorize(A, kind="lu", ordering="amd").stats["path"] == "simplicial"
    for options in (
        {"matching": "off"},
        {"matching": "on"},
        {"scaling": "on"},
        {"scaling": "off"},
        {"pivot_tol": 1e-8},
        {"precision": "mixed"},
        {"compress": 1e-8},
        {"ordering": "metis"},
        {"condest": True},
        {"schur": [0, 1]},
        {"memory_limit": "1GiB"},
        {"progress": lambda f: None},
    ):
        F = pastixpy.factorize(A, **options)
        assert F.stats["path"] == "supernodal", options
    # float32 is left to the pipeline (single-precision factors, refined or not)
    assert pastixpy.factorize(A.astype(np.float32)).stats["path"] == "supernodal"
    assert pastixpy.factorize(A, analysis=pastixpy.analyze(A)).stats["path"] == "supernodal"


def test_threads_and_refine_options_keep_the_path():
    A = unsymmetric(150, 3)
    b = np.arange(150.0)
    x0 = pastixpy.factorize(A).solve(b)
    for options in ({"threads": 2}, {"threads": 1}, {"refine": "none"}, {"refine": "gmres"}):
        F = pastixpy.factorize(A, **options)
        assert F.stats["path"] == "simplicial", options
        assert backward_error(A, F.solve(b), b).max() < 1e-14
    # One kernel, one order of operations: the same bits whatever the threads.
    assert np.array_equal(pastixpy.factorize(A, threads=2).solve(b), x0)


def test_the_supernodal_factors_are_made_when_first_needed():
    A = unsymmetric(120, 4)
    dense = A.toarray()
    F = pastixpy.factorize(A)
    assert F.stats["path"] == "simplicial"
    sign, logabs = F.slogdet()
    ref = np.linalg.slogdet(dense)
    assert sign == ref.sign and logabs == pytest.approx(ref.logabsdet, rel=1e-12)
    assert F.analysis is not None and F.analysis.n == 120  # made once, kept beside
    inverse = np.linalg.inv(dense)
    np.testing.assert_allclose(F.inv_diag(), np.diag(inverse), rtol=1e-9)
    Z = F.inv_selected()
    r, c = Z.nonzero()
    assert r.size >= A.nnz  # A's pattern (transposed: the pipeline matched rows)
    np.testing.assert_allclose(Z.toarray()[r, c], inverse[r, c], rtol=1e-9, atol=1e-12)
    b = np.ones(120)
    # Solves keep the simplicial factors: the same bits as a fresh factorization's.
    assert F.stats["path"] == "simplicial"
    assert np.array_equal(F.solve(b), pastixpy.factorize(A).solve(b))
    G = pastixpy.factorize(A)
    assert np.array_equal(np.sort(G.perm), np.arange(120)) and G.stats["path"] == "simplicial"
    H = pastixpy.factorize(A)
    cond = np.linalg.norm(dense, 1) * np.linalg.norm(np.linalg.inv(dense), 1)
    assert H.condest() == pytest.approx(cond, rel=0.5)
    assert H.stats["path"] == "simplicial"  # condest solves with the simplicial factors


def test_pickles_and_refactorizes():
    A = unsymmetric(90, 5)
    b = np.linspace(-1, 1, 90)
    F = pastixpy.factorize(A)
    G = pickle.loads(pickle.dumps(F))
    assert G.stats["path"] == "simplicial"
    assert np.array_equal(G.solve(b), F.solve(b))
    A2 = A.copy()
    A2.data = A2.data * 3.0
    F.refactorize(A2)
    assert F.stats["path"] == "simplicial"
    assert backward_error(A2, F.solve(b), b).max() < 1e-14
    assert backward_error(A, G.solve(b), b).max() < 1e-14  # the copy keeps its own factors


def test_a_failed_refactorize_leaves_no_factors():
    """As the pipeline's: the previous factors are not kept to answer for a matrix that
    failed (solves raise until a refactorize succeeds)."""
    A = unsymmetric(70, 11)
    F = pastixpy.factorize(A)
    Z = A.copy()
    Z.data[:] = 0.0
    with pytest.raises(SingularMatrixError):
        F.refactorize(Z)
    with pytest.raises(pastixpy.PastixError, match="holds no factors"):
        F.solve(np.ones(70))
    F.refactorize(A)
    b = np.ones(70)
    assert F.stats["path"] == "simplicial" and backward_error(A, F.solve(b), b).max() < 1e-14


def test_matching_or_scaling_named_on_in_either_form_asks_for_the_pipeline():
    A = unsymmetric(50, 12)
    for options in ({"matching": ("on", {})}, {"scaling": ("on", {})}):
        assert pastixpy.factorize(A, **options).stats["path"] == "supernodal", options
    for options in ({"matching": ("auto", {})}, {"matching": "auto", "scaling": "auto"}):
        assert pastixpy.factorize(A, **options).stats["path"] == "simplicial", options


def test_badly_scaled_matrix_solves_without_a_false_singular_verdict():
    rng = np.random.default_rng(6)
    A = unsymmetric(150, 6) + 4 * sp.eye_array(150)
    dr, dc = 10.0 ** rng.uniform(-6, 6, 150), 10.0 ** rng.uniform(-6, 6, 150)
    A = sp.csc_array(sp.diags_array(dr) @ A @ sp.diags_array(dc))
    F = pastixpy.factorize(A)
    assert F.stats["path"] == "simplicial"
    b = A @ np.ones(150)
    assert backward_error(A, F.solve(b), b).max() < 1e-14


def test_badly_scaled_matrix_is_cleared_by_the_rough_equilibration():
    """The pivot and growth checks of a badly scaled matrix try the rough equilibration
    first (solve_policy.ROUGH_EQUILIBRATION iterations): where it clears them, the full
    one is never made."""
    rng = np.random.default_rng(6)
    A = unsymmetric(150, 6) + 4 * sp.eye_array(150)
    dr, dc = (
        10.0 ** rng.uniform(-9, 9, 150),
        10.0 ** rng.uniform(-9, 9, 150),
    )  # past the checks unscaled
    A = sp.csc_array(sp.diags_array(dr) @ A @ sp.diags_array(dc))
    F = pastixpy.factorize(A)
    b = A @ np.ones(150)
    x = F.solve(b)
    solver = F._state.solver
    assert F.stats["path"] == "simplicial" and "rough_equilibration" in vars(solver)
    assert "equilibration" not in vars(solver)
    assert backward_error(A, x, b).max() < 1e-14


def test_singular_matrices_are_reported_as_by_the_pipeline():
    A = unsymmetric(60, 7).tolil()
    A[:, 5] = 0.0  # structurally singular: the check names the column
    with pytest.raises(SingularMatrixError):
        pastixpy.factorize(sp.csc_array(A))
    A = unsymmetric(60, 8).toarray()
    A[:, 7] = A[:, 3] + A[:, 9]  # numerically singular: a zero pivot, the pipeline's verdict
    F = pastixpy.factorize(sp.csc_array(A))
    assert F.stats["path"] == "supernodal" and F.stats["perturbed_pivots"] > 0
    with pytest.raises(SingularMatrixError):
        F.solve(np.random.default_rng(0).standard_normal(60))


def test_nearly_singular_matrix_keeps_its_lu():
    """A pivot far below √eps but far above its rounding error (a column that almost
    repeats two others) is a genuine pivot of a partial-pivoting LU: factorize keeps the
    small path's LU, as spsolve does, and its solves still meet the tolerance."""
    A = unsymmetric(60, 8).toarray()
    rng = np.random.default_rng(11)
    A[:, 7] = A[:, 3] + A[:, 9] + 1e-11 * rng.standard_normal(60)
    A = sp.csc_array(A)
    C = canonical_csc(A)
    _, smallest = simplicial.factor(C).pivot_checks(C)
    assert 1e-14 < smallest < 1e-9  # below the pipeline's static pivoting threshold
    F = pastixpy.factorize(A)
    assert F.stats["path"] == "simplicial" and F.stats["perturbed_pivots"] == 0
    b = rng.standard_normal(60)
    x = F.solve(b)
    assert backward_error(A, x, b).max() < 1e-14
    y = np.linalg.solve(A.toarray(), b)
    cond = np.linalg.cond(A.toarray(), 1)
    assert np.abs(x - y).max() <= 1e-14 * cond * np.abs(y).max()


def test_over_budget_matrices_take_the_pipeline():
    A = convection_diffusion3d(12)  # 1,728 unknowns, its LU past the flop budget
    C = canonical_csc(A)
    if simplicial.factor(C) is not None:
        pytest.skip("within the budget on this build")
    assert pastixpy.factorize(A).stats["path"] == "supernodal"


def test_small_path_answers_match_the_pipeline():
    """The same solutions as the supernodal factors give (within rounding), and as
    spsolve's simplicial path (the same LU)."""
    A = unsymmetric(300, 9, density=0.02)
    rng = np.random.default_rng(10)
    B = rng.standard_normal((300, 4))
    F = pastixpy.factorize(A)
    G = pastixpy.factorize(A, matching="on")  # asked for: the pipeline's preprocessing
    assert F.stats["path"] == "simplicial"
    assert G.stats["path"] == "supernodal" and G.stats["matching"]
    X = F.solve(B)
    cond = np.linalg.cond(A.toarray(), 1)
    for Y in (G.solve(B), pastixpy.spsolve(A, B), np.linalg.solve(A.toarray(), B)):
        assert np.abs(X - Y).max() <= 1e-14 * cond * np.abs(Y).max()


@pytest.mark.parametrize("name", shared_params())
def test_shared_matrices_solve_to_the_tolerance_on_either_path(name):
    if name in SINGULAR:
        pytest.skip(f"{name} is singular on purpose")
    A = load_shared(name)
    C = canonical_csc(A)
    b = C @ np.ones(C.shape[0])
    with warnings.catch_warnings():  # perturbed pivots on the nearly singular ones
        warnings.simplefilter("ignore", pastixpy.PastixWarning)
        F = pastixpy.factorize(C)
        x = F.solve(b)
    assert backward_error(C, x, b).max() < 1e-12
    if F.stats["path"] == "simplicial":
        assert F.kind in ("lu", "llt", "ldlt", "ldlh")
        # The ordering named is the strategy's: COLAMD on AᵀA's columns, AMD on A + Aᵀ.
        assert F.stats["ordering"] == ("colamd" if F.stats["strategy"] == "unsymmetric" else "amd")
        assert backward_error(C.T, F.solve(b, trans="T"), b).max() < 1e-12
