"""Tests of the maximum-product matching kernel ``pastixpy._matching`` and MC64 scaling."""

import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import maximum_bipartite_matching, min_weight_full_bipartite_matching

from pastixpy._matching import max_product_matching
from pastixpy._symbolic import diagonal_positions, stored_diagonal
from pastixpy.errors import SingularMatrixError
from pastixpy.kinds import KINDS
from pastixpy.preprocess import (
    Preprocessing,
    binary_diagonal_scaling,
    check_structural_rank,
    matching_scaling,
    preprocess,
)
from pastixpy.preprocess import max_product_matching as prep_matching

from conftest import load_shared

# ---------------------------------------------------------------- helpers


def canonical(A):
    A = sp.csc_array(A, copy=True)
    A.sum_duplicates()
    A.indptr = A.indptr.astype(np.int64)
    A.indices = A.indices.astype(np.int64)
    return A


def match(A, **kw):
    A = canonical(A)
    return max_product_matching(A.indptr, A.indices, A.data, A.shape[0], **kw)


def column_of_entries(A):
    return np.repeat(np.arange(A.shape[1]), np.diff(A.indptr))


def costs(A):
    """c_ij = log(colmax_j) - log|a_ij| of the nonzero entries, with their rows and columns."""
    A = canonical(A)
    A.eliminate_zeros()
    mag = np.abs(A.data)
    cols = column_of_entries(A)
    colmax = np.zeros(A.shape[1])
    np.maximum.at(colmax, cols, mag)
    logcolmax = np.log(colmax, out=np.zeros_like(colmax), where=colmax > 0)
    return logcolmax[cols] - np.log(mag), A.indices, cols, logcolmax


def log_product(A, row_of_col):
    """sum_j log|a_{row_of_col[j], j}|; -inf when a matched entry is zero."""
    n = A.shape[0]
    vals = np.abs(sp.csc_array(A)[row_of_col, np.arange(n)])
    with np.errstate(divide="ignore"):
        return float(np.log(vals).sum())


def scipy_optimum(A):
    """max sum log|a_{r(j) j}| by scipy (int32 indices: 1.17 is wrong with int64)."""
    c, _, _, _ = costs(A)
    C = canonical(A)
    C.eliminate_zeros()
    C.data = c + 1.0  # scipy needs nonzero weights; +1 per column shifts every matching alike
    C.indices = C.indices.astype(np.int32)
    C.indptr = C.indptr.astype(np.int32)
    rows, cols = min_weight_full_bipartite_matching(C)
    row_of_col = np.empty(A.shape[0], dtype=np.int64)
    row_of_col[cols] = rows
    return log_product(A, row_of_col)


def assert_perfect(row_of_col, n):
    assert row_of_col.dtype == np.int64
    np.testing.assert_array_equal(np.sort(row_of_col), np.arange(n))


def assert_duals(A, row_of_col, u, v, rtol=1e-12):
    """c_ij - u_i - v_j >= 0 on nonzero entries, == 0 on matched ones (an optimality proof)."""
    c, rows, cols, _ = costs(A)
    red = c - u[rows] - v[cols]
    tol = rtol * (1.0 + np.abs(c).max(initial=0) + np.abs(u).max() + np.abs(v).max())
    assert red.min(initial=0) >= -tol
    matched = row_of_col[cols] == rows
    assert matched.sum() == A.shape[0]
    assert np.abs(red[matched]).max() <= tol


def assert_scaled(A, row_of_col, u, v, tol=1e-12):
    """dr = exp(u), dc = exp(v) / colmax: matched |entries| 1, all at most 1."""
    A = canonical(A)
    logcolmax = costs(A)[3]
    cols = column_of_entries(A)
    dr = np.exp(u)
    dc = np.exp(v - logcolmax)
    S = np.abs(A.data) * dr[A.indices] * dc[cols]
    assert S.max() <= 1 + tol
    matched = row_of_col[cols] == A.indices
    matched &= A.data != 0
    np.testing.assert_allclose(S[matched], 1.0, rtol=0, atol=tol)


def assert_optimal(A, row_of_col, u, v):
    n = A.shape[0]
    assert_perfect(row_of_col, n)
    ours = log_product(A, row_of_col)
    ref = scipy_optimum(A)
    assert abs(ours - ref) <= 1e-10 * max(1.0, abs(ref))
    assert_duals(A, row_of_col, u, v)
    assert_scaled(A, row_of_col, u, v)


