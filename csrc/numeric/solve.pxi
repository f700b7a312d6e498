# The triangular sweeps over the panels: forward (L, or Uᵀ), diagonal (D and its 2x2
# blocks), backward (Lᵀ, Lᴴ or U), on any number of right-hand sides, on several threads
# over disjoint subtrees of the block tree. Panels are reached through the storage
# descriptors; which factor holds the diagonal blocks and which the off-diagonal parts,
# and the ops on them, arrive as parameters (a Sweep, made by pastixpy/kinds.py).
#
# Solves work on X of shape (n, nrhs) in row-major order: the right-hand sides of one
# unknown are contiguous, so the rows of a blok are one run to scatter or gather. The
# BLAS see the nrhs x n column-major transpose Y = Xᵀ: op(A)⁻¹ X becomes Y op(A)⁻ᵀ
# (trsm from the right), op(A) X becomes Y op(A)ᵀ. With one right-hand side both
# layouts are the same vector, and gemv/trsv read each panel once.

# How far ahead of the backward solve, in bytes, its panels are prefetched.
cdef enum:
    PREFETCH_AHEAD = 8192


cdef inline const char* prefetch_below(const char* start, const char* low) noexcept nogil:
    """Prefetch the PREFETCH_AHEAD bytes below ``start`` a cache line at a time, downwards,
    from ``low`` (how far down is already asked for) on; returns the new low. A ``low``
    above ``start`` or more than PREFETCH_AHEAD below it belongs to another allocation
    group: the walk starts again at ``start``."""
    cdef const char* target = start - PREFETCH_AHEAD
    if low > start or low < target:
        low = start
    while low > target:
        low -= 64
        pastixpy_prefetch(low, 0, 3)
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
# narrow); wider ones by trsm and gemm on a work product, where the BLAS's kernels win
# (16 already gained less than 8 and 12: docs/design.md).
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
    # One triangular sweep over the panels: the block structure, the storage, which factor
    # holds the diagonal blocks and which the off-diagonal parts, and the ops on them.
    Blocks B
    const CblkStore* cblk
    bint diag_u  # the diagonal blocks are read from Uᵀ's panels (LU's Uᵀ sweep), else L's
    bint off_u  # the off-diagonal parts likewise
    const idx_t* lperm  # local pivots, NULL for none
    int nrhs
    char uplo, trans, unit, offtrans  # as BLAS: diagonal block's uplo/trans/diag, off's trans
    # Parallel forward sweep: the rows of cblks with topoff[f] >= 0 (the top of the
    # tree, shared by the threads' subtrees) go to the row topoff[f] of a private
    # buffer instead of X. NULL for none.
    const idx_t* topoff


cdef inline const scalar* diag_panel(const Sweep* S, idx_t k, scalar* like) noexcept nogil:
    return <const scalar*>(S.cblk[k].ucoef if S.diag_u else S.cblk[k].lcoef)


cdef inline const scalar* off_panel(const Sweep* S, idx_t k, scalar* like) noexcept nogil:
    """Cblk k's panel holding its off-diagonal part (from its row 0)."""
    return <const scalar*>(S.cblk[k].ucoef if S.off_u else S.cblk[k].lcoef)


cdef Sweep make_sweep(Storage storage, sweep, int nrhs, int code) except *:
    """The Sweep for ``storage`` and a sweep description (kinds.Sweep: ``diag`` and ``off``
    "L" or "U", ``uplo``, ``trans``, ``unit``, ``offtrans``, ``lperm``)."""
    cdef Sweep S
    cdef const idx_t[::1] lperm = sweep.lperm
    storage.check(storage.structure, code, False)
    if (sweep.diag == "U" or sweep.off == "U") and not storage.two_factors:
        raise ValueError("this storage holds no U factor")
    S.B = storage.structure.B
    S.cblk = storage.cblk
    S.diag_u = sweep.diag == "U"
    S.off_u = sweep.off == "U"
    if lperm.shape[0] and lperm.shape[0] != S.B.fcol[S.B.ncblk]:
        raise ValueError("the sweep's local pivots do not match the matrix")
    S.lperm = &lperm[0] if lperm.shape[0] else NULL
    S.nrhs = nrhs
    S.uplo, S.trans = ord(sweep.uplo), ord(sweep.trans)
    S.unit, S.offtrans = c'U' if sweep.unit else c'N', ord(sweep.offtrans)
    S.topoff = NULL
    return S


