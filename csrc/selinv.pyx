# cython: boundscheck=False, wraparound=False, cdivision=True
"""Kernels of the selected inverse (:mod:`pastixpy.selected_inverse`): Z[S, S] gathered
from the panels of Z for the cblks of a batch, S each cblk's rows below its diagonal
block.

Z is stored as the factor is, panel by panel (cblk c's panel from ``off[c]``, column-major
with ``stride[c]`` rows: its diagonal block, then its bloks). Entry (a, b) of Z[S, S],
a in blok x and b in blok y of the cblk, is held in the panel of the cblk y faces
(``fcblk[y]``) when x faces that cblk or a later one: at the row of a in the blok of that
panel that holds it, found by a binary search once per blok pair, and the rows of one
blok follow one another there (the structure is closed under elimination). So the gather
is one search per blok pair and then column copies, where numpy would index entry by
entry.
"""

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int64_t

cnp.import_array()

ctypedef int64_t idx_t

ctypedef fused scalar:
    float
    double
    float complex
    double complex


cdef inline scalar conjugated(scalar v) noexcept nogil:
    if scalar is float or scalar is double:
        return v
    else:
        return v.conjugate()


cdef inline idx_t blok_holding(const idx_t[::1] bloknum, const idx_t[::1] frow,
                               const idx_t[::1] lrow, idx_t c, idx_t row) noexcept nogil:
    """The blok of cblk c whose rows hold ``row`` (its diagonal blok for c's own
    columns), -1 if none."""
    cdef idx_t lo = bloknum[c], hi = bloknum[c + 1] - 1, mid
    while lo <= hi:
        mid = (lo + hi) // 2
        if lrow[mid] < row:
            lo = mid + 1
        elif frow[mid] > row:
            hi = mid - 1
        else:
            return mid
    return -1


def gather_lower(scalar[::1] Z, idx_t base, const idx_t[::1] ks, const idx_t[::1] fcol,
                 const idx_t[::1] bloknum, const idx_t[::1] stride, const idx_t[::1] frow,
                 const idx_t[::1] lrow, const idx_t[::1] fcblk, const idx_t[::1] bcoef,
                 const idx_t[::1] off, scalar[:, :, :] G):
    """G[i] = Z[S, S] of cblk ``ks[i]`` where the panels of Z (from ``base``) hold it: the
    blok pairs (x, y) with ``fcblk[x] >= fcblk[y]``, each a block of the panel of
    ``fcblk[y]``; the other entries of G are left as they are (zero them first). The
    rows and columns of G past a cblk's rows below are not written (padding).

    Raises ValueError where a pair's rows are not in the panel (a structure that is
    not closed under elimination).
    """
    cdef idx_t i, k, x, y, c, b, a0, b0, hx, hy, r, q, m, j, t, src
    cdef idx_t nb = ks.shape[0]
    cdef idx_t missing = 0
    with nogil:
        for i in range(nb):
            k = ks[i]
            a0 = 0
            for x in range(bloknum[k] + 1, bloknum[k + 1]):
                hx = lrow[x] - frow[x] + 1
                b0 = 0
                for y in range(bloknum[k] + 1, bloknum[k + 1]):
                    hy = lrow[y] - frow[y] + 1
                    c = fcblk[y]
                    if fcblk[x] >= c:
                        b = blok_holding(bloknum, frow, lrow, c, frow[x])
                        if b < 0 or lrow[b] < lrow[x]:
                            missing += 1
                        else:
                            m = stride[c]
                            r = bcoef[b] + frow[x] - frow[b]
                            q = frow[y] - fcol[c]
                            for j in range(hy):
                                src = base + off[c] + (q + j) * m + r
                                for t in range(hx):
                                    G[i, a0 + t, b0 + j] = Z[src + t]
                    b0 += hy
                a0 += hx
    if missing:
        raise ValueError(f"{missing} blok pairs of Z[S, S] lie outside the panels")


def mirror_upper(const idx_t[::1] ks, const idx_t[::1] bloknum, const idx_t[::1] frow,
                 const idx_t[::1] lrow, const idx_t[::1] fcblk, bint conj,
                 scalar[:, :, :] G):
    """Complete a symmetric (Hermitian with ``conj``) Z[S, S] gathered by
    :func:`gather_lower`: the blok pairs it left out (``fcblk[x] < fcblk[y]``) from
    their mirror images."""
    cdef idx_t i, k, x, y, a0, b0, hx, hy, t, j
    cdef idx_t nb = ks.shape[0]
    with nogil:
        for i in range(nb):
            k = ks[i]
            a0 = 0
            for x in range(bloknum[k] + 1, bloknum[k + 1]):
                hx = lrow[x] - frow[x] + 1
                b0 = 0
                for y in range(bloknum[k] + 1, bloknum[k + 1]):
                    hy = lrow[y] - frow[y] + 1
                    if fcblk[x] < fcblk[y]:
                        for j in range(hy):
                            for t in range(hx):
                                if conj:
                                    G[i, a0 + t, b0 + j] = conjugated(G[i, b0 + j, a0 + t])
                                else:
                                    G[i, a0 + t, b0 + j] = G[i, b0 + j, a0 + t]
                    b0 += hy
                a0 += hx
