# Graph kernels of the ordering engine: the symmetric adjacency of A + Aᵀ, graph compression
# and breadth-first search; and the passes over a matrix's pattern that read its values too
# (how far A is from Aᵀ and Aᴴ, ‖A‖∞), which the checks before an analysis make.
# cython: language_level=3

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int64_t
from libc.math cimport fabs, isfinite
from libc.stdlib cimport qsort

cnp.import_array()

ctypedef int64_t idx_t


cdef void _rows(idx_t n, const idx_t[::1] indptr, const idx_t[::1] indices, idx_t max_row,
                idx_t[::1] rptr, idx_t[::1] rind, idx_t[::1] skipped) noexcept nogil:
    """The rows of a CSC pattern (its transpose, each row's columns sorted by
    construction) into ``rptr`` (n + 1, zeros) and ``rind``; rows of more than
    ``max_row`` entries are left empty and flagged in ``skipped``."""
    cdef idx_t i, j, p
    for p in range(indptr[n]):
        rptr[indices[p] + 1] += 1
    for i in range(n):
        skipped[i] = rptr[i + 1] > max_row
        if skipped[i]:
            rptr[i + 1] = 0
    for i in range(n):
        rptr[i + 1] += rptr[i]
    for j in range(n):
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            if not skipped[i]:
                rind[rptr[i]] = j
                rptr[i] += 1
    for i in range(n, 0, -1):
        rptr[i] = rptr[i - 1]
    rptr[0] = 0


def symmetric_adjacency(idx_t n, const idx_t[::1] indptr, const idx_t[::1] indices):
    """Adjacency of the pattern of A + Aᵀ, without the diagonal.

    Parameters
    ----------
    n : int
        Order of A.
    indptr, indices : int64 arrays
        Canonical CSC pattern of A (sorted rows, no duplicates).

    Returns
    -------
    xadj, adjncy : int64 arrays
        CSR adjacency; each list is sorted and free of duplicates.
    """
    cdef idx_t nnz = indptr[n]
    cdef cnp.ndarray[idx_t, ndim=1] tptr_a = np.zeros(n + 1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] tind_a = np.empty(nnz, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] xadj_a = np.zeros(n + 1, dtype=np.int64)
    cdef idx_t[::1] tptr = tptr_a, tind = tind_a, xadj = xadj_a
    cdef idx_t[::1] adjncy
    cdef idx_t[::1] skipped = np.empty(n, dtype=np.int64)
    cdef idx_t i, j, p, q, pe, qe, k, a, b, total
    with nogil:
        _rows(n, indptr, indices, n, tptr, tind, skipped)
        # Pass 1 counts, pass 2 fills: merge column j of A with row j of A.
        for j in range(n):
            xadj[j + 1] = _merge(j, indices, indptr[j], indptr[j + 1],
                                 tind, tptr[j], tptr[j + 1], NULL)
        for j in range(n):
            xadj[j + 1] += xadj[j]
    adjncy_a = np.empty(xadj[n], dtype=np.int64)
    adjncy = adjncy_a
    with nogil:
        for j in range(n):
            _merge(j, indices, indptr[j], indptr[j + 1], tind, tptr[j], tptr[j + 1],
                   &adjncy[xadj[j]] if xadj[j + 1] > xadj[j] else NULL)
    return xadj_a, adjncy_a


cdef inline idx_t _merge(idx_t skip, const idx_t[::1] x, idx_t p, idx_t pe,
                         const idx_t[::1] y, idx_t q, idx_t qe, idx_t* out) noexcept nogil:
    """Merge two sorted index lists without duplicates and without ``skip``; count or write."""
    cdef idx_t k = 0, v
    while p < pe or q < qe:
        if q >= qe or (p < pe and x[p] < y[q]):
            v = x[p]
            p += 1
        elif p >= pe or y[q] < x[p]:
            v = y[q]
            q += 1
        else:
            v = x[p]
            p += 1
            q += 1
        if v != skip:
            if out != NULL:
                out[k] = v
            k += 1
    return k