cdef idx_t sweep_buffer_rows(const Sweep* S, const idx_t* cblks, idx_t count) noexcept nogil:
    """Rows x right-hand sides of the work buffer a sweep over these cblks needs."""
    cdef idx_t i, k, rows = 1
    for i in range(count):
        k = cblks[i]
        rows = max(rows, max(S.B.stride[k], cblk_width(&S.B, k)) * S.nrhs)
    return rows


cdef inline scalar* rows_faced(const Sweep* S, scalar* X, idx_t b, scalar* Y) noexcept nogil:
    """Where the forward sweep subtracts blok b's product: X's rows, or with a private
    buffer Y, Y's rows for the cblks at the top of the tree."""
    cdef idx_t f = S.B.fcblk[b]
    if Y != NULL and S.topoff[f] >= 0:
        return Y + (S.topoff[f] + S.B.frow[b] - S.B.fcol[f]) * S.nrhs
    return X + S.B.frow[b] * S.nrhs


cdef inline const Tile* off_tiles(const Sweep* S, idx_t k) noexcept nogil:
    """A compressed cblk k's tiles holding its off-diagonal part."""
    return S.cblk[k].utiles if S.off_u else S.cblk[k].ltiles


cdef void forward_tiles(const Sweep* S, scalar* X, idx_t k, scalar* tmp, scalar* Y) noexcept nogil:
    """Forward step's products of a compressed cblk k (its diagonal block solved): each
    tile times the solution, subtracted from the rows it faces. In the transposed
    layout (nrhs x rows): dst -= X_k Tᵀ, T = U Bt through the rank, or dense."""
    cdef scalar one = 1, mone = -1, zero = 0
    cdef idx_t b, b0 = S.B.bloknum[k] + 1
    cdef int w = cblk_width(&S.B, k), h, r, nrhs = S.nrhs
    cdef scalar* xb = X + S.B.fcol[k] * nrhs
    cdef const Tile* tiles = off_tiles(S, k)
    cdef const Tile* t
    for b in range(b0, S.B.bloknum[k + 1]):
        t = &tiles[b - b0]
        h = blok_rows(&S.B, b)
        if nrhs == 1:
            # One right-hand side: matrix-vector products (the memory-bound kernel).
            if t.rank < 0:
                gemv(c'N', h, w, mone, <scalar*>t.u, h, xb, one, rows_faced(S, X, b, Y))
            elif t.rank > 0:
                gemv(c'N', t.rank, w, one, <scalar*>t.bt, t.rank, xb, zero, tmp)
                gemv(c'N', h, t.rank, mone, <scalar*>t.u, h, tmp, one, rows_faced(S, X, b, Y))
        elif t.rank < 0:
            gemm(c'N', c'T', nrhs, h, w, mone, xb, nrhs, <scalar*>t.u, h, one,
                 rows_faced(S, X, b, Y), nrhs)
        elif t.rank > 0:
            r = t.rank
            gemm(c'N', c'T', nrhs, r, w, one, xb, nrhs, <scalar*>t.bt, r, zero, tmp, nrhs)
            gemm(c'N', c'T', nrhs, h, r, mone, tmp, nrhs, <scalar*>t.u, h, one,
                 rows_faced(S, X, b, Y), nrhs)


cdef void backward_tiles(const Sweep* S, scalar* X, idx_t k, scalar* tmp) noexcept nogil:
    """Backward step's products of a compressed cblk k: X_k -= op(T) X_b for each tile
    T = U Bt (op(T) = op(Bt) op(U)) or dense. One right-hand side takes ``offtrans``
    as it is; several come with 'T' (solve_backward turns 'C' into conjugations) and
    run in the transposed layout: X_kᵀ -= X_bᵀ T."""
    cdef scalar one = 1, mone = -1, zero = 0
    cdef idx_t b, b0 = S.B.bloknum[k] + 1
    cdef int w = cblk_width(&S.B, k), h, r, nrhs = S.nrhs
    cdef scalar* xb = X + S.B.fcol[k] * nrhs
    cdef scalar* xr
    cdef const Tile* tiles = off_tiles(S, k)
    cdef const Tile* t
    for b in range(b0, S.B.bloknum[k + 1]):
        t = &tiles[b - b0]
        h = blok_rows(&S.B, b)
        r = t.rank
        xr = X + S.B.frow[b] * nrhs
        if r == 0:
            continue
        if nrhs == 1:
            if r < 0:
                gemv(S.offtrans, h, w, mone, <scalar*>t.u, h, xr, one, xb)
            else:
                gemv(S.offtrans, h, r, one, <scalar*>t.u, h, xr, zero, tmp)
                gemv(S.offtrans, r, w, mone, <scalar*>t.bt, r, tmp, one, xb)
        elif r < 0:
            gemm(c'N', c'N', nrhs, w, h, mone, xr, nrhs, <scalar*>t.u, h, one, xb, nrhs)
        else:
            gemm(c'N', c'N', nrhs, r, h, one, xr, nrhs, <scalar*>t.u, h, zero, tmp, nrhs)
            gemm(c'N', c'N', nrhs, w, r, mone, tmp, nrhs, <scalar*>t.bt, r, one, xb, nrhs)


