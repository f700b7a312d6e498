# Matching and scaling kernels: maximum-product perfect matching (MC64's job 5), structural
# rank (MC21), Ruiz's equilibration, grounded 2x2 pivot pairs.
# cython: language_level=3
#
# Follows Duff & Koster, "On algorithms for permuting large entries to the diagonal of a
# sparse matrix", SIAM J. Matrix Anal. Appl. 22(4), 2001.  Maximizing prod_j |a_{r(j) j}| is
# the assignment problem with costs
#     c_ij = log(colmax_j) - log|a_ij| >= 0,   colmax_j = max_i |a_ij|,
# solved by successive shortest augmenting paths (Dijkstra over reduced costs).  The LP duals
# u (rows) and v (columns) are kept feasible throughout:
#     c_ij - u_i - v_j >= 0 on every usable entry,  == 0 on every matched entry.
# Only u is stored during the searches; v_j of a matched column is implied by its matched
# entry, v_j = c_{r(j) j} - u_{r(j)}, and a free column is searched from with v_j = 0 (u only
# ever decreases from its initial row minima, so c_ij - u_i >= 0 there).

import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, fabs, log, sqrt
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

cnp.import_array()

ctypedef int64_t i64

cdef enum:
    NONE = -1
    DEAD = -2          # mark of a row proven unusable by a failed search
    ST_OK = 0
    ST_NOMEM = -1


# ---------------------------------------------------------------- binary heap of rows by d[i]

cdef inline void _heap_up(i64* heap, i64* hpos, const double* d, i64 p) noexcept nogil:
    cdef i64 x = heap[p], parent
    cdef double dx = d[x]
    while p > 0:
        parent = (p - 1) >> 1
        if d[heap[parent]] <= dx:
            break
        heap[p] = heap[parent]
        hpos[heap[p]] = p
        p = parent
    heap[p] = x
    hpos[x] = p


cdef inline i64 _heap_pop(i64* heap, i64* hpos, const double* d, i64 size) noexcept nogil:
    # Removes and returns the top; the caller decrements its size (size is the old one).
    cdef i64 top = heap[0], x, p = 0, c
    cdef double dx
    hpos[top] = NONE
    size -= 1
    if size == 0:
        return top
    x = heap[size]
    dx = d[x]
    while True:
        c = 2 * p + 1
        if c >= size:
            break
        if c + 1 < size and d[heap[c + 1]] < d[heap[c]]:
            c += 1
        if d[heap[c]] >= dx:
            break
        heap[p] = heap[c]
        hpos[heap[p]] = p
        p = c
    heap[p] = x
    hpos[x] = p
    return top


# ---------------------------------------------------------------- costs and initial matching

cdef void _costs(i64 n, const i64* ap, const i64* ai, const double* mag, bint use_zeros,
                 double* cost) noexcept nogil:
    # cost[k] = log(colmax_j) - log|a_k|; explicit zeros get INFINITY (not an edge) or,
    # with use_zeros, log(colmax_j) + Z as if |a_k| were exp(-Z): a matching with k zeros
    # then costs sum_j log(colmax_j) + k Z - sum(log|a| of its nonzeros), and Z > 2 n L,
    # L = max |log|a_ij||, makes the fewest zeros win first, then the largest product of
    # the nonzero entries.  Every cost stays >= 0 as Z > L >= -log(colmax_j).
    cdef i64 j, k
    cdef double cmax, lmax, lbig = 0.0, zcost
    for j in range(n):
        cmax = 0.0
        for k in range(ap[j], ap[j + 1]):
            if mag[k] > cmax:
                cmax = mag[k]
        lmax = log(cmax) if cmax > 0.0 else 0.0
        for k in range(ap[j], ap[j + 1]):
            if mag[k] > 0.0:
                cost[k] = lmax - log(mag[k])
                if fabs(log(mag[k])) > lbig:
                    lbig = fabs(log(mag[k]))
            else:
                cost[k] = lmax  # completed below, once Z is known
    zcost = 2.0 * (n + 1.0) * (lbig + 1.0)
    for k in range(ap[n]):
        if not mag[k] > 0.0:
            cost[k] = cost[k] + zcost if use_zeros else INFINITY


