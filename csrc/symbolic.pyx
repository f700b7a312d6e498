# Symbolic-factorization kernels: elimination tree, postorder, column counts, amalgamation, block fill.
# cython: language_level=3
#
# The tree and fill kernels read the pattern of A + Aᵀ in pivot order: either its
# original numbering (xadj, adjncy) through the permutation (perm[k] = original vertex
# of pivot k, iperm its inverse), or a copy renumbered once (permuted_graph; perm and
# iperm None), whose rows each pass then walks in order without lookups. On graphs
# larger than the cache the lookups cost two scattered reads per entry in every pass.

import numpy as np

cimport numpy as cnp
from libc.stdint cimport INT32_MAX, int32_t, int64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy

cnp.import_array()

ctypedef int64_t idx_t


def permuted_graph(idx_t n, const idx_t[::1] xadj, const idx_t[::1] adjncy,
                   const idx_t[::1] perm, const idx_t[::1] iperm):
    """The graph renumbered in pivot order: vertex k is ``perm[k]``.

    Row k lists ``iperm`` of the original neighbours of ``perm[k]``, in their
    original order (so unsorted).

    Returns
    -------
    pxadj, padjncy : int64 arrays
    """
    cdef idx_t nnz = xadj[n] if n else 0
    cdef cnp.ndarray[idx_t, ndim=1] px_a = np.empty(n + 1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] pa_a = np.empty(nnz, dtype=np.int64)
    cdef idx_t[::1] px = px_a, pa = pa_a
    cdef idx_t k, p, v, q = 0
    with nogil:
        px[0] = 0
        for k in range(n):
            v = perm[k]
            for p in range(xadj[v], xadj[v + 1]):
                pa[q] = iperm[adjncy[p]]
                q += 1
            px[k + 1] = q
    return px_a, pa_a


def etree(idx_t n, const idx_t[::1] xadj, const idx_t[::1] adjncy,
          const idx_t[::1] perm=None, const idx_t[::1] iperm=None):
    """Elimination tree of the permuted symmetric pattern (Liu's algorithm); perm and
    iperm None when the pattern is in pivot order already.

    Returns
    -------
    parent : int64 array
        ``parent[k]`` is the parent of pivot k, or -1 for a root.
    """
    cdef cnp.ndarray[idx_t, ndim=1] parent_a = np.empty(n, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] anc_a = np.empty(n, dtype=np.int64)
    cdef idx_t[::1] parent = parent_a, anc = anc_a
    cdef idx_t k, p, v, i, inext
    cdef bint direct = perm is None
    with nogil:
        for k in range(n):
            parent[k] = -1
            anc[k] = -1
            v = k if direct else perm[k]
            for p in range(xadj[v], xadj[v + 1]):
                i = adjncy[p] if direct else iperm[adjncy[p]]
                # Climb from i to the root of its current subtree, compressing the path to k.
                while i != -1 and i < k:
                    inext = anc[i]
                    anc[i] = k
                    if inext == -1:
                        parent[i] = k
                    i = inext
    return parent_a


def postorder(idx_t n, const idx_t[::1] parent):
    """Depth-first postorder of a forest; children are visited in increasing order.

    Returns
    -------
    post : int64 array
        ``post[k]`` is the node visited k-th.
    """
    cdef cnp.ndarray[idx_t, ndim=1] post_a = np.empty(n, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] head_a = np.full(n, -1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] nxt_a = np.empty(n, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] stack_a = np.empty(n, dtype=np.int64)
    cdef idx_t[::1] post = post_a, head = head_a, nxt = nxt_a, stack = stack_a
    cdef idx_t j, k = 0, top, node, child
    with nogil:
        # Insert in reverse so each child list comes out in increasing order.
        for j in range(n - 1, -1, -1):
            if parent[j] != -1:
                nxt[j] = head[parent[j]]
                head[parent[j]] = j
        for j in range(n):
            if parent[j] != -1:
                continue
            top = 0
            stack[0] = j
            while top >= 0:
                node = stack[top]
                child = head[node]
                if child == -1:
                    top -= 1
                    post[k] = node
                    k += 1
                else:
                    head[node] = nxt[child]
                    top += 1
                    stack[top] = child
    return post_a