cdef void forward_cblk(const Sweep* S, scalar* X, idx_t k, scalar* tmp, scalar* Y) noexcept nogil:
    """Forward step of cblk k: permute by lperm, solve with the diagonal block, then
    subtract the off-diagonal panel times the solution from the rows it faces."""
    cdef scalar one = 1, zero = 0
    cdef idx_t fc = S.B.fcol[k], b, i, r, f
    cdef int w = cblk_width(&S.B, k), m = S.B.stride[k], h, nrhs = S.nrhs
    cdef bint direct = rows_direct(w, nrhs)
    cdef const scalar* diag = diag_panel(S, k, X)
    cdef const scalar* off
    cdef scalar* xb = X + fc * nrhs
    cdef scalar* src
    cdef scalar* dst
    if S.lperm != NULL:
        permute_rows(X, nrhs, fc, w, S.lperm, False, tmp)
    solve_diag_block(S.uplo, S.trans, S.unit, w, nrhs, <scalar*>diag, S.cblk[k].ld, xb)
    if m == w:
        return
    if S.cblk[k].storage == LOWRANK:
        forward_tiles(S, X, k, tmp, Y)
        return
    off = off_panel(S, k, X) + w
    # Unless direct: tmp = L21 X_k, (m - w) x nrhs. With several right-hand sides
    # it is made column-major, L21 being gemm's untransposed A (packed fastest; as
    # the transposed B of the row-major product, its packing dominated), and the
    # scatter transposes it.
    if nrhs == 1:
        gemv(c'N', m - w, w, one, <scalar*>off, m, xb, zero, tmp)
    elif not direct:
        gemm(c'N', c'T', m - w, nrhs, w, one, <scalar*>off, m, xb, nrhs, zero, tmp, m - w)
    for b in range(S.B.bloknum[k] + 1, S.B.bloknum[k + 1]):
        h = blok_rows(&S.B, b)
        dst = rows_faced(S, X, b, Y)
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


cdef void backward_cblk(const Sweep* S, scalar* X, idx_t k, scalar* tmp) noexcept nogil:
    """Backward step of cblk k: gather the rows it faces, subtract the off-diagonal
    panel, transposed, times them, solve with the diagonal block, undo lperm."""
    cdef scalar one = 1, mone = -1
    cdef idx_t fc = S.B.fcol[k], b, i
    cdef int w = cblk_width(&S.B, k), m = S.B.stride[k], h, nrhs = S.nrhs
    cdef const scalar* diag = diag_panel(S, k, X)
    cdef const scalar* off = off_panel(S, k, X) + w
    cdef scalar* xb = X + fc * nrhs
    cdef scalar* src
    cdef scalar* dst
    if m > w and S.cblk[k].storage == LOWRANK:
        backward_tiles(S, X, k, tmp)
    elif m > w and rows_direct(w, nrhs):
        # Straight from the rows faced, blok by blok.
        for b in range(S.B.bloknum[k] + 1, S.B.bloknum[k + 1]):
            rows_gemm_t(blok_rows(&S.B, b), w, nrhs, off + (S.B.bcoef[b] - w), m,
                        X + S.B.frow[b] * nrhs, xb)
    elif m > w:
        # Gathered into tmp, then one product.
        for b in range(S.B.bloknum[k] + 1, S.B.bloknum[k + 1]):
            h = blok_rows(&S.B, b) * nrhs
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
    solve_diag_block(S.uplo, S.trans, S.unit, w, nrhs, <scalar*>diag, S.cblk[k].ld, xb)
    if S.lperm != NULL:
        permute_rows(X, nrhs, fc, w, S.lperm, True, tmp)


