# Minimal-memory block low-rank: a cblk marked MINIMAL_MEMORY has no panel until it is
# factored. Then its panels are allocated, the updates of every factored cblk facing it
# are gathered (left-looking: from the tiles of compressed cblks through their ranks,
# from the panels of dense ones), it is factored and compressed (compress.pxi), and its
# panels are freed. The other cblks only count their updates to it (updates.pxi,
# lrupdates.pxi). So no more than one panel per thread of the compressed part exists at
# once: the peak follows the compressed size, at the price of computing from a source
# once per target, after the fact, instead of while its panel is at hand.


cdef int gather_dense(const FactorState* P, idx_t k, idx_t b, scalar* like) noexcept nogil:
    """Dense cblk k's update through its blok b into the (fresh) panel(s) of the cblk b
    faces (update_single's kernels; LDLᵀ's W = L D recomputed from the panel)."""
    cdef const Blocks* B = &P.B
    cdef int w = cblk_width(B, k), m = B.stride[k], h = blok_rows(B, b)
    cdef idx_t cb = B.bcoef[b], fc = B.fcol[k], nb = B.bloknum[k + 1] - B.bloknum[k]
    cdef scalar* panel = <scalar*>P.cblk[k].lcoef
    cdef scalar* work = <scalar*>malloc(max(<size_t>(m - cb) * h, 1) * sizeof(scalar))
    cdef scalar* wbuf = NULL
    cdef idx_t* runs = <idx_t*>malloc(2 * nb * sizeof(idx_t))
    if P.ops.scaled_left:
        wbuf = <scalar*>malloc(max(<size_t>(m - w) * w, 1) * sizeof(scalar))
    if work == NULL or runs == NULL or (P.ops.scaled_left and wbuf == NULL):
        free(work)
        free(runs)
        free(wbuf)
        return -1
    if P.ops.scaled_left:
        times_d(m - cb, w, panel + cb, m, wbuf + (cb - w), m - w, panel, m, &P.pivtype[fc],
                &(<scalar*>P.dsub)[fc], P.ops.conj)
    update_single(P, k, b, work, wbuf + (cb - w) if P.ops.scaled_left else NULL, m - w, runs)
    free(work)
    free(runs)
    free(wbuf)
    return 0


cdef int gather_updates(const FactorState* P, idx_t f, scalar* like) noexcept nogil:
    """Allocate cblk f's panels and gather into them the updates of the cblks facing it
    (all factored). Returns -1 when memory ran out."""
    cdef const Blocks* B = &P.B
    cdef CblkStore* c = &P.cblk[f]
    cdef size_t size = <size_t>B.stride[f] * cblk_width(B, f)
    cdef idx_t t, b, k
    cdef idx_t* runs
    cdef LowRankWork L
    c.lcoef = calloc(max(size, 1), sizeof(scalar))
    if P.ops.two_factors:
        c.ucoef = calloc(max(size, 1), sizeof(scalar))
    if c.lcoef == NULL or (P.ops.two_factors and c.ucoef == NULL):
        return -1
    touch_pages(<char*>c.lcoef, size * sizeof(scalar), 1)
    if P.ops.two_factors:
        touch_pages(<char*>c.ucoef, size * sizeof(scalar), 1)
    for t in range(P.in_ptr[f], P.in_ptr[f + 1]):
        b = P.in_blok[t]
        k = P.blok_cblk[b]
        if P.cblk[k].storage == LOWRANK:
            runs = <idx_t*>malloc(2 * (B.bloknum[k + 1] - B.bloknum[k]) * sizeof(idx_t))
            if runs == NULL or lowrank_work(P, k, b, &L, like) < 0:
                free(runs)
                return -1
            lowrank_column(NULL, P, k, b, &L, runs, like)
            free_lowrank_work(&L)
            free(runs)
        elif gather_dense(P, k, b, like) < 0:
            return -1
    return 0
