"""spsolve's simplicial path (pastixpy/simplicial.py, csrc/simplicial.pyx): the kernel's
factors against a dense reconstruction, its pivot rule, the column intersection graph
against scipy's AᵀA, which problems take the path, and that whatever it cannot certify
goes to the pipeline with the pipeline's answer."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_numeric import backward_error

import pastixpy
from pastixpy import _simplicial, simplicial
from pastixpy._amd import amd_order
from pastixpy._graph import transposed_pairs
from pastixpy.gallery import laplacian, saddle_point
from pastixpy.matrix import CSCView, canonical_csc, csc_view, symmetric_pattern

from conftest import load_shared, random_pattern, shared_params


def dense_factors(arrays, n):
    """L (unit diagonal), U and the row permutation of the kernel's factors, dense."""
    Lp, Li, Lx, Up, Ui, Ux, udiag, pinv = arrays
    L = sp.csc_array((Lx, Li, Lp), shape=(n, n)).toarray() + np.eye(n)
    U = sp.csc_array((Ux, Ui, Up), shape=(n, n)).toarray() + np.diag(udiag)
    return L, U, pinv


def unsymmetric(n, density, seed, complex_=False):
    """A random unsymmetric matrix whose diagonal is weak: pivots leave it."""
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="csc")
    if complex_:
        A = A + 1j * sp.random_array((n, n), density=density, rng=rng, format="csc")
    A = A + sp.random_array((n, n), density=1.0 / n, rng=rng) + sp.eye_array(n, k=1)
    A = A + sp.eye_array(n, k=-(n - 1)) + 1e-3 * sp.eye_array(n)
    return canonical_csc(A)


def badly_scaled(n, seed):
    """A well-conditioned unsymmetric matrix with rows and columns scaled by 10^±6, like
    bayer10's 15 orders of magnitude: its unscaled ‖A‖‖x‖/‖b‖ passes the growth limit,
    its equilibrated one does not."""
    rng = np.random.default_rng(seed)
    A = unsymmetric(n, 0.03, seed) + 4 * sp.eye_array(n)
    dr, dc = 10.0 ** rng.uniform(-6, 6, n), 10.0 ** rng.uniform(-6, 6, n)
    return canonical_csc(sp.diags_array(dr) @ A @ sp.diags_array(dc))


# ---------------------------------------------------------------------------- the kernel


RULES = [_simplicial.PREFER_DIAGONAL, _simplicial.PREFER_SPARSE_ROW]


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("threshold", [1.0, 0.1, 0.001])
@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 40), density=st.floats(0.02, 0.3), seed=st.integers(0, 10**6))
def test_lu_factor_reconstructs_a(rule, complex_, threshold, n, density, seed):
    C = unsymmetric(n, density, seed, complex_)
    q = np.random.default_rng(seed).permutation(n).astype(np.int64)
    status, k, arrays, flops = _simplicial.lu_factor(
        C.indptr, C.indices, C.data, q, threshold, 1e30, rule=rule
    )
    assert status == _simplicial.OK and k == n
    L, U, pinv = dense_factors(arrays, n)
    assert np.array_equal(np.sort(pinv), np.arange(n))
    assert np.allclose(np.tril(L), L) and np.allclose(np.triu(U), U)
    PAQ = np.empty((n, n), dtype=C.dtype)
    PAQ[pinv] = C.toarray()[:, q]
    # Backward stable relative to |L||U| (which the threshold bounds): Higham's bound.
    assert np.abs(L @ U - PAQ).max() <= 1e-14 * n * (np.abs(L) @ np.abs(U)).max()
    # |l_ij| <= 1 / threshold: the pivot was at least threshold times the largest.
    assert np.abs(L).max() <= (1 + 1e-12) / threshold
    b = np.arange(1.0, n + 1)[:, None].astype(C.dtype)
    x = np.empty_like(b)
    _simplicial.lu_solve(*arrays, q, b, x)
    if threshold == 1.0:
        assert backward_error(C, x, b).max() < 1e-13