cdef i64 _initial_matching(i64 m, i64 n, const i64* ap, const i64* ai, const double* cost,
                           double* u, double* v, i64* rmatch, i64* cmatch, i64* wk1,
                           i64* wk2) noexcept nogil:
    # MC64's cheap start: u_i = min_j c_ij, v_j = min_i (c_ij - u_i), so every reduced cost
    # is >= 0; then match along zero reduced costs, greedily and with one-step augmentations
    # (a matched column moves to another free row of zero reduced cost).  Returns the size.
    cdef i64 i, j, k, k0, i0, jj, kk, kend, num = 0
    cdef double vj, r
    cdef i64* kmin = wk1          # entry achieving u_i (m rows)
    cdef i64* scan = wk2          # next entry of column jj worth a one-step augmentation
    for i in range(m):
        u[i] = INFINITY
        rmatch[i] = NONE
        kmin[i] = NONE
    for j in range(n):
        cmatch[j] = NONE
        scan[j] = ap[j]
        v[j] = 0.0
        for k in range(ap[j], ap[j + 1]):
            i = ai[k]
            if cost[k] < u[i]:
                u[i] = cost[k]
                kmin[i] = k
    # Each row takes the column of its row minimum when it is free (reduced cost 0 as v = 0:
    # no c_ij - u_i is negative, so the column minimum v_j is 0 there).
    for j in range(n):
        for k in range(ap[j], ap[j + 1]):
            i = ai[k]
            if kmin[i] == k and cmatch[j] == NONE and rmatch[i] == NONE:
                rmatch[i] = j
                cmatch[j] = k
                num += 1
    for j in range(n):
        if cmatch[j] == NONE:
            continue
        # v_j = min_i (c_ij - u_i) is 0 for a column matched above.
        vj = INFINITY
        for k in range(ap[j], ap[j + 1]):
            if cost[k] != INFINITY and cost[k] - u[ai[k]] < vj:
                vj = cost[k] - u[ai[k]]
        v[j] = vj
    for j in range(n):
        if cmatch[j] != NONE:
            continue
        # Column minimum of c_ij - u_i, preferring a free row among the minimizers.
        vj = INFINITY
        k0 = NONE
        for k in range(ap[j], ap[j + 1]):
            if cost[k] == INFINITY:
                continue
            r = cost[k] - u[ai[k]]
            if r < vj or (r == vj and k0 != NONE and rmatch[ai[k]] == NONE
                          and rmatch[ai[k0]] != NONE):
                vj = r
                k0 = k
        if k0 == NONE:
            continue          # no usable entry: column j cannot be matched
        v[j] = vj
        i0 = ai[k0]
        if rmatch[i0] != NONE:
            # All minimizers are matched: try to move one's column jj to a free row.
            i0 = NONE
            for k in range(k0, ap[j + 1]):
                i = ai[k]
                if cost[k] == INFINITY or cost[k] - u[i] > vj:
                    continue
                jj = rmatch[i]
                kend = ap[jj + 1]
                kk = scan[jj]
                while kk < kend:
                    # Stays valid: rows only get matched here and u, v do not change.
                    if rmatch[ai[kk]] == NONE and cost[kk] != INFINITY \
                            and (cost[kk] - u[ai[kk]]) - v[jj] <= 0.0:
                        break
                    kk += 1
                scan[jj] = kk + 1 if kk < kend else kend
                if kk < kend:
                    rmatch[ai[kk]] = jj
                    cmatch[jj] = kk
                    i0 = i
                    k0 = k
                    break
            if i0 == NONE:
                continue
        rmatch[i0] = j
        cmatch[j] = k0
        num += 1
    return num


cdef void _column_minima_matching(i64 m, i64 n, const i64* ap, const i64* ai,
                                 const double* cost, double* u, double* v, i64* rmatch,
                                 i64* cmatch) noexcept nogil:
    # The start of a rectangular problem (m > n rows), where rows may stay unmatched: their
    # duals must stay <= 0 (0 where unmatched), so MC64's row minima cannot start u. With
    # u = 0 and v_j = min_i c_ij every reduced cost is >= 0; each column takes the row of
    # its minimum when that row is free (reduced cost 0).
    cdef i64 i, j, k, k0
    cdef double vj
    for i in range(m):
        u[i] = 0.0
        rmatch[i] = NONE
    for j in range(n):
        cmatch[j] = NONE
        v[j] = 0.0
        vj = INFINITY
        k0 = NONE
        for k in range(ap[j], ap[j + 1]):
            if cost[k] < vj:
                vj = cost[k]
                k0 = k
        if k0 == NONE:
            continue
        v[j] = vj
        if rmatch[ai[k0]] == NONE:
            rmatch[ai[k0]] = j
            cmatch[j] = k0


