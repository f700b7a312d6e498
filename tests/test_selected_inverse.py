"""F.inv_diag() and F.inv_selected(): the entries of A⁻¹ by selected inversion, against
numpy's dense inverse for every kind and dtype, on matrices of many supernodes, with
Bunch-Kaufman's 2x2 pivots and interchanges, row matchings and scalings; the batched
and single-cblk paths agree; warnings where the factors are those of a nearby matrix,
errors where they cannot be read."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import pastixpy
from pastixpy import selected_inverse
from pastixpy.distributed import run_ranks
from pastixpy.errors import PastixError
from pastixpy.gallery import laplacian


def dense_inverse(A):
    D = A.toarray().astype(np.complex128 if np.iscomplexobj(A.data) else np.float64)
    return np.linalg.inv(D)


def tolerance(dtype):
    """Entries of A⁻¹ relative to its largest, for these well-conditioned matrices."""
    return 2e-3 if np.dtype(dtype).char in "fF" else 1e-10


def matrix(kind, dtype, n=150, seed=0):
    """A random sparse matrix for ``kind`` (several supernodes): Hermitian positive
    definite (llt), symmetric indefinite, complex symmetric for complex dtypes (ldlt),
    Hermitian indefinite (ldlh), unsymmetric with weak diagonal entries (lu)."""
    rng = np.random.default_rng(seed)
    complex_ = np.dtype(dtype).kind == "c"
    R = sp.random(n, n, density=0.03, random_state=rng)
    if complex_:
        R = R + 1j * sp.random(n, n, density=0.03, random_state=rng)
    signs = np.where(np.arange(n) % 3, 1.0, -1.0)
    if kind == "llt":
        S = R + R.conj().T + sp.diags(np.full(n, 6.0))
    elif kind == "ldlt":
        S = R + R.T + sp.diags(3.0 * signs)
    elif kind == "ldlh":
        S = R + R.conj().T + sp.diags(3.0 * signs)
    else:
        S = R + sp.diags(np.where(np.arange(n) % 4, 3.0, 0.1))
    return sp.csc_array(S.astype(dtype))


def shifted_laplacian(kind, dtype):
    """laplacian((8, 8, 8)), 96 cblks; shifted into indefiniteness for LDLᵀ and LU,
    where Bunch-Kaufman takes 2x2 pivots and interchanges rows inside blocks."""
    A = laplacian((8, 8, 8)).astype(dtype)
    if kind != "llt":
        A = A - 1.7 * sp.identity(A.shape[0], dtype=dtype, format="csc")
    return sp.csc_array(A)


CASES = [
    (kind, dtype)
    for kind, dtypes in (
        ("llt", (np.float64, np.float32, np.complex128, np.complex64)),
        ("ldlt", (np.float64, np.float32, np.complex128, np.complex64)),
        ("ldlh", (np.complex128, np.complex64, np.float64)),
        ("lu", (np.float64, np.float32, np.complex128, np.complex64)),
    )
    for dtype in dtypes
]
IDS = [f"{k}-{np.dtype(d)}" for k, d in CASES]


def check_against_dense(F, A):
    """inv_diag and inv_selected against the dense inverse; the pattern holds A's
    (Aᵀ's for LU with a row matching)."""
    Ainv = dense_inverse(A)
    scale = np.abs(Ainv).max()
    tol = tolerance(A.dtype)
    d = F.inv_diag()
    assert d.dtype == A.dtype and d.shape == (A.shape[0],)
    assert np.abs(d - np.diag(Ainv)).max() <= tol * scale
    Z = F.inv_selected()
    assert isinstance(Z, sp.csc_array) and Z.dtype == A.dtype and Z.shape == A.shape
    assert Z.has_canonical_format
    r, c = Z.nonzero()
    assert np.abs(Z.toarray()[r, c] - Ainv[r, c]).max() <= tol * scale
    held = np.zeros(A.shape, dtype=bool)
    C = Z.tocoo()
    held[C.row, C.col] = True
    pattern = (abs(A) > 0).toarray()
    if F.stats["matching"]:
        pattern = pattern.T
    else:  # the diagonal is in the pattern (a row matching may move it out)
        assert np.diagonal(held).all()
    assert held[pattern].all()
    on = np.diagonal(held)
    np.testing.assert_array_equal(Z.diagonal()[on], d[on])
    return Z


@pytest.mark.parametrize("kind, dtype", CASES, ids=IDS)
def test_random_matrices_against_the_dense_inverse(kind, dtype):
    A = matrix(kind, dtype)
    # LU: the pipeline's, with its row matching (the small path's LU would leave the
    # selected inverse to supernodal factors made apart: test_small_path.py).
    F = pastixpy.factorize(A, kind=kind, **({"matching": "on"} if kind == "lu" else {}))
    assert F._factors.layout.ncblk > 3
    check_against_dense(F, A)


@pytest.mark.parametrize("kind, dtype", CASES, ids=IDS)
def test_many_supernodes_two_by_two_pivots_and_interchanges(kind, dtype):
    A = shifted_laplacian(kind, dtype)
    F = pastixpy.factorize(A, kind=kind)
    pivots = F._factors.pivots
    assert F._factors.layout.ncblk > 50
    if kind == "ldlt" and np.dtype(dtype) == np.float64:
        assert (pivots.pivtype == 2).any()
    if kind in ("ldlt", "lu") and np.dtype(dtype) == np.float64:
        assert (pivots.lperm != np.arange(A.shape[0])).any()
    check_against_dense(F, A)


@pytest.mark.parametrize("kind", ["llt", "ldlt", "lu"])
def test_wide_supernodes(kind):
    """laplacian((12, 12, 12)): cblks wider than the batches' size classes, computed
    alone with BLAS and LAPACK."""
    A = laplacian((12, 12, 12))
    if kind != "llt":
        A = sp.csc_array(A - 0.5 * sp.identity(A.shape[0], format="csc"))
    F = pastixpy.factorize(A, kind=kind)
    assert np.diff(F._factors.layout.fcol).max() > selected_inverse.SIZE_CLASSES[-1]
    check_against_dense(F, A)


def kkt(seed=0):
    """A saddle-point matrix [[K, Bᵀ], [B, 0]]: LDLᵀ pairs its zero diagonal entries
    into 2x2 pivots."""
    rng = np.random.default_rng(seed)
    K = laplacian((8, 8))
    B = sp.random(20, K.shape[0], density=0.05, random_state=rng) + sp.eye(20, K.shape[0])
    return sp.csc_array(sp.bmat([[K, B.T], [B, None]]))


def test_saddle_point_with_paired_pivots():
    A = kkt()
    F = pastixpy.factorize(A)
    assert F.kind == "ldlt" and F.stats["pairs"] > 0
    check_against_dense(F, A)


def test_lu_row_matching_with_no_stored_diagonal():
    """A row matching moves large entries to the diagonal; where A stores no diagonal
    entry, A⁻¹[i, i] may lie outside the factor's pattern and is computed by solves."""
    rng = np.random.default_rng(3)
    n = 120
    P = sp.csr_array(sp.eye(n, format="csr")[rng.permutation(n)])
    A = sp.csc_array(sp.random(n, n, density=0.02, random_state=rng) + 3 * P)
    A.setdiag(0)
    A.eliminate_zeros()
    A = sp.csc_array(A + 2 * sp.csr_array(sp.eye(n, format="csr")[rng.permutation(n)]))
    F = pastixpy.factorize(A, kind="lu", matching="on")  # the pipeline's matching
    assert F.stats["matching"]
    Z = check_against_dense(F, A)
    assert Z.diagonal().size - Z.diagonal().nonzero()[0].size > 0  # some by solves


def test_scaled_matrix():
    """Equilibration (LDLᵀ) and the power-of-two scaling (LLᵀ) are undone."""
    rng = np.random.default_rng(1)
    d = sp.diags(10.0 ** rng.uniform(-4, 4, 150))
    for kind in ("llt", "ldlt"):
        A = sp.csc_array(d @ matrix(kind, np.float64) @ d)
        F = pastixpy.factorize(A, kind=kind)
        assert F.stats["scaling"]
        check_against_dense(F, A)


def test_forced_symmetric_kind_on_a_matrix_that_is_not():
    """kind="ldlt" on an unsymmetric matrix factors the symmetric matrix of its lower
    triangle (in pivot order): the entries are of that matrix's inverse, and a
    warning says so."""
    A = matrix("lu", np.float64)
    with pytest.warns(pastixpy.PastixWarning):
        F = pastixpy.factorize(A, kind="ldlt")
    with pytest.warns(pastixpy.PastixWarning, match="not of A"):
        d = F.inv_diag()
    P = A.toarray()[np.ix_(F.perm, F.perm)]
    S = np.tril(P) + np.tril(P, -1).T
    inverse = np.empty_like(S)
    inverse[np.ix_(F.perm, F.perm)] = np.linalg.inv(S)
    assert np.allclose(d, np.diag(inverse), rtol=0, atol=1e-10)


# ---------------------------------------------------------------------- the two paths


@pytest.mark.parametrize("kind", ["llt", "ldlh", "lu"])
def test_batched_and_single_paths_agree(kind, monkeypatch):
    """The same entries whether cblks are padded into batches or computed one at a
    time."""
    A = shifted_laplacian("llt" if kind == "llt" else "ldlt", np.complex128)
    F = pastixpy.factorize(A, kind=kind)
    reference = F.inv_selected().toarray()
    for name, value in [
        ("SIZE_CLASSES", (64,)),  # every small cblk padded to 64
        ("SIZE_CLASSES", (1,)),  # every cblk alone, none padded
        ("BATCH_SCALARS", 1),  # batches of one cblk
    ]:
        with monkeypatch.context() as m:
            m.setattr(selected_inverse, name, value)
            other = F.inv_selected().toarray()
        np.testing.assert_allclose(other, reference, rtol=0, atol=1e-12 * abs(reference).max())


def test_schedule_puts_ancestors_first():
    F = pastixpy.factorize(laplacian((12, 12, 12)))
    layout = F._factors.layout
    done = np.zeros(layout.ncblk, dtype=bool)
    for ks, W, S in selected_inverse.schedule(layout):
        for k in ks:
            faced = layout.fcblk[layout.bloknum[k] + 1 : layout.bloknum[k + 1]]
            assert done[faced].all()
        assert (np.diff(layout.fcol)[ks] <= W).all()
        assert (layout.stride[ks] - np.diff(layout.fcol)[ks] <= S).all()
        done[ks] = True
    assert done.all()


# ---------------------------------------------------------------------- nearby matrices


def test_perturbed_pivots_warn():
    """A singular Neumann Laplacian: one pivot perturbed, the factors those of a
    nearby matrix, whose inverse's entries are returned with a warning."""
    L = laplacian((10, 10)).tolil()
    L.setdiag(0)
    L.setdiag(-np.asarray(L.sum(axis=1)).ravel())
    F = pastixpy.factorize(sp.csc_array(L), kind="ldlt")
    assert F.stats["perturbed_pivots"] == 1
    with pytest.warns(pastixpy.PastixWarning, match="perturbed pivots") as record:
        F.inv_diag()
    assert record[0].filename == __file__  # pointed at the caller


def test_mixed_precision_warns_and_is_single_accurate():
    A = matrix("llt", np.float64)
    F = pastixpy.factorize(A, precision="mixed")
    with pytest.warns(pastixpy.PastixWarning, match="float32"):
        d = F.inv_diag()
    assert d.dtype == np.float64
    exact = np.diag(dense_inverse(A))
    assert np.abs(d - exact).max() <= 1e-4 * np.abs(exact).max()


#: Compression of the small blocks of small matrices (as tests/test_compression.py).
SMALL = {"min_width": 16, "min_height": 4, "max_ratio": 1.0, "clusters": (16, 32)}


@pytest.mark.parametrize("strategy", ["jit", "minmem"])
@pytest.mark.parametrize("kind", ["llt", "ldlt", "lu"])
def test_compressed_factors_warn_and_are_accurate_to_the_tolerance(kind, strategy):
    """The tiles are expanded: the entries are those of a matrix within the tolerance
    of A's inverse, to about the tolerance times the condition number."""
    A = laplacian((10, 10, 10))
    if kind != "llt":
        A = sp.csc_array(A - 0.3 * sp.identity(A.shape[0], format="csc"))
    options = {"tol": 1e-8, "strategy": strategy, **SMALL}
    F = pastixpy.factorize(A, kind=kind, compress=("blr", options))
    assert F.stats["compression"]["lowrank_tiles"] > 0
    with pytest.warns(pastixpy.PastixWarning, match="compressed"):
        Z = F.inv_selected()
    Ainv = dense_inverse(A)
    r, c = Z.nonzero()
    assert np.abs(Z.toarray()[r, c] - Ainv[r, c]).max() <= 1e-5 * np.abs(Ainv).max()


def test_no_warning_on_exact_factors():
    F = pastixpy.factorize(shifted_laplacian("ldlt", np.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.inv_diag()
        F.inv_selected()


# ---------------------------------------------------------------------- errors


def test_distributed_factors_raise():
    A = laplacian((6, 6, 6))

    def job(comm):
        F = pastixpy.factorize(A if comm.Get_rank() == 0 else None, comm=comm)
        with pytest.raises(PastixError, match="distributed"):
            F.inv_diag()
        with pytest.raises(PastixError, match="comm="):
            F.inv_selected()
        if comm.Get_rank() == 0:  # the pipeline's factorization, its factors spread
            with pytest.raises(PastixError, match="distributed"):
                F._root.inv_diag()
        return True

    assert all(run_ranks(2, job))


def test_no_factors_after_a_failed_refactorize():
    A = laplacian((6, 6))
    F = pastixpy.factorize(A, kind="llt")
    with pytest.raises(pastixpy.errors.NotPositiveDefiniteError):
        F.refactorize(sp.csc_array(-A))
    with pytest.raises(PastixError, match="holds no factors"):
        F.inv_diag()


# ---------------------------------------------------------------------- properties


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 60),
    density=st.floats(0.0, 0.2),
    seed=st.integers(0, 2**31 - 1),
    kind=st.sampled_from(["llt", "ldlt", "lu"]),
)
def test_property_diagonal_of_the_inverse(n, density, seed, kind):
    """For any sparse pattern: inv_diag is diag(A⁻¹), and inv_selected holds it and
    agrees with A⁻¹ wherever it has an entry."""
    rng = np.random.default_rng(seed)
    R = sp.random(n, n, density=density, random_state=rng)
    if kind == "lu":
        A = R + sp.diags_array(rng.uniform(1, 2, n) * n * density + 1)
    else:
        S = R + R.T
        signs = rng.choice([-1.0, 1.0], n) if kind == "ldlt" else np.ones(n)
        rowsums = np.asarray(abs(S).sum(axis=1)).ravel()
        A = S + sp.diags_array(signs * (rowsums + rng.uniform(0.5, 1.5, n)))
    A = sp.csc_array(A)
    F = pastixpy.factorize(A, kind=kind)
    check_against_dense(F, A)


def test_the_gather_kernel_matches_dense_indexing():
    """pastixpy._selinv.gather_lower and mirror_upper against Z[S, S] read from a dense
    symmetric matrix written into panels of the factor's layout."""
    from pastixpy import _selinv

    A = laplacian((7, 7, 7))
    F = pastixpy.factorize(A, kind="llt", threads=1)
    layout = F._factors.layout
    n = A.shape[0]
    rng = np.random.default_rng(0)
    M = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    M = M + M.conj().T  # Hermitian: the mirror is conjugated
    sizes = layout.stride * np.diff(layout.fcol)
    off = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    Z = np.zeros(int(off[-1]), dtype=np.complex128)
    rows_of = []
    for k in range(layout.ncblk):
        rows = np.concatenate(
            [
                np.arange(layout.frow[b], layout.lrow[b] + 1)
                for b in range(layout.bloknum[k], layout.bloknum[k + 1])
            ]
        )
        cols = np.arange(layout.fcol[k], layout.fcol[k + 1])
        Z[off[k] : off[k + 1]] = M[np.ix_(rows, cols)].ravel(order="F")
        rows_of.append(rows[cols.size :])
    ks = np.array([k for k in range(layout.ncblk) if rows_of[k].size], dtype=np.int64)
    S = max(rows_of[k].size for k in ks)
    G = np.zeros((ks.size, S, S), dtype=np.complex128)
    arrays = (layout.fcol, layout.bloknum, layout.stride, layout.frow, layout.lrow)
    _selinv.gather_lower(Z, 0, ks, *arrays, layout.fcblk, layout.bcoef, off, G)
    _selinv.mirror_upper(ks, layout.bloknum, layout.frow, layout.lrow, layout.fcblk, True, G)
    for i, k in enumerate(ks):
        s = rows_of[k]
        np.testing.assert_array_equal(G[i, : s.size, : s.size], M[np.ix_(s, s)])
        assert not G[i, s.size :].any() and not G[i, :, s.size :].any()
