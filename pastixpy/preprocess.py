"""Preprocessing before the factorization: structural singularity, matching and scaling.

For LU, a maximum-product matching permutes rows so that the diagonal holds
large entries (MC64's idea), then rows and columns are equilibrated; for
symmetric indefinite matrices a symmetric equilibration is applied. The
factored matrix is ``B = diag(dr) A[row_perm] diag(dc)``.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_bipartite_matching, min_weight_full_bipartite_matching

from .errors import SingularMatrixError


@dataclass(frozen=True)
class Preprocessing:
    """The transformation ``B = diag(dr) A[row_perm] diag(dc)``.

    ``row_perm`` is None when rows were not permuted; ``dr``/``dc`` are all ones
    when no scaling was applied. ``pairs`` are not a transformation but a
    request to the analysis, made from B's values (see :func:`pivot_pairs`).
    """

    row_perm: np.ndarray | None
    dr: np.ndarray
    dc: np.ndarray
    #: (m, 2) unknowns the analysis keeps together for 2x2 pivots (LDLᵀ), or None.
    pairs: np.ndarray | None = None

    @property
    def scaled(self):
        return self.row_perm is not None or not (np.all(self.dr == 1) and np.all(self.dc == 1))

    def apply(self, A):
        """B as a canonical CSC array (same pattern ordering conventions as A)."""
        B = A[self.row_perm] if self.row_perm is not None else A
        B = sp.csc_array(sp.diags_array(self.dr) @ B @ sp.diags_array(self.dc))
        B.sum_duplicates()
        B.indptr = B.indptr.astype(np.int64)
        B.indices = B.indices.astype(np.int64)
        return B


def check_structural_rank(A):
    """Raise SingularMatrixError when A has no zero-free diagonal under any row permutation.

    The message names columns that cannot be matched to a row (original numbering).
    """
    match = maximum_bipartite_matching(sp.csr_array(A), perm_type="row")
    unmatched = np.flatnonzero(match < 0)
    if unmatched.size:
        shown = ", ".join(map(str, unmatched[:10].tolist()))
        more = f" and {unmatched.size - 10} more" if unmatched.size > 10 else ""
        raise SingularMatrixError(
            f"the matrix is structurally singular: structural rank {A.shape[0] - unmatched.size} "
            f"< {A.shape[0]}; no row can be matched to column(s) {shown}{more}. Check for empty "
            "rows/columns or missing entries in the assembly",
            columns=unmatched.tolist(),
        )


def max_product_matching(A):
    """Row permutation putting large entries on the diagonal (maximum product of |diagonal|).

    Solves the assignment problem with costs ``log(max_i |a_ij|) - log|a_ij|``
    (MC64's job 5) with scipy's ``min_weight_full_bipartite_matching``.

    Returns
    -------
    row_perm : ndarray of int64
        ``A[row_perm]`` has the matched entries on its diagonal.
    """
    C = sp.csc_array(A, copy=True)
    mag = np.abs(C.data)
    colmax = np.maximum.reduceat(mag, C.indptr[:-1]) if C.nnz else mag
    colmax = np.repeat(colmax, np.diff(C.indptr))
    with np.errstate(divide="ignore"):
        cost = np.log(colmax) - np.log(mag)
    finite = np.isfinite(cost)
    # Explicit zeros stay usable, at a cost above any real entry; +1 keeps every cost > 0.
    big = (cost[finite].max() if finite.any() else 0.0) + 1.0
    C.data = np.where(finite, cost, 2 * big) + 1.0
    # scipy 1.17's matching pairs the wrong columns when given int64 indices.
    C.indices = C.indices.astype(np.int32)
    C.indptr = C.indptr.astype(np.int32)
    rows, cols = min_weight_full_bipartite_matching(C)
    row_perm = np.empty(A.shape[0], dtype=np.int64)
    row_perm[cols] = rows
    return row_perm


def equilibrate(A, symmetric, iterations=20, tol=1e-2):
    """Ruiz's iterative scaling: rows and columns of ``diag(dr) A diag(dc)`` get max |entry| ≈ 1.

    With ``symmetric``, ``dr == dc`` so symmetry is kept.

    Returns
    -------
    dr, dc : ndarray of float64
    """
    n = A.shape[0]
    M = sp.csr_array(abs(sp.csr_array(A)), dtype=np.float64)
    dr = np.ones(n)
    dc = np.ones(n)
    for _ in range(iterations):
        S = sp.csr_array(sp.diags_array(dr) @ M @ sp.diags_array(dc))
        rmax = S.max(axis=1).toarray().ravel()
        cmax = S.max(axis=0).toarray().ravel()
        rmax[rmax == 0] = 1.0
        cmax[cmax == 0] = 1.0
        if max(np.abs(1 - rmax).max(), np.abs(1 - cmax).max()) < tol:
            break
        if symmetric:
            dr = dr / np.sqrt(rmax)
            dc = dr
        else:
            dr = dr / np.sqrt(rmax)
            dc = dc / np.sqrt(cmax)
    return dr, dc.copy()


def pivot_pairs(B, weak=1e-2):
    """2x2 pivot pairs for LDLᵀ: each weak-diagonal unknown with its strongest free neighbour.

    Static pivoting cannot move a pivot out of its cblk, so an unknown with a
    zero (or tiny) diagonal, as in the constraint block of a KKT matrix, needs a
    partner in the same cblk to form a 2x2 pivot with. On the equilibrated
    matrix (entries at most 1), unknowns with ``|b_ii| < weak`` are taken
    weakest first and paired greedily with the free neighbour of largest
    ``|b_ij|`` (the edge a symmetric matching would favour).

    Returns
    -------
    pairs : (m, 2) int64 array
    """
    C = sp.csc_array(B)
    n = C.shape[0]
    diag = np.abs(C.diagonal())
    free = np.ones(n, dtype=bool)
    pairs = []
    for i in np.flatnonzero(diag < weak)[np.argsort(diag[diag < weak], kind="stable")]:
        if not free[i]:
            continue
        rows = C.indices[C.indptr[i] : C.indptr[i + 1]]
        vals = np.abs(C.data[C.indptr[i] : C.indptr[i + 1]])
        ok = free[rows] & (rows != i) & (vals > 0)
        if ok.any():
            j = rows[ok][np.argmax(vals[ok])]
            free[i] = free[j] = False
            pairs.append((i, j))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def preprocess(A, kind, matching=True, scaling=True, row_perm=None, pairs=None):
    """Choose and compute the transformation applied before factoring A.

    LU: matching (when ``matching``; or the given ``row_perm``, to keep the
    pattern of an earlier factorization) then row/column equilibration;
    LDLᵀ/LDLᴴ: symmetric equilibration, then 2x2 pivot pairs for weak
    diagonals (when ``matching``; or the given ``pairs``); LLᵀ: none
    (Cholesky needs no pivot help).
    """
    n = A.shape[0]
    ones = np.ones(n)
    if kind == "llt":
        return Preprocessing(None, ones, ones)
    if row_perm is None and kind == "lu" and matching:
        row_perm = max_product_matching(A)
    if scaling:
        M = A[row_perm] if row_perm is not None else A
        dr, dc = equilibrate(M, symmetric=kind != "lu")
    else:
        dr, dc = ones, ones
    if pairs is None and kind != "lu" and matching:
        pairs = pivot_pairs(sp.diags_array(dr) @ A @ sp.diags_array(dc))
        pairs = pairs if pairs.size else None
    return Preprocessing(row_perm, dr, dc, pairs)