def random_matrix(n, density, decades, seed, complex_=False):
    """Random pattern plus a random permutation (so a perfect matching exists); values with
    random signs and magnitudes spanning 2 * decades decades, rows and columns scaled too."""
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="coo")
    perm = rng.permutation(n)
    rows = np.concatenate([A.row, perm])
    cols = np.concatenate([A.col, np.arange(n)])
    mag = 10.0 ** rng.uniform(-decades, decades, rows.size)
    vals = mag * rng.choice([-1.0, 1.0], rows.size)
    if complex_:
        vals = vals * np.exp(2j * np.pi * rng.random(rows.size))
    A = sp.csc_array((vals, (rows, cols)), shape=(n, n))
    A.sum_duplicates()
    A.data[A.data == 0] = 1.0  # a sum of duplicates may cancel
    d = 10.0 ** rng.uniform(-decades / 2, decades / 2, (2, n))
    return canonical(sp.diags_array(d[0]) @ A @ sp.diags_array(d[1]))


# ---------------------------------------------------------------- random matrices


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 60),
    density=st.floats(0.0, 0.5),
    decades=st.sampled_from([0, 1, 5, 20, 70]),
    seed=st.integers(0, 2**31 - 1),
)
def test_random_optimal(n, density, decades, seed):
    A = random_matrix(n, density, decades, seed)
    row_of_col, u, v = match(A)
    assert_optimal(A, row_of_col, u, v)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 40), density=st.floats(0.0, 0.4), seed=st.integers(0, 2**31 - 1))
def test_random_with_explicit_zeros(n, density, seed):
    """Explicit zeros are not edges: the matching avoids them and is optimal without them."""
    A = random_matrix(n, density, 5, seed)
    rng = np.random.default_rng(seed + 1)
    Z = sp.random_array((n, n), density=0.3, rng=rng, format="csc")
    Z.data[:] = 0.0
    B = canonical(A + Z)
    B.data[rng.random(B.nnz) < 0.2] = 0.0  # zeros may also replace entries of A
    nonzero = canonical(B)
    nonzero.eliminate_zeros()
    if maximum_bipartite_matching(sp.csr_array(nonzero)).min(initial=0) < 0:
        with pytest.raises(ValueError, match="structurally singular"):
            match(B)
        row_of_col, _, _ = match(B, use_zeros=True)
        assert_perfect(row_of_col, n)
        return
    row_of_col, u, v = match(B)
    assert np.all(np.abs(B[row_of_col, np.arange(n)]) > 0)
    assert_optimal(B, row_of_col, u, v)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 30), density=st.floats(0.05, 0.5), seed=st.integers(0, 2**31 - 1))
def test_complex_values(n, density, seed):
    A = random_matrix(n, density, 5, seed, complex_=True)
    row_of_col, u, v = match(A)
    assert_optimal(A, row_of_col, u, v)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 25), decades=st.sampled_from([0, 3, 30]), seed=st.integers(0, 2**31 - 1))
def test_dense_against_linear_sum_assignment(n, decades, seed):
    """A dense block, checked against an independent (dense Hungarian) solver."""
    rng = np.random.default_rng(seed)
    D = 10.0 ** rng.uniform(-decades, decades, (n, n)) * rng.choice([-1, 1], (n, n))
    row_of_col, u, v = match(sp.csc_array(D))
    logs = np.log(np.abs(D))
    r, c = linear_sum_assignment(-logs)
    ref = logs[r, c].sum()
    ours = logs[row_of_col, np.arange(n)].sum()
    assert abs(ours - ref) <= 1e-10 * max(1.0, abs(ref))
    assert_optimal(sp.csc_array(D), row_of_col, u, v)


# ---------------------------------------------------------------- special structures


def test_n1():
    row_of_col, u, v = match(sp.csc_array(np.array([[-3e-50]])))
    np.testing.assert_array_equal(row_of_col, [0])
    assert u[0] + v[0] == 0.0
    assert_scaled(sp.csc_array(np.array([[-3e-50]])), row_of_col, u, v)


def test_empty():
    row_of_col, u, v = max_product_matching(np.zeros(1, np.int64), np.zeros(0, np.int64), [], 0)
    assert row_of_col.shape == u.shape == v.shape == (0,)


