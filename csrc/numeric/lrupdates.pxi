# The updates a compressed (LOWRANK) cblk sends to the dense panels of the cblks it faces
# (just-in-time block low-rank: targets are still dense when they receive them). For
# each pair of tiles i ≥ j, target(rows of i, columns of j) -= Left_i · op(Right_j),
# computed through the ranks: a low-rank tile U Bt never grows back to h x w before the
# last product. What needs only the source is made first (LU's products with a dense
# Right_j, laid out as the dense updates' for their scatter; with a low-rank
# Right_j = U Bt, the rows Left_i op(Bt) stacked, so that the expansion by op(U) is one
# product for the column; with a dense Right_j, its product with the stacked left
# operands), the target's part then at its turn with threads (scheduler.pxi).
#
# Left and right by kind, as in the dense updates (updates.pxi): LLᵀ L and L (op: the
# kind's transpose), LDLᵀ L D and L, LU L and Uᵀ into L's panels and Uᵀ and L into Uᵀ's.


cdef struct Side:
    # One operand of a tile product: rank >= 0, U (h x rank) times y (rank x w); rank -1,
    # dense h x w at u. Leading dimensions: h for u, rank for y.
    int rank
    int rows
    void* u
    void* y


cdef inline Side tile_side(const Tile* t, int h) noexcept nogil:
    cdef Side s
    s.rank = t.rank
    s.rows = h
    s.u = t.u
    s.y = t.bt
    return s


cdef void dense_right_product(char op, int w, const Side* a, const Side* b, scalar* dst,
                              int ldd, scalar* work) noexcept nogil:
    """dst = A · op(B) for a dense B (h_b x w), A h_a x w given as a :c:type:`Side`
    (low-rank: through its rank, ``work`` holding r_a x h_b scalars)."""
    cdef scalar one = 1, zero = 0
    cdef int ha = a.rows, hb = b.rows, ra = a.rank, i, j
    if ra == 0:
        for j in range(hb):
            for i in range(ha):
                dst[i + j * ldd] = 0
    elif ra < 0:
        gemm(c'N', op, ha, hb, w, one, <scalar*>a.u, ha, <scalar*>b.u, hb, zero, dst, ldd)
    else:
        gemm(c'N', op, ra, hb, w, one, <scalar*>a.y, ra, <scalar*>b.u, hb, zero, work, ra)
        gemm(c'N', c'N', ha, hb, ra, one, <scalar*>a.u, ha, work, ra, zero, dst, ldd)


cdef void times_d(int rows, int w, const scalar* x, int ldx, scalar* y, int ldy,
                  const scalar* diag, int ldd, const signed char* pivtype, const scalar* dsub,
                  bint conj) noexcept nogil:
    """Y ← X D for ``rows`` rows of X, D the block diagonal of an LDLᵀ diagonal block
    (its 2x2 blocks [d11 d12; d21 d22] with d21 in dsub, d12 = cj(d21))."""
    cdef int j = 0, i
    cdef scalar d11, d21, d12, d22
    while j < w:
        d11 = diag[j + j * ldd]
        if pivtype[j] == 1:
            for i in range(rows):
                y[i + j * ldy] = x[i + j * ldx] * d11
            j += 1
        else:
            d21 = dsub[j]
            d12 = cj(d21, conj)
            d22 = diag[j + 1 + (j + 1) * ldd]
            for i in range(rows):
                y[i + j * ldy] = x[i + j * ldx] * d11 + x[i + (j + 1) * ldx] * d21
                y[i + (j + 1) * ldy] = x[i + j * ldx] * d12 + x[i + (j + 1) * ldx] * d22
            j += 2


cdef struct Stacked:
    # The left operands of a compressed cblk's tiles stacked into one matrix (column-major,
    # ``rows`` x width, leading dimension ``rows``): each low-rank tile's Y (r rows), each
    # dense tile whole (h rows), none of a rank-0 tile; tile i's rows from ``off[i]``
    # (indexed by blok; ``off[end]`` is ``rows``). A column's products with all the tiles
    # below are then one product of this matrix (one BLAS call on many rows, instead of
    # one small one per tile), each low-rank tile's expanded by its U after.
    void* y
    idx_t* off
    int rows