cdef void _centre_duals(i64 n, const i64* ap, const i64* ai, const double* mag,
                        const double* cost, const i64* cmatch, double* u,
                        double* v) noexcept nogil:
    # u + t, v - t are optimal duals too.  Pick t so that log dr = u and log dc = v - lmax
    # have the same midrange: the scaling factors then over/underflow only when the scaled
    # matrix itself would need factors beyond the double range.  v is set by the caller.
    cdef i64 i, j, k
    cdef double cmax, lc, rlo = INFINITY, rhi = -INFINITY, clo = INFINITY, chi = -INFINITY, t
    for i in range(n):
        rlo = u[i] if u[i] < rlo else rlo
        rhi = u[i] if u[i] > rhi else rhi
    for j in range(n):
        cmax = 0.0
        for k in range(ap[j], ap[j + 1]):
            if mag[k] > cmax:
                cmax = mag[k]
        lc = cost[cmatch[j]] - u[ai[cmatch[j]]] - (log(cmax) if cmax > 0.0 else 0.0)
        clo = lc if lc < clo else clo
        chi = lc if lc > chi else chi
    t = ((clo + chi) - (rlo + rhi)) / 4.0
    for i in range(n):
        u[i] += t


# ---------------------------------------------------------------- shortest augmenting paths