cdef inline idx_t _leaf(idx_t i, idx_t j, idx_t[::1] first, idx_t[::1] maxfirst,
                        idx_t[::1] prevleaf, idx_t[::1] ancestor, int* jleaf) noexcept nogil:
    """Is j a leaf of the i-th row subtree? Returns the least common ancestor with the previous leaf."""
    cdef idx_t q, s, sparent, jprev
    jleaf[0] = 0
    if i <= j or first[j] <= maxfirst[i]:
        return -1
    maxfirst[i] = first[j]
    jprev = prevleaf[i]
    prevleaf[i] = j
    if jprev == -1:
        jleaf[0] = 1
        return i
    jleaf[0] = 2
    q = jprev
    while q != ancestor[q]:
        q = ancestor[q]
    s = jprev
    while s != q:
        sparent = ancestor[s]
        ancestor[s] = q
        s = sparent
    return q


def column_counts(idx_t n, const idx_t[::1] xadj, const idx_t[::1] adjncy,
                  const idx_t[::1] parent, const idx_t[::1] perm=None,
                  const idx_t[::1] iperm=None):
    """Number of nonzeros in each column of the Cholesky factor, diagonal included.

    Gilbert, Ng and Peyton's row-subtree algorithm with a disjoint-set forest:
    time nearly linear in nnz(A). The elimination tree must be postordered
    (every node numbered after its descendants, subtrees contiguous); perm and
    iperm None when the pattern is in that pivot order already.
    """
    cdef cnp.ndarray[idx_t, ndim=1] count_a = np.empty(n, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] work = np.full(4 * n, -1, dtype=np.int64)
    cdef idx_t[::1] delta = count_a
    cdef idx_t[::1] first = work[:n], maxfirst = work[n:2 * n]
    cdef idx_t[::1] prevleaf = work[2 * n:3 * n], ancestor = work[3 * n:]
    cdef idx_t j, k, p, i, q, v
    cdef int jleaf
    cdef bint direct = perm is None
    with nogil:
        for k in range(n):
            delta[k] = 1 if first[k] == -1 else 0   # 1 for a leaf of the tree
            j = k
            while j != -1 and first[j] == -1:
                first[j] = k
                j = parent[j]
        for k in range(n):
            ancestor[k] = k
        for j in range(n):
            if parent[j] != -1:
                delta[parent[j]] -= 1
            v = j if direct else perm[j]
            for p in range(xadj[v], xadj[v + 1]):
                i = adjncy[p] if direct else iperm[adjncy[p]]
                q = _leaf(i, j, first, maxfirst, prevleaf, ancestor, &jleaf)
                if jleaf >= 1:
                    delta[j] += 1
                if jleaf == 2:
                    delta[q] -= 1
            if parent[j] != -1:
                ancestor[j] = parent[j]
        for j in range(n):
            if parent[j] != -1:
                delta[parent[j]] += delta[j]
    return count_a


cdef inline double _trapezoid(double ncols, double count) noexcept nogil:
    """Entries of a supernode of ``ncols`` columns whose first column has ``count`` entries."""
    return ncols * count - ncols * (ncols - 1) / 2