def reference_lu(C, q, threshold, rule=_simplicial.PREFER_DIAGONAL):
    """The kernel's pivot rules on dense arrays, without its graph search and pruning:
    column k of A Q is solved against the columns of L so far in pivot order; the
    pivot is the diagonal row where at least ``threshold`` times the largest candidate,
    else the largest, ties to the row with fewest entries in A (PREFER_DIAGONAL), or
    among the candidates at least ``threshold`` times the largest the row with fewest
    entries in A, the largest among those (PREFER_SPARSE_ROW). Returns (L, U, pinv) as
    :func:`dense_factors` does."""
    n = C.shape[0]
    A = C.toarray()
    counts = np.diff(sp.csr_array(C).indptr)
    pinv = np.full(n, -1)
    rows = []  # the pivot row of each step
    Lcols = []  # L's columns, in A's row numbers (zero at rows pivotal before)
    U = np.zeros((n, n), dtype=A.dtype)
    for k in range(n):
        x = A[:, q[k]].copy()
        for j in range(k):
            x -= Lcols[j] * x[rows[j]]
        free = np.flatnonzero(pinv < 0)
        mags = np.abs(x[free])
        amax = mags.max()
        assert amax > 0
        best = free[mags == amax]
        ipiv = best[np.argmin(counts[best])]
        if rule == _simplicial.PREFER_SPARSE_ROW:
            fit = free[mags >= threshold * amax]
            fewest = fit[counts[fit] == counts[fit].min()]
            ipiv = fewest[np.argmax(np.abs(x[fewest]))]
        elif pinv[q[k]] < 0 and abs(x[q[k]]) >= threshold * amax:
            ipiv = q[k]
        pinv[ipiv] = k
        rows.append(ipiv)
        U[:k, k] = x[rows[:k]]
        U[k, k] = x[ipiv]
        col = np.where(pinv < 0, x / x[ipiv], 0)
        Lcols.append(col)
    L = np.eye(n, dtype=A.dtype)
    for j in range(n):
        L[pinv, j] += np.where(pinv > j, Lcols[j][np.arange(n)], 0)
    return L, U, pinv


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("threshold", [1.0, 0.1])
@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 50), density=st.floats(0.02, 0.2), seed=st.integers(0, 10**6))
def test_lu_factor_matches_the_dense_reference(rule, complex_, threshold, n, density, seed):
    # The search with symmetric pruning finds the same pattern, so the same pivots and,
    # within rounding, the same factors as plain Gaussian elimination with the rule.
    C = unsymmetric(n, density, seed, complex_)
    q = np.random.default_rng(seed).permutation(n).astype(np.int64)
    status, _, arrays, _ = _simplicial.lu_factor(
        C.indptr, C.indices, C.data, q, threshold, 1e30, rule=rule
    )
    assert status == _simplicial.OK
    L, U, pinv = dense_factors(arrays, n)
    L_ref, U_ref, pinv_ref = reference_lu(C, q, threshold, rule)
    assert np.array_equal(pinv, pinv_ref)
    scale = (np.abs(L_ref) @ np.abs(U_ref)).max()
    assert np.abs(L - L_ref).max() * np.abs(U_ref).max() <= 1e-12 * n * scale
    assert np.abs(U - U_ref).max() <= 1e-12 * n * scale


def test_lu_factor_stops_at_the_committed_budget():
    # 2 Σ |L(:, j)|² over the columns so far: past max_committed the kernel stops at
    # that column, before the flops that those columns commit are spent.
    n = 30
    C = canonical_csc(sp.csc_array(np.ones((n, n)) + n * np.eye(n)))
    q = np.arange(n, dtype=np.int64)
    *_, arrays, _ = _simplicial.lu_factor(C.indptr, C.indices, C.data, q, 0.1, 1e30)
    committed = 2 * np.cumsum(np.diff(arrays[0]) ** 2)
    budget = committed[-1] / 2
    status, k, _, flops = _simplicial.lu_factor(C.indptr, C.indices, C.data, q, 0.1, 1e30, budget)
    assert status == _simplicial.OVER_BUDGET
    assert k == np.argmax(committed > budget) + 1 and flops < budget


@pytest.mark.parametrize("complex_", [False, True])
def test_solve_refined_against_backward_errors_and_dense(complex_):
    # A loose threshold lets L grow: the first solve's backward error is above the
    # tolerance and refinement brings it down; berr and growth are those of the answer.
    n = 80
    C = unsymmetric(n, 0.05, 11, complex_)
    q = np.random.default_rng(11).permutation(n).astype(np.int64)
    *_, arrays, _ = _simplicial.lu_factor(C.indptr, C.indices, C.data, q, 1e-3, 1e30)
    B = np.random.default_rng(1).standard_normal((n, 3)).astype(C.dtype)
    X0 = np.empty_like(B)
    _simplicial.lu_solve(*arrays, q, B, X0)
    berr0, _ = _simplicial.backward_errors(C.indptr, C.indices, C.data, X0, B)
    for steps in (0, 3):
        X = np.empty_like(B)
        berr, growth, taken = _simplicial.solve_refined(
            C.indptr, C.indices, C.data, *arrays, q, B, X, 1e-15, steps
        )
        assert ((taken >= 0) & (taken <= steps)).all()
        expected, norm_a = _simplicial.backward_errors(C.indptr, C.indices, C.data, X, B)
        assert np.allclose(berr, expected, rtol=1e-12, atol=0)
        assert np.allclose(growth, norm_a * abs(X).max(axis=0) / abs(B).max(axis=0))
        if steps == 0:
            assert np.array_equal(X, X0) and np.array_equal(berr, berr0)
            assert berr.max() > 1e-14  # refinement has work to do
            assert not taken.any()
        else:
            assert taken.max() >= 1  # the column above 1e-14 took a step
            assert (berr <= berr0).all() and berr.max() < 1e-14
            assert np.allclose(X, np.linalg.solve(C.toarray(), B), rtol=1e-10)