cdef inline int stacked_rows(const Side* s) noexcept nogil:
    return s.rank if s.rank >= 0 else s.rows


cdef int make_stacked(const Side* sides, idx_t first, idx_t end, int w, Stacked* S,
                      scalar* like) noexcept nogil:
    """Stack ``sides[first:end]`` (indexed by blok) into ``S``; -1 when memory ran out."""
    cdef idx_t i
    cdef int j, r, rows = 0
    cdef scalar* y
    cdef const scalar* src
    S.off = <idx_t*>malloc((end - first + 1) * sizeof(idx_t))
    if S.off == NULL:
        return -1
    S.off -= first
    for i in range(first, end):
        S.off[i] = rows
        rows += stacked_rows(&sides[i])
    S.off[end] = rows
    S.rows = rows
    S.y = malloc(max(<size_t>rows * w, 1) * sizeof(scalar))
    if S.y == NULL:
        free(S.off + first)
        return -1
    y = <scalar*>S.y
    for i in range(first, end):
        r = stacked_rows(&sides[i])
        src = <const scalar*>(sides[i].y if sides[i].rank >= 0 else sides[i].u)
        for j in range(w):
            memcpy(y + S.off[i] + <size_t>j * rows, src + <size_t>j * r, r * sizeof(scalar))
    return 0


cdef inline void free_stacked(Stacked* S, idx_t first) noexcept nogil:
    free(S.y)
    free(S.off + first)


cdef struct LowRankWork:
    # What a compressed cblk's column updates use: its tiles from blok ``first`` on as
    # Sides (left: L's, L D's for LDLᵀ; right: L's; uside: Uᵀ's for LU), indexed by blok,
    # the left ones stacked (lstack; ustack: uside's, LU), and the work buffers (an
    # h x h product, the stacks, the products, a stack's products with one operand).
    idx_t first
    int hmax
    Side* left
    Side* right
    Side* uside
    void* lefts
    void* work
    void* stack
    void* prod
    Stacked lstack
    Stacked ustack
    void* tbuf


cdef int lowrank_work(const FactorState* P, idx_t k, idx_t first, LowRankWork* L,
                      scalar* like) noexcept nogil:
    """Set up ``L`` for compressed cblk k's tiles from blok ``first`` on; -1 when memory
    ran out (nothing to free then)."""
    cdef const Blocks* B = &P.B
    cdef const CblkStore* c = &P.cblk[k]
    cdef idx_t b0 = B.bloknum[k] + 1, end = B.bloknum[k + 1], ntile = end - first
    cdef idx_t i, t, fc = B.fcol[k]
    cdef int w = cblk_width(B, k), h, r, copies = 2 if P.ops.two_factors else 1
    cdef size_t nleft = 0, below = B.stride[k] - B.bcoef[first]
    cdef scalar* p
    cdef Side* sides
    L.first = first
    L.hmax = 0
    for i in range(first, end):
        L.hmax = max(L.hmax, blok_rows(B, i))
        t = i - b0
        nleft += <size_t>(c.ltiles[t].rank if c.ltiles[t].rank >= 0 else blok_rows(B, i)) * w
    # Work: an h x h product; the stacked left products of one column blok (all rows
    # below it, at most h columns; LU: twice); the products (twice for LU).
    L.work = malloc(<size_t>L.hmax * (L.hmax + below * 2 * copies) * sizeof(scalar))
    sides = <Side*>malloc(3 * max(ntile, 1) * sizeof(Side))
    L.lefts = malloc(max(nleft, 1) * sizeof(scalar)) if P.ops.scaled_left else NULL
    if L.work == NULL or sides == NULL or (P.ops.scaled_left and L.lefts == NULL):
        free(L.work)
        free(sides)
        free(L.lefts)
        return -1
    L.stack = <scalar*>L.work + <size_t>L.hmax * L.hmax
    L.prod = <scalar*>L.stack + below * L.hmax * copies
    # Indexed by blok: sides[0] is blok ``first``'s.
    L.left = sides - first
    L.right = sides + ntile - first
    L.uside = sides + 2 * ntile - first
    p = <scalar*>L.lefts
    for i in range(first, end):
        t = i - b0
        h = blok_rows(B, i)
        L.right[i] = tile_side(&c.ltiles[t], h)
        L.left[i] = L.right[i]
        if P.ops.two_factors:
            L.uside[i] = tile_side(&c.utiles[t], h)
        if P.ops.scaled_left:
            r = c.ltiles[t].rank
            if r >= 0:
                times_d(r, w, <scalar*>c.ltiles[t].bt, r, p, r, <scalar*>c.lcoef, w,
                        &P.pivtype[fc], &(<scalar*>P.dsub)[fc], P.ops.conj)
                L.left[i].y = p
                p += <size_t>r * w
            else:
                times_d(h, w, <scalar*>c.ltiles[t].u, h, p, h, <scalar*>c.lcoef, w,
                        &P.pivtype[fc], &(<scalar*>P.dsub)[fc], P.ops.conj)
                L.left[i].u = p
                p += <size_t>h * w
    L.ustack.y = NULL
    L.tbuf = NULL
    if make_stacked(L.left, first, end, w, &L.lstack, like) < 0:
        free(L.work)
        free(sides)
        free(L.lefts)
        return -1
    if P.ops.two_factors and make_stacked(L.uside, first, end, w, &L.ustack, like) < 0:
        free_stacked(&L.lstack, first)
        free(L.work)
        free(sides)
        free(L.lefts)
        return -1
    L.tbuf = malloc(max(<size_t>max(L.lstack.rows, L.ustack.rows if P.ops.two_factors else 0)
                        * L.hmax, 1) * sizeof(scalar))
    if L.tbuf == NULL:
        free_lowrank_work(L)
        return -1
    return 0