cdef void backward_range(const Sweep* S, scalar* X, const idx_t* cblks, idx_t first,
                         idx_t end, scalar* tmp) noexcept nogil:
    """Backward steps of cblks[end-1] down to cblks[first], prefetching the panels read
    next: the sweep walks them from the last to the first, but reads each from its
    start, across small panels not a stream the hardware prefetcher follows."""
    cdef idx_t i, k
    cdef const char* low_off = NULL
    cdef const char* low_diag = NULL
    for i in range(end - 1, first - 1, -1):
        k = cblks[i]
        if S.cblk[k].storage == LOWRANK:
            backward_cblk(S, X, k, tmp)
            continue
        low_off = prefetch_below(<const char*>off_panel(S, k, X), low_off)
        if S.diag_u != S.off_u:  # LU's U sweep: the diagonal blocks are in the other factor
            low_diag = prefetch_below(<const char*>diag_panel(S, k, X), low_diag)
        backward_cblk(S, X, k, tmp)


cdef void check_plan(const idx_t[::1] cblks, const idx_t[::1] ptr, idx_t ncblk,
                     Storage storage) except *:
    """Raise unless ``ptr`` splits ``cblks`` and each of them is held in ``storage``
    (a distributed solve's plan names this owner's cblks only)."""
    cdef idx_t i
    if ptr.shape[0] < 2 or ptr[0] != 0 or ptr[ptr.shape[0] - 1] != cblks.shape[0]:
        raise ValueError("solve: ptr does not split cblks")
    for i in range(ptr.shape[0] - 1):
        if ptr[i + 1] < ptr[i]:
            raise ValueError("solve: ptr does not split cblks")
    for i in range(cblks.shape[0]):
        if cblks[i] < 0 or cblks[i] >= ncblk:
            raise ValueError(f"solve: cblk {cblks[i]} out of range")
        if storage.cblk[cblks[i]].storage != DENSE and storage.cblk[cblks[i]].storage != LOWRANK:
            raise ValueError(f"solve: cblk {cblks[i]} is not held here")


def solve_forward(scalar[::1] X, int nrhs, Storage storage, sweep, plan):
    """Forward substitution on X (n x nrhs, row-major, pivot order), cblk by cblk.

    ``plan`` (a SolvePlan: ``cblks``, ``ptr``, ``topoff``, ``ntop``): thread t takes
    ``cblks[ptr[t]:ptr[t + 1]]`` in that order (children before parents); there are
    ``len(ptr) - 1`` threads, and BLAS should then be limited to one thread by the
    caller. The threads' cblks must be disjoint subtrees: their updates to other
    cblks' rows go, for threads after the first, to private buffers of ``ntop`` rows
    (cblk f's rows at row ``topoff[f]``) added into X at the end. Per cblk: permute by
    the sweep's ``lperm`` (local pivots; empty to skip), solve with the diagonal block
    (``uplo``, ``trans`` in 'N'/'T', ``unit`` as for trsm), subtract the off-diagonal
    panel times the solution from the rows it faces.
    """
    cdef const idx_t[::1] cblks = plan.cblks
    cdef const idx_t[::1] ptr = plan.ptr
    cdef const idx_t[::1] topoff = plan.topoff
    cdef idx_t ntop = plan.ntop
    cdef scalar* like = NULL
    cdef Sweep S = make_sweep(storage, sweep, nrhs, scalar_code(like))
    cdef idx_t ncblk = S.B.ncblk, n = S.B.fcol[ncblk], rows, i, t, team, nt = ptr.shape[0] - 1
    cdef scalar* buffers
    cdef scalar* tmp
    cdef scalar* Y
    if S.trans == c'C':
        raise ValueError("solve_forward: trans must be 'N' or 'T'")
    check_plan(cblks, ptr, ncblk, storage)
    if X.shape[0] < n * nrhs:
        raise ValueError("solve_forward: X is smaller than n x nrhs")
    if nt > 1:
        if topoff.shape[0] != ncblk:
            raise ValueError("solve_forward: topoff needs one entry per cblk")
        for i in range(ncblk):
            if topoff[i] >= 0 and topoff[i] + S.B.fcol[i + 1] - S.B.fcol[i] > ntop:
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
                        add_rows(&X[S.B.fcol[i] * nrhs], Y + topoff[i] * nrhs,
                                 cblk_width(&S.B, i) * nrhs)
    free(buffers)


cdef inline void add_rows(scalar* dst, const scalar* src, idx_t size) noexcept nogil:
    cdef idx_t i
    for i in range(size):
        dst[i] += src[i]


