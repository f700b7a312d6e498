# Column approximate minimum degree ordering of an unsymmetric sparse matrix (COLAMD's method).
# cython: language_level=3
#
# Orders the columns of A as approximate minimum degree orders the graph of AᵀA, without
# forming it (Davis, Gilbert, Larimore & Ng, "A column approximate minimum degree ordering
# algorithm", ACM TOMS 30(3), 2004). Each row of A is a clique of its columns in AᵀA: the
# rows are the initial elements of a quotient graph whose variables are the columns.
# Eliminating a column merges the rows (elements) it touches into one new element, which
# takes the slot of one of them. One integer workspace ``iw`` holds
#   * for a live column: its live rows and elements (stale dead ones skipped, rmark < 0);
#   * for a live row or element: its columns (stale ones skipped, thick <= 0).
# A column's degree is exact at first (its neighbours in AᵀA counted), then the approximate
# external degree of AMD (Amestoy, Davis & Duff, 1996): the sum over its elements of
# |Le \ Lme| plus |Lme|, capped by the columns left.
# Set aside and ordered last, as COLAMD does: dense columns, empty ones, those in dense rows
# only; and, as AMD does with dense vertices, columns of many neighbours in AᵀA.

import numpy as np

from pastixpy.errors import InvalidInputError

cimport numpy as cnp
from libc.math cimport sqrt
from libc.stdint cimport INT64_MAX, int64_t
from libc.stdlib cimport free, malloc, realloc

cnp.import_array()

ctypedef int64_t i64

cdef enum:
    EMPTY = -1
    DEAD = -1          # rmark of a row absorbed into an element, or set aside (dense, empty)
    ST_OK = 0
    ST_NOMEM = -1
    ST_BROKEN = -2
    # Why a column was set aside before the elimination (its score), in the order the
    # groups take at the end of the permutation.
    DENSE_IN_ATA = -1
    ONLY_DENSE_ROWS = -2
    DENSE_COLUMN = -3
    EMPTY_COLUMN = -4


cdef inline i64 _flip(i64 i) noexcept nogil:
    # Encodes an owner as a value <= -2, distinct from every stored entry (all >= 0).
    return -i - 2


cdef inline void _dlist_remove(i64 i, i64 b, i64* head, i64* dnext, i64* dlast) noexcept nogil:
    cdef i64 inext = dnext[i], ilast = dlast[i]
    if inext != EMPTY:
        dlast[inext] = ilast
    if ilast != EMPTY:
        dnext[ilast] = inext
    else:
        head[b] = inext


cdef inline void _dlist_insert(i64 i, i64 b, i64* head, i64* dnext, i64* dlast) noexcept nogil:
    dnext[i] = head[b]
    dlast[i] = EMPTY
    if head[b] != EMPTY:
        dlast[head[b]] = i
    head[b] = i


cdef inline void _chain_append(i64 dst, i64 src, i64* cnext, i64* ctail) noexcept nogil:
    # The columns represented by src are ordered right after those of dst.
    cnext[ctail[dst]] = src
    ctail[dst] = ctail[src]


cdef i64 _compact(i64* iw, i64 pfree, i64 n, i64 m, i64* cstart, i64* clen, const i64* thick,
                  i64* rstart, i64* rlen, const i64* rmark) noexcept nogil:
    # Garbage collection: slide every live list to the front of iw, dropping its stale
    # entries (dead rows from a column's list, dead columns from a row's). The first entry
    # of each live list is swapped with a negative tag naming its owner (columns 0..n-1,
    # rows n..n+m-1), so one left-to-right scan finds the lists.
    cdef i64 c, r, o, p, src, dst, k, cnt, x
    for c in range(n):
        if thick[c] > 0 and clen[c] > 0:
            p = cstart[c]
            cstart[c] = iw[p]
            iw[p] = _flip(c)
    for r in range(m):
        if rmark[r] >= 0 and rlen[r] > 0:
            p = rstart[r]
            rstart[r] = iw[p]
            iw[p] = _flip(n + r)
    src = 0
    dst = 0
    while src < pfree:
        if iw[src] >= 0:
            src += 1
            continue
        o = _flip(iw[src])
        # dst <= src throughout: each write lands on an entry already read.
        if o < n:
            x = cstart[o]
            cnt = clen[o]
            cstart[o] = dst
            if rmark[x] >= 0:
                iw[dst] = x
                dst += 1
            for k in range(src + 1, src + cnt):
                x = iw[k]
                if rmark[x] >= 0:
                    iw[dst] = x
                    dst += 1
            clen[o] = dst - cstart[o]
        else:
            r = o - n
            x = rstart[r]
            cnt = rlen[r]
            rstart[r] = dst
            if thick[x] > 0:
                iw[dst] = x
                dst += 1
            for k in range(src + 1, src + cnt):
                x = iw[k]
                if thick[x] > 0:
                    iw[dst] = x
                    dst += 1
            rlen[r] = dst - rstart[r]
        src += cnt
    return dst


