# Numeric kernels: supernodal LLᵀ/LDLᵀ/LU factorization over the block symbol, and the triangular solves.
# cython: language_level=3
#
# Panels: cblk k is a dense column-major panel of stride[k] rows by width[k]
# columns at offset coefind[k] of one flat array (L, and Uᵀ for LU); its bloks
# are stacked, blok b starting at row blok_coefind[b]. All loops run without the
# GIL on raw pointers; BLAS/LAPACK come from scipy's Cython bindings.

import numpy as np

cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from cpython.ref cimport PyObject
from cython.parallel cimport parallel, threadid
from libc.math cimport fabs, sqrt
from libc.stdint cimport INT64_MAX, int32_t, int64_t
from libc.stdlib cimport calloc, free, malloc
from openmp cimport (omp_destroy_lock, omp_get_num_threads, omp_get_wtime, omp_init_lock,
                     omp_lock_t, omp_set_lock, omp_test_lock, omp_unset_lock)
from scipy.linalg.cython_blas cimport (cgemm, cgemv, cherk, ctrsm, ctrsv, dgemm, dgemv,
                                       dsyrk, dtrsm, dtrsv, sgemm, sgemv, ssyrk, strsm,
                                       strsv, zgemm, zgemv, zherk, ztrsm, ztrsv)
from scipy.linalg.cython_lapack cimport cpotrf, dpotrf, spotrf, zpotrf

cnp.import_array()

cdef extern from "<sched.h>" nogil:
    int sched_yield()

cdef extern from *:
    void __builtin_prefetch(const void* addr, int rw, int locality) nogil

ctypedef int64_t idx_t
ctypedef float complex cfloat
ctypedef double complex cdouble

ctypedef fused scalar:
    float
    double
    cfloat
    cdouble

# Factorization kinds, shared with pastixpy/numeric.py.
cdef enum:
    LLT = 0
    LDLT = 1
    LDLH = 2
    LU = 3

KIND_CODES = {"llt": LLT, "ldlt": LDLT, "ldlh": LDLH, "lu": LU}

cdef double BK_ALPHA = 0.6403882032022076  # (1 + sqrt(17)) / 8, Bunch-Kaufman's growth bound


# ----------------------------------------------------------------------------- scalars

cdef inline double mag(scalar x) noexcept nogil:
    if scalar is float or scalar is double:
        return fabs(x)
    else:
        return sqrt(x.real * x.real + x.imag * x.imag)


cdef inline scalar cj(scalar x, bint conj) noexcept nogil:
    """x, conjugated when ``conj`` (Hermitian kinds)."""
    if scalar is cfloat or scalar is cdouble:
        if conj:
            return x.conjugate()
    return x


# ----------------------------------------------------------------------------- BLAS/LAPACK

cdef inline void gemm(char ta, char tb, int m, int n, int k, scalar alpha, scalar* a, int lda,
                      scalar* b, int ldb, scalar beta, scalar* c, int ldc) noexcept nogil:
    if m <= 0 or n <= 0:
        return
    if scalar is float:
        sgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc)
    elif scalar is double:
        dgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc)
    elif scalar is cfloat:
        cgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc)
    else:
        zgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc)


cdef inline void rank_k_lower(int n, int k, double alpha, scalar* a, int lda, double beta,
                              scalar* c, int ldc) noexcept nogil:
    """Lower triangle of C ← alpha A Aᵀ + beta C (A Aᴴ for complex: LLᴴ), A n x k."""
    cdef char uplo = c'L', tn = c'N'
    cdef float fa = alpha, fb = beta
    if n <= 0:
        return
    if scalar is float:
        ssyrk(&uplo, &tn, &n, &k, &fa, a, &lda, &fb, c, &ldc)
    elif scalar is double:
        dsyrk(&uplo, &tn, &n, &k, &alpha, a, &lda, &beta, c, &ldc)
    elif scalar is cfloat:
        cherk(&uplo, &tn, &n, &k, &fa, a, &lda, &fb, c, &ldc)
    else:
        zherk(&uplo, &tn, &n, &k, &alpha, a, &lda, &beta, c, &ldc)


cdef inline void trsm(char side, char uplo, char ta, char diag, int m, int n, scalar alpha,
                      scalar* a, int lda, scalar* b, int ldb) noexcept nogil:
    if m <= 0 or n <= 0:
        return
    if scalar is float:
        strsm(&side, &uplo, &ta, &diag, &m, &n, &alpha, a, &lda, b, &ldb)
    elif scalar is double:
        dtrsm(&side, &uplo, &ta, &diag, &m, &n, &alpha, a, &lda, b, &ldb)
    elif scalar is cfloat:
        ctrsm(&side, &uplo, &ta, &diag, &m, &n, &alpha, a, &lda, b, &ldb)
    else:
        ztrsm(&side, &uplo, &ta, &diag, &m, &n, &alpha, a, &lda, b, &ldb)


# Below this many matrix entries, level-2 operations run as plain loops: the solve
# calls them once per cblk, and most cblks are a few columns wide, where a BLAS
# call's fixed cost outweighs the work.
cdef enum:
    SMALL_LEVEL2 = 1024


cdef inline void gemv(char ta, int m, int n, scalar alpha, scalar* a, int lda, scalar* x,
                      scalar beta, scalar* y) noexcept nogil:
    """y ← alpha op(A) x + beta y, A m x n; y is not read when beta is 0 (as in BLAS)."""
    cdef int one = 1
    if m <= 0 or n <= 0:
        return
    if <int64_t>m * n <= SMALL_LEVEL2:
        small_gemv(ta, m, n, alpha, a, lda, x, beta, y)
    elif scalar is float:
        sgemv(&ta, &m, &n, &alpha, a, &lda, x, &one, &beta, y, &one)
    elif scalar is double:
        dgemv(&ta, &m, &n, &alpha, a, &lda, x, &one, &beta, y, &one)
    elif scalar is cfloat:
        cgemv(&ta, &m, &n, &alpha, a, &lda, x, &one, &beta, y, &one)
    else:
        zgemv(&ta, &m, &n, &alpha, a, &lda, x, &one, &beta, y, &one)


cdef inline void small_gemv(char ta, int m, int n, scalar alpha, scalar* a, int lda, scalar* x,
                            scalar beta, scalar* y) noexcept nogil:
    # Four columns at a time: a quarter of the passes over y for 'N', and four
    # independent sums (rather than one chain of dependent additions) for 'T'/'C'.
    cdef int i, j
    cdef scalar s0, s1, s2, s3
    cdef bint conj = ta == c'C'
    cdef scalar* c0
    cdef scalar* c1
    cdef scalar* c2
    cdef scalar* c3
    if ta == c'N':
        for i in range(m):
            y[i] = 0 if beta == 0 else beta * y[i]
    j = 0
    while j + 4 <= n:
        c0 = a + <int64_t>j * lda
        c1 = c0 + lda
        c2 = c1 + lda
        c3 = c2 + lda
        if ta == c'N':
            s0, s1, s2, s3 = alpha * x[j], alpha * x[j + 1], alpha * x[j + 2], alpha * x[j + 3]
            for i in range(m):
                y[i] += c0[i] * s0 + c1[i] * s1 + c2[i] * s2 + c3[i] * s3
        else:
            s0 = s1 = s2 = s3 = 0
            for i in range(m):
                s0 += cj(c0[i], conj) * x[i]
                s1 += cj(c1[i], conj) * x[i]
                s2 += cj(c2[i], conj) * x[i]
                s3 += cj(c3[i], conj) * x[i]
            y[j] = alpha * s0 if beta == 0 else alpha * s0 + beta * y[j]
            y[j + 1] = alpha * s1 if beta == 0 else alpha * s1 + beta * y[j + 1]
            y[j + 2] = alpha * s2 if beta == 0 else alpha * s2 + beta * y[j + 2]
            y[j + 3] = alpha * s3 if beta == 0 else alpha * s3 + beta * y[j + 3]
        j += 4
    while j < n:
        c0 = a + <int64_t>j * lda
        if ta == c'N':
            s0 = alpha * x[j]
            for i in range(m):
                y[i] += c0[i] * s0
        else:
            s0 = 0
            for i in range(m):
                s0 += cj(c0[i], conj) * x[i]
            y[j] = alpha * s0 if beta == 0 else alpha * s0 + beta * y[j]
        j += 1


cdef inline void trsv(char uplo, char ta, char diag, int n, scalar* a, int lda,
                      scalar* x) noexcept nogil:
    """x ← op(A)⁻¹ x for a triangular n x n A."""
    cdef int one = 1
    if n <= 0:
        return
    if <int64_t>n * n <= SMALL_LEVEL2:
        small_trsv(uplo, ta, diag, n, a, lda, x)
    elif scalar is float:
        strsv(&uplo, &ta, &diag, &n, a, &lda, x, &one)
    elif scalar is double:
        dtrsv(&uplo, &ta, &diag, &n, a, &lda, x, &one)
    elif scalar is cfloat:
        ctrsv(&uplo, &ta, &diag, &n, a, &lda, x, &one)
    else:
        ztrsv(&uplo, &ta, &diag, &n, a, &lda, x, &one)


cdef inline void small_trsv(char uplo, char ta, char diag, int n, scalar* a, int lda,
                            scalar* x) noexcept nogil:
    cdef int i, j, ii, jj
    cdef scalar s
    cdef bint unit = diag == c'U', conj = ta == c'C', lower = uplo == c'L'
    cdef scalar* col
    if ta == c'N':
        # Column by column: x_j is final once divided, then leaves column j.
        for jj in range(n):
            j = jj if lower else n - 1 - jj
            col = a + <int64_t>j * lda
            if not unit:
                x[j] = x[j] / col[j]
            s = x[j]
            if lower:
                for i in range(j + 1, n):
                    x[i] -= col[i] * s
            else:
                for i in range(j):
                    x[i] -= col[i] * s
    else:
        # Row i of op(A) is column i of A: a dot product over its part past the diagonal.
        for ii in range(n):
            i = n - 1 - ii if lower else ii
            col = a + <int64_t>i * lda
            s = x[i]
            if lower:
                for j in range(i + 1, n):
                    s -= cj(col[j], conj) * x[j]
            else:
                for j in range(i):
                    s -= cj(col[j], conj) * x[j]
            x[i] = s if unit else s / cj(col[i], conj)


cdef inline int potrf(int n, scalar* a, int lda) noexcept nogil:
    cdef char uplo = c'L'
    cdef int info = 0
    if scalar is float:
        spotrf(&uplo, &n, a, &lda, &info)
    elif scalar is double:
        dpotrf(&uplo, &n, a, &lda, &info)
    elif scalar is cfloat:
        cpotrf(&uplo, &n, a, &lda, &info)
    else:
        zpotrf(&uplo, &n, a, &lda, &info)
    return info


cdef inline scalar perturbed_pivot(scalar d, double tol) noexcept nogil:
    """Static pivoting: a pivot below ``tol`` becomes ``tol`` with the pivot's sign (phase)."""
    cdef double r = mag(d)
    cdef scalar s = tol
    if r == 0:
        return s
    s = tol / r
    return d * s


# ----------------------------------------------------------------------------- dense diagonal blocks

cdef inline void swap(scalar* x, scalar* y) noexcept nogil:
    cdef scalar t = x[0]
    x[0] = y[0]
    y[0] = t