def test_lu_factor_prefers_the_diagonal_within_the_threshold():
    # Column 0 holds 1 on the diagonal and 5 below: threshold 0.1 keeps the diagonal,
    # partial pivoting (threshold 1) takes the 5.
    C = canonical_csc(sp.csc_array(np.array([[1.0, 1.0], [5.0, 1.0]])))
    q = np.arange(2, dtype=np.int64)
    for threshold, row in ((0.1, 0), (1.0, 1)):
        *_, arrays, _ = _simplicial.lu_factor(C.indptr, C.indices, C.data, q, threshold, 1e30)
        assert arrays[7][row] == 0  # that row was pivot 0


def test_lu_factor_prefers_the_sparse_row_within_the_threshold():
    # Column 0 holds 5 in row 0 (three entries) and 1 in row 2 (one entry): the sparse
    # rule takes row 2 while 1 >= threshold * 5, the largest (row 0) otherwise.
    A = np.array([[5.0, 1.0, 1.0], [0.0, 2.0, 1.0], [1.0, 0.0, 0.0]])
    C = canonical_csc(sp.csc_array(A))
    q = np.arange(3, dtype=np.int64)
    for threshold, row in ((0.1, 2), (0.5, 0)):
        *_, arrays, _ = _simplicial.lu_factor(
            C.indptr, C.indices, C.data, q, threshold, 1e30, rule=_simplicial.PREFER_SPARSE_ROW
        )
        assert arrays[7][row] == 0
    with pytest.raises(ValueError, match="rule"):
        _simplicial.lu_factor(C.indptr, C.indices, C.data, q, 0.1, 1e30, rule=7)


@pytest.mark.parametrize("complex_", [False, True])
def test_weak_diagonals_against_numpy(complex_):
    rng = np.random.default_rng(3)
    C = unsymmetric(60, 0.1, 3, complex_)
    C = canonical_csc(C + sp.diags_array(rng.uniform(0, 1, 60) * (rng.uniform(size=60) < 0.7)))
    D = np.abs(C.toarray())
    top, d = D.max(axis=0), np.diag(D)
    expected = int(np.sum(~((d > 0) & (d >= 0.1 * top))))
    assert 0 < expected < 60
    assert _simplicial.weak_diagonals(C.indptr, C.indices, C.data, 0.1) == expected


def test_weak_diagonal_takes_the_unsymmetric_strategy_first():
    # Nearly symmetric pattern, every diagonal entry a thousandth of its column: the
    # symmetric strategy's diagonal pivots cannot hold, AᵀA's ordering comes first.
    n = 200
    A = unsymmetric(n, 0.02, 5)
    A = sp.csc_array(A + A.T) + sp.random_array((n, n), density=0.002, rng=1)
    A = canonical_csc(A - sp.diags_array(A.diagonal()) + 1e-3 * sp.eye_array(n))
    assert simplicial._weak_diagonal(A)
    F = simplicial.factor(A)
    assert F is not None and F.strategy == "unsymmetric"


def test_lu_factor_reports_zero_pivot_and_budget():
    C = canonical_csc(sp.csc_array(np.array([[1.0, 2.0], [2.0, 4.0]])))
    q = np.arange(2, dtype=np.int64)
    status, k, arrays, _ = _simplicial.lu_factor(C.indptr, C.indices, C.data, q, 1.0, 1e30)
    assert status == _simplicial.ZERO_PIVOT and k == 1 and arrays is None
    C = canonical_csc(sp.csc_array(np.ones((30, 30)) + 30 * np.eye(30)))
    q = np.arange(30, dtype=np.int64)
    status, k, _, flops = _simplicial.lu_factor(C.indptr, C.indices, C.data, q, 0.1, 1000.0)
    assert status == _simplicial.OVER_BUDGET and 1000.0 < flops and k < 30


def test_lu_factor_counts_flops():
    # Dense n x n with diagonal pivots: column j is updated by the j columns before it,
    # each n - 1 - i long: flops = 2 Σ_i (n-1-i)² over i < n.
    n = 12
    C = canonical_csc(sp.csc_array(np.ones((n, n)) + n * np.eye(n)))
    q = np.arange(n, dtype=np.int64)
    *_, flops = _simplicial.lu_factor(C.indptr, C.indices, C.data, q, 0.1, 1e30)
    assert flops == 2 * sum((n - 1 - i) ** 2 for i in range(n))


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 60),
    density=st.floats(0.0, 0.4),
    symmetric=st.floats(0.0, 1.0),
    seed=st.integers(0, 10**6),
)
def test_transposed_pairs_counts_partnered_entries(n, density, symmetric, seed):
    """The pairs (i, j), (j, i) the strategy choice counts, against the pattern and its
    transpose intersected by scipy; a fraction of the entries mirrored, zeros stored."""
    rng = np.random.default_rng(seed)
    R = sp.random_array((n, n), density=density, rng=rng, format="csc")
    M = R + sp.triu(R, k=1).T.multiply(rng.random((n, n)) < symmetric)
    C = canonical_csc(sp.csc_array(M))
    C.data[rng.random(C.nnz) < 0.1] = 0.0  # stored zeros count as entries
    P = sp.csc_array((np.ones(C.nnz), C.indices, C.indptr), shape=(n, n))
    both = P.multiply(P.T)
    both.setdiag(0)
    expect = int(both.sum()) // 2
    assert transposed_pairs(n, C.indptr, C.indices) == expect