cdef inline void free_lowrank_work(LowRankWork* L) noexcept nogil:
    free(L.work)
    free(L.left + L.first)
    free(L.lefts)
    free_stacked(&L.lstack, L.first)
    if L.ustack.y != NULL:
        free_stacked(&L.ustack, L.first)
    free(L.tbuf)


cdef void lowrank_column(Scheduler* S, const FactorState* P, idx_t k, idx_t j,
                         LowRankWork* L, idx_t* runs, scalar* like) noexcept nogil:
    """Compressed cblk k's column blok j's update of the cblk j faces: what needs only
    the source first, then the target's part, at its turn with a scheduler or kept for
    it (scheduler.pxi)."""
    cdef const Blocks* B = &P.B
    cdef idx_t end = B.bloknum[k + 1], f = B.fcblk[j]
    cdef int w = cblk_width(B, k), M = B.stride[k] - B.bcoef[j], h = blok_rows(B, j), r, R
    cdef char op = c'T' if P.ops.two_factors else P.ops.tr
    cdef scalar* stack = <scalar*>L.stack
    cdef scalar* prod = <scalar*>L.prod
    cdef Side* rhs = &(L.uside if P.ops.two_factors else L.right)[j]
    cdef Deferred* d
    r = min(rhs.rank, L.right[j].rank) if P.ops.two_factors else rhs.rank
    if r > 0:
        # Low-rank right operands: the stacked rows, then one expansion per run of the
        # target's rows.
        stack_products(P, j, j, end, w, op, L.left, &L.lstack, rhs, stack, M,
                       <scalar*>L.tbuf)
        if P.ops.two_factors:
            stack_products(P, j, j + 1, end, w, op, L.uside, &L.ustack, &L.right[j],
                           stack + <size_t>M * L.hmax, M, <scalar*>L.tbuf)
        if S == NULL or take_turn(S, j, f):
            expand_column(P, k, j, f, rhs, &L.right[j], op, stack, M,
                          stack + <size_t>M * L.hmax, prod, runs)
        else:
            d = new_deferred(DEFER_EXPAND, k, j, M, <size_t>M * rhs.rank * sizeof(scalar),
                             <size_t>M * L.right[j].rank * sizeof(scalar)
                             if P.ops.two_factors else 0)
            if d != NULL:
                copy_tile(M, rhs.rank, stack, M, <scalar*>d.a, M)
                if P.ops.two_factors:
                    copy_tile(M, L.right[j].rank, stack + <size_t>M * L.hmax, M,
                              <scalar*>d.c, M)
            defer(S, P, j, f, d)
            return
    elif r == 0 and not P.ops.two_factors:
        # A zero right operand: nothing to subtract.
        if S != NULL and not take_turn(S, j, f):
            defer(S, P, j, f, new_deferred(DEFER_NOTHING, k, j, 0, 0, 0))
            return
    elif not P.ops.two_factors:
        # A dense right operand: the stack's product with it, then each tile's rows
        # straight into the target's.
        R = dense_column_product(P, k, j, w, op, &L.lstack, rhs, <scalar*>L.tbuf)
        if S == NULL or take_turn(S, j, f):
            dense_column_apply(P, k, j, f, <scalar*>L.tbuf, R)
        else:
            d = new_deferred(DEFER_DENSE_COLUMN, k, j, R, <size_t>R * h * sizeof(scalar), 0)
            if d != NULL:
                copy_tile(R, h, <scalar*>L.tbuf, R, <scalar*>d.a, R)
            defer(S, P, j, f, d)
            return
    else:
        # LU with a dense (or rank 0) right operand: the products into a buffer laid
        # out as the dense updates' (update_products), subtracted by their scatter.
        dense_products(P, j, j, end, w, op, L.left, &L.lstack, rhs, prod, M, stack,
                       <scalar*>L.work, <scalar*>L.tbuf)
        dense_products(P, j, j + 1, end, w, op, L.uside, &L.ustack, &L.right[j],
                       prod + <size_t>M * h, M, stack, <scalar*>L.work, <scalar*>L.tbuf)
        if S == NULL or take_turn(S, j, f):
            scatter_blok(P, k, j, prod, prod + <size_t>M * h, M, B.bcoef[j], runs)
        else:
            defer(S, P, j, f, defer_products(P, k, j, prod, prod + <size_t>M * h, M, M))
            return
    if S != NULL:
        next_turn(S, f)