cdef inline void swap_rows(int ncols, scalar* a, int lda, int i, int j) noexcept nogil:
    cdef int c
    if i != j:
        for c in range(ncols):
            swap(&a[i + c * lda], &a[j + c * lda])


cdef idx_t lu_local(int m, int n, scalar* a, int lda, double tol, signed char* pert,
                    int* ipiv) noexcept nogil:
    """LU with partial pivoting of an m x n panel (m >= n) whose rows all lie in one diagonal block.

    Recursive (Toledo): the left half is factored, its interchanges applied to the
    right half, which is updated with trsm/gemm and factored in turn. Row k was
    interchanged with row ``ipiv[k]`` (LAPACK's convention, 0-based). A column with
    no entry of magnitude ``tol`` gets a perturbed pivot (static pivoting), marked
    in ``pert``. Returns the number of perturbed pivots.
    """
    cdef scalar one = 1, mone = -1, p
    cdef int n1, n2, i, j, k, imax
    cdef idx_t count = 0
    cdef double best
    if n <= 8:
        for k in range(n):
            imax = k
            best = mag(a[k + k * lda])
            for i in range(k + 1, m):
                if mag(a[i + k * lda]) > best:
                    best = mag(a[i + k * lda])
                    imax = i
            ipiv[k] = imax
            swap_rows(n, a, lda, k, imax)
            p = a[k + k * lda]
            if best < tol:
                p = perturbed_pivot(p, tol)
                a[k + k * lda] = p
                pert[k] = 1
                count += 1
            for i in range(k + 1, m):
                a[i + k * lda] = a[i + k * lda] / p
            for j in range(k + 1, n):
                p = a[k + j * lda]
                if p != 0:
                    for i in range(k + 1, m):
                        a[i + j * lda] -= a[i + k * lda] * p
        return count
    n1 = n // 2
    n2 = n - n1
    count = lu_local(m, n1, a, lda, tol, pert, ipiv)
    for k in range(n1):
        swap_rows(n2, a + n1 * lda, lda, k, ipiv[k])
    trsm(c'L', c'L', c'N', c'U', n1, n2, one, a, lda, a + n1 * lda, lda)
    gemm(c'N', c'N', m - n1, n2, n1, mone, a + n1, lda, a + n1 * lda, lda, one,
         a + n1 + n1 * lda, lda)
    count += lu_local(m - n1, n2, a + n1 + n1 * lda, lda, tol, pert + n1, ipiv + n1)
    for k in range(n1, n):
        ipiv[k] += n1
        swap_rows(n1, a, lda, k, ipiv[k])
    return count


cdef inline void keep_real_diagonal(scalar* d, bint conj) noexcept nogil:
    """Drop the imaginary part of a Hermitian diagonal entry (rounding of an update)."""
    if scalar is cfloat or scalar is cdouble:
        if conj:
            d[0] = d[0].real


cdef idx_t ldlt_bunch_kaufman(int w, int m, scalar* a, bint conj, double tol, idx_t* lperm,
                              signed char* pivtype, signed char* pert, scalar* dsub,
                              scalar* tmp) noexcept nogil:
    """P L D Lᵀ Pᵀ (or Lᴴ) of the w x w diagonal block of a panel with m rows, in place.

    Bunch-Kaufman 1x1/2x2 pivoting restricted to the block; interchanges are
    applied to the factored rows of L, to the panel rows below the block, and
    to ``lperm``. L (unit) overwrites the strict lower triangle and D the
    diagonal; for a 2x2 pivot at k, D's off-diagonal goes to ``dsub[k]`` and
    L's entry (k+1, k) is zero. ``pivtype`` is 1 for a 1x1 pivot, 2 and 0 for
    the two columns of a 2x2. A pivot whose block has no
    entry above ``tol`` is perturbed (static pivoting). ``tmp`` holds 2w scalars.
    """
    cdef int k = 0, kk, kp, kstep, i, j, imax, jmax
    cdef idx_t count = 0, ti
    cdef double absakk, colmax, rowmax
    cdef scalar d, d11, d21, d12, d22, det, t, x1, x2
    cdef scalar* l1 = tmp
    cdef scalar* l2 = tmp + w
    if scalar is cfloat or scalar is cdouble:
        if conj:
            # A Hermitian diagonal is real. The updates from other cblks (gemm) and the
            # ones below leave rounding in its imaginary parts; kept, they make D⁻¹ and
            # the Schur complements non-Hermitian, and the error grows from step to step
            # (LAPACK's zhetf2 keeps the diagonal real for the same reason).
            for j in range(w):
                a[j + j * m] = a[j + j * m].real
    while k < w:
        kstep = 1
        kp = k
        absakk = mag(a[k + k * m])
        colmax = 0
        imax = k
        for i in range(k + 1, w):
            if mag(a[i + k * m]) > colmax:
                colmax = mag(a[i + k * m])
                imax = i
        if max(absakk, colmax) >= tol and absakk < BK_ALPHA * colmax:
            rowmax = 0
            for j in range(k, imax):
                rowmax = max(rowmax, mag(a[imax + j * m]))
            for j in range(imax + 1, w):
                rowmax = max(rowmax, mag(a[j + imax * m]))
            if absakk * rowmax >= BK_ALPHA * colmax * colmax:
                kp = k
            elif mag(a[imax + imax * m]) >= BK_ALPHA * rowmax:
                kp = imax
            else:
                kp = imax
                kstep = 2
        kk = k + kstep - 1
        if kp != kk:
            # Symmetric interchange of rows/columns kk and kp (kk < kp).
            for i in range(kp + 1, w):
                swap(&a[i + kk * m], &a[i + kp * m])
            for j in range(kk + 1, kp):
                t = a[j + kk * m]
                a[j + kk * m] = cj(a[kp + j * m], conj)
                a[kp + j * m] = cj(t, conj)
            a[kp + kk * m] = cj(a[kp + kk * m], conj)
            swap(&a[kk + kk * m], &a[kp + kp * m])
            if kstep == 2:
                swap(&a[k + 1 + k * m], &a[kp + k * m])
            for j in range(k):
                swap(&a[kk + j * m], &a[kp + j * m])
            for i in range(w, m):
                swap(&a[i + kk * m], &a[i + kp * m])
            ti = lperm[kk]
            lperm[kk] = lperm[kp]
            lperm[kp] = ti
        if kstep == 1:
            d = a[k + k * m]
            if scalar is cfloat or scalar is cdouble:
                if conj:
                    d = d.real  # a Hermitian pivot is real
            if mag(d) < tol:
                d = perturbed_pivot(d, tol)
                pert[k] = 1
                count += 1
            a[k + k * m] = d
            pivtype[k] = 1
            for j in range(k + 1, w):
                t = cj(a[j + k * m], conj) / d
                if t != 0:
                    for i in range(j, w):
                        a[i + j * m] -= a[i + k * m] * t
                    keep_real_diagonal(&a[j + j * m], conj)
            for i in range(k + 1, w):
                a[i + k * m] = a[i + k * m] / d
        else:
            d11 = a[k + k * m]
            d21 = a[k + 1 + k * m]
            d22 = a[k + 1 + (k + 1) * m]
            d12 = cj(d21, conj)
            det = d11 * d22 - d12 * d21
            pivtype[k] = 2
            pivtype[k + 1] = 0
            for i in range(k + 2, w):
                x1 = a[i + k * m]
                x2 = a[i + (k + 1) * m]
                l1[i] = (x1 * d22 - x2 * d21) / det
                l2[i] = (x2 * d11 - x1 * d12) / det
            for j in range(k + 2, w):
                x1 = cj(a[j + k * m], conj)
                x2 = cj(a[j + (k + 1) * m], conj)
                for i in range(j, w):
                    a[i + j * m] -= l1[i] * x1 + l2[i] * x2
                keep_real_diagonal(&a[j + j * m], conj)
            for i in range(k + 2, w):
                a[i + k * m] = l1[i]
                a[i + (k + 1) * m] = l2[i]
            dsub[k] = d21
            a[k + 1 + k * m] = 0
        k += kstep
    return count


cdef void apply_dinv_right(int w, int rows, scalar* diag, int ldd, scalar* x, int ldx, bint conj,
                           signed char* pivtype, scalar* dsub) noexcept nogil:
    """X ← X D⁻¹ for ``rows`` rows of X, D the block diagonal stored in an LDLᵀ diagonal block."""
    cdef int k, i
    cdef scalar d11, d21, d12, d22, det, x1, x2
    k = 0
    while k < w:
        if pivtype[k] == 1:
            d11 = diag[k + k * ldd]
            for i in range(rows):
                x[i + k * ldx] = x[i + k * ldx] / d11
            k += 1
        else:
            d11 = diag[k + k * ldd]
            d21 = dsub[k]
            d22 = diag[k + 1 + (k + 1) * ldd]
            d12 = cj(d21, conj)
            det = d11 * d22 - d12 * d21
            for i in range(rows):
                x1 = x[i + k * ldx]
                x2 = x[i + (k + 1) * ldx]
                x[i + k * ldx] = (x1 * d22 - x2 * d21) / det
                x[i + (k + 1) * ldx] = (x2 * d11 - x1 * d12) / det
            k += 2


# ----------------------------------------------------------------------------- factorization

cdef idx_t row_runs(idx_t k, idx_t bfirst, idx_t f, const idx_t* bloknum, const idx_t* frow,
                    const idx_t* lrow, const idx_t* bcoef, idx_t* runs) noexcept nogil:
    """Where the rows of cblk k's bloks ``bfirst..`` lie in cblk f's panel (each lies inside
    one blok of f: closure). Consecutive bloks that also follow each other there make one
    run; ``runs`` gets a (first row in f's panel, height) pair per run, in k's row order.
    Returns the number of runs."""
    cdef idx_t b2, fb = bloknum[f], fend = bloknum[f + 1], nrun = 0, h2, dstrow
    for b2 in range(bfirst, bloknum[k + 1]):
        while fb < fend and lrow[fb] < frow[b2]:
            fb += 1
        h2 = lrow[b2] - frow[b2] + 1
        dstrow = bcoef[fb] + (frow[b2] - frow[fb])
        if nrun > 0 and runs[2 * nrun - 2] + runs[2 * nrun - 1] == dstrow:
            runs[2 * nrun - 1] += h2
        else:
            runs[2 * nrun] = dstrow
            runs[2 * nrun + 1] = h2
            nrun += 1
    return nrun


cdef void subtract_runs(const scalar* c, idx_t ldc, idx_t ncols, scalar* dst, idx_t ldd,
                        const idx_t* runs, idx_t nrun) noexcept nogil:
    """Subtract the rows of ``c`` (the runs stacked) from the runs' rows of ``dst``,
    column by column: both are streamed through once."""
    cdef idx_t i, j, r, row, h
    cdef const scalar* src
    cdef scalar* col
    for j in range(ncols):
        src = c + j * ldc
        col = dst + j * ldd
        for r in range(nrun):
            row = runs[2 * r]
            h = runs[2 * r + 1]
            for i in range(h):
                col[row + i] -= src[i]
            src += h


