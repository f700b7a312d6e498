# A factored cblk's updates of the cblks it faces (right-looking): for each group of its
# off-diagonal bloks, target -= left · op(right) on the rows the bloks face. The kind
# arrives as parameters (Ops: which panels are left and right, whether Uᵀ is updated
# too, whether the top square is symmetric); the kernels are chosen by the storage of
# source and target, in apply_updates.


cdef enum:
    # Consecutive bloks of a cblk are updated by one gemm until they span this many
    # rows: the gemm packs the panel below them once instead of once per blok,
    # which dominated on the many thin bloks of nested-dissection separators.
    GROUP_ROWS = 64
    # A lone blok's update goes straight into the target panel for each run of at
    # least this many rows contiguous there; shorter runs are scattered from a product.
    DIRECT_ROWS = 64


cdef inline scalar* lpanel(const FactorState* P, idx_t k, scalar* like) noexcept nogil:
    """Cblk k's L panel (``like`` only picks the type)."""
    return <scalar*>P.cblk[k].lcoef


cdef inline scalar* upanel(const FactorState* P, idx_t k, scalar* like) noexcept nogil:
    """Cblk k's Uᵀ panel (LU)."""
    return <scalar*>P.cblk[k].ucoef


# ---------------------------------------------------------------------------- targets

cdef inline bint made_when_updated(const CblkStore* c) noexcept nogil:
    """Whether a cblk's panels are made at its first update: a just-in-time compressed
    cblk's (compress.pxi: panels made as they are needed, while earlier ones are being
    compressed and freed, keep the peak below the full-rank factors'), and a fan-in
    panel (a distributed factorization's sums of updates to another owner's cblk)."""
    return c.lcoef == NULL and (
        (c.compress == JUST_IN_TIME and c.storage == DENSE) or c.storage == FANIN)


cdef int ensure_panels(const FactorState* P, idx_t f, scalar* like) noexcept nogil:
    """Give cblk f its panel(s), zeroed, where they are made at its first update
    (:func:`made_when_updated`) and it has none yet. The caller holds f's lock
    (threads). Returns -1 when the memory could not be allocated."""
    cdef CblkStore* c = &P.cblk[f]
    cdef size_t size = <size_t>P.B.stride[f] * cblk_width(&P.B, f) * sizeof(scalar)
    if not made_when_updated(c):
        return 0
    c.lcoef = calloc(max(size, 1), 1)
    if c.lcoef == NULL:
        return -1
    touch_pages(<char*>c.lcoef, size, 1)
    if P.ops.two_factors:
        c.ucoef = calloc(max(size, 1), 1)
        if c.ucoef == NULL:
            free(c.lcoef)
            c.lcoef = NULL
            return -1
        touch_pages(<char*>c.ucoef, size, 1)
    return 0


cdef int targets_ready(Scheduler* S, const FactorState* P, idx_t k, scalar* like) noexcept nogil:
    """:func:`ensure_panels` for every cblk that cblk k's bloks face (under its lock
    with a scheduler), before k sends its updates. Returns -1 when memory ran out."""
    cdef const Blocks* B = &P.B
    cdef idx_t b, f
    cdef int got = 0
    for b in range(B.bloknum[k] + 1, B.bloknum[k + 1]):
        f = B.fcblk[b]
        if not made_when_updated(&P.cblk[f]):
            continue
        if S != NULL:
            omp_set_lock(&S.locks[f])
        got = ensure_panels(P, f, like)
        if S != NULL:
            omp_unset_lock(&S.locks[f])
        if got < 0:
            return -1
    return 0


# ---------------------------------------------------------------------------- row runs