def solve_backward(scalar[::1] X, int nrhs, Storage storage, sweep, plan):
    """Backward substitution on X (n x nrhs, row-major, pivot order), cblk by cblk.

    Thread t takes ``plan.cblks[ptr[t]:ptr[t + 1]]`` from the last to the first
    (parents before children); the threads' cblks must be disjoint subtrees, whose rows
    they alone write (the rows above, of their ancestors, are final). Per cblk: gather
    the rows it faces, subtract the off-diagonal panel transposed (``offtrans``: 'T' or
    'C') times them, solve with the diagonal block, then undo ``lperm``.

    Conjugate ops ('C'), with several right-hand sides, are solved as
    conj(op(A)⁻¹ X) = opᵀ(A)⁻¹ conj(X): then ``offtrans`` and ``trans`` must both be 'C'.
    """
    cdef const idx_t[::1] cblks = plan.cblks
    cdef const idx_t[::1] ptr = plan.ptr
    cdef scalar* like = NULL
    cdef Sweep S = make_sweep(storage, sweep, nrhs, scalar_code(like))
    cdef idx_t ncblk = S.B.ncblk, n = S.B.fcol[ncblk], rows, t, team, nt = ptr.shape[0] - 1
    cdef bint conj = False
    cdef scalar* buffers
    if S.offtrans == c'N':
        raise ValueError("solve_backward: offtrans must be 'T' or 'C'")
    if nrhs > 1 and (S.offtrans == c'C' or S.trans == c'C'):
        if S.offtrans != S.trans:
            raise ValueError("solve_backward: conjugate ops must be conjugate on both parts")
        conj = True
        S.offtrans = S.trans = c'T'
    check_plan(cblks, ptr, ncblk, storage)
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
            backward_range(&S, &X[0], &cblks[0], 0, cblks.shape[0], buffers)
    else:
        with nogil, parallel(num_threads=nt):
            t = threadid()  # slots as in solve_forward
            team = omp_get_num_threads()
            while t < nt:
                backward_range(&S, &X[0], &cblks[0], ptr[t], ptr[t + 1], buffers + t * rows)
                t = t + team
    with nogil:
        if conj:
            conjugate(&X[0], n * nrhs)
    free(buffers)


def solve_diagonal(scalar[::1] X, int nrhs, Storage storage, const scalar[::1] dsub, bint conj,
                   const signed char[::1] pivtype):
    """X ← D⁻¹ X (X row-major, pivot order) for the block diagonal D of an LDLᵀ/LDLᴴ
    factorization: its diagonal in the panels' diagonal blocks, its 2x2 blocks'
    off-diagonal entries in ``dsub``; on the rows of the cblks held here only."""
    cdef scalar* like = NULL
    cdef const Blocks* B = &storage.structure.B
    cdef idx_t ncblk = B.ncblk, k, fc, j, r, n = B.fcol[B.ncblk]
    cdef int w, m
    cdef const scalar* d
    cdef scalar* x
    cdef scalar d11, d21, d12, d22, det, x1, x2
    storage.check(storage.structure, scalar_code(like), False)
    if X.shape[0] < n * nrhs or dsub.shape[0] != n or pivtype.shape[0] != n:
        raise ValueError("solve_diagonal: the arrays do not match the matrix")
    with nogil:
        for k in range(ncblk):
            if storage.cblk[k].storage == ABSENT or storage.cblk[k].storage == FANIN:
                continue  # another owner's
            fc = B.fcol[k]
            w = cblk_width(B, k)
            m = storage.cblk[k].ld
            d = <const scalar*>storage.cblk[k].lcoef
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


def diagonal_entries(Storage storage, scalar[::1] out):
    """Write the diagonal of every cblk's diagonal block in L's panels into ``out``, in
    pivot order (L's for LLᵀ, D's for LDLᵀ, U's for LU); the entries of cblks held by
    another owner are left as they are."""
    cdef const Blocks* B = &storage.structure.B
    cdef idx_t k, j
    cdef const scalar* d
    cdef scalar* like = NULL
    storage.check(storage.structure, scalar_code(like), False)
    if out.shape[0] != B.fcol[B.ncblk]:
        raise ValueError("diagonal_entries: out needs one entry per column")
    with nogil:
        for k in range(B.ncblk):
            if storage.cblk[k].storage == ABSENT or storage.cblk[k].storage == FANIN:
                continue
            d = <const scalar*>storage.cblk[k].lcoef
            for j in range(cblk_width(B, k)):
                out[B.fcol[k] + j] = d[j + j * storage.cblk[k].ld]