@pytest.mark.parametrize("n", [1, 2, 17, 200])
def test_diagonal(n):
    rng = np.random.default_rng(n)
    A = sp.diags_array(10.0 ** rng.uniform(-60, 60, n) * rng.choice([-1, 1], n)).tocsc()
    row_of_col, u, v = match(A)
    np.testing.assert_array_equal(row_of_col, np.arange(n))
    assert_duals(A, row_of_col, u, v)
    assert_scaled(A, row_of_col, u, v)


@pytest.mark.parametrize("seed", range(5))
def test_permutation_matrix(seed):
    rng = np.random.default_rng(seed)
    n = 50
    perm = rng.permutation(n)
    A = sp.csc_array((10.0 ** rng.uniform(-20, 20, n), (perm, np.arange(n))), shape=(n, n))
    row_of_col, u, v = match(A)
    np.testing.assert_array_equal(row_of_col, perm)
    assert_duals(A, row_of_col, u, v)
    assert_scaled(A, row_of_col, u, v)


def test_dense_blocks():
    """Block diagonal of dense blocks with an arrow coupling: optimal within each block."""
    rng = np.random.default_rng(7)
    blocks = [10.0 ** rng.uniform(-8, 8, (k, k)) for k in (1, 5, 12, 30)]
    A = sp.block_diag(blocks, format="csc")
    n = A.shape[0]
    A = canonical(
        A + sp.csc_array((np.full(n, 1e-3), (np.zeros(n, int), np.arange(n))), shape=(n, n))
    )
    row_of_col, u, v = match(A)
    assert_optimal(A, row_of_col, u, v)


def test_ties_and_equal_values():
    """All-equal magnitudes: every perfect matching is optimal; reduced costs all zero."""
    A = sp.csc_array(np.ones((8, 8)))
    row_of_col, u, v = match(A)
    assert_perfect(row_of_col, 8)
    assert_duals(A, row_of_col, u, v)
    assert_scaled(A, row_of_col, u, v)


def test_int32_inputs_and_unsorted_rows():
    A = random_matrix(30, 0.2, 5, 3)
    ref = match(A)
    rng = np.random.default_rng(0)
    indices = A.indices.copy()
    data = A.data.copy()
    for j in range(30):  # shuffle the rows of each column
        s = slice(A.indptr[j], A.indptr[j + 1])
        p = rng.permutation(A.indptr[j + 1] - A.indptr[j])
        indices[s] = indices[s][p]
        data[s] = data[s][p]
    out = max_product_matching(A.indptr.astype(np.int32), indices.astype(np.int32), data, 30)
    assert abs(log_product(A, out[0]) - log_product(A, ref[0])) <= 1e-10 * abs(
        log_product(A, ref[0])
    )
    assert_duals(A, *out)


# ---------------------------------------------------------------- singular and invalid input


def structural_deficiency(A):
    A = canonical(A)
    A.eliminate_zeros()
    return int((maximum_bipartite_matching(sp.csr_array(A), perm_type="row") < 0).sum())


@pytest.mark.parametrize(
    "dense, unmatched",
    [
        (np.zeros((1, 1)), 1),
        (np.zeros((3, 3)), 3),
        (np.array([[1.0, 2.0], [0.0, 0.0]]), 1),  # empty row
        (np.array([[1.0, 0.0], [2.0, 0.0]]), 1),  # empty column
        # Hall violation: columns 0..2 only reach rows 0..1
        (np.array([[1.0, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 1], [0, 0, 0, 1]]), 1),
    ],
)
def test_singular_raises(dense, unmatched):
    n = dense.shape[0]
    with pytest.raises(ValueError, match=f"{unmatched} of {n} columns"):
        match(sp.csc_array(dense))


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 60), density=st.floats(0.0, 0.15), seed=st.integers(0, 2**31 - 1))
def test_random_singular(n, density, seed):
    """Without the added permutation many are singular: the count of unmatched columns is
    n - structural rank; otherwise the matching is optimal."""
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="csc")
    A.data = 10.0 ** rng.uniform(-10, 10, A.nnz)
    A = canonical(A)
    deficiency = structural_deficiency(A)
    if deficiency:
        with pytest.raises(ValueError, match=f" {deficiency} of {n} columns"):
            match(A)
    else:
        assert_optimal(A, *match(A))