# ---------------------------------------------------------------------------- the path


def spy_on_path(monkeypatch):
    """Record each simplicial.solve_small's outcome (the path's x, or None)."""
    seen = []
    real = simplicial.solve_small

    def spy(*args, **kwargs):
        x = real(*args, **kwargs)
        seen.append(x is not None)
        return x

    monkeypatch.setattr(simplicial, "solve_small", spy)
    return seen


@pytest.mark.parametrize(
    "A",
    [
        laplacian((20, 20)),
        random_pattern(300, 0.01, 1),
        random_pattern(200, 0.02, 2, complex_=True),
        unsymmetric(150, 0.03, 3),
        unsymmetric(150, 0.03, 4, complex_=True),
        badly_scaled(150, 5),
    ],
    ids=["lap2d", "random", "complex", "pivoting", "complex-pivoting", "badly-scaled"],
)
def test_small_problems_take_the_path_and_meet_the_tolerance(A, monkeypatch):
    seen = spy_on_path(monkeypatch)
    b = np.arange(A.shape[0], dtype=np.float64) - 3
    x = pastixpy.spsolve(A, b)
    assert seen == [True]
    assert x.shape == b.shape and x.dtype == np.result_type(A.dtype, np.float64)
    assert backward_error(A, x, b).max() < 1e-12
    assert np.allclose(x, sla.spsolve(sp.csc_array(A), b), rtol=1e-8, atol=1e-10)


def test_path_keeps_spsolve_shapes_and_dtypes(monkeypatch):
    seen = spy_on_path(monkeypatch)
    A = random_pattern(50, 0.05, 5)
    for b in (
        np.ones(50),
        np.ones((50, 1)),
        np.ones((50, 3)),
        np.ones(50) + 2j * np.arange(50),  # complex b, real A: two real systems
        np.arange(50),  # integers
    ):
        x = pastixpy.spsolve(A, b)
        ref = sla.spsolve(A, b)
        assert x.shape == ref.shape and x.dtype == ref.dtype
        assert np.allclose(x, ref, rtol=1e-10)
    B = sp.csc_array(np.eye(50)[:, :4])
    X = pastixpy.spsolve(A, B)
    assert sp.issparse(X) and np.allclose(X.toarray(), np.linalg.inv(A.toarray())[:, :4])
    assert all(seen)


def test_options_and_precisions_take_the_pipeline(monkeypatch):
    seen = spy_on_path(monkeypatch)
    A = laplacian((10, 10))
    b = np.ones(100)
    pastixpy.spsolve(A, b, kind="llt")
    pastixpy.spsolve(A, b, threads=1)
    pastixpy.spsolve(A, b, precision="mixed")
    pastixpy.spsolve(A.astype(np.float32), b.astype(np.float32))
    pastixpy.spsolve(A, b, ordering="metis")
    pastixpy.spsolve(A, b, analysis=pastixpy.analyze(A))
    assert seen == []
    pastixpy.spsolve(A, b, permc_spec="NATURAL")
    pastixpy.spsolve(A, b, ordering="amd")
    assert seen == [True, True]


