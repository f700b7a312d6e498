# Simplicial sparse LU: a matrix factored column by column (left-looking, Gilbert-Peierls)
# with threshold partial pivoting, and the solves with its factors.
# cython: language_level=3
"""Simplicial sparse LU for small problems, in one kernel call.

The factorization P A Q = L U is computed column by column, left-looking: column k of
A Q is solved against the columns of L found so far (a sparse triangular solve whose
nonzero pattern is the set of rows reachable from A's column in the graph of L, found
by a depth-first search, so that its cost is proportional to the flops, not to n),
then a pivot is chosen among the rows not yet pivotal by one of two rules:

- ``PREFER_DIAGONAL``: the column's own row (the diagonal of A under the symmetric
  ordering Q) when its magnitude is at least ``threshold`` times the largest
  candidate's, else the largest: the diagonal preference of KLU and UMFPACK's
  symmetric strategy; on a matrix whose diagonal is strong, the ordering's fill
  forecast holds.
- ``PREFER_SPARSE_ROW``: among the candidates at least ``threshold`` times the
  largest, the row with the fewest entries in A (the larger magnitude among equals),
  as UMFPACK's unsymmetric strategy prefers sparse pivot rows within its threshold:
  a column order from AᵀA (COLAMD) bounds the fill for any row choice, and a sparse
  pivot row spreads less of it into U.

This is the algorithm of Gilbert and Peierls (1988).

No supernodes, no BLAS: the caller forecasts the flops from its ordering and gives a
budget; a factorization whose pivots leave the diagonal and make fill the ordering
did not plan for stops at the budget and says so (the caller then takes the
supernodal pipeline).

L is unit lower triangular (its diagonal not stored), U's diagonal is kept apart; both
column-compressed, their row indices in pivot order once the factorization ends.
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, fabs, isfinite
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

cnp.import_array()

ctypedef int64_t idx_t

ctypedef fused scalar_t:
    double
    double complex

include "sparse/residual.pxi"


cdef enum:
    C_OK = 0
    C_ZERO_PIVOT = 1
    C_OVER_BUDGET = 2

#: Statuses of :func:`lu_factor`.
OK = C_OK
ZERO_PIVOT = C_ZERO_PIVOT  # no nonzero candidate: A is singular (structurally or numerically)
OVER_BUDGET = C_OVER_BUDGET  # the flop budget was passed

cdef enum:
    C_PREFER_DIAGONAL = 0
    C_PREFER_SPARSE_ROW = 1

#: Pivot rules of :func:`lu_factor` (see the module docstring).
PREFER_DIAGONAL = C_PREFER_DIAGONAL
PREFER_SPARSE_ROW = C_PREFER_SPARSE_ROW


cdef inline const idx_t* iptr(const idx_t[::1] a) noexcept nogil:
    """The data of an index array, NULL when empty (no element to bounds-check)."""
    return &a[0] if a.shape[0] > 0 else NULL


cdef inline const scalar_t* vptr(const scalar_t[::1] a) noexcept nogil:
    """The data of a value array, NULL when empty."""
    return &a[0] if a.shape[0] > 0 else NULL


cdef idx_t reach(idx_t col, const idx_t* Ap, const idx_t* Ai, const idx_t* Lp,
                 const idx_t* Lpend, const idx_t* Li, const idx_t* pinv, idx_t* mark,
                 idx_t stamp, idx_t* stack, idx_t* pstack, idx_t* xi, idx_t* cand,
                 idx_t* ncand, idx_t n) noexcept nogil:
    """The pattern of x = L⁻¹ A(:, col): its rows already pivotal in topological order in
    ``xi[top:n]`` (top returned), the others (the candidate pivots, L's column) in
    ``cand[:ncand]``, in no order.

    A depth-first search from each row of A's column through the graph of L: a row
    pivotal at step j leads to the rows of L(:, j) up to ``Lpend[j]`` (its end, or less
    where symmetric pruning left the rest to a later column, see :func:`lu_factor`); a
    row not yet pivotal leads nowhere. A pivotal row is written to ``xi`` (from the end
    down) once all rows it leads to are, so that reading ``xi`` upwards visits each row
    before the rows it updates. ``mark[i] == stamp``: row i already visited.
    """
    cdef idx_t top = n, head, p, q, j, jp, pend, r, nc = 0
    for p in range(Ap[col], Ap[col + 1]):
        j = Ai[p]
        if mark[j] == stamp:
            continue
        mark[j] = stamp
        jp = pinv[j]
        if jp < 0:
            cand[nc] = j
            nc += 1
            continue
        head = 0
        stack[0] = j
        pstack[0] = Lp[jp]
        while head >= 0:
            j = stack[head]
            jp = pinv[j]
            pend = Lpend[jp]
            q = pstack[head]
            while q < pend:
                r = Li[q]
                q += 1
                if mark[r] == stamp:
                    continue
                mark[r] = stamp
                if pinv[r] < 0:  # a leaf: straight to the candidates
                    cand[nc] = r
                    nc += 1
                    continue
                pstack[head] = q  # resume after this child
                head += 1
                stack[head] = r
                pstack[head] = Lp[pinv[r]]
                break
            else:
                head -= 1
                top -= 1
                xi[top] = j
    ncand[0] = nc
    return top


cdef bint ensure(void** index, void** values, idx_t* capacity, idx_t needed,
                 size_t itemsize) noexcept nogil:
    """Room for ``needed`` entries in a factor's growing arrays (doubled); False when
    memory runs out (the arrays are then still valid, at their old size)."""
    if needed <= capacity[0]:
        return True
    cdef idx_t cap = max(2 * capacity[0], needed)
    cdef void* a = realloc(index[0], cap * sizeof(idx_t))
    if a == NULL:
        return False
    index[0] = a
    a = realloc(values[0], cap * itemsize)
    if a == NULL:
        return False
    values[0] = a
    capacity[0] = cap
    return True


cdef int factor_columns(idx_t n, const idx_t* Ap, const idx_t* Ai, const scalar_t* Ax,
                        const idx_t* q, double threshold, int rule, double max_flops,
                        double max_committed, idx_t* Lp,
                        idx_t* Up, idx_t* pinv, scalar_t* udiag, idx_t** Li, scalar_t** Lx,
                        idx_t* lcap, idx_t** Ui, scalar_t** Ux, idx_t* ucap, idx_t* work,
                        scalar_t* x, idx_t* kout, double* fout) noexcept nogil:
    """The loop of :func:`lu_factor` on raw arrays: its status (or -1: out of memory),
    the column reached in ``kout``, the flops in ``fout``. ``work``: 8 n integers."""
    cdef idx_t* mark = work
    cdef idx_t* stack = work + n
    cdef idx_t* pstack = work + 2 * n
    cdef idx_t* xi = work + 3 * n
    cdef idx_t* cand = work + 4 * n
    cdef idx_t* Lpend = work + 5 * n
    cdef idx_t* pruned = work + 6 * n
    cdef idx_t* rowcount = work + 7 * n
    cdef idx_t k, col, top, t, i, j, jp, p, p0, p1, ipiv, ncand, lnz = 0, unz = 0
    cdef idx_t head, tail
    cdef idx_t* L_i
    cdef scalar_t* L_x
    cdef double flops = 0.0, committed = 0.0, amax, a, adiag, apiv
    cdef scalar_t xj, pivot, v
    for i in range(n):
        mark[i] = -1
        pinv[i] = -1
        rowcount[i] = 0
    for p in range(Ap[n]):
        rowcount[Ai[p]] += 1
    Lp[0] = 0
    Up[0] = 0
    for k in range(n):
        # Room for the column's worst case (every row in its pattern) in L and U.
        if not ensure(<void**>Li, <void**>Lx, lcap, lnz + n, sizeof(scalar_t)):
            return -1
        if not ensure(<void**>Ui, <void**>Ux, ucap, unz + n, sizeof(scalar_t)):
            return -1
        L_i = Li[0]
        L_x = Lx[0]
        col = q[k]
        top = reach(col, Ap, Ai, Lp, Lpend, L_i, pinv, mark, k, stack, pstack, xi,
                    cand, &ncand, n)
        for p in range(Ap[col], Ap[col + 1]):
            x[Ai[p]] = Ax[p]
        for t in range(top, n):  # x = L⁻¹ A(:, col), pivotal rows in topological order
            j = xi[t]
            jp = pinv[j]
            xj = x[j]
            p1 = Lp[jp + 1]
            for p in range(Lp[jp], p1):
                x[L_i[p]] -= L_x[p] * xj
            flops += 2.0 * (p1 - Lp[jp])
        # The pivot: the diagonal row if it is large enough, else the largest; among
        # equals (±1 in a circuit's column) the row with fewest entries in A, as
        # Markowitz's rule would, for less fill.
        ipiv = -1
        amax = 0.0
        adiag = -1.0
        for t in range(ncand):
            i = cand[t]
            a = magnitude(x[i])
            if a > amax or (a == amax and a > 0.0 and rowcount[i] < rowcount[ipiv]):
                amax = a
                ipiv = i
            if i == col:
                adiag = a
        if ipiv < 0:
            kout[0] = k
            fout[0] = flops
            return C_ZERO_PIVOT
        if rule == C_PREFER_SPARSE_ROW:
            apiv = amax
            for t in range(ncand):
                i = cand[t]
                if rowcount[i] <= rowcount[ipiv] and i != ipiv:
                    a = magnitude(x[i])
                    if a >= threshold * amax and (rowcount[i] < rowcount[ipiv] or a > apiv):
                        ipiv = i
                        apiv = a
        elif adiag >= threshold * amax:
            ipiv = col
        pivot = x[ipiv]
        udiag[k] = pivot
        pinv[ipiv] = k
        x[ipiv] = 0
        # U's column: the pivotal rows, by their pivot step.
        for t in range(top, n):
            j = xi[t]
            Ui[0][unz] = pinv[j]
            Ux[0][unz] = x[j]
            unz += 1
            x[j] = 0
        Up[k + 1] = unz
        # L's column: the other candidates over the pivot (A's row numbers till the end).
        for t in range(ncand):
            i = cand[t]
            if i != ipiv:
                L_i[lnz] = i
                L_x[lnz] = x[i] / pivot
                lnz += 1
                x[i] = 0
        Lp[k + 1] = lnz
        Lpend[k] = lnz
        pruned[k] = 0
        committed += 2.0 * (lnz - Lp[k]) * (lnz - Lp[k])
        # Symmetric pruning (Eisenstat and Liu): where U(j, k) and L(ipiv, j) are both
        # nonzero, every row of L(:, j) not yet pivotal is in L(:, k) too, reachable
        # through k: the searches to come walk L(:, j)'s pivotal rows only.
        for t in range(top, n):
            jp = pinv[xi[t]]
            if pruned[jp]:
                continue
            p0 = Lp[jp]
            p1 = Lp[jp + 1]
            for p in range(p0, p1):
                if L_i[p] == ipiv:
                    break
            else:
                continue
            head = p0
            tail = p1
            while head < tail:  # pivotal rows first; values move with their rows
                i = L_i[head]
                if pinv[i] >= 0:
                    head += 1
                else:
                    tail -= 1
                    L_i[head] = L_i[tail]
                    L_i[tail] = i
                    v = L_x[head]
                    L_x[head] = L_x[tail]
                    L_x[tail] = v
            Lpend[jp] = head
            pruned[jp] = 1
        if flops > max_flops or committed > max_committed:
            kout[0] = k + 1
            fout[0] = flops
            return C_OVER_BUDGET
    # L's rows, still A's row numbers, into pivot order.
    L_i = Li[0]
    for p in range(lnz):
        L_i[p] = pinv[L_i[p]]
    kout[0] = n
    fout[0] = flops
    return C_OK


def lu_factor(const idx_t[::1] Ap, const idx_t[::1] Ai, const scalar_t[::1] Ax,
              const idx_t[::1] q, double threshold, double max_flops,
              double max_committed=INFINITY, int rule=C_PREFER_DIAGONAL):
    """P A Q = L U of a canonical CSC matrix, column by column (see the module docstring).

    Parameters
    ----------
    Ap, Ai, Ax : arrays
        A's CSC arrays (sorted rows, no duplicates), float64 or complex128 values.
    q : int64 array
        The column order: column k of A Q is A's column ``q[k]``, and the row preferred
        as its pivot is row ``q[k]`` (the diagonal of Qᵀ A Q).
    threshold : float
        A preferred row is the pivot when its magnitude is at least this fraction of
        the largest candidate's (1: partial pivoting; smaller: the preference more
        often).
    max_flops : float
        Stop with OVER_BUDGET once the flops exceed this.
    max_committed : float, optional
        Stop with OVER_BUDGET once twice the sum of the squared lengths of L's columns
        so far exceeds this: the flops those columns will cost where U's pattern mirrors
        L's (the measure of an ordering's forecast for diagonal pivots), known as soon
        as a column is, where the flops so far lag behind the fill that causes them.
    rule : int, optional
        PREFER_DIAGONAL (the row ``q[k]``) or PREFER_SPARSE_ROW (the row with the
        fewest entries in A): which row the threshold lets win.

    Returns
    -------
    status : int
        OK, ZERO_PIVOT or OVER_BUDGET.
    k : int
        The column reached (n when OK).
    factors : tuple or None
        ``(Lp, Li, Lx, Up, Ui, Ux, udiag, pinv)`` when OK: row i of A is row
        ``pinv[i]`` of P A; L and U column-compressed in pivot order (the rows of a
        column in no particular order).
    flops : float
        Multiply-adds times two (complex ones counted as real ones).
    """
    cdef idx_t n = Ap.shape[0] - 1
    dtype = np.float64 if scalar_t is double else np.complex128
    Lp_a = np.empty(n + 1, dtype=np.int64)
    Up_a = np.empty(n + 1, dtype=np.int64)
    pinv_a = np.empty(n + 1, dtype=np.int64)
    udiag_a = np.empty(n + 1, dtype=dtype)
    cdef idx_t[::1] Lp = Lp_a, Up = Up_a, pinv = pinv_a
    cdef scalar_t[::1] udiag = udiag_a
    cdef idx_t[::1] work = np.empty(8 * n + 1, dtype=np.int64)
    cdef scalar_t[::1] x = np.zeros(n + 1, dtype=dtype)
    # L and U grow in C memory (the whole loop runs without the GIL), copied out at the end.
    cdef idx_t lcap = 2 * Ap[n] + n + 1, ucap = 2 * Ap[n] + n + 1, k = 0, lnz, unz
    cdef idx_t* Li = <idx_t*>malloc(lcap * sizeof(idx_t))
    cdef scalar_t* Lx = <scalar_t*>malloc(lcap * sizeof(scalar_t))
    cdef idx_t* Ui = <idx_t*>malloc(ucap * sizeof(idx_t))
    cdef scalar_t* Ux = <scalar_t*>malloc(ucap * sizeof(scalar_t))
    cdef const scalar_t* Ax_p = &Ax[0] if Ax.shape[0] > 0 else NULL
    cdef const idx_t* Ai_p = &Ai[0] if Ai.shape[0] > 0 else NULL
    cdef const idx_t* q_p = &q[0] if n > 0 else NULL
    cdef double flops = 0.0
    cdef int status = -1
    cdef idx_t[::1] Li_v, Ui_v
    if rule != C_PREFER_DIAGONAL and rule != C_PREFER_SPARSE_ROW:
        raise ValueError(f"lu_factor: rule must be PREFER_DIAGONAL or PREFER_SPARSE_ROW, got {rule}")
    cdef scalar_t[::1] Lx_v, Ux_v
    try:
        if Li != NULL and Lx != NULL and Ui != NULL and Ux != NULL:
            with nogil:
                status = factor_columns(
                    n, &Ap[0], Ai_p, Ax_p, q_p, threshold, rule, max_flops, max_committed,
                    &Lp[0], &Up[0],
                    &pinv[0], &udiag[0], &Li, &Lx, &lcap, &Ui, &Ux, &ucap, &work[0], &x[0],
                    &k, &flops,
                )
        if status < 0:
            raise MemoryError(f"lu_factor: out of memory for the factors of a {n} x {n} matrix")
        if status != OK:
            return status, k, None, flops
        lnz = Lp[n]
        unz = Up[n]
        Li_a = np.empty(lnz + 1, dtype=np.int64)
        Lx_a = np.empty(lnz + 1, dtype=dtype)
        Ui_a = np.empty(unz + 1, dtype=np.int64)
        Ux_a = np.empty(unz + 1, dtype=dtype)
        Li_v, Lx_v, Ui_v, Ux_v = Li_a, Lx_a, Ui_a, Ux_a
        memcpy(&Li_v[0], Li, lnz * sizeof(idx_t))
        memcpy(&Lx_v[0], Lx, lnz * sizeof(scalar_t))
        memcpy(&Ui_v[0], Ui, unz * sizeof(idx_t))
        memcpy(&Ux_v[0], Ux, unz * sizeof(scalar_t))
        Li_a, Lx_a, Ui_a, Ux_a = Li_a[:lnz], Lx_a[:lnz], Ui_a[:unz], Ux_a[:unz]
        factors = (Lp_a, Li_a, Lx_a, Up_a, Ui_a, Ux_a, udiag_a[:n], pinv_a[:n])
        return OK, n, factors, flops
    finally:
        free(Li)
        free(Lx)
        free(Ui)
        free(Ux)


cdef void solve_column(idx_t n, const idx_t* Lp, const idx_t* Li, const scalar_t* Lx,
                       const idx_t* Up, const idx_t* Ui, const scalar_t* Ux,
                       const scalar_t* udiag, const idx_t* pinv, const idx_t* q,
                       const scalar_t* b, scalar_t* y, scalar_t* x) noexcept nogil:
    """x = A⁻¹ b with the factors of :func:`lu_factor`; y: n of workspace."""
    cdef idx_t i, j, p, p1
    cdef scalar_t yj
    for i in range(n):  # y = P b
        y[pinv[i]] = b[i]
    for j in range(n):  # L y' = y, by columns
        yj = y[j]
        if yj != 0:
            p1 = Lp[j + 1]
            for p in range(Lp[j], p1):
                y[Li[p]] -= Lx[p] * yj
    for j in range(n - 1, -1, -1):  # U z = y', by columns
        yj = y[j] / udiag[j]
        y[j] = yj
        if yj != 0:
            p1 = Up[j + 1]
            for p in range(Up[j], p1):
                y[Ui[p]] -= Ux[p] * yj
    for j in range(n):  # x = Q z
        x[q[j]] = y[j]


def lu_solve(const idx_t[::1] Lp, const idx_t[::1] Li, const scalar_t[::1] Lx,
             const idx_t[::1] Up, const idx_t[::1] Ui, const scalar_t[::1] Ux,
             const scalar_t[::1] udiag, const idx_t[::1] pinv, const idx_t[::1] q,
             const scalar_t[:, :] B, scalar_t[:, :] X):
    """X = A⁻¹ B with the factors of :func:`lu_factor` (P A Q = L U), column by column.

    B and X are (n, k) arrays of the factors' dtype, in any memory layout; X may not
    be B.
    """
    cdef idx_t n = Lp.shape[0] - 1, nrhs = B.shape[1], c, i
    dtype = np.float64 if scalar_t is double else np.complex128
    cdef scalar_t[::1] work = np.empty(3 * n + 1, dtype=dtype)
    cdef scalar_t* y = &work[0]
    cdef scalar_t* b = y + n
    cdef scalar_t* x = y + 2 * n
    cdef const idx_t* Lp_ = iptr(Lp)
    cdef const idx_t* Li_ = iptr(Li)
    cdef const idx_t* Up_ = iptr(Up)
    cdef const idx_t* Ui_ = iptr(Ui)
    cdef const idx_t* pinv_ = iptr(pinv)
    cdef const idx_t* q_ = iptr(q)
    cdef const scalar_t* Lx_ = vptr(Lx)
    cdef const scalar_t* Ux_ = vptr(Ux)
    cdef const scalar_t* ud_ = vptr(udiag)
    if n == 0:
        return
    with nogil:
        for c in range(nrhs):
            for i in range(n):
                b[i] = B[i, c]
            solve_column(n, Lp_, Li_, Lx_, Up_, Ui_, Ux_, ud_, pinv_, q_, b, y, x)
            for i in range(n):
                X[i, c] = x[i]


def solve_refined(const idx_t[::1] Ap, const idx_t[::1] Ai, const scalar_t[::1] Ax,
                  const idx_t[::1] Lp, const idx_t[::1] Li, const scalar_t[::1] Lx,
                  const idx_t[::1] Up, const idx_t[::1] Ui, const scalar_t[::1] Ux,
                  const scalar_t[::1] udiag, const idx_t[::1] pinv, const idx_t[::1] q,
                  const scalar_t[:, :] B, scalar_t[:, :] X, double tol, int max_steps):
    """X = A⁻¹ B with the factors of :func:`lu_factor`, each column refined while its
    backward error is above ``tol`` and falls, at most ``max_steps`` times: the solve,
    the check and the refinement in one call.

    Each step solves for the residual's correction (x += A⁻¹ (b − A x)) and keeps it
    when the backward error falls; the residual of the check is the next step's.

    Parameters
    ----------
    Ap, Ai, Ax : arrays
        A's CSC arrays.
    Lp, Li, Lx, Up, Ui, Ux, udiag, pinv : arrays
        The factors of :func:`lu_factor`.
    q : int64 array
        Its column order.
    B, X : (n, k) arrays of A's dtype
        The right-hand sides and the solutions (written), in any layout; X may not be B.
    tol : float
    max_steps : int

    Returns
    -------
    berr : float64 array (k,)
        Each column's backward error, as :func:`backward_errors`.
    growth : float64 array (k,)
        Each column's ‖A‖∞ ‖x‖∞ / ‖b‖∞ (0 where x = 0, inf where only b is).
    steps : int64 array (k,)
        The refinement steps each column kept.
    """
    cdef idx_t n = Ap.shape[0] - 1, k = B.shape[1], c, i, step
    dtype = np.float64 if scalar_t is double else np.complex128
    berr_a = np.zeros(k)
    growth_a = np.zeros(k)
    steps_a = np.zeros(k, dtype=np.int64)
    cdef double[::1] berr = berr_a, growth = growth_a
    cdef idx_t[::1] steps = steps_a
    cdef double[::1] rowsum = np.empty(n + 1)
    cdef scalar_t[::1] work = np.empty(6 * n + 1, dtype=dtype)
    cdef scalar_t* y = &work[0]
    cdef scalar_t* b = y + n
    cdef scalar_t* x = y + 2 * n
    cdef scalar_t* r = y + 3 * n
    cdef scalar_t* x_new = y + 4 * n
    cdef scalar_t* r_new = y + 5 * n
    cdef scalar_t* t
    cdef double norm_a, e, e_new, g, g_new
    cdef const idx_t* Ap_ = iptr(Ap)
    cdef const idx_t* Ai_ = iptr(Ai)
    cdef const scalar_t* Ax_ = vptr(Ax)
    cdef const idx_t* Lp_ = iptr(Lp)
    cdef const idx_t* Li_ = iptr(Li)
    cdef const idx_t* Up_ = iptr(Up)
    cdef const idx_t* Ui_ = iptr(Ui)
    cdef const idx_t* pinv_ = iptr(pinv)
    cdef const idx_t* q_ = iptr(q)
    cdef const scalar_t* Lx_ = vptr(Lx)
    cdef const scalar_t* Ux_ = vptr(Ux)
    cdef const scalar_t* ud_ = vptr(udiag)
    if n == 0:
        return berr_a, growth_a, steps_a
    with nogil:
        norm_a = row_norm(n, Ap_, Ai_, Ax_, &rowsum[0])
        for c in range(k):
            for i in range(n):
                b[i] = B[i, c]
            solve_column(n, Lp_, Li_, Lx_, Up_, Ui_, Ux_, ud_, pinv_, q_, b, y, x)
            e = residual(n, Ap_, Ai_, Ax_, norm_a, x, b, r, &g)
            for step in range(max_steps):
                if not e > tol:
                    break
                solve_column(n, Lp_, Li_, Lx_, Up_, Ui_, Ux_, ud_, pinv_, q_, r, y, x_new)
                for i in range(n):
                    x_new[i] = x_new[i] + x[i]
                e_new = residual(n, Ap_, Ai_, Ax_, norm_a, x_new, b, r_new, &g_new)
                if not e_new < e:
                    break
                t = x
                x = x_new
                x_new = t
                t = r
                r = r_new
                r_new = t
                e = e_new
                g = g_new
                steps[c] += 1
            for i in range(n):
                X[i, c] = x[i]
            berr[c] = e
            growth[c] = g
    return berr_a, growth_a, steps_a


def backward_errors(const idx_t[::1] Ap, const idx_t[::1] Ai, const scalar_t[::1] Ax,
                    const scalar_t[:, :] X, const scalar_t[:, :] B):
    """Each column's ‖b − A x‖∞ / (‖A‖∞ ‖x‖∞ + ‖b‖∞), in one pass over A per column,
    and ‖A‖∞; a column whose value is not finite reads inf, one with x = b = 0 reads 0.

    Returns
    -------
    berr : float64 array (k,)
    norm_a : float
    """
    cdef idx_t n = Ap.shape[0] - 1, k = X.shape[1], c, i
    dtype = np.float64 if scalar_t is double else np.complex128
    berr_a = np.zeros(k)
    cdef double[::1] berr = berr_a
    cdef double[::1] rowsum = np.empty(n + 1)
    cdef scalar_t[::1] work = np.empty(3 * n + 1, dtype=dtype)
    cdef scalar_t* b = &work[0]
    cdef scalar_t* x = b + n
    cdef scalar_t* r = b + 2 * n
    cdef double norm_a = 0.0, g
    cdef const idx_t* Ap_ = iptr(Ap)
    cdef const idx_t* Ai_ = iptr(Ai)
    cdef const scalar_t* Ax_ = vptr(Ax)
    if n == 0:
        return berr_a, norm_a
    with nogil:
        norm_a = row_norm(n, Ap_, Ai_, Ax_, &rowsum[0])
        for c in range(k):
            for i in range(n):
                b[i] = B[i, c]
                x[i] = X[i, c]
            berr[c] = residual(n, Ap_, Ai_, Ax_, norm_a, x, b, r, &g)
    return berr_a, norm_a


def diagonal_nonzeros(const idx_t[::1] Ap, const idx_t[::1] Ai, const scalar_t[::1] Ax):
    """The number of nonzero entries on the diagonal of a CSC matrix whose row indices
    are sorted in each column (a canonical one): what decides whether pivots on the
    diagonal are possible, counted without forming the diagonal."""
    cdef idx_t n = Ap.shape[0] - 1, j, p, count = 0
    cdef const idx_t* Ap_ = iptr(Ap)
    cdef const idx_t* Ai_ = iptr(Ai)
    cdef const scalar_t* Ax_ = vptr(Ax)
    if n <= 0:
        return 0
    with nogil:
        for j in range(n):
            for p in range(Ap_[j], Ap_[j + 1]):
                if Ai_[p] >= j:
                    if Ai_[p] == j and magnitude(Ax_[p]) != 0.0:
                        count += 1
                    break
    return count


def weak_diagonals(const idx_t[::1] Ap, const idx_t[::1] Ai, const scalar_t[::1] Ax,
                   double threshold):
    """The number of columns of a canonical CSC matrix whose diagonal entry (0 where
    none is stored) is below ``threshold`` times the largest magnitude in its column:
    the columns whose diagonal :func:`lu_factor`'s PREFER_DIAGONAL rule could not take
    as the first pivot. An empty column counts as weak."""
    cdef idx_t n = Ap.shape[0] - 1, j, p, count = 0
    cdef double top, d, a
    cdef const idx_t* Ap_ = iptr(Ap)
    cdef const idx_t* Ai_ = iptr(Ai)
    cdef const scalar_t* Ax_ = vptr(Ax)
    if n <= 0:
        return 0
    with nogil:
        for j in range(n):
            top = 0.0
            d = 0.0
            for p in range(Ap_[j], Ap_[j + 1]):
                a = magnitude(Ax_[p])
                top = max(top, a)
                if Ai_[p] == j:
                    d = a
            if not (d > 0.0 and d >= threshold * top):
                count += 1
    return count


def lu_checks(const idx_t[::1] Ap, const scalar_t[::1] Ax, const scalar_t[::1] Ux,
              const scalar_t[::1] udiag, const idx_t[::1] q):
    """What the small path's verdict reads of complete factors of :func:`lu_factor` and
    the matrix A they factor, in one pass: ``(top, smallest)``, top the largest
    magnitude in U (its diagonal included), smallest the least |u_kk| relative to the largest magnitude in column
    q[k] of A (inf where n = 0; a zero column, which a complete factorization never
    meets, is left out)."""
    cdef idx_t n = udiag.shape[0], j, p
    cdef double top = 0.0, smallest = INFINITY, d, colmax
    with nogil:
        for p in range(Ux.shape[0]):
            top = max(top, magnitude(Ux[p]))
        for j in range(n):
            d = magnitude(udiag[j])
            top = max(top, d)
            colmax = 0.0
            for p in range(Ap[q[j]], Ap[q[j] + 1]):
                colmax = max(colmax, magnitude(Ax[p]))
            if colmax > 0:
                smallest = min(smallest, d / colmax)
    return top, smallest

