"""Preprocessing before the factorization: structural singularity, matching and scaling.

For LU, a maximum-product matching permutes rows so that the diagonal holds
large entries and its duals scale B to unit diagonal, off-diagonal entries at
most 1 (MC64's job 5), then rows and columns are equilibrated; for symmetric
indefinite matrices a symmetric equilibration is applied. The factored matrix
is ``B = diag(dr) A[row_perm] diag(dc)``. Cholesky gets a symmetric scaling by powers
of two to a unit-order diagonal (:func:`binary_diagonal_scaling`): its factors are A's
with their exponents shifted, nothing rounded, and what is measured on B (pivot sizes,
solution growth) or converted to single precision lies in range whatever A's scale.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, maximum_bipartite_matching

from ._matching import (
    grounded_pairs,
    max_product_column_matching,
    maximum_matching_size,
    ruiz_scaling,
)
from ._matching import max_product_matching as _mc64_matching
from ._numeric import column_max_abs, scaled_values
from ._symbolic import diagonal_positions, stored_diagonal
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
    #: The scalings are powers of two: B's values are A's with their exponents shifted,
    #: so scaling rounds nothing and calls for no refinement.
    exact: bool = False

    @property
    def scaled(self):
        return self.row_perm is not None or not (np.all(self.dr == 1) and np.all(self.dc == 1))

    def apply(self, A):
        """B as a canonical CSC array with int64 indices, from a canonical CSC A.

        Stored zeros are kept (sparse products would drop them): the numeric
        phase addresses B's entries by their position in A's pattern. Without a row
        permutation B shares A's index arrays (neither is written), and its values are
        made in one pass (:func:`pastixpy._numeric.scaled_values`).
        """
        if not self.scaled and A.indices.dtype == np.int64 and A.indptr.dtype == np.int64:
            return A  # nothing to do (LLᵀ): no copy
        indptr = np.ascontiguousarray(A.indptr, dtype=np.int64)
        indices = np.ascontiguousarray(A.indices, dtype=np.int64)
        if self.row_perm is not None:
            new_row = np.empty(A.shape[0], dtype=np.int64)
            new_row[self.row_perm] = np.arange(A.shape[0], dtype=np.int64)
            indices = new_row[indices]
        # Row factor, then column factor, in double, rounded to A's dtype at the end:
        # dr_i dc_j alone may pass the largest float (tiny entries scaled by huge
        # factors), and a single-precision matrix's factors its range.
        data = np.empty(A.data.shape, dtype=A.dtype)
        scaled_values(indptr, indices, np.ascontiguousarray(A.data), self.dr, self.dc, data)
        B = sp.csc_array((data, indices, indptr), shape=A.shape, copy=False)
        B.indptr, B.indices = indptr, indices  # scipy may narrow them to int32
        if self.row_perm is not None:
            B.has_sorted_indices = False
            B.sort_indices()
        B.has_canonical_format = True  # A's pattern, its rows permuted: no duplicates
        return B


def check_structural_rank(A):
    """Raise SingularMatrixError when A has no zero-free diagonal under any row permutation.

    The message names columns that cannot be matched to a row (original numbering).
    """
    indptr = np.ascontiguousarray(A.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(A.indices, dtype=np.int64)
    if stored_diagonal(indptr, indices) == A.shape[0]:
        return  # a full stored diagonal (canonical: one per column) is a perfect matching
    # MC21's depth-first search (ours): several times faster than scipy's Hopcroft-Karp
    # on these matrices, which are nearly matched already.
    if maximum_matching_size(A.indptr, A.indices, A.shape[0]) == A.shape[0]:
        return
    # Structurally singular: scipy's maximum matching names the columns left out.
    match = maximum_bipartite_matching(sp.csr_array(A), perm_type="row")
    unmatched = np.flatnonzero(match < 0)
    if unmatched.size:
        shown = ", ".join(map(str, unmatched[:10].tolist()))
        more = f" and {unmatched.size - 10} more" if unmatched.size > 10 else ""
        empty = np.flatnonzero(np.bincount(A.indices, minlength=A.shape[0]) == 0)
        rows_said = (
            f" (row(s) {', '.join(map(str, empty[:10].tolist()))}"
            f"{f' and {empty.size - 10} more' if empty.size > 10 else ''} empty)"
            if empty.size
            else ""
        )
        raise SingularMatrixError(
            f"the matrix is structurally singular: structural rank {A.shape[0] - unmatched.size} "
            f"< {A.shape[0]}; no row can be matched to column(s) {shown}{more}{rows_said}. "
            "Check for empty rows/columns or missing entries in the assembly",
            columns=unmatched.tolist(),
        )


def _mc64(A):
    """Maximum-product matching of A and its duals (see :mod:`pastixpy._matching`).

    Returns ``row_perm, u, v, logcolmax, exact``; ``exact`` is False when the
    matching had to use explicit zeros (see below).
    """
    C = sp.csc_array(A)
    if not C.has_canonical_format:
        C = C.copy()
        C.sum_duplicates()
    n = C.shape[0]
    mag = np.abs(C.data)
    try:
        row_perm, u, v = _mc64_matching(C.indptr, C.indices, mag, n)
        exact = True
    except ValueError:
        if not np.any(mag == 0):
            raise
        # Structurally nonsingular only through explicit zeros: A is exactly singular, but
        # the factorization (static pivoting) still wants a zero-free-as-possible diagonal.
        row_perm, u, v = _mc64_matching(C.indptr, C.indices, mag, n, use_zeros=True)
        exact = False
    colmax = np.zeros(n)
    np.maximum.at(colmax, np.repeat(np.arange(n), np.diff(C.indptr)), mag)
    logcolmax = np.log(colmax, out=np.zeros(n), where=colmax > 0)
    return row_perm, u, v, logcolmax, exact


def max_product_matching(A):
    """Row permutation putting large entries on the diagonal (maximum product of |diagonal|).

    Solves the assignment problem with costs ``log(max_i |a_ij|) - log|a_ij|``
    (MC64's job 5) with :func:`pastixpy._matching.max_product_matching`.
    Explicit zeros are used only when no perfect matching avoids them (then
    the matrix is exactly singular), as few of them as possible.

    Returns
    -------
    row_perm : ndarray of int64
        ``A[row_perm]`` has the matched entries on its diagonal.

    Raises
    ------
    ValueError
        If A is structurally singular (no perfect matching, zeros included).
    """
    return _mc64(A)[0]


def matching_scaling(A):
    """MC64's matching and scaling: ``diag(dr) A[row_perm] diag(dc)`` has unit diagonal.

    With the optimal duals ``u, v`` of the matching (reduced costs
    ``log(colmax_j) - log|a_ij| - u_i - v_j >= 0``, 0 on the matched
    entries), ``dr = exp(u[row_perm])`` and ``dc = exp(v) / colmax`` make the
    matched entries of modulus 1 and all others at most 1, so every row and
    column of B has max |entry| exactly 1. When the matching has to use
    explicit zeros, or the factors would over/underflow, ``dr = dc = 1``.

    Returns
    -------
    row_perm : ndarray of int64
        As :func:`max_product_matching`.
    dr, dc : ndarray of float64
        Row scaling of ``A[row_perm]`` (in its row numbering) and column scaling.
    """
    row_perm, u, v, logcolmax, exact = _mc64(A)
    ones = np.ones(A.shape[0])
    if not exact:
        return row_perm, ones, ones
    # The kernel's duals give log dr and log dc the same midrange, far from overflow.
    with np.errstate(over="ignore", under="ignore"):
        dr = np.exp(u[row_perm])
        dc = np.exp(v - logcolmax)
    if not (np.all(np.isfinite(dr) & (dr > 0)) and np.all(np.isfinite(dc) & (dc > 0))):
        return row_perm, ones, ones
    return row_perm, dr, dc


#: A uniform power-of-two scaling of an LLᵀ matrix (the same diagonal everywhere, as a
#: finite-difference Laplacian's) is skipped when its factor lies in this range: a
#: diagonal within 2^±32 is well inside single precision's range.
UNIFORM_SCALES = (2.0**-16, 2.0**16)


def binary_diagonal_scaling(A):
    """Powers of two d with d_i² |a_ii| in [1/2, 2): a symmetric scaling that rounds nothing.

    For a positive definite A, ``|a_ij| <= sqrt(a_ii a_jj)``, so every entry of
    ``diag(d) A diag(d)`` is at most 2 in magnitude, wherever A's entries lie between
    the smallest and the largest float. A zero diagonal entry keeps d_i = 1; so does
    every entry when the scaled matrix would hold a value beyond the range (A is then
    not positive definite, and Cholesky will say so).

    Returns
    -------
    d : ndarray of float64

    Examples
    --------
    >>> binary_diagonal_scaling(sp.diags_array([4.0, 9.0, 0.0, 1e-6])).tolist()
    [0.5, 0.25, 1.0, 1024.0]
    """
    C = A if sp.issparse(A) and A.format == "csc" else sp.csc_array(A)  # keeps its flags
    diag = np.abs(_diagonal(C)).astype(np.float64)
    _, exponent = np.frexp(diag)  # diag = m 2^exponent, m in [1/2, 1)
    d = np.where(diag > 0, np.ldexp(1.0, -(exponent // 2)), 1.0)
    if not C.nnz:
        return d
    with np.errstate(over="ignore"):
        bound = max_abs(C.data) * float(d.max()) ** 2
    if bound < np.finfo(np.float64).max:
        return d  # no scaled entry can overflow
    cols = np.repeat(np.arange(C.shape[1]), np.diff(C.indptr))
    with np.errstate(over="ignore"):
        scaled = (np.abs(C.data) * d[C.indices]) * d[cols]
    return d if np.isfinite(scaled).all() else np.ones(C.shape[0])


def _diagonal(C):
    """C's diagonal (0 where not stored), read by a binary search per column where C is
    canonical with int64 indices (:func:`pastixpy._symbolic.diagonal_positions`), by
    scipy's pass over every entry otherwise."""
    if not (C.indices.dtype == C.indptr.dtype == np.int64 and C.has_canonical_format):
        return C.diagonal()
    pos = diagonal_positions(C.indptr, C.indices)
    stored = pos >= 0
    diag = np.zeros(pos.size, dtype=C.dtype)
    diag[stored] = C.data[pos[stored]]
    return diag


def max_abs(values):
    """max |v| of a 1-D array of values (0 when empty), in one pass with no temporary
    array (``np.abs(values).max()`` makes one the size of the matrix).

    Examples
    --------
    >>> max_abs(np.array([1.0, -3.0, 2.0]))
    3.0
    """
    values = np.ascontiguousarray(values)
    return float(column_max_abs(values.reshape(-1, 1))[0])


def equilibrate(A, symmetric, iterations=20, tol=1e-2, rows=None, weights=None):
    """Ruiz's iterative scaling: rows and columns of ``diag(dr) A diag(dc)`` get max |entry| ≈ 1.

    With ``symmetric``, ``dr == dc`` so symmetry is kept. ``rows`` (A's entries' row
    numbers, default A's row indices) and ``weights`` (factors of their magnitudes,
    default 1) let a caller equilibrate A with its rows permuted and scaled without
    forming that matrix. One pass over the entries per iteration
    (:func:`pastixpy._matching.ruiz_scaling`).

    Returns
    -------
    dr, dc : ndarray of float64
    """
    C = sp.csc_array(A)
    mag = np.abs(C.data).astype(np.float64, copy=False)
    if weights is not None:
        mag = mag * weights
    indices = C.indices if rows is None else rows
    return ruiz_scaling(
        C.indptr, indices, np.ascontiguousarray(mag), C.shape[0], symmetric, iterations, tol
    )


def pivot_pairs(B, weak=1e-2, alone=None):
    """2x2 pivot pairs for LDLᵀ: each weak-diagonal unknown with a strong neighbour;
    the unknowns in ``alone`` (a Schur complement's) take part in none.

    Static pivoting cannot move a pivot out of its cblk, so an unknown with a
    zero (or tiny) diagonal, as in the constraint block of a KKT matrix, needs a
    partner in the same cblk to form a 2x2 pivot with. On the equilibrated
    matrix (entries at most 1), the unknowns with ``|b_ii| < weak`` are matched
    to the others by a maximum-product bipartite matching of the couplings
    ``|b_ij|`` (MC64's shortest augmenting paths on the rectangular weak-by-strong
    block, :func:`pastixpy._matching.max_product_column_matching`): as many weak unknowns as
    can be paired at once are, with the strongest couplings that allow it. A
    greedy choice (each weak unknown its strongest free neighbour) leaves some
    unpaired whose neighbours it gave away (3 of 40 constraints of random KKT
    matrices), and their zero pivots are then perturbed. Weak unknowns left
    over are paired greedily, with weak neighbours too.

    Pairs alone do not make every pivot block nonsingular: eliminating a set S of
    pairs is singular when the weak rows' couplings B_S are dependent, as for a cube's
    6 tetrahedra paired with its 6 inner faces in a mixed finite element (a constant
    potential on the cube has no divergence there). That needs a cycle among the
    pairs (weak unknown p → its partner → another weak unknown coupled to it → ...);
    where the matching's pairs have one, the weak unknowns are paired in the order
    of :func:`_grounded_pairs` instead, which has none.

    Returns
    -------
    pairs : (m, 2) int64 array
    """
    C = sp.csc_array(B)  # shares B's arrays: read only (stored zeros are skipped below)
    n = C.shape[0]
    diag = np.abs(C.diagonal())
    free = np.ones(n, dtype=bool)
    if alone is not None:
        free[alone] = False
    is_weak = (diag < weak) & free
    weak_idx = np.flatnonzero(is_weak)
    grounded = np.empty((0, 2), dtype=np.int64)
    pairs = []
    if weak_idx.size:
        pairs = _matched_pairs(C, weak_idx, np.flatnonzero(~is_weak & free))
        if _pairs_cycle(C, pairs, is_weak):
            grounded = _grounded_pairs(C, is_weak, free)
            rest = weak_idx[free[weak_idx]]
            pairs = _matched_pairs(C, rest, np.flatnonzero(~is_weak & free)) if rest.size else []
        for i, j in pairs:
            free[i] = free[j] = False
    # What the matching left: weakest first, with the strongest free neighbour.
    left = weak_idx[free[weak_idx]]
    for i in left[np.argsort(diag[left], kind="stable")]:
        if not free[i]:
            continue
        rows = C.indices[C.indptr[i] : C.indptr[i + 1]]
        vals = np.abs(C.data[C.indptr[i] : C.indptr[i + 1]])
        ok = free[rows] & (rows != i) & (vals > 0)
        if ok.any():
            j = rows[ok][np.argmax(vals[ok])]
            free[i] = free[j] = False
            pairs.append((i, j))
    return np.concatenate([grounded, np.array(pairs, dtype=np.int64).reshape(-1, 2)])


def _pairs_cycle(C, pairs, is_weak):
    """Whether (weak, strong) ``pairs`` close a cycle: p → q where q ≠ p is a weak
    unknown coupled to p's partner (see :func:`pivot_pairs`)."""
    if not len(pairs):
        return False
    P = np.asarray(pairs, dtype=np.int64)
    n = C.shape[0]
    # Column k of C[:, partners] holds the unknowns coupled to pair k's partner.
    D = sp.csc_array(C[:, P[:, 1]])
    rows = D.indices
    src = P[np.repeat(np.arange(P.shape[0]), np.diff(D.indptr)), 0]
    edge = (D.data != 0) & is_weak[rows] & (rows != src)
    G = sp.csr_array((np.ones(int(edge.sum())), (src[edge], rows[edge])), shape=(n, n))
    _, labels = connected_components(G, directed=True, connection="strong")
    return bool(np.bincount(labels).max() > 1)


def _grounded_pairs(C, is_weak, free):
    """Pairs of weak unknowns with strong partners in an order that leaves no subset of
    pairs exactly singular: each weak unknown is paired, strongest coupling first, with a
    strong unknown none of whose other weak neighbours is still unpaired (first those
    coupled to one weak unknown alone: a boundary face of a mixed finite element).

    Why: eliminating a set S of unknowns, the block [[M_S, B_Sᵀ], [B_S, 0]] (M the strong
    block, B the couplings of the weak rows, zero diagonal block) is singular when B_S's
    rows are dependent. In the mixed Poisson problem a cube's 6 tetrahedra paired with
    the cube's 6 inner faces are: the constant potential on the cube has no divergence
    through inner faces, and an elimination subtree holding just them meets an exactly
    zero pivot that no pivoting inside a diagonal block avoids. Paired in this order,
    the weak rows' couplings to their partners are triangular (a partner touches only its
    own weak unknown and ones paired before it), so B_S has independent rows for every S
    that keeps pairs together, whatever the ordering. Pairs are marked in ``free``;
    weak unknowns no such partner reaches (a closed loop of constraints) are left.

    Returns
    -------
    pairs : (m, 2) int64 array of (weak, strong)
    """
    return grounded_pairs(C.indptr, C.indices, C.data, is_weak, free)


def _matched_pairs(C, rows, cols):
    """(row, col) pairs of a maximum-product matching of C[rows][:, cols]'s couplings
    that pairs as many of ``rows`` as any matching can."""
    if not cols.size:
        return []
    S = sp.csr_array(C[rows][:, cols])
    S.data = np.abs(S.data)
    S.eliminate_zeros()
    if not S.nnz:
        return []
    # Which rows can be matched at all (a maximum matching's rows); all of them can
    # be matched together, so the weighted matching below is full on them.
    match = maximum_bipartite_matching(S, perm_type="column")
    keep = np.flatnonzero(match >= 0)
    if not keep.size:
        return []
    S = S[keep]
    # S's CSR arrays are the CSC of Sᵀ, whose columns are the rows to pair: MC64's
    # shortest augmenting paths on that rectangular matrix, every column matched.
    col_of_row = max_product_column_matching(S.indptr, S.indices, S.data, S.shape[1], keep.size)
    return [(int(i), int(j)) for i, j in zip(rows[keep], cols[col_of_row], strict=True)]


def preprocess(A, kind, matching=True, scaling=True, row_perm=None, pairs=None, alone=None):
    """Choose and compute the transformation applied before factoring A with ``kind``
    (a :class:`~pastixpy.kinds.Kind`).

    LU: matching (when ``matching``; or the given ``row_perm``, to keep the
    pattern of an earlier factorization) with MC64's scaling from its duals
    (when ``scaling``; see :func:`matching_scaling`), then row/column
    equilibration (a no-op after MC64's scaling unless that was not usable);
    LDLᵀ/LDLᴴ: symmetric equilibration, then 2x2 pivot pairs for weak
    diagonals (when ``matching``; or the given ``pairs``); LLᵀ: the power-of-two
    diagonal scaling of :func:`binary_diagonal_scaling` (when ``scaling``; Cholesky
    needs no pivot help, only a range to work in). ``alone``: unknowns no 2x2 pair may
    take (a Schur complement's, each its own row and column of S).
    """
    n = A.shape[0]
    ones = np.ones(n)
    if kind.definite:
        d = binary_diagonal_scaling(A) if scaling else ones
        common = d[0] if n else 1.0
        if np.all(d == common) and UNIFORM_SCALES[0] <= common <= UNIFORM_SCALES[1]:
            d = ones  # one factor for all: it changes no ratio that is measured, and
            # the matrix is well inside single precision's range without it
        return Preprocessing(None, d, d, exact=True)
    dr0 = dc0 = None
    if row_perm is None and kind.two_factors and matching:
        if scaling:
            row_perm, dr0, dc0 = matching_scaling(A)
        else:
            row_perm = max_product_matching(A)
    if scaling:
        # A[row_perm] scaled by MC64's duals, equilibrated without being formed.
        rows = weights = None
        if row_perm is not None:
            new_row = np.empty(n, dtype=np.int64)
            new_row[row_perm] = np.arange(n, dtype=np.int64)
            rows = new_row[A.indices]
            if dr0 is not None:
                cols = np.repeat(np.arange(n), np.diff(A.indptr))
                weights = dr0[rows] * dc0[cols]
        dr, dc = equilibrate(A, symmetric=kind.symmetric, rows=rows, weights=weights)
        if dr0 is not None:
            dr, dc = dr * dr0, dc * dc0
    else:
        dr, dc = ones, ones
    if pairs is None and kind.block_diagonal and matching:
        pairs = pivot_pairs(sp.diags_array(dr) @ A @ sp.diags_array(dc), alone=alone)
        pairs = pairs if pairs.size else None
    return Preprocessing(row_perm, dr, dc, pairs)