def test_singular_matrices_go_to_the_pipeline(monkeypatch):
    seen = spy_on_path(monkeypatch)
    A = sp.csc_array(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.warns(sla.MatrixRankWarning):
        x = pastixpy.spsolve(A, np.array([1.0, 3.0]))
    assert np.isnan(x).all() and seen == [False]


def graph_laplacian(k):
    """D - W of a k x k grid: singular, its null space the constants."""
    A = sp.csc_array(laplacian((k, k)))
    A = A - sp.diags_array(np.asarray(A.sum(axis=1)).ravel())
    return canonical_csc(A)


def test_singular_matrices_and_b_outside_the_range_go_to_the_pipeline(monkeypatch):
    # Partial pivoting leaves a roundoff-sized last pivot on a singular matrix. For b in
    # the range the solution is one of many, certified by its backward error; for b
    # outside, x grows to 1e17 with a tiny backward error that says nothing: the path
    # hands over and the pipeline warns as scipy does.
    A = graph_laplacian(8)
    seen = spy_on_path(monkeypatch)
    consistent = A @ np.random.default_rng(0).standard_normal(64)
    x = pastixpy.spsolve(A, consistent)
    assert backward_error(A, x, consistent).max() < 1e-12
    with pytest.warns(sla.MatrixRankWarning, match="not in its range"):
        assert np.isnan(pastixpy.spsolve(A, np.ones(64))).all()
    assert seen == [True, False]


def test_over_budget_goes_to_the_pipeline_with_its_answer(monkeypatch):
    seen = spy_on_path(monkeypatch)
    monkeypatch.setattr(simplicial, "MAX_FLOPS", 10.0)
    A, b = laplacian((15, 15)), np.ones(225)
    x = pastixpy.spsolve(A, b)
    assert seen == [False]
    assert backward_error(A, x, b).max() < 1e-12


def test_saddle_point_tries_the_unsymmetric_strategy():
    # A zero block: diagonal pivots fail there and the symmetric strategy spends its
    # budget; AᵀA's ordering with partial pivoting factors it.
    A = canonical_csc(saddle_point((10, 10)))
    F = simplicial.factor(A)
    assert F is not None and F.strategy == "unsymmetric"
    b = np.ones(A.shape[0])
    assert backward_error(A, simplicial.solve_small(A, b), b).max() < 1e-12


def test_refinement_that_cannot_reach_the_tolerance_goes_to_the_pipeline(monkeypatch):
    # Condition about 1e15: the path's one solve and its steps stay above 1e-12 with
    # this kernel's pivots, or not; either way the answer given meets the tolerance.
    n = 40
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    A = sp.csc_array(Q @ np.diag(np.logspace(0, -15, n)) @ Q.T)
    b = A @ np.ones(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = pastixpy.spsolve(A, b)
    assert backward_error(A, x, b).max() < 1e-12


def test_size_limits_by_pattern(monkeypatch):
    # Past MAX_N only patterns the symmetric strategy does not take (mostly unmatched
    # entries, zeros on the diagonal) go the simplicial way.
    monkeypatch.setattr(simplicial, "MAX_N", 100)
    rng = np.random.default_rng(7)
    n = 300
    shift = sp.csc_array((np.ones(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    U = canonical_csc(sp.random_array((n, n), density=0.004, rng=rng) + 2 * shift)
    assert U.diagonal().min() == 0
    F = simplicial.factor(U)
    assert F is not None and F.strategy == "unsymmetric"
    b = np.ones(n)
    assert backward_error(U, simplicial.solve_small(U, b), b).max() < 1e-12
    assert simplicial.factor(canonical_csc(laplacian((15, 15)))) is None


@pytest.mark.parametrize("name", shared_params())
def test_shared_matrices_solve_to_the_tolerance(name):
    A = load_shared(name)
    if A.shape[0] > simplicial.MAX_N_UNSYMMETRIC:
        pytest.skip("past the simplicial path's size")
    C = canonical_csc(A)
    if C.dtype not in (np.float64, np.complex128):
        pytest.skip("single precision takes the pipeline")
    b = np.ones(C.shape[0], dtype=C.dtype)
    x = simplicial.solve_small(C, b)
    if x is not None:
        assert backward_error(C, x, b).max() <= 1e-12


@pytest.mark.parametrize("name", ["bayer10", "nnc1374"])
def test_badly_scaled_shared_matrices_take_the_path(name):
    """Their unscaled ‖A‖‖x‖/‖b‖ passes the growth limit (bayer10's entries span 15
    orders); the equilibrated one does not, and the path keeps them."""
    C = canonical_csc(load_shared(name))
    b = np.ones(C.shape[0])
    x = simplicial.solve_small(C, b)
    assert x is not None
    assert backward_error(C, x, b).max() <= 1e-12


# ---------------------------------------------------------------------------- fixed costs


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 80), density=st.floats(0.0, 0.4), seed=st.integers(0, 10**6))
def test_forecast_lower_bound_is_below_amds_forecast(n, density, seed):
    # The bound holds for any ordering; AMD's forecast is the measure the path decides by.
    C = canonical_csc(random_pattern(n, density, seed))
    xadj, adjncy = symmetric_pattern(C)
    _, forecast = amd_order(xadj, adjncy, n, with_flops=True)
    assert simplicial.forecast_lower_bound(adjncy.size / 2, n) <= forecast * (1 + 1e-12)


def test_graph_past_the_budget_is_not_ordered(monkeypatch):
    # A symmetric graph whose edges alone forecast more than the budget goes to the
    # pipeline before AMD runs (bcsstk16: the bound is 8e6, AMD's forecast 3e8).
    C = canonical_csc(laplacian((15, 15)))  # 2·420²/225 = 1568 flops at least

    def no_ordering(*args, **kwargs):
        raise AssertionError("ordered although the bound decides")

    monkeypatch.setattr(simplicial, "amd_order", no_ordering)
    monkeypatch.setattr(simplicial, "MAX_FLOPS", 1500.0)
    assert simplicial.factor(C) is None
    monkeypatch.setattr(simplicial, "MAX_FLOPS", 1e9)
    with pytest.raises(AssertionError, match="ordered although"):
        simplicial.factor(C)
    assert simplicial.factor(C, "natural") is not None  # no forecast: no bound either


def test_spsolve_tries_the_simplicial_lu_once(monkeypatch):
    # Where spsolve's own try fails, factorize's small path (the same LU) is not tried
    # again before the pipeline.
    calls = []
    real = simplicial.factor

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(simplicial, "factor", counted)
    monkeypatch.setattr(simplicial, "MAX_FLOPS", 10.0)
    monkeypatch.setattr(simplicial, "MAX_FLOPS_UNSYMMETRIC", 10.0)
    A = unsymmetric(150, 0.03, 3)
    b = np.ones(150)
    x = pastixpy.spsolve(A, b)
    assert len(calls) == 1
    assert backward_error(A, x, b).max() < 1e-12


@pytest.mark.parametrize("complex_", [False, True])
@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 60), density=st.floats(0.0, 0.3), seed=st.integers(0, 10**6))
def test_diagonal_nonzeros_counts_the_diagonal(complex_, n, density, seed):
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="csc")
    if complex_:
        A = A + 1j * sp.random_array((n, n), density=density, rng=rng, format="csc")
    A = A + sp.diags_array(rng.integers(0, 2, n).astype(float))  # some diagonal zeros
    C = canonical_csc(A)
    C.data[rng.random(C.nnz) < 0.2] = 0  # explicit zeros, kept in the pattern
    assert _simplicial.diagonal_nonzeros(C.indptr, C.indices, C.data) == np.count_nonzero(
        C.diagonal()
    )


