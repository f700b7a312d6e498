# The factorization: A's entries assembled into a cblk's panel, its diagonal block
# factored and the panel below it solved (factor_panel), progress reports, the
# sequential driver, and the entry point that picks it or the threaded one.


cdef idx_t factor_panel(const FactorState* P, idx_t k, scalar* wbuf, scalar* tmp,
                        idx_t* count) noexcept nogil:
    """Factor cblk k's diagonal block, then solve its panel below it.

    A cblk marked for compression has its off-diagonal bloks compressed first and
    only their small factors solved (compress.pxi); where that cannot be done (memory)
    it is solved and kept dense. LDLᵀ leaves W = A21 L11⁻ᵀ in ``wbuf`` for a dense
    panel's updates; LU records its row interchanges in ``lperm`` (each cblk owns its
    segment: threads never share one). Perturbed pivots are added to ``count``.
    Returns the first column (pivot order) whose LLᵀ pivot is not positive, else -1.
    """
    cdef const Blocks* B = &P.B
    cdef idx_t fc = B.fcol[k]
    cdef int w = cblk_width(B, k), m = B.stride[k], info, h, M
    cdef scalar* base = <scalar*>P.cblk[k].lcoef
    cdef scalar* ubase = <scalar*>P.cblk[k].ucoef
    cdef scalar* dsub = <scalar*>P.dsub
    cdef int* ipiv
    cdef idx_t e
    if P.cblk[k].compress == MINIMAL_MEMORY and P.cblk[k].lcoef == NULL:
        # Its panels are made now, its updates gathered from the cblks facing it.
        if gather_updates(P, k, wbuf) < 0:
            P.nomem[0] = 1
            return -1
        base = <scalar*>P.cblk[k].lcoef
        ubase = <scalar*>P.cblk[k].ucoef
    elif P.cblk[k].compress == JUST_IN_TIME and P.cblk[k].lcoef == NULL:
        # Just-in-time, and no update came: its panels are made now.
        if ensure_panels(P, k, wbuf) < 0:
            P.nomem[0] = 1
            return -1
        base = <scalar*>P.cblk[k].lcoef
        ubase = <scalar*>P.cblk[k].ucoef
    # All updates to k are in: add A, the panel is complete.
    add_entries(&P.al, base, k)
    if P.ops.two_factors:
        add_entries(&P.au, ubase, k)
    if P.ops.diagonal == CHOLESKY:
        info = potrf(w, base, m)
        if info > 0:
            return fc + info - 1
    elif P.ops.diagonal == PARTIAL_LU:
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
    else:
        count[0] += ldlt_bunch_kaufman(w, m, base, P.ops.conj, P.tol, &P.lperm[fc],
                                       &P.pivtype[fc], &P.pert[fc], &dsub[fc], tmp)
    if P.cblk[k].compress and compress_cblk(P, k, base) == 0:
        return -1
    # The panel below the block; LDLᵀ keeps W = A21 L11⁻ᵀ for the updates.
    solve_rows(P, k, L_PANEL, m - w, base + w, m, wbuf)
    if P.ops.two_factors:
        solve_rows(P, k, U_PANEL, m - w, ubase + w, m, NULL)
    return -1


# ---------------------------------------------------------------------------- progress

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


cdef inline double cblk_weight(const FactorState* P, idx_t k) noexcept nogil:
    """Estimated flops of cblk k's panel and updates (width x rows²), for progress."""
    return (<double>cblk_width(&P.B, k)) * P.B.stride[k] * P.B.stride[k]


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


# ---------------------------------------------------------------------------- drivers

cdef void factorize_in_order(FactorState* P, scalar* work, scalar* wbuf, scalar* tmp,
                             Reporter* R, idx_t* count, idx_t* failed) noexcept nogil:
    """Factor the cblks in order on the calling thread (right-looking: each cblk updates
    the later ones it faces): the reference the threaded driver agrees with."""
    cdef idx_t k
    cdef double done = 0, total = 0
    for k in range(P.B.ncblk):
        if P.only == NULL or P.only[k]:
            total += cblk_weight(P, k)
    for k in range(P.B.ncblk):
        if P.only != NULL and not P.only[k]:
            continue
        failed[0] = factor_panel(P, k, wbuf, tmp, count)
        if failed[0] >= 0 or P.nomem[0]:
            return
        apply_updates(NULL, P, k, work, wbuf, tmp)
        if P.nomem[0]:
            return
        done += cblk_weight(P, k)
        if maybe_report(R, done / total) != 0:
            return