def test_zeros_only_as_last_resort():
    """Nonsingular only through explicit zeros: use_zeros takes as few as possible."""
    # Row 1 holds only zeros. Matching it to column 1 leaves 5 * 1e-9 for the others,
    # to column 0 only 1 * 1e-9.
    rows = [0, 1, 2, 0, 1, 2]
    cols = [0, 0, 0, 1, 1, 2]
    A = canonical(sp.csc_array(([5.0, 0.0, 2.0, 1.0, 0.0, 1e-9], (rows, cols)), shape=(3, 3)))
    with pytest.raises(ValueError, match="1 of 3 columns"):
        match(A)
    row_of_col, _, _ = match(A, use_zeros=True)
    np.testing.assert_array_equal(row_of_col, [0, 1, 2])


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(1, 12),
    density=st.floats(0.2, 0.8),
    zeros=st.floats(0.0, 0.7),
    seed=st.integers(0, 2**31 - 1),
)
def test_use_zeros_fewest(n, density, zeros, seed):
    """use_zeros: the fewest zero entries, then the largest product of the others."""
    rng = np.random.default_rng(seed)
    pattern = (rng.random((n, n)) < density) | np.eye(n, dtype=bool)[rng.permutation(n)]
    values = 10.0 ** rng.uniform(-5, 5, (n, n)) * (rng.random((n, n)) >= zeros)
    rows, cols = np.nonzero(pattern)
    A = canonical(sp.csc_array((values[rows, cols], (rows, cols)), shape=(n, n)))
    row_of_col, _, _ = match(A, use_zeros=True)
    assert_perfect(row_of_col, n)
    matched = values[row_of_col, np.arange(n)]
    # Reference (dense Hungarian): zero entries cost more than any zero-free assignment.
    with np.errstate(divide="ignore"):
        logs = np.log(values)
    big = n * (np.nanmax(np.where(values > 0, -logs, np.nan), initial=0) + 20) + 1
    cost = np.where(pattern, np.where(values > 0, -logs, big), np.inf)
    r, c = linear_sum_assignment(cost)
    assert (matched == 0).sum() == (values[r, c] == 0).sum()
    ref = np.log(values[r, c][values[r, c] > 0]).sum()
    assert abs(np.log(matched[matched > 0]).sum() - ref) <= 1e-9 * max(1.0, abs(ref))


@pytest.mark.parametrize(
    "args, what",
    [
        (([0, 1], [0], [1.0], 2), "indptr must have length"),
        (([0, 2], [0], [1.0, 1.0], 1), "fit in indices"),
        (([1, 1], [0], [1.0], 1), "start at 0"),
        (([0, 1], [1], [1.0], 1), "out of range"),
        (([0, 1], [-1], [1.0], 1), "out of range"),
        (([0, 1], [0], [np.nan], 1), "finite"),
        (([0, 1], [0], [np.inf], 1), "finite"),
        (([0, 2], [0, 0], [1.0], 1), "data must hold"),
        (([0], [], [], -1), "non-negative"),
    ],
)
def test_invalid_input(args, what):
    with pytest.raises(ValueError, match=what):
        max_product_matching(*args)


# ---------------------------------------------------------------- preprocess integration


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 40), density=st.floats(0.0, 0.4), seed=st.integers(0, 2**31 - 1))
def test_matching_scaling(n, density, seed):
    A = random_matrix(n, density, 20, seed)
    row_perm, dr, dc = matching_scaling(A)
    np.testing.assert_array_equal(row_perm, prep_matching(A))
    B = abs(sp.diags_array(dr) @ A[row_perm] @ sp.diags_array(dc))
    np.testing.assert_allclose(B.diagonal(), 1.0, rtol=0, atol=1e-12)
    assert B.max() <= 1 + 1e-12
    P = preprocess(A, KINDS["lu"])
    np.testing.assert_array_equal(P.row_perm, row_perm)
    np.testing.assert_allclose(np.abs(P.apply(A).diagonal()), 1.0, rtol=0, atol=1e-12)


