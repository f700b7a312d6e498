# The threaded driver: a dynamic scheduler over cblks (OpenMP).
#
# npend[f] counts the updates (off-diagonal bloks of earlier cblks facing f) that f
# still waits for; a cblk with none left is ready. A worker pops the lowest ready cblk,
# factors its panel, then for each off-diagonal blok, nearest target first, computes the
# update into its own buffer and subtracts it under the target's lock (or, when the
# target's lock is free and its rows are contiguous, accumulates the gemm straight into
# it), decrements the target's count and, at zero, makes the target ready. Only the sum
# order of a panel's updates differs from the sequential run.


cdef struct Scheduler:
    omp_lock_t* locks  # one per cblk: its panel(s) and npend
    idx_t* npend
    omp_lock_t qlock  # guards everything below
    idx_t* heap  # ready cblks, a min-heap on the index
    idx_t nheap
    idx_t active  # cblks popped and not finished
    idx_t failcblk  # lowest cblk whose LLᵀ pivot failed; ncblk while none
    idx_t failed  # its failing column
    idx_t count  # perturbed pivots
    int abort  # the progress callback raised (or Ctrl-C): stop
    double* weight  # estimated flops per cblk, for progress
    const int8_t* only  # the cblks this run factors (NULL: all); the others never ready
    double done
    double total


cdef void heap_push(idx_t* heap, idx_t* n, idx_t x) noexcept nogil:
    cdef idx_t i = n[0], p
    n[0] += 1
    while i > 0:
        p = (i - 1) >> 1
        if heap[p] <= x:
            break
        heap[i] = heap[p]
        i = p
    heap[i] = x


cdef idx_t heap_pop(idx_t* heap, idx_t* n) noexcept nogil:
    cdef idx_t top = heap[0], x, i = 0, c
    n[0] -= 1
    x = heap[n[0]]
    while True:
        c = 2 * i + 1
        if c >= n[0]:
            break
        if c + 1 < n[0] and heap[c + 1] < heap[c]:
            c += 1
        if x <= heap[c]:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = x
    return top


cdef void make_ready(Scheduler* S, idx_t f) noexcept nogil:
    omp_set_lock(&S.qlock)
    heap_push(S.heap, &S.nheap, f)
    omp_unset_lock(&S.qlock)


cdef void release_target(Scheduler* S, idx_t f) noexcept nogil:
    """One update of cblk f is in (its lock held by the caller): count it, unlock, and
    make f ready when it was the last."""
    cdef bint ready
    S.npend[f] -= 1
    ready = S.npend[f] == 0 and (S.only == NULL or S.only[f])
    omp_unset_lock(&S.locks[f])
    if ready:
        make_ready(S, f)


cdef void run_cblk(Scheduler* S, const FactorState* P, idx_t k, scalar* work, scalar* wbuf,
                   scalar* tmp, idx_t* count) noexcept nogil:
    """Factor cblk k and apply its updates to the cblks it faces (one task)."""
    cdef idx_t failed
    failed = factor_panel(P, k, wbuf, tmp, count)
    if P.nomem[0]:
        omp_set_lock(&S.qlock)
        S.abort = 1
        omp_unset_lock(&S.qlock)
        return
    if failed >= 0:
        # Cblks after k are skipped; those before it finish, so the lowest failing
        # cblk, hence the reported column, is the sequential run's.
        omp_set_lock(&S.qlock)
        if k < S.failcblk:
            S.failcblk = k
            S.failed = failed
        omp_unset_lock(&S.qlock)
        return
    apply_updates(S, P, k, work, wbuf, tmp)


cdef void worker(Scheduler* S, const FactorState* P, int tid, scalar* work, scalar* wbuf,
                 scalar* tmp, Reporter* R) noexcept nogil:
    """Run tasks until none is left or can become ready. Thread 0 (the caller's) also
    reports progress every 2% of the flops and checks for signals every 0.1 s."""
    cdef idx_t k, count = 0
    cdef bint skip, idle
    while True:
        # Idle workers look before they lock, so that they leave the queue to the others.
        idle = S.nheap == 0 and S.active > 0 and not S.abort
        if not idle:
            omp_set_lock(&S.qlock)
            if S.abort or (S.nheap == 0 and S.active == 0):
                omp_unset_lock(&S.qlock)
                break
            idle = S.nheap == 0
            if not idle:
                k = heap_pop(S.heap, &S.nheap)
                S.active += 1
                skip = k > S.failcblk
            omp_unset_lock(&S.qlock)
        if not idle:
            if not skip:
                run_cblk(S, P, k, work, wbuf, tmp, &count)
            omp_set_lock(&S.qlock)
            S.active -= 1
            S.done += S.weight[k]
            omp_unset_lock(&S.qlock)
        if tid == 0 and maybe_report(R, S.done / S.total) != 0:
            omp_set_lock(&S.qlock)
            S.abort = 1
            omp_unset_lock(&S.qlock)
        if idle:
            sched_yield()
    omp_set_lock(&S.qlock)
    S.count += count
    omp_unset_lock(&S.qlock)


cdef object factorize_threaded(FactorState* P, int nthreads, Reporter* R, list errors,
                               scalar* like):
    """The threaded half of :func:`factorize` (``like`` only picks the type)."""
    cdef idx_t ncblk = P.B.ncblk, k, b, per
    cdef idx_t sizes[3]
    cdef int tid, nt = max(1, nthreads)
    cdef Scheduler S
    cdef scalar* buffers
    cdef scalar* mine
    workspace_sizes(P, 0, ncblk, sizeof(scalar), sizes)
    per = sizes[0] + sizes[1] + sizes[2]
    buffers = <scalar*>malloc(nt * per * sizeof(scalar))
    S.locks = <omp_lock_t*>malloc(max(ncblk, 1) * sizeof(omp_lock_t))
    S.npend = <idx_t*>calloc(max(ncblk, 1), sizeof(idx_t))
    S.heap = <idx_t*>malloc(max(ncblk, 1) * sizeof(idx_t))
    S.weight = <double*>malloc(max(ncblk, 1) * sizeof(double))
    if buffers == NULL or S.locks == NULL or S.npend == NULL or S.heap == NULL \
            or S.weight == NULL:
        free(buffers)
        free(S.locks)
        free(S.npend)
        free(S.heap)
        free(S.weight)
        raise MemoryError("cannot allocate the factorization work buffers")
    S.nheap = 0
    S.active = 0
    S.failcblk = ncblk
    S.failed = -1
    S.count = 0
    S.abort = 0
    S.done = 0
    S.total = 0
    S.only = P.only
    for k in range(ncblk):
        omp_init_lock(&S.locks[k])
        S.weight[k] = 0
        if P.only != NULL and not P.only[k]:
            continue
        for b in range(P.B.bloknum[k] + 1, P.B.bloknum[k + 1]):
            S.npend[P.B.fcblk[b]] += 1
        S.weight[k] = cblk_weight(P, k)
        S.total += S.weight[k]
    for k in range(ncblk):
        if S.npend[k] == 0 and (P.only == NULL or P.only[k]):
            heap_push(S.heap, &S.nheap, k)
    omp_init_lock(&S.qlock)
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        mine = buffers + tid * per
        worker(&S, P, tid, mine, mine + sizes[0], mine + sizes[0] + sizes[1], R)
    omp_destroy_lock(&S.qlock)
    for k in range(ncblk):
        omp_destroy_lock(&S.locks[k])
    free(buffers)
    free(S.locks)
    free(S.npend)
    free(S.heap)
    free(S.weight)
    if errors:
        raise errors[0]
    return S.count, S.failed if S.failcblk < ncblk else -1
