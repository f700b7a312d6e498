# Approximate Minimum Degree (AMD) fill-reducing ordering of a symmetric sparse graph.
# cython: language_level=3
#
# Follows Amestoy, Davis & Duff, "An approximate minimum degree ordering algorithm",
# SIAM J. Matrix Anal. Appl. 17(4), 1996.  The quotient graph holds, in one integer
# workspace ``iw``, the list of every live object:
#   * a variable i: its adjacent elements (the first elen[i] entries) then its
#     adjacent variables (the remaining len[i] - elen[i] entries);
#   * an element e: the variables of Le (possibly with stale entries, skipped by nv <= 0).
# Dead objects carry pe[x] = FLIP(parent) (absorbed element, merged or mass-eliminated
# variable) or EMPTY (dense variable, element with an empty list).

import numpy as np

cimport numpy as cnp
from libc.math cimport sqrt
from libc.stdint cimport INT64_MAX, int64_t
from libc.stdlib cimport free, malloc, realloc

cnp.import_array()

ctypedef int64_t i64

cdef enum:
    EMPTY = -1
    ST_OK = 0
    ST_NOMEM = -1
    ST_BROKEN = -2
    ST_ASYM = -3
    ST_UNSORTED = -4

# Upper bound on the total weight so that the marker arithmetic of w cannot overflow.
cdef i64 MAX_TOTAL_WEIGHT = (<i64>1) << 56


cdef inline i64 _flip(i64 i) noexcept nogil:
    # Encodes a parent index as a value <= -2, distinct from EMPTY and from list positions.
    return -i - 2


cdef inline i64 _clear_flag(i64 wflg, i64 wbig, i64* w, i64 n) noexcept nogil:
    # Reset the markers when wflg nears overflow; w[x] == 0 (dead element) is kept.
    cdef i64 x
    if wflg < 2 or wflg >= wbig:
        for x in range(n):
            if w[x] != 0:
                w[x] = 1
        wflg = 2
    return wflg


cdef i64 _compact(i64* iw, i64* pe, i64* ln, i64 n, i64 pfree) noexcept nogil:
    # Garbage collection: slide every live list to the front of iw, keeping relative order.
    # The first entry of each live list is swapped with a negative tag naming its owner, so a
    # single left-to-right scan finds the lists (all other stored entries are >= 0).
    cdef i64 j, p, src, dst, k, cnt
    for j in range(n):
        p = pe[j]
        if p >= 0 and ln[j] > 0:
            pe[j] = iw[p]
            iw[p] = _flip(j)
    src = 0
    dst = 0
    while src < pfree:
        if iw[src] < 0:
            j = _flip(iw[src])
            iw[dst] = pe[j]
            pe[j] = dst
            cnt = ln[j]
            src += 1
            dst += 1
            for k in range(1, cnt):
                iw[dst] = iw[src]
                dst += 1
                src += 1
        else:
            src += 1
    return dst


cdef int _check_pattern(i64 n, const i64* ap, const i64* ai, i64* nxt) noexcept nogil:
    # The quotient-graph invariants (and hence memory safety) rest on a symmetric pattern.
    # With sorted rows, scanning rows i = 0, 1, ... meets the entries (i, j) of column j in
    # increasing i, so they must match row j entry by entry; nxt[j] is the next unmatched one.
    cdef i64 i, j, p, q
    for i in range(n):
        for p in range(ap[i] + 1, ap[i + 1]):
            if ai[p] < ai[p - 1]:
                return ST_UNSORTED
    for j in range(n):
        nxt[j] = ap[j]
    for i in range(n):
        for p in range(ap[i], ap[i + 1]):
            j = ai[p]
            if j == i:
                continue
            q = nxt[j]
            while q < ap[j + 1] and ai[q] == j:
                q += 1
            if q >= ap[j + 1] or ai[q] != i:
                return ST_ASYM
            nxt[j] = q + 1
    for j in range(n):
        q = nxt[j]
        while q < ap[j + 1] and ai[q] == j:
            q += 1
        if q != ap[j + 1]:
            return ST_ASYM
    return ST_OK


