"""Bad input gets a clear error naming what is wrong."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import pastixpy
from pastixpy.gallery import laplacian


def test_non_square():
    with pytest.raises(pastixpy.InvalidInputError, match=r"must be square, got shape \(3, 4\)"):
        pastixpy.analyze(sp.random_array((3, 4), density=0.5, format="csr"))


def test_empty():
    with pytest.raises(pastixpy.InvalidInputError, match="empty"):
        pastixpy.analyze(sp.csc_array((0, 0)))


def test_not_2d():
    with pytest.raises(pastixpy.InvalidInputError, match="2-D"):
        pastixpy.analyze(np.ones(3))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_value_names_the_column(bad):
    A = laplacian((4, 4)).tolil()
    A[5, 7] = bad
    with pytest.raises(pastixpy.InvalidInputError, match="NaN or Inf value at row 5, column 7"):
        pastixpy.analyze(A.tocsr())


def test_non_numeric_dtype():
    with pytest.warns(sp.SparseEfficiencyWarning):
        with pytest.raises(pastixpy.InvalidInputError, match="dtype <U1, which is not numeric"):
            pastixpy.analyze(np.array([["a", "b"], ["c", "d"]]))


def test_float_index_arrays_are_refused():
    A = laplacian((3, 3))
    B = sp.csc_array((A.data, A.indices, A.indptr), shape=A.shape)
    B.indices = B.indices.astype(np.float64)
    with pytest.raises(pastixpy.InvalidInputError, match="index arrays of dtype float64"):
        pastixpy.analyze(B)


def test_index_dtypes_are_converted():
    A = laplacian((5, 5))
    B = sp.csc_array(A)
    B.indices = B.indices.astype(np.int32)
    B.indptr = B.indptr.astype(np.uint32)
    assert pastixpy.analyze(B).stats["nnz_L"] == pastixpy.analyze(A).stats["nnz_L"]


@pytest.mark.parametrize("bad", [1000, -1])
@pytest.mark.parametrize("entry", ["spsolve", "factorize", "analyze"])
def test_row_index_out_of_range_is_named(bad, entry):
    # scipy checks index ranges only with check_format(full_check=True): an array
    # changed in place reaches the solver as it is, and the kernels must not read it.
    A = sp.csc_matrix(laplacian((5, 5)))
    A.indices[3] = bad
    call = {
        "spsolve": lambda: pastixpy.spsolve(A, np.ones(25)),
        "factorize": lambda: pastixpy.factorize(A),
        "analyze": lambda: pastixpy.analyze(A),
    }[entry]
    with pytest.raises(pastixpy.InvalidInputError, match=rf"row index {bad} in column 1"):
        call()


def test_unknown_ordering():
    with pytest.raises(pastixpy.OptionError, match="unknown ordering 'scotch'"):
        pastixpy.analyze(laplacian((3, 3)), ordering="scotch")


def test_unknown_ordering_parameter():
    with pytest.raises(pastixpy.OptionError, match=r"unknown parameter\(s\) \['nseps'\]"):
        pastixpy.analyze(laplacian((3, 3)), ordering=("metis", {"nseps": 3}))


def test_malformed_option():
    with pytest.raises(pastixpy.OptionError, match="is not understood"):
        pastixpy.analyze(laplacian((3, 3)), ordering=("metis",))


def test_unknown_kind():
    with pytest.raises(pastixpy.OptionError, match="unknown kind 'qr'"):
        pastixpy.analyze(laplacian((3, 3)), kind="qr")


@pytest.mark.parametrize(
    "perm, message",
    [
        ([0, 1, 2], "permutation of range\\(9\\)"),
        ([0, 1, 2, 3, 4, 5, 6, 7, 7], "index 7 appears 2 times and 1 indices are missing"),
        ([0, 1, 2, 3, 4, 5, 6, 7, 9], "outside range\\(9\\)"),
        ([0.5] * 9, "must hold integers"),
    ],
)
def test_bad_user_permutation(perm, message):
    with pytest.raises(pastixpy.InvalidInputError, match=message):
        pastixpy.analyze(laplacian((3, 3)), ordering=np.array(perm))


def test_errors_are_value_errors_and_pastix_errors():
    assert issubclass(pastixpy.InvalidInputError, ValueError)
    assert issubclass(pastixpy.InvalidInputError, pastixpy.PastixError)
    assert issubclass(pastixpy.OptionError, ValueError)


@pytest.mark.parametrize(
    "dense, expected",
    [
        ([[2.0, 1.0], [1.0, 3.0]], "symmetric"),
        ([[2.0, 1.0], [1.5, 3.0]], "general"),
        ([[2.0, 1j], [-1j, 3.0]], "hermitian"),
        ([[2.0, 1j], [1j, 3.0]], "symmetric"),
        ([[2.0 + 1j, 1j], [-1j, 3.0]], "general"),  # complex diagonal: not Hermitian
        ([[2.0, 0.0], [1.0, 3.0]], "general"),
    ],
)
def test_matrix_symmetry_classes(dense, expected):
    from pastixpy.matrix import canonical_csc, matrix_symmetry

    assert matrix_symmetry(canonical_csc(sp.csc_array(np.array(dense)))) == expected


def test_matrix_symmetry_sees_through_explicit_zeros():
    from pastixpy.matrix import canonical_csc, matrix_symmetry

    # (0, 1) stored as an explicit zero, (1, 0) absent: the values are symmetric.
    A = sp.csc_array((np.array([2.0, 0.0, 3.0]), np.array([0, 0, 1]), np.array([0, 1, 3])))
    assert A.nnz == 3 and A.toarray()[0, 1] == 0
    assert matrix_symmetry(canonical_csc(A)) == "symmetric"


@pytest.mark.parametrize("column_too", [True, False])
def test_helmholtz_solver_on_an_empty_row_names_it(column_too):
    """An empty row makes A singular whatever the coarsening: the error says so and names
    the row, rather than suggesting coarsening='cr' (the default) for an F point with a
    zero diagonal."""
    from pastixpy.gallery import helmholtz_fd
    from pastixpy.multilevel import helmholtz_solver

    A = sp.lil_array(helmholtz_fd(20).A)
    A[5, :] = 0
    if column_too:
        A[:, 5] = 0
    A = sp.csr_array(A)
    A.eliminate_zeros()
    with pytest.raises(
        pastixpy.SingularMatrixError, match=r"structurally singular.*row\(s\) 5 empty"
    ):
        helmholtz_solver(A)


def test_cr_coarsening_keeps_zero_diagonal_points_coarse():
    """F-relaxation divides by a_ii: the default coarsening never makes a zero-diagonal
    point F, even one with no F couplings (an empty row)."""
    from pastixpy.multilevel.coarsening import cr_split

    A = sp.lil_array(laplacian((6, 6)))
    A[7, :] = 0
    A[:, 7] = 0
    A[20, 20] = 0
    A = sp.csr_array(A)
    A.eliminate_zeros()
    fmask = cr_split(A)
    assert not fmask[7] and not fmask[20]
    assert fmask.sum() > 10


def test_unknown_keyword_of_spsolve_names_spsolve():
    """spsolve passes **options on to factorize: an unknown one is reported as spsolve's,
    with the keywords it takes, not as the internal Options.parse()'s."""
    with pytest.raises(
        TypeError, match=r"^spsolve\(\) got an unexpected keyword argument 'foo'"
    ) as info:
        pastixpy.spsolve(laplacian((4, 4)), np.ones(16), foo=1)
    assert "Options" not in str(info.value) and "refine" in str(info.value)


