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
:func:`ldl_numeric` the factors; :func:`ldl_checks` the growth and smallest pivot the
small path's verdict reads; :func:`ldl_solve` X ← (L D Lᵀ)⁻¹ X in pivot order;
:func:`ldl_solve_refined` x = A⁻¹ b refined and checked in one call.
L is unit lower triangular, its diagonal not stored; row indices within a column are
increasing (row k is appended to each column it touches, k ascending).
"""

import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, fabs, isfinite
from libc.stdint cimport int64_t

cnp.import_array()

ctypedef int64_t idx_t

ctypedef fused scalar_t:
    double
    double complex

include "sparse/residual.pxi"

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


cdef void solve_column(idx_t n, const idx_t* Lp, const idx_t* Li, const scalar_t* Lx,
                       const scalar_t* D, const idx_t* p, bint hermitian, const scalar_t* b,
                       scalar_t* y, scalar_t* x) noexcept nogil:
    """x = A⁻¹ b for B = A[p][:, p] = L D Lᵀ (Lᴴ): y = b[p] in pivot order, solved, and
    scattered back, x[p] = y; y: n of workspace."""
    cdef idx_t j, q
    cdef scalar_t yj, lv
    for j in range(n):
        y[j] = b[p[j]]
    for j in range(n):  # L
        yj = y[j]
        if yj != 0:
            for q in range(Lp[j], Lp[j + 1]):
                y[Li[q]] = y[Li[q]] - Lx[q] * yj
    for j in range(n):  # D
        y[j] = y[j] / D[j]
    for j in range(n - 1, -1, -1):  # Lᵀ or Lᴴ
        yj = y[j]
        for q in range(Lp[j], Lp[j + 1]):
            lv = Lx[q]
            if scalar_t is not double:
                if hermitian:
                    lv = lv.conjugate()
            yj = yj - lv * y[Li[q]]
        y[j] = yj
    for j in range(n):
        x[p[j]] = y[j]


def ldl_solve_refined(const idx_t[::1] Cp, const idx_t[::1] Ci, const scalar_t[::1] Cx,
                      const idx_t[::1] Lp, const idx_t[::1] Li, const scalar_t[::1] Lx,
                      const scalar_t[::1] D, const idx_t[::1] p, bint hermitian,
                      const scalar_t[:, :] B, scalar_t[:, :] X, double tol, int max_steps):
    """X = A⁻¹ B with the factors of :func:`ldl_numeric` (B = A[p][:, p] = L D Lᵀ), each
    column refined while its backward error is above ``tol`` and falls, at most
    ``max_steps`` times: the solve, the check and the refinement in one call, as
    ``pastixpy._simplicial.solve_refined`` does for the LU.

    Parameters
    ----------
    Cp, Ci, Cx : arrays
        A's CSC arrays, both triangles.
    Lp, Li, Lx, D : arrays
        The factors.
    p : int64 array
        The ordering.
    hermitian : bool
    B, X : (n, k) arrays of A's dtype
        The right-hand sides and the solutions (written), in any layout; X may not be B.
    tol : float
    max_steps : int

    Returns
    -------
    berr : float64 array (k,)
        Each column's backward error ‖b − A x‖∞ / (‖A‖∞ ‖x‖∞ + ‖b‖∞).
    growth : float64 array (k,)
        Each column's ‖A‖∞ ‖x‖∞ / ‖b‖∞ (0 where x = 0, inf where only b is).
    steps : int64 array (k,)
        The refinement steps each column kept.
    """
    cdef idx_t n = Cp.shape[0] - 1, k = B.shape[1], c, i, step
    dtype = np.float64 if scalar_t is double else np.complex128
    berr_a = np.zeros(k)
    growth_a = np.zeros(k)
    steps_a = np.zeros(k, dtype=np.int64)
    cdef double[::1] berr = berr_a, growth = growth_a
    cdef idx_t[::1] steps = steps_a
    if n == 0:
        return berr_a, growth_a, steps_a
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
    cdef const idx_t* Lp_ = &Lp[0]
    cdef const idx_t* Li_ = &Li[0] if Li.shape[0] else NULL
    cdef const scalar_t* Lx_ = &Lx[0] if Lx.shape[0] else NULL
    cdef const scalar_t* D_ = &D[0]
    cdef const idx_t* p_ = &p[0]
    cdef const idx_t* Cp_ = &Cp[0]
    cdef const idx_t* Ci_ = &Ci[0] if Ci.shape[0] else NULL
    cdef const scalar_t* Cx_ = &Cx[0] if Cx.shape[0] else NULL
    with nogil:
        norm_a = row_norm(n, Cp_, Ci_, Cx_, &rowsum[0])
        for c in range(k):
            for i in range(n):
                b[i] = B[i, c]
            solve_column(n, Lp_, Li_, Lx_, D_, p_, hermitian, b, y, x)
            e = residual(n, Cp_, Ci_, Cx_, norm_a, x, b, r, &g)
            for step in range(max_steps):
                if not e > tol:
                    break
                solve_column(n, Lp_, Li_, Lx_, D_, p_, hermitian, r, y, x_new)
                for i in range(n):
                    x_new[i] = x_new[i] + x[i]
                e_new = residual(n, Cp_, Ci_, Cx_, norm_a, x_new, b, r_new, &g_new)
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


def ldl_checks(const idx_t[::1] Cp, const scalar_t[::1] Cx, const idx_t[::1] Lp,
               const scalar_t[::1] Lx, const scalar_t[::1] D, const idx_t[::1] p):
    """What the small path's verdict reads of complete factors, in one pass: ``(top,
    smallest)``, top the largest magnitude in D and in L D's columns (U = D Lᵀ's
    entries, which bound the backward error), smallest the least |D_k| relative to the
    largest magnitude in column p[k] of A (inf where n = 0; a zero column, which a
    complete factorization never meets, is left out)."""
    cdef idx_t n = D.shape[0], j, q
    cdef double top = 0.0, smallest = INFINITY, d, colmax
    with nogil:
        for j in range(n):
            d = magnitude(D[j])
            top = max(top, d)
            for q in range(Lp[j], Lp[j + 1]):
                top = max(top, magnitude(Lx[q]) * d)
            colmax = 0.0
            for q in range(Cp[p[j]], Cp[p[j] + 1]):
                colmax = max(colmax, magnitude(Cx[q]))
            if colmax > 0:
                smallest = min(smallest, d / colmax)
    return top, smallest