def indistinguishable_groups(idx_t n, const idx_t[::1] xadj, const idx_t[::1] adjncy):
    """Group vertices whose closed neighbourhoods N[v] = N(v) ∪ {v} are equal.

    Such vertices (the unknowns of one mesh node in a multi-dof problem) can be
    ordered as one weighted vertex without changing the fill of a minimum-degree
    or nested-dissection ordering.

    Returns
    -------
    group : int64 array of length n
        ``group[v]`` is the index of v's group; groups are numbered in the order
        of their smallest vertex.
    ngroups : int
    """
    cdef cnp.ndarray[idx_t, ndim=1] group_a = np.full(n, -1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] key_a = np.empty(n, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] mark_a = np.full(n, -1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] leader_a = np.full(n, -1, dtype=np.int64)
    cdef idx_t[::1] group = group_a, key = key_a, mark = mark_a, leader = leader_a
    cdef idx_t v, u, w, p, deg, ngroups = 0
    cdef bint same
    with nogil:
        for v in range(n):
            key[v] = v
            for p in range(xadj[v], xadj[v + 1]):
                key[v] += adjncy[p]
    # Candidates share degree and key, and are adjacent: only neighbours are compared.
    with nogil:
        for v in range(n):
            if leader[v] != -1:
                continue
            leader[v] = v
            deg = xadj[v + 1] - xadj[v]
            mark[v] = v
            for p in range(xadj[v], xadj[v + 1]):
                mark[adjncy[p]] = v
            for p in range(xadj[v], xadj[v + 1]):
                u = adjncy[p]
                if u < v or leader[u] != -1 or key[u] != key[v]:
                    continue
                if xadj[u + 1] - xadj[u] != deg:
                    continue
                same = True
                for w in range(xadj[u], xadj[u + 1]):
                    if mark[adjncy[w]] != v:
                        same = False
                        break
                if same:
                    leader[u] = v
        # Renumber leaders into consecutive group indices.
        for v in range(n):
            if leader[v] == v:
                mark[v] = ngroups
                ngroups += 1
            else:
                mark[v] = -1
        for v in range(n):
            group[v] = mark[leader[v]]
    return group_a, ngroups


cdef int _cmp_idx(const void* a, const void* b) noexcept nogil:
    cdef idx_t x = (<const idx_t*>a)[0], y = (<const idx_t*>b)[0]
    return (x > y) - (x < y)


cdef idx_t _group_neighbours(idx_t g, const idx_t[::1] xadj, const idx_t[::1] adjncy,
                            const idx_t[::1] groups, const idx_t[::1] members,
                            const idx_t[::1] mptr, idx_t[::1] mark, idx_t stamp,
                            idx_t* out) noexcept nogil:
    """Count the groups other than g adjacent to g's members, and write them to ``out``
    unless NULL. ``mark[h] == g + stamp`` flags h as seen: each pass over all groups
    uses its own ``stamp`` so that the marks of an earlier pass never match."""
    cdef idx_t i, p, h, count = 0
    mark[g] = g + stamp
    for i in range(mptr[g], mptr[g + 1]):
        for p in range(xadj[members[i]], xadj[members[i] + 1]):
            h = groups[adjncy[p]]
            if mark[h] != g + stamp:
                mark[h] = g + stamp
                if out != NULL:
                    out[count] = h
                count += 1
    return count