cdef idx_t row_runs(const Blocks* B, idx_t k, idx_t bfirst, idx_t f, idx_t* runs) noexcept nogil:
    """Where the rows of cblk k's bloks ``bfirst..`` lie in cblk f's panel (each lies inside
    one blok of f: closure). Consecutive bloks that also follow each other there make one
    run; ``runs`` gets a (first row in f's panel, height) pair per run, in k's row order.
    Returns the number of runs."""
    cdef idx_t b2, fb = B.bloknum[f], fend = B.bloknum[f + 1], nrun = 0, h2, dstrow
    for b2 in range(bfirst, B.bloknum[k + 1]):
        while fb < fend and B.lrow[fb] < B.frow[b2]:
            fb += 1
        h2 = blok_rows(B, b2)
        dstrow = B.bcoef[fb] + (B.frow[b2] - B.frow[fb])
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


cdef void scatter_sub(const Blocks* B, scalar* c, int ldc, idx_t rowbase, int ncols, idx_t k,
                      idx_t bfirst, idx_t b, idx_t f, scalar* target, idx_t* runs) noexcept nogil:
    """Subtract the update ``c`` of cblk k's bloks ``bfirst..`` (columns: the rows of blok b)
    from ``target``, a panel of cblk f. ``c``'s rows are k's bloks stacked from panel row
    ``rowbase``; ``runs`` is scratch for :func:`row_runs` (2 entries per blok)."""
    cdef idx_t nrun
    if bfirst >= B.bloknum[k + 1]:
        return
    nrun = row_runs(B, k, bfirst, f, runs)
    subtract_runs(c + (B.bcoef[bfirst] - rowbase), ldc, ncols,
                  target + (B.frow[b] - B.fcol[f]) * B.stride[f], B.stride[f], runs, nrun)


cdef void scatter_sub_transposed(const Blocks* B, scalar* c, int ldc, idx_t rowbase, int ncols,
                                 idx_t bfirst, idx_t bend, idx_t b, idx_t f,
                                 scalar* target) noexcept nogil:
    """LU: subtract the Uᵀ update of bloks ``bfirst..bend-1`` of a cblk that, like blok b,
    face cblk f. Those rows are columns of f, so the entries belong to the upper
    triangle of f's diagonal block, stored transposed in ``target``, f's L panel."""
    cdef idx_t b2, i, j, h2, sf = B.stride[f], f0 = B.fcol[f]
    cdef scalar* src
    cdef scalar* dst
    for b2 in range(bfirst, bend):
        h2 = blok_rows(B, b2)
        src = c + (B.bcoef[b2] - rowbase)
        dst = target + (B.frow[b] - f0) + (B.frow[b2] - f0) * sf
        for i in range(h2):
            for j in range(ncols):
                dst[j + i * sf] -= src[i + j * ldc]


# ---------------------------------------------------------------------------- groups of bloks

cdef inline idx_t group_end(const Blocks* B, idx_t k, idx_t b) noexcept nogil:
    """One past the last blok of the group of cblk k's bloks that starts at blok b.

    A group takes consecutive bloks until they span ``GROUP_ROWS`` rows; a blok
    that tall by itself stands alone (it may be accumulated without a scatter)."""
    cdef idx_t e = b + 1, end = B.bloknum[k + 1]
    cdef idx_t rows = blok_rows(B, b)
    while e < end and rows < GROUP_ROWS and blok_rows(B, e) < GROUP_ROWS:
        rows += blok_rows(B, e)
        e += 1
    return e


cdef inline int group_rows(const Blocks* B, idx_t b, idx_t e) noexcept nogil:
    """Rows spanned by bloks b..e-1 of one cblk (they are stacked in its panel)."""
    return B.bcoef[e - 1] + blok_rows(B, e - 1) - B.bcoef[b]