def reference_apply(P, A):
    """B = diag(dr) A[row_perm] diag(dc) by numpy passes (Preprocessing.apply as it was
    before its one-pass kernel): the values rounded once, to A's dtype, at the end."""
    indices = A.indices.astype(np.int64)
    if P.row_perm is not None:
        new_row = np.empty(A.shape[0], dtype=np.int64)
        new_row[P.row_perm] = np.arange(A.shape[0], dtype=np.int64)
        indices = new_row[indices]
    cols = np.repeat(np.arange(A.shape[1], dtype=np.int64), np.diff(A.indptr))
    data = ((A.data * P.dr[indices]) * P.dc[cols]).astype(A.dtype, copy=False)
    B = sp.csc_array((data, indices, A.indptr.astype(np.int64)), shape=A.shape)
    if P.row_perm is not None:
        B.has_sorted_indices = False
        B.sort_indices()
    return B


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 30),
    density=st.floats(0.0, 0.5),
    seed=st.integers(0, 2**31 - 1),
    dtype=st.sampled_from([np.float32, np.float64, np.complex64, np.complex128]),
    permuted=st.booleans(),
)
def test_apply_matches_its_numpy_reference(n, density, seed, dtype, permuted):
    """Preprocessing.apply's values to the bit, signed zeros and factors far from 1
    included, its pattern and its canonical flag."""
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="csc") + sp.eye_array(n)
    if np.dtype(dtype).kind == "c":
        A = A + 1j * sp.random_array((n, n), density=density, rng=rng, format="csc")
    A = canonical(sp.csc_array(A).astype(dtype))
    signs = rng.choice([-1.0, 1.0], A.nnz)
    zero = rng.random(A.nnz) < 0.2  # stored zeros of either sign
    A.data = (np.where(zero, 0.0, A.data * signs) * np.where(zero, signs, 1.0)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        A.data.imag[rng.random(A.nnz) < 0.3] *= -0.0
    dr = 2.0 ** rng.integers(-30, 30, n) * rng.uniform(0.5, 2, n)
    dc = 2.0 ** rng.integers(-30, 30, n) * rng.uniform(0.5, 2, n)
    P = Preprocessing(rng.permutation(n) if permuted else None, dr, dc)
    B, ref = P.apply(A), reference_apply(P, A)
    assert B.dtype == ref.dtype and B.has_canonical_format
    assert B.indices.dtype == B.indptr.dtype == np.int64
    np.testing.assert_array_equal(B.indptr, ref.indptr)
    np.testing.assert_array_equal(B.indices, ref.indices)
    assert B.data.tobytes() == ref.data.tobytes()


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 30), density=st.floats(0.0, 0.5), seed=st.integers(0, 2**31 - 1))
def test_stored_diagonal_and_the_structural_rank_check(n, density, seed):
    """The kernel's count of stored diagonal entries (zeros among them) against numpy's,
    and check_structural_rank against scipy's maximum matching."""
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="csc")
    keep = rng.random(n) < 0.8
    A = canonical(A + sp.diags_array(np.where(keep, rng.choice([0.0, 1.0], n), 0.0)))
    # diags_array keeps its stored zeros, the sum may not: store the kept ones again.
    D = sp.csc_array((np.zeros(keep.sum()), (np.flatnonzero(keep), np.flatnonzero(keep))), (n, n))
    A = canonical(A + D)
    cols = np.repeat(np.arange(n), np.diff(A.indptr))
    assert stored_diagonal(A.indptr, A.indices) == np.count_nonzero(A.indices == cols)
    at = np.full(n, -1)
    at[cols[A.indices == cols]] = np.flatnonzero(A.indices == cols)
    np.testing.assert_array_equal(diagonal_positions(A.indptr, A.indices), at)
    A.has_canonical_format = True
    np.testing.assert_array_equal(binary_diagonal_scaling(A), binary_diagonal_scaling(A.tocoo()))
    rank = np.count_nonzero(maximum_bipartite_matching(sp.csr_array(A), perm_type="row") >= 0)
    if rank == n:
        check_structural_rank(A)
    else:
        with pytest.raises(SingularMatrixError, match="structurally singular"):
            check_structural_rank(A)


def test_preprocess_zero_fallback():
    """Only explicit zeros complete the matching: still a permutation, Ruiz scaling only."""
    A = canonical(sp.csc_array((np.array([0.0, 2.0, 3.0]), ([0, 0, 1], [0, 1, 1])), shape=(2, 2)))
    row_perm = prep_matching(A)
    np.testing.assert_array_equal(row_perm, [0, 1])
    _, dr, dc = matching_scaling(A)
    np.testing.assert_array_equal(dr, 1.0)
    np.testing.assert_array_equal(dc, 1.0)
    P = preprocess(A, KINDS["lu"])
    np.testing.assert_array_equal(P.row_perm, [0, 1])
    assert np.all(np.isfinite(P.dr)) and np.all(np.isfinite(P.dc))


# ---------------------------------------------------------------- the shared real matrices

SHARED = ["bayer10", "west0479", "bp_1200", "nnc1374", "mahindas"]