cdef int _colamd_core(i64 m, i64 n, const i64* cp, const i64* ci, double dense_row,
                      double dense_col, double dense_degree, bint aggressive,
                      i64* perm) noexcept nogil:
    cdef i64 nnz = cp[n]
    cdef i64 iwlen = 2 * nnz + nnz // 5 + n + 16
    cdef i64* iw = <i64*> malloc(iwlen * sizeof(i64))
    cdef i64* cws = <i64*> malloc((9 * n + 1) * sizeof(i64))
    cdef i64* rws = <i64*> malloc((4 * m + 1) * sizeof(i64))
    cdef i64* newiw
    if iw == NULL or cws == NULL or rws == NULL:
        free(iw)
        free(cws)
        free(rws)
        return ST_NOMEM
    cdef i64* cstart = cws
    cdef i64* clen = cws + n
    cdef i64* thick = cws + 2 * n     # columns a principal column stands for; < 0: in Lme
    cdef i64* score = cws + 3 * n     # approximate degree; < 0: why set aside
    cdef i64* dnext = cws + 4 * n     # degree-list links; hash-bucket links for Lme columns
    cdef i64* dlast = cws + 5 * n     # degree-list links; hash value for Lme columns
    cdef i64* hhead = NULL            # hash buckets of the supercolumn search
    cdef i64* cnext = cws + 6 * n     # chain of the columns a principal column stands for
    cdef i64* ctail = cws + 7 * n
    cdef i64* order = cws + 8 * n     # neighbour marks at first, then the pivots in order
    cdef i64* head = <i64*> malloc((n + 1) * sizeof(i64))    # degree buckets 0..n
    # A pass hashes the columns of Lme only, into as few buckets (a power of two, as many
    # as twice those columns) as keep the chains short: they stay in cache.
    cdef i64 hsize = 1, hmask
    while hsize < 2 * n:
        hsize *= 2
    hhead = <i64*> malloc(hsize * sizeof(i64))
    if head == NULL or hhead == NULL:
        free(iw)
        free(cws)
        free(rws)
        free(head)
        free(hhead)
        return ST_NOMEM
    cdef i64* rstart = rws
    cdef i64* rlen = rws + m
    cdef i64* rdeg = rws + 2 * m      # columns (weighted) in the row or element
    cdef i64* rmark = rws + 3 * m     # DEAD, or a mark: >= tag while in the current pass

    cdef i64 c, r, me, j, i, jlast, p, q, k, t, b, h, x, d, pn, p1, cnt
    cdef i64 N = 0, nel = 0, npiv = 0, pfree = 0, mindeg = 0, nvpiv, degme, ext, hsh
    cdef i64 need, pme1, pme2, lni, deg, cap, tag = 1, tagbig
    cdef i64 rthresh, cthresh, athresh, ntail = 0
    cdef double dt
    cdef bint ok
    cdef int status = ST_OK

    # ---- distinct entries per column (repeated rows counted once) ----
    for r in range(m):
        rstart[r] = EMPTY
        rdeg[r] = 0
    for c in range(n):
        cnt = 0
        for p in range(cp[c], cp[c + 1]):
            r = ci[p]
            if rstart[r] != c:
                rstart[r] = c
                cnt += 1
        clen[c] = cnt
    # Thresholds: rows of more than max(16, dense_row √n) live columns and columns of more
    # than max(16, dense_col √min(m, n)) entries are dense (COLAMD's defaults, 10).
    rthresh = n
    if dense_row >= 0:
        dt = dense_row * sqrt(<double> n)
        if dt < 16.0:
            dt = 16.0
        if dt < <double> n:
            rthresh = <i64> dt
    cthresh = m
    if dense_col >= 0:
        dt = dense_col * sqrt(<double> (m if m < n else n))
        if dt < 16.0:
            dt = 16.0
        if dt < <double> m:
            cthresh = <i64> dt

    # ---- dense and empty columns are set aside (ordered last); rows count the others ----
    for r in range(m):
        rstart[r] = EMPTY
    for c in range(n):
        cnext[c] = EMPTY
        ctail[c] = c
        if clen[c] == 0:
            thick[c] = 0
            score[c] = EMPTY_COLUMN
        elif clen[c] > cthresh:
            thick[c] = 0
            score[c] = DENSE_COLUMN
        else:
            thick[c] = 1
            score[c] = 0
            for p in range(cp[c], cp[c + 1]):
                r = ci[p]
                if rstart[r] != c:
                    rstart[r] = c
                    rdeg[r] += 1
    # Dense rows make a clique of their columns and say nothing about the order; empty
    # rows say nothing either: both are left out.
    for r in range(m):
        rmark[r] = DEAD if rdeg[r] == 0 or rdeg[r] > rthresh else 0
        rstart[r] = EMPTY
        rlen[r] = 0

    # ---- column lists (live rows, each once), then row lists from them ----
    for c in range(n):
        cstart[c] = pfree
        if thick[c] == 0:
            clen[c] = 0
            continue
        for p in range(cp[c], cp[c + 1]):
            r = ci[p]
            if rmark[r] >= 0 and rstart[r] != c:
                rstart[r] = c
                iw[pfree] = r
                pfree += 1
                rlen[r] += 1
        clen[c] = pfree - cstart[c]
        if clen[c] == 0:
            # All its rows are dense: nothing to order it by (COLAMD puts it last).
            thick[c] = 0
            score[c] = ONLY_DENSE_ROWS
        else:
            N += 1
    for r in range(m):
        if rmark[r] >= 0:
            rstart[r] = pfree
            pfree += rlen[r]
            rdeg[r] = rlen[r]
            rlen[r] = 0
    for c in range(n):
        for p in range(cstart[c], cstart[c] + clen[c]):
            r = iw[p]
            iw[rstart[r] + rlen[r]] = c
            rlen[r] += 1

    # ---- initial degrees: each column's distinct neighbours in AᵀA ----
    # Exact, as AMD's on the graph are (COLAMD's sum of the rows' sizes counts a neighbour
    # once per shared row, and ordered bp_1200, hangGlider_2 and young1c for more LU
    # flops); `order` marks the neighbours met. A column of more than
    # max(16, dense_degree √N) is set aside and ordered last, AMD's rule for dense
    # vertices: taken early, it joins many rows into one element (rajat19's LU).
    athresh = N
    if dense_degree >= 0:
        dt = dense_degree * sqrt(<double> N)
        if dt < 16.0:
            dt = 16.0
        if dt < <double> N:
            athresh = <i64> dt
    for c in range(n):
        order[c] = EMPTY
    for c in range(n):
        if thick[c] == 0:
            continue
        deg = 0
        order[c] = c
        p = cstart[c]
        while p < cstart[c] + clen[c] and deg <= athresh:
            r = iw[p]
            for q in range(rstart[r], rstart[r] + rlen[r]):
                j = iw[q]
                if order[j] != c:
                    order[j] = c
                    deg += 1
            p += 1
        # Every verdict reads the same graph: the set-aside columns leave it below.
        score[c] = DENSE_IN_ATA if deg > athresh else deg
    for c in range(n):
        if score[c] == DENSE_IN_ATA:
            thick[c] = 0
            N -= 1
            for p in range(cstart[c], cstart[c] + clen[c]):
                r = iw[p]
                rdeg[r] -= 1
                if rdeg[r] == 0:
                    rmark[r] = DEAD

    # ---- degree lists (a neighbour set aside above still counts: a bound) ----
    for b in range(n + 1):
        head[b] = EMPTY
    for h in range(hsize):
        hhead[h] = EMPTY
    for c in range(n - 1, -1, -1):
        if thick[c] == 0:
            ntail += 1
            continue
        deg = score[c]
        if deg > N - 1:
            deg = N - 1
        score[c] = deg
        # Inserted in decreasing index order: the smallest index of a bucket comes first,
        # which makes every tie-break deterministic.
        _dlist_insert(c, deg, head, dnext, dlast)
        if deg < mindeg:
            mindeg = deg
    tagbig = INT64_MAX - 2 * (N + 2)

    # ---- main loop: one pivot (principal column) per iteration ----
    while nel < N:
        while mindeg <= n and head[mindeg] == EMPTY:
            mindeg += 1
        if mindeg > n:
            status = ST_BROKEN
            break
        c = head[mindeg]
        _dlist_remove(c, mindeg, head, dnext, dlast)
        order[npiv] = c
        npiv += 1
        nvpiv = thick[c]
        nel += nvpiv

        # -- room for Lme at the free tail: no more than its rows' lists, nor the columns left
        need = 0
        for p in range(cstart[c], cstart[c] + clen[c]):
            r = iw[p]
            if rmark[r] >= 0:
                need += rlen[r]
        if need > N - nel:
            need = N - nel
        if pfree + need > iwlen:
            pfree = _compact(iw, pfree, n, m, cstart, clen, thick, rstart, rlen, rmark)
            if pfree + need > iwlen:
                k = iwlen + iwlen // 2
                if k < pfree + need:
                    k = pfree + need
                newiw = <i64*> realloc(iw, k * sizeof(i64))
                if newiw == NULL:
                    status = ST_NOMEM
                    break
                iw = newiw
                iwlen = k

        # -- Lme: the union of the pivot's rows, which all die; thick < 0 flags membership --
        thick[c] = 0
        degme = 0
        me = EMPTY
        pme1 = pfree
        for p in range(cstart[c], cstart[c] + clen[c]):
            r = iw[p]
            if rmark[r] < 0:
                continue
            for q in range(rstart[r], rstart[r] + rlen[r]):
                j = iw[q]
                t = thick[j]
                if t > 0:
                    degme += t
                    thick[j] = -t
                    iw[pfree] = j
                    pfree += 1
                    _dlist_remove(j, score[j], head, dnext, dlast)
            rmark[r] = DEAD
            if me == EMPTY:
                me = r          # the new element takes the slot of the first row it absorbs
        pme2 = pfree

        # -- |Le \ Lme| of every live row or element meeting Lme, kept as rmark - tag --
        if tag >= tagbig:
            for r in range(m):
                if rmark[r] >= 0:
                    rmark[r] = 0
            tag = 1
        # The dead rows leave each list on the way (the pivot's rows among them): the next
        # pass reads live ones only, and me finds room in the list.
        for k in range(pme1, pme2):
            j = iw[k]
            t = -thick[j]
            p1 = cstart[j]
            pn = p1
            for p in range(p1, p1 + clen[j]):
                r = iw[p]
                x = rmark[r]
                if x < 0:
                    continue
                iw[pn] = r
                pn += 1
                if x >= tag:
                    rmark[r] = x - t
                else:
                    rmark[r] = tag + rdeg[r] - t
            clen[j] = pn - p1

        # -- external degrees, list pruning, aggressive absorption, mass elimination --
        hmask = 1
        while hmask < 2 * (pme2 - pme1) and hmask < hsize:
            hmask *= 2
        hmask -= 1
        for k in range(pme1, pme2):
            j = iw[k]
            t = -thick[j]
            p1 = cstart[j]
            pn = p1
            ext = 0
            hsh = 0
            for p in range(p1, p1 + clen[j]):
                r = iw[p]
                x = rmark[r]
                if x < 0:
                    continue
                d = x - tag
                if d == 0 and aggressive:
                    # Le ⊆ Lme: the row or element is absorbed into the new one.
                    rmark[r] = DEAD
                    continue
                iw[pn] = r
                pn += 1
                ext += d
                hsh += r
            clen[j] = pn - p1
            if pn == p1:
                # j meets the new element only: eliminated with the pivot at no extra fill.
                thick[j] = 0
                degme -= t
                nvpiv += t
                nel += t
                _chain_append(c, j, cnext, ctail)
            else:
                # COLAMD's bound: not its min with the previous score, as AMD takes, which
                # ordered bayer10 and west0479 for more LU flops.
                score[j] = ext
                h = hsh & hmask
                dnext[j] = hhead[h]
                hhead[h] = j
                dlast[j] = h
        # Every rmark set above is < tag + N.
        tag += N + 1

        # -- supercolumns: equal hash, then equal lists of rows and elements --
        for k in range(pme1, pme2):
            i = iw[k]
            if thick[i] >= 0:
                continue
            h = dlast[i]
            i = hhead[h]
            if i == EMPTY:
                continue
            hhead[h] = EMPTY
            while i != EMPTY and dnext[i] != EMPTY:
                lni = clen[i]
                for p in range(cstart[i], cstart[i] + lni):
                    rmark[iw[p]] = tag
                jlast = i
                j = dnext[i]
                while j != EMPTY:
                    ok = clen[j] == lni
                    p = cstart[j]
                    while ok and p < cstart[j] + lni:
                        if rmark[iw[p]] != tag:
                            ok = False
                        p += 1
                    if ok:
                        # j is indistinguishable from i (same rows, so the same columns in
                        # AᵀA): i stands for both; the rows' weighted degrees are unchanged.
                        thick[i] += thick[j]
                        thick[j] = 0
                        _chain_append(i, j, cnext, ctail)
                        j = dnext[j]
                        dnext[jlast] = j
                    else:
                        jlast = j
                        j = dnext[j]
                tag += 1
                i = dnext[i]

        # -- finalize degrees, add me to each column, back into the degree lists --
        q = pme1
        for k in range(pme1, pme2):
            j = iw[k]
            t = -thick[j]
            if t <= 0:
                continue
            thick[j] = t
            iw[cstart[j] + clen[j]] = me
            clen[j] += 1
            deg = score[j] + degme - t
            cap = N - nel - t
            if deg > cap:
                deg = cap
            if deg < 0:
                deg = 0
            score[j] = deg
            _dlist_insert(j, deg, head, dnext, dlast)
            if deg < mindeg:
                mindeg = deg
            iw[q] = j
            q += 1
        if q > pme1:
            rstart[me] = pme1
            rlen[me] = q - pme1
            rdeg[me] = degme
            rmark[me] = 0
        pfree = q

    # ---- the pivots with the columns each stands for, then the columns set aside ----
    if status == ST_OK:
        k = 0
        for q in range(npiv):
            x = order[q]
            while x != EMPTY and k < n - ntail:
                perm[k] = x
                k += 1
                x = cnext[x]
        if k != n - ntail:
            status = ST_BROKEN
        else:
            for b in range(DENSE_IN_ATA, EMPTY_COLUMN - 1, -1):
                for c in range(n):
                    if score[c] == b:
                        perm[k] = c
                        k += 1
            if k != n:
                status = ST_BROKEN
    free(iw)
    free(cws)
    free(rws)
    free(head)
    free(hhead)
    return status