cdef int apply_updates_lowrank(Scheduler* S, const FactorState* P, idx_t k, scalar* like,
                               idx_t* runs) noexcept nogil:
    """Apply compressed cblk k's updates to the cblks it faces, column blok by column
    blok (each one target: :func:`lowrank_column`). Targets that gather their updates
    themselves (minimal memory) are only counted. Returns -1 when the work memory could
    not be allocated (nothing is applied then)."""
    cdef const Blocks* B = &P.B
    cdef idx_t j, f
    cdef LowRankWork L
    if lowrank_work(P, k, B.bloknum[k] + 1, &L, like) < 0:
        return -1
    for j in range(B.bloknum[k] + 1, B.bloknum[k + 1]):
        if S != NULL and (S.abort or S.failcblk < k):
            break
        f = B.fcblk[j]
        if P.cblk[f].compress == MINIMAL_MEMORY:
            if S != NULL:
                omp_set_lock(&S.locks[f])
                release_target(S, f)
        else:
            lowrank_column(S, P, k, j, &L, runs, like)
    free_lowrank_work(&L)
    return 0


cdef int dense_column_product(const FactorState* P, idx_t k, idx_t j, int w, char op,
                              const Stacked* S, const Side* right, scalar* t) noexcept nogil:
    """The first half of the update of a compressed cblk k's column blok j whose tile
    Right is dense: the left operands' stack ``S`` times op(Right), all tiles i = j.. at
    once, into ``t`` (R x h_j, R returned: the stack's rows from tile j on)."""
    cdef scalar one = 1, zero = 0
    cdef int R = S.off[P.B.bloknum[k + 1]] - S.off[j]
    if R > 0:
        gemm(c'N', op, R, right.rows, w, one, <scalar*>S.y + S.off[j], S.rows,
             <scalar*>right.u, right.rows, zero, t, R)
    return R


