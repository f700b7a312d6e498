# Just-in-time block low-rank: a cblk marked ``compress`` accumulates its updates in a
# dense panel; once its diagonal block is factored, each off-diagonal blok is compressed
# into a tile U Bt (lowrank.pxi's kernels) and only then solved against the diagonal
# block, on its small factor Bt (r rows instead of h: the panel solve costs the ranks,
# as in PaStiX), the diagonal block is copied out and the dense panel freed. Its updates
# of later cblks (lrupdates.pxi) and the solves then read the tiles.
#
# A tile keeps the low-rank form only when it is at least Compression.min_height rows
# tall and its rank at the tolerance is at most max_ratio min(h, w) and stores less than
# the tile (r (h + w) < h w); else it is kept dense (h x w). Bt = Vᴴ of the kernels' U Vᴴ is stored explicitly (r x w), so that the
# products with a tile take the ops ('N', 'T', 'C') of the dense code unchanged.


cdef inline void free_tile_list(Tile* tiles, idx_t ntile) noexcept nogil:
    cdef idx_t t
    if tiles == NULL:
        return
    for t in range(ntile):
        free(tiles[t].u)
    free(tiles)


cdef int compress_tile(const Compression* C, int h, int w, scalar* a, int lda, uint64_t seed,
                       Tile* t, scalar* ubuf, scalar* vbuf) noexcept nogil:
    """Tile ``t`` from the h x w block ``a``: low-rank where it pays, else a dense copy.
    ``ubuf`` and ``vbuf`` hold h x min(h, w) and w x min(h, w) scalars. Returns the
    scalars the tile holds, or -1 when its memory could not be allocated."""
    cdef int r = LR_TOO_LARGE, maxr, i, j
    cdef scalar* mem
    cdef scalar* bt
    if h >= C.min_height:
        # Low-rank only where it stores less: r (h + w) < h w.
        maxr = min(<int>(C.max_ratio * min(h, w)), (h * w - 1) // (h + w))
        if maxr > 0:
            r = lr_compress(C.method, h, w, a, lda, C.tol, maxr, seed, C.power, ubuf, h,
                            vbuf, w)
    if r >= 0:
        mem = <scalar*>malloc(max(<size_t>r * (h + w), 1) * sizeof(scalar))
        if mem == NULL:
            return -1
        bt = mem + <size_t>h * r
        for j in range(r):
            memcpy(mem + <size_t>j * h, ubuf + <size_t>j * h, h * sizeof(scalar))
        # Bt = Vᴴ, r x w.
        for i in range(w):
            for j in range(r):
                bt[j + <size_t>i * r] = cj(vbuf[i + <size_t>j * w], True)
        t.rank = r
        t.u = mem
        t.bt = bt
        return r * (h + w)
    mem = <scalar*>malloc(max(<size_t>h * w, 1) * sizeof(scalar))
    if mem == NULL:
        return -1
    copy_tile(h, w, a, lda, mem, h)
    t.rank = -1
    t.u = mem
    t.bt = NULL
    return h * w


cdef Tile* compress_panel(const FactorState* P, idx_t k, int side, scalar* panel,
                          int64_t* held, scalar* ubuf, scalar* vbuf) noexcept nogil:
    """The tiles of cblk k's off-diagonal bloks in ``panel`` (stride x width; ``side``:
    L's panel or LU's Uᵀ), each compressed from the unsolved blok and then solved
    (:func:`solve_tiles`); NULL when memory ran out (nothing is then kept and the
    panel is untouched)."""
    cdef const Blocks* B = &P.B
    cdef idx_t b, t, ntile = B.bloknum[k + 1] - B.bloknum[k] - 1
    cdef int w = cblk_width(B, k), m = B.stride[k], got
    cdef Tile* tiles = <Tile*>calloc(max(ntile, 1), sizeof(Tile))
    if tiles == NULL:
        return NULL
    for t in range(ntile):
        b = B.bloknum[k] + 1 + t
        # A seed per tile: the randomized method gives the same tiles on any threads.
        got = compress_tile(&P.lr, blok_rows(B, b), w, panel + B.bcoef[b], m,
                            <uint64_t>b * 2654435761ULL + 1, &tiles[t], ubuf, vbuf)
        if got < 0:
            free_tile_list(tiles, ntile)
            return NULL
        held[0] += got
    solve_tiles(P, k, side, tiles, ntile, ubuf)
    return tiles


cdef void solve_tiles(const FactorState* P, idx_t k, int side, Tile* tiles, idx_t ntile,
                      scalar* like) noexcept nogil:
    """Solve cblk k's tiles against its diagonal block (:func:`solve_rows`): the Bt of
    a low-rank tile (r rows), a dense tile whole. Their rows are stacked into one
    matrix and solved at once: one triangular solve per cblk instead of one per tile,
    each of which would read the whole diagonal block for a few rows (one per tile
    when the stack cannot be allocated). ``like`` only picks the type."""
    cdef const Blocks* B = &P.B
    cdef idx_t t, rows = 0, at
    cdef int w = cblk_width(B, k), r, j
    cdef scalar* x
    cdef scalar* stack
    for t in range(ntile):
        r = tiles[t].rank if tiles[t].rank >= 0 else blok_rows(B, B.bloknum[k] + 1 + t)
        rows += r
    stack = <scalar*>malloc(max(<size_t>rows * w, 1) * sizeof(scalar))
    at = 0
    for t in range(ntile):
        r = tiles[t].rank if tiles[t].rank >= 0 else blok_rows(B, B.bloknum[k] + 1 + t)
        x = <scalar*>(tiles[t].bt if tiles[t].rank >= 0 else tiles[t].u)
        if stack == NULL:
            solve_rows(P, k, side, r, x, r, NULL)
            continue
        for j in range(w):
            memcpy(stack + at + <size_t>j * rows, x + <size_t>j * r, r * sizeof(scalar))
        at += r
    if stack == NULL:
        return
    solve_rows(P, k, side, <int>rows, stack, <int>rows, NULL)
    at = 0
    for t in range(ntile):
        r = tiles[t].rank if tiles[t].rank >= 0 else blok_rows(B, B.bloknum[k] + 1 + t)
        x = <scalar*>(tiles[t].bt if tiles[t].rank >= 0 else tiles[t].u)
        for j in range(w):
            memcpy(x + <size_t>j * r, stack + at + <size_t>j * rows, r * sizeof(scalar))
        at += r
    free(stack)


cdef int compress_cblk(const FactorState* P, idx_t k, scalar* like) noexcept nogil:
    """Replace cblk k's dense panel(s), its diagonal block factored and the rows below
    not yet solved, by its diagonal block and solved tiles (the descriptor becomes
    LOWRANK). Returns 0, or -1 where memory ran out: the panel is then as it came,
    for the caller to solve and keep dense."""
    cdef const Blocks* B = &P.B
    cdef CblkStore* c = &P.cblk[k]
    cdef int w = cblk_width(B, k), m = B.stride[k], hmax = 0
    cdef idx_t b, ntile = B.bloknum[k + 1] - B.bloknum[k] - 1
    cdef int64_t held = <int64_t>w * w
    cdef double t0 = omp_get_wtime()
    cdef scalar* diag
    cdef scalar* ubuf
    cdef Tile* ltiles = NULL
    cdef Tile* utiles = NULL
    if ntile == 0:
        return -1
    for b in range(B.bloknum[k] + 1, B.bloknum[k + 1]):
        hmax = max(hmax, blok_rows(B, b))
    ubuf = <scalar*>malloc(<size_t>(hmax + w) * min(hmax, w) * sizeof(scalar))
    diag = <scalar*>malloc(<size_t>w * w * sizeof(scalar))
    if ubuf != NULL and diag != NULL:
        ltiles = compress_panel(P, k, L_PANEL, <scalar*>c.lcoef, &held, ubuf,
                                ubuf + <size_t>hmax * min(hmax, w))
        if ltiles != NULL and P.ops.two_factors:
            utiles = compress_panel(P, k, U_PANEL, <scalar*>c.ucoef, &held, ubuf,
                                    ubuf + <size_t>hmax * min(hmax, w))
    free(ubuf)
    if ltiles == NULL or (P.ops.two_factors and utiles == NULL):
        free(diag)
        free_tile_list(ltiles, ntile)
        return -1
    copy_tile(w, w, <scalar*>c.lcoef, m, diag, w)
    free(c.lcoef)
    free(c.ucoef)
    c.lcoef = diag
    c.ucoef = NULL
    c.ld = w
    c.ltiles = ltiles
    c.utiles = utiles
    c.held = held
    c.seconds = omp_get_wtime() - t0
    c.storage = LOWRANK
    return 0