cdef inline void _dlist_remove(i64 i, i64 b, i64* head, i64* dnext, i64* dlast) noexcept nogil:
    cdef i64 inext = dnext[i], ilast = dlast[i]
    if inext != EMPTY:
        dlast[inext] = ilast
    if ilast != EMPTY:
        dnext[ilast] = inext
    else:
        head[b] = inext


cdef inline void _chain_append(i64 dst, i64 src, i64* cnext, i64* ctail) noexcept nogil:
    # The variables represented by src are ordered right after those of dst.
    cnext[ctail[dst]] = src
    ctail[dst] = ctail[src]


cdef inline double _sum_squares(double lo, double hi) noexcept nogil:
    # lo² + (lo + 1)² + ... + hi²
    return (hi * (hi + 1) * (2 * hi + 1) - (lo - 1) * lo * (2 * lo - 1)) / 6.0


cdef int _amd_core(i64 n, const i64* ap, const i64* ai, const i64* wts, double alpha,
                   bint aggressive, i64* perm, double* flops) noexcept nogil:
    cdef i64 nnz = ap[n]
    cdef i64 iwlen = nnz + nnz // 5 + n + 16
    cdef i64* iw = <i64*> malloc(iwlen * sizeof(i64))
    cdef i64* ws = <i64*> malloc(12 * n * sizeof(i64))
    cdef i64* head = NULL
    cdef i64* newiw
    if iw == NULL or ws == NULL:
        free(iw)
        free(ws)
        return ST_NOMEM
    cdef i64* pe = ws
    cdef i64* ln = ws + n
    cdef i64* elen = ws + 2 * n
    cdef i64* nv = ws + 3 * n
    cdef i64* degree = ws + 4 * n
    cdef i64* w = ws + 5 * n
    cdef i64* dnext = ws + 6 * n      # degree-list links; hash-bucket links for Lme vars
    cdef i64* dlast = ws + 7 * n      # degree-list links; hash value for Lme vars
    cdef i64* hhead = ws + 8 * n
    cdef i64* cnext = ws + 9 * n      # chain of original vertices per supervariable
    cdef i64* ctail = ws + 10 * n
    cdef i64* order = ws + 11 * n     # pivots, then dense vertices at the tail

    cdef i64 i, j, k, p, q, e, me, b, h, x
    cdef i64 N = 0, H, nel = 0, ndense = 0, npiv = 0, pfree = 0
    cdef i64 thresh, deg, degme, nvi, nvj, nvpiv, elenme, mindeg = 0, lemax = 0
    cdef i64 wflg = 2, wbig, we, wnvi, dext, hsh, need
    cdef i64 pme1, pme2, pj, cnt, knt, p1, p2, p3, p4, pn, eln, lnv, jlast
    cdef bint ok
    cdef double dthresh
    cdef int status = _check_pattern(n, ap, ai, degree)
    if status != ST_OK:
        free(iw)
        free(ws)
        return status

    # ---- load the graph (self loops and repeated entries are dropped) ----
    for i in range(n):
        nv[i] = wts[i] if wts != NULL else 1
        N += nv[i]
        w[i] = EMPTY
    for i in range(n):
        pe[i] = pfree
        for p in range(ap[i], ap[i + 1]):
            j = ai[p]
            if j == i or w[j] == i:
                continue
            w[j] = i
            iw[pfree] = j
            pfree += 1
        ln[i] = pfree - pe[i]
        if ln[i] == 0:
            pe[i] = EMPTY
    # Degree bucket count: exact up to 10 n, then lumped (only reachable with weights).
    H = N if N < 10 * n else 10 * n
    H += 1
    head = <i64*> malloc(H * sizeof(i64))
    if head == NULL:
        free(iw)
        free(ws)
        return ST_NOMEM
    wbig = INT64_MAX - 3 * (N + n) - 16

    for i in range(n):
        deg = 0
        for p in range(pe[i], pe[i] + ln[i]):
            deg += nv[iw[p]]
        degree[i] = deg
        elen[i] = 0
        w[i] = 1
        cnext[i] = EMPTY
        ctail[i] = i
    for b in range(H):
        head[b] = EMPTY
    for i in range(n):
        hhead[i] = EMPTY

    # ---- dense rows: postponed to the end, removed from the graph (nv = 0) ----
    if alpha >= 0:
        dthresh = alpha * sqrt(<double> N)
        if dthresh < 16.0:
            dthresh = 16.0
        thresh = N if dthresh >= <double> N else <i64> dthresh
        for i in range(n):
            if degree[i] > thresh:
                elen[i] = -2
                ndense += 1
                order[n - ndense] = i
        # Neighbours drop the dense weight so that their initial degree is the one in the
        # graph actually eliminated (the dense vertices stay in their lists, skipped: nv = 0).
        for k in range(n - ndense, n):
            i = order[k]
            for p in range(pe[i], pe[i] + ln[i]):
                j = iw[p]
                if elen[j] != -2:
                    degree[j] -= nv[i]
        for k in range(n - ndense, n):
            i = order[k]
            nel += nv[i]
            nv[i] = 0
            pe[i] = EMPTY
        # The dense tail of `order` was filled backwards: restore increasing index order.
        p = n - ndense
        q = n - 1
        while p < q:
            x = order[p]
            order[p] = order[q]
            order[q] = x
            p += 1
            q -= 1

    # Degree lists; inserting in decreasing index order puts the smallest index first,
    # which (with LIFO insertion later) makes every tie-break deterministic.
    for i in range(n - 1, -1, -1):
        if elen[i] == -2:
            continue
        b = degree[i] if degree[i] < H else H - 1
        dnext[i] = head[b]
        dlast[i] = EMPTY
        if head[b] != EMPTY:
            dlast[head[b]] = i
        head[b] = i
        if b < mindeg:
            mindeg = b

    # ---- main loop: one pivot (supervariable) per iteration ----
    while nel < N:
        # -- select the pivot of least approximate degree --
        while mindeg < H and head[mindeg] == EMPTY:
            mindeg += 1
        if mindeg >= H:
            status = ST_BROKEN
            break
        me = head[mindeg]
        _dlist_remove(me, mindeg, head, dnext, dlast)
        order[npiv] = me
        npiv += 1
        elenme = elen[me]
        nvpiv = nv[me]
        nel += nvpiv
        # nv < 0 flags membership in Lme (me itself included, so it is never added).
        nv[me] = -nvpiv
        degme = 0

        # -- construct Lme = (Ame ∪ (∪ Le over adjacent elements)) \ {me} --
        if elenme == 0:
            # Only variables: Lme overwrites the front of me's own list in place.
            pme1 = pe[me]
            q = pme1
            if pme1 < 0:
                pme1 = 0
                q = 0
            else:
                for p in range(pme1, pme1 + ln[me]):
                    i = iw[p]
                    nvi = nv[i]
                    if nvi > 0:
                        degme += nvi
                        nv[i] = -nvi
                        iw[q] = i
                        q += 1
                        _dlist_remove(i, degree[i] if degree[i] < H else H - 1,
                                      head, dnext, dlast)
        else:
            # Lme is built at the free tail; reserve room first so no list moves under us.
            need = ln[me] - elenme
            p = pe[me]
            for k in range(elenme):
                e = iw[p + k]
                if pe[e] >= 0:
                    need += ln[e]
            if need > n:
                need = n
            if pfree + need > iwlen:
                pfree = _compact(iw, pe, ln, n, pfree)
                if pfree + need > iwlen:
                    k = iwlen + iwlen // 2 + n
                    if k < pfree + need:
                        k = pfree + need
                    newiw = <i64*> realloc(iw, k * sizeof(i64))
                    if newiw == NULL:
                        status = ST_NOMEM
                        break
                    iw = newiw
                    iwlen = k
            p = pe[me]
            pme1 = pfree
            q = pfree
            for knt in range(elenme + 1):
                if knt < elenme:
                    e = iw[p + knt]
                    pj = pe[e]
                    cnt = ln[e] if pj >= 0 else 0
                else:
                    e = me
                    pj = p + elenme
                    cnt = ln[me] - elenme
                for k in range(pj, pj + cnt):
                    i = iw[k]
                    nvi = nv[i]
                    if nvi > 0:
                        degme += nvi
                        nv[i] = -nvi
                        iw[q] = i
                        q += 1
                        _dlist_remove(i, degree[i] if degree[i] < H else H - 1,
                                      head, dnext, dlast)
                if e != me:
                    # Element absorption: Le ⊆ Lme, so e is subsumed by the new element.
                    pe[e] = _flip(me)
                    w[e] = 0
            pfree = q
        pme2 = q
        pe[me] = pme1
        ln[me] = pme2 - pme1
        elen[me] = -3

        # -- |Le \ Lme| for every element adjacent to Lme, kept as w[e] - wflg --
        wflg = _clear_flag(wflg, wbig, w, n)
        for k in range(pme1, pme2):
            i = iw[k]
            eln = elen[i]
            if eln > 0:
                nvi = -nv[i]
                wnvi = wflg - nvi
                for p in range(pe[i], pe[i] + eln):
                    e = iw[p]
                    we = w[e]
                    if we >= wflg:
                        we -= nvi
                    elif we != 0:
                        we = degree[e] + wnvi
                    w[e] = we

        # -- degree update, list pruning, aggressive absorption, mass elimination --
        for k in range(pme1, pme2):
            i = iw[k]
            p1 = pe[i]
            if p1 < 0:
                status = ST_BROKEN
                break
            p2 = p1 + elen[i]
            p4 = p1 + ln[i]
            pn = p1
            hsh = 0
            deg = 0
            for p in range(p1, p2):
                e = iw[p]
                we = w[e]
                if we != 0:
                    dext = we - wflg
                    if dext > 0:
                        deg += dext
                        iw[pn] = e
                        pn += 1
                        hsh += e
                    elif aggressive:
                        # Le ⊆ Lme although e was not adjacent to me: absorb it as well.
                        pe[e] = _flip(me)
                        w[e] = 0
                    else:
                        iw[pn] = e
                        pn += 1
                        hsh += e
            elen[i] = pn - p1 + 1          # + me, inserted below
            p3 = pn
            for p in range(p2, p4):
                j = iw[p]
                nvj = nv[j]
                # Variables of Lme (nv < 0) are now reached through me; nv == 0 are dead.
                if nvj > 0:
                    deg += nvj
                    iw[pn] = j
                    pn += 1
                    hsh += j
            if elen[i] == 1 and p3 == pn:
                # i is adjacent to me only: it can be eliminated with me at no extra fill.
                pe[i] = _flip(me)
                nvi = -nv[i]
                degme -= nvi
                nvpiv += nvi
                nel += nvi
                nv[i] = 0
                elen[i] = EMPTY
                _chain_append(me, i, cnext, ctail)
            else:
                if pn >= p4:
                    # Cannot happen for a symmetric pattern: an entry always leaves i's list
                    # (me itself, or an element absorbed into me).
                    status = ST_BROKEN
                    break
                if deg < degree[i]:
                    degree[i] = deg
                # me goes first among the elements; the displaced entries move one slot on.
                iw[pn] = iw[p3]
                iw[p3] = iw[p1]
                iw[p1] = me
                ln[i] = pn - p1 + 1
                h = hsh % n
                dnext[i] = hhead[h]
                hhead[h] = i
                dlast[i] = h
        if status != ST_OK:
            break
        if degme > lemax:
            lemax = degme
        # Every w[e] set above is < wflg + lemax; move past them.
        wflg += lemax + 1
        wflg = _clear_flag(wflg, wbig, w, n)

        # -- supervariable detection: equal hash, then equal (elen, len) and equal lists --
        for k in range(pme1, pme2):
            i = iw[k]
            if nv[i] >= 0:
                continue
            h = dlast[i]
            i = hhead[h]
            if i == EMPTY:
                continue
            hhead[h] = EMPTY
            while i != EMPTY and dnext[i] != EMPTY:
                lnv = ln[i]
                eln = elen[i]
                # Entry 0 is me for every variable of Lme, so it is skipped.
                for p in range(pe[i] + 1, pe[i] + lnv):
                    w[iw[p]] = wflg
                jlast = i
                j = dnext[i]
                while j != EMPTY:
                    ok = ln[j] == lnv and elen[j] == eln
                    p = pe[j] + 1
                    while ok and p < pe[j] + lnv:
                        if w[iw[p]] != wflg:
                            ok = False
                        p += 1
                    if ok:
                        # j is indistinguishable from i: merge it into supervariable i.
                        pe[j] = _flip(i)
                        nv[i] += nv[j]
                        nv[j] = 0
                        elen[j] = EMPTY
                        _chain_append(i, j, cnext, ctail)
                        j = dnext[j]
                        dnext[jlast] = j
                    else:
                        jlast = j
                        j = dnext[j]
                wflg += 1
                i = dnext[i]

        # -- finalize degrees, reinsert Lme into the degree lists, compress Lme --
        p = pme1
        for k in range(pme1, pme2):
            i = iw[k]
            nvi = -nv[i]
            if nvi > 0:
                nv[i] = nvi
                # d_i = min(bound from the old degree, bound from the element sums, n - k).
                deg = degree[i] + degme - nvi
                if deg > N - nel - nvi:
                    deg = N - nel - nvi
                if deg < 0:
                    deg = 0
                b = deg if deg < H else H - 1
                dnext[i] = head[b]
                dlast[i] = EMPTY
                if head[b] != EMPTY:
                    dlast[head[b]] = i
                head[b] = i
                if b < mindeg:
                    mindeg = b
                degree[i] = deg
                iw[p] = i
                p += 1
        nv[me] = nvpiv
        degree[me] = degme
        if flops != NULL:
            # The nvpiv columns of this pivot have nvpiv - 1 - t + degme + ndense entries
            # below the diagonal, t = 0..nvpiv-1; LU's flops: twice their squares.
            flops[0] += 2.0 * _sum_squares(degme + ndense, degme + ndense + nvpiv - 1)
        ln[me] = p - pme1
        if ln[me] == 0:
            pe[me] = EMPTY
            w[me] = 0
        if elenme != 0:
            pfree = p

    # ---- expand supervariables: each pivot is followed by what was merged into it ----
    if flops != NULL and ndense > 0:
        flops[0] += 2.0 * _sum_squares(0, ndense - 1)
    if status == ST_OK:
        k = 0
        for q in range(npiv):
            x = order[q]
            while x != EMPTY and k < n - ndense:
                perm[k] = x
                k += 1
                x = cnext[x]
        if k != n - ndense:
            status = ST_BROKEN
        else:
            for q in range(n - ndense, n):
                perm[q] = order[q]
    free(iw)
    free(ws)
    free(head)
    return status