cdef void dense_column_apply(const FactorState* P, idx_t k, idx_t j, idx_t f, const scalar* t,
                             int R) noexcept nogil:
    """The second half: subtract each tile i's rows of ``t`` (:func:`dense_column_product`)
    straight from its rows in cblk f's panel, which are one run there (a blok lies inside
    one blok of the cblk it faces): a dense tile's as they are, a low-rank one's
    expanded by its U (the tile's own: LDLᵀ's D scales only its Bt)."""
    cdef const Blocks* B = &P.B
    cdef const CblkStore* src = &P.cblk[k]
    cdef scalar one = 1, mone = -1
    cdef idx_t i, fb = B.bloknum[f], fend = B.bloknum[f + 1], sf = B.stride[f]
    cdef idx_t b0 = B.bloknum[k] + 1, off = 0
    cdef int hj = blok_rows(B, j), ra, hi, q, c
    cdef scalar* col = lpanel(P, f, <scalar*>t) + (B.frow[j] - B.fcol[f]) * sf
    cdef scalar* dst
    cdef const scalar* ti
    if R == 0:
        return
    for i in range(j, B.bloknum[k + 1]):
        while fb < fend and B.lrow[fb] < B.frow[i]:
            fb += 1
        dst = col + B.bcoef[fb] + (B.frow[i] - B.frow[fb])
        ra = src.ltiles[i - b0].rank
        hi = blok_rows(B, i)
        ti = t + off
        if ra < 0:
            for c in range(hj):
                for q in range(hi):
                    dst[q + c * sf] -= ti[q + <size_t>c * R]
            off += hi
        elif ra > 0:
            gemm(c'N', c'N', hi, hj, ra, mone, <scalar*>src.ltiles[i - b0].u, hi, <scalar*>ti,
                 R, one, dst, sf)
            off += ra


cdef void dense_products(const FactorState* P, idx_t j, idx_t first, idx_t end, int w, char op,
                         const Side* left, const Stacked* S, const Side* right, scalar* out,
                         int M, scalar* stack, scalar* work, scalar* t) noexcept nogil:
    """out(rows of bloks i = first..end-1, h_j columns) = Left_i op(Right): M x h_j with
    blok i's rows from row bcoef[i] - bcoef[j] (as update_products lays them out).
    ``left`` is indexed by blok (stacked in ``S``); ``work`` holds h x h scalars,
    ``stack`` M x h and ``t`` the stack's products (used for a low-rank Right)."""
    cdef const Blocks* B = &P.B
    cdef scalar one = 1, zero = 0
    cdef idx_t i, r0 = B.bcoef[j], row
    cdef int c, q, rows
    cdef scalar* dst
    if first >= end:
        return
    if right.rank > 0:
        stack_products(P, j, first, end, w, op, left, S, right, stack, M, t)
        row = B.bcoef[first] - r0
        rows = B.bcoef[end - 1] + blok_rows(B, end - 1) - B.bcoef[first]
        gemm(c'N', op, rows, right.rows, right.rank, one, stack + row, M, <scalar*>right.u,
             right.rows, zero, out + row, M)
        return
    for i in range(first, end):
        dst = out + (B.bcoef[i] - r0)
        if right.rank == 0:
            for c in range(right.rows):
                for q in range(left[i].rows):
                    dst[q + <size_t>c * M] = 0
        else:
            dense_right_product(op, w, &left[i], right, dst, M, work)