def colamd_order(indptr, indices, Py_ssize_t n_rows, Py_ssize_t n_cols, double dense_row=10.0,
                 double dense_col=10.0, double dense_degree=10.0, bint aggressive=True,
                 bint check=True):
    """Column ordering of an unsymmetric (or rectangular) sparse matrix for LU with
    row pivoting, by approximate minimum degree on AᵀA without forming AᵀA (COLAMD).

    LU with partial pivoting of A Q fills no more than the Cholesky factor of
    Qᵀ AᵀA Q, whatever rows it pivots on (George and Ng): the columns are ordered to
    keep that factor sparse. Each row of A is a clique of its columns in AᵀA, so the
    rows are the initial elements of a quotient graph whose variables are the columns,
    eliminated by approximate minimum degree (from exact initial degrees, as AMD's on
    the graph, where COLAMD starts from a bound) with element absorption, supercolumns
    (indistinguishable columns, mass elimination) and aggressive absorption (Davis,
    Gilbert, Larimore and Ng, 2004). Dense rows are left out; dense and empty columns,
    columns whose rows are all dense and (as AMD orders dense vertices) columns of many
    neighbours in AᵀA are ordered last.

    Parameters
    ----------
    indptr : ndarray of int, shape (n_cols + 1,)
        CSC column pointers of A.
    indices : ndarray of int
        Row indices; unsorted and repeated entries are allowed (a repeat counts once).
    n_rows, n_cols : int
        The shape of A.
    dense_row : float, default 10.0
        Rows with more than ``max(16, dense_row * sqrt(n_cols))`` columns (dense columns
        aside) are left out. A negative value keeps every row.
    dense_col : float, default 10.0
        Columns with more than ``max(16, dense_col * sqrt(min(n_rows, n_cols)))`` entries
        are ordered last. A negative value keeps every column.
    dense_degree : float, default 10.0
        Columns with more than ``max(16, dense_degree * sqrt(c))`` neighbours in AᵀA
        (dense rows left out; ``c`` the columns not set aside by the rules above) are
        ordered last, right after the others. A negative value keeps every column.
    aggressive : bool, default True
        Absorb a row or element whose columns all belong to the new element even when
        the pivot is not in it.
    check : bool, default True
        Check ``indptr`` and the range of ``indices`` first; False is for callers whose
        arrays are a canonical CSC matrix's (valid by construction).

    Returns
    -------
    q : ndarray of int64, shape (n_cols,)
        ``q[k]`` is the column of A taken k-th: A[:, q] is the ordered matrix.

    Raises
    ------
    pastixpy.errors.InvalidInputError
        If the shape is negative or the arrays do not make a CSC pattern of that shape.
    MemoryError
        If the workspace cannot be allocated.
    RuntimeError
        If the quotient graph became inconsistent (an internal error).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from pastixpy._colamd import colamd_order
    >>> A = sp.csc_array(np.array([[4.0, 1, 0, 0], [0, 3, 0, 1], [1, 0, 2, 0], [0, 1, 0, 5]]))
    >>> q = colamd_order(A.indptr, A.indices, 4, 4)
    >>> sorted(q.tolist())
    [0, 1, 2, 3]
    """
    if n_rows < 0 or n_cols < 0:
        raise InvalidInputError(
            f"colamd_order: n_rows and n_cols must be non-negative, got {n_rows} and {n_cols}"
        )
    cdef cnp.ndarray ip_a = np.ascontiguousarray(indptr, dtype=np.int64).ravel()
    cdef cnp.ndarray ix_a = np.ascontiguousarray(indices, dtype=np.int64).ravel()
    if ip_a.shape[0] != n_cols + 1:
        raise InvalidInputError(
            f"colamd_order: indptr must have n_cols + 1 = {n_cols + 1} entries, "
            f"got {ip_a.shape[0]}"
        )
    perm_a = np.arange(n_cols, dtype=np.int64)
    if n_cols == 0:
        return perm_a
    if check:
        if ip_a[0] != 0 or np.any(np.diff(ip_a) < 0) or ip_a[n_cols] > ix_a.shape[0]:
            raise InvalidInputError(
                "colamd_order: indptr must start at 0, be non-decreasing and end within "
                "indices (a CSC matrix's indptr)"
            )
        nnz = int(ip_a[n_cols])
        if nnz > 0:
            used = ix_a[:nnz]
            if used.min() < 0 or used.max() >= n_rows:
                raise InvalidInputError(
                    f"colamd_order: row indices must lie in [0, n_rows = {n_rows})"
                )
    if ip_a[n_cols] == 0:
        return perm_a  # no entries: every column is empty, in its own order
    cdef i64[::1] ip = ip_a
    cdef i64[::1] ix = ix_a
    cdef i64[::1] pv = perm_a
    cdef int status
    with nogil:
        status = _colamd_core(n_rows, n_cols, &ip[0], &ix[0], dense_row, dense_col,
                              dense_degree, aggressive, &pv[0])
    if status == ST_NOMEM:
        raise MemoryError("colamd_order: cannot allocate the workspace")
    if status != ST_OK:
        raise RuntimeError("colamd_order: internal error, inconsistent quotient graph")
    return perm_a