cdef void scatter_sub(scalar* c, int ldc, idx_t rowbase, int ncols, idx_t k, idx_t bfirst,
                      idx_t b, idx_t f, scalar* target, const idx_t* fcol,
                      const idx_t* bloknum, const idx_t* coefind, const idx_t* stride,
                      const idx_t* frow, const idx_t* lrow, const idx_t* bcoef,
                      idx_t* runs) noexcept nogil:
    """Subtract the update ``c`` of cblk k's bloks ``bfirst..`` (columns: the rows of blok b)
    from the panel of cblk f. ``c``'s rows are k's bloks stacked from panel row
    ``rowbase``; ``runs`` is scratch for :func:`row_runs` (2 entries per blok)."""
    cdef idx_t nrun
    if bfirst >= bloknum[k + 1]:
        return
    nrun = row_runs(k, bfirst, f, bloknum, frow, lrow, bcoef, runs)
    subtract_runs(c + (bcoef[bfirst] - rowbase), ldc, ncols,
                  target + coefind[f] + (frow[b] - fcol[f]) * stride[f], stride[f], runs, nrun)


cdef void scatter_sub_transposed(scalar* c, int ldc, idx_t rowbase, int ncols, idx_t bfirst,
                                 idx_t bend, idx_t b, idx_t f, scalar* L, const idx_t* fcol,
                                 const idx_t* coefind, const idx_t* stride, const idx_t* frow,
                                 const idx_t* lrow, const idx_t* bcoef) noexcept nogil:
    """LU: subtract the Uᵀ update of bloks ``bfirst..bend-1`` of a cblk that, like blok b,
    face cblk f. Those rows are columns of f, so the entries belong to the upper
    triangle of f's diagonal block, stored transposed in L's panel."""
    cdef idx_t b2, i, j, h2, sf = stride[f], f0 = fcol[f]
    cdef scalar* src
    cdef scalar* dst
    for b2 in range(bfirst, bend):
        h2 = lrow[b2] - frow[b2] + 1
        src = c + (bcoef[b2] - rowbase)
        dst = L + coefind[f] + (frow[b] - f0) + (frow[b2] - f0) * sf
        for i in range(h2):
            for j in range(ncols):
                dst[j + i * sf] -= src[i + j * ldc]


cdef struct Entries:
    # A's entries bound for one factor array (AssemblyMap): cblk k's are
    # ptr[k]:ptr[k + 1], added at val's positions (int32 or int64, the other NULL).
    const void* val
    const int32_t* pos32
    const int64_t* pos64
    const idx_t* ptr


cdef struct Blocks:
    # The block structure (PanelLayout.block_args) as raw pointers.
    const idx_t* fcol
    const idx_t* bloknum
    const idx_t* coefind
    const idx_t* stride
    const idx_t* frow
    const idx_t* lrow
    const idx_t* fcblk
    const idx_t* bcoef


cdef Blocks make_blocks(const idx_t[::1] fcol, const idx_t[::1] bloknum,
                        const idx_t[::1] coefind, const idx_t[::1] stride,
                        const idx_t[::1] frow, const idx_t[::1] lrow, const idx_t[::1] fcblk,
                        const idx_t[::1] bcoef) except *:
    cdef Blocks B
    if fcol.shape[0] < 2 or bloknum.shape[0] != fcol.shape[0] \
            or coefind.shape[0] < fcol.shape[0] - 1 or stride.shape[0] < fcol.shape[0] - 1:
        raise ValueError("the block structure arrays do not match")
    B.fcol = &fcol[0]
    B.bloknum = &bloknum[0]
    B.coefind = &coefind[0]
    B.stride = &stride[0]
    B.frow = &frow[0] if frow.shape[0] else NULL
    B.lrow = &lrow[0] if lrow.shape[0] else NULL
    B.fcblk = &fcblk[0] if fcblk.shape[0] else NULL
    B.bcoef = &bcoef[0] if bcoef.shape[0] else NULL
    return B


cdef struct Panels:
    # The block structure and the factor arrays, as raw pointers.
    Blocks B
    int kind
    bint conj  # transposes are conjugate (complex LLᴴ, LDLᴴ)
    double tol  # static pivoting threshold
    void* L
    void* U  # LU only, else NULL
    void* dsub  # LDLᵀ only, else NULL
    idx_t* lperm
    signed char* pivtype
    signed char* pert
    Entries al  # A's entries of L's panels
    Entries au  # and of U's (LU)


cdef Entries make_entries(scalar[::1] val, cnp.ndarray pos, const idx_t[::1] ptr, idx_t ncblk,
                          idx_t size) except *:
    """Check one part of an AssemblyMap against the panels (``size`` entries) it fills."""
    cdef Entries E
    cdef idx_t nval = val.shape[0]
    if pos.dtype != np.int32 and pos.dtype != np.int64 or not pos.flags.c_contiguous \
            or pos.shape[0] != nval or ptr.shape[0] != ncblk + 1 or ptr[0] != 0 \
            or ptr[ncblk] != nval or (nval and (pos.min() < 0 or pos.max() >= size)):
        raise ValueError("assembly map does not fit the panels")
    E.val = &val[0] if nval else NULL
    E.pos32 = <const int32_t*>cnp.PyArray_DATA(pos) if pos.dtype == np.int32 else NULL
    E.pos64 = <const int64_t*>cnp.PyArray_DATA(pos) if pos.dtype == np.int64 else NULL
    E.ptr = &ptr[0]
    return E


cdef inline void add_entries(const Entries* E, scalar* a, idx_t k) noexcept nogil:
    """Add cblk k's entries of A into its panel in ``a``."""
    cdef const scalar* val = <const scalar*>E.val
    cdef idx_t i
    if E.pos32 != NULL:
        for i in range(E.ptr[k], E.ptr[k + 1]):
            a[E.pos32[i]] += val[i]
    else:
        for i in range(E.ptr[k], E.ptr[k + 1]):
            a[E.pos64[i]] += val[i]


cdef Panels make_panels(int kind, bint conj, double tol, scalar[::1] L, scalar[::1] U,
                        scalar[::1] val_l, cnp.ndarray pos_l, const idx_t[::1] ptr_l,
                        scalar[::1] val_u, cnp.ndarray pos_u, const idx_t[::1] ptr_u,
                        const idx_t[::1] fcol, const idx_t[::1] bloknum,
                        const idx_t[::1] coefind, const idx_t[::1] stride,
                        const idx_t[::1] frow, const idx_t[::1] lrow, const idx_t[::1] fcblk,
                        const idx_t[::1] bcoef, idx_t[::1] lperm, signed char[::1] pivtype,
                        scalar[::1] dsub, signed char[::1] pert):
    cdef Panels P
    P.kind = kind
    P.conj = conj
    P.tol = tol
    P.B = make_blocks(fcol, bloknum, coefind, stride, frow, lrow, fcblk, bcoef)
    P.L = &L[0] if L.shape[0] else NULL
    P.U = &U[0] if U.shape[0] else NULL
    P.dsub = &dsub[0] if dsub.shape[0] else NULL
    P.lperm = &lperm[0] if lperm.shape[0] else NULL
    P.pivtype = &pivtype[0] if pivtype.shape[0] else NULL
    P.pert = &pert[0] if pert.shape[0] else NULL
    P.al = make_entries(val_l, pos_l, ptr_l, fcol.shape[0] - 1, L.shape[0])
    P.au = make_entries(val_u, pos_u, ptr_u, fcol.shape[0] - 1, U.shape[0])
    return P


cdef enum:
    # Consecutive bloks of a cblk are updated by one gemm until they span this many
    # rows: the gemm packs the panel below them once instead of once per blok,
    # which dominated on the many thin bloks of nested-dissection separators.
    GROUP_ROWS = 64
    # A lone blok's update goes straight into the target panel for each run of at
    # least this many rows contiguous there; shorter runs are scattered from a product.
    DIRECT_ROWS = 64


cdef inline idx_t group_end(const Panels* P, idx_t k, idx_t b) noexcept nogil:
    """One past the last blok of the group of cblk k's bloks that starts at blok b.

    A group takes consecutive bloks until they span ``GROUP_ROWS`` rows; a blok
    that tall by itself stands alone (it may be accumulated without a scatter)."""
    cdef idx_t e = b + 1, end = P.B.bloknum[k + 1]
    cdef idx_t rows = P.B.lrow[b] - P.B.frow[b] + 1
    while e < end and rows < GROUP_ROWS and P.B.lrow[e] - P.B.frow[e] + 1 < GROUP_ROWS:
        rows += P.B.lrow[e] - P.B.frow[e] + 1
        e += 1
    return e


cdef inline int group_rows(const Panels* P, idx_t b, idx_t e) noexcept nogil:
    """Rows spanned by bloks b..e-1 of one cblk (they are stacked in its panel)."""
    return P.B.bcoef[e - 1] + P.B.lrow[e - 1] - P.B.frow[e - 1] + 1 - P.B.bcoef[b]


