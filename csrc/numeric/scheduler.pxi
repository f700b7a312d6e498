# The threaded driver: a dynamic scheduler over cblks (OpenMP).
#
# npend[f] counts the updates (off-diagonal bloks of earlier cblks facing f) that f
# still waits for; a cblk with none left is ready. A worker pops the lowest ready cblk,
# factors its panel, then for each off-diagonal blok, nearest target first, computes
# what it can without the target, and applies the update at the target's turn.
#
# Turns make the factors the same bits from run to run: each cblk takes its updates in
# one order, the sequential run's (by source cblk, then blok: ``slot``), whatever order
# the sources finish in. An update whose turn has come is applied by the kernels the
# sequential run uses, straight into the target (no other thread writes it until the
# turn passes, so no lock is held meanwhile); one that comes early is kept (Deferred:
# what it still needs that would not outlive its source's task, copied), and once its
# turn comes a drain task applies it and the kept ones after it, in turn, on whichever
# worker is free first (the thread that passed the turn goes on with its own updates).
# The rounding is then the sequential run's, on any number of threads.


cdef enum:
    # What a Deferred update still has to do to its target, and what it keeps.
    DEFER_NOTHING = 0  # a rank-0 column: nothing to subtract
    DEFER_SINGLE = 1  # update_single of blok b from its source's panel (LDLᵀ: W kept)
    DEFER_SCATTER = 2  # scatter_blok of blok b's columns of a kept product
    DEFER_EXPAND = 3  # expand_column of column blok b from kept stacks
    DEFER_DENSE_COLUMN = 4  # dense_column_apply of column blok b from a kept product


cdef struct Kept:
    # Shared by the Deferred updates of one source: LDLᵀ's W = L D from panel row row0
    # on (the rows below a source's first early blok), ld stride - row0.
    int refs  # under the scheduler's qlock
    idx_t row0
    void* data


cdef struct Deferred:
    int what  # DEFER_*
    idx_t k  # source cblk
    idx_t b  # its blok (column blok of a compressed source)
    int ld  # leading dimension of a and c
    void* a  # the kept operand(s) of ``what``, in this allocation (or in kept)
    void* c  # LU's second one
    Kept* kept


cdef struct Scheduler:
    omp_lock_t* locks  # one per cblk: its npend, turn and pending slots
    idx_t* npend
    idx_t* slot  # per blok: its place in its target's order of updates (-1: none)
    idx_t* turn  # per cblk: the slot of the next update it takes
    Deferred** pending  # per slot: an update kept until its turn, or NULL
    bint ordered  # False: updates applied as they come, under the target's lock
    omp_lock_t qlock  # guards everything below
    idx_t* heap  # ready tasks, a min-heap: 2 f + 1 factors cblk f, 2 f drains f (below)
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
    """Cblk f has all its updates: a task to factor it."""
    omp_set_lock(&S.qlock)
    heap_push(S.heap, &S.nheap, 2 * f + 1)
    omp_unset_lock(&S.qlock)


cdef void push_drain(Scheduler* S, idx_t f) noexcept nogil:
    """Cblk f's next update in turn was kept: a task to apply it and those after it."""
    omp_set_lock(&S.qlock)
    heap_push(S.heap, &S.nheap, 2 * f)
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


cdef Deferred* new_deferred(int what, idx_t k, idx_t b, int ld, size_t abytes,
                           size_t cbytes) noexcept nogil:
    """A Deferred with room for its kept operands (``a``: abytes, ``c``: cbytes); NULL
    when memory ran out."""
    cdef size_t head = (sizeof(Deferred) + 63) // 64 * 64, abytes_up = (abytes + 63) // 64 * 64
    cdef Deferred* d = <Deferred*>malloc(head + abytes_up + cbytes)
    if d == NULL:
        return NULL
    d.what = what
    d.k = k
    d.b = b
    d.ld = ld
    d.a = <char*>d + head if abytes else NULL
    d.c = <char*>d + head + abytes_up if cbytes else NULL
    d.kept = NULL
    return d


cdef void release_kept(Scheduler* S, Kept* kept) noexcept nogil:
    """Drop one reference to ``kept``, freed with the last."""
    cdef bint last
    omp_set_lock(&S.qlock)
    kept.refs -= 1
    last = kept.refs == 0
    omp_unset_lock(&S.qlock)
    if last:
        free(kept.data)
        free(kept)


cdef void free_deferred(Scheduler* S, Deferred* d) noexcept nogil:
    if d.kept != NULL:
        release_kept(S, d.kept)
    free(d)


cdef bint take_turn(Scheduler* S, idx_t b, idx_t f) noexcept nogil:
    """Whether blok b's update is the next that cblk f takes. Then the caller applies it
    (no other thread writes f before the caller's :func:`next_turn`); else f stays
    locked for the caller's :func:`defer`."""
    omp_set_lock(&S.locks[f])
    if not S.ordered:
        # Applied now, under f's lock (released by next_turn).
        return True
    if S.turn[f] == S.slot[b]:
        omp_unset_lock(&S.locks[f])
        return True
    return False