@pytest.mark.parametrize("method", ["auto", "ir", "gmres", "cg"])
def test_refine_maxiter_zero_is_refused_at_once(method):
    """maxiter=0 leaves no refinement step nor Krylov iteration: refused when the options
    are read (it failed at the first solve that needed refinement), pointing to 'none'."""
    with pytest.raises(pastixpy.OptionError, match=r"maxiter must be an integer >= 1.*'none'"):
        pastixpy.factorize(laplacian((4, 4)), refine=(method, {"maxiter": 0}))


def test_refine_maxiter_one_still_refines():
    A = laplacian((30, 30))
    F = pastixpy.factorize(A, precision="mixed", refine=("auto", {"maxiter": 1}))
    F.solve(np.ones(900))
    assert F.stats["backward_error"] <= 1e-12


def test_solve_during_refactorize_says_it_is_running():
    """A solve while refactorize() runs (here from its progress callback) is told so, not
    that the last refactorize() failed; after a failed one, that it failed."""
    A = laplacian((20, 20))
    said = []
    F = None

    def progress(fraction):
        if F is not None and not said:
            with pytest.raises(pastixpy.PastixError) as info:
                F.solve(np.ones(400))
            said.append(str(info.value))

    F = pastixpy.factorize(A, progress=progress)
    F.refactorize(2 * A)
    assert said and "while refactorize() runs" in said[0] and "failed" not in said[0]
    np.testing.assert_allclose(2 * A @ F.solve(np.ones(400)), np.ones(400))
    G = pastixpy.factorize(A, kind="llt")
    with pytest.raises(pastixpy.NotPositiveDefiniteError):
        G.refactorize(-A)
    with pytest.raises(pastixpy.PastixError, match="last refactorize.. failed"):
        G.solve(np.ones(400))