cdef int _mpm_core(i64 m, i64 n, const i64* ap, const i64* ai, const double* mag,
                   bint use_zeros, bint perfect, i64* row_of_col, double* u, double* v,
                   i64* nfree) noexcept nogil:
    # m rows (u: m entries), n <= m columns (v, row_of_col: n entries). ``perfect``: every
    # row is to be matched (m == n), and MC64's start applies; else rows may stay free,
    # their duals stay <= 0, and every column that can be matched together with the
    # others is (a column without an augmenting path keeps none, and later augmentations
    # cannot give it one).
    cdef i64 nnz = ap[n]
    cdef double* cost = <double*> malloc((nnz + 1) * sizeof(double))
    cdef double* d = <double*> malloc(m * sizeof(double))
    cdef i64* ws = <i64*> malloc((8 * m + n) * sizeof(i64))
    if cost == NULL or d == NULL or ws == NULL:
        free(cost)
        free(d)
        free(ws)
        return ST_NOMEM
    cdef i64* rmatch = ws            # column matched to row i, or NONE
    cdef i64* heap = ws + m
    cdef i64* hpos = ws + 2 * m      # position of row i in heap, or NONE
    cdef i64* pcol = ws + 3 * m      # the shortest path reaches row i from column pcol[i]
    cdef i64* pent = ws + 4 * m      # ... through entry pent[i]
    cdef i64* mark = ws + 5 * m      # j0 when row i is final in the search from j0; DEAD
    cdef i64* touched = ws + 6 * m   # rows given a finite d in the current search
    cdef i64* final = ws + 7 * m     # rows made final in the current search, in order
    cdef i64* cmatch = ws + 8 * m    # entry k matched in column j, or NONE
    cdef i64 i, i2, j, j0, jj, k, size, ntouch, nfinal, isap, inext, t
    cdef double dmin, dnew, lsap, vj
    _costs(n, ap, ai, mag, use_zeros, cost)
    if perfect:
        _initial_matching(m, n, ap, ai, cost, u, v, rmatch, cmatch, heap, hpos)
    else:
        _column_minima_matching(m, n, ap, ai, cost, u, v, rmatch, cmatch)
    for i in range(m):
        d[i] = INFINITY
        hpos[i] = NONE
        mark[i] = NONE
    for j0 in range(n):
        if cmatch[j0] != NONE:
            continue
        # Dijkstra from the free column j0 (v_j0 = 0) over reduced costs; free rows are not
        # queued: the best one seen so far bounds the search (lsap, isap as in MC64).
        lsap = INFINITY
        isap = NONE
        size = 0
        ntouch = 0
        nfinal = 0
        dmin = 0.0
        jj = j0
        vj = 0.0
        while True:
            for k in range(ap[jj], ap[jj + 1]):
                i2 = ai[k]
                if mark[i2] == j0 or mark[i2] == DEAD or cost[k] == INFINITY:
                    continue
                dnew = dmin + (cost[k] - u[i2]) - vj
                if dnew >= lsap:
                    continue
                if rmatch[i2] == NONE:
                    lsap = dnew
                    isap = i2
                    pcol[i2] = jj
                    pent[i2] = k
                elif dnew < d[i2]:
                    if d[i2] == INFINITY:
                        touched[ntouch] = i2
                        ntouch += 1
                        heap[size] = i2
                        hpos[i2] = size
                        size += 1
                    d[i2] = dnew
                    pcol[i2] = jj
                    pent[i2] = k
                    _heap_up(heap, hpos, d, hpos[i2])
            # Next final row: the closest queued one, unless the best free row is no farther.
            if size == 0 or d[heap[0]] >= lsap:
                break
            i = _heap_pop(heap, hpos, d, size)
            size -= 1
            mark[i] = j0
            final[nfinal] = i
            nfinal += 1
            dmin = d[i]
            jj = rmatch[i]
            # v of the matched column jj, implied by its zero reduced cost.
            vj = cost[cmatch[jj]] - u[i]
        if isap == NONE:
            # No augmenting path: every row reached keeps its matched column forever (no
            # path out of this set reaches a free row), so later searches skip it.
            for t in range(nfinal):
                mark[final[t]] = DEAD
        else:
            # Dual update keeping reduced costs >= 0 and 0 on the new matched edges:
            # u_i -= lsap - d_i for the final rows (v_j of their columns rises by as much).
            for t in range(nfinal):
                i = final[t]
                u[i] -= lsap - d[i]
            # Augment along the path back to j0.
            i = isap
            while True:
                j = pcol[i]
                inext = ai[cmatch[j]] if cmatch[j] != NONE else NONE
                rmatch[i] = j
                cmatch[j] = pent[i]
                if j == j0:
                    break
                i = inext
        for t in range(ntouch):
            i = touched[t]
            d[i] = INFINITY
            hpos[i] = NONE
    nfree[0] = 0
    for i in range(m):
        if u[i] == INFINITY:
            u[i] = 0.0        # a row without usable entries (the matrix is singular)
    for j in range(n):
        if cmatch[j] == NONE:
            nfree[0] += 1
    if nfree[0] == 0 and perfect:
        _centre_duals(n, ap, ai, mag, cost, cmatch, u, v)
    for j in range(n):
        if cmatch[j] == NONE:
            row_of_col[j] = NONE
            v[j] = 0.0
        else:
            row_of_col[j] = ai[cmatch[j]]
            v[j] = cost[cmatch[j]] - u[ai[cmatch[j]]]
    free(cost)
    free(d)
    free(ws)
    return ST_OK


def _matching_run(Py_ssize_t m, Py_ssize_t n, const i64[::1] ip, const i64[::1] ix,
                  const double[::1] mag, bint use_zeros, bint perfect, i64[::1] rv,
                  double[::1] uv, double[::1] vv, name):
    """_mpm_core on checked arrays (at least one entry); the columns left unmatched."""
    cdef i64 nfree = 0
    cdef int status
    with nogil:
        status = _mpm_core(m, n, &ip[0], &ix[0], &mag[0], use_zeros, perfect, &rv[0], &uv[0],
                           &vv[0], &nfree)
    if status == ST_NOMEM:
        raise MemoryError(f"{name}: cannot allocate the workspace")
    return nfree


