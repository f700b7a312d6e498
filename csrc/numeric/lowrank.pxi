# Low-rank compression of dense tiles (block low-rank): a tile A, m x n, approximated
# as U Vᴴ by a column-pivoted QR stopped at the tolerance, a truncated SVD, or an adaptive
# randomized range finder; and the recompression of a sum of two low-rank tiles.
#
# Conventions shared by every kernel here:
#   - storage is column-major with explicit leading dimensions; A is only read;
#   - tol is absolute: the result satisfies ‖A - U Vᴴ‖_F ≤ tol up to rounding (the
#     caller scales it by a norm of A, or of the whole matrix, as its strategy wants);
#   - U has orthonormal columns and V = Aᴴ U (up to rounding), whatever the method. The
#     truncated SVD thus gives U = U_r and V = V_r Σ_r. One convention for all methods
#     lets a caller switch methods freely, and an orthonormal U makes ‖U Vᴴ‖_F = ‖V‖_F;
#   - a kernel returns the rank r ≥ 0 it wrote into U[:, :r] and V[:, :r], which the
#     caller sized for clamp_rank(m, n, max_rank) columns (max_rank < 0: no limit beyond
#     min(m, n)); LR_TOO_LARGE when the tolerance needs a rank above max_rank (the tile
#     stays dense; U and V then hold garbage), LR_NOMEM when the workspace could not be
#     allocated, LR_NOCONV when LAPACK's SVD did not converge;
#   - each kernel mallocs its workspace in one block and frees it on every path; the
#     work itself runs in a second function that takes the carved pointers, so that an
#     early return cannot leak.

from libc.math cimport cos, log, sin
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

from pastixpy.errors import InvalidInputError


cdef extern from *:
    """
    #include <stdint.h>
    /* splitmix64 (Steele, Lea, Flood 2014): a 64-bit state, statistically sound for
       test matrices and reproducible on every platform. */
    static inline uint64_t pastixpy_splitmix64(uint64_t *state) {
        uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    """
    uint64_t pastixpy_splitmix64(uint64_t* state) noexcept nogil


cdef enum:
    LR_RRQR = 0
    LR_SVD = 1
    LR_RANDOMIZED = 2

cdef enum:
    LR_TOO_LARGE = -1
    LR_NOMEM = -2
    LR_NOCONV = -3

cdef enum:
    # Pivoted QR: steps per block, whose reflectors reach the trailing matrix in one
    # gemm (LAPACK's xGEQP3 takes 32 as well).
    LR_QR_BLOCK = 32

cdef enum:
    # Randomized: test vectors drawn per block. Each block costs 1 + 2 power passes
    # over the residual and a deflation, and the basis overshoots the rank by up to a
    # block before its final truncation: small blocks waste little work, large ones
    # make fewer passes.
    LR_BLOCK = 16

cdef double TWO_PI = 6.283185307179586

LOWRANK_METHODS = {"rrqr": LR_RRQR, "svd": LR_SVD, "randomized": LR_RANDOMIZED}

#: Default power iterations of the randomized method.
POWER = 1


# ---------------------------------------------------------------------------- helpers


cdef inline double unit_roundoff(scalar* dummy) noexcept nogil:
    """LAPACK's xLAMCH('E') of the precision a specialization runs on (not read)."""
    if scalar is float or scalar is cfloat:
        return 5.960464477539063e-08  # 2⁻²⁴
    else:
        return 1.1102230246251565e-16  # 2⁻⁵³


cdef inline int clamp_rank(int m, int n, int max_rank) noexcept nogil:
    """The largest rank a result may have: max_rank, where it is in [0, min(m, n)]."""
    cdef int k = min(m, n)
    return k if max_rank < 0 or max_rank > k else max_rank


cdef inline size_t aligned(size_t nbytes) noexcept nogil:
    """Bytes rounded up to a cache line: carved sub-arrays of one malloc stay aligned."""
    return (nbytes + 63) & ~(<size_t>63)


cdef inline void copy_tile(int m, int n, scalar* a, int lda, scalar* b, int ldb) noexcept nogil:
    cdef int j
    if m <= 0:
        return
    for j in range(n):
        memcpy(b + <int64_t>j * ldb, a + <int64_t>j * lda, m * sizeof(scalar))


cdef inline void upper_part(int m, int n, scalar* a, int lda, scalar* b, int ldb) noexcept nogil:
    """B ← the upper trapezoid of A (m x n), zeros below the diagonal (R of a QR)."""
    cdef int i, j
    for j in range(n):
        for i in range(m):
            b[i + <int64_t>j * ldb] = a[i + <int64_t>j * lda] if i <= j else 0


cdef inline double frobenius2(int m, int n, scalar* a, int lda) noexcept nogil:
    """‖A‖_F²: column norms by BLAS (scaled against overflow), their squares summed in
    double (single-precision tiles lose nothing to the sum)."""
    cdef double total = 0, c
    cdef int j
    for j in range(n):
        c = nrm2(m, a + <int64_t>j * lda, 1)
        total += c * c
    return total


cdef inline int tail_rank(int k, double* s, double floor2, double tol2) noexcept nogil:
    """The smallest r with floor2 + Σ_{i ≥ r} s_i² ≤ tol2 (s decreasing), k if none is.

    Summed from the smallest value up, so that small values are not lost against large.
    """
    cdef double tail = floor2
    cdef int r = k
    while r > 0 and tail + s[r - 1] * s[r - 1] <= tol2:
        tail += s[r - 1] * s[r - 1]
        r -= 1
    return r