def quotient_adjacency(idx_t ngroups, const idx_t[::1] xadj, const idx_t[::1] adjncy,
                       const idx_t[::1] groups, const idx_t[::1] members,
                       const idx_t[::1] mptr):
    """Adjacency of the graph whose vertices are the groups of ``groups`` (0..ngroups-1).

    Groups g != h are adjacent when a member of g is adjacent to a member of h;
    each row is sorted. ``members[mptr[g]:mptr[g + 1]]`` are the vertices of group
    g. Two passes with a marker (count, then fill), no sort of the edges.
    """
    cdef idx_t n = xadj.shape[0] - 1, g, i
    if groups.shape[0] != n or members.shape[0] != n or mptr.shape[0] != ngroups + 1 \
            or mptr[0] != 0 or mptr[ngroups] != n:
        raise ValueError("groups, members and mptr do not describe a grouping of the vertices")
    for i in range(n):
        if groups[i] < 0 or groups[i] >= ngroups:
            raise ValueError(f"group {groups[i]} of vertex {i} is not in range({ngroups})")
        if members[i] < 0 or members[i] >= n:
            raise ValueError(f"member {members[i]} is not a vertex")
    for g in range(ngroups):
        if mptr[g + 1] < mptr[g]:
            raise ValueError("mptr must not decrease")
    cdef idx_t[::1] mark = np.full(ngroups, -1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] qxadj = np.zeros(ngroups + 1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] qadj
    cdef idx_t* out
    with nogil:
        for g in range(ngroups):
            qxadj[g + 1] = qxadj[g] + _group_neighbours(g, xadj, adjncy, groups, members, mptr,
                                                        mark, 0, NULL)
    qadj = np.empty(qxadj[ngroups], dtype=np.int64)
    out = &qadj[0] if qxadj[ngroups] else NULL
    with nogil:
        for g in range(ngroups):
            _group_neighbours(g, xadj, adjncy, groups, members, mptr, mark, ngroups,
                              &out[qxadj[g]])
            qsort(&out[qxadj[g]], qxadj[g + 1] - qxadj[g], sizeof(idx_t), _cmp_idx)
    return qxadj, qadj


def farthest_vertex(idx_t n, const idx_t[::1] xadj, const idx_t[::1] adjncy, idx_t source):
    """Breadth-first search from ``source``: a vertex farthest from it, and its distance.

    Only ``source``'s connected component is searched; two searches (the second from
    the first's answer) give a pseudo-diameter of it.
    """
    if not 0 <= source < n or xadj.shape[0] != n + 1 or xadj[n] > adjncy.shape[0]:
        raise ValueError("farthest_vertex: source out of range or xadj does not fit adjncy")
    cdef cnp.ndarray[idx_t, ndim=1] level_a = np.full(n, -1, dtype=np.int64)
    cdef cnp.ndarray[idx_t, ndim=1] queue_a = np.empty(n, dtype=np.int64)
    cdef idx_t[::1] level = level_a, queue = queue_a
    cdef idx_t head = 0, tail = 1, v, u, p, bad = -1
    queue[0] = source
    level[source] = 0
    with nogil:
        while head < tail:
            v = queue[head]
            head += 1
            for p in range(xadj[v], xadj[v + 1]):
                u = adjncy[p]
                if u < 0 or u >= n:
                    bad = v
                    break
                if level[u] < 0:
                    level[u] = level[v] + 1
                    queue[tail] = u
                    tail += 1
            if bad >= 0:
                break
    if bad >= 0:
        raise ValueError(f"farthest_vertex: vertex {bad} has a neighbour out of range")
    v = queue[tail - 1]
    return int(v), int(level[v])


# ---------------------------------------------------------------- values against the transpose

ctypedef fused values_t:
    float
    double
    float complex
    double complex


cdef extern from "magnitude.h" nogil:
    double pastixpy_cabs(double re, double im)


cdef inline double _abs(values_t a) noexcept nogil:
    if values_t is float or values_t is double:
        return fabs(<double>a)
    else:
        return pastixpy_cabs(<double>a.real, <double>a.imag)


cdef inline bint _finite(values_t a) noexcept nogil:
    """Whether a is finite (both parts of a complex one), without its magnitude."""
    if values_t is float or values_t is double:
        return isfinite(<double>a)
    else:
        return isfinite(<double>a.real) and isfinite(<double>a.imag)