def amalgamate(const idx_t[::1] sptr, const idx_t[::1] sparent, const idx_t[::1] scount,
               const double[::1] szeros, nrelax, zrelax):
    """Relaxed amalgamation of supernodes (merge a supernode into its parent when few zeros are added).

    Only a child that ends right before its parent's group can merge into it, which
    keeps columns contiguous without renumbering. The test follows CHOLMOD's rules:
    merge when the merged width is at most ``nrelax[0]``, or at most ``nrelax[1]``
    with a zero fraction below ``zrelax[0]``, or at most ``nrelax[2]`` below
    ``zrelax[1]``, or whatever the width below ``zrelax[2]``.

    Parameters
    ----------
    sptr : int64 array (nsuper + 1)
        First column of each fundamental supernode, then n.
    sparent : int64 array (nsuper)
        Parent supernode, -1 at roots; supernodes are postordered.
    scount : int64 array (nsuper)
        Entries of the first column of each supernode, diagonal included.
    szeros : float64 array (nsuper)
        Explicit zeros each supernode already stores (relaxed subtrees).

    Returns
    -------
    ptr : int64 array
        First column of each amalgamated supernode, then n.
    extra : int
        Explicit zeros the merges added.
    """
    cdef idx_t nsup = sptr.shape[0] - 1
    cdef cnp.ndarray[idx_t, ndim=1] ncols_a = np.diff(np.asarray(sptr))
    cdef cnp.ndarray[idx_t, ndim=1] cnt_a = np.array(scount, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] last_a = np.arange(nsup, dtype=np.int64)
    cdef cnp.ndarray[double, ndim=1] zeros_a = np.array(szeros, dtype=np.float64)
    cdef cnp.ndarray[cnp.uint8_t, ndim=1] keep_a = np.ones(nsup + 1, dtype=np.uint8)
    cdef idx_t[::1] ncols = ncols_a, cnt = cnt_a, last = last_a
    cdef double[::1] zeros = zeros_a
    cdef cnp.uint8_t[::1] keep = keep_a
    cdef idx_t n0 = nrelax[0], n1 = nrelax[1], n2 = nrelax[2]
    cdef double z0 = zrelax[0], z1 = zrelax[1], z2 = zrelax[2]
    cdef idx_t j, g, nm, cm
    cdef double stored, true_nz, z, frac, extra = 0
    cdef bint merge
    with nogil:
        for j in range(nsup - 2, -1, -1):
            g = j + 1  # the group that starts right after supernode j
            if sparent[j] < g or sparent[j] > last[g]:
                continue
            nm = ncols[j] + ncols[g]
            cm = ncols[j] + cnt[g]
            stored = _trapezoid(nm, cm)
            true_nz = (_trapezoid(ncols[j], cnt[j]) - zeros[j]) + (_trapezoid(ncols[g], cnt[g]) - zeros[g])
            z = stored - true_nz
            frac = z / stored
            merge = (nm <= n0 or (nm <= n1 and frac < z0) or (nm <= n2 and frac < z1)
                     or frac < z2)
            if merge:
                extra += z - zeros[j] - zeros[g]
                ncols[j] = nm
                cnt[j] = cm
                zeros[j] = z
                last[j] = last[g]
                keep[g] = 0
    ptr = np.asarray(sptr)[keep_a.astype(bool)]
    return np.ascontiguousarray(ptr, dtype=np.int64), int(round(extra + np.sum(szeros)))


cdef int _cmp_idx(const void* a, const void* b) noexcept nogil:
    cdef idx_t x = (<const idx_t*>a)[0], y = (<const idx_t*>b)[0]
    return (x > y) - (x < y)


