# BLAS and LAPACK through scipy's Cython bindings, and plain loops for operands too small
# for a BLAS call's fixed cost.

from scipy.linalg.cython_blas cimport (cgemm, cgemv, cherk, ctrsm, ctrsv, dgemm, dgemv,
                                       dnrm2, dsyrk, dtrsm, dtrsv, dznrm2, scnrm2, sgemm,
                                       sgemv, snrm2, ssyrk, strsm, strsv, zgemm, zgemv,
                                       zherk, ztrsm, ztrsv)
from scipy.linalg.cython_lapack cimport (cgeqrf, cgesvd, clarfg, cpotrf, cungqr, dgeqrf,
                                         dgesvd, dlarfg, dorgqr, dpotrf, sgeqrf, sgesvd,
                                         slarfg, sorgqr, spotrf, zgeqrf, zgesvd, zlarfg,
                                         zpotrf, zungqr)


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


# Householder QR and the SVD, for the low-rank compression kernels (lowrank.pxi). A
# LAPACK call with ``lwork = -1`` is a workspace query: the size it wants comes back in
# ``work[0]`` (read it with ``query_size``).

cdef inline int query_size(scalar w) noexcept nogil:
    """The workspace size a LAPACK query returned in ``w`` (a real number in a scalar)."""
    if scalar is float or scalar is double:
        return <int>w + 1
    else:
        return <int>w.real + 1


cdef inline double nrm2(int n, scalar* x, int incx) noexcept nogil:
    """‖x‖₂ of n entries at stride incx (scaled by BLAS: no overflow for large entries)."""
    if n <= 0:
        return 0
    if scalar is float:
        return snrm2(&n, x, &incx)
    elif scalar is double:
        return dnrm2(&n, x, &incx)
    elif scalar is cfloat:
        return scnrm2(&n, x, &incx)
    else:
        return dznrm2(&n, x, &incx)


cdef inline void larfg(int n, scalar* alpha, scalar* x, int incx, scalar* tau) noexcept nogil:
    """A reflector H = I - tau v vᴴ with Hᴴ (alpha; x) = (beta; 0), beta real; v's tail
    overwrites x (v₀ = 1 implied), beta overwrites alpha."""
    if scalar is float:
        slarfg(&n, alpha, x, &incx, tau)
    elif scalar is double:
        dlarfg(&n, alpha, x, &incx, tau)
    elif scalar is cfloat:
        clarfg(&n, alpha, x, &incx, tau)
    else:
        zlarfg(&n, alpha, x, &incx, tau)


cdef inline int geqrf(int m, int n, scalar* a, int lda, scalar* tau, scalar* work,
                      int lwork) noexcept nogil:
    """Householder QR in place (R above the diagonal, reflectors below, as LAPACK)."""
    cdef int info = 0
    if scalar is float:
        sgeqrf(&m, &n, a, &lda, tau, work, &lwork, &info)
    elif scalar is double:
        dgeqrf(&m, &n, a, &lda, tau, work, &lwork, &info)
    elif scalar is cfloat:
        cgeqrf(&m, &n, a, &lda, tau, work, &lwork, &info)
    else:
        zgeqrf(&m, &n, a, &lda, tau, work, &lwork, &info)
    return info


cdef inline int ungqr(int m, int n, int k, scalar* a, int lda, scalar* tau, scalar* work,
                      int lwork) noexcept nogil:
    """The first n columns of Q = H₁…H_k, in place over the k reflectors (orgqr if real)."""
    cdef int info = 0
    if scalar is float:
        sorgqr(&m, &n, &k, a, &lda, tau, work, &lwork, &info)
    elif scalar is double:
        dorgqr(&m, &n, &k, a, &lda, tau, work, &lwork, &info)
    elif scalar is cfloat:
        cungqr(&m, &n, &k, a, &lda, tau, work, &lwork, &info)
    else:
        zungqr(&m, &n, &k, a, &lda, tau, work, &lwork, &info)
    return info


cdef inline int gesvd(char jobu, char jobvt, int m, int n, scalar* a, int lda, double* s,
                      scalar* u, int ldu, scalar* vt, int ldvt, scalar* work, int lwork,
                      double* rwork) noexcept nogil:
    """A = U Σ Vᴴ (LAPACK's gesvd, A overwritten); the singular values come back in
    ``s`` as doubles whatever the precision (min(m, n) of them); ``rwork``: 5 min(m, n)
    doubles, complex types only. A query (``lwork = -1``) leaves ``s`` alone."""
    cdef int info = 0, i, k = min(m, n)
    cdef float* sf = <float*>s
    cdef float t
    if scalar is float:
        sgesvd(&jobu, &jobvt, &m, &n, a, &lda, sf, u, &ldu, vt, &ldvt, work, &lwork, &info)
    elif scalar is double:
        dgesvd(&jobu, &jobvt, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, &info)
    elif scalar is cfloat:
        cgesvd(&jobu, &jobvt, &m, &n, a, &lda, sf, u, &ldu, vt, &ldvt, work, &lwork,
               <float*>rwork, &info)
    else:
        zgesvd(&jobu, &jobvt, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork,
               &info)
    if (scalar is float or scalar is cfloat) and lwork != -1:
        # Widened in place from the last: double i covers floats 2i and 2i + 1, never a
        # float still to be read (those are below i).
        for i in range(k - 1, -1, -1):
            t = sf[i]
            s[i] = t
    return info