def _checked_csc(indptr, indices, data, Py_ssize_t m, Py_ssize_t n):
    """int64 indptr and indices and float64 |data| of an m x n CSC matrix, or a ValueError
    saying what is inconsistent."""
    ip_a = np.ascontiguousarray(indptr, dtype=np.int64).ravel()
    ix_a = np.ascontiguousarray(indices, dtype=np.int64).ravel()
    if ip_a.shape[0] != n + 1:
        raise ValueError(f"indptr must have length n + 1 = {n + 1}, got {ip_a.shape[0]}")
    if ip_a[0] != 0 or np.any(np.diff(ip_a) < 0) or ip_a[n] > ix_a.shape[0]:
        raise ValueError("indptr must start at 0, be non-decreasing and fit in indices")
    nnz = int(ip_a[n])
    mag_a = np.abs(np.asarray(data).ravel()[:nnz]).astype(np.float64)
    if mag_a.shape[0] != nnz:
        raise ValueError(f"data must hold indptr[n] = {nnz} values, got {mag_a.shape[0]}")
    if nnz > 0:
        used = ix_a[:nnz]
        if used.min() < 0 or used.max() >= m:
            raise ValueError(f"indices out of range [0, {'n' if m == n else 'm'})")
        if not np.isfinite(mag_a).all():
            raise ValueError("data must be finite (no NaN or infinity)")
    return ip_a, ix_a, mag_a


def max_product_matching(indptr, indices, data, Py_ssize_t n, bint use_zeros=False):
    """Perfect matching maximizing the product of the matched |entries| (MC64, job 5).

    Solves the assignment problem with costs ``c_ij = log(colmax_j) - log|a_ij|``
    by an MC64-style initial matching followed by shortest augmenting paths
    (Dijkstra on reduced costs, binary heap, early exit on the best free row),
    and returns the optimal LP duals with it.

    Parameters
    ----------
    indptr : ndarray of int32 or int64, shape (n + 1,)
        CSC column pointers.
    indices : ndarray of int32 or int64
        Row indices (need not be sorted). A duplicated (i, j) is taken as
        parallel entries, of which the matching may use either: sum
        duplicates first.
    data : ndarray
        Values (real or complex); only ``|data|`` is used. Must be finite.
    n : int
        Order of the matrix.
    use_zeros : bool, default False
        Explicit zeros are not edges by default (a matched zero makes the
        product 0 and no scaling can make it 1). With True they are edges of
        cost ``log(colmax_j) + Z``, as if they were ``exp(-Z)``, with
        ``Z = 2 (n + 1) (max |log|a_ij|| + 1)`` larger than the log-product
        of any matching can vary: the result then has the fewest zero entries
        possible, and the largest product of its nonzero entries among those.
        The duals stay feasible (and scale the nonzero entries as below) but
        may be huge.

    Returns
    -------
    row_of_col : ndarray of int64, shape (n,)
        Column ``j`` is matched to row ``row_of_col[j]``; ``A[row_of_col]``
        has the matched entries on its diagonal.
    u, v : ndarray of float64, shape (n,)
        Duals of rows and columns: ``c_ij - u_i - v_j >= 0`` on every nonzero
        entry (every edge), ``== 0`` on the matched ones, so the matching is
        optimal. Hence, with ``colmax_j = max_i |a_ij|`` (1 for a column of
        zeros), ``dr_i = exp(u_i)`` and ``dc_j = exp(v_j) / colmax_j`` scale
        the matrix so that ``|dr_i a_ij dc_j| = exp(-(c_ij - u_i - v_j))``
        is 1 on the matched entries and at most 1 elsewhere (MC64's
        scaling). ``u + t, v - t`` are duals too, for any t; the one
        returned gives ``log dr`` and ``log dc`` the same midrange.

    Raises
    ------
    ValueError
        If the arrays are inconsistent with ``n`` or hold non-finite values,
        or if no perfect matching exists (the message gives how many columns
        stay unmatched in a maximum matching).
    MemoryError
        If the workspace cannot be allocated.
    """
    if n < 0:
        raise ValueError("n must be non-negative")
    ip_a, ix_a, mag_a = _checked_csc(indptr, indices, data, n, n)
    nnz = int(ip_a[n])
    row_a = np.empty(n, dtype=np.int64)
    u_a = np.zeros(n, dtype=np.float64)
    v_a = np.zeros(n, dtype=np.float64)
    if n == 0:
        return row_a, u_a, v_a
    # Keep every pointer valid when there are no entries.
    if nnz == 0:
        ix_a = np.zeros(1, dtype=np.int64)
        mag_a = np.zeros(1, dtype=np.float64)
    nfree = _matching_run(n, n, ip_a, ix_a, mag_a, use_zeros, True, row_a, u_a, v_a,
                          "max_product_matching")
    if nfree:
        what = "entries" if use_zeros else "nonzero entries"
        raise ValueError(
            f"no perfect matching: the matrix is structurally singular on its {what}; "
            f"{nfree} of {n} columns stay unmatched in a maximum matching"
        )
    return row_a, u_a, v_a