def factorize(Structure structure, Storage storage, int kind, double tol, assembly,
              scalar[::1] values_l, scalar[::1] values_u, pivots, int threads=1,
              progress=None, compression=None, only=None, bint ordered=True):
    """Factor all cblks in place (GIL released), on ``threads`` OpenMP threads.

    Parameters
    ----------
    structure : Structure
    storage : Storage
        Zeroed panels, in this function's precision, for ``structure``.
    kind : int
        A value of :data:`KIND_CODES`.
    tol : float
        Static pivoting threshold.
    assembly : AssemblyMap
        Where A's entries go: ``pos_l``, ``ptr_l``, ``pos_u``, ``ptr_u`` (each cblk's
        entries are added into its panel just before it is factored, on the thread that
        factors it).
    values_l, values_u : arrays of the factors' dtype
        A's entries in the assembly map's order (``values_u`` empty except for LU).
    pivots : object
        Its arrays are written: ``lperm`` (int64, LDLᵀ and LU, the identity on entry),
        ``pivtype`` (int8, LDLᵀ), ``dsub`` (the factors' dtype, LDLᵀ), ``pert`` (int8).
    threads : int
        1: the cblks in order on the calling thread (the reference). More: cblks are
        factored as soon as their updates are in (factors agree to rounding); BLAS
        should then be limited to one thread by the caller.
    progress : callable, optional
        ``progress(fraction)``, called from the calling thread every 2% of the
        estimated flops. An exception it raises (or a KeyboardInterrupt) stops the
        work and is raised again here, the factors left incomplete.
    compression : mapping, optional
        For the cblks the storage marks ``compress`` (needed when there are any):
        ``method`` ("rrqr", "svd", "randomized"), ``tol`` (absolute, per tile),
        ``max_ratio`` and ``min_height`` (see :c:type:`Compression`), ``power``.
        Each such cblk is compressed as soon as it is factored and sends its updates
        from its tiles; :meth:`Storage.tiles` reports the result.
    only : int8 array (ncblk), optional
        Factor only the cblks marked 1 (held here, their updates from other calls and
        owners already in), in order; their updates go to every cblk they face (held
        here, or a fan-in panel), which later calls factor or hand over. Default: all.
    ordered : bool
        Threads: each cblk takes its updates in the sequential order, so that the
        factors are the same bits from run to run (scheduler.pxi). False: as they
        come, under the target's lock (to measure what the order costs).

    Returns
    -------
    perturbed : int
        Pivots replaced by static pivoting.
    failed_column : int
        LLᵀ: the first column (pivot order) whose pivot is not positive, else -1;
        the factorization stops there (the first in pivot order whatever the threads).
    """
    cdef idx_t[::1] lperm = pivots.lperm
    cdef signed char[::1] pivtype = pivots.pivtype
    cdef scalar[::1] dsub = pivots.dsub
    cdef signed char[::1] pert = pivots.pert
    cdef FactorState P
    cdef idx_t n = structure.B.fcol[structure.B.ncblk], count = 0, failed = -1, k
    cdef idx_t sizes[3]
    cdef int nomem = 0
    cdef list errors = []
    cdef Reporter R = new_reporter(progress, errors)
    cdef scalar* work = NULL  # also picks the specialization of the calls below
    storage.check(structure, scalar_code(work), False)
    P.B = structure.B
    P.ops = kind_ops(kind, scalar is cfloat or scalar is cdouble)
    if storage.two_factors != P.ops.two_factors:
        raise ValueError("the storage's factors do not match the kind")
    if pert.shape[0] != n or (kind != LLT and lperm.shape[0] != n) \
            or (P.ops.diagonal == BUNCH_KAUFMAN and (pivtype.shape[0] != n or dsub.shape[0] != n)):
        raise ValueError("the pivots' arrays do not match the matrix")
    P.cblk = storage.cblk
    P.tol = tol
    P.dsub = &dsub[0] if dsub.shape[0] else NULL
    P.lperm = &lperm[0] if lperm.shape[0] else NULL
    P.pivtype = &pivtype[0] if pivtype.shape[0] else NULL
    P.pert = &pert[0]
    cdef cnp.ndarray pos_l = assembly.pos_l, pos_u = assembly.pos_u
    cdef const idx_t[::1] ptr_l = assembly.ptr_l
    cdef const idx_t[::1] ptr_u = assembly.ptr_u
    P.al = make_entries(values_l, pos_l, ptr_l, structure)
    P.au = make_entries(values_u, pos_u, ptr_u, structure)
    P.nomem = &nomem
    P.lr = compression_params(storage, compression)
    P.in_ptr = P.in_blok = P.blok_cblk = NULL
    cdef const idx_t[::1] in_ptr, in_blok, blok_cblk
    if compression is not None and "in_ptr" in compression:
        in_ptr = compression["in_ptr"]
        in_blok = compression["in_blok"]
        blok_cblk = compression["blok_cblk"]
        if in_ptr.shape[0] != P.B.ncblk + 1 or blok_cblk.shape[0] != P.B.bloknum[P.B.ncblk] \
                or in_blok.shape[0] != in_ptr[P.B.ncblk]:
            raise ValueError("compression's incoming bloks do not match the structure")
        P.in_ptr = &in_ptr[0]
        P.in_blok = &in_blok[0] if in_blok.shape[0] else NULL
        P.blok_cblk = &blok_cblk[0]
    for k in range(P.B.ncblk):
        if storage.cblk[k].compress == MINIMAL_MEMORY and P.in_ptr == NULL:
            raise ValueError("minimal-memory cblks need compression's incoming bloks")
    cdef const int8_t[::1] mask
    P.only = NULL
    if only is not None:
        mask = only
        if mask.shape[0] != P.B.ncblk:
            raise ValueError("only needs one entry per cblk")
        P.only = &mask[0]
    check_factored(&P, storage)
    if threads > 1 and P.B.ncblk > 1:
        result = factorize_threaded(&P, threads, &R, errors, work, ordered)
        storage.count_held()
        if nomem:
            raise MemoryError("cannot allocate the work memory of a compressed cblk's updates")
        return result
    workspace_sizes(&P, 0, P.B.ncblk, sizeof(scalar), sizes)
    work = <scalar*>malloc((sizes[0] + sizes[1] + sizes[2]) * sizeof(scalar))
    if work == NULL:
        raise MemoryError("cannot allocate the factorization work buffers")
    with nogil:
        factorize_in_order(&P, work, work + sizes[0], work + sizes[0] + sizes[1], &R, &count,
                           &failed)
    free(work)
    storage.count_held()
    if errors:
        raise errors[0]
    if nomem:
        raise MemoryError("cannot allocate the work memory of a compressed cblk's updates")
    return count, failed