def block_rows(idx_t n, const idx_t[::1] xadj, const idx_t[::1] adjncy,
               const idx_t[::1] fcol, const idx_t[::1] col2cblk,
               const idx_t[::1] perm=None, const idx_t[::1] iperm=None):
    """Supernodal symbolic factorization: the rows below the diagonal block of each cblk.

    perm and iperm None when the pattern is in pivot order already.

    The rows of cblk k are those of A's columns in k below k, together with the
    rows of its children cblks below k (a child's parent is the cblk holding its
    first row). Cblks are processed in order, so children come first.

    Returns
    -------
    rowptr, rows : int64 arrays
        Rows of cblk k, sorted, are ``rows[rowptr[k]:rowptr[k+1]]``.
    cparent : int64 array
        Parent cblk of each cblk, -1 at roots.
    """
    cdef idx_t ncblk = fcol.shape[0] - 1
    cdef cnp.ndarray[idx_t, ndim=1] rowptr_a = np.zeros(ncblk + 1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] cparent_a = np.full(ncblk, -1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] mark_a = np.full(n, -1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] head_a = np.full(ncblk, -1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] nxt_a = np.full(ncblk, -1, dtype=np.int64)
    cdef idx_t[::1] rowptr = rowptr_a, cparent = cparent_a, mark = mark_a
    cdef idx_t[::1] head = head_a, nxt = nxt_a
    cdef idx_t k, c, p, i, lcol, child, top, start, cap = 4 * n + 16
    cdef idx_t* rows = <idx_t*>malloc(cap * sizeof(idx_t))
    cdef idx_t* grown
    cdef idx_t[::1] rows_view
    cdef idx_t v
    cdef bint direct = perm is None
    if rows == NULL:
        raise MemoryError("cannot allocate the symbolic row structure")
    try:
        with nogil:
            top = 0
            for k in range(ncblk):
                lcol = fcol[k + 1] - 1
                start = top
                # The rows of a cblk are at most n - lcol - 1: make room once.
                if top + (n - lcol) > cap:
                    while top + (n - lcol) > cap:
                        cap *= 2
                    grown = <idx_t*>realloc(rows, cap * sizeof(idx_t))
                    if grown == NULL:
                        with gil:
                            raise MemoryError("cannot grow the symbolic row structure")
                    rows = grown
                for c in range(fcol[k], lcol + 1):
                    v = c if direct else perm[c]
                    for p in range(xadj[v], xadj[v + 1]):
                        i = adjncy[p] if direct else iperm[adjncy[p]]
                        if i > lcol and mark[i] != k:
                            mark[i] = k
                            rows[top] = i
                            top += 1
                child = head[k]
                while child != -1:
                    for p in range(rowptr[child], rowptr[child + 1]):
                        i = rows[p]
                        if i > lcol and mark[i] != k:
                            mark[i] = k
                            rows[top] = i
                            top += 1
                    child = nxt[child]
                qsort(&rows[start], top - start, sizeof(idx_t), _cmp_idx)
                rowptr[k + 1] = top
                if top > start:
                    c = col2cblk[rows[start]]
                    cparent[k] = c
                    nxt[k] = head[c]
                    head[c] = k
        rows_a = np.empty(rowptr[ncblk], dtype=np.int64)
        if rowptr[ncblk]:
            rows_view = rows_a
            memcpy(&rows_view[0], rows, rowptr[ncblk] * sizeof(idx_t))
    finally:
        free(rows)
    return rowptr_a, rows_a, cparent_a


def closure_violation(const idx_t[::1] rowptr, const idx_t[::1] rows,
                      const idx_t[::1] cparent, const idx_t[::1] fcol):
    """First cblk whose rows below its parent are not all rows of the parent, or -1.

    This parent closure is what makes every update of a cblk land inside the
    structure of the cblk it faces (by induction up the tree).
    """
    cdef idx_t ncblk = cparent.shape[0]
    cdef idx_t k, par, p, q, qe, r, plast, bad = -1
    with nogil:
        for k in range(ncblk):
            par = cparent[k]
            if par == -1:
                continue
            plast = fcol[par + 1] - 1
            q = rowptr[par]
            qe = rowptr[par + 1]
            for p in range(rowptr[k], rowptr[k + 1]):
                r = rows[p]
                if r <= plast:
                    if r < fcol[par]:
                        bad = k
                        break
                    continue
                while q < qe and rows[q] < r:
                    q += 1
                if q == qe or rows[q] != r:
                    bad = k
                    break
            if bad != -1:
                break
    return bad