cdef inline void set_real(scalar* x, int64_t i, double value) noexcept nogil:
    """The i-th real number of x's storage (complex: real and imaginary parts alternate)."""
    if scalar is float or scalar is cfloat:
        (<float*>x)[i] = <float>value
    else:
        (<double*>x)[i] = value


cdef inline double uniform01(uint64_t* state) noexcept nogil:
    # 53 random bits, offset by half a step: in (0, 1), never 0 (a logarithm follows).
    return (<double>(pastixpy_splitmix64(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0)


cdef void fill_gaussian(int64_t count, scalar* x, uint64_t* state) noexcept nogil:
    """count standard Gaussian entries (both parts of complex ones), Box-Muller in pairs."""
    cdef int64_t i = 0, nreal = count
    cdef double rad, ang
    if scalar is cfloat or scalar is cdouble:
        nreal = 2 * count
    while i < nreal:
        rad = sqrt(-2 * log(uniform01(state)))
        ang = TWO_PI * uniform01(state)
        set_real(x, i, rad * cos(ang))
        if i + 1 < nreal:
            set_real(x, i + 1, rad * sin(ang))
        i += 2


cdef inline void project_out(int m, int k, int b, scalar* q, int ldq, scalar* y, int ldy,
                             scalar* t) noexcept nogil:
    """Y ← Y - Q (Qᴴ Y), Q m x k with orthonormal columns, Y m x b; t: k x b workspace."""
    cdef scalar one = 1, mone = -1, zero = 0
    if k <= 0:
        return
    gemm(c'C', c'N', k, b, m, one, q, ldq, y, ldy, zero, t, k)
    gemm(c'N', c'N', m, b, k, mone, q, ldq, t, k, one, y, ldy)


# ----------------------------------------------------- pivoted QR stopped at the tolerance


cdef int lr_rrqr(int m, int n, scalar* a, int lda, double tol, int max_rank,
                 scalar* u, int ldu, scalar* v, int ldv) noexcept nogil:
    """A ≈ U Vᴴ by Householder QR with column pivoting, stopped at the tolerance.

    A P = Q R; after r steps the residual A - Q_r R_r Pᵀ is Q [0; R₂₂] Pᵀ, whose norm is
    the trailing matrix's: the factorization stops at the first r where ‖R₂₂‖_F ≤ tol.
    U = Q[:, :r] (formed), Vᴴ = R[:r, :] Pᵀ. Blocked as LAPACK's xLAQPS (rrqr_block):
    each step updates only its pivot column and row, and the trailing matrix takes a
    block's reflectors at once (one gemm), the column norms downdated from the rows.
    """
    cdef int kmax = min(m, n), lwork, r, rq
    cdef scalar q = 0
    cdef size_t s_w, s_f, s_tau, s_aux, s_work, s_norms
    cdef char* base
    if kmax <= 0:
        return 0
    max_rank = clamp_rank(m, n, max_rank)
    rq = max(max_rank, 1)
    ungqr(m, rq, rq, u, max(ldu, m), &q, &q, -1)
    lwork = query_size(q)
    s_w = aligned(<size_t>m * n * sizeof(scalar))
    s_f = aligned(<size_t>n * LR_QR_BLOCK * sizeof(scalar))
    s_tau = aligned(<size_t>kmax * sizeof(scalar))
    s_aux = aligned(<size_t>LR_QR_BLOCK * sizeof(scalar))
    s_work = aligned(<size_t>lwork * sizeof(scalar))
    s_norms = aligned(2 * <size_t>n * sizeof(double))
    base = <char*>malloc(s_w + s_f + s_tau + s_aux + s_work + s_norms
                         + 2 * <size_t>n * sizeof(int))
    if base == NULL:
        return LR_NOMEM
    r = rrqr_in(m, n, a, lda, tol, max_rank, u, ldu, v, ldv, <scalar*>base,
                <scalar*>(base + s_w),
                <scalar*>(base + s_w + s_f),
                <scalar*>(base + s_w + s_f + s_tau),
                <scalar*>(base + s_w + s_f + s_tau + s_aux), lwork,
                <double*>(base + s_w + s_f + s_tau + s_aux + s_work),
                <int*>(base + s_w + s_f + s_tau + s_aux + s_work + s_norms))
    free(base)
    return r


cdef int rrqr_in(int m, int n, scalar* a, int lda, double tol, int max_rank, scalar* u,
                 int ldu, scalar* v, int ldv, scalar* w, scalar* f, scalar* tau, scalar* aux,
                 scalar* work, int lwork, double* vn1, int* jpvt) noexcept nogil:
    # vn1[j]: norm of column j's trailing rows (downdated); vn2[j]: its last exact value.
    # stale: the columns whose downdate cancelled, recomputed at the block's end.
    cdef double* vn2 = vn1 + n
    cdef int* stale = jpvt + n
    cdef int kmax = min(m, n), k, j, i, r, nstale = 0
    cdef double tol2 = tol * tol, est, exact, c
    cdef scalar* col
    copy_tile(m, n, a, lda, w, m)
    for j in range(n):
        jpvt[j] = j
        vn1[j] = nrm2(m, w + <int64_t>j * m, 1)
        vn2[j] = vn1[j]
    k = 0
    while k < kmax:
        # The trailing matrix is up to date here, and its norm is the residual's. The
        # downdated column norms only estimate it: a stop they suggest is confirmed on
        # the matrix itself, whose exact column norms then replace the estimates. The
        # margin 2 also confirms estimates a little above the truth, which would
        # otherwise cost a step too many.
        est = 0
        for j in range(k, n):
            est += vn1[j] * vn1[j]
        if est <= 2 * tol2:
            exact = 0
            for j in range(k, n):
                c = nrm2(m - k, w + k + <int64_t>j * m, 1)
                vn1[j] = c
                vn2[j] = c
                exact += c * c
            if exact <= tol2:
                break
        if k >= max_rank:
            return LR_TOO_LARGE
        k += rrqr_block(m, n, k, min(LR_QR_BLOCK, kmax - k, max_rank - k), tol2, w, f, tau,
                        aux, vn1, jpvt, stale, &nstale)
        for i in range(nstale):
            j = stale[i]
            vn1[j] = nrm2(m - k, w + k + <int64_t>j * m, 1)
            vn2[j] = vn1[j]
    r = k
    # Vᴴ = R[:r, :] Pᵀ: R's entry (i, j ≥ i) is Vᴴ's (i, jpvt[j]), so V's (jpvt[j], i).
    for i in range(r):
        col = v + <int64_t>i * ldv
        for j in range(n):
            col[j] = 0
        for j in range(i, n):
            col[jpvt[j]] = cj(w[i + <int64_t>j * m], True)
    if r > 0:
        copy_tile(m, r, w, m, u, ldu)
        if ungqr(m, r, r, u, ldu, tau, work, lwork) != 0:
            return LR_NOCONV  # an argument error: not reached with the sizes above
    return r


cdef int rrqr_block(int m, int n, int k0, int nb, double tol2, scalar* w, scalar* f,
                    scalar* tau, scalar* aux, double* vn1, int* jpvt, int* stale,
                    int* nstale) noexcept nogil:
    """Up to nb pivoted Householder steps from column k0 (LAPACK's xLAQPS); returns kb,
    the steps done, the trailing matrix from k0 + kb then up to date.

    With Y the block's reflectors so far (below the diagonal of W's columns k0:k) and F
    built alongside, the trailing matrix is W - Y Fᴴ: a step updates only its pivot
    column, before its reflector, and its row, which is final (R's). The block ends
    early where the norm estimates fall to 2 tol² (the caller checks the exact norm on
    the updated matrix), or where a downdate cancelled: those columns are listed in
    ``stale[:nstale]``, their norms to be recomputed once the matrix is updated.
    """
    cdef double* vn2 = vn1 + n
    cdef double tol3z = sqrt(unit_roundoff(w)), t, t2, est
    cdef int k = k0, kk = 0, j, p, i
    cdef scalar one = 1, mone = -1, zero = 0, akk, mtau
    cdef scalar* col
    cdef scalar* y = w + k0 + <int64_t>k0 * m  # Y's rows from k0; its rows from k: y + kk
    nstale[0] = 0
    while True:
        p = k
        for j in range(k + 1, n):
            if vn1[j] > vn1[p]:
                p = j
        if p != k:
            for i in range(m):
                swap(&w[i + <int64_t>p * m], &w[i + <int64_t>k * m])
            for i in range(kk):
                swap(&f[p + <int64_t>i * n], &f[k + <int64_t>i * n])
            jpvt[p], jpvt[k] = jpvt[k], jpvt[p]
            vn1[p] = vn1[k]
            vn2[p] = vn2[k]
        col = w + k + <int64_t>k * m
        # The pivot column takes the block's reflectors: W[k:, k] -= Y[k:, :] F[k, :]ᴴ.
        gemm(c'N', c'C', m - k, 1, kk, mone, y + kk, m, f + k, n, one, col, m)
        larfg(m - k, col, col + 1, 1, &tau[k])
        akk = col[0]
        col[0] = 1
        if k + 1 < n:
            # F[k+1:, kk] = tau (W[k:, k+1:]ᴴ v - F[k+1:, :kk] Y[k:, :]ᴴ v), the trailing
            # matrix being W - Y Fᴴ; this step's Hᴴ = I - conj(tau) v vᴴ is then in it.
            mtau = -tau[k]
            gemv(c'C', m - k, kk, mtau, y + kk, m, col, zero, aux)
            gemv(c'C', m - k, n - k - 1, tau[k], col + m, m, col, zero,
                 f + k + 1 + <int64_t>kk * n)
            gemv(c'N', n - k - 1, kk, one, f + k + 1, n, aux, one,
                 f + k + 1 + <int64_t>kk * n)
            # Row k becomes R's: W[k, k+1:] -= Y[k, :kk+1] F[k+1:, :kk+1]ᴴ (Y[k, kk] = 1).
            gemm(c'N', c'C', 1, n - k - 1, kk + 1, mone, y + kk, m, f + k + 1, n, one,
                 col + m, m)
        col[0] = akk
        # Row k leaves the trailing matrix: downdate the norms (xLAQP2's rule, Drmač and
        # Bujanović 2008); where it cancelled, the norm must be recomputed, on rows not
        # updated yet: the block stops here.
        for j in range(k + 1, n):
            if vn1[j] != 0:
                t = mag(w[k + <int64_t>j * m]) / vn1[j]
                t = max(0.0, (1 - t) * (1 + t))
                t2 = t * (vn1[j] / vn2[j]) * (vn1[j] / vn2[j])
                if t2 <= tol3z:
                    stale[nstale[0]] = j
                    nstale[0] += 1
                else:
                    vn1[j] *= sqrt(t)
        k += 1
        kk += 1
        if kk == nb or nstale[0] > 0:
            break
        est = 0
        for j in range(k, n):
            est += vn1[j] * vn1[j]
        if est <= 2 * tol2:
            break
    # The block's reflectors at once, into the rows below it: W[k:, k:] -= Y[k:] F[k:]ᴴ.
    gemm(c'N', c'C', m - k, n - k, kk, mone, y + kk, m, f + k, n, one,
         w + k + <int64_t>k * m, m)
    return kk


# ------------------------------------------------------------------------ truncated SVD


cdef int lr_svd(int m, int n, scalar* a, int lda, double tol, int max_rank,
                scalar* u, int ldu, scalar* v, int ldv) noexcept nogil:
    """A ≈ U Vᴴ by LAPACK's SVD: the smallest r whose discarded singular values have
    sqrt(Σ σ_i²) ≤ tol; U = U_r, V = V_r Σ_r. The reference: optimal rank, full cost."""
    cdef int k = min(m, n), lwork, r
    cdef scalar q = 0
    cdef double dq = 0
    cdef size_t s_a, s_u, s_vt, s_work, s_s
    cdef char* base
    if k <= 0:
        return 0
    max_rank = clamp_rank(m, n, max_rank)
    gesvd(c'S', c'S', m, n, a, m, &dq, u, m, v, k, &q, -1, &dq)
    lwork = query_size(q)
    s_a = aligned(<size_t>m * n * sizeof(scalar))
    s_u = aligned(<size_t>m * k * sizeof(scalar))
    s_vt = aligned(<size_t>k * n * sizeof(scalar))
    s_work = aligned(<size_t>lwork * sizeof(scalar))
    s_s = aligned(<size_t>k * sizeof(double))
    base = <char*>malloc(s_a + s_u + s_vt + s_work + s_s + 5 * <size_t>k * sizeof(double))
    if base == NULL:
        return LR_NOMEM
    r = svd_in(m, n, a, lda, tol, max_rank, u, ldu, v, ldv, <scalar*>base,
               <scalar*>(base + s_a), <scalar*>(base + s_a + s_u),
               <scalar*>(base + s_a + s_u + s_vt), lwork,
               <double*>(base + s_a + s_u + s_vt + s_work),
               <double*>(base + s_a + s_u + s_vt + s_work + s_s))
    free(base)
    return r


cdef int svd_in(int m, int n, scalar* a, int lda, double tol, int max_rank, scalar* u,
                int ldu, scalar* v, int ldv, scalar* w, scalar* uf, scalar* vt, scalar* work,
                int lwork, double* s, double* rwork) noexcept nogil:
    cdef int k = min(m, n), r, i, j
    cdef scalar sc
    cdef scalar* col
    copy_tile(m, n, a, lda, w, m)
    if gesvd(c'S', c'S', m, n, w, m, s, uf, m, vt, k, work, lwork, rwork) != 0:
        return LR_NOCONV
    r = tail_rank(k, s, 0, tol * tol)
    if r > max_rank:
        return LR_TOO_LARGE
    copy_tile(m, r, uf, m, u, ldu)
    for i in range(r):
        col = v + <int64_t>i * ldv
        sc = s[i]
        for j in range(n):
            col[j] = cj(vt[i + <int64_t>j * k], True) * sc
    return r


# ------------------------------------------------------------ randomized range finder


cdef int lr_randomized(int m, int n, scalar* a, int lda, double tol, int max_rank,
                       uint64_t seed, int power, scalar* u, int ldu, scalar* v,
                       int ldv) noexcept nogil:
    """A ≈ U Vᴴ from a basis Q of A's range found by blocks of Gaussian test vectors.

    The residual R = A - Q Qᴴ A is kept explicitly (deflated block by block), so the
    stopping test ‖R‖_F ≤ tol is computed, not estimated. A block is Y = (R Rᴴ)^power
    R Ω, orthonormalized between the products (power iterations sharpen the decay the
    block sees, and with it how close the rank comes to the SVD's), then orthogonalized
    against Q twice, each pass followed by a Householder QR, which keeps Q orthonormal
    even where Y is numerically rank deficient. Once R is under tol, Q's span is
    truncated as a whole: with Qᴴ A = Ũ Σ Ṽᴴ, keeping Q Ũ[:, :j] leaves a residual of
    ‖R‖² + Σ_{i ≥ j} σ_i² (orthogonal parts), and the fewest j that keep it under tol²
    are kept; U = Q Ũ[:, :j], V = Aᴴ U. Q may grow to a block past max_rank (the
    surplus is what makes the truncation accurate), so it is held apart from U.
    ``seed`` fixes Ω.
    """
    cdef int kmax = min(m, n), bmax, qcap, lwork, r
    cdef scalar q = 0
    cdef double dq = 0
    cdef size_t s_r, s_q, s_om, s_w, s_t, s_tau, s_vf, s_vc, s_vt, s_work, s_s
    cdef char* base
    if kmax <= 0:
        return 0
    max_rank = clamp_rank(m, n, max_rank)
    bmax = min(LR_BLOCK, kmax)
    qcap = min(kmax, max_rank + bmax)
    # Blocks of m or n rows (power iterations orthonormalize both sides), the final SVD
    # of Aᴴ Q, n x (up to qcap), whose smaller cases take gesvd's other paths: their least
    # workspace (3k + n, 5k for real types, 2k + n complex) is covered as well.
    geqrf(max(m, n), bmax, u, max(m, n), &q, &q, -1)
    lwork = query_size(q)
    ungqr(max(m, n), bmax, bmax, u, max(m, n), &q, &q, -1)
    lwork = max(lwork, query_size(q))
    gesvd(c'N', c'S', n, qcap, u, n, &dq, u, 1, u, qcap, &q, -1, &dq)
    lwork = max(lwork, query_size(q), 5 * qcap + n)
    s_r = aligned(<size_t>m * n * sizeof(scalar))
    s_q = aligned(<size_t>m * qcap * sizeof(scalar))
    s_om = aligned(<size_t>n * bmax * sizeof(scalar))
    s_w = aligned(<size_t>bmax * n * sizeof(scalar))
    s_t = aligned(<size_t>qcap * bmax * sizeof(scalar))
    s_tau = aligned(<size_t>bmax * sizeof(scalar))
    s_vf = aligned(<size_t>n * qcap * sizeof(scalar))
    s_vc = aligned(<size_t>n * qcap * sizeof(scalar))
    s_vt = aligned(<size_t>qcap * qcap * sizeof(scalar))
    s_work = aligned(<size_t>lwork * sizeof(scalar))
    s_s = aligned(<size_t>qcap * sizeof(double))
    base = <char*>malloc(s_r + s_q + s_om + s_w + s_t + s_tau + s_vf + s_vc + s_vt + s_work
                         + s_s + 5 * <size_t>qcap * sizeof(double))
    if base == NULL:
        return LR_NOMEM
    cdef scalar* p = <scalar*>base
    cdef scalar* res = p
    p = <scalar*>(<char*>p + s_r)
    cdef scalar* qbuf = p
    p = <scalar*>(<char*>p + s_q)
    cdef scalar* omega = p
    p = <scalar*>(<char*>p + s_om)
    cdef scalar* w = p
    p = <scalar*>(<char*>p + s_w)
    cdef scalar* t = p
    p = <scalar*>(<char*>p + s_t)
    cdef scalar* tau = p
    p = <scalar*>(<char*>p + s_tau)
    cdef scalar* vf = p
    p = <scalar*>(<char*>p + s_vf)
    cdef scalar* vc = p
    p = <scalar*>(<char*>p + s_vc)
    cdef scalar* vt = p
    p = <scalar*>(<char*>p + s_vt)
    cdef scalar* work = p
    cdef double* sv = <double*>(<char*>p + s_work)
    r = randomized_in(m, n, a, lda, tol, max_rank, seed, power, u, ldu, v, ldv, bmax, res,
                      qbuf, omega, w, t, tau, vf, vc, vt, work, lwork, sv, sv + qcap)
    free(base)
    return r


cdef inline void orthonormalize(int m, int b, scalar* y, int ldy, scalar* tau, scalar* work,
                                int lwork) noexcept nogil:
    """Y ← the Q of Y's Householder QR (m x b, m ≥ b): orthonormal, Y's span if full rank."""
    geqrf(m, b, y, ldy, tau, work, lwork)
    ungqr(m, b, b, y, ldy, tau, work, lwork)


cdef int randomized_in(int m, int n, scalar* a, int lda, double tol, int max_rank,
                       uint64_t seed, int power, scalar* u, int ldu, scalar* v, int ldv,
                       int bmax, scalar* res, scalar* q, scalar* omega, scalar* w, scalar* t,
                       scalar* tau, scalar* vf, scalar* vc, scalar* vt, scalar* work,
                       int lwork, double* s, double* rwork) noexcept nogil:
    cdef int kmax = min(m, n), rank = 0, b, j, sweep, it
    cdef double tol2 = tol * tol, res2
    cdef uint64_t state = seed
    cdef scalar one = 1, mone = -1, zero = 0
    cdef scalar* qb
    copy_tile(m, n, a, lda, res, m)
    res2 = frobenius2(m, n, res, m)
    while res2 > tol2:
        if rank == kmax:
            break  # Q spans A's range: what is left is rounding, tol is below it
        if rank >= max_rank:
            return LR_TOO_LARGE
        b = min(bmax, kmax - rank)
        qb = q + <int64_t>rank * m
        fill_gaussian(<int64_t>n * b, omega, &state)
        gemm(c'N', c'N', m, b, n, one, res, m, omega, n, zero, qb, m)
        for it in range(power):
            orthonormalize(m, b, qb, m, tau, work, lwork)
            gemm(c'C', c'N', n, b, m, one, res, m, qb, m, zero, omega, n)
            orthonormalize(n, b, omega, n, tau, work, lwork)
            gemm(c'N', c'N', m, b, n, one, res, m, omega, n, zero, qb, m)
        for sweep in range(2 if rank > 0 else 1):
            project_out(m, rank, b, q, m, qb, m, t)
            orthonormalize(m, b, qb, m, tau, work, lwork)
        # W = Q_bᴴ R, then R ← R - Q_b W: the residual against the basis so far.
        gemm(c'C', c'N', b, n, m, one, qb, m, res, m, zero, w, b)
        gemm(c'N', c'N', m, n, b, mone, qb, m, w, b, one, res, m)
        res2 = frobenius2(m, n, res, m)
        rank += b
    if rank == 0:
        return 0
    # Aᴴ Q = Ṽ Σ Ũᴴ: the SVD of a copy gives Ũᴴ (vt) and Σ; U = Q Ũ_j, V = (Aᴴ Q) Ũ_j.
    gemm(c'C', c'N', n, rank, m, one, a, lda, q, m, zero, vf, n)
    copy_tile(n, rank, vf, n, vc, n)
    if gesvd(c'N', c'S', n, rank, vc, n, s, vc, 1, vt, rank, work, lwork, rwork) != 0:
        return LR_NOCONV
    j = tail_rank(rank, s, res2, tol2)
    if j > max_rank:
        return LR_TOO_LARGE
    gemm(c'N', c'C', m, j, rank, one, q, m, vt, rank, zero, u, ldu)
    gemm(c'N', c'C', n, j, rank, one, vf, n, vt, rank, zero, v, ldv)
    return j


cdef int lr_compress(int method, int m, int n, scalar* a, int lda, double tol, int max_rank,
                     uint64_t seed, int power, scalar* u, int ldu, scalar* v,
                     int ldv) noexcept nogil:
    """A ≈ U Vᴴ by ``method`` (LR_RRQR, LR_SVD, LR_RANDOMIZED); see the file's header."""
    if method == LR_SVD:
        return lr_svd(m, n, a, lda, tol, max_rank, u, ldu, v, ldv)
    elif method == LR_RANDOMIZED:
        return lr_randomized(m, n, a, lda, tol, max_rank, seed, power, u, ldu, v, ldv)
    return lr_rrqr(m, n, a, lda, tol, max_rank, u, ldu, v, ldv)


# ----------------------------------------------------------- low-rank sum, recompressed


cdef int lr_add(int method, int m, int n, int r1, scalar* u1, int ldu1, scalar* v1, int ldv1,
                int r2, scalar alpha, scalar* u2, int ldu2, scalar* v2, int ldv2, double tol,
                int max_rank, uint64_t seed, int power, scalar* u, int ldu, scalar* v,
                int ldv) noexcept nogil:
    """U Vᴴ ≈ U₁V₁ᴴ + alpha U₂V₂ᴴ at tolerance tol (PaStiX's rradd), m x n.

    [U₁ alpha U₂] = Q_u R_u and [V₁ V₂] = Q_v R_v, so the sum is Q_u (R_u R_vᴴ) Q_vᴴ;
    the small core R_u R_vᴴ (at most (r₁+r₂)²) is compressed by ``method`` at tol, which
    Q_u and Q_v, orthonormal, carry over unchanged; its factors are multiplied back.
    U and V must not overlap the inputs. Returns the rank, or a code as lr_compress.
    """
    cdef int s = r1 + r2, su, sv, cap, lwork, r
    cdef scalar q = 0
    cdef size_t s_uc, s_vc, s_ru, s_rv, s_m, s_um, s_vm, s_tu, s_tv
    cdef char* base
    max_rank = clamp_rank(m, n, max_rank)
    if s <= 0 or m <= 0 or n <= 0:
        return 0
    su = min(m, s)
    sv = min(n, s)
    cap = max(1, min(max_rank, su, sv))
    geqrf(m, s, u1, m, &q, &q, -1)
    lwork = query_size(q)
    geqrf(n, s, v1, n, &q, &q, -1)
    lwork = max(lwork, query_size(q))
    ungqr(m, su, su, u1, m, &q, &q, -1)
    lwork = max(lwork, query_size(q))
    ungqr(n, sv, sv, v1, n, &q, &q, -1)
    lwork = max(lwork, query_size(q))
    s_uc = aligned(<size_t>m * s * sizeof(scalar))
    s_vc = aligned(<size_t>n * s * sizeof(scalar))
    s_ru = aligned(<size_t>su * s * sizeof(scalar))
    s_rv = aligned(<size_t>sv * s * sizeof(scalar))
    s_m = aligned(<size_t>su * sv * sizeof(scalar))
    s_um = aligned(<size_t>su * cap * sizeof(scalar))
    s_vm = aligned(<size_t>sv * cap * sizeof(scalar))
    s_tu = aligned(<size_t>su * sizeof(scalar))
    s_tv = aligned(<size_t>sv * sizeof(scalar))
    base = <char*>malloc(s_uc + s_vc + s_ru + s_rv + s_m + s_um + s_vm + s_tu + s_tv
                         + <size_t>lwork * sizeof(scalar))
    if base == NULL:
        return LR_NOMEM
    r = add_in(method, m, n, r1, u1, ldu1, v1, ldv1, r2, alpha, u2, ldu2, v2, ldv2, tol,
               min(max_rank, su, sv), seed, power, u, ldu, v, ldv,
               <scalar*>base,
               <scalar*>(base + s_uc),
               <scalar*>(base + s_uc + s_vc),
               <scalar*>(base + s_uc + s_vc + s_ru),
               <scalar*>(base + s_uc + s_vc + s_ru + s_rv),
               <scalar*>(base + s_uc + s_vc + s_ru + s_rv + s_m),
               <scalar*>(base + s_uc + s_vc + s_ru + s_rv + s_m + s_um),
               <scalar*>(base + s_uc + s_vc + s_ru + s_rv + s_m + s_um + s_vm),
               <scalar*>(base + s_uc + s_vc + s_ru + s_rv + s_m + s_um + s_vm + s_tu),
               <scalar*>(base + s_uc + s_vc + s_ru + s_rv + s_m + s_um + s_vm + s_tu + s_tv),
               lwork)
    free(base)
    return r


cdef int add_in(int method, int m, int n, int r1, scalar* u1, int ldu1, scalar* v1, int ldv1,
                int r2, scalar alpha, scalar* u2, int ldu2, scalar* v2, int ldv2, double tol,
                int core_rank, uint64_t seed, int power, scalar* u, int ldu, scalar* v,
                int ldv,
                scalar* uc, scalar* vc, scalar* ru, scalar* rv, scalar* core, scalar* um,
                scalar* vm, scalar* tauu, scalar* tauv, scalar* work,
                int lwork) noexcept nogil:
    cdef int s = r1 + r2, su = min(m, s), sv = min(n, s), i, j, r
    cdef scalar one = 1, zero = 0
    cdef scalar* col
    copy_tile(m, r1, u1, ldu1, uc, m)
    for j in range(r2):
        col = uc + <int64_t>(r1 + j) * m
        for i in range(m):
            col[i] = alpha * u2[i + <int64_t>j * ldu2]
    copy_tile(n, r1, v1, ldv1, vc, n)
    copy_tile(n, r2, v2, ldv2, vc + <int64_t>r1 * n, n)
    geqrf(m, s, uc, m, tauu, work, lwork)
    geqrf(n, s, vc, n, tauv, work, lwork)
    upper_part(su, s, uc, m, ru, su)
    upper_part(sv, s, vc, n, rv, sv)
    gemm(c'N', c'C', su, sv, s, one, ru, su, rv, sv, zero, core, su)
    r = lr_compress(method, su, sv, core, su, tol, core_rank, seed, power, um, su, vm, sv)
    if r <= 0:
        return r
    ungqr(m, su, su, uc, m, tauu, work, lwork)
    gemm(c'N', c'N', m, r, su, one, uc, m, um, su, zero, u, ldu)
    ungqr(n, sv, sv, vc, n, tauv, work, lwork)
    gemm(c'N', c'N', n, r, sv, one, vc, n, vm, sv, zero, v, ldv)
    return r


# ------------------------------------------------------------------ Python entry points


def _lowrank_compress(int method, const scalar[::1, :] a, double tol, int max_rank,
                      uint64_t seed, int power, scalar[::1, :] u, scalar[::1, :] v):
    """lr_compress on arrays (Fortran order, non-empty; U, V sized by the caller)."""
    cdef int r
    with nogil:
        r = lr_compress(method, a.shape[0], a.shape[1], <scalar*>&a[0, 0], a.shape[0], tol,
                        max_rank, seed, power, &u[0, 0], u.shape[0], &v[0, 0], v.shape[0])
    return r


def _lowrank_add(int method, const scalar[::1, :] u1, const scalar[::1, :] v1, int r1,
                 const scalar[::1, :] u2, const scalar[::1, :] v2, int r2, double alpha_re,
                 double alpha_im, double tol, int max_rank, uint64_t seed, int power,
                 scalar[::1, :] u, scalar[::1, :] v):
    """lr_add on arrays (Fortran order, at least one column each: r1, r2 say how many
    are read)."""
    cdef int r
    cdef scalar alpha = alpha_re
    if scalar is cfloat or scalar is cdouble:
        set_real(&alpha, 1, alpha_im)
    with nogil:
        r = lr_add(method, u1.shape[0], v1.shape[0], r1, <scalar*>&u1[0, 0], u1.shape[0],
                   <scalar*>&v1[0, 0], v1.shape[0], r2, alpha, <scalar*>&u2[0, 0],
                   u2.shape[0], <scalar*>&v2[0, 0], v2.shape[0], tol, max_rank, seed, power,
                   &u[0, 0], u.shape[0], &v[0, 0], v.shape[0])
    return r


def _lowrank_array(x, name):
    """``x`` as a Fortran-ordered 2-D array of one of the four dtypes, checked finite."""
    a = np.asarray(x)
    if a.dtype not in DTYPE_CODES:
        raise InvalidInputError(
            f"{name} has dtype {a.dtype}; the low-rank kernels take float32, float64, "
            "complex64 or complex128")
    if a.ndim != 2:
        raise InvalidInputError(f"{name} must be 2-D, got shape {a.shape}")
    if max(a.shape) > 2**31 - 1:
        raise InvalidInputError(f"{name} has a dimension above 2**31 - 1: {a.shape}")
    if not np.isfinite(a).all():
        raise InvalidInputError(f"{name} has NaN or infinite entries")
    return np.asfortranarray(a)


def _lowrank_options(tol, method, max_rank, seed, power, k):
    """The checked (tol, method code, rank cap, seed, power) of a low-rank call;
    k = min(m, n)."""
    try:
        tol = float(tol)
    except (TypeError, ValueError):
        raise InvalidInputError(f"tol must be a real number, got {tol!r}") from None
    if not tol >= 0:
        raise InvalidInputError(f"tol must be nonnegative (an absolute Frobenius norm), "
                                f"got {tol!r}")
    if method not in LOWRANK_METHODS:
        raise InvalidInputError(f"unknown low-rank method {method!r}; expected one of "
                                f"{', '.join(map(repr, LOWRANK_METHODS))}")
    if max_rank is None:
        max_rank = -1
    if isinstance(max_rank, (bool, np.bool_)) or not isinstance(max_rank, (int, np.integer)):
        raise InvalidInputError(f"max_rank must be an integer (negative: no limit), "
                                f"got {max_rank!r}")
    cap = k if max_rank < 0 or max_rank > k else int(max_rank)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) \
            or not 0 <= seed < 2**64:
        raise InvalidInputError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    if isinstance(power, (bool, np.bool_)) or not isinstance(power, (int, np.integer)) \
            or not 0 <= power <= 16:
        raise InvalidInputError(f"power must be an integer in [0, 16], got {power!r}")
    return tol, LOWRANK_METHODS[method], cap, int(seed), int(power)


def _lowrank_result(int r, U, V):
    if r == LR_TOO_LARGE:
        return None
    if r == LR_NOMEM:
        raise MemoryError("cannot allocate the low-rank compression workspace")
    if r < 0:
        raise np.linalg.LinAlgError("the SVD did not converge (LAPACK gesvd)")
    if r == U.shape[1]:
        return U, V
    return U[:, :r].copy(order="F"), V[:, :r].copy(order="F")


def lowrank_compress(A, tol, method="rrqr", max_rank=-1, seed=0, power=POWER):
    """A low-rank approximation A ≈ U Vᴴ with ‖A - U Vᴴ‖_F ≤ tol.

    Parameters
    ----------
    A : (m, n) array_like
        float32, float64, complex64 or complex128; not modified.
    tol : float
        Absolute bound on the Frobenius norm of the residual (scale it by ‖A‖ for a
        relative one).
    method : {"rrqr", "svd", "randomized"}
        Column-pivoted QR stopped at the tolerance (fast, rank near optimal); truncated
        SVD (optimal rank, the most work); adaptive randomized range finder in blocks of
        16 Gaussian vectors (passes over A in BLAS-3, rank near optimal where the
        spectrum decays).
    max_rank : int, optional
        Largest rank worth keeping; negative: min(m, n).
    seed : int, optional
        Seed of the randomized method's test matrices (results are reproducible).
    power : int, optional
        Randomized method: power iterations per block, each one more pass over A
        each way; they bring the rank closer to the SVD's where the spectrum decays
        slowly.

    Returns
    -------
    (U, V) or None
        U (m, r) with orthonormal columns and V (n, r) = Aᴴ U, Fortran ordered, of A's
        dtype; None when the tolerance needs a rank above ``max_rank``.

    Examples
    --------
    >>> import numpy as np
    >>> from pastixpy._numeric import lowrank_compress
    >>> rng = np.random.default_rng(0)
    >>> A = rng.standard_normal((40, 3)) @ rng.standard_normal((3, 30))
    >>> U, V = lowrank_compress(A, 1e-10 * np.linalg.norm(A))
    >>> U.shape[1], bool(np.linalg.norm(A - U @ V.conj().T) <= 1e-10 * np.linalg.norm(A))
    (3, True)
    """
    A = _lowrank_array(A, "A")
    m, n = A.shape
    tol, code, cap, seed, power = _lowrank_options(tol, method, max_rank, seed, power,
                                                   min(m, n))
    if m == 0 or n == 0:
        return np.zeros((m, 0), A.dtype, order="F"), np.zeros((n, 0), A.dtype, order="F")
    U = np.empty((m, max(cap, 1)), A.dtype, order="F")
    V = np.empty((n, max(cap, 1)), A.dtype, order="F")
    return _lowrank_result(_lowrank_compress(code, A, tol, cap, seed, power, U, V), U, V)


def lowrank_add(U1, V1, U2, V2, alpha, tol, max_rank=-1, method="svd", seed=0, power=POWER):
    """U Vᴴ ≈ U1 V1ᴴ + alpha U2 V2ᴴ, recompressed: ‖U1V1ᴴ + alpha U2V2ᴴ - UVᴴ‖_F ≤ tol.

    Parameters
    ----------
    U1, V1 : (m, r1), (n, r1) arrays
    U2, V2 : (m, r2), (n, r2) arrays
        The two low-rank terms, all four of one dtype (float32, float64, complex64,
        complex128). Their columns need not be orthonormal, nor the ranks minimal.
    alpha : scalar
        Multiplies the second term (complex only with a complex dtype).
    tol : float
        Absolute bound on the Frobenius norm of the error.
    max_rank : int, optional
        Largest rank worth keeping; negative: min(m, n).
    method : {"svd", "rrqr", "randomized"}
        How the (r1 + r2)-square core is compressed (see :func:`lowrank_compress`).
    seed, power : int, optional
        For ``method="randomized"`` (see :func:`lowrank_compress`).

    Returns
    -------
    (U, V) or None
        U (m, r) with orthonormal columns and V (n, r); None when the sum needs a rank
        above ``max_rank``.
    """
    arrays = [_lowrank_array(x, name) for x, name in
              ((U1, "U1"), (V1, "V1"), (U2, "U2"), (V2, "V2"))]
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) > 1:
        raise InvalidInputError("U1, V1, U2, V2 must share one dtype, got "
                                + ", ".join(str(a.dtype) for a in arrays))
    U1, V1, U2, V2 = arrays
    dtype = U1.dtype
    (m, r1), (n, r1v), (m2, r2), (n2, r2v) = U1.shape, V1.shape, U2.shape, V2.shape
    if r1v != r1 or r2v != r2 or m2 != m or n2 != n:
        raise InvalidInputError(
            f"the terms' shapes do not match: U1 {U1.shape}, V1 {V1.shape}, U2 {U2.shape}, "
            f"V2 {V2.shape} (expected U1 (m, r1), V1 (n, r1), U2 (m, r2), V2 (n, r2))")
    try:
        alpha = complex(alpha)
    except (TypeError, ValueError):
        raise InvalidInputError(f"alpha must be a number, got {alpha!r}") from None
    if not (np.isfinite(alpha.real) and np.isfinite(alpha.imag)):
        raise InvalidInputError(f"alpha must be finite, got {alpha!r}")
    if alpha.imag != 0 and dtype.kind != "c":
        raise InvalidInputError(f"alpha is complex ({alpha!r}) but the terms are {dtype}")
    tol, code, cap, seed, power = _lowrank_options(tol, method, max_rank, seed, power,
                                                   min(m, n))
    if m == 0 or n == 0:
        return np.zeros((m, 0), dtype, order="F"), np.zeros((n, 0), dtype, order="F")
    # A term without columns still passes a valid pointer; r1, r2 say what is read.
    if r1 == 0:
        U1, V1 = np.zeros((m, 1), dtype, order="F"), np.zeros((n, 1), dtype, order="F")
    if r2 == 0:
        U2, V2 = np.zeros((m, 1), dtype, order="F"), np.zeros((n, 1), dtype, order="F")
    U = np.empty((m, max(cap, 1)), dtype, order="F")
    V = np.empty((n, max(cap, 1)), dtype, order="F")
    r = _lowrank_add(code, U1, V1, r1, U2, V2, r2, alpha.real, alpha.imag, tol, cap, seed,
                     power, U, V)
    return _lowrank_result(r, U, V)
