# Simplicial sparse LU: a matrix factored column by column (left-looking, Gilbert-Peierls)
# with threshold partial pivoting, and the solves with its factors.
# cython: language_level=3
"""Simplicial sparse LU for small problems, in one kernel call.

The factorization P A Q = L U is computed column by column, left-looking: column k of
A Q is solved against the columns of L found so far (a sparse triangular solve whose
nonzero pattern is the set of rows reachable from A's column in the graph of L, found
by a depth-first search, so that its cost is proportional to the flops, not to n),
then a pivot is chosen among the rows not yet pivotal: the column's own row (the
diagonal of A under the symmetric ordering Q) when its magnitude is at least
``threshold`` times the largest candidate's, else the largest. This is the algorithm
of Gilbert and Peierls (1988) with the diagonal preference of KLU and UMFPACK's
symmetric strategy: on a matrix whose diagonal is strong, the ordering's fill forecast
holds.

No supernodes, no BLAS: the caller forecasts the flops from its ordering and gives a
budget; a factorization whose pivots leave the diagonal and make fill the ordering
did not plan for stops at the budget and says so (the caller then takes the
supernodal pipeline).

L is unit lower triangular (its diagonal not stored), U's diagonal is kept apart; both
column-compressed, their row indices in pivot order once the factorization ends.
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, fabs, hypot, isfinite
from libc.stdint cimport int64_t

cnp.import_array()

ctypedef int64_t idx_t

ctypedef fused scalar_t:
    double
    double complex

#: Statuses of :func:`lu_factor`.
OK = 0
ZERO_PIVOT = 1  # no nonzero candidate: A is singular (structurally or numerically)
OVER_BUDGET = 2  # the flop budget was passed


cdef inline double magnitude(scalar_t v) noexcept nogil:
    if scalar_t is double:
        return fabs(v)
    else:
        return hypot(v.real, v.imag)  # range-safe: the squares would under/overflow


cdef idx_t reach(idx_t col, const idx_t[::1] Ap, const idx_t[::1] Ai, idx_t[::1] Lp,
                 idx_t[::1] Li, idx_t[::1] pinv, idx_t[::1] mark, idx_t stamp,
                 idx_t[::1] stack, idx_t[::1] pstack, idx_t[::1] xi, idx_t n) noexcept nogil:
    """The rows of x = L⁻¹ A(:, col), in topological order in ``xi[top:n]``; returns top.

    A depth-first search from each row of A's column through the graph of L: a row
    pivotal at step j leads to the rows of L(:, j). A row is written to ``xi`` (from
    the end down) once all rows it leads to are, so that reading ``xi`` upwards visits
    each row before the rows it updates. ``mark[i] == stamp``: row i already visited.
    """
    cdef idx_t top = n, head, p, q, j, jp, pend, r
    cdef bint finished
    for p in range(Ap[col], Ap[col + 1]):
        if mark[Ai[p]] == stamp:
            continue
        head = 0
        stack[0] = Ai[p]
        while head >= 0:
            j = stack[head]
            jp = pinv[j]
            if mark[j] != stamp:
                mark[j] = stamp
                pstack[head] = Lp[jp] if jp >= 0 else 0
            pend = Lp[jp + 1] if jp >= 0 else 0
            finished = True
            for q in range(pstack[head], pend):
                r = Li[q]
                if mark[r] != stamp:
                    pstack[head] = q + 1  # resume after this child
                    head += 1
                    stack[head] = r
                    finished = False
                    break
            if finished:
                head -= 1
                top -= 1
                xi[top] = j
    return top


cdef class _Growing:
    """A column-compressed factor under construction: row indices and values that grow."""

    cdef public object index, values

    def __init__(self, capacity, dtype):
        self.index = np.empty(capacity, dtype=np.int64)
        self.values = np.empty(capacity, dtype=dtype)

    def grow(self, needed):
        capacity = max(2 * self.index.shape[0], needed)
        self.index = np.resize(self.index, capacity)
        self.values = np.resize(self.values, capacity)


def lu_factor(const idx_t[::1] Ap, const idx_t[::1] Ai, const scalar_t[::1] Ax,
              const idx_t[::1] q, double threshold, double max_flops):
    """P A Q = L U of a canonical CSC matrix, column by column (see the module docstring).

    Parameters
    ----------
    Ap, Ai, Ax : arrays
        A's CSC arrays (sorted rows, no duplicates), float64 or complex128 values.
    q : int64 array
        The column order: column k of A Q is A's column ``q[k]``, and the row preferred
        as its pivot is row ``q[k]`` (the diagonal of Qᵀ A Q).
    threshold : float
        The preferred row is the pivot when its magnitude is at least this fraction of
        the largest candidate's (1: partial pivoting; smaller: the diagonal more often).
    max_flops : float
        Stop with OVER_BUDGET once the flops exceed this.

    Returns
    -------
    status : int
        OK, ZERO_PIVOT or OVER_BUDGET.
    k : int
        The column reached (n when OK).
    factors : tuple or None
        ``(Lp, Li, Lx, Up, Ui, Ux, udiag, pinv)`` when OK: row i of A is row
        ``pinv[i]`` of P A; L and U column-compressed in pivot order.
    flops : float
        Multiply-adds times two (complex ones counted as real ones).
    """
    cdef idx_t n = Ap.shape[0] - 1
    cdef idx_t nnz = Ap[n]
    dtype = np.float64 if scalar_t is double else np.complex128
    cdef _Growing Lg = _Growing(2 * nnz + n, dtype)
    cdef _Growing Ug = _Growing(2 * nnz + n, dtype)
    cdef idx_t[::1] Li = Lg.index, Ui = Ug.index
    cdef scalar_t[::1] Lx = Lg.values, Ux = Ug.values
    Lp_a = np.zeros(n + 1, dtype=np.int64)
    Up_a = np.zeros(n + 1, dtype=np.int64)
    pinv_a = np.full(n, -1, dtype=np.int64)
    udiag_a = np.empty(n, dtype=dtype)
    cdef idx_t[::1] Lp = Lp_a, Up = Up_a, pinv = pinv_a
    cdef scalar_t[::1] udiag = udiag_a
    # One workspace: the search's marks, its two stacks and its output.
    cdef idx_t[::1] work = np.full(4 * n, -1, dtype=np.int64)
    cdef idx_t[::1] mark = work[:n], stack = work[n:2 * n]
    cdef idx_t[::1] pstack = work[2 * n:3 * n], xi = work[3 * n:]
    cdef scalar_t[::1] x = np.zeros(n, dtype=dtype)
    cdef idx_t k, col, top, t, i, j, jp, p, ipiv, lnz = 0, unz = 0, diag
    cdef double flops = 0.0, amax, a
    cdef scalar_t xj, pivot
    for k in range(n):
        # Room for the column's worst case (every row in its pattern) in L and U.
        if lnz + n > Li.shape[0]:
            Lg.grow(lnz + n)
            Li, Lx = Lg.index, Lg.values
        if unz + n > Ui.shape[0]:
            Ug.grow(unz + n)
            Ui, Ux = Ug.index, Ug.values
        col = q[k]
        with nogil:
            top = reach(col, Ap, Ai, Lp, Li, pinv, mark, k, stack, pstack, xi, n)
            for p in range(Ap[col], Ap[col + 1]):
                x[Ai[p]] = Ax[p]
            for t in range(top, n):
                j = xi[t]
                jp = pinv[j]
                if jp < 0:
                    continue
                xj = x[j]
                for p in range(Lp[jp], Lp[jp + 1]):
                    x[Li[p]] -= Lx[p] * xj
                flops += 2.0 * (Lp[jp + 1] - Lp[jp])
            # The pivot: the diagonal row if it is large enough, else the largest.
            ipiv = -1
            amax = 0.0
            for t in range(top, n):
                i = xi[t]
                if pinv[i] < 0:
                    a = magnitude(x[i])
                    if a > amax:
                        amax = a
                        ipiv = i
            diag = col
            if pinv[diag] < 0 and mark[diag] == k and amax > 0.0:
                if magnitude(x[diag]) >= threshold * amax:
                    ipiv = diag
        if ipiv < 0 or amax == 0.0:
            return ZERO_PIVOT, k, None, flops
        with nogil:
            pivot = x[ipiv]
            udiag[k] = pivot
            pinv[ipiv] = k
            for t in range(top, n):
                i = xi[t]
                if pinv[i] >= 0 and i != ipiv:
                    Ui[unz] = pinv[i]
                    Ux[unz] = x[i]
                    unz += 1
                elif pinv[i] < 0:
                    Li[lnz] = i
                    Lx[lnz] = x[i] / pivot
                    lnz += 1
                x[i] = 0
            Lp[k + 1] = lnz
            Up[k + 1] = unz
        if flops > max_flops:
            return OVER_BUDGET, k + 1, None, flops
    # L's rows, still A's row numbers, into pivot order.
    for p in range(lnz):
        Li[p] = pinv[Li[p]]
    # Views of the grown arrays: their spare room is freed with them.
    factors = (
        Lp_a, Lg.index[:lnz], Lg.values[:lnz], Up_a, Ug.index[:unz], Ug.values[:unz],
        udiag_a, pinv_a,
    )
    return OK, n, factors, flops


def lu_solve(const idx_t[::1] Lp, const idx_t[::1] Li, const scalar_t[::1] Lx,
             const idx_t[::1] Up, const idx_t[::1] Ui, const scalar_t[::1] Ux,
             const scalar_t[::1] udiag, const idx_t[::1] pinv, const idx_t[::1] q,
             const scalar_t[:, :] B, scalar_t[:, :] X):
    """X = A⁻¹ B with the factors of :func:`lu_factor` (P A Q = L U), column by column.

    B and X are (n, k) arrays of the factors' dtype, in any memory layout; X may not
    be B.
    """
    cdef idx_t n = Lp.shape[0] - 1, nrhs = B.shape[1]
    cdef scalar_t[::1] y = np.empty(n, dtype=np.float64 if scalar_t is double else np.complex128)
    cdef idx_t c, i, j, p
    cdef scalar_t yj
    with nogil:
        for c in range(nrhs):
            for i in range(n):  # y = P b
                y[pinv[i]] = B[i, c]
            for j in range(n):  # L y' = y, by columns
                yj = y[j]
                if yj != 0:
                    for p in range(Lp[j], Lp[j + 1]):
                        y[Li[p]] -= Lx[p] * yj
            for j in range(n - 1, -1, -1):  # U z = y', by columns
                yj = y[j] / udiag[j]
                y[j] = yj
                if yj != 0:
                    for p in range(Up[j], Up[j + 1]):
                        y[Ui[p]] -= Ux[p] * yj
            for j in range(n):  # x = Q z
                X[q[j], c] = y[j]


def backward_errors(const idx_t[::1] Ap, const idx_t[::1] Ai, const scalar_t[::1] Ax,
                    const scalar_t[:, :] X, const scalar_t[:, :] B):
    """Each column's ‖b − A x‖∞ / (‖A‖∞ ‖x‖∞ + ‖b‖∞), in one pass over A per column,
    and ‖A‖∞; a column whose value is not finite reads inf, one with x = b = 0 reads 0.

    Returns
    -------
    berr : float64 array (k,)
    norm_a : float
    """
    cdef idx_t n = Ap.shape[0] - 1, k = X.shape[1], c, i, j, p
    cdef double[::1] rowsum = np.zeros(n)
    cdef scalar_t[::1] r = np.empty(n, dtype=np.float64 if scalar_t is double else np.complex128)
    berr_a = np.empty(k)
    cdef double[::1] berr = berr_a
    cdef double norm_a = 0.0, rmax, xmax, bmax, den, v, e
    cdef bint finite
    with nogil:
        for p in range(Ap[n]):
            rowsum[Ai[p]] += magnitude(Ax[p])
        for i in range(n):
            if rowsum[i] > norm_a:
                norm_a = rowsum[i]
        for c in range(k):
            xmax = 0.0
            bmax = 0.0
            finite = True
            for i in range(n):
                r[i] = B[i, c]
                bmax = max(bmax, magnitude(B[i, c]))
            for j in range(n):
                v = magnitude(X[j, c])
                finite = finite and isfinite(v)
                xmax = max(xmax, v)
                for p in range(Ap[j], Ap[j + 1]):
                    r[Ai[p]] -= Ax[p] * X[j, c]
            rmax = 0.0
            for i in range(n):
                v = magnitude(r[i])
                finite = finite and isfinite(v)
                rmax = max(rmax, v)
            den = norm_a * xmax + bmax
            if not finite:
                e = INFINITY  # a NaN or Inf anywhere is no solution at all
            elif rmax == 0.0:
                e = 0.0
            elif not isfinite(den) and xmax > 0.0:
                # ‖A‖‖x‖ beyond the largest float: x's norm divided out of both terms.
                e = (rmax / xmax) / (norm_a + bmax / xmax)
            else:
                e = rmax / den
            berr[c] = e if isfinite(e) else INFINITY
    return berr_a, norm_a