def subtree_sizes(const idx_t[::1] parent):
    """Nodes in the subtree of every node (itself included); parents are numbered after children."""
    cdef idx_t n = parent.shape[0], k
    cdef cnp.ndarray[idx_t, ndim=1] size_a = np.ones(n, dtype=np.int64)
    cdef idx_t[::1] size = size_a
    with nogil:
        for k in range(n):
            if parent[k] != -1:
                size[parent[k]] += size[k]
    return size_a


def tree_depth(const idx_t[::1] parent):
    """Depth of every node of a forest whose parents are numbered after their children (roots: 1)."""
    cdef idx_t n = parent.shape[0], k
    cdef cnp.ndarray[idx_t, ndim=1] depth_a = np.ones(n, dtype=np.int64)
    cdef idx_t[::1] depth = depth_a
    with nogil:
        for k in range(n - 1, -1, -1):
            if parent[k] != -1:
                depth[k] = depth[parent[k]] + 1
    return depth_a


def refine_order(const idx_t[::1] cls, const idx_t[::1] setptr, const idx_t[::1] elems):
    """Order elements so that each set, taken in turn, comes first within its class.

    Partition refinement: the elements ``0..n-1`` start in the contiguous classes
    ``cls`` (non-decreasing); each set ``elems[setptr[s]:setptr[s+1]]`` (distinct
    elements of one class) splits every class it meets into its members, moved to
    the front, and the rest. Taking the sets in order of decreasing size makes each
    set of a nested (laminar) family one interval, and sorts elements
    lexicographically by their memberships in general.

    Returns
    -------
    order : int64 array
        ``order[p]`` is the element at position p; classes keep their ranges.
    """
    cdef idx_t n = cls.shape[0], nsets = setptr.shape[0] - 1
    order_a = np.arange(n, dtype=np.int64)
    cdef idx_t[::1] order = order_a
    cdef idx_t[::1] where = np.arange(n, dtype=np.int64)
    cdef idx_t[::1] owner = np.empty(n, dtype=np.int64)  # class of each element
    cdef idx_t[::1] cstart = np.empty(n + 1, dtype=np.int64)
    cdef idx_t[::1] cend = np.empty(n + 1, dtype=np.int64)
    cdef idx_t[::1] csplit = np.empty(n + 1, dtype=np.int64)
    cdef idx_t[::1] touched = np.empty(n + 1, dtype=np.int64)
    cdef idx_t s, p, q, e, c, c2, t, ntouched, nclass = 0
    with nogil:
        for e in range(n):
            if e == 0 or cls[e] != cls[e - 1]:
                cstart[nclass] = e
                csplit[nclass] = -1
                nclass += 1
            owner[e] = nclass - 1
            cend[nclass - 1] = e + 1
        for s in range(nsets):
            ntouched = 0
            for p in range(setptr[s], setptr[s + 1]):
                e = elems[p]
                c = owner[e]
                if csplit[c] < 0:
                    csplit[c] = cstart[c]
                    touched[ntouched] = c
                    ntouched += 1
                # Swap e with the first element of its class not yet moved.
                q = csplit[c]
                t = order[q]
                order[where[e]] = t
                where[t] = where[e]
                order[q] = e
                where[e] = q
                csplit[c] = q + 1
            for t in range(ntouched):
                c = touched[t]
                if csplit[c] < cend[c]:
                    # The moved members become a new class in front of the rest.
                    c2 = nclass
                    nclass += 1
                    cstart[c2] = cstart[c]
                    cend[c2] = csplit[c]
                    csplit[c2] = -1
                    for q in range(cstart[c2], cend[c2]):
                        owner[order[q]] = c2
                    cstart[c] = cend[c2]
                csplit[c] = -1
    return order_a


