"""Every shared real-world matrix: factor, solve A x = b to backward error 1e-12.

b = A @ x_true with a random x_true (complex for complex A), so b is in the
range of A even for the singular ones. The backward error
‖b − Ax‖∞ / (‖A‖∞‖x‖∞ + ‖b‖∞) is computed here, independently of the solver.
Skipped when ../shared/matrices is absent.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import pastixpy

from conftest import load_shared, shared_params

#: Exactly singular: a SingularMatrixError, or a solution to 1e-12 with a PastixWarning.
SINGULAR = {"zenios", "mbeacxc", "neumann"}

#: Condition numbers from ../shared/matrices/README.md (dense 2-norm), for a forward-error check.
COND = {
    "bcsstk01": 8.8e5,
    "494_bus": 2.4e6,
    "pts5ldd03": 5.2e1,
    "orsirr_1": 7.7e4,
    "young1c": 4.2e2,
    "young4c": 7.0e2,
    "qc324": 4.6e4,
    "w156": 9.6e8,
    "bp_1200": 1.6e8,
    "watt_2": 1.4e11,
    "west0479": 3.3e11,
}

#: Small enough for dense LAPACK references (slogdet, eigenvalues) in well under a second.
SMALL_UNSYMMETRIC = ["arc130", "fs_183_6", "w156", "west0479", "young1c"]
SMALL_SYMMETRIC = ["bcsstk01", "494_bus", "pts5ldd03", "young4c"]


def backward_error(A, x, b):
    A = sp.csc_array(A)
    x = np.asarray(x).reshape(A.shape[0], -1)
    b = np.asarray(b).reshape(A.shape[0], -1)
    r = b - A @ x
    norm_a = np.abs(A).sum(axis=1).max()
    return np.abs(r).max(axis=0) / (norm_a * np.abs(x).max(axis=0) + np.abs(b).max(axis=0))


def true_solution(A, k=None, seed=0):
    rng = np.random.default_rng(seed)
    shape = (A.shape[0],) if k is None else (A.shape[0], k)
    x = rng.standard_normal(shape)
    if np.iscomplexobj(A.data):
        x = x + 1j * rng.standard_normal(shape)
    return x


@pytest.mark.parametrize("name", shared_params())
def test_shared_matrix_solve(name):
    A = load_shared(name)
    x_true = true_solution(A)
    b = A @ x_true
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            F = pastixpy.factorize(A)
            x = F.solve(b)
        except pastixpy.SingularMatrixError as exc:
            if name not in SINGULAR:
                raise
            assert "singular" in str(exc)
            return
    pastix_warnings = [w for w in caught if issubclass(w.category, pastixpy.PastixWarning)]
    assert x.shape == b.shape
    assert x.dtype == np.promote_types(A.dtype, b.dtype)
    berr = backward_error(A, x, b).max()
    assert berr <= 1e-12, f"{name}: backward error {berr:.2e} (kind {F.kind})"
    # The solver's own account agrees (it uses the same definition).
    assert F.stats["backward_error"] == pytest.approx(berr, rel=0.5, abs=1e-16)
    if name in SINGULAR:
        assert pastix_warnings, f"{name} is singular but solved without a PastixWarning"
    if F.stats["perturbed_pivots"]:
        assert any("perturbed" in str(w.message) for w in pastix_warnings)
    if name in COND:
        err = np.abs(x - x_true).max() / np.abs(x_true).max()
        assert err <= 1e-13 * COND[name], f"{name}: forward error {err:.1e}"


def _expected_kind(A):
    if np.iscomplexobj(A.data):
        if (A != A.conj().T).nnz == 0:
            return {"llt", "ldlh"}
        return {"ldlt"} if (A != A.T).nnz == 0 else {"lu"}
    return {"llt", "ldlt"} if (A != A.T).nnz == 0 else {"lu"}


@pytest.mark.parametrize("name", SMALL_UNSYMMETRIC + SMALL_SYMMETRIC)
def test_shared_small_transposes_blocks_and_determinant(name):
    A = load_shared(name)
    F = pastixpy.factorize(A)
    assert F.kind in _expected_kind(A)
    X_true = true_solution(A, k=3, seed=1)
    for trans, M in (("N", A), ("T", A.T), ("H", A.conj().T)):
        B = M @ X_true
        X = F.solve(B, trans=trans)
        assert X.shape == B.shape
        berr = backward_error(M, X, B)
        assert berr.max() <= 1e-12, (trans, berr)
    sign, logabs = F.slogdet()
    ref_sign, ref_logabs = np.linalg.slogdet(A.toarray())
    assert logabs == pytest.approx(ref_logabs, rel=1e-9, abs=1e-7)
    assert abs(sign - ref_sign) < 1e-7


@pytest.mark.parametrize("name", ["bcsstk01", "494_bus", "pts5ldd03"])
def test_shared_symmetric_inertia(name):
    A = load_shared(name)
    F = pastixpy.factorize(A)
    w = np.linalg.eigvalsh(A.toarray())
    assert np.abs(w).min() > 1e-8 * np.abs(w).max()  # nonsingular: the signs are clear
    assert F.inertia() == (int((w > 0).sum()), int((w < 0).sum()), 0)
    for kind in ("ldlt", "lu"):
        G = pastixpy.factorize(A, kind=kind)
        b = A @ true_solution(A)
        assert backward_error(A, G.solve(b), b).max() <= 1e-12
        if kind == "ldlt":
            assert G.inertia() == F.inertia()


@pytest.mark.parametrize("name", ["west0479", "young1c", "rajat19"])
@pytest.mark.parametrize("ordering", ["amd", "rcm", "natural"])
def test_shared_other_orderings(name, ordering):
    A = load_shared(name)
    b = A @ true_solution(A)
    x = pastixpy.factorize(A, ordering=ordering).solve(b)
    assert backward_error(A, x, b).max() <= 1e-12


def test_shared_refactorize_and_spsolve():
    A = load_shared("orsirr_1")
    b = A @ true_solution(A)
    F = pastixpy.factorize(A)
    A2 = sp.csc_array(A, copy=True)
    A2.data = A2.data * 1.5
    F.refactorize(A2)
    x = F.solve(b)
    assert backward_error(A2, x, b).max() <= 1e-12
    np.testing.assert_allclose(x, pastixpy.spsolve(A, b) / 1.5, rtol=1e-9, atol=1e-12)