def test_csc_view_reads_canonical_inputs_in_place():
    A = sp.csc_matrix(laplacian((6, 6)))
    V = csc_view(A)
    assert isinstance(V, CSCView) and V.shape == A.shape and V.nnz == A.nnz
    assert V.data is A.data or np.shares_memory(V.data, A.data)
    assert V.indptr.dtype == V.indices.dtype == np.int64
    C = canonical_csc(A)
    for got, want in zip((V.indptr, V.indices, V.data), (C.indptr, C.indices, C.data), strict=True):
        assert np.array_equal(got, want)
    T = V.tocsc()
    assert T.indices.dtype == np.int64 and abs(T - C).max() == 0
    assert csc_view(sp.csc_array(A) * 1j) is not None


def unsorted(A):
    A = sp.csc_matrix(A)
    A.indices[:2] = A.indices[1::-1].copy()
    A.data[:2] = A.data[1::-1].copy()
    A.has_sorted_indices = False
    return A


def duplicated(A):
    """A with its (0, n-1) entry's row repeated at the end of the last column."""
    indptr = np.r_[A.indptr[:-1], A.nnz + 1]
    return sp.csc_matrix((np.r_[A.data, 1.0], np.r_[A.indices, A.indices[-1]], indptr), A.shape)


@pytest.mark.parametrize(
    "make",
    [
        lambda A: sp.csr_matrix(A),
        lambda A: sp.csc_matrix(A).astype(np.float32),
        lambda A: sp.csc_matrix(A)[:, :-1],
        unsorted,
        lambda A: duplicated(A),
        lambda A: with_entry(A, "data", 3, np.nan),
        lambda A: with_entry(A, "indices", 3, 36),
        lambda A: with_entry(A, "indices", 3, -1),
        lambda A: with_entry(A, "indptr", 3, 0),
    ],
    ids=[
        "csr",
        "float32",
        "not-square",
        "unsorted",
        "duplicate",
        "nan",
        "row-36",
        "row-1",
        "indptr",
    ],
)
def test_csc_view_leaves_other_inputs_to_canonical_csc(make):
    A = canonical_csc(laplacian((6, 6)))
    assert csc_view(make(A)) is None


def with_entry(A, name, k, value):
    """A (36 x 36) with entry k of one of its arrays set to ``value``, unchecked."""
    A = sp.csc_matrix(A, copy=True)
    getattr(A, name)[k] = value
    return A


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 30),
    density=st.floats(0.0, 0.5),
    seed=st.integers(0, 10**6),
    spoil=st.sampled_from(["none", "swap", "repeat", "nan", "inf", "range"]),
)
def test_csc_view_accepts_exactly_what_canonical_csc_keeps(n, density, seed, spoil):
    """The one-pass check (``_graph.is_canonical_csc``) against canonical_csc: an input it
    accepts is canonical_csc's result bit for bit; one spoiled (rows swapped or repeated
    in a column, a NaN or Inf, a row out of range) is refused."""
    rng = np.random.default_rng(seed)
    A = sp.csc_matrix(sp.random_array((n, n), density=density, rng=rng) + sp.eye_array(n))
    counts = np.diff(A.indptr)
    col = int(np.argmax(counts))
    k = int(A.indptr[col])
    if spoil in ("swap", "repeat") and counts[col] < 2:
        spoil = "none"
    if spoil == "swap":
        A.indices[k], A.indices[k + 1] = A.indices[k + 1], A.indices[k]
    elif spoil == "repeat":
        A.indices[k + 1] = A.indices[k]
    elif spoil in ("nan", "inf"):
        A.data[k] = np.nan if spoil == "nan" else -np.inf
    elif spoil == "range":
        A.indices[k] = n
    V = csc_view(A)
    assert (V is None) == (spoil != "none")
    if V is not None:
        C = canonical_csc(A)
        for got, want in zip(
            (V.indptr, V.indices, V.data), (C.indptr, C.indices, C.data), strict=True
        ):
            assert np.array_equal(got, want)