cdef inline idx_t _panel_offset(idx_t r, idx_t c, idx_t k, const idx_t[::1] fcol,
                                const idx_t[::1] bloknum, const idx_t[::1] frow,
                                const idx_t[::1] lrow, const idx_t[::1] bcoef,
                                const idx_t[::1] stride) noexcept nogil:
    """Index of entry (r, c), pivot order, in the panel of c's cblk k, or -1 where the
    block structure does not hold it (r above cblk k, or in none of its bloks)."""
    cdef idx_t lo, hi, mid
    if r < fcol[k]:
        return -1
    if r < fcol[k + 1]:
        lo = r - fcol[k]
    else:
        # The last of the cblk's off-diagonal bloks starting at or above r.
        lo, hi = bloknum[k] + 1, bloknum[k + 1] - 1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if frow[mid] <= r:
                lo = mid
            else:
                hi = mid - 1
        if lo >= bloknum[k + 1] or frow[lo] > r or lrow[lo] < r:
            return -1
        lo = bcoef[lo] + r - frow[lo]
    return lo + (c - fcol[k]) * stride[k]


def panel_positions(const idx_t[::1] rows, const idx_t[::1] cols, const idx_t[::1] fcol,
                    const idx_t[::1] col2cblk, const idx_t[::1] bloknum,
                    const idx_t[::1] frow, const idx_t[::1] lrow,
                    const idx_t[::1] bcoef, const idx_t[::1] coefind, const idx_t[::1] stride):
    """Flat panel index of each entry (rows[i], cols[i]), pivot order (PanelLayout.position);
    ``col2cblk`` is the cblk of each column.

    A row inside the column's cblk addresses the diagonal block; a row below it, the
    blok of that cblk holding it (binary search over the cblk's bloks). Raises
    ValueError for a row above the cblk or in no blok: outside the block structure.
    """
    cdef idx_t m = rows.shape[0], ncblk = fcol.shape[0] - 1, i, k, r, c, lo
    cdef cnp.ndarray[idx_t, ndim=1] out = np.empty(m, dtype=np.int64)
    cdef idx_t* pos = &out[0] if m else NULL
    cdef bint bad = False
    if cols.shape[0] != m:
        raise ValueError("rows and cols differ in length")
    if col2cblk.shape[0] != fcol[ncblk]:
        raise ValueError("col2cblk must give the cblk of every column")
    with nogil:
        for i in range(m):
            r, c = rows[i], cols[i]
            if c < 0 or c >= fcol[ncblk]:
                bad = True
                break
            k = col2cblk[c]
            lo = _panel_offset(r, c, k, fcol, bloknum, frow, lrow, bcoef, stride)
            if lo < 0:
                bad = True
                break
            pos[i] = coefind[k] + lo
    if bad:
        raise ValueError(f"entry ({r}, {c}) lies outside the block structure")
    return out


#: Which entries :func:`assembly_entries` keeps: pivot row at least the pivot column
#: (a lower triangle), at least the first column of the column's cblk (L's panels of
#: LU: the diagonal blocks whole), or past its last column (Uᵀ's panels: Bᵀ's lower
#: entries outside the diagonal blocks).
KEEP_LOWER = 0
KEEP_FROM_CBLK = 1
KEEP_BELOW_CBLK = 2


ctypedef fused entry_t:
    int32_t
    int64_t


cdef inline idx_t _keep_bound(int keep, idx_t j, idx_t k, const idx_t[::1] fcol) noexcept nogil:
    """The least pivot row :func:`assembly_entries` keeps in pivot column j of cblk k."""
    if keep == 0:  # KEEP_LOWER
        return j
    if keep == 1:  # KEEP_FROM_CBLK
        return fcol[k]
    return fcol[k + 1]  # KEEP_BELOW_CBLK