cdef void workspace_sizes(const FactorState* P, idx_t k0, idx_t k1, size_t itemsize,
                          idx_t* sizes) noexcept nogil:
    """Scalars needed by one worker for cblks k0..k1-1: update products (``sizes[0]``),
    LDLᵀ's kept W = A21 L11⁻ᵀ (``sizes[1]``) and a scratch (``sizes[2]``) that holds
    Bunch-Kaufman's 2w + 2 scalars or LU's pivots while a panel is factored, then the
    scatters' row runs (2 indices per blok)."""
    cdef const Blocks* B = &P.B
    cdef idx_t k, b, e, w, smax = 1, rowsmax = 1, wmax = 0, nbmax = 0
    for k in range(k0, k1):
        w = cblk_width(B, k)
        wmax = max(wmax, w)
        nbmax = max(nbmax, B.bloknum[k + 1] - B.bloknum[k])
        rowsmax = max(rowsmax, (B.stride[k] - w) * w)
        b = B.bloknum[k] + 1
        while b < B.bloknum[k + 1]:
            e = group_end(B, k, b)
            smax = max(smax, (B.stride[k] - B.bcoef[b]) * group_rows(B, b, e))
            b = e
    # LU computes both of an update's products before scattering them.
    sizes[0] = 2 * smax if P.ops.two_factors else smax
    sizes[1] = rowsmax
    sizes[2] = max(2 * wmax + 2, (2 * nbmax * sizeof(idx_t)) // itemsize + 1)


# ---------------------------------------------------------------------------- dense kernels

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


cdef void update_single(const FactorState* P, idx_t k, idx_t b, scalar* work, scalar* wleft,
                        int ldw, idx_t* runs) noexcept nogil:
    """Blok b's update of cblk k when b is a group by itself, by :func:`update_rows` (no
    product of the whole panel below b, and mostly no scatter). LDLᵀ: ``wleft`` is
    W = L D from b's rows down (leading dimension ``ldw``)."""
    cdef const Blocks* B = &P.B
    cdef scalar one = 1, mone = -1
    cdef idx_t f = B.fcblk[b], sf = B.stride[f], cb = B.bcoef[b], e, end = B.bloknum[k + 1]
    cdef idx_t f0 = B.fcol[f], nrun, col = (B.frow[b] - f0) * sf
    cdef int w = cblk_width(B, k), m = B.stride[k], h = blok_rows(B, b)
    cdef scalar* base = lpanel(P, k, work)
    cdef scalar* left = base + cb
    cdef int ldl = m
    cdef scalar* ubase
    # b's rows are columns of f: their part of f's panel(s).
    cdef scalar* dst = lpanel(P, f, work) + col
    nrun = row_runs(B, k, b, f, runs)
    if P.ops.scaled_left:
        # LDLᵀ's left operand is W = A21 L11⁻ᵀ.
        left, ldl = wleft, ldw
    if not P.ops.two_factors:
        update_rows(left, ldl, base + cb, m, h, w, P.ops.tr, dst, sf, runs, nrun, work,
                    P.ops.symmetric_top)
        return
    ubase = upanel(P, k, work)
    update_rows(base + cb, m, ubase + cb, m, h, w, c'T', dst, sf, runs, nrun, work, False)
    # The Uᵀ rows of the later bloks facing f land in f's diagonal block above its
    # diagonal, which L's panel stores transposed.
    e = b + 1
    while e < end and B.fcblk[e] == f:
        gemm(c'N', c'T', h, blok_rows(B, e), w, mone, base + cb, m, ubase + B.bcoef[e], m, one,
             lpanel(P, f, work) + (B.frow[b] - f0) + (B.frow[e] - f0) * sf, sf)
        e += 1
    if e < end:
        nrun = row_runs(B, k, e, f, runs)
        update_rows(ubase + B.bcoef[e], m, base + cb, m, h, w, c'T', upanel(P, f, work) + col,
                    sf, runs, nrun, work, False)


cdef void update_products(const FactorState* P, idx_t k, idx_t b, idx_t e, scalar* wbuf,
                          scalar* work) noexcept nogil:
    """The update of cblk k's bloks b..e-1 into ``work`` (M x H, M the rows from b down,
    H those of the group): the rows from b down times the group's rows; LU also the
    Uᵀ products, at ``work + M H``."""
    cdef const Blocks* B = &P.B
    cdef scalar one = 1, zero = 0
    cdef int w = cblk_width(B, k), m = B.stride[k]
    cdef idx_t cb = B.bcoef[b]
    cdef int H = group_rows(B, b, e), M = m - cb
    cdef scalar* base = lpanel(P, k, work)
    cdef scalar* ubase
    cdef int i, j
    if P.ops.symmetric_top:
        # The group's own H x H is symmetric: its lower triangle, the upper zeroed
        # (scatters subtract it into the unused upper part of diagonal blocks).
        rank_k_lower(H, w, 1.0, base + cb, m, 0.0, work, M)
        for j in range(1, H):
            for i in range(j):
                work[i + j * M] = 0
        gemm(c'N', P.ops.tr, M - H, H, w, one, base + cb + H, m, base + cb, m, zero, work + H, M)
    elif P.ops.two_factors:
        ubase = upanel(P, k, work)
        gemm(c'N', c'T', M, H, w, one, base + cb, m, ubase + cb, m, zero, work, M)
        gemm(c'N', c'T', M, H, w, one, ubase + cb, m, base + cb, m, zero, work + M * H, M)
    else:
        gemm(c'N', P.ops.tr, M, H, w, one, wbuf + (cb - w), m - w, base + cb, m, zero, work, M)


cdef void update_scatter(const FactorState* P, idx_t k, idx_t b, idx_t g, int H, scalar* work,
                         idx_t* runs) noexcept nogil:
    """Subtract blok b's columns of the products of :func:`update_products` (group of H
    rows starting at blok g) from the panel(s) of the cblk blok b faces. ``runs``:
    scratch for :func:`scatter_sub`."""
    cdef const Blocks* B = &P.B
    cdef idx_t cg = B.bcoef[g]
    cdef int M = B.stride[k] - cg
    cdef scalar* c = work + (B.bcoef[b] - cg) * M
    scatter_blok(P, k, b, c, c + M * H, M, cg, runs)


cdef void scatter_blok(const FactorState* P, idx_t k, idx_t b, scalar* cl, scalar* cu, int ldc,
                       idx_t rowbase, idx_t* runs) noexcept nogil:
    """Subtract blok b's update of the cblk it faces, given as products (``cl``: L's, LU's
    ``cu``: Uᵀ's; blok b's rows and those below, h columns, leading dimension ``ldc``,
    their first row panel row ``rowbase`` of cblk k) from that cblk's panel(s)."""
    cdef const Blocks* B = &P.B
    cdef idx_t f = B.fcblk[b], e
    cdef int h = blok_rows(B, b)
    scatter_sub(B, cl, ldc, rowbase, h, k, b, b, f, lpanel(P, f, cl), runs)
    if P.ops.two_factors:
        # Later bloks facing f too land in f's diagonal block, above its diagonal.
        e = b + 1
        while e < B.bloknum[k + 1] and B.fcblk[e] == f:
            e += 1
        scatter_sub_transposed(B, cu, ldc, rowbase, h, b + 1, e, b, f, lpanel(P, f, cl))
        scatter_sub(B, cu, ldc, rowbase, h, k, e, b, f, upanel(P, f, cl), runs)


# ---------------------------------------------------------------------------- turns

cdef Deferred* defer_single(Scheduler* S, const FactorState* P, idx_t k, idx_t b, scalar* wbuf,
                            Kept** kept) noexcept nogil:
    """Blok b's update of cblk k (a group by itself), kept for its target's turn. Its
    source's panels outlive it; LDLᵀ's W (``wbuf``, the worker's) does not: the rows from
    b down are copied once per source into ``kept`` (shared by its later bloks, whose
    rows are below). NULL when memory ran out."""
    cdef const Blocks* B = &P.B
    cdef idx_t cb = B.bcoef[b]
    cdef int w = cblk_width(B, k), m = B.stride[k]
    cdef Kept* K
    cdef Deferred* d = new_deferred(DEFER_SINGLE, k, b, 0, 0, 0)
    if d == NULL or not P.ops.scaled_left:
        return d
    if kept[0] == NULL:
        K = <Kept*>malloc(sizeof(Kept))
        if K == NULL:
            free(d)
            return NULL
        K.data = malloc(max(<size_t>(m - cb) * w, 1) * sizeof(scalar))
        if K.data == NULL:
            free(K)
            free(d)
            return NULL
        K.refs = 1  # the source's, dropped when its updates are all sent
        K.row0 = cb
        copy_tile(m - <int>cb, w, wbuf + (cb - w), m - w, <scalar*>K.data, m - <int>cb)
        kept[0] = K
    K = kept[0]
    omp_set_lock(&S.qlock)
    K.refs += 1
    omp_unset_lock(&S.qlock)
    d.kept = K
    d.a = <scalar*>K.data + (cb - K.row0)
    d.ld = m - <int>K.row0
    return d


cdef Deferred* defer_products(const FactorState* P, idx_t k, idx_t b, scalar* cl, scalar* cu,
                              int ldc, int rows) noexcept nogil:
    """Blok b's update of cblk k as products (:func:`scatter_blok`'s ``cl``, ``cu``, from
    b's rows, ``rows`` of them), copied and kept for its target's turn. NULL when memory
    ran out."""
    cdef int h = blok_rows(&P.B, b)
    cdef size_t size = <size_t>rows * h * sizeof(scalar)
    cdef Deferred* d = new_deferred(DEFER_SCATTER, k, b, rows, size,
                                    size if P.ops.two_factors else 0)
    if d == NULL:
        return NULL
    copy_tile(rows, h, cl, ldc, <scalar*>d.a, rows)
    if P.ops.two_factors:
        copy_tile(rows, h, cu, ldc, <scalar*>d.c, rows)
    return d


cdef void apply_deferred(const FactorState* P, Deferred* d, scalar* work,
                         idx_t* runs) noexcept nogil:
    """Apply a kept update to its target, as it would have been applied when it came.
    ``work`` holds the largest product of :func:`workspace_sizes`; ``runs`` is scratch
    for as many row runs as any cblk has bloks."""
    cdef const Blocks* B = &P.B
    if d.what == DEFER_SINGLE:
        update_single(P, d.k, d.b, work, <scalar*>d.a, d.ld, runs)
    elif d.what == DEFER_SCATTER:
        scatter_blok(P, d.k, d.b, <scalar*>d.a, <scalar*>d.c, d.ld, B.bcoef[d.b], runs)
    elif d.what == DEFER_EXPAND:
        expand_kept(P, d, work, runs)
    elif d.what == DEFER_DENSE_COLUMN:
        dense_column_apply(P, d.k, d.b, B.fcblk[d.b], <scalar*>d.a, d.ld)


cdef void next_turn(Scheduler* S, idx_t f) noexcept nogil:
    """Cblk f took the update of its turn: the next slot's turn comes. When that update
    was kept, a drain task applies it (:func:`drain`); after f's last, f is ready."""
    cdef bint ready, kept
    if S.ordered:
        omp_set_lock(&S.locks[f])
    S.turn[f] += 1
    S.npend[f] -= 1
    kept = S.ordered and S.npend[f] > 0 and S.pending[S.turn[f]] != NULL
    ready = S.npend[f] == 0 and (S.only == NULL or S.only[f])
    omp_unset_lock(&S.locks[f])
    if kept:
        push_drain(S, f)
    if ready:
        make_ready(S, f)


cdef void drain(Scheduler* S, const FactorState* P, idx_t f, scalar* work,
                idx_t* runs) noexcept nogil:
    """The drain task of cblk f: apply its kept updates from its turn on, in turn, until
    one has not come yet (its source applies it then). ``work`` and ``runs``:
    :func:`apply_deferred`'s."""
    cdef Deferred* d
    cdef bint ready = False
    omp_set_lock(&S.locks[f])
    while S.npend[f] > 0 and S.pending[S.turn[f]] != NULL:
        d = S.pending[S.turn[f]]
        S.pending[S.turn[f]] = NULL
        # Its turn: nobody else writes f meanwhile.
        omp_unset_lock(&S.locks[f])
        if not S.abort:
            apply_deferred(P, d, work, runs)
        free_deferred(S, d)
        omp_set_lock(&S.locks[f])
        S.turn[f] += 1
        S.npend[f] -= 1
        ready = S.npend[f] == 0 and (S.only == NULL or S.only[f])
    omp_unset_lock(&S.locks[f])
    if ready:
        make_ready(S, f)


# ---------------------------------------------------------------------------- dispatch

cdef inline bint all_gather(const FactorState* P, idx_t g, idx_t e) noexcept nogil:
    """Whether every blok g..e-1 faces a cblk that gathers its own updates."""
    cdef idx_t b
    for b in range(g, e):
        if P.cblk[P.B.fcblk[b]].compress != MINIMAL_MEMORY:
            return False
    return True


cdef void apply_updates(Scheduler* S, const FactorState* P, idx_t k, scalar* work,
                        scalar* wbuf, scalar* tmp) noexcept nogil:
    """Apply cblk k's updates to the cblks it faces, a group of bloks at a time.

    A lone blok is applied run by run straight into its target
    (:func:`update_single`); a group's products are computed into ``work`` and
    scattered. With a scheduler ``S`` (threads), each update is applied at its target's
    turn, or kept for it (scheduler.pxi); without one (NULL: a single thread), in order. Either
    way each target takes the same updates, in the same order, by the same kernels.
    ``tmp`` (free once the panel is factored) holds the scatters' row runs.

    The kernels follow the storage of the source: a dense panel's are below, a
    compressed cblk's (just-in-time block low-rank) in lrupdates.pxi. Targets are
    dense panels (a cblk is compressed only once factored, when all its updates are in).
    """
    cdef const Blocks* B = &P.B
    cdef idx_t b, g, e, f, end = B.bloknum[k + 1]
    cdef int H, w = cblk_width(B, k), m = B.stride[k], M, r
    cdef idx_t* runs = <idx_t*>tmp
    cdef Kept* kept = NULL
    cdef scalar* c
    if targets_ready(S, P, k, work) < 0:
        P.nomem[0] = 1
        if S != NULL:
            omp_set_lock(&S.qlock)
            S.abort = 1
            omp_unset_lock(&S.qlock)
        return
    if P.cblk[k].storage == LOWRANK:
        if apply_updates_lowrank(S, P, k, work, runs) < 0:
            P.nomem[0] = 1
            if S != NULL:
                omp_set_lock(&S.qlock)
                S.abort = 1
                omp_unset_lock(&S.qlock)
        return
    g = B.bloknum[k] + 1
    while g < end:
        if S != NULL and (S.abort or S.failcblk < k):
            break
        e = group_end(B, k, g)
        if all_gather(P, g, e):
            # Their targets gather their updates themselves (minimal memory): counted.
            if S != NULL:
                for b in range(g, e):
                    omp_set_lock(&S.locks[B.fcblk[b]])
                    release_target(S, B.fcblk[b])
            g = e
            continue
        if e == g + 1:
            f = B.fcblk[g]
            if S == NULL or take_turn(S, g, f):
                update_single(P, k, g, work, wbuf + (B.bcoef[g] - w), m - w, runs)
                if S != NULL:
                    next_turn(S, f)
            else:
                defer(S, P, g, f, defer_single(S, P, k, g, wbuf, &kept))
            g = e
            continue
        H = group_rows(B, g, e)
        M = m - B.bcoef[g]
        update_products(P, k, g, e, wbuf, work)
        for b in range(g, e):
            f = B.fcblk[b]
            if P.cblk[f].compress == MINIMAL_MEMORY:
                if S != NULL:
                    omp_set_lock(&S.locks[f])
                    release_target(S, f)
            elif S == NULL or take_turn(S, b, f):
                update_scatter(P, k, b, g, H, work, runs)
                if S != NULL:
                    next_turn(S, f)
            else:
                r = B.bcoef[b] - B.bcoef[g]
                c = work + r + <size_t>r * M
                defer(S, P, b, f, defer_products(P, k, b, c, c + <size_t>M * H, M, M - r))
        g = e
    if kept != NULL:
        release_kept(S, kept)
