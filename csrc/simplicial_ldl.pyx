# Simplicial sparse LDLᵀ / LDLᴴ without pivoting (up-looking, row by row), and its solve.
# cython: language_level=3
"""Simplicial LDLᵀ (real or complex symmetric) and LDLᴴ (complex Hermitian) of a small
matrix, in the manner of Davis's LDL package: no pivoting, the ordering given.

The input is canonical CSC C holding both triangles of a symmetric (Hermitian)
matrix A, and a permutation p: the factored matrix is B = A[p][:, p], B = L D Lᵀ (Lᴴ).
Column p[k] of C gives column k of B's upper triangle (its rows i with pinv[row] ≤ k),
which is all the up-looking factorization reads at step k: row k of L solves
L[:k, :k] y = B[:k, k] (y = D L[k, :k]ᵀ, conjugated for LDLᴴ), whose nonzero pattern is
the reach of B[:k, k]'s rows in the elimination tree.

:func:`ldl_symbolic` computes the elimination tree and L's column counts;
:func:`ldl_numeric` the factors; :func:`ldl_solve` X ← (L D Lᵀ)⁻¹ X in pivot order.
L is unit lower triangular, its diagonal not stored; row indices within a column are
increasing (row k is appended to each column it touches, k ascending).
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport isfinite
from libc.stdint cimport int64_t

cnp.import_array()

ctypedef int64_t idx_t

ctypedef fused scalar_t:
    double
    double complex

#: Status of :func:`ldl_numeric`: factors complete.
OK = 0
#: Status of :func:`ldl_numeric`: a zero or non-finite D entry (its step is returned too).
ZERO_PIVOT = 1


def ldl_symbolic(const idx_t[::1] Cp, const idx_t[::1] Ci, const idx_t[::1] p,
                 const idx_t[::1] pinv):
    """The elimination tree of B = A[p][:, p] (parent, -1 at roots) and L's column
    pointers (counts below the diagonal, cumulated): ``(parent, Lp)``."""
    cdef idx_t n = p.shape[0]
    parent_a = np.empty(n, dtype=np.int64)
    lp_a = np.zeros(n + 1, dtype=np.int64)
    flag_a = np.empty(n, dtype=np.int64)
    cdef idx_t[::1] parent = parent_a
    cdef idx_t[::1] Lp = lp_a
    cdef idx_t[::1] flag = flag_a
    cdef idx_t k, q, i, col
    with nogil:
        for k in range(n):
            parent[k] = -1
            flag[k] = k
            col = p[k]
            for q in range(Cp[col], Cp[col + 1]):
                i = pinv[Ci[q]]
                if i >= k:
                    continue
                while flag[i] != k:  # up the tree to the first node seen at this step
                    if parent[i] == -1:
                        parent[i] = k
                    Lp[i + 1] += 1
                    flag[i] = k
                    i = parent[i]
        for k in range(n):
            Lp[k + 1] += Lp[k]
    return parent_a, lp_a


def ldl_numeric(const idx_t[::1] Cp, const idx_t[::1] Ci, const scalar_t[::1] Cx,
                const idx_t[::1] p, const idx_t[::1] pinv, const idx_t[::1] parent,
                const idx_t[::1] Lp, bint hermitian):
    """L and D of B = A[p][:, p] = L D Lᵀ (``hermitian``: L D Lᴴ), no pivoting.

    Returns ``(status, step, Li, Lx, D)``: status :data:`OK`, or :data:`ZERO_PIVOT` with
    ``step`` the first step whose D entry is zero or not finite (the factors are then
    incomplete). Lp is :func:`ldl_symbolic`'s."""
    cdef idx_t n = p.shape[0]
    cdef idx_t nnz = Lp[n]
    dt = np.float64 if scalar_t is double else np.complex128
    li_a = np.empty(nnz, dtype=np.int64)
    lx_a = np.empty(nnz, dtype=dt)
    d_a = np.empty(n, dtype=dt)
    y_a = np.zeros(n, dtype=dt)
    flag_a = np.empty(n, dtype=np.int64)
    lnz_a = np.zeros(n, dtype=np.int64)
    pattern_a = np.empty(n, dtype=np.int64)
    cdef idx_t[::1] Li = li_a
    cdef scalar_t[::1] Lx = lx_a
    cdef scalar_t[::1] D = d_a
    cdef scalar_t[::1] Y = y_a
    cdef idx_t[::1] flag = flag_a
    cdef idx_t[::1] lnz = lnz_a
    cdef idx_t[::1] pattern = pattern_a
    cdef idx_t k, q, i, col, top, length, end
    cdef scalar_t yi, lki, dk
    cdef int status = 0
    cdef idx_t step = -1
    with nogil:
        for k in range(n):
            top = n
            flag[k] = k
            col = p[k]
            for q in range(Cp[col], Cp[col + 1]):  # scatter B[:k+1, k], find the reach
                i = pinv[Ci[q]]
                if i > k:
                    continue
                Y[i] = Y[i] + Cx[q]
                length = 0
                while flag[i] != k:
                    pattern[length] = i
                    length += 1
                    flag[i] = k
                    i = parent[i]
                while length > 0:  # the path reversed onto the stack: topological order
                    top -= 1
                    length -= 1
                    pattern[top] = pattern[length]
            dk = Y[k]
            Y[k] = 0
            while top < n:  # y = L[:k, :k]⁻¹ B[:k, k], over its nonzeros
                i = pattern[top]
                top += 1
                yi = Y[i]
                Y[i] = 0
                end = Lp[i] + lnz[i]
                for q in range(Lp[i], end):
                    Y[Li[q]] = Y[Li[q]] - Lx[q] * yi
                lki = yi / D[i]
                if scalar_t is not double:
                    if hermitian:
                        lki = lki.conjugate()
                dk = dk - lki * yi
                Li[end] = k
                Lx[end] = lki
                lnz[i] += 1
            if scalar_t is not double:
                if hermitian:
                    dk = dk.real  # B[k, k] real, and Σ |y_i|² / D_i real: round-off only
            D[k] = dk
            if scalar_t is double:
                if dk == 0 or not isfinite(dk):
                    status = 1
            else:
                if dk == 0 or not isfinite(dk.real) or not isfinite(dk.imag):
                    status = 1
            if status:
                step = k
                break
    return status, step, li_a, lx_a, d_a


def ldl_solve(const idx_t[::1] Lp, const idx_t[::1] Li, const scalar_t[::1] Lx,
              const scalar_t[::1] D, scalar_t[:, :] X, bint hermitian):
    """X ← (L D Lᵀ)⁻¹ X (``hermitian``: (L D Lᴴ)⁻¹ X), X (n, k) in pivot order, in place."""
    cdef idx_t n = D.shape[0]
    cdef idx_t m = X.shape[1]
    cdef idx_t j, q, c, r
    cdef scalar_t xj, lv
    with nogil:
        for c in range(m):
            for j in range(n):  # L
                xj = X[j, c]
                if xj != 0:
                    for q in range(Lp[j], Lp[j + 1]):
                        X[Li[q], c] = X[Li[q], c] - Lx[q] * xj
            for j in range(n):  # D
                X[j, c] = X[j, c] / D[j]
            for j in range(n - 1, -1, -1):  # Lᵀ or Lᴴ
                xj = X[j, c]
                for q in range(Lp[j], Lp[j + 1]):
                    lv = Lx[q]
                    if scalar_t is not double:
                        if hermitian:
                            lv = lv.conjugate()
                    xj = xj - lv * X[Li[q], c]
                X[j, c] = xj