cdef idx_t _assembly_fill(const idx_t[::1] indptr, const idx_t[::1] indices,
                          const idx_t* origin, const idx_t[::1] perm, const idx_t[::1] iperm,
                          int keep, const idx_t[::1] fcol, const idx_t[::1] bloknum,
                          const idx_t[::1] frow, const idx_t[::1] lrow, const idx_t[::1] bcoef,
                          const idx_t[::1] stride, idx_t[::1] owner, idx_t[::1] place,
                          entry_t* src, entry_t* pos, idx_t* ptr) noexcept nogil:
    """The second pass of :func:`assembly_entries`: the kept entries written, ``ptr``
    filled; returns -1 - (the pivot column of an entry the structure does not hold, times
    n, plus its pivot row), or the count written."""
    cdef idx_t n = perm.shape[0], ncblk = fcol.shape[0] - 1
    cdef idx_t j, k, b, p, r, bound, first, m = 0
    for k in range(ncblk):
        # Mark cblk k's rows with their place in its panel.
        for r in range(fcol[k], fcol[k + 1]):
            owner[r] = k
            place[r] = r - fcol[k]
        for b in range(bloknum[k] + 1, bloknum[k + 1]):
            for r in range(frow[b], lrow[b] + 1):
                owner[r] = k
                place[r] = bcoef[b] + r - frow[b]
        first = fcol[k]
        for j in range(first, fcol[k + 1]):
            bound = _keep_bound(keep, j, k, fcol)
            for p in range(indptr[perm[j]], indptr[perm[j] + 1]):
                r = iperm[indices[p]]
                if r < bound:
                    continue
                if owner[r] != k:
                    return -1 - (j * n + r)
                src[m] = <entry_t>(origin[p] if origin != NULL else p)
                pos[m] = <entry_t>(place[r] + (j - first) * stride[k])
                m += 1
        ptr[k + 1] = m
    return m


def assembly_entries(const idx_t[::1] indptr, const idx_t[::1] indices, source,
                     const idx_t[::1] perm, const idx_t[::1] iperm, int keep,
                     const idx_t[::1] fcol, const idx_t[::1] bloknum, const idx_t[::1] frow,
                     const idx_t[::1] lrow, const idx_t[::1] bcoef, const idx_t[::1] stride):
    """The entries of a CSC pattern that go into the panels: ``(src, pos, ptr)`` for
    AssemblyMap.

    The columns are walked in pivot order (column ``perm[j]`` as pivot column j), each
    in its CSC order; of each entry (pivot row ``iperm[row]``, pivot column j), those
    ``keep`` selects (:data:`KEEP_LOWER`, :data:`KEEP_FROM_CBLK`,
    :data:`KEEP_BELOW_CBLK`) give their index in the CSC arrays (``source[index]``
    where ``source`` is not None: the entry's index in another matrix, for a transposed
    pattern), their index in the panel of the column's cblk, and ``ptr``: cblk k's
    entries are ``ptr[k]:ptr[k + 1]``. ``src`` and ``pos`` are int32 where their values
    allow, else int64. A first pass counts the entries kept (the arrays are made to
    size); in the second, a cblk's rows are marked once, each with its place in the
    panel, so that an entry's place is one lookup (no search over the bloks). Raises
    ValueError for an entry kept that the block structure does not hold.
    """
    cdef idx_t n = perm.shape[0], ncblk = fcol.shape[0] - 1
    cdef idx_t nnz = indptr[n] if n else 0
    cdef idx_t j, k, p, bound, m = 0, top = nnz, panel = 0, got
    cdef const idx_t[::1] origin
    cdef const idx_t* optr = NULL
    if keep not in (KEEP_LOWER, KEEP_FROM_CBLK, KEEP_BELOW_CBLK):
        raise ValueError(f"keep must be 0, 1 or 2, got {keep}")
    if iperm.shape[0] != n or indptr.shape[0] != n + 1:
        raise ValueError("indptr, perm and iperm must be of one size n")
    if fcol[ncblk] != n or fcol[0] != 0:
        raise ValueError("the cblks must cover the n columns")
    if source is not None:
        origin = source
        if origin.shape[0] < nnz:
            raise ValueError("source must name every entry")
        optr = &origin[0] if nnz else NULL
        top = 0
    cdef cnp.ndarray[idx_t, ndim=1] ptr_a = np.zeros(ncblk + 1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] owner_a = np.full(n, -1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] place_a = np.empty(n, dtype=np.int64)
    with nogil:
        for k in range(ncblk):
            panel = max(panel, stride[k] * (fcol[k + 1] - fcol[k]))
            for j in range(fcol[k], fcol[k + 1]):
                bound = _keep_bound(keep, j, k, fcol)
                for p in range(indptr[perm[j]], indptr[perm[j] + 1]):
                    if iperm[indices[p]] >= bound:
                        m += 1
                        if optr != NULL and optr[p] >= top:
                            top = optr[p] + 1
    narrow = top <= INT32_MAX and panel <= INT32_MAX
    src_a = np.empty(m, dtype=np.int32 if narrow else np.int64)
    pos_a = np.empty(m, dtype=np.int32 if narrow else np.int64)
    cdef int32_t[::1] src32, pos32
    cdef int64_t[::1] src64, pos64
    cdef idx_t[::1] owner = owner_a, place = place_a
    cdef idx_t* ptr = &ptr_a[0]
    if narrow:
        src32, pos32 = src_a, pos_a
        with nogil:
            got = _assembly_fill(indptr, indices, optr, perm, iperm, keep, fcol, bloknum,
                                 frow, lrow, bcoef, stride, owner, place,
                                 &src32[0] if m else NULL, &pos32[0] if m else NULL, ptr)
    else:
        src64, pos64 = src_a, pos_a
        with nogil:
            got = _assembly_fill(indptr, indices, optr, perm, iperm, keep, fcol, bloknum,
                                 frow, lrow, bcoef, stride, owner, place,
                                 &src64[0] if m else NULL, &pos64[0] if m else NULL, ptr)
    if got < 0:
        got = -1 - got
        raise ValueError(f"entry ({got % n}, {got // n}) lies outside the block structure")
    return src_a, pos_a, ptr_a


