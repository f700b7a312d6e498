# The updates a compressed (LOWRANK) cblk sends to the dense panels of the cblks it faces
# (just-in-time block low-rank: targets are still dense when they receive them). For
# each pair of tiles i ≥ j, target(rows of i, columns of j) -= Left_i · op(Right_j),
# computed through the ranks: a low-rank tile U Bt never grows back to h x w before
# the last product, which is accumulated straight into the target (blok i's rows are
# contiguous there, and blok j's rows are contiguous columns).
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


cdef void side_product(char op, int w, const Side* a, const Side* b, scalar* dst, int ldd,
                       scalar* work, scalar* work2, bint into) noexcept nogil:
    """dst -= A · op(B) (or, ``into``, dst = A · op(B)), A h_a x w and B h_b x w given as
    :c:type:`Side`. ``work`` and ``work2`` hold h_a x h_b scalars each (ranks are at
    most the rows)."""
    cdef scalar one = 1, zero = 0
    cdef scalar mone = 1 if into else -1  # the last product's factor, and what it adds to
    cdef scalar keep = 0 if into else 1
    cdef int ha = a.rows, hb = b.rows, ra = a.rank, rb = b.rank, i, j
    cdef scalar* au = <scalar*>a.u
    cdef scalar* ay = <scalar*>a.y
    cdef scalar* bu = <scalar*>b.u
    cdef scalar* by = <scalar*>b.y
    if ra == 0 or rb == 0:
        if into:
            for j in range(hb):
                for i in range(ha):
                    dst[i + j * ldd] = 0
        return
    if ra < 0 and rb < 0:
        gemm(c'N', op, ha, hb, w, mone, au, ha, bu, hb, keep, dst, ldd)
    elif rb < 0:
        # U_a (Y_a op(B)): r_a x h_b in the middle.
        gemm(c'N', op, ra, hb, w, one, ay, ra, bu, hb, zero, work, ra)
        gemm(c'N', c'N', ha, hb, ra, mone, au, ha, work, ra, keep, dst, ldd)
    elif ra < 0:
        # (A op(Bt_b)) op(U_b): h_a x r_b in the middle.
        gemm(c'N', op, ha, rb, w, one, au, ha, by, rb, zero, work, ha)
        gemm(c'N', op, ha, hb, rb, mone, work, ha, bu, hb, keep, dst, ldd)
    else:
        # M = Y_a op(Bt_b), r_a x r_b; then the cheaper of (U_a M) op(U_b) and
        # U_a (M op(U_b)).
        gemm(c'N', op, ra, rb, w, one, ay, ra, by, rb, zero, work, ra)
        if <double>ha * rb * ra + <double>ha * hb * rb <= <double>ra * rb * hb + <double>ha * hb * ra:
            gemm(c'N', c'N', ha, rb, ra, one, au, ha, work, ra, zero, work2, ha)
            gemm(c'N', op, ha, hb, rb, mone, work2, ha, bu, hb, keep, dst, ldd)
        else:
            gemm(c'N', op, ra, hb, rb, one, work, ra, bu, hb, zero, work2, ra)
            gemm(c'N', c'N', ha, hb, ra, mone, au, ha, work2, ra, keep, dst, ldd)


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


cdef inline idx_t row_in(const Blocks* B, idx_t f, idx_t b, idx_t* fb) noexcept nogil:
    """The row of cblk f's panel where blok b's first row lies (``fb``: a blok of f at or
    before the one holding it, advanced; bloks asked for in row order)."""
    while B.lrow[fb[0]] < B.frow[b]:
        fb[0] += 1
    return B.bcoef[fb[0]] + (B.frow[b] - B.frow[fb[0]])