def work_scalars(Structure structure, int kind, int itemsize):
    """Scalars of the work buffers :func:`factorize` allocates per thread before the first
    cblk (update products, LDLᵀ's W, a scratch: ``workspace_sizes``) for ``structure``
    and a kind of :data:`KIND_CODES`, in a dtype of ``itemsize`` bytes: the memory
    forecast counts them."""
    cdef FactorState P
    cdef idx_t sizes[3]
    P.B = structure.B
    P.ops = kind_ops(kind, False)
    workspace_sizes(&P, 0, P.B.ncblk, itemsize, sizes)
    return int(sizes[0] + sizes[1] + sizes[2])


cdef int check_factored(const FactorState* P, Storage storage) except -1:
    """Raise unless every cblk to factor is held here as a dense panel and every cblk
    it faces is held here or has a fan-in panel."""
    cdef idx_t k, b, f
    cdef bint minmem = False, shared = False
    for k in range(P.B.ncblk):
        minmem = minmem or P.cblk[k].compress == MINIMAL_MEMORY
        shared = shared or P.cblk[k].storage == ABSENT or P.cblk[k].storage == FANIN
    if minmem and shared:
        raise ValueError("minimal memory gathers a cblk's updates from every cblk facing "
                         "it: not with cblks of other owners")
    for k in range(P.B.ncblk):
        if P.only != NULL and not P.only[k]:
            continue
        if P.cblk[k].storage != DENSE:
            raise ValueError(f"cblk {k} is to be factored but is not held here")
        for b in range(P.B.bloknum[k] + 1, P.B.bloknum[k + 1]):
            f = P.B.fcblk[b]
            if P.cblk[f].storage == ABSENT:
                raise ValueError(f"cblk {k} updates cblk {f}, which is neither held here "
                                 "nor given a fan-in panel")
    return 0


LR_METHODS = {"rrqr": LR_RRQR, "svd": LR_SVD, "randomized": LR_RANDOMIZED}


cdef Compression compression_params(Storage storage, compression) except *:
    """The Compression of :func:`factorize`'s ``compression`` mapping, validated."""
    cdef Compression C
    cdef idx_t k
    C.method = -1
    C.tol = 0
    C.max_ratio = 0
    C.min_height = 0
    C.power = POWER
    if compression is None:
        for k in range(storage.ncblk):
            if storage.cblk[k].compress:
                raise ValueError("the storage has cblks to compress: give compression=")
        return C
    if compression["method"] not in LR_METHODS:
        raise ValueError(f"unknown compression method {compression['method']!r}")
    C.method = LR_METHODS[compression["method"]]
    C.tol = float(compression["tol"])
    C.max_ratio = float(compression.get("max_ratio", 0.5))
    C.min_height = int(compression.get("min_height", 20))
    C.power = int(compression.get("power", POWER))
    if not C.tol >= 0 or not 0 <= C.max_ratio <= 1:
        raise ValueError("compression needs tol >= 0 and 0 <= max_ratio <= 1")
    return C