cdef void defer(Scheduler* S, const FactorState* P, idx_t b, idx_t f, Deferred* d) noexcept nogil:
    """Keep ``d``, blok b's update of cblk f (locked by :func:`take_turn`), for its turn;
    NULL: memory ran out, the factorization stops."""
    if d == NULL:
        P.nomem[0] = 1
        omp_set_lock(&S.qlock)
        S.abort = 1
        omp_unset_lock(&S.qlock)
    else:
        S.pending[S.slot[b]] = d
    omp_unset_lock(&S.locks[f])


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
    cdef idx_t task, k, count = 0
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
                task = heap_pop(S.heap, &S.nheap)
                k = task >> 1
                S.active += 1
                skip = k > S.failcblk
            omp_unset_lock(&S.qlock)
        if not idle:
            if not skip and task & 1:
                run_cblk(S, P, k, work, wbuf, tmp, &count)
            elif not skip:
                drain(S, P, k, work, <idx_t*>tmp)
            omp_set_lock(&S.qlock)
            S.active -= 1
            if task & 1:
                S.done += S.weight[k]
            omp_unset_lock(&S.qlock)
        if tid == 0 and maybe_report(R, S.done / S.total) != 0:
            omp_set_lock(&S.qlock)
            S.abort = 1
            omp_unset_lock(&S.qlock)
        if idle:
            pastixpy_yield()
    omp_set_lock(&S.qlock)
    S.count += count
    omp_unset_lock(&S.qlock)


cdef void free_scheduler(Scheduler* S, void* buffers) noexcept nogil:
    free(buffers)
    free(S.locks)
    free(S.npend)
    free(S.heap)
    free(S.weight)
    free(S.slot)
    free(S.turn)
    free(S.pending)


cdef object factorize_threaded(FactorState* P, int nthreads, Reporter* R, list errors,
                               scalar* like, bint ordered=True):
    """The threaded half of :func:`factorize` (``like`` only picks the type)."""
    cdef idx_t ncblk = P.B.ncblk, k, b, f, per, nblok = P.B.bloknum[P.B.ncblk], nslot = 0
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
    # At most one factor task and one drain task per cblk.
    S.heap = <idx_t*>malloc(max(2 * ncblk, 1) * sizeof(idx_t))
    S.weight = <double*>malloc(max(ncblk, 1) * sizeof(double))
    S.slot = <idx_t*>malloc(max(nblok, 1) * sizeof(idx_t))
    S.turn = <idx_t*>calloc(max(ncblk, 1), sizeof(idx_t))
    S.pending = <Deferred**>calloc(max(nblok, 1), sizeof(Deferred*))
    if buffers == NULL or S.locks == NULL or S.npend == NULL or S.heap == NULL \
            or S.weight == NULL or S.slot == NULL or S.turn == NULL or S.pending == NULL:
        free_scheduler(&S, buffers)
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
    S.ordered = ordered
    for k in range(ncblk):
        omp_init_lock(&S.locks[k])
        S.weight[k] = 0
        if P.only != NULL and not P.only[k]:
            continue
        for b in range(P.B.bloknum[k] + 1, P.B.bloknum[k + 1]):
            S.npend[P.B.fcblk[b]] += 1
        S.weight[k] = cblk_weight(P, k)
        S.total += S.weight[k]
    # Each cblk's slots, in the sequential run's order (source cblk, then blok), but
    # for those that gather their updates themselves (minimal memory): turn[f] is
    # first f's first slot, then the next to take.
    for f in range(ncblk):
        S.turn[f] = nslot
        if P.cblk[f].compress != MINIMAL_MEMORY:
            nslot += S.npend[f]
    for b in range(nblok):
        S.slot[b] = -1
    for k in range(ncblk):
        if P.only != NULL and not P.only[k]:
            continue
        for b in range(P.B.bloknum[k] + 1, P.B.bloknum[k + 1]):
            f = P.B.fcblk[b]
            if P.cblk[f].compress != MINIMAL_MEMORY:
                S.slot[b] = S.turn[f]
                S.turn[f] += 1
    for b in range(nblok):
        if S.slot[b] >= 0:
            S.turn[P.B.fcblk[b]] -= 1
    for k in range(ncblk):
        if S.npend[k] == 0 and (P.only == NULL or P.only[k]):
            heap_push(S.heap, &S.nheap, 2 * k + 1)
    omp_init_lock(&S.qlock)
    with nogil, parallel(num_threads=nt):
        tid = threadid()
        mine = buffers + tid * per
        worker(&S, P, tid, mine, mine + sizes[0], mine + sizes[0] + sizes[1], R)
    # Updates still kept: their targets were never to be factored (a failed pivot, or
    # a stop).
    for b in range(nblok):
        if S.pending[b] != NULL:
            free_deferred(&S, S.pending[b])
    omp_destroy_lock(&S.qlock)
    for k in range(ncblk):
        omp_destroy_lock(&S.locks[k])
    free_scheduler(&S, buffers)
    if errors:
        raise errors[0]
    return S.count, S.failed if S.failcblk < ncblk else -1
