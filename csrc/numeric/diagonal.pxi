# The factorization of one diagonal block, in place: Cholesky (LAPACK's potrf), LU with
# partial pivoting inside the block, Bunch-Kaufman LDLᵀ/LDLᴴ, each with static pivoting
# (a pivot below the threshold is replaced and counted), and D⁻¹ applied to a panel.

cdef double BK_ALPHA = 0.6403882032022076  # (1 + sqrt(17)) / 8, Bunch-Kaufman's growth bound


cdef inline scalar perturbed_pivot(scalar d, double tol) noexcept nogil:
    """Static pivoting: a pivot below ``tol`` becomes ``tol`` with the pivot's sign (phase)."""
    cdef double r = mag(d)
    cdef scalar s = tol
    if r == 0:
        return s
    s = tol / r
    return d * s


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



# Which of a cblk's panels rows are solved against its factored diagonal block.
cdef enum:
    L_PANEL = 0
    U_PANEL = 1  # LU's Uᵀ panel


cdef void solve_rows(const FactorState* P, idx_t k, int side, int rows, scalar* x, int ldx,
                     scalar* wcopy) noexcept nogil:
    """Solve ``rows`` rows of cblk k's panel ``side`` against its factored diagonal block,
    in place: X ← X L11⁻ᵀ (LLᵀ), X ← X U11⁻¹ (LU's L, X ← X L11⁻ᵀ for its Uᵀ),
    X ← X L11⁻ᵀ D⁻¹ (LDLᵀ). The rows are the panel's below the block, or a tile's
    small factor Bt (block low-rank: the same right-hand operation, on r rows instead
    of h). LDLᵀ copies X L11⁻ᵀ (its updates' left operand W) to ``wcopy`` (leading
    dimension ``rows``) unless it is NULL."""
    cdef scalar one = 1
    cdef const Blocks* B = &P.B
    cdef int w = cblk_width(B, k), m = B.stride[k], i, j
    cdef idx_t fc = B.fcol[k]
    cdef scalar* diag = <scalar*>P.cblk[k].lcoef
    if rows <= 0:
        return
    if P.ops.diagonal == CHOLESKY:
        trsm(c'R', c'L', P.ops.tr, c'N', rows, w, one, diag, m, x, ldx)
    elif P.ops.diagonal == PARTIAL_LU:
        if side == L_PANEL:
            trsm(c'R', c'U', c'N', c'N', rows, w, one, diag, m, x, ldx)
        else:
            trsm(c'R', c'L', c'T', c'U', rows, w, one, diag, m, x, ldx)
    else:
        trsm(c'R', c'L', P.ops.tr, c'U', rows, w, one, diag, m, x, ldx)
        if wcopy != NULL:
            for j in range(w):
                for i in range(rows):
                    wcopy[i + j * rows] = x[i + j * ldx]
        apply_dinv_right(w, rows, diag, m, x, ldx, P.ops.conj, &P.pivtype[fc],
                         &(<scalar*>P.dsub)[fc])