def test_spsolve_reading_in_place_gives_the_same_bits_and_leaves_a_alone(monkeypatch):
    seen = spy_on_path(monkeypatch)
    A = sp.csc_matrix(unsymmetric(120, 0.04, 11))
    before = (A.data.copy(), A.indices.copy(), A.indptr.copy())
    b = np.arange(120.0)
    x_view = pastixpy.spsolve(A, b)
    x_copy = pastixpy.spsolve(sp.coo_matrix(A), b)  # through canonical_csc's copy
    assert seen == [True, True]
    assert np.array_equal(x_view, x_copy)
    after = (A.data, A.indices, A.indptr)
    assert all(np.array_equal(a, c) for a, c in zip(after, before, strict=True))


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 80), seed=st.integers(0, 10**6), complex_=st.booleans())
def test_lu_pivot_checks_match_their_definitions(n, seed, complex_):
    """``lu_checks``, which factorize's small path reads: the largest magnitude in U and
    the least |u_kk| over the largest entry of column q[k] of A, against numpy."""
    C = unsymmetric(n, 0.1, seed, complex_)
    F = simplicial.factor(C)
    assume(F is not None)
    Ux, udiag = F.arrays[5], F.arrays[6]
    top = max(np.abs(Ux).max(initial=0.0), np.abs(udiag).max())
    colmax = np.abs(C.toarray()).max(axis=0)[F.q]
    got_top, got_smallest = F.pivot_checks(C)
    assert got_top == pytest.approx(top, rel=1e-12)
    assert got_smallest == pytest.approx((np.abs(udiag) / colmax).min(), rel=1e-12)


def test_rough_equilibration_clears_growth_as_the_full_one():
    """equilibrated_growth with a limit tries a rough equilibration first: it returns
    that one's growths where all are within the limit (any scaling that measures within
    it proves nothing singular), the full equilibration's otherwise."""
    from pastixpy.preprocess import equilibrate
    from pastixpy.solve_policy import ROUGH_EQUILIBRATION, equilibrated_growth

    C = badly_scaled(120, 7)
    F = simplicial.factor(C)
    B = np.random.default_rng(8).standard_normal((120, 3))
    x = F.refined_solve(C, B, 1e-12, 3)[0]
    full = equilibrated_growth(C, x, B)
    rough_scaling = equilibrate(C, symmetric=False, iterations=ROUGH_EQUILIBRATION)
    rough = equilibrated_growth(C, x, B, rough_scaling)
    assert not np.allclose(rough, full)  # the two scalings differ
    limit = 10 * rough.max()
    np.testing.assert_array_equal(equilibrated_growth(C, x, B, limit=limit), rough)
    np.testing.assert_array_equal(equilibrated_growth(C, x, B, limit=rough.min() / 2), full)
    # The unscaled growth is far past what either scaling measures: bad scaling alone.
    unscaled = np.abs(C).sum(axis=1).max() * np.abs(x).max(axis=0) / np.abs(B).max(axis=0)
    assert (unscaled > 1e6 * full).all()


# ---------------------------------------------------------------------------- spsolve's LDLᵀ


def _spd(n, seed, hermitian=False):
    """A random sparse Hermitian (real: symmetric) positive definite matrix."""
    rng = np.random.default_rng(seed)
    S = sp.random_array((n, n), density=min(1.0, 6.0 / n), rng=rng)
    if hermitian:
        S = S + 1j * sp.random_array((n, n), density=min(1.0, 6.0 / n), rng=rng)
    S = S + S.conj().T
    return canonical_csc(S + sp.diags_array(np.asarray(abs(S).sum(axis=1)).ravel() + 1.0))