def max_product_column_matching(indptr, indices, data, Py_ssize_t m, Py_ssize_t n):
    """Matching of every column of an m x n matrix (m >= n) that can be matched, to rows,
    maximizing the product of the matched |entries| (the same shortest augmenting paths
    as :func:`max_product_matching`, on a rectangular matrix).

    Parameters
    ----------
    indptr, indices, data : arrays
        CSC of the m x n matrix (as for :func:`max_product_matching`); explicit zeros are
        not edges.
    m, n : int
        Rows and columns, ``m >= n``.

    Returns
    -------
    row_of_col : ndarray of int64, shape (n,)
        The row matched to each column, -1 where none is: the matched columns are as many
        as a maximum matching has. When every column can be matched (a caller may first
        keep the columns of a maximum matching), the product is the largest of all such
        matchings.
    """
    if n < 0 or m < n:
        raise ValueError(f"max_product_column_matching needs m >= n >= 0, got m={m}, n={n}")
    ip_a, ix_a, mag_a = _checked_csc(indptr, indices, data, m, n)
    nnz = int(ip_a[n])
    row_a = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return row_a
    if nnz == 0:
        return row_a
    u_a = np.zeros(m, dtype=np.float64)
    v_a = np.zeros(n, dtype=np.float64)
    _matching_run(m, n, ip_a, ix_a, mag_a, False, False, row_a, u_a, v_a,
                  "max_product_column_matching")
    return row_a


# ---------------------------------------------------------------- grounded 2x2 pivot pairs


cdef inline void _max_heap_push(i64* heap, i64* size, const double* key, i64 x) noexcept nogil:
    cdef i64 p = size[0], parent
    size[0] += 1
    while p > 0:
        parent = (p - 1) >> 1
        if key[heap[parent]] >= key[x]:
            break
        heap[p] = heap[parent]
        p = parent
    heap[p] = x


cdef inline i64 _max_heap_pop(i64* heap, i64* size, const double* key) noexcept nogil:
    cdef i64 top = heap[0], x, p = 0, c, n
    size[0] -= 1
    n = size[0]
    if n == 0:
        return top
    x = heap[n]
    while True:
        c = 2 * p + 1
        if c >= n:
            break
        if c + 1 < n and key[heap[c + 1]] > key[heap[c]]:
            c += 1
        if key[heap[c]] <= key[x]:
            break
        heap[p] = heap[c]
        p = c
    heap[p] = x
    return top


cdef inline void _offer(i64 j, const i64* ap, const i64* ai, const double* mag,
                        const unsigned char* weak, const unsigned char* free_,
                        i64* heap, i64* size) noexcept nogil:
    """Push the entry of strong column j's one unpaired weak neighbour."""
    cdef i64 p
    for p in range(ap[j], ap[j + 1]):
        if weak[ai[p]] and free_[ai[p]] and mag[p] > 0:
            _max_heap_push(heap, size, mag, p)
            return


