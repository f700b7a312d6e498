"""Tests of the column ordering ``pastixpy._colamd.colamd_order`` (COLAMD's method):
a valid permutation on any pattern, the columns it sets aside at the end, the fill of
AᵀA's Cholesky factor against an independent elimination and against AMD on AᵀA's
graph, and its errors."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from pastixpy._amd import amd_order
from pastixpy._colamd import colamd_order
from pastixpy.errors import InvalidInputError

# ---------------------------------------------------------------- helpers


def order(A, **kw):
    A = sp.csc_array(A)
    return colamd_order(A.indptr, A.indices, A.shape[0], A.shape[1], **kw)


def is_permutation(q, n):
    return q.dtype == np.int64 and q.shape == (n,) and np.array_equal(np.sort(q), np.arange(n))


def kept_rows(A, dense_row=10.0):
    """A's pattern (0/1) without its dense rows: the rows the ordering reads."""
    P = (sp.csr_array(A) != 0).astype(np.float64)
    counts = np.diff(P.indptr)
    limit = max(16.0, dense_row * np.sqrt(A.shape[1]))
    return sp.csr_array(sp.diags_array((counts <= limit).astype(np.float64)) @ P)


def cholesky_fill(A, q):
    """nnz of the Cholesky factor (diagonal included) of the pattern of (A Q)ᵀ(A Q),
    A's dense rows left out: a plain elimination game on a dense boolean matrix,
    independent of the kernels."""
    P = kept_rows(A)[:, q]
    B = (P.T @ P).toarray() != 0
    n = B.shape[0]
    total = 0
    for j in range(n):
        r = j + 1 + np.flatnonzero(B[j + 1 :, j])
        total += r.size + 1
        B[np.ix_(r, r)] = True
    return total


def amd_of_ata(A):
    """AMD on the explicit graph of AᵀA (dense rows left out): the ordering colamd_order
    replaces."""
    P = kept_rows(A)
    G = sp.csr_array(P.T @ P)
    G.setdiag(0)
    G.eliminate_zeros()
    G.sort_indices()
    return amd_order(G.indptr, G.indices, A.shape[1])


def random_matrix(m, n, density, seed):
    rng = np.random.default_rng(seed)
    return sp.csc_array(sp.random_array((m, n), density=density, rng=rng))


# ---------------------------------------------------------------- small cases


def test_no_columns_and_no_entries():
    assert order(sp.csc_array((0, 0))).shape == (0,)
    assert order(sp.csc_array((3, 0))).shape == (0,)
    assert np.array_equal(order(sp.csc_array((0, 4))), np.arange(4))
    assert np.array_equal(order(sp.csc_array((5, 4))), np.arange(4))


def test_bidiagonal_has_no_fill():
    # AᵀA of an upper bidiagonal A is tridiagonal: a minimum degree order fills nothing.
    n = 30
    A = sp.diags_array([np.ones(n), np.ones(n - 1)], offsets=[0, 1], format="csc")
    q = order(A)
    assert is_permutation(q, n)
    assert cholesky_fill(A, q) == cholesky_fill(A, np.arange(n))


def test_dense_row_is_left_out():
    # Without its dense row (n > 10 √n entries), AᵀA of this matrix is a path: no fill.
    n = 200
    A = sp.lil_array(sp.eye_array(n))
    A[0, :] = 1.0
    for j in range(1, n):
        A[j, j - 1] = 1.0
    q = order(A)
    assert is_permutation(q, n)
    assert cholesky_fill(A, q) == 2 * n - 1


def test_dense_empty_and_shadowed_columns_go_last():
    # Column 3 is dense, column 5 empty, column 7 only in a dense row: they follow
    # every other column, the shadowed one first, then the dense, then the empty one.
    m, n = 400, 300
    rng = np.random.default_rng(1)
    A = sp.lil_array(sp.random_array((m, n), density=0.005, rng=rng) + sp.eye_array(m, n))
    A[:, 3] = 1.0
    A[10, :] = 1.0  # a dense row
    A[:, 5] = 0.0
    A[:, 7] = 0.0
    A[10, 7] = 1.0  # column 7 is in the dense row only
    A = sp.csc_array(A)
    A.eliminate_zeros()
    q = order(A)
    assert is_permutation(q, n)
    assert q[-3:].tolist() == [7, 3, 5]
    q_kept = order(A, dense_col=-1.0)  # dense columns ordered as the others
    assert is_permutation(q_kept, n) and q_kept[-2:].tolist() == [7, 5]


def test_column_dense_in_ata_goes_last():
    # Rows 0 and 1 (150 entries each, below the dense-row threshold of 200) share column
    # 149 only: its 298 neighbours in AᵀA pass max(16, 10 √400), AMD's rule for dense
    # vertices; every other column has at most 150.
    n = 400
    A = sp.lil_array(sp.eye_array(n))
    A[0, 0:150] = 1.0
    A[1, 149:299] = 1.0
    A = sp.csc_array(A)
    q = order(A)
    assert is_permutation(q, n) and q[-1] == 149
    # Without the rule (or above its degree) minimum degree takes it with its row.
    for dense_degree in (-1.0, 300.0):
        assert order(A, dense_degree=dense_degree).tolist().index(149) < n - 100


def test_identical_columns_are_consecutive():
    # Indistinguishable columns make one supercolumn: ordered together.
    base = random_matrix(50, 30, 0.08, 3) + sp.eye_array(50, 30)
    cols = sp.hstack([base, base[:, [4]], base[:, [4]], base[:, [17]]], format="csc")
    q = order(cols).tolist()
    assert is_permutation(np.array(q), 33)
    spots = sorted(q.index(c) for c in (4, 30, 31))
    assert spots == list(range(spots[0], spots[0] + 3))
    assert abs(q.index(17) - q.index(32)) == 1