cdef inline void _raise_to(double re, double im, double* top) noexcept nogil:
    """top = max(top, |re + i im|), the magnitude computed only where |re| + |im|, a bound
    above it, passes top: most entries of a matrix leave the running maximum as it is,
    and a complex magnitude's square root is most of a pass's time."""
    cdef double a
    re = fabs(re)
    im = fabs(im)
    if re + im > top[0]:
        a = pastixpy_cabs(re, im)
        if a > top[0]:
            top[0] = a


cdef inline void _max_abs(values_t a, double* top) noexcept nogil:
    """top = max(top, |a|)."""
    if values_t is float or values_t is double:
        if fabs(<double>a) > top[0]:
            top[0] = fabs(<double>a)
    else:
        _raise_to(a.real, a.imag, top)


cdef inline void _max_absdiff(values_t a, values_t b, double* top) noexcept nogil:
    """top = max(top, |a - b|)."""
    if values_t is float or values_t is double:
        if fabs(<double>a - <double>b) > top[0]:
            top[0] = fabs(<double>a - <double>b)
    else:
        _raise_to(<double>a.real - <double>b.real, <double>a.imag - <double>b.imag, top)


cdef inline void _max_absdiff_conj(values_t a, values_t b, double* top) noexcept nogil:
    """top = max(top, |a - conj(b)|)."""
    if values_t is float or values_t is double:
        if fabs(<double>a - <double>b) > top[0]:
            top[0] = fabs(<double>a - <double>b)
    else:
        _raise_to(<double>a.real - <double>b.real, <double>a.imag + <double>b.imag, top)


cdef inline void _unpartnered(values_t a, double* asym_t, double* asym_h) noexcept nogil:
    """An entry without a transposed partner differs from it (0) by its magnitude."""
    _max_abs(a, asym_t)
    _max_abs(a, asym_h)


def transposed_pairs(idx_t n, const idx_t[::1] indptr, const idx_t[::1] indices):
    """The number of off-diagonal pairs (i, j), (j, i) both in a canonical CSC pattern
    (rows sorted in each column, no duplicates): 2 x this over the off-diagonal entries
    is the fraction with a transposed partner, without forming A + Aᵀ. One pass, a
    cursor per column as :func:`transpose_asymmetry`'s."""
    if indptr.shape[0] != n + 1 or indices.shape[0] < indptr[n]:
        raise ValueError("transposed_pairs: arrays inconsistent with n")
    pos_a = np.asarray(indptr[:n], dtype=np.int64).copy() if n else np.zeros(1, np.int64)
    cdef idx_t[::1] pos = pos_a
    cdef idx_t i, j, k, p, pairs = 0
    with nogil:
        for j in range(n):
            for k in range(indptr[j], indptr[j + 1]):
                i = indices[k]
                if i <= j:
                    continue
                p = pos[i]  # (i, j) below the diagonal: (j, i) in column i, rows sorted
                while p < indptr[i + 1] and indices[p] < j:
                    p += 1
                if p < indptr[i + 1] and indices[p] == j:
                    pairs += 1
                    p += 1
                pos[i] = p
    return pairs