cdef void workspace_sizes(const Panels* P, idx_t k0, idx_t k1, size_t itemsize,
                          idx_t* sizes) noexcept nogil:
    """Scalars needed by one worker for cblks k0..k1-1: update products (``sizes[0]``),
    LDLᵀ's kept W = A21 L11⁻ᵀ (``sizes[1]``) and a scratch (``sizes[2]``) that holds
    Bunch-Kaufman's 2w + 2 scalars or LU's pivots while a panel is factored, then the
    scatters' row runs (2 indices per blok)."""
    cdef idx_t k, b, e, w, smax = 1, rowsmax = 1, wmax = 0, nbmax = 0
    for k in range(k0, k1):
        w = P.B.fcol[k + 1] - P.B.fcol[k]
        wmax = max(wmax, w)
        nbmax = max(nbmax, P.B.bloknum[k + 1] - P.B.bloknum[k])
        rowsmax = max(rowsmax, (P.B.stride[k] - w) * w)
        b = P.B.bloknum[k] + 1
        while b < P.B.bloknum[k + 1]:
            e = group_end(P, k, b)
            smax = max(smax, (P.B.stride[k] - P.B.bcoef[b]) * group_rows(P, b, e))
            b = e
    # LU computes both of an update's products before scattering them.
    sizes[0] = 2 * smax if P.kind == LU else smax
    sizes[1] = rowsmax
    sizes[2] = max(2 * wmax + 2, (2 * nbmax * sizeof(idx_t)) // itemsize + 1)


cdef idx_t factor_panel(const Panels* P, idx_t k, scalar* wbuf, scalar* tmp,
                        idx_t* count) noexcept nogil:
    """Factor cblk k's diagonal block, then solve its panel below it.

    LDLᵀ leaves W = A21 L11⁻ᵀ in ``wbuf`` for the updates; LU records its row
    interchanges in ``lperm`` (each cblk owns its segment: threads never share one).
    Perturbed pivots are
    added to ``count``. Returns the first column (pivot order) whose LLᵀ pivot is
    not positive, else -1.
    """
    cdef scalar one = 1
    cdef char tr = c'C' if P.conj else c'T'
    cdef idx_t fc = P.B.fcol[k]
    cdef int w = P.B.fcol[k + 1] - fc, m = P.B.stride[k], info, h, M
    cdef scalar* base = <scalar*>P.L + P.B.coefind[k]
    cdef scalar* ubase
    cdef scalar* dsub = <scalar*>P.dsub
    cdef int* ipiv
    cdef idx_t e
    # All updates to k are in: add A, the panel is complete.
    add_entries(&P.al, <scalar*>P.L, k)
    if P.U != NULL:
        add_entries(&P.au, <scalar*>P.U, k)
    if P.kind == LLT:
        info = potrf(w, base, m)
        if info > 0:
            return fc + info - 1
        trsm(c'R', c'L', tr, c'N', m - w, w, one, base, m, base + w, m)
    elif P.kind == LU:
        ubase = <scalar*>P.U + P.B.coefind[k]
        ipiv = <int*>tmp  # Bunch-Kaufman's scratch, free for LU: 2w + 2 scalars >= w ints
        count[0] += lu_local(w, w, base, m, P.tol, &P.pert[fc], ipiv)
        # Rows interchanged in the block are interchanged in U's part of the panel
        # (its columns) and recorded in lperm for the solves.
        for h in range(w):
            if ipiv[h] != h:
                e = P.lperm[fc + h]
                P.lperm[fc + h] = P.lperm[fc + ipiv[h]]
                P.lperm[fc + ipiv[h]] = e
                for M in range(m):
                    swap(&ubase[M + h * m], &ubase[M + ipiv[h] * m])
        trsm(c'R', c'U', c'N', c'N', m - w, w, one, base, m, base + w, m)
        trsm(c'R', c'L', c'T', c'U', m - w, w, one, base, m, ubase + w, m)
    else:
        count[0] += ldlt_bunch_kaufman(w, m, base, P.conj, P.tol, &P.lperm[fc],
                                       &P.pivtype[fc], &P.pert[fc], &dsub[fc], tmp)
        if m > w:
            # W = A21 L11⁻ᵀ is kept for the updates; the panel becomes L21 = W D⁻¹.
            trsm(c'R', c'L', tr, c'U', m - w, w, one, base, m, base + w, m)
            for h in range(w):
                for M in range(m - w):
                    wbuf[M + h * (m - w)] = base[w + M + h * m]
            apply_dinv_right(w, m - w, base, m, base + w, m, P.conj, &P.pivtype[fc],
                             &dsub[fc])
    return -1


cdef void update_rows(scalar* left, int lda, scalar* right, int ldr, int h, int w, char tr,
                      scalar* dst, idx_t ldd, const idx_t* runs, idx_t nrun, scalar* work,
                      bint symmetric_top) noexcept nogil:
    """``dst[rows, :h] -= left @ right[:h]ᵀ`` (``tr``: transpose or conjugate transpose;
    w columns each), where ``left``'s rows are the ``runs`` of :func:`row_runs`, stacked,
    and ``rows`` their rows in ``dst``. A run of at least ``DIRECT_ROWS`` rows is
    accumulated straight into ``dst`` by gemm; the shorter runs between two such are
    computed together into ``work`` and scattered. ``symmetric_top``: the first run starts
    with ``right``'s own rows, a symmetric h x h of which only the lower triangle is
    wanted (LLᵀ's diagonal block, by syrk)."""
    cdef scalar one = 1, mone = -1, zero = 0
    cdef idx_t r, row, ht, src = 0, pending = -1, pending_src = 0
    cdef int rows
    for r in range(nrun + 1):
        ht = runs[2 * r + 1] if r < nrun else 0
        if r < nrun and ht < DIRECT_ROWS and not (r == 0 and symmetric_top):
            if pending < 0:
                pending, pending_src = r, src
            src += ht
            continue
        if pending >= 0:
            rows = src - pending_src
            gemm(c'N', tr, rows, h, w, one, left + pending_src, lda, right, ldr, zero, work,
                 rows)
            subtract_runs(work, rows, h, dst, ldd, runs + 2 * pending, r - pending)
            pending = -1
        if r == nrun:
            break
        row = runs[2 * r]
        if r == 0 and symmetric_top:
            rank_k_lower(h, w, -1.0, right, ldr, 1.0, dst + row, ldd)
            gemm(c'N', tr, ht - h, h, w, mone, left + h, lda, right, ldr, one, dst + row + h,
                 ldd)
        else:
            gemm(c'N', tr, ht, h, w, mone, left + src, lda, right, ldr, one, dst + row, ldd)
        src += ht


cdef void update_single(const Panels* P, idx_t k, idx_t b, scalar* work, scalar* wbuf,
                        idx_t* runs) noexcept nogil:
    """Blok b's update of cblk k when b is a group by itself, by :func:`update_rows` (no
    product of the whole panel below b, and mostly no scatter)."""
    cdef scalar one = 1, mone = -1
    cdef char tr = c'C' if P.conj else c'T'
    cdef idx_t f = P.B.fcblk[b], sf = P.B.stride[f], cb = P.B.bcoef[b], e, end = P.B.bloknum[k + 1]
    cdef idx_t f0 = P.B.fcol[f], nrun
    cdef int w = P.B.fcol[k + 1] - P.B.fcol[k], m = P.B.stride[k], h = P.B.lrow[b] - P.B.frow[b] + 1
    cdef scalar* base = <scalar*>P.L + P.B.coefind[k]
    cdef scalar* ubase
    # b's rows are columns of f: their part of f's panel(s).
    cdef idx_t dst = P.B.coefind[f] + (P.B.frow[b] - f0) * sf
    nrun = row_runs(k, b, f, P.B.bloknum, P.B.frow, P.B.lrow, P.B.bcoef, runs)
    if P.kind == LLT:
        update_rows(base + cb, m, base + cb, m, h, w, tr, <scalar*>P.L + dst, sf, runs, nrun,
                    work, True)
    elif P.kind != LU:
        # LDLᵀ's left operand is W = A21 L11⁻ᵀ, kept from panel row w on.
        update_rows(wbuf + (cb - w), m - w, base + cb, m, h, w, tr, <scalar*>P.L + dst, sf,
                    runs, nrun, work, False)
    else:
        ubase = <scalar*>P.U + P.B.coefind[k]
        update_rows(base + cb, m, ubase + cb, m, h, w, c'T', <scalar*>P.L + dst, sf, runs,
                    nrun, work, False)
        # The Uᵀ rows of the later bloks facing f land in f's diagonal block above its
        # diagonal, which L's panel stores transposed.
        e = b + 1
        while e < end and P.B.fcblk[e] == f:
            gemm(c'N', c'T', h, P.B.lrow[e] - P.B.frow[e] + 1, w, mone, base + cb, m,
                 ubase + P.B.bcoef[e], m, one,
                 <scalar*>P.L + P.B.coefind[f] + (P.B.frow[b] - f0) + (P.B.frow[e] - f0) * sf, sf)
            e += 1
        if e < end:
            nrun = row_runs(k, e, f, P.B.bloknum, P.B.frow, P.B.lrow, P.B.bcoef, runs)
            update_rows(ubase + P.B.bcoef[e], m, base + cb, m, h, w, c'T', <scalar*>P.U + dst,
                        sf, runs, nrun, work, False)


cdef void update_products(const Panels* P, idx_t k, idx_t b, idx_t e, scalar* wbuf,
                          scalar* work) noexcept nogil:
    """The update of cblk k's bloks b..e-1 into ``work`` (M x H, M the rows from b down,
    H those of the group): the rows from b down times the group's rows; LU also the
    Uᵀ products, at ``work + M H``."""
    cdef scalar one = 1, zero = 0
    cdef char tr = c'C' if P.conj else c'T'
    cdef int w = P.B.fcol[k + 1] - P.B.fcol[k], m = P.B.stride[k]
    cdef idx_t cb = P.B.bcoef[b]
    cdef int H = group_rows(P, b, e), M = m - cb
    cdef scalar* base = <scalar*>P.L + P.B.coefind[k]
    cdef scalar* ubase
    cdef int i, j
    if P.kind == LLT:
        # The group's own H x H is symmetric: its lower triangle, the upper zeroed
        # (scatters subtract it into the unused upper part of diagonal blocks).
        rank_k_lower(H, w, 1.0, base + cb, m, 0.0, work, M)
        for j in range(1, H):
            for i in range(j):
                work[i + j * M] = 0
        gemm(c'N', tr, M - H, H, w, one, base + cb + H, m, base + cb, m, zero, work + H, M)
    elif P.kind == LU:
        ubase = <scalar*>P.U + P.B.coefind[k]
        gemm(c'N', c'T', M, H, w, one, base + cb, m, ubase + cb, m, zero, work, M)
        gemm(c'N', c'T', M, H, w, one, ubase + cb, m, base + cb, m, zero, work + M * H, M)
    else:
        gemm(c'N', tr, M, H, w, one, wbuf + (cb - w), m - w, base + cb, m, zero, work, M)


cdef void update_scatter(const Panels* P, idx_t k, idx_t b, idx_t g, int H, scalar* work,
                         idx_t* runs) noexcept nogil:
    """Subtract blok b's columns of the products of :func:`update_products` (group of H
    rows starting at blok g) from the panel(s) of the cblk blok b faces. ``runs``:
    scratch for :func:`scatter_sub`."""
    cdef idx_t f = P.B.fcblk[b], cg = P.B.bcoef[g], e
    cdef int h = P.B.lrow[b] - P.B.frow[b] + 1, M = P.B.stride[k] - cg
    cdef scalar* c = work + (P.B.bcoef[b] - cg) * M
    scatter_sub(c, M, cg, h, k, b, b, f, <scalar*>P.L, P.B.fcol, P.B.bloknum, P.B.coefind,
                P.B.stride, P.B.frow, P.B.lrow, P.B.bcoef, runs)
    if P.kind == LU:
        # Later bloks facing f too land in f's diagonal block, above its diagonal.
        c += M * H
        e = b + 1
        while e < P.B.bloknum[k + 1] and P.B.fcblk[e] == f:
            e += 1
        scatter_sub_transposed(c, M, cg, h, b + 1, e, b, f, <scalar*>P.L, P.B.fcol, P.B.coefind,
                               P.B.stride, P.B.frow, P.B.lrow, P.B.bcoef)
        scatter_sub(c, M, cg, h, k, e, b, f, <scalar*>P.U, P.B.fcol, P.B.bloknum, P.B.coefind,
                    P.B.stride, P.B.frow, P.B.lrow, P.B.bcoef, runs)


def factorize_cblks(int kind, scalar[::1] L, scalar[::1] U,
                    scalar[::1] val_l, cnp.ndarray pos_l, const idx_t[::1] ptr_l,
                    scalar[::1] val_u, cnp.ndarray pos_u, const idx_t[::1] ptr_u,
                    const idx_t[::1] fcol, const idx_t[::1] bloknum, const idx_t[::1] coefind,
                    const idx_t[::1] stride, const idx_t[::1] frow, const idx_t[::1] lrow,
                    const idx_t[::1] fcblk, const idx_t[::1] bcoef, double tol,
                    idx_t[::1] lperm, signed char[::1] pivtype, scalar[::1] dsub,
                    signed char[::1] pert, progress=None):
    """Factor all cblks in place, in order, on the calling thread (right-looking: each
    cblk updates the later ones it faces), GIL released. The reference for
    :func:`factorize_parallel`, with the same progress reports and interruption.

    ``L`` and ``U`` (LU, else empty) come zeroed; each cblk's panel gets A's entries
    ``val_*`` at the flat positions ``pos_*`` (those of cblk k are ``ptr_*[k]:ptr_*[k+1]``,
    see AssemblyMap) just before it is factored. One call for the whole
    factorization: its work buffers are allocated (and their pages faulted in) once.

    Returns
    -------
    perturbed : int
        Pivots replaced by static pivoting.
    failed_column : int
        For ``KIND_LLT``, the first column (pivot order) whose pivot is not
        positive, else -1; the factorization stops there.
    """
    cdef bint conj = (kind == LLT or kind == LDLH) and (scalar is cfloat or scalar is cdouble)
    cdef Panels P = make_panels(kind, conj, tol, L, U, val_l, pos_l, ptr_l, val_u, pos_u, ptr_u,
                                fcol, bloknum, coefind, stride, frow, lrow, fcblk, bcoef,
                                lperm, pivtype, dsub, pert)
    cdef idx_t ncblk = fcol.shape[0] - 1, k, count = 0, failed = -1
    cdef idx_t sizes[3]
    cdef double done = 0, total = 0
    cdef list errors = []
    cdef Reporter R = new_reporter(progress, errors)
    cdef scalar* work
    cdef scalar* wbuf
    cdef scalar* tmp
    for k in range(ncblk):
        total += cblk_weight(&P, k)
    workspace_sizes(&P, 0, ncblk, sizeof(scalar), sizes)
    work = <scalar*>malloc(sizes[0] * sizeof(scalar))
    wbuf = <scalar*>malloc(sizes[1] * sizeof(scalar))
    tmp = <scalar*>malloc(sizes[2] * sizeof(scalar))
    if work == NULL or wbuf == NULL or tmp == NULL:
        free(work)
        free(wbuf)
        free(tmp)
        raise MemoryError("cannot allocate the factorization work buffers")
    with nogil:
        for k in range(ncblk):
            failed = factor_panel(&P, k, wbuf, tmp, &count)
            if failed >= 0:
                break
            apply_updates(NULL, &P, k, work, wbuf, tmp)
            done += cblk_weight(&P, k)
            if maybe_report(&R, done / total) != 0:
                break
    free(work)
    free(wbuf)
    free(tmp)
    if errors:
        raise errors[0]
    return count, failed


# ----------------------------------------------------------------------------- progress

cdef struct Reporter:
    PyObject* progress  # callable(fraction), or NULL
    PyObject* errors  # list collecting what a report raised
    double last  # wall time of the last report
    double step  # next fraction (a multiple of 2%) at which progress is called


cdef Reporter new_reporter(progress, list errors):
    cdef Reporter R
    R.progress = NULL if progress is None else <PyObject*>progress
    R.errors = <PyObject*>errors
    R.last = omp_get_wtime()
    R.step = 0.02
    return R


cdef inline double cblk_weight(const Panels* P, idx_t k) noexcept nogil:
    """Estimated flops of cblk k's panel and updates (width x rows²), for progress."""
    return (<double>(P.B.fcol[k + 1] - P.B.fcol[k])) * P.B.stride[k] * P.B.stride[k]


cdef int report(PyObject* progress, PyObject* errors, double fraction) noexcept with gil:
    """On the calling thread: let Python handle signals (Ctrl-C) and call ``progress``
    (unless NULL). An exception is appended to the list ``errors``; returns -1 then."""
    try:
        PyErr_CheckSignals()
        if progress != NULL:
            (<object>progress)(fraction)
    except BaseException as e:
        (<list>errors).append(e)
        return -1
    return 0


cdef int maybe_report(Reporter* R, double fraction) noexcept nogil:
    """Report (see :func:`report`) when 0.1 s passed since the last report, or when
    ``fraction`` reached the next 2% step and there is a progress callable.
    Returns -1 when the report raised: the caller stops."""
    cdef double now = omp_get_wtime()
    if now - R.last < 0.1 and (fraction < R.step or R.progress == NULL):
        return 0
    R.last = now
    while R.step <= fraction:
        R.step += 0.02
    return report(R.progress, R.errors, fraction)


# ----------------------------------------------------------------------------- threads
#
# A dynamic scheduler over cblks. npend[f] counts the updates (off-diagonal bloks
# of earlier cblks facing f) that f still waits for; a cblk with none left is
# ready. A worker pops the lowest ready cblk, factors its panel, then for each
# off-diagonal blok, nearest target first, computes the update into its own
# buffer and subtracts it under the target's lock (or, when the target's lock
# is free and its rows are contiguous, accumulates the gemm straight into it),
# decrements the target's count and, at zero, makes the target ready. Only the
# sum order of a panel's updates differs from the sequential run.

cdef struct Scheduler:
    omp_lock_t* locks  # one per cblk: its panel(s) and npend
    idx_t* npend
    omp_lock_t qlock  # guards everything below
    idx_t* heap  # ready cblks, a min-heap on the index
    idx_t nheap
    idx_t active  # cblks popped and not finished
    idx_t failcblk  # lowest cblk whose LLᵀ pivot failed; ncblk while none
    idx_t failed  # its failing column
    idx_t count  # perturbed pivots
    int abort  # the progress callback raised (or Ctrl-C): stop
    double* weight  # estimated flops per cblk, for progress
    double done
    double total


cdef void heap_push(idx_t* heap, idx_t* n, idx_t x) noexcept nogil:
    cdef idx_t i = n[0], p
    n[0] += 1
    while i > 0:
        p = (i - 1) >> 1
        if heap[p] <= x:
            break
        heap[i] = heap[p]
        i = p
    heap[i] = x


cdef idx_t heap_pop(idx_t* heap, idx_t* n) noexcept nogil:
    cdef idx_t top = heap[0], x, i = 0, c
    n[0] -= 1
    x = heap[n[0]]
    while True:
        c = 2 * i + 1
        if c >= n[0]:
            break
        if c + 1 < n[0] and heap[c + 1] < heap[c]:
            c += 1
        if x <= heap[c]:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = x
    return top


cdef void make_ready(Scheduler* S, idx_t f) noexcept nogil:
    omp_set_lock(&S.qlock)
    heap_push(S.heap, &S.nheap, f)
    omp_unset_lock(&S.qlock)


cdef void apply_updates(Scheduler* S, const Panels* P, idx_t k, scalar* work,
                        scalar* wbuf, scalar* tmp) noexcept nogil:
    """Apply cblk k's updates to the cblks it faces, a group of bloks at a time.

    With a scheduler ``S`` (threads), each target is changed under its lock and
    made ready once its last update is in; a lone blok is applied run by run
    straight into its target (:func:`update_single`) when that lock is free, else
    through a work product computed before taking the lock. Without
    one (NULL: a single thread), the same updates run in the same order. ``tmp``
    (free once the panel is factored) holds the scatters' row runs."""
    cdef idx_t b, g, e, f, end = P.B.bloknum[k + 1]
    cdef int H
    g = P.B.bloknum[k] + 1
    while g < end:
        if S != NULL and (S.abort or S.failcblk < k):
            return
        e = group_end(P, k, g)
        if e == g + 1:
            f = P.B.fcblk[g]
            if S == NULL or omp_test_lock(&S.locks[f]):
                update_single(P, k, g, work, wbuf, <idx_t*>tmp)
                if S != NULL:
                    release_target(S, f)
                g = e
                continue
        H = group_rows(P, g, e)
        update_products(P, k, g, e, wbuf, work)
        for b in range(g, e):
            f = P.B.fcblk[b]
            if S != NULL:
                omp_set_lock(&S.locks[f])
            update_scatter(P, k, b, g, H, work, <idx_t*>tmp)
            if S != NULL:
                release_target(S, f)
        g = e


cdef void release_target(Scheduler* S, idx_t f) noexcept nogil:
    """One update of cblk f is in (its lock held by the caller): count it, unlock, and
    make f ready when it was the last."""
    cdef bint ready
    S.npend[f] -= 1
    ready = S.npend[f] == 0
    omp_unset_lock(&S.locks[f])
    if ready:
        make_ready(S, f)


cdef void run_cblk(Scheduler* S, const Panels* P, idx_t k, scalar* work, scalar* wbuf,
                   scalar* tmp, idx_t* count) noexcept nogil:
    """Factor cblk k and apply its updates to the cblks it faces (one task)."""
    cdef idx_t failed
    failed = factor_panel(P, k, wbuf, tmp, count)
    if failed >= 0:
        # Cblks after k are skipped; those before it finish, so the lowest failing
        # cblk, hence the reported column, is the sequential run's.
        omp_set_lock(&S.qlock)
        if k < S.failcblk:
            S.failcblk = k
            S.failed = failed
        omp_unset_lock(&S.qlock)
        return
    apply_updates(S, P, k, work, wbuf, tmp)


cdef void worker(Scheduler* S, const Panels* P, int tid, scalar* work, scalar* wbuf,
                 scalar* tmp, Reporter* R) noexcept nogil:
    """Run tasks until none is left or can become ready. Thread 0 (the caller's) also
    reports progress every 2% of the flops and checks for signals every 0.1 s."""
    cdef idx_t k, count = 0
    cdef bint skip, idle
    while True:
        # Idle workers look before they lock, so that they leave the queue to the others.
        idle = S.nheap == 0 and S.active > 0 and not S.abort
        if not idle:
            omp_set_lock(&S.qlock)
            if S.abort or (S.nheap == 0 and S.active == 0):
                omp_unset_lock(&S.qlock)
                break
            idle = S.nheap == 0
            if not idle:
                k = heap_pop(S.heap, &S.nheap)
                S.active += 1
                skip = k > S.failcblk
            omp_unset_lock(&S.qlock)
        if not idle:
            if not skip:
                run_cblk(S, P, k, work, wbuf, tmp, &count)
            omp_set_lock(&S.qlock)
            S.active -= 1
            S.done += S.weight[k]
            omp_unset_lock(&S.qlock)
        if tid == 0 and maybe_report(R, S.done / S.total) != 0:
            omp_set_lock(&S.qlock)
            S.abort = 1
            omp_unset_lock(&S.qlock)
        if idle:
            sched_yield()
    omp_set_lock(&S.qlock)
    S.count += count
    omp_unset_lock(&S.qlock)


def factorize_parallel(int kind, scalar[::1] L, scalar[::1] U,
                       scalar[::1] val_l, cnp.ndarray pos_l, const idx_t[::1] ptr_l,
                       scalar[::1] val_u, cnp.ndarray pos_u, const idx_t[::1] ptr_u,
                       const idx_t[::1] fcol, const idx_t[::1] bloknum,
                       const idx_t[::1] coefind, const idx_t[::1] stride,
                       const idx_t[::1] frow, const idx_t[::1] lrow, const idx_t[::1] fcblk,
                       const idx_t[::1] bcoef, double tol,
                       idx_t[::1] lperm, signed char[::1] pivtype, scalar[::1] dsub,
                       signed char[::1] pert, int nthreads, progress=None):
    """Factor all cblks in place on ``nthreads`` OpenMP threads (GIL released).

    Same arguments and results as :func:`factorize_cblks` over all cblks; the
    factors agree with it to rounding (updates are summed in another order).
    ``progress(fraction)`` is called from the calling thread every 2% of the
    estimated flops. BLAS should be limited to one thread by the caller.
    An exception raised by ``progress`` (or a KeyboardInterrupt) stops the
    workers and is raised again here, the factors left incomplete.
    """
    cdef bint conj = (kind == LLT or kind == LDLH) and (scalar is cfloat or scalar is cdouble)
    cdef Panels P = make_panels(kind, conj, tol, L, U, val_l, pos_l, ptr_l, val_u, pos_u, ptr_u,
                                fcol, bloknum, coefind, stride, frow, lrow, fcblk, bcoef,
                                lperm, pivtype, dsub, pert)
    cdef idx_t ncblk = fcol.shape[0] - 1, k, b, per
    cdef idx_t sizes[3]
    cdef int tid, nt = max(1, nthreads)
    cdef Scheduler S
    cdef scalar* buffers
    cdef scalar* mine
    cdef list errors = []
    cdef Reporter R = new_reporter(progress, errors)
    workspace_sizes(&P, 0, ncblk, sizeof(scalar), sizes)
    per = sizes[0] + sizes[1] + sizes[2]
    buffers = <scalar*>malloc(nt * per * sizeof(scalar))
    S.locks = <omp_lock_t*>malloc(max(ncblk, 1) * sizeof(omp_lock_t))
    S.npend = <idx_t*>calloc(max(ncblk, 1), sizeof(idx_t))
    S.heap = <idx_t*>malloc(max(ncblk, 1) * sizeof(idx_t))
    S.weight = <double*>malloc(max(ncblk, 1) * sizeof(double))
    if buffers == NULL or S.locks == NULL or S.npend == NULL or S.heap == NULL \
            or S.weight == NULL:
        free(buffers)
        free(S.locks)
        free(S.npend)
        free(S.heap)
        free(S.weight)
        raise MemoryError("cannot allocate the factorization work buffers")
    S.nheap = 0
    S.active = 0
    S.failcblk = ncblk
    S.failed = -1
    S.count = 0
    S.abort = 0
    S.done = 0
    S.total = 0
    for k in range(ncblk):
        omp_init_lock(&S.locks[k])
        for b in range(bloknum[k] + 1, bloknum[k + 1]):
            S.npend[fcblk[b]] += 1
        S.weight[k] = cblk_weight(&P, k)
        S.total += S.weight[k]
    for k in range(ncblk):
        if S.npend[k] == 0:
            heap_push(S.heap, &S.nheap, k)
    omp_init_lock(&S.qlock)
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        mine = buffers + tid * per
        worker(&S, &P, tid, mine, mine + sizes[0], mine + sizes[0] + sizes[1], &R)
    omp_destroy_lock(&S.qlock)
    for k in range(ncblk):
        omp_destroy_lock(&S.locks[k])
    free(buffers)
    free(S.locks)
    free(S.npend)
    free(S.heap)
    free(S.weight)
    if errors:
        raise errors[0]
    return S.count, S.failed if S.failcblk < ncblk else -1


# ----------------------------------------------------------------------------- solves

# Solves work on X of shape (n, nrhs) in row-major order: the right-hand sides of one
# unknown are contiguous, so the rows of a blok are one run to scatter or gather. The
# BLAS see the nrhs x n column-major transpose Y = Xᵀ: op(A)⁻¹ X becomes Y op(A)⁻ᵀ
# (trsm from the right), op(A) X becomes Y op(A)ᵀ. With one right-hand side both
# layouts are the same vector, and gemv/trsv read each panel once.

# How far ahead of the backward solve, in bytes, its panels are prefetched.
cdef enum:
    PREFETCH_AHEAD = 8192


cdef inline idx_t prefetch_below(const scalar* base, idx_t low, idx_t target) noexcept nogil:
    """Prefetch base[target:low] a cache line at a time, downwards; returns the new low."""
    cdef idx_t line = 64 // sizeof(scalar)
    while low > target and low > 0:
        low -= line
        __builtin_prefetch(base + low, 0, 3)
    return low


cdef inline char transposed(char trans) noexcept nogil:
    """op(A)ᵀ = op'(A): 'N' <-> 'T' (a conjugate op is turned into 'T' beforehand)."""
    return c'T' if trans == c'N' else c'N'


cdef inline void conjugate(scalar* x, idx_t size) noexcept nogil:
    cdef idx_t i
    if scalar is cfloat or scalar is cdouble:
        for i in range(size):
            x[i] = x[i].conjugate()


cdef inline void permute_rows(scalar* X, int nrhs, idx_t fc, int w, const idx_t* lperm,
                              bint inverse, scalar* tmp) noexcept nogil:
    """Rows fc..fc+w of X from rows ``lperm[fc..fc+w]`` (or back to them: ``inverse``)."""
    cdef idx_t i, r
    if not inverse:
        for i in range(w):
            for r in range(nrhs):
                tmp[i * nrhs + r] = X[lperm[fc + i] * nrhs + r]
        for i in range(w * nrhs):
            X[fc * nrhs + i] = tmp[i]
    else:
        for i in range(w * nrhs):
            tmp[i] = X[fc * nrhs + i]
        for i in range(w):
            for r in range(nrhs):
                X[lperm[fc + i] * nrhs + r] = tmp[i * nrhs + r]


# With several right-hand sides, a cblk at most this many columns wide is solved by the
# loops of rows.h on X's rows, in place (most cblks of a nested-dissection tree are that
# narrow); wider ones by trsm and gemm on a work product. 16 right-hand sides, whole
# solves against the BLAS for all widths: 40³ 0.93-0.96 of the time, 60³ 0.95-0.98,
# for limits 8 and 12; 16 already gained less on 60³.
cdef enum:
    SMALL_MULTI_WIDTH = 12


cdef inline bint rows_direct(int w, int nrhs) noexcept nogil:
    """Whether a cblk w columns wide is solved by rows.h's loops (see SMALL_MULTI_WIDTH)."""
    return nrhs > 1 and w <= SMALL_MULTI_WIDTH


cdef extern from "rows.h" nogil:
    void rows_gemm_n_s(int h, int w, int nrhs, const float* a, int lda, const float* x,
                       float* dst)
    void rows_gemm_n_d(int h, int w, int nrhs, const double* a, int lda, const double* x,
                       double* dst)
    void rows_gemm_n_c(int h, int w, int nrhs, const cfloat* a, int lda, const cfloat* x,
                       cfloat* dst)
    void rows_gemm_n_z(int h, int w, int nrhs, const cdouble* a, int lda, const cdouble* x,
                       cdouble* dst)
    void rows_gemm_t_s(int h, int w, int nrhs, const float* a, int lda, const float* src,
                       float* x)
    void rows_gemm_t_d(int h, int w, int nrhs, const double* a, int lda, const double* src,
                       double* x)
    void rows_gemm_t_c(int h, int w, int nrhs, const cfloat* a, int lda, const cfloat* src,
                       cfloat* x)
    void rows_gemm_t_z(int h, int w, int nrhs, const cdouble* a, int lda, const cdouble* src,
                       cdouble* x)
    void rows_trsm_s(char uplo, char ta, char diag, int w, int nrhs, const float* a, int lda,
                     float* x)
    void rows_trsm_d(char uplo, char ta, char diag, int w, int nrhs, const double* a, int lda,
                     double* x)
    void rows_trsm_c(char uplo, char ta, char diag, int w, int nrhs, const cfloat* a, int lda,
                     cfloat* x)
    void rows_trsm_z(char uplo, char ta, char diag, int w, int nrhs, const cdouble* a, int lda,
                     cdouble* x)
    void pastixpy_detect_cpu()
    int pastixpy_panel_tdot_d(int h, int w, int nrhs, const double* a, int lda,
                              const double* src, double* x)


pastixpy_detect_cpu()


cdef inline void rows_gemm_n(int h, int w, int nrhs, const scalar* a, int lda, const scalar* x,
                             scalar* dst) noexcept nogil:
    """dst[i, :] -= Σ_j a(i, j) x[j, :] (i < h, j < w; rows of nrhs, dst's stacked)."""
    if scalar is float:
        rows_gemm_n_s(h, w, nrhs, a, lda, x, dst)
    elif scalar is double:
        rows_gemm_n_d(h, w, nrhs, a, lda, x, dst)
    elif scalar is cfloat:
        rows_gemm_n_c(h, w, nrhs, a, lda, x, dst)
    else:
        rows_gemm_n_z(h, w, nrhs, a, lda, x, dst)


cdef inline void rows_gemm_t(int h, int w, int nrhs, const scalar* a, int lda, const scalar* src,
                             scalar* x) noexcept nogil:
    """x[j, :] -= Σ_i a(i, j) src[i, :] (j < w, i < h; rows of nrhs, src's stacked)."""
    if scalar is float:
        rows_gemm_t_s(h, w, nrhs, a, lda, src, x)
    elif scalar is double:
        rows_gemm_t_d(h, w, nrhs, a, lda, src, x)
    elif scalar is cfloat:
        rows_gemm_t_c(h, w, nrhs, a, lda, src, x)
    else:
        rows_gemm_t_z(h, w, nrhs, a, lda, src, x)


cdef inline void rows_trsm(char uplo, char ta, char diag, int w, int nrhs, const scalar* a,
                           int lda, scalar* x) noexcept nogil:
    """X ← op(A)⁻¹ X for a small triangular A (ta 'N' or 'T') and w rows of X."""
    if scalar is float:
        rows_trsm_s(uplo, ta, diag, w, nrhs, a, lda, x)
    elif scalar is double:
        rows_trsm_d(uplo, ta, diag, w, nrhs, a, lda, x)
    elif scalar is cfloat:
        rows_trsm_c(uplo, ta, diag, w, nrhs, a, lda, x)
    else:
        rows_trsm_z(uplo, ta, diag, w, nrhs, a, lda, x)


cdef inline void solve_diag_block(char uplo, char ta, char diag, int w, int nrhs, scalar* a,
                                  int lda, scalar* x) noexcept nogil:
    """X ← op(A)⁻¹ X for a triangular diagonal block and w rows of row-major X."""
    cdef scalar one = 1
    if nrhs == 1:
        trsv(uplo, ta, diag, w, a, lda, x)
    elif rows_direct(w, nrhs):
        rows_trsm(uplo, ta, diag, w, nrhs, a, lda, x)
    else:
        trsm(c'R', uplo, transposed(ta), diag, nrhs, w, one, a, lda, x, nrhs)


cdef struct Sweep:
    # One triangular sweep over the panels, as raw pointers: the block structure
    # (PanelLayout.block_args), the panels and what op to apply.
    Blocks B
    const idx_t* lperm  # local pivots, NULL for none
    const void* diag  # panels holding the diagonal blocks
    const void* off  # panels holding the off-diagonal parts
    int nrhs
    char uplo, trans, unit, offtrans  # as BLAS: diagonal block's uplo/trans/diag, off's trans
    # Parallel forward sweep: the rows of cblks with topoff[f] >= 0 (the top of the
    # tree, shared by the threads' subtrees) go to the row topoff[f] of a private
    # buffer instead of X. NULL for none.
    const idx_t* topoff


cdef Sweep make_sweep(const scalar[::1] diagpanels, const scalar[::1] offpanels, int nrhs,
                      int uplo, int trans, bint unit, int offtrans, const idx_t[::1] lperm,
                      const idx_t[::1] fcol, const idx_t[::1] bloknum,
                      const idx_t[::1] coefind, const idx_t[::1] stride,
                      const idx_t[::1] frow, const idx_t[::1] lrow, const idx_t[::1] fcblk,
                      const idx_t[::1] bcoef) except *:
    cdef Sweep S
    S.B = make_blocks(fcol, bloknum, coefind, stride, frow, lrow, fcblk, bcoef)
    S.lperm = &lperm[0] if lperm.shape[0] else NULL
    S.diag = &diagpanels[0]
    S.off = &offpanels[0]
    S.nrhs = nrhs
    S.uplo, S.trans, S.unit, S.offtrans = uplo, trans, c'U' if unit else c'N', offtrans
    S.topoff = NULL
    return S


cdef idx_t sweep_buffer_rows(const Sweep* S, const idx_t* cblks, idx_t count) noexcept nogil:
    """Rows x right-hand sides of the work buffer a sweep over these cblks needs."""
    cdef idx_t i, k, rows = 1
    for i in range(count):
        k = cblks[i]
        rows = max(rows, max(S.B.stride[k], S.B.fcol[k + 1] - S.B.fcol[k]) * S.nrhs)
    return rows


cdef void forward_cblk(const Sweep* S, scalar* X, idx_t k, scalar* tmp, scalar* Y) noexcept nogil:
    """Forward step of cblk k: permute by lperm, solve with the diagonal block, then
    subtract the off-diagonal panel times the solution from the rows it faces."""
    cdef scalar one = 1, zero = 0
    cdef idx_t fc = S.B.fcol[k], b, i, r, f
    cdef int w = S.B.fcol[k + 1] - fc, m = S.B.stride[k], h, nrhs = S.nrhs
    cdef bint direct = rows_direct(w, nrhs)
    cdef const scalar* diag = <const scalar*>S.diag + S.B.coefind[k]
    cdef const scalar* off = <const scalar*>S.off + S.B.coefind[k] + w
    cdef scalar* xb = X + fc * nrhs
    cdef scalar* src
    cdef scalar* dst
    if S.lperm != NULL:
        permute_rows(X, nrhs, fc, w, S.lperm, False, tmp)
    solve_diag_block(S.uplo, S.trans, S.unit, w, nrhs, <scalar*>diag, m, xb)
    if m == w:
        return
    # Unless direct: tmp = L21 X_k, (m - w) x nrhs. With several right-hand sides
    # it is made column-major, L21 being gemm's untransposed A (packed fastest; as
    # the transposed B of the row-major product, its packing took a fifth of the
    # solve), and the scatter transposes it.
    if nrhs == 1:
        gemv(c'N', m - w, w, one, <scalar*>off, m, xb, zero, tmp)
    elif not direct:
        gemm(c'N', c'T', m - w, nrhs, w, one, <scalar*>off, m, xb, nrhs, zero, tmp, m - w)
    for b in range(S.B.bloknum[k] + 1, S.B.bloknum[k + 1]):
        h = S.B.lrow[b] - S.B.frow[b] + 1
        f = S.B.fcblk[b]
        if Y != NULL and S.topoff[f] >= 0:
            dst = Y + (S.topoff[f] + S.B.frow[b] - S.B.fcol[f]) * nrhs
        else:
            dst = X + S.B.frow[b] * nrhs
        if direct:
            rows_gemm_n(h, w, nrhs, off + (S.B.bcoef[b] - w), m, xb, dst)
        elif nrhs > 1:
            src = tmp + (S.B.bcoef[b] - w)
            for i in range(h):
                for r in range(nrhs):
                    dst[i * nrhs + r] -= src[i + r * (m - w)]
        else:
            src = tmp + (S.B.bcoef[b] - w)
            for i in range(h):
                dst[i] -= src[i]


cdef inline void prefetch_panels(const scalar* off, const scalar* diag, idx_t start,
                                 idx_t* low_off, idx_t* low_diag) noexcept nogil:
    """Prefetch the panels the backward sweep reads next, PREFETCH_AHEAD bytes below
    the panel at ``start`` (``low_*``: how far down each array is already asked for).
    The sweep walks the panels from the last to the first, but reads each from its
    start: across small panels, not a stream the hardware prefetcher follows."""
    cdef idx_t ahead = start - PREFETCH_AHEAD // <idx_t>sizeof(scalar)
    low_off[0] = prefetch_below(off, min(low_off[0], start), ahead)
    if diag != off:  # LU: the diagonal blocks are in the other factor
        low_diag[0] = prefetch_below(diag, min(low_diag[0], start), ahead)


cdef void backward_cblk(const Sweep* S, scalar* X, idx_t k, scalar* tmp) noexcept nogil:
    """Backward step of cblk k: gather the rows it faces, subtract the off-diagonal
    panel, transposed, times them, solve with the diagonal block, undo lperm."""
    cdef scalar one = 1, mone = -1
    cdef idx_t fc = S.B.fcol[k], b, i
    cdef int w = S.B.fcol[k + 1] - fc, m = S.B.stride[k], h, nrhs = S.nrhs
    cdef const scalar* diag = <const scalar*>S.diag + S.B.coefind[k]
    cdef const scalar* off = <const scalar*>S.off + S.B.coefind[k] + w
    cdef scalar* xb = X + fc * nrhs
    cdef scalar* src
    cdef scalar* dst
    if m > w and rows_direct(w, nrhs):
        # Straight from the rows faced, blok by blok.
        for b in range(S.B.bloknum[k] + 1, S.B.bloknum[k + 1]):
            rows_gemm_t(S.B.lrow[b] - S.B.frow[b] + 1, w, nrhs, off + (S.B.bcoef[b] - w), m,
                        X + S.B.frow[b] * nrhs, xb)
    elif m > w:
        # Gathered into tmp, then one product.
        for b in range(S.B.bloknum[k] + 1, S.B.bloknum[k + 1]):
            h = (S.B.lrow[b] - S.B.frow[b] + 1) * nrhs
            src = X + S.B.frow[b] * nrhs
            dst = tmp + (S.B.bcoef[b] - w) * nrhs
            for i in range(h):
                dst[i] = src[i]
        # X_k -= op(L21) tmp, i.e. Y_k -= tmpᵀ L21 for 'T'; in double precision by
        # rows.h's unpacked kernel where the CPU has AVX2 and FMA.
        if nrhs == 1:
            gemv(S.offtrans, m - w, w, mone, <scalar*>off, m, tmp, one, xb)
        elif scalar is not double or not pastixpy_panel_tdot_d(m - w, w, nrhs, off, m, tmp, xb):
            gemm(c'N', c'N', nrhs, w, m - w, mone, tmp, nrhs, <scalar*>off, m, one, xb, nrhs)
    solve_diag_block(S.uplo, S.trans, S.unit, w, nrhs, <scalar*>diag, m, xb)
    if S.lperm != NULL:
        permute_rows(X, nrhs, fc, w, S.lperm, True, tmp)


cdef void check_plan(const idx_t[::1] cblks, const idx_t[::1] ptr, idx_t ncblk) except *:
    cdef idx_t i
    if ptr.shape[0] < 2 or ptr[0] != 0 or ptr[ptr.shape[0] - 1] != cblks.shape[0]:
        raise ValueError("solve: ptr does not split cblks")
    for i in range(ptr.shape[0] - 1):
        if ptr[i + 1] < ptr[i]:
            raise ValueError("solve: ptr does not split cblks")
    for i in range(cblks.shape[0]):
        if cblks[i] < 0 or cblks[i] >= ncblk:
            raise ValueError(f"solve: cblk {cblks[i]} out of range")


def solve_forward(scalar[::1] X, idx_t n, int nrhs, const scalar[::1] diagpanels,
                  const scalar[::1] offpanels, int uplo, int trans, bint unit,
                  const idx_t[::1] lperm, const idx_t[::1] cblks, const idx_t[::1] ptr,
                  const idx_t[::1] topoff, idx_t ntop,
                  const idx_t[::1] fcol, const idx_t[::1] bloknum, const idx_t[::1] coefind,
                  const idx_t[::1] stride, const idx_t[::1] frow, const idx_t[::1] lrow,
                  const idx_t[::1] fcblk, const idx_t[::1] bcoef):
    """Forward substitution on X (n x nrhs, row-major, pivot order), cblk by cblk.

    Thread t takes ``cblks[ptr[t]:ptr[t + 1]]`` in that order (children before
    parents); there are ``len(ptr) - 1`` threads, and BLAS should then be limited
    to one thread by the caller. The threads' cblks must be disjoint subtrees:
    their updates to other cblks' rows go, for threads after the first, to
    private buffers of ``ntop`` rows (cblk f's rows at row ``topoff[f]``) added
    into X at the end. Per cblk: permute by ``lperm`` (local pivots; empty to
    skip), solve with the diagonal block (``uplo``, ``trans`` in 'N'/'T',
    ``unit`` as for trsm), subtract the off-diagonal panel times the solution
    from the rows it faces.
    """
    cdef Sweep S = make_sweep(diagpanels, offpanels, nrhs, uplo, trans, unit, c'T', lperm,
                              fcol, bloknum, coefind, stride, frow, lrow, fcblk, bcoef)
    cdef idx_t ncblk = fcol.shape[0] - 1, rows, i, t, team, nt = ptr.shape[0] - 1
    cdef scalar* buffers
    cdef scalar* tmp
    cdef scalar* Y
    if S.trans == c'C':
        raise ValueError("solve_forward: trans must be 'N' or 'T'")
    check_plan(cblks, ptr, ncblk)
    if X.shape[0] < n * nrhs:
        raise ValueError("solve_forward: X is smaller than n x nrhs")
    if nt > 1:
        if topoff.shape[0] != ncblk:
            raise ValueError("solve_forward: topoff needs one entry per cblk")
        for i in range(ncblk):
            if topoff[i] >= 0 and topoff[i] + fcol[i + 1] - fcol[i] > ntop:
                raise ValueError("solve_forward: topoff does not fit ntop rows")
        S.topoff = &topoff[0]
    rows = sweep_buffer_rows(&S, &cblks[0], cblks.shape[0]) if cblks.shape[0] else 1
    # Per thread: the work buffer, then (after the first) the private top rows.
    buffers = <scalar*>calloc(nt * rows + (nt - 1) * ntop * nrhs + 1, sizeof(scalar))
    if buffers == NULL:
        raise MemoryError("cannot allocate the solve work buffers")
    if nt == 1:
        with nogil:
            for i in range(cblks.shape[0]):
                forward_cblk(&S, &X[0], cblks[i], buffers, NULL)
    else:
        with nogil, parallel(num_threads=nt):
            # Slot t of the plan on thread t mod the team's size: OpenMP may give
            # fewer threads than asked for.
            t = threadid()
            team = omp_get_num_threads()
            while t < nt:
                tmp = buffers + t * rows
                Y = NULL if t == 0 else buffers + nt * rows + (t - 1) * ntop * nrhs
                for i in range(ptr[t], ptr[t + 1]):
                    forward_cblk(&S, &X[0], cblks[i], tmp, Y)
                t = t + team
        with nogil:
            for t in range(1, nt):
                Y = buffers + nt * rows + (t - 1) * ntop * nrhs
                for i in range(ncblk):
                    if topoff[i] >= 0:
                        add_rows(&X[fcol[i] * nrhs], Y + topoff[i] * nrhs,
                                 (fcol[i + 1] - fcol[i]) * nrhs)
    free(buffers)


cdef inline void add_rows(scalar* dst, const scalar* src, idx_t size) noexcept nogil:
    cdef idx_t i
    for i in range(size):
        dst[i] += src[i]


def solve_backward(scalar[::1] X, idx_t n, int nrhs, const scalar[::1] diagpanels,
                   const scalar[::1] offpanels, int offtrans, int uplo, int trans, bint unit,
                   const idx_t[::1] lperm, const idx_t[::1] cblks, const idx_t[::1] ptr,
                   const idx_t[::1] fcol, const idx_t[::1] bloknum, const idx_t[::1] coefind,
                   const idx_t[::1] stride, const idx_t[::1] frow, const idx_t[::1] lrow,
                   const idx_t[::1] fcblk, const idx_t[::1] bcoef):
    """Backward substitution on X (n x nrhs, row-major, pivot order), cblk by cblk.

    Thread t takes ``cblks[ptr[t]:ptr[t + 1]]`` from the last to the first (parents
    before children); the threads' cblks must be disjoint subtrees, whose rows
    they alone write (the rows above, of their ancestors, are final). Per cblk:
    gather the rows it faces, subtract ``offpanels``ᵀ (``offtrans``: 'T' or 'C')
    times them, solve with the diagonal block, then undo ``lperm``.

    Conjugate ops ('C'), with several right-hand sides, are solved as
    conj(op(A)⁻¹ X) = opᵀ(A)⁻¹ conj(X): then ``offtrans`` and ``trans`` must both be 'C'.
    """
    cdef Sweep S = make_sweep(diagpanels, offpanels, nrhs, uplo, trans, unit, offtrans, lperm,
                              fcol, bloknum, coefind, stride, frow, lrow, fcblk, bcoef)
    cdef idx_t ncblk = fcol.shape[0] - 1, rows, i, t, team, nt = ptr.shape[0] - 1
    cdef idx_t low = INT64_MAX, low_diag = INT64_MAX
    cdef bint conj = False
    cdef scalar* buffers
    if S.offtrans == c'N':
        raise ValueError("solve_backward: offtrans must be 'T' or 'C'")
    if nrhs > 1 and (S.offtrans == c'C' or S.trans == c'C'):
        if S.offtrans != S.trans:
            raise ValueError("solve_backward: conjugate ops must be conjugate on both parts")
        conj = True
        S.offtrans = S.trans = c'T'
    check_plan(cblks, ptr, ncblk)
    if X.shape[0] < n * nrhs:
        raise ValueError("solve_backward: X is smaller than n x nrhs")
    rows = sweep_buffer_rows(&S, &cblks[0], cblks.shape[0]) if cblks.shape[0] else 1
    buffers = <scalar*>malloc(nt * rows * sizeof(scalar))
    if buffers == NULL:
        raise MemoryError("cannot allocate the solve work buffers")
    with nogil:
        if conj:
            conjugate(&X[0], n * nrhs)
    if nt == 1:
        with nogil:
            for i in range(cblks.shape[0] - 1, -1, -1):
                prefetch_panels(&offpanels[0], &diagpanels[0], coefind[cblks[i]], &low, &low_diag)
                backward_cblk(&S, &X[0], cblks[i], buffers)
    else:
        with nogil, parallel(num_threads=nt):
            t = threadid()  # slots as in solve_forward
            team = omp_get_num_threads()
            while t < nt:
                low = low_diag = INT64_MAX
                for i in range(ptr[t + 1] - 1, ptr[t] - 1, -1):
                    prefetch_panels(&offpanels[0], &diagpanels[0], coefind[cblks[i]], &low,
                                    &low_diag)
                    backward_cblk(&S, &X[0], cblks[i], buffers + t * rows)
                t = t + team
    with nogil:
        if conj:
            conjugate(&X[0], n * nrhs)
    free(buffers)


def solve_diagonal(scalar[::1] X, idx_t n, int nrhs, const scalar[::1] L, const scalar[::1] dsub,
                   bint conj, const signed char[::1] pivtype, const idx_t[::1] fcol,
                   const idx_t[::1] coefind, const idx_t[::1] stride):
    """X ← D⁻¹ X (X row-major) for the block diagonal D of an LDLᵀ/LDLᴴ factorization."""
    cdef idx_t ncblk = fcol.shape[0] - 1, k, fc, j, r
    cdef int w, m
    cdef const scalar* d
    cdef scalar* x
    cdef scalar d11, d21, d12, d22, det, x1, x2
    with nogil:
        for k in range(ncblk):
            fc = fcol[k]
            w = fcol[k + 1] - fc
            m = stride[k]
            d = &L[coefind[k]]
            j = 0
            while j < w:
                x = &X[(fc + j) * nrhs]
                if pivtype[fc + j] == 1:
                    for r in range(nrhs):
                        x[r] = x[r] / d[j + j * m]
                    j += 1
                else:
                    d11 = d[j + j * m]
                    d21 = dsub[fc + j]
                    d22 = d[j + 1 + (j + 1) * m]
                    d12 = cj(d21, conj)
                    det = d11 * d22 - d12 * d21
                    for r in range(nrhs):
                        x1 = x[r]
                        x2 = x[nrhs + r]
                        x[r] = (d22 * x1 - d12 * x2) / det
                        x[nrhs + r] = (d11 * x2 - d21 * x1) / det
                    j += 2


def diagonal_entries(const scalar[::1] L, const idx_t[::1] fcol, const idx_t[::1] coefind,
                     const idx_t[::1] stride):
    """Diagonal of every cblk's diagonal block, in pivot order (D, U's diagonal, or L's)."""
    cdef idx_t ncblk = fcol.shape[0] - 1, k, j, n = fcol[ncblk]
    out = np.empty(n, dtype=np.asarray(L).dtype)
    cdef scalar[::1] o = out
    for k in range(ncblk):
        for j in range(fcol[k + 1] - fcol[k]):
            o[fcol[k] + j] = L[coefind[k] + j + j * stride[k]]
    return out


# ----------------------------------------------------------------------------- solve helpers
# Row moves and column norms of row-major (n, k) blocks of right-hand sides: numpy's
# take / fancy assignment / max(axis=0) go a row of k entries at a time, several
# times slower than these single passes for k > 1.

def gather_rows(const scalar[:, ::1] src, const idx_t[::1] index, scalar[:, ::1] out):
    """``out[i] = src[index[i]]`` for every row i of ``out``."""
    cdef idx_t i, j, k = src.shape[1], r
    if index.shape[0] != out.shape[0] or out.shape[1] != k:
        raise ValueError("gather_rows: shapes do not match")
    with nogil:
        for i in range(out.shape[0]):
            r = index[i]
            if r < 0 or r >= src.shape[0]:
                with gil:
                    raise IndexError(f"gather_rows: row {r} out of range")
            for j in range(k):
                out[i, j] = src[r, j]


def scatter_rows_inplace(scalar[:, ::1] X, const idx_t[::1] index):
    """In place: row i of X moves to row ``index[i]`` (``index`` a permutation), cycle by
    cycle, with one row in hand: no second n x k array."""
    cdef idx_t n = X.shape[0], k = X.shape[1], i, j, c
    cdef bint bad = False
    cdef scalar t
    if index.shape[0] != n:
        raise ValueError("scatter_rows_inplace: shapes do not match")
    cdef unsigned char* done = <unsigned char*>calloc(max(n, 1), 1)
    cdef scalar* carry = <scalar*>malloc(max(k, 1) * sizeof(scalar))
    if done == NULL or carry == NULL:
        free(done)
        free(carry)
        raise MemoryError("scatter_rows_inplace: cannot allocate its work arrays")
    with nogil:
        for i in range(n):
            if done[i]:
                continue
            done[i] = 1
            for c in range(k):
                carry[c] = X[i, c]
            j = index[i]
            while True:
                if j < 0 or j >= n or (done[j] and j != i):
                    bad = True
                    break
                for c in range(k):  # row j takes the row in hand, which takes j's
                    t = X[j, c]
                    X[j, c] = carry[c]
                    carry[c] = t
                if j == i:
                    break
                done[j] = 1
                j = index[j]
            if bad:
                break
    free(done)
    free(carry)
    if bad:
        raise ValueError("scatter_rows_inplace: index is not a permutation")


def column_max_abs(const scalar[:, ::1] a):
    """Largest magnitude in each column; NaN where the column holds a NaN."""
    cdef idx_t i, j, k = a.shape[1]
    cdef double v
    res = np.zeros(k)
    cdef double[::1] out = res
    with nogil:
        for i in range(a.shape[0]):
            for j in range(k):
                v = mag(a[i, j])
                if v > out[j] or v != v:  # a NaN, once in, stays (nothing compares above it)
                    out[j] = v
    return res


cdef inline void keep_max(double* out, double v) noexcept nogil:
    if v > out[0] or v != v:  # a NaN, once in, stays (nothing compares above it)
        out[0] = v


def residual_maxima(const idx_t[::1] indptr, const idx_t[::1] indices, const scalar[::1] data,
                    bint conj, const scalar[:, ::1] x, const scalar[:, ::1] b):
    """Column maxima of |b − M x|, |x| and |b| (rows 0, 1, 2 of a 3 x k array), M given
    by rows in compressed form (its values conjugated when ``conj``).

    One pass over M, x and b with no residual array: the backward error of a solve
    for the price of a product. NaN where a column holds one.
    """
    cdef idx_t n = x.shape[0], k = x.shape[1], i, p, j, r, bad = -1
    cdef scalar a
    cdef scalar* acc
    if b.shape[0] != n or b.shape[1] != k or indptr.shape[0] != n + 1:
        raise ValueError("residual_maxima: shapes do not match")
    if indptr[0] != 0 or indptr[n] > indices.shape[0] or indptr[n] > data.shape[0]:
        raise ValueError("residual_maxima: indptr does not fit indices and data")
    res = np.zeros((3, k))
    cdef double[:, ::1] out = res
    acc = <scalar*>malloc(max(k, 1) * sizeof(scalar))
    if acc == NULL:
        raise MemoryError("cannot allocate the residual work buffer")
    # Each row's product first, then b minus it: the order of a product and a
    # subtraction, so the figures match those of b - A @ x (C's rows are sorted).
    with nogil:
        if k == 1:  # one right-hand side: the sum in a register
            for i in range(n):
                a = 0
                for p in range(indptr[i], indptr[i + 1]):
                    j = indices[p]
                    if j < 0 or j >= n:
                        bad = i
                        break
                    a = a + cj(data[p], conj) * x[j, 0]
                if bad >= 0:
                    break
                keep_max(&out[0, 0], mag(b[i, 0] - a))
                keep_max(&out[1, 0], mag(x[i, 0]))
                keep_max(&out[2, 0], mag(b[i, 0]))
        else:
            for i in range(n):
                for r in range(k):
                    acc[r] = 0
                for p in range(indptr[i], indptr[i + 1]):
                    j = indices[p]
                    if j < 0 or j >= n:
                        bad = i
                        break
                    a = cj(data[p], conj)
                    for r in range(k):
                        acc[r] += a * x[j, r]
                if bad >= 0:
                    break
                for r in range(k):
                    keep_max(&out[0, r], mag(b[i, r] - acc[r]))
                    keep_max(&out[1, r], mag(x[i, r]))
                    keep_max(&out[2, r], mag(b[i, r]))
    free(acc)
    if bad >= 0:
        raise ValueError(f"residual_maxima: row {bad} has a column index out of range")
    return res