@pytest.mark.parametrize("name", SHARED)
def test_shared_matrices(name):
    A = canonical(load_shared(name))
    n = A.shape[0]
    t0 = time.perf_counter()
    row_of_col, u, v = match(A)
    seconds = time.perf_counter() - t0
    assert seconds < 10  # 15 ms here for bayer10 (scipy: minutes); a loose regression guard
    assert_perfect(row_of_col, n)
    assert np.all(A[row_of_col, np.arange(n)] != 0)
    # The duals prove optimality (weak LP duality) even where scipy is too slow to compare.
    assert_duals(A, row_of_col, u, v, rtol=1e-13)
    assert_scaled(A, row_of_col, u, v, tol=1e-12)
    if name != "bayer10":  # scipy needs minutes on bayer10
        ours = log_product(A, row_of_col)
        ref = scipy_optimum(A)
        assert abs(ours - ref) <= 1e-10 * max(1.0, abs(ref))
    P = preprocess(A, KINDS["lu"])
    B = abs(P.apply(A))
    np.testing.assert_allclose(B.diagonal(), 1.0, rtol=0, atol=1e-12)
    assert B.max() <= 1 + 1e-12


# ---------------------------------------------------------------------------- structural rank


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(0, 50),
    density=st.floats(0.0, 0.3),
    diagonal=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_maximum_matching_size_is_the_structural_rank(n, density, diagonal, seed):
    """MC21 against scipy's Hopcroft-Karp, on patterns from empty to nearly full rank."""
    from scipy.sparse.csgraph import structural_rank

    from pastixpy._matching import maximum_matching_size

    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="csc")
    A = sp.csc_array(A + sp.diags_array((rng.random(n) < diagonal).astype(float)))
    expect = structural_rank(sp.csr_matrix(A)) if n else 0
    assert maximum_matching_size(A.indptr, A.indices, n) == expect
    # Column order changes the searches, not the size.
    order = rng.permutation(n)
    B = sp.csc_array(A[:, order])
    assert maximum_matching_size(B.indptr, B.indices, n) == expect


def test_maximum_matching_size_checks_its_input():
    from pastixpy._matching import maximum_matching_size

    with pytest.raises(ValueError, match="length n"):
        maximum_matching_size(np.array([0, 1]), np.array([0]), 2)
    with pytest.raises(ValueError, match="out of range"):
        maximum_matching_size(np.array([0, 1, 2]), np.array([0, 2]), 2)
    assert maximum_matching_size(np.array([0]), np.array([], dtype=np.int64), 0) == 0


# ------------------------------------------------- rectangular: every column matched to a row


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 40),
    frac=st.floats(0.05, 1.0),
    density=st.floats(0.05, 0.6),
    decades=st.integers(0, 6),
    seed=st.integers(0, 10**6),
)
def test_column_matching_is_maximum_and_optimal(m, frac, density, decades, seed):
    """As many columns as a maximum matching has; the largest product of |entries| (against
    scipy's LAPJVsp) when all columns can be matched; rows never reused, no zero used."""
    from pastixpy._matching import max_product_column_matching

    rng = np.random.default_rng(seed)
    n = max(1, int(frac * m))
    A = sp.random_array((m, n), density=density, rng=rng, format="csc")
    A.data = A.data * 10.0 ** rng.uniform(-decades, decades, A.nnz)
    D = A.toarray()
    rows = max_product_column_matching(A.indptr, A.indices, A.data, m, n)
    size = int((maximum_bipartite_matching(sp.csr_array(A.T), perm_type="column") >= 0).sum())
    got = np.flatnonzero(rows >= 0)
    assert got.size == size
    assert np.unique(rows[got]).size == got.size and np.all(D[rows[got], got] != 0)
    if size == n:
        T = sp.csr_array(A.T)
        cost = T.copy()
        cost.data = 1.0 + np.log(T.data.max()) - np.log(T.data)
        r, c = min_weight_full_bipartite_matching(cost)
        best = np.log(np.abs(D[c, r])).sum()
        assert np.log(np.abs(D[rows, np.arange(n)])).sum() == pytest.approx(best, abs=1e-9)


def test_column_matching_rejects_more_columns_than_rows():
    from pastixpy._matching import max_product_column_matching

    A = sp.random_array((3, 5), density=0.5, rng=0, format="csc")
    with pytest.raises(ValueError, match="m >= n"):
        max_product_column_matching(A.indptr, A.indices, A.data, 3, 5)