def test_repeated_entries_count_once():
    A = sp.csc_array(random_matrix(40, 40, 0.1, 5) + sp.eye_array(40))
    q = order(A)
    indptr, indices = A.indptr, A.indices
    for flip in (1, -1):
        # Each entry stored twice; with flip = -1 each column's rows in reverse order too,
        # which may break ties otherwise (the order of a column's rows is the order the
        # elimination meets them) but stays a permutation.
        cols = [np.repeat(indices[indptr[j] : indptr[j + 1]][::flip], 2) for j in range(40)]
        ip = np.concatenate([[0], np.cumsum([c.size for c in cols])])
        q2 = colamd_order(ip, np.concatenate(cols), 40, 40)
        assert is_permutation(q2, 40)
        if flip == 1:
            assert np.array_equal(q, q2)


def test_deterministic_and_index_dtype_free():
    A = sp.csc_array(random_matrix(300, 250, 0.01, 7) + sp.eye_array(300, 250))
    q = order(A)
    for _ in range(3):
        assert np.array_equal(order(A), q)
    q32 = colamd_order(A.indptr.astype(np.int32), A.indices.astype(np.int32), 300, 250)
    assert np.array_equal(q32, q)


@pytest.mark.parametrize("aggressive", [True, False])
def test_large_matrix_reuses_its_workspace(aggressive):
    # Enough eliminations that the workspace is compacted (and maybe grown) on the way.
    A = sp.csc_array(random_matrix(3000, 3000, 0.002, 11) + sp.eye_array(3000))
    q = order(A, aggressive=aggressive)
    assert is_permutation(q, 3000)


# ---------------------------------------------------------------- properties


@st.composite
def patterns(draw):
    """A CSC pattern (indptr, indices, m, n), rectangular or square, with empty rows
    and columns, maybe dense rows and columns, repeated columns, repeated and unsorted
    entries."""
    m = draw(st.integers(0, 40))
    n = draw(st.integers(0, 40))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    density = draw(st.floats(0.0, 0.4))
    D = rng.random((m, n)) < density
    if m and n and draw(st.booleans()):
        D[rng.integers(m), :] = True  # a full row
    if m and n and draw(st.booleans()):
        D[:, rng.integers(n)] = True  # a full column
    if n > 1 and draw(st.booleans()):
        D[:, rng.integers(n)] = D[:, rng.integers(n)]  # a repeated column
    cols = []
    for j in range(n):
        rows = np.flatnonzero(D[:, j])
        if rows.size and draw(st.booleans()):
            rows = rng.permutation(np.concatenate([rows, rows[: rng.integers(rows.size + 1)]]))
        cols.append(rows)
    indptr = np.concatenate([[0], np.cumsum([c.size for c in cols], dtype=np.int64)])
    indices = np.concatenate(cols).astype(np.int64) if cols else np.zeros(0, np.int64)
    return indptr, indices, m, n


@settings(max_examples=300, deadline=None)
@given(
    p=patterns(),
    dense_row=st.sampled_from([10.0, 0.5, -1.0]),
    dense_col=st.sampled_from([10.0, 0.5, -1.0]),
    aggressive=st.booleans(),
)
def test_any_pattern_gives_a_permutation(p, dense_row, dense_col, aggressive):
    indptr, indices, m, n = p
    q = colamd_order(indptr, indices, m, n, dense_row, dense_col, aggressive)
    assert is_permutation(q, n)
    assert np.array_equal(colamd_order(indptr, indices, m, n, dense_row, dense_col, aggressive), q)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(5, 70),
    density=st.floats(0.02, 0.15),
    seed=st.integers(0, 2**31 - 1),
)
def test_fill_near_amd_on_the_graph_of_ata(n, density, seed):
    A = sp.csc_array(random_matrix(n, n, density, seed) + sp.eye_array(n))
    q = order(A)
    assert is_permutation(q, n)
    ours, amd = cholesky_fill(A, q), cholesky_fill(A, amd_of_ata(A))
    # Both approximate minimum degree on the same graph: close, either way.
    assert ours <= 1.25 * amd + n


def test_fill_on_larger_random_matrices_near_amd():
    for seed, (n, density) in enumerate([(400, 0.008), (600, 0.005), (300, 0.02)]):
        A = sp.csc_array(random_matrix(n, n, density, seed) + sp.eye_array(n))
        ours, amd = cholesky_fill(A, order(A)), cholesky_fill(A, amd_of_ata(A))
        assert ours <= 1.15 * amd, (n, density, ours, amd)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([0, 1], [0], -1, 1), "non-negative"),
        (([0, 1], [0], 1, -1), "non-negative"),
        (([0, 1, 2], [0, 0], 1, 1), "indptr must have n_cols \\+ 1 = 2"),
        (([1, 1], [0], 1, 1), "start at 0"),
        (([0, 2, 1], [0, 0], 1, 2), "non-decreasing"),
        (([0, 3], [0, 0], 1, 1), "end within"),
        (([0, 1], [1], 1, 1), "row indices must lie in \\[0, n_rows = 1\\)"),
        (([0, 1], [-1], 1, 1), "row indices"),
    ],
)
def test_bad_inputs_raise_typed_errors(args, match):
    indptr, indices, m, n = args
    with pytest.raises(InvalidInputError, match=match):
        colamd_order(np.array(indptr), np.array(indices), m, n)


def test_docstring_example_runs():
    # The private module is outside tests/test_docstrings.py's walk: its example runs here.
    import doctest

    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    for test in finder.find(colamd_order, "colamd_order", globs={}):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0