cdef inline idx_t _diagonal_at(const idx_t[::1] indptr, const idx_t[::1] indices,
                               idx_t j) noexcept nogil:
    """Where column j stores row j (its rows sorted), by binary search; -1 if it does not."""
    cdef idx_t lo = indptr[j], hi = indptr[j + 1], mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < indptr[j + 1] and indices[lo] == j else -1


def stored_diagonal(const idx_t[::1] indptr, const idx_t[::1] indices):
    """The number of columns j of a CSC pattern, rows sorted in each column, that store
    row j (zeros count: the pattern's diagonal), by a binary search per column, with
    no array made."""
    cdef idx_t n = indptr.shape[0] - 1, j, count = 0
    if n <= 0:
        return 0
    if indices.shape[0] < indptr[n]:
        raise ValueError("indices is shorter than indptr says")
    with nogil:
        for j in range(n):
            if _diagonal_at(indptr, indices, j) >= 0:
                count += 1
    return count


def diagonal_positions(const idx_t[::1] indptr, const idx_t[::1] indices):
    """Where each column j of a CSC pattern, rows sorted in each column, stores row j:
    its index in ``indices`` (and the values), -1 where it stores none; a binary search
    per column, not a pass over every entry as scipy's ``diagonal()``."""
    cdef idx_t n = max(indptr.shape[0] - 1, 0), j
    cdef cnp.ndarray[idx_t, ndim=1] out_a = np.empty(n, dtype=np.int64)
    cdef idx_t[::1] out = out_a
    if n and indices.shape[0] < indptr[n]:
        raise ValueError("indices is shorter than indptr says")
    with nogil:
        for j in range(n):
            out[j] = _diagonal_at(indptr, indices, j)
    return out_a