cdef void stack_products(const FactorState* P, idx_t j, idx_t first, idx_t end, int w, char op,
                         const Side* left, const Stacked* S, const Side* right, scalar* stack,
                         int M, scalar* t) noexcept nogil:
    """For a low-rank Right = U Bt (rank r > 0): stack(rows of bloks i = first..end-1, r
    columns) = Left_i op(Bt), laid out as :func:`dense_products`; the update is then
    stack op(U) (:func:`expand_column`). The left operands' stack ``S`` times op(Bt) in
    one product (into ``t``), then each low-rank tile's rows expanded by its U, each
    dense tile's copied."""
    cdef const Blocks* B = &P.B
    cdef scalar one = 1, zero = 0
    cdef idx_t i, r0 = B.bcoef[j]
    cdef int rb = right.rank, ra, hi, c, q, R = S.off[end] - S.off[first]
    cdef scalar* dst
    cdef const scalar* ti
    if R > 0:
        gemm(c'N', op, R, rb, w, one, <scalar*>S.y + S.off[first], S.rows, <scalar*>right.y,
             rb, zero, t, R)
    for i in range(first, end):
        ra = left[i].rank
        hi = left[i].rows
        dst = stack + (B.bcoef[i] - r0)
        ti = t + (S.off[i] - S.off[first])
        if ra < 0:
            for c in range(rb):
                memcpy(dst + <size_t>c * M, ti + <size_t>c * R, hi * sizeof(scalar))
        elif ra == 0:
            for c in range(rb):
                for q in range(hi):
                    dst[q + <size_t>c * M] = 0
        else:
            gemm(c'N', c'N', hi, rb, ra, one, <scalar*>left[i].u, hi, <scalar*>ti, R, zero, dst,
                 M)


cdef void expand_kept(const FactorState* P, Deferred* d, scalar* work, idx_t* runs) noexcept nogil:
    """:func:`expand_column` of a kept update (DEFER_EXPAND: its stacks kept; the tiles
    are its source's)."""
    cdef const Blocks* B = &P.B
    cdef const CblkStore* c = &P.cblk[d.k]
    cdef idx_t t = d.b - B.bloknum[d.k] - 1
    cdef int h = blok_rows(B, d.b)
    cdef Side rj = tile_side(&c.ltiles[t], h)
    cdef Side rl = tile_side(&c.utiles[t], h) if P.ops.two_factors else rj
    expand_column(P, d.k, d.b, B.fcblk[d.b], &rl, &rj, c'T' if P.ops.two_factors else P.ops.tr,
                  <scalar*>d.a, d.ld, <scalar*>d.c, work, runs)


cdef void expand_column(const FactorState* P, idx_t k, idx_t j, idx_t f, const Side* rl,
                        const Side* rj, char op, scalar* stack, int M, scalar* stack2,
                        scalar* work, idx_t* runs) noexcept nogil:
    """Subtract column blok j's update from cblk f's panel(s), from the stacks of
    :func:`stack_products`: stack op(U) run by run of f's rows (update_rows: long runs
    accumulated in place, short ones through ``work``). LU: L's panel takes the stack
    of L's rows times Uᵀ_j's U; ``stack2`` (Uᵀ's rows times L_j's Bt) goes to f's
    diagonal block above its diagonal (transposed) for the bloks facing f, to Uᵀ's
    panel for the others."""
    cdef const Blocks* B = &P.B
    cdef scalar one = 1, zero = 0
    cdef idx_t sf = B.stride[f], f0 = B.fcol[f], col = (B.frow[j] - f0) * sf, e, nrun
    cdef idx_t r0 = B.bcoef[j], end = B.bloknum[k + 1]
    cdef int h = blok_rows(B, j), rows
    nrun = row_runs(B, k, j, f, runs)
    update_rows(stack, M, <scalar*>rl.u, h, h, rl.rank, op, lpanel(P, f, stack) + col, sf, runs,
                nrun, work, False)
    if not P.ops.two_factors:
        return
    e = j + 1
    while e < end and B.fcblk[e] == f:
        e += 1
    if e > j + 1:
        rows = B.bcoef[e] - B.bcoef[j + 1] if e < end else M - (B.bcoef[j + 1] - r0)
        gemm(c'N', c'T', rows, h, rj.rank, one, stack2 + (B.bcoef[j + 1] - r0), M,
             <scalar*>rj.u, h, zero, work, rows)
        scatter_sub_transposed(B, work, rows, B.bcoef[j + 1], h, j + 1, e, j, f,
                               lpanel(P, f, stack))
    if e < end:
        nrun = row_runs(B, k, e, f, runs)
        update_rows(stack2 + (B.bcoef[e] - r0), M, <scalar*>rj.u, h, h, rj.rank,
                    c'T', upanel(P, f, stack) + col, sf, runs, nrun, work, False)