def transpose_asymmetry(idx_t n, const idx_t[::1] indptr, const idx_t[::1] indices,
                        const values_t[::1] data):
    """How far a canonical CSC matrix (rows sorted in each column, no duplicates) is from
    its transpose and its conjugate transpose, in one pass and without a transposed copy.

    Column i is walked by a cursor as the columns j < i that should hold its transposed
    entries come by in order (each entry (i, j) below the diagonal looks for (j, i) where
    column i's cursor stands), so the pass is linear in the entries.

    Returns
    -------
    pattern_symmetric : bool
        Every entry has a transposed partner (explicit zeros count as entries here).
    asym_t, asym_h : float
        max |a_ij - a_ji| and max |a_ij - conj(a_ji)| (a missing entry is 0; the diagonal
        counts in asym_h by 2|Im a_jj|).
    scale : float
        max |a_ij|.
    """
    if indptr.shape[0] != n + 1 or indices.shape[0] < indptr[n] or data.shape[0] < indptr[n]:
        raise ValueError("transpose_asymmetry: arrays inconsistent with n")
    pos_a = np.asarray(indptr[:n], dtype=np.int64).copy() if n else np.zeros(1, np.int64)
    cdef idx_t[::1] pos = pos_a
    cdef idx_t i, j, k, p
    cdef bint symmetric = True
    cdef double asym_t = 0.0, asym_h = 0.0, scale = 0.0
    with nogil:
        for j in range(n):
            for k in range(indptr[j], indptr[j + 1]):
                i = indices[k]
                _max_abs(data[k], &scale)
                if i < j:
                    continue  # above the diagonal: met by column i's cursor (below)
                if i == j:
                    _max_absdiff_conj(data[k], data[k], &asym_h)
                    continue
                # (i, j) below the diagonal: its partner (j, i) is in column i, where the
                # entries above row j left unmatched have no partner in their own row.
                p = pos[i]
                while p < indptr[i + 1] and indices[p] < j:
                    symmetric = False
                    _unpartnered(data[p], &asym_t, &asym_h)
                    p += 1
                if p < indptr[i + 1] and indices[p] == j:
                    _max_absdiff(data[k], data[p], &asym_t)
                    _max_absdiff_conj(data[k], data[p], &asym_h)
                    p += 1
                else:
                    symmetric = False
                    _unpartnered(data[k], &asym_t, &asym_h)
                pos[i] = p
        # Entries above the diagonal that no column reached.
        for i in range(n):
            p = pos[i]
            while p < indptr[i + 1] and indices[p] < i:
                symmetric = False
                _unpartnered(data[p], &asym_t, &asym_h)
                p += 1
    return bool(symmetric), asym_t, asym_h, scale


def inf_norm(idx_t n, const idx_t[::1] indptr, const idx_t[::1] indices,
             const values_t[::1] data):
    """‖A‖∞ of an n x n CSC matrix, the largest row sum of magnitudes, in one pass
    without a temporary of the entries' size."""
    if indptr.shape[0] != n + 1 or indices.shape[0] < indptr[n] or data.shape[0] < indptr[n]:
        raise ValueError("inf_norm: arrays inconsistent with n")
    sums_a = np.zeros(max(n, 1), dtype=np.float64)
    cdef double[::1] sums = sums_a
    cdef idx_t k, i
    cdef double best = 0.0
    with nogil:
        for k in range(indptr[n]):
            i = indices[k]
            if i < 0 or i >= n:
                with gil:
                    raise ValueError("inf_norm: a row index is out of range")
            sums[i] += _abs(data[k])
        for i in range(n):
            if sums[i] > best:
                best = sums[i]
    return best


def is_canonical_csc(idx_t n, const idx_t[::1] indptr, const idx_t[::1] indices,
                     const values_t[::1] data):
    """Whether n x n CSC arrays are canonical as :func:`pastixpy.matrix.canonical_csc`
    makes them (finiteness included), in one pass: indptr starts at 0 and never falls,
    ends within the other arrays, each column's rows strictly increasing within [0, n),
    every value finite. What fails is left to ``canonical_csc`` to name."""
    if indptr.shape[0] != n + 1 or n == 0 or indptr[0] != 0:
        return False
    cdef idx_t nnz = indptr[n], j, k, last
    if nnz < 0 or nnz > indices.shape[0] or nnz > data.shape[0]:
        return False
    cdef bint ok = True
    with nogil:
        for j in range(n):
            if indptr[j + 1] < indptr[j] or indptr[j + 1] > nnz:
                ok = False
                break
            last = -1
            for k in range(indptr[j], indptr[j + 1]):
                if indices[k] <= last or indices[k] >= n or not _finite(data[k]):
                    ok = False
                    break
                last = indices[k]
            if not ok:
                break
    return bool(ok)