def grounded_pairs(indptr, indices, data, weak, free):
    """2x2 pivot pairs (weak, strong) of a symmetric matrix, each weak unknown paired
    with a strong one none of whose other weak neighbours is still unpaired, strongest
    coupling first (see :func:`pastixpy.preprocess.pivot_pairs`).

    Parameters
    ----------
    indptr, indices, data : arrays
        CSC of the symmetric n x n matrix (both triangles); explicit zeros are not edges.
    weak : bool array (n,)
        The unknowns to pair (weak diagonals).
    free : bool array (n,), modified
        Unknowns not yet paired; the pairs made are cleared.

    Returns
    -------
    pairs : ndarray of int64, shape (m, 2)
    """
    cdef Py_ssize_t n = len(weak)
    ip_a, ix_a, mag_a = _checked_csc(indptr, indices, data, n, n)
    weak_a = np.ascontiguousarray(weak, dtype=np.uint8)
    free_u8 = np.ascontiguousarray(free, dtype=np.uint8)
    cdef const i64[::1] ap = ip_a
    cdef const i64[::1] ai = ix_a
    cdef const double[::1] mag = mag_a
    cdef const unsigned char[::1] wk = weak_a
    cdef unsigned char[::1] fr = free_u8
    cdef i64 nnz = ip_a[n]
    col_a = np.repeat(np.arange(n, dtype=np.int64), np.diff(ip_a))
    cdef const i64[::1] col = col_a
    unpaired_a = np.zeros(n, dtype=np.int64)
    heap_a = np.empty(max(n, 1), dtype=np.int64)
    out_a = np.empty((n // 2 + 1, 2), dtype=np.int64)
    cdef i64[::1] unpaired = unpaired_a
    cdef i64[::1] heap = heap_a
    cdef i64[:, ::1] out = out_a
    cdef i64 size = 0, count = 0, j, p, q, i, k
    with nogil:
        for j in range(n):
            if not wk[j]:
                for p in range(ap[j], ap[j + 1]):
                    if wk[ai[p]] and mag[p] > 0:
                        unpaired[j] += 1
        for j in range(n):
            if not wk[j] and fr[j] and unpaired[j] == 1:
                _offer(j, &ap[0], &ai[0], &mag[0], &wk[0], &fr[0], &heap[0], &size)
        while size > 0:
            p = _max_heap_pop(&heap[0], &size, &mag[0])
            i = ai[p]
            j = col[p]
            if not (fr[i] and fr[j]):
                continue
            fr[i] = 0
            fr[j] = 0
            out[count, 0] = i
            out[count, 1] = j
            count += 1
            # Each strong neighbour of i has one unpaired weak neighbour fewer; one left
            # with exactly one can ground it.
            for q in range(ap[i], ap[i + 1]):
                k = ai[q]
                if not wk[k] and mag[q] > 0:
                    unpaired[k] -= 1
                    if unpaired[k] == 1 and fr[k]:
                        _offer(k, &ap[0], &ai[0], &mag[0], &wk[0], &fr[0], &heap[0], &size)
    free[:] = free_u8.astype(bool)
    return out_a[:count].copy()


# ---------------------------------------------------------------- structural rank (MC21)


def maximum_matching_size(indptr, indices, Py_ssize_t n):
    """Size of a maximum matching of columns to rows: the structural rank of A.

    Duff's MC21 (ACM TOMS 7(3), 1981): each column takes a free row of its own if
    it has one (a cheap look-ahead that resumes where the last one stopped), else
    a depth-first search for an augmenting path through matched rows, each row
    visited once per search. Values play no part.

    Parameters
    ----------
    indptr, indices : ndarray of int32 or int64
        CSC pattern of an n x n matrix (row indices in range, duplicates harmless).
    n : int

    Returns
    -------
    int
        n when A has a zero-free diagonal under some row permutation.
    """
    cdef cnp.ndarray ip_a = np.ascontiguousarray(indptr, dtype=np.int64).ravel()
    cdef cnp.ndarray ix_a = np.ascontiguousarray(indices, dtype=np.int64).ravel()
    if n < 0 or ip_a.shape[0] != n + 1:
        raise ValueError(f"indptr must have length n + 1 = {n + 1}, got {ip_a.shape[0]}")
    if ip_a[0] != 0 or np.any(np.diff(ip_a) < 0) or ip_a[n] > ix_a.shape[0]:
        raise ValueError("indptr must start at 0, be non-decreasing and fit in indices")
    if ip_a[n] and (ix_a[: ip_a[n]].min() < 0 or ix_a[: ip_a[n]].max() >= n):
        raise ValueError("indices out of range [0, n)")
    if n == 0:
        return 0
    cdef i64[::1] ap = ip_a, ai = ix_a
    cdef i64[::1] col_of_row = np.full(n, NONE, dtype=np.int64)
    # Rows once matched stay matched, so each column's look-ahead resumes where it stopped.
    cdef i64[::1] lookahead = ip_a[:n].copy()
    cdef i64[::1] next_entry = np.empty(n, dtype=np.int64)  # DFS: next entry per column
    cdef i64[::1] path = np.empty(n, dtype=np.int64)  # DFS: the columns on the path
    cdef i64[::1] via = np.empty(n, dtype=np.int64)  # via[k]: row leading to path[k]
    cdef i64[::1] seen = np.full(n, NONE, dtype=np.int64)  # row -> last search through it
    cdef i64 j, c, p, i, free_row, depth, size = 0
    with nogil:
        for j in range(n):
            path[0] = j
            next_entry[j] = ap[j]
            depth = 0
            free_row = NONE
            while depth >= 0:
                c = path[depth]
                p = lookahead[c]
                while p < ap[c + 1] and col_of_row[ai[p]] != NONE:
                    p += 1
                lookahead[c] = p
                if p < ap[c + 1]:
                    free_row = ai[p]
                    break
                # Every row of c is matched: go on through one not seen in this search.
                i = NONE
                while next_entry[c] < ap[c + 1]:
                    p = next_entry[c]
                    next_entry[c] += 1
                    if seen[ai[p]] != j:
                        i = ai[p]
                        break
                if i == NONE:
                    depth -= 1  # a dead end: back up
                    continue
                seen[i] = j
                depth += 1
                path[depth] = col_of_row[i]
                via[depth] = i
                next_entry[path[depth]] = ap[path[depth]]
            if free_row == NONE:
                continue  # column j stays unmatched
            # Augment: the last column takes the free row, each one before it the row
            # that led from it to the next.
            col_of_row[free_row] = path[depth]
            while depth > 0:
                col_of_row[via[depth]] = path[depth - 1]
                depth -= 1
            size += 1
    return size


# ---------------------------------------------------------------- equilibration (Ruiz)


def ruiz_scaling(indptr, indices, const double[::1] mag, Py_ssize_t n, bint symmetric,
                 int iterations=20, double tol=1e-2):
    """Ruiz's iterative scaling: ``diag(dr) |A| diag(dc)`` gets rows and columns of max
    entry about 1 (within ``tol``), by dividing each by the square root of its current
    maximum, at most ``iterations`` times. With ``symmetric``, dr == dc (row maxima only,
    A's pattern and magnitudes being symmetric).

    One pass over the entries per iteration computes both maxima; no matrix is formed.

    Parameters
    ----------
    indptr, indices : CSC pattern of an n x n matrix
    mag : float64 array
        |a_ij| in the pattern's order.

    Returns
    -------
    dr, dc : float64 arrays
    """
    cdef cnp.ndarray ip_a = np.ascontiguousarray(indptr, dtype=np.int64).ravel()
    cdef cnp.ndarray ix_a = np.ascontiguousarray(indices, dtype=np.int64).ravel()
    cdef const i64[::1] ip = ip_a
    cdef const i64[::1] ix = ix_a
    dr_a = np.ones(n)
    dc_a = np.ones(n)
    rmax_a = np.empty(n)
    cmax_a = np.empty(n)
    cdef double[::1] dr = dr_a, dc = dc_a, rmax = rmax_a, cmax = cmax_a
    cdef Py_ssize_t it, j, p, i
    cdef double v, worst
    if ip.shape[0] != n + 1 or ip[n] > ix.shape[0] or ip[n] > mag.shape[0]:
        raise ValueError("ruiz_scaling: the pattern does not fit n")
    with nogil:
        for it in range(iterations):
            for i in range(n):
                rmax[i] = 0
                cmax[i] = 0
            for j in range(n):
                for p in range(ip[j], ip[j + 1]):
                    i = ix[p]
                    if i < 0 or i >= n:
                        continue
                    v = dr[i] * mag[p] * dc[j]
                    if v > rmax[i]:
                        rmax[i] = v
                    if v > cmax[j]:
                        cmax[j] = v
            worst = 0
            for i in range(n):
                if rmax[i] == 0:
                    rmax[i] = 1
                if cmax[i] == 0:
                    cmax[i] = 1
                worst = max(worst, max(fabs(1 - rmax[i]), fabs(1 - cmax[i])))
            if worst < tol:
                break
            for i in range(n):
                dr[i] = dr[i] / sqrt(rmax[i])
                dc[i] = dr[i] if symmetric else dc[i] / sqrt(cmax[i])
    return dr_a, dc_a