def _neumann_laplacian(m):
    """The 5-point Laplacian of an m x m grid with Neumann boundaries: singular (the
    constants span its kernel), positive semidefinite."""
    T = sp.diags_array([-np.ones(m - 1), -np.ones(m - 1)], offsets=[-1, 1])
    adjacency = sp.kron(T, sp.eye_array(m)) + sp.kron(sp.eye_array(m), T)
    return sp.csc_array(sp.diags_array(-adjacency.sum(axis=1)) + adjacency)


def test_mixed_precision_neumann_laplacian_out_of_range_b_is_called_singular():
    """Single-precision Cholesky takes the singular Laplacian's roundoff-sized last pivot
    as positive; a b outside the range then fails refinement. The verdict says singular
    (its condition estimate, from float32 factors, is past their 1/eps), not "not
    ill-conditioned ... element growth"."""
    A = _neumann_laplacian(30)
    with pytest.warns(pastixpy.PastixWarning, match="may be singular") as caught:
        F = pastixpy.factorize(A, precision="mixed")  # it factored without a word
    assert "condition number estimated" in str(caught[0].message)
    x = F.solve(A @ np.random.default_rng(0).standard_normal(900))  # in the range: solves
    assert F.stats["backward_error"] <= 1e-12 and np.isfinite(x).all()
    with pytest.raises(pastixpy.SingularMatrixError) as info:
        F.solve(np.ones(900))  # sum(b) != 0: outside the range
    message = str(info.value)
    assert "numerically singular" in message
    assert "element growth" not in message and "not ill-conditioned" not in message


def test_mixed_precision_of_a_nonsingular_laplacian_says_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pastixpy.factorize(pastixpy.gallery.laplacian((30, 30)), precision="mixed")


def test_perturbed_pivots_of_a_well_conditioned_saddle_point_are_not_called_singular():
    """A mixed Poisson problem (κ₁ 1.5e2) factored on an analysis made without 2x2 pairs
    gets perturbed pivots at its zero diagonal entries. The warning rests on a condition
    estimate: well conditioned, refined to full accuracy; "may be singular" is not said."""
    from test_pairs import mixed_poisson_tets

    A = mixed_poisson_tets(3)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    F = pastixpy.factorize(A, kind="ldlt", analysis=pastixpy.analyze(A, kind="ldlt"))
    assert F.stats["perturbed_pivots"] > 0
    with pytest.warns(pastixpy.PastixWarning, match="perturbed") as caught:
        x = F.solve(b)
    message = str(caught[0].message)
    assert "well conditioned (condition number about" in message
    assert "may be singular" not in message
    cond = float(message.split("condition number about ")[1].split(")")[0])
    assert 100 <= cond <= 200  # κ₁ is 1.49e2 (from the dense inverse)
    assert np.linalg.norm(A @ x - b) <= 1e-12 * np.linalg.norm(b)


def test_perturbed_pivots_of_a_singular_matrix_say_may_be_singular_with_the_estimate():
    A = _neumann_laplacian(20)
    b = A @ np.random.default_rng(1).standard_normal(400)  # in the range
    F = pastixpy.factorize(A)
    assert F.stats["perturbed_pivots"] > 0
    with pytest.warns(pastixpy.PastixWarning, match="perturbed") as caught:
        F.solve(b)
    message = str(caught[0].message)
    assert "may be singular or nearly so (condition number at least" in message