def amd_order(indptr, indices, Py_ssize_t n, weights=None, double dense=10.0,
              bint aggressive=True, bint with_flops=False, bint check=True):
    """Approximate Minimum Degree ordering of a symmetric graph.

    Eliminates the quotient graph with approximate external degrees, element
    absorption, supervariables found by hashing (indistinguishable nodes,
    mass elimination) and optional aggressive absorption (Amestoy, Davis &
    Duff, 1996). Vertices of very high degree are postponed to the end.

    Parameters
    ----------
    indptr : ndarray of int32 or int64, shape (n + 1,)
        CSR row pointers of the graph.
    indices : ndarray of int32 or int64
        Column indices, sorted within each row; the pattern must be symmetric
        and without diagonal entries (stray diagonal entries and symmetric
        duplicates are ignored).
    n : int
        Number of vertices.
    weights : ndarray of int64, shape (n,), optional
        Positive vertex weights: vertex ``v`` stands for ``weights[v]``
        indistinguishable unknowns, and degrees count weights. ``None``
        means all ones.
    dense : float, default 10.0
        A vertex whose (weighted) degree exceeds ``max(16, dense * sqrt(W))``,
        ``W`` the total weight, is ordered last. A negative value disables this.
    aggressive : bool, default True
        Absorb elements ``e`` with ``Le ⊆ Lme`` even when not adjacent to the pivot.
    with_flops : bool, default False
        Also return the flops of LU with diagonal pivots in this order (twice the sum
        of the squared column counts of L below the diagonal), counted from each
        pivot's exact external degree when it is eliminated, at no extra cost.
    check : bool, default True
        Check ``indptr`` and the range of ``indices`` first. False is for callers whose
        graph is made by :func:`pastixpy._graph.symmetric_adjacency` (valid by
        construction), where the checks would cost as much as ordering a tiny graph;
        the kernel's own checks (sorted rows, a symmetric pattern) remain.

    Returns
    -------
    perm : ndarray of int64, shape (n,)
        ``perm[k]`` is the vertex eliminated k-th.
    flops : float
        With ``with_flops`` only.

    Raises
    ------
    ValueError
        If the arrays are inconsistent with ``n``, a row is unsorted, the
        pattern is not symmetric or the weights are not positive.
    MemoryError
        If the workspace cannot be allocated.
    RuntimeError
        If the quotient graph became inconsistent (an internal error).
    """
    if n < 0:
        raise ValueError("n must be non-negative")
    cdef cnp.ndarray ip_a = np.ascontiguousarray(indptr, dtype=np.int64).ravel()
    cdef cnp.ndarray ix_a = np.ascontiguousarray(indices, dtype=np.int64).ravel()
    if ip_a.shape[0] != n + 1:
        raise ValueError(f"indptr must have length n + 1 = {n + 1}, got {ip_a.shape[0]}")
    perm_a = np.empty(n, dtype=np.int64)
    if n == 0:
        return (perm_a, 0.0) if with_flops else perm_a
    if check:
        if ip_a[0] != 0 or np.any(np.diff(ip_a) < 0) or ip_a[n] > ix_a.shape[0]:
            raise ValueError("indptr must start at 0, be non-decreasing and fit in indices")
        nnz = int(ip_a[n])
        if nnz > 0:
            used = ix_a[:nnz]
            if used.min() < 0 or used.max() >= n:
                raise ValueError("indices out of range [0, n)")
    cdef cnp.ndarray wt_a = None
    if weights is not None:
        wt_a = np.ascontiguousarray(weights, dtype=np.int64).ravel()
        if wt_a.shape[0] != n:
            raise ValueError("weights must have length n")
        if wt_a.min() < 1:
            raise ValueError("weights must be positive")
        if wt_a.sum(dtype=np.float64) >= <double> MAX_TOTAL_WEIGHT:
            raise ValueError("total weight too large")
    if ix_a.shape[0] == 0:
        ix_a = np.zeros(1, dtype=np.int64)
    cdef i64[::1] ip = ip_a
    cdef i64[::1] ix = ix_a
    cdef i64[::1] pv = perm_a
    cdef i64[::1] wv
    cdef const i64* wp = NULL
    if wt_a is not None:
        wv = wt_a
        wp = &wv[0]
    cdef int status
    cdef double flops = 0.0
    with nogil:
        status = _amd_core(n, &ip[0], &ix[0], wp, dense, aggressive, &pv[0], &flops)
    if status == ST_NOMEM:
        raise MemoryError("amd_order: cannot allocate the workspace")
    if status == ST_UNSORTED:
        raise ValueError("amd_order: the column indices of each row must be sorted")
    if status == ST_ASYM:
        raise ValueError("amd_order: the pattern is not symmetric")
    if status != ST_OK:
        raise RuntimeError("amd_order: internal error, inconsistent quotient graph")
    return (perm_a, flops) if with_flops else perm_a