cdef int apply_updates_lowrank(Scheduler* S, const FactorState* P, idx_t k, scalar* like,
                               idx_t* runs) noexcept nogil:
    """Apply compressed cblk k's updates to the cblks it faces, column blok by column
    blok (each one target, under its lock with a scheduler). Returns -1 when its work
    memory could not be allocated (nothing is applied then)."""
    cdef const Blocks* B = &P.B
    cdef const CblkStore* c = &P.cblk[k]
    cdef idx_t b0 = B.bloknum[k] + 1, end = B.bloknum[k + 1], ntile = end - b0
    cdef idx_t i, j, f, fb, t, fc = B.fcol[k]
    cdef int w = cblk_width(B, k), hmax = 0, sf, h, r
    cdef size_t nleft = 0
    cdef scalar* work
    cdef scalar* prod
    cdef int M
    cdef scalar* lefts = NULL
    cdef scalar* p
    cdef Side* left
    cdef Side* right
    cdef Side* uside
    for i in range(b0, end):
        hmax = max(hmax, blok_rows(B, i))
        t = i - b0
        nleft += <size_t>(c.ltiles[t].rank if c.ltiles[t].rank >= 0 else blok_rows(B, i)) * w
    # Work: two h x h products, then (with threads) the buffered products of one column
    # blok, all rows below it (twice for LU).
    work = <scalar*>malloc((<size_t>2 * hmax * hmax + (0 if S == NULL else
                            <size_t>(B.stride[k] - w) * hmax * (2 if P.ops.two_factors else 1)))
                           * sizeof(scalar))
    prod = work + <size_t>2 * hmax * hmax
    left = <Side*>malloc(3 * max(ntile, 1) * sizeof(Side))
    if P.ops.scaled_left:
        lefts = <scalar*>malloc(max(nleft, 1) * sizeof(scalar))
    if work == NULL or left == NULL or (P.ops.scaled_left and lefts == NULL):
        free(work)
        free(left)
        free(lefts)
        return -1
    right = left + ntile
    uside = right + ntile
    # The operands: L's tiles (right, and left but for LDLᵀ's L D), Uᵀ's (LU).
    p = lefts
    for t in range(ntile):
        h = blok_rows(B, b0 + t)
        right[t] = tile_side(&c.ltiles[t], h)
        left[t] = right[t]
        if P.ops.two_factors:
            uside[t] = tile_side(&c.utiles[t], h)
        if P.ops.scaled_left:
            r = c.ltiles[t].rank
            if r >= 0:
                times_d(r, w, <scalar*>c.ltiles[t].bt, r, p, r, <scalar*>c.lcoef, w,
                        &P.pivtype[fc], &(<scalar*>P.dsub)[fc], P.ops.conj)
                left[t].y = p
                p += <size_t>r * w
            else:
                times_d(h, w, <scalar*>c.ltiles[t].u, h, p, h, <scalar*>c.lcoef, w,
                        &P.pivtype[fc], &(<scalar*>P.dsub)[fc], P.ops.conj)
                left[t].u = p
                p += <size_t>h * w
    for j in range(b0, end):
        if S != NULL and (S.abort or S.failcblk < k):
            break
        f = B.fcblk[j]
        if S == NULL or omp_test_lock(&S.locks[f]):
            # The target is free: the products go straight into it.
            direct_products(P, j, end, f, w, left - b0, right - b0, uside - b0, work,
                            work + hmax * hmax)
        else:
            # Another thread updates it: the products into our buffer (as the dense
            # updates', update_products), subtracted under the lock once it is free.
            M = B.stride[k] - B.bcoef[j]
            h = blok_rows(B, j)
            buffered_products(P, j, end, w, left - b0, right - b0, uside - b0, prod, M,
                              work, work + hmax * hmax)
            omp_set_lock(&S.locks[f])
            update_scatter(P, k, j, j, h, prod, runs)
        if S != NULL:
            release_target(S, f)
    free(work)
    free(left)
    free(lefts)
    return 0


cdef void direct_products(const FactorState* P, idx_t j, idx_t end, idx_t f, int w,
                          const Side* left, const Side* right, const Side* uside,
                          scalar* work, scalar* work2) noexcept nogil:
    """Column blok j's updates (with the bloks i >= j) subtracted straight from the
    panel(s) of f, the cblk j faces. ``left``, ``right``, ``uside`` are indexed by blok."""
    cdef const Blocks* B = &P.B
    cdef idx_t i, fb = B.bloknum[f], sf = B.stride[f], f0 = B.fcol[f]
    cdef idx_t col = (B.frow[j] - f0) * sf
    cdef scalar* fl = <scalar*>P.cblk[f].lcoef
    cdef scalar* fu = <scalar*>P.cblk[f].ucoef
    for i in range(j, end):
        # Blok i's rows in f's panel; its columns are blok j's rows.
        if not P.ops.two_factors:
            side_product(P.ops.tr, w, &left[i], &right[j], fl + row_in(B, f, i, &fb) + col, sf,
                         work, work2, False)
            continue
        side_product(c'T', w, &left[i], &uside[j], fl + row_in(B, f, i, &fb) + col, sf, work,
                     work2, False)
        if i == j:
            continue
        if B.fcblk[i] == f:
            # Uᵀ's rows i facing f: f's diagonal block above its diagonal, which L's
            # panel holds transposed: (rows of j, columns of i) -= L_j Uᵀ_iᵀ.
            side_product(c'T', w, &left[j], &uside[i], fl + (B.frow[j] - f0)
                         + (B.frow[i] - f0) * sf, sf, work, work2, False)
        else:
            side_product(c'T', w, &uside[i], &right[j], fu + row_in(B, f, i, &fb) + col, sf,
                         work, work2, False)


cdef void buffered_products(const FactorState* P, idx_t j, idx_t end, int w,
                            const Side* left, const Side* right, const Side* uside,
                            scalar* prod, int M, scalar* work, scalar* work2) noexcept nogil:
    """Column blok j's updates into ``prod`` laid out as :func:`update_products` lays out
    a group of one blok (M rows from blok j down, h_j columns; LU's Uᵀ products after
    them), for :func:`update_scatter`."""
    cdef const Blocks* B = &P.B
    cdef idx_t i, r0 = B.bcoef[j]
    cdef int h = blok_rows(B, j)
    cdef scalar* second = prod + <size_t>M * h
    for i in range(j, end):
        if not P.ops.two_factors:
            side_product(P.ops.tr, w, &left[i], &right[j], prod + (B.bcoef[i] - r0), M, work,
                         work2, True)
            continue
        side_product(c'T', w, &left[i], &uside[j], prod + (B.bcoef[i] - r0), M, work, work2,
                     True)
        if i > j:  # (the rows of j itself are not read: update_scatter starts below)
            side_product(c'T', w, &uside[i], &right[j], second + (B.bcoef[i] - r0), M, work,
                         work2, True)