@pytest.fixture
def ldl_always():
    """spsolve's LDLᵀ whatever the flops (LDL_MIN_FLOPS 0), for small test matrices."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(simplicial, "LDL_MIN_FLOPS", 0.0)
        yield


@pytest.mark.parametrize("hermitian", [False, True])
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(n=st.integers(2, 60), seed=st.integers(0, 10**6))
def test_spsolve_factors_symmetric_values_as_ldl(ldl_always, hermitian, n, seed):
    """Exactly symmetric (Hermitian) values past LDL_MIN_FLOPS: spsolve's factors are the
    LDLᵀ (LDLᴴ) in the symmetric strategy's ordering, its answers LAPACK's. (The fixture
    only sets a module constant, the same for every example.)"""
    A = _spd(n, seed, hermitian)
    F = simplicial.factor(A, ldl=True)
    assert isinstance(F, simplicial.SimplicialLDL) and F.hermitian == hermitian
    assert isinstance(simplicial.factor(A), simplicial.SimplicialLU)  # factorize's call
    rng = np.random.default_rng(seed + 1)
    b = rng.standard_normal((n, 2)) + 1j * rng.standard_normal((n, 2))
    x = pastixpy.spsolve(A, b)
    M = A.toarray()
    y = np.linalg.solve(M, b)
    assert backward_error(A, x, b).max() <= 1e-14
    assert np.abs(x - y).max() <= 1e-13 * np.linalg.cond(M) * np.abs(y).max()


def test_spsolve_keeps_lu_below_the_ldl_flops_and_for_unsymmetric_values(monkeypatch):
    A = _spd(40, 3)
    assert isinstance(simplicial.factor(A, ldl=True), simplicial.SimplicialLU)  # too small
    monkeypatch.setattr(simplicial, "LDL_MIN_FLOPS", 0.0)
    B = A.copy()
    B.data[np.flatnonzero(B.indices != np.repeat(np.arange(40), np.diff(B.indptr)))[0]] += 1e-9
    assert simplicial.exact_symmetry(B) is None  # one entry off: not exactly symmetric
    assert isinstance(simplicial.factor(B, ldl=True), simplicial.SimplicialLU)


def test_spsolve_keeps_lu_where_definiteness_is_unlikely(monkeypatch):
    """Complex symmetric values (indefinite Helmholtz-like ones grow without pivots)
    and a diagonal entry that is not positive: LU, without an LDLᵀ tried first."""
    monkeypatch.setattr(simplicial, "LDL_MIN_FLOPS", 0.0)
    tried = []
    ldl_ordered = simplicial.ldl_ordered
    monkeypatch.setattr(simplicial, "ldl_ordered", lambda *a: tried.append(1) or ldl_ordered(*a))
    A = _spd(30, 4)
    complex_symmetric = canonical_csc(A * (1 + 0.5j))  # Aᵀ = A, Aᴴ ≠ A
    assert simplicial.exact_symmetry(complex_symmetric) == (
        False,
        np.abs(A.data).max() * abs(1 + 0.5j),
    )
    negative = A.copy()
    negative.data[negative.indices == np.repeat(np.arange(30), np.diff(negative.indptr))] *= -1
    for C in (complex_symmetric, negative):
        assert isinstance(simplicial.factor(C, ldl=True), simplicial.SimplicialLU)
    assert not tried
    assert isinstance(simplicial.factor(A, ldl=True), simplicial.SimplicialLDL) and tried


def test_spsolve_takes_lu_where_the_ldl_grew(monkeypatch):
    """Without pivots an indefinite LDLᵀ may grow: past LDL_MAX_GROWTH, LU's partial
    pivoting; where the growth is allowed but refinement cannot certify the LDLᵀ's
    answer, spsolve solves again with LU (never the pipeline for that)."""
    monkeypatch.setattr(simplicial, "LDL_MIN_FLOPS", 0.0)
    # 2x2 blocks [[δ, 1], [1, 1]]: the pivot δ without pivoting grows D to 1/δ.
    n, delta = 40, 1e-13
    block = sp.csc_array(np.array([[delta, 1.0], [1.0, 1.0]]))
    A = sp.kron(sp.eye_array(n // 2), block) + sp.eye_array(n, k=2) + sp.eye_array(n, k=-2)
    A = canonical_csc(A)
    assert isinstance(simplicial.factor(A, ldl=True), simplicial.SimplicialLU)
    monkeypatch.setattr(simplicial, "LDL_MAX_GROWTH", np.inf)
    assert isinstance(simplicial.factor(A, ldl=True), simplicial.SimplicialLDL)
    # An LDLᵀ whose answer is not certified (as one that grew past what refinement
    # recovers): LU next, not the pipeline.
    certified = simplicial._certified
    monkeypatch.setattr(
        simplicial,
        "_certified",
        lambda C, F, b: None if isinstance(F, simplicial.SimplicialLDL) else certified(C, F, b),
    )
    tried = []
    factor = simplicial.factor
    monkeypatch.setattr(simplicial, "factor", lambda *a, **k: tried.append(k) or factor(*a, **k))
    pipeline = []
    monkeypatch.setattr(pastixpy.Factorization, "from_matrix", lambda *a, **k: pipeline.append(1))
    b = np.arange(1.0, n + 1.0)
    x = pastixpy.spsolve(A, b)
    assert tried == [{"ldl": True}, {}] and not pipeline  # LDLᵀ, then LU; no pipeline
    assert backward_error(A, x, b).max() <= 1e-14
