# The typed structs every kernel takes: the block structure (Blocks, made by Structure),
# where each cblk's coefficients live (CblkStore, made by Storage), what the
# factorization kind decides (Ops), and the assembly of A's entries (Entries).
#
# Block structure: cblk k holds columns fcol[k]..fcol[k+1]-1 and a panel of stride[k]
# rows, its diagonal block and then its off-diagonal bloks stacked; its bloks are
# bloknum[k]..bloknum[k+1]-1, the first being the diagonal block; blok b covers rows
# frow[b]..lrow[b] (pivot order), faces cblk fcblk[b] and starts at row bcoef[b] of
# its panel. (PaStiX's vocabulary: SolverCblk, SolverBlok.)
#
# Storage: a descriptor per cblk says in what form its coefficients are (a dense
# panel today; compressed tiles, or none where another owner holds it, tomorrow), in
# which precision, where (L's panel, and Uᵀ's for LU), and who holds it. Kernels reach
# coefficients only through it, so a cblk can be compressed, freed or remote without
# the kernels of the others knowing.

cimport cython


cdef struct Blocks:
    idx_t ncblk
    const idx_t* fcol
    const idx_t* bloknum
    const idx_t* stride
    const idx_t* frow
    const idx_t* lrow
    const idx_t* fcblk
    const idx_t* bcoef


cdef inline int cblk_width(const Blocks* B, idx_t k) noexcept nogil:
    return B.fcol[k + 1] - B.fcol[k]


cdef inline int blok_rows(const Blocks* B, idx_t b) noexcept nogil:
    return B.lrow[b] - B.frow[b] + 1


# Its pointers (B) point into its arrays, and a Storage's __dealloc__ reads them: the
# garbage collector must not clear the arrays while the structure is alive (they never
# lead back to it, so it cannot hold a cycle up).
@cython.no_gc_clear
cdef class Structure:
    """The block structure of an analysis, as the kernels read it (one per analysis).

    Parameters
    ----------
    fcol : int64 array (ncblk + 1)
        First column of each cblk, then n.
    bloknum : int64 array (ncblk + 1)
        First blok of each cblk, then the number of bloks.
    stride : int64 array (ncblk)
        Rows of each cblk's panel.
    frow, lrow, fcblk, bcoef : int64 arrays (nblok)
        Each blok's first and last row, the cblk it faces, its first row in its panel.
    """

    cdef Blocks B
    cdef readonly object fcol, bloknum, stride, frow, lrow, fcblk, bcoef

    def __cinit__(self, fcol, bloknum, stride, frow, lrow, fcblk, bcoef):
        arrays = [np.ascontiguousarray(a, dtype=np.int64)
                  for a in (fcol, bloknum, stride, frow, lrow, fcblk, bcoef)]
        self.fcol, self.bloknum, self.stride, self.frow, self.lrow, self.fcblk, self.bcoef = arrays
        ncblk = self.fcol.shape[0] - 1
        nblok = self.frow.shape[0]
        if ncblk < 1 or self.bloknum.shape[0] != ncblk + 1 or self.stride.shape[0] != ncblk \
                or self.bloknum[0] != 0 or self.bloknum[ncblk] != nblok \
                or any(a.shape[0] != nblok for a in (self.lrow, self.fcblk, self.bcoef)):
            raise ValueError("the block structure arrays do not match")
        self.B.ncblk = ncblk
        self.B.fcol = <const idx_t*>cnp.PyArray_DATA(self.fcol)
        self.B.bloknum = <const idx_t*>cnp.PyArray_DATA(self.bloknum)
        self.B.stride = <const idx_t*>cnp.PyArray_DATA(self.stride)
        self.B.frow = <const idx_t*>cnp.PyArray_DATA(self.frow)
        self.B.lrow = <const idx_t*>cnp.PyArray_DATA(self.lrow)
        self.B.fcblk = <const idx_t*>cnp.PyArray_DATA(self.fcblk)
        self.B.bcoef = <const idx_t*>cnp.PyArray_DATA(self.bcoef)

    def __reduce__(self):
        # Pickling and copy.deepcopy: rebuilt from its arrays (the pointers follow them).
        return Structure, (self.fcol, self.bloknum, self.stride, self.frow, self.lrow,
                           self.fcblk, self.bcoef)

    @property
    def ncblk(self):
        return self.B.ncblk

    @property
    def n(self):
        return int(self.fcol[self.B.ncblk])

    def panel_sizes(self):
        """Scalars of each cblk's panel (stride x width)."""
        return self.stride * np.diff(self.fcol)


# ---------------------------------------------------------------------------- storage

# How a cblk's coefficients are stored.
cdef enum:
    DENSE = 0  # column-major panels, stride x width: L's, and Uᵀ's for LU
    LOWRANK = 1  # a dense diagonal block, the off-diagonal bloks as tiles (block low-rank)
    ABSENT = 2  # held by another owner: nothing here
    FANIN = 3  # held by another owner; here a dense panel summing this owner's updates to it

STORAGE_NAMES = {DENSE: "dense", LOWRANK: "lowrank", ABSENT: "absent", FANIN: "fanin"}


cdef struct Tile:
    # One off-diagonal blok (h rows) of a LOWRANK cblk (w columns): rank r >= 0, the
    # tile is U Bt with U h x r (leading dimension h) and Bt r x w (leading dimension
    # r), Bt right after U in the one allocation at ``u``; rank -1 (it did not
    # compress), the tile is dense, h x w (leading dimension h) at ``u``.
    int32_t rank
    void* u
    void* bt


# When a cblk is compressed (CblkStore.compress).
cdef enum:
    KEEP_DENSE = 0
    JUST_IN_TIME = 1  # panels of its own from the start, receiving updates; compressed once factored
    MINIMAL_MEMORY = 2  # no panel until it is factored: it gathers its updates then (left-looking)


cdef struct CblkStore:
    int8_t storage  # DENSE, LOWRANK, ABSENT or FANIN
    int8_t dtype  # FLOAT32 ... COMPLEX128 (scalars.pxi): the factor's precision
    int8_t compress  # KEEP_DENSE, JUST_IN_TIME or MINIMAL_MEMORY
    int32_t owner  # who factors and holds the cblk (0 on one process)
    int32_t ld  # leading dimension at lcoef: the stride (DENSE) or the width (LOWRANK)
    void* lcoef  # L's panel (DENSE), L's diagonal block (LOWRANK), NULL where ABSENT
    void* ucoef  # Uᵀ's panel for LU (DENSE), else NULL
    Tile* ltiles  # LOWRANK: L's off-diagonal bloks, in blok order
    Tile* utiles  # LOWRANK LU: Uᵀ's
    int64_t held  # LOWRANK: scalars held (diagonal block and tiles)
    double seconds  # LOWRANK: time spent compressing


cdef enum:
    PAGE_BYTES = 4096


cdef void touch_pages(char* start, size_t nbytes, int threads) noexcept nogil:
    """Write a zero into each page of fresh zeroed memory, on ``threads`` threads.

    A page first read (a gemm accumulating into a panel, A's entries added into it) maps
    the shared zero page, and its first write then replaces it: a second fault, and a
    TLB flush on every core running the process. Written first, each page faults once.
    """
    cdef ssize_t i, npages = <ssize_t>((nbytes + PAGE_BYTES - 1) // PAGE_BYTES)
    if npages <= 0:
        return
    for i in prange(npages, num_threads=max(threads, 1), schedule="static"):
        start[i * PAGE_BYTES] = 0


cdef void free_tiles(const Blocks* B, idx_t k, CblkStore* c) noexcept nogil:
    """Free a LOWRANK cblk's diagonal block and tiles."""
    cdef idx_t t, ntile = B.bloknum[k + 1] - B.bloknum[k] - 1
    for t in range(ntile):
        if c.ltiles != NULL:
            free(c.ltiles[t].u)
        if c.utiles != NULL:
            free(c.utiles[t].u)
    free(c.ltiles)
    free(c.utiles)
    free(c.lcoef)
    c.ltiles = NULL
    c.utiles = NULL
    c.lcoef = NULL


cdef object _copy_array(const void* src, int rows, int cols, dtype):
    """A (rows x cols) numpy copy of column-major data at ``src``."""
    out = np.empty((cols, rows), dtype=dtype)
    if rows * cols:
        memcpy(cnp.PyArray_DATA(out), src, rows * cols * out.itemsize)
    return out.T


cdef void add_flat(dtype, void* dst, const void* src, size_t size) except *:
    """dst[:size] += src[:size] in ``dtype``."""
    cdef size_t i
    if dtype == np.float32:
        for i in range(size):
            (<float*>dst)[i] += (<const float*>src)[i]
    elif dtype == np.float64:
        for i in range(size):
            (<double*>dst)[i] += (<const double*>src)[i]
    elif dtype == np.complex64:
        for i in range(size):
            (<float complex*>dst)[i] += (<const float complex*>src)[i]
    else:
        for i in range(size):
            (<double complex*>dst)[i] += (<const double complex*>src)[i]


cdef inline idx_t tile_scalars(const Tile* t, int h, int w) noexcept nogil:
    """Scalars in a tile's allocation: U and Bt (rank r), or the dense block."""
    return <idx_t>t.rank * (h + w) if t.rank >= 0 else <idx_t>h * w


cdef inline bint _apart(const CblkStore* c) noexcept nogil:
    """Whether a cblk's dense panels, where it has any, are allocations of their own
    (marked for compression, or fan-in) rather than in the storage's group arrays."""
    return c.compress != KEEP_DENSE or c.storage == FANIN


cdef void* _malloc_copy(const void* src, size_t nbytes) except NULL:
    """A malloc'ed copy of ``nbytes`` at ``src`` (at least one byte, as the kernels
    allocate), for the storage to free as it frees the kernels' own."""
    cdef void* out = malloc(max(nbytes, 1))
    if out == NULL:
        raise MemoryError(f"cannot allocate {nbytes} bytes of the restored factors")
    if nbytes:
        memcpy(out, src, nbytes)
    return out


def _state_column(dict state, name, dtype, idx_t n):
    """One per-cblk array of a pickled storage's state, checked for length."""
    a = np.ascontiguousarray(state[name], dtype=dtype)
    if a.shape[0] != n or a.ndim != 1:
        raise ValueError(f"the pickled storage's {name} does not fit its block structure")
    return a


def _restored_storage(Structure structure, dtype, bint two_factors, dict state):
    """A :class:`Storage` rebuilt from the state its ``__reduce__`` saved."""
    return Storage(structure, dtype, two_factors, restore=state)


#: Consecutive cblks share one allocation until it holds this many bytes; a cblk at
#: least this large has its own (the large top separators, which compression and a
#: distributed run will want to free or not hold at all).
GROUP_BYTES = 32 * 2**20


# __dealloc__ reads the block structure (a compressed cblk's tile count): the garbage
# collector must not clear it first when the storage is only reachable from a
# reference cycle (it would free the tiles through None). The storage's own references
# (structure, arrays) never lead back to it, so it cannot hold a cycle up.
@cython.no_gc_clear
cdef class Storage:
    """The factors' coefficients, with one descriptor per cblk (see :c:type:`CblkStore`).

    Panels are allocated zeroed and their pages faulted in by writes (:func:`touch_pages`),
    by groups of consecutive cblks of about ``group_bytes``; a cblk larger
    than that is a group by itself. Cblks whose owner is not ``rank`` get no panel.

    Parameters
    ----------
    structure : Structure
    dtype : numpy dtype
        The factors' precision (one of the four kernel dtypes).
    two_factors : bool
        LU: a Uᵀ panel beside each L panel.
    owners : int32 array (ncblk), optional
        The owner of each cblk; all 0 (this process) by default.
    compress : int8 array (ncblk), optional
        Cblks compressed once factored; they get no panel here. 1 (just-in-time): the
        factorization gives it panels of its own at its first update and frees them
        when it replaces them by tiles; 2 (minimal memory): the factorization
        allocates them when the cblk is factored, gathering its updates then, and
        frees them once compressed.
    touch_threads : int
        Threads that fault the panels' pages in (see :func:`touch_pages`): those of
        the factorization, so that first-touch memory placement follows them.
    rank : int
        The owner this process is.
    fanin : int8 array (ncblk), optional
        Cblks of other owners that this one's cblks update (a distributed
        factorization): each gets a fan-in panel here, made zeroed at its first update,
        that sums those updates until :meth:`fanin_contribution` hands them over and
        :meth:`release` frees it.
    group_bytes : int
        See :data:`GROUP_BYTES`.
    restore : dict, optional
        The state :meth:`__reduce__` saved (pickling, ``copy.deepcopy``): the storage
        is rebuilt from it, bit for bit, and the arguments after ``two_factors`` are
        not read.
    """

    cdef CblkStore* cblk
    cdef idx_t ncblk
    cdef readonly Structure structure
    cdef readonly object dtype
    cdef readonly bint two_factors
    cdef readonly idx_t entries  # scalars held here, L and U
    cdef readonly object group_start  # first cblk of each allocation group, then ncblk
    cdef list _arrays  # the group arrays the panels point into
    cdef object _offsets  # each cblk's offset in its group's arrays
    cdef bint _counted  # count_held ran

    def __cinit__(self, Structure structure not None, dtype, bint two_factors, owners=None,
                  int rank=0, group_bytes=GROUP_BYTES, compress=None, int touch_threads=1,
                  fanin=None, restore=None):
        cdef idx_t k, g, ngroup = 0, total = 0, isz, limit
        cdef int8_t code
        cdef cnp.ndarray L, U
        self.structure = structure
        self.dtype = np.dtype(dtype)
        if self.dtype not in DTYPE_CODES:
            raise ValueError(f"no kernels for dtype {self.dtype}")
        code = DTYPE_CODES[self.dtype]
        isz = self.dtype.itemsize
        limit = group_bytes
        self.ncblk = structure.B.ncblk
        self.two_factors = two_factors
        if restore is not None:
            self._restore(restore, code)
            return
        owner_arr = np.zeros(self.ncblk, dtype=np.int32) if owners is None \
            else np.ascontiguousarray(owners, dtype=np.int32)
        if owner_arr.shape[0] != self.ncblk:
            raise ValueError("owners needs one entry per cblk")
        cdef const int32_t[::1] owner = owner_arr
        cdef const idx_t[::1] sizes = structure.panel_sizes()
        alone_arr = np.zeros(self.ncblk, dtype=np.int8) if compress is None \
            else np.ascontiguousarray(compress, dtype=np.int8)
        if alone_arr.shape[0] != self.ncblk:
            raise ValueError("compress needs one entry per cblk")
        cdef const int8_t[::1] alone = alone_arr
        fanin_arr = np.zeros(self.ncblk, dtype=np.int8) if fanin is None \
            else np.ascontiguousarray(fanin, dtype=np.int8)
        if fanin_arr.shape[0] != self.ncblk:
            raise ValueError("fanin needs one entry per cblk")
        cdef const int8_t[::1] remote = fanin_arr
        # Groups: consecutive held cblks, closed once they reach group_bytes; a cblk of
        # group_bytes or more is a group by itself. offsets: each cblk's in its group.
        offsets = np.zeros(self.ncblk, dtype=np.int64)
        starts = np.zeros(self.ncblk + 1, dtype=np.int64)
        group_size = np.zeros(self.ncblk + 1, dtype=np.int64)
        cdef idx_t[::1] off = offsets, start = starts, gsize = group_size
        for k in range(self.ncblk):
            if owner[k] != rank or alone[k]:
                continue
            if ngroup == 0 or total * isz >= limit or sizes[k] * isz >= limit:
                start[ngroup] = k
                ngroup += 1
                total = 0
            off[k] = total
            total += sizes[k]
            gsize[ngroup - 1] = total
        start[ngroup] = self.ncblk
        self.group_start = starts[:ngroup + 1].copy()
        self._offsets = offsets
        self.cblk = <CblkStore*>calloc(max(self.ncblk, 1), sizeof(CblkStore))
        if self.cblk == NULL:
            raise MemoryError("cannot allocate the storage descriptors")
        self._arrays = []
        self.entries = 0
        for g in range(ngroup):
            L = np.zeros(gsize[g], dtype=self.dtype)
            U = np.zeros(gsize[g] if two_factors else 0, dtype=self.dtype)
            self._arrays.append((L, U))
            touch_pages(<char*>cnp.PyArray_DATA(L), L.nbytes, touch_threads)
            touch_pages(<char*>cnp.PyArray_DATA(U), U.nbytes, touch_threads)
            self.entries += gsize[g] * (2 if two_factors else 1)
            for k in range(start[g], start[g + 1]):
                if owner[k] != rank or alone[k]:
                    continue
                self.cblk[k].lcoef = <char*>cnp.PyArray_DATA(L) + off[k] * isz
                if two_factors:
                    self.cblk[k].ucoef = <char*>cnp.PyArray_DATA(U) + off[k] * isz
        for k in range(self.ncblk):
            self.cblk[k].storage = DENSE if owner[k] == rank else FANIN if remote[k] else ABSENT
            self.cblk[k].dtype = code
            self.cblk[k].owner = owner[k]
            self.cblk[k].ld = structure.B.stride[k]
            if owner[k] == rank and alone[k] == MINIMAL_MEMORY:
                self.cblk[k].compress = MINIMAL_MEMORY
            elif owner[k] == rank and alone[k]:
                # Panels of its own, made at its first update (updates.pxi's
                # ensure_panels) and freed once compressed; counted here.
                self.cblk[k].compress = JUST_IN_TIME
                self.entries += sizes[k] * (2 if two_factors else 1)

    def __dealloc__(self):
        cdef idx_t k
        if self.cblk == NULL:
            return
        for k in range(self.ncblk):
            if self.cblk[k].storage == LOWRANK:
                free_tiles(&self.structure.B, k, &self.cblk[k])
            elif self.cblk[k].compress or self.cblk[k].storage == FANIN:
                free(self.cblk[k].lcoef)
                free(self.cblk[k].ucoef)
        free(self.cblk)

    # ------------------------------------------------------------------ pickling

    def __reduce__(self):
        """Pickling and ``copy.deepcopy``: the coefficients as plain arrays, rebuilt by
        ``Storage(structure, dtype, two_factors, restore=state)`` bit for bit.

        The state holds the descriptors (storage, compression, owner, held scalars,
        seconds), the group arrays the dense panels live in (as they are), and in one
        array the coefficients held apart: the panels of cblks marked for compression
        that kept them, fan-in panels, and each compressed cblk's diagonal block then
        its tiles (L's, then Uᵀ's), each tile its U and Bt (or its dense block), with
        the tiles' ranks beside.
        """
        cdef const Blocks* B = &self.structure.B
        cdef CblkStore* c
        cdef idx_t k, t, ntile, at = 0, nt = 0, size, total = 0, ntiles = 0
        cdef size_t isz = self.dtype.itemsize
        cdef int w, side, nside = 2 if self.two_factors else 1
        cdef Tile* tiles
        # Sizes first: one array for everything held apart from the groups.
        for k in range(self.ncblk):
            c = &self.cblk[k]
            w = cblk_width(B, k)
            if c.storage == LOWRANK:
                total += <idx_t>w * w
                ntile = B.bloknum[k + 1] - B.bloknum[k] - 1
                for side in range(nside):
                    tiles = c.ltiles if side == 0 else c.utiles
                    for t in range(ntile):
                        total += tile_scalars(&tiles[t], blok_rows(B, B.bloknum[k] + 1 + t), w)
                    ntiles += ntile
            elif _apart(c) and c.lcoef != NULL:
                total += <idx_t>B.stride[k] * w * nside
        coef = np.empty(total, dtype=self.dtype)
        ranks = np.empty(ntiles, dtype=np.int32)
        panels = np.zeros(self.ncblk, dtype=np.int8)
        cdef char* dst = <char*>cnp.PyArray_DATA(coef)
        cdef int32_t[::1] rank = ranks
        cdef int8_t[::1] has = panels
        for k in range(self.ncblk):
            c = &self.cblk[k]
            w = cblk_width(B, k)
            if c.storage == LOWRANK:
                memcpy(dst + at * isz, c.lcoef, <size_t>w * w * isz)
                at += <idx_t>w * w
                ntile = B.bloknum[k + 1] - B.bloknum[k] - 1
                for side in range(nside):
                    tiles = c.ltiles if side == 0 else c.utiles
                    for t in range(ntile):
                        size = tile_scalars(&tiles[t], blok_rows(B, B.bloknum[k] + 1 + t), w)
                        memcpy(dst + at * isz, tiles[t].u, size * isz)
                        at += size
                        rank[nt] = tiles[t].rank
                        nt += 1
            elif _apart(c) and c.lcoef != NULL:
                has[k] = 1
                size = <idx_t>B.stride[k] * w
                memcpy(dst + at * isz, c.lcoef, size * isz)
                at += size
                if self.two_factors:
                    memcpy(dst + at * isz, c.ucoef, size * isz)
                    at += size
        state = {
            "storage": np.array([self.cblk[k].storage for k in range(self.ncblk)], np.int8),
            "compress": np.array([self.cblk[k].compress for k in range(self.ncblk)], np.int8),
            "owner": np.array([self.cblk[k].owner for k in range(self.ncblk)], np.int32),
            "held": np.array([self.cblk[k].held for k in range(self.ncblk)], np.int64),
            "seconds": np.array([self.cblk[k].seconds for k in range(self.ncblk)], np.float64),
            "panels": panels,
            "coef": coef,
            "ranks": ranks,
            "group_start": self.group_start,
            "offsets": self._offsets,
            "arrays": list(self._arrays),
            "entries": int(self.entries),
            "counted": bool(self._counted),
            "frozen": any(not L.flags.writeable for L, _ in self._arrays),
        }
        return _restored_storage, (self.structure, self.dtype, self.two_factors, state)

    cdef int _restore(self, dict state, int8_t code) except -1:
        """Rebuild from :meth:`__reduce__`'s state (checked against the block structure
        first: a state that does not fit it is refused, never read out of bounds)."""
        cdef const Blocks* B = &self.structure.B
        cdef CblkStore* c
        cdef idx_t k, t, g, ntile, at = 0, nt = 0, size, total = 0, ntiles = 0, h
        cdef size_t isz = self.dtype.itemsize
        cdef int w, r, side, nside = 2 if self.two_factors else 1
        cdef Tile* tiles
        cdef cnp.ndarray L, U
        cdef idx_t n = self.ncblk
        cdef const int8_t[::1] kinds = _state_column(state, "storage", np.int8, n)
        cdef const int8_t[::1] compress = _state_column(state, "compress", np.int8, n)
        cdef const int32_t[::1] owner = _state_column(state, "owner", np.int32, n)
        cdef const int64_t[::1] held = _state_column(state, "held", np.int64, n)
        cdef const double[::1] seconds = _state_column(state, "seconds", np.float64, n)
        cdef const int8_t[::1] panels = _state_column(state, "panels", np.int8, n)
        offsets_arr = _state_column(state, "offsets", np.int64, n)
        cdef const idx_t[::1] offsets = offsets_arr
        ranks_arr = np.ascontiguousarray(state["ranks"], dtype=np.int32)
        cdef const int32_t[::1] ranks = ranks_arr
        coef = np.ascontiguousarray(state["coef"], dtype=self.dtype)
        group_start = np.ascontiguousarray(state["group_start"], dtype=np.int64)
        arrays = [(np.ascontiguousarray(L, dtype=self.dtype),
                   np.ascontiguousarray(U, dtype=self.dtype)) for L, U in state["arrays"]]
        bad = ValueError("the pickled storage does not fit its block structure")
        # Check every size against the structure before anything is allocated.
        if group_start.shape[0] != len(arrays) + 1 or group_start[-1] != n \
                or (len(arrays) and group_start[0] < 0) or np.any(np.diff(group_start) <= 0):
            raise bad
        for k in range(n):
            if kinds[k] not in (DENSE, LOWRANK, ABSENT, FANIN) \
                    or compress[k] not in (KEEP_DENSE, JUST_IN_TIME, MINIMAL_MEMORY):
                raise bad
            w = cblk_width(B, k)
            size = <idx_t>B.stride[k] * w
            if kinds[k] == LOWRANK:
                total += <idx_t>w * w
                ntile = B.bloknum[k + 1] - B.bloknum[k] - 1
                for side in range(nside):
                    for t in range(ntile):
                        if nt >= ranks.shape[0]:
                            raise bad
                        r = ranks[nt]
                        h = blok_rows(B, B.bloknum[k] + 1 + t)
                        if r < -1 or r > min(h, w):
                            raise bad
                        total += <idx_t>r * (h + w) if r >= 0 else h * w
                        nt += 1
            elif kinds[k] == DENSE and compress[k] == KEEP_DENSE:
                g = int(np.searchsorted(group_start, k, side="right")) - 1
                if g < 0 or g >= len(arrays) or offsets[k] < 0 \
                        or offsets[k] + size > arrays[g][0].shape[0] \
                        or (self.two_factors and offsets[k] + size > arrays[g][1].shape[0]):
                    raise bad
            elif panels[k]:
                if compress[k] == KEEP_DENSE and kinds[k] != FANIN:
                    raise bad
                total += size * nside
        if nt != ranks.shape[0] or total != coef.shape[0]:
            raise bad
        self.cblk = <CblkStore*>calloc(max(n, 1), sizeof(CblkStore))
        if self.cblk == NULL:
            raise MemoryError("cannot allocate the storage descriptors")
        self.group_start = group_start
        self._offsets = offsets_arr
        self._arrays = arrays
        self.entries = state["entries"]
        self._counted = state["counted"]
        cdef const char* src = <const char*>cnp.PyArray_DATA(coef)
        nt = 0
        for k in range(n):
            c = &self.cblk[k]
            w = cblk_width(B, k)
            size = <idx_t>B.stride[k] * w
            c.dtype = code
            c.storage = kinds[k]
            c.compress = compress[k]
            c.owner = owner[k]
            c.held = held[k]
            c.seconds = seconds[k]
            c.ld = w if kinds[k] == LOWRANK else B.stride[k]
            if kinds[k] == LOWRANK:
                # Each piece is allocated as the factorization allocates it, so that
                # __dealloc__ (and free_tiles) free it alike, partial fills included.
                ntile = B.bloknum[k + 1] - B.bloknum[k] - 1
                c.lcoef = _malloc_copy(src + at * isz, <size_t>w * w * isz)
                at += <idx_t>w * w
                for side in range(nside):
                    tiles = <Tile*>calloc(max(ntile, 1), sizeof(Tile))
                    if tiles == NULL:
                        raise MemoryError(f"cannot allocate cblk {k}'s tiles")
                    if side == 0:
                        c.ltiles = tiles
                    else:
                        c.utiles = tiles
                    for t in range(ntile):
                        h = blok_rows(B, B.bloknum[k] + 1 + t)
                        tiles[t].rank = ranks[nt]
                        nt += 1
                        size = tile_scalars(&tiles[t], h, w)
                        tiles[t].u = _malloc_copy(src + at * isz, size * isz)
                        tiles[t].bt = <char*>tiles[t].u + <size_t>h * tiles[t].rank * isz \
                            if tiles[t].rank >= 0 else NULL
                        at += size
            elif kinds[k] == DENSE and compress[k] == KEEP_DENSE:
                g = int(np.searchsorted(group_start, k, side="right")) - 1
                L, U = arrays[g]
                c.lcoef = <char*>cnp.PyArray_DATA(L) + offsets[k] * isz
                if self.two_factors:
                    c.ucoef = <char*>cnp.PyArray_DATA(U) + offsets[k] * isz
            elif panels[k]:
                c.lcoef = _malloc_copy(src + at * isz, size * isz)
                at += size
                if self.two_factors:
                    c.ucoef = _malloc_copy(src + at * isz, size * isz)
                    at += size
        if state["frozen"]:
            self.freeze()
        return 0

    def tiles(self):
        """The tiles of the compressed cblks, a dict of arrays with one entry per tile:
        ``cblk``, ``blok``, ``factor`` (0 for L, 1 for Uᵀ), ``rows``, ``cols`` and
        ``rank`` (-1 where the tile stayed dense); and per compressed cblk (``cblks``),
        the scalars it holds (``held``) and the seconds spent compressing it
        (``seconds``)."""
        cdef const Blocks* B = &self.structure.B
        cdef idx_t k, b, t
        cdef int f
        cdef Tile* tiles
        rows = []
        per = []
        for k in range(self.ncblk):
            if self.cblk[k].storage != LOWRANK:
                continue
            per.append((k, self.cblk[k].held, self.cblk[k].seconds))
            for f in range(2 if self.two_factors else 1):
                tiles = self.cblk[k].ltiles if f == 0 else self.cblk[k].utiles
                for b in range(B.bloknum[k] + 1, B.bloknum[k + 1]):
                    t = b - B.bloknum[k] - 1
                    rows.append((k, b, f, blok_rows(B, b), cblk_width(B, k), tiles[t].rank))
        arr = np.array(rows, dtype=np.int64).reshape(-1, 6)
        out = {name: arr[:, i].copy()
               for i, name in enumerate(("cblk", "blok", "factor", "rows", "cols", "rank"))}
        p = np.array(per, dtype=np.float64).reshape(-1, 3)
        out["cblks"] = p[:, 0].astype(np.int64)
        out["held"] = p[:, 1].astype(np.int64)
        out["seconds"] = p[:, 2].copy()
        return out

    def tile(self, idx_t k, idx_t b, factor="L"):
        """Blok b of a compressed cblk k: ``(U, Bt)`` arrays (copies) whose product is the
        tile, or ``(dense, None)`` where it stayed dense."""
        cdef const Blocks* B = &self.structure.B
        cdef Tile* t
        cdef int h, w
        if k < 0 or k >= self.ncblk or self.cblk[k].storage != LOWRANK:
            raise ValueError(f"cblk {k} is not compressed")
        if b <= B.bloknum[k] or b >= B.bloknum[k + 1]:
            raise IndexError(f"blok {b} is not an off-diagonal blok of cblk {k}")
        if factor not in ("L", "U") or (factor == "U" and not self.two_factors):
            raise ValueError(f"no {factor} factor in this storage")
        t = &(self.cblk[k].ltiles if factor == "L" else self.cblk[k].utiles)[b - B.bloknum[k] - 1]
        h, w = blok_rows(B, b), cblk_width(B, k)
        isz = self.dtype.itemsize
        if t.rank < 0:
            return _copy_array(t.u, h, w, self.dtype), None
        return _copy_array(t.u, h, t.rank, self.dtype), _copy_array(t.bt, t.rank, w, self.dtype)

    def diagonal_block(self, idx_t k):
        """Cblk k's diagonal block (width x width, a copy), dense or compressed."""
        if k < 0 or k >= self.ncblk or self.cblk[k].storage == ABSENT:
            raise ValueError(f"cblk {k} is not held here")
        w = self.structure.fcol[k + 1] - self.structure.fcol[k]
        full = _copy_array(self.cblk[k].lcoef, self.cblk[k].ld, w, self.dtype)
        return np.ascontiguousarray(full[:w])

    @property
    def compressed_cblks(self):
        """How many cblks are held compressed."""
        return sum(1 for k in range(self.ncblk) if self.cblk[k].storage == LOWRANK)

    @property
    def nbytes(self):
        """Bytes of coefficients held here."""
        return int(self.entries) * self.dtype.itemsize

    def describe(self, idx_t k):
        """Cblk k's descriptor as a dict: storage, dtype, owner, and where compressed the
        scalars it holds."""
        if k < 0 or k >= self.ncblk:
            raise IndexError(f"cblk {k} out of range")
        out = {
            "storage": STORAGE_NAMES[self.cblk[k].storage],
            "dtype": self.dtype,
            "owner": int(self.cblk[k].owner),
        }
        if self.cblk[k].storage == LOWRANK:
            out["held"] = int(self.cblk[k].held)
        return out

    def panel(self, idx_t k, factor="L"):
        """Cblk k's panel as a read-only (stride x width) array view, ``factor`` "L" or "U"."""
        if k < 0 or k >= self.ncblk:
            raise IndexError(f"cblk {k} out of range")
        if self.cblk[k].storage != DENSE:
            raise ValueError(f"cblk {k} has no dense panel here ({self.describe(k)['storage']})")
        if factor not in ("L", "U") or (factor == "U" and not self.two_factors):
            raise ValueError(f"no {factor} factor in this storage")
        if self.cblk[k].compress:
            if self.cblk[k].lcoef == NULL:
                raise ValueError(f"cblk {k} has no panel yet (compressed cblks get theirs "
                                 "during the factorization)")
            # Panels of its own (it was to be compressed and was not).
            view = _copy_array(self.cblk[k].lcoef if factor == "L" else self.cblk[k].ucoef,
                               self.structure.stride[k],
                               self.structure.fcol[k + 1] - self.structure.fcol[k], self.dtype)
            view.flags.writeable = False
            return view
        g = int(np.searchsorted(self.group_start, k, side="right") - 1)
        arr = self._arrays[g][0 if factor == "L" else 1]
        width = self.structure.fcol[k + 1] - self.structure.fcol[k]
        stride = self.structure.stride[k]
        off = self._offsets[k]
        view = arr[off:off + stride * width].reshape(width, stride).T
        view.flags.writeable = False
        return view

    def count_held(self):
        """Recount :attr:`entries` after a factorization compressed cblks: their panels
        are gone, their diagonal blocks and tiles held instead."""
        cdef idx_t k
        cdef const idx_t[::1] sizes = self.structure.panel_sizes()
        cdef idx_t copies = 2 if self.two_factors else 1
        if self._counted:
            return
        self._counted = True
        for k in range(self.ncblk):
            if self.cblk[k].compress == JUST_IN_TIME and self.cblk[k].storage == LOWRANK:
                self.entries += self.cblk[k].held - sizes[k] * copies
            elif self.cblk[k].compress == MINIMAL_MEMORY:
                # Counted nowhere yet: its tiles, or the panels it kept (out of memory).
                self.entries += self.cblk[k].held if self.cblk[k].storage == LOWRANK \
                    else sizes[k] * copies

    def freeze(self):
        """Make the panels read-only to Python (the kernels write through the descriptors)."""
        for L, U in self._arrays:
            L.flags.writeable = False
            U.flags.writeable = False

    cdef int check(self, Structure structure, int code, bint dense_only=True) except -1:
        """Raise unless this storage is for ``structure`` and holds ``code`` scalars, each
        cblk of this owner as a dense panel (or, unless ``dense_only``, compressed); the
        others' are absent or fan-in panels (:meth:`held` tells the kernels which)."""
        cdef idx_t k
        if structure is not self.structure:
            raise ValueError("the storage is not for this block structure")
        for k in range(self.ncblk):
            if self.cblk[k].dtype != code:
                raise ValueError(f"cblk {k} is stored in another precision than the kernel's")
            if self.cblk[k].storage == ABSENT or self.cblk[k].storage == FANIN:
                continue
            if self.cblk[k].storage != DENSE and (dense_only or self.cblk[k].storage != LOWRANK):
                raise ValueError(f"cblk {k} is not held here as a dense panel")
        return 0

    def held(self):
        """Which cblks this owner holds (dense or compressed), as a bool array."""
        return np.array([self.cblk[k].storage == DENSE or self.cblk[k].storage == LOWRANK
                         for k in range(self.ncblk)], dtype=bool)

    def fanin_views(self, idx_t k):
        """Fan-in cblk k's sums of this owner's updates, as flat arrays (stride x width,
        column-major) viewing the panels themselves, not copies: ``(L, U)`` (U None but
        for LU), or None where no update came. They are valid until :meth:`release`
        (a distributed factorization sends from them, then releases them)."""
        cdef CblkStore* c
        cdef cnp.npy_intp size
        if k < 0 or k >= self.ncblk or self.cblk[k].storage != FANIN:
            raise ValueError(f"cblk {k} is not a fan-in panel here")
        c = &self.cblk[k]
        if c.lcoef == NULL:
            return None
        size = self.structure.stride[k] * (self.structure.fcol[k + 1] - self.structure.fcol[k])
        typenum = self.dtype.num
        L = cnp.PyArray_SimpleNewFromData(1, &size, typenum, c.lcoef)
        if not self.two_factors:
            return L, None
        return L, cnp.PyArray_SimpleNewFromData(1, &size, typenum, c.ucoef)

    def release(self, idx_t k):
        """Free fan-in cblk k's panel (its sums handed over)."""
        if k < 0 or k >= self.ncblk or self.cblk[k].storage != FANIN:
            raise ValueError(f"cblk {k} is not a fan-in panel here")
        free(self.cblk[k].lcoef)
        free(self.cblk[k].ucoef)
        self.cblk[k].lcoef = NULL
        self.cblk[k].ucoef = NULL

    def accumulate(self, idx_t k, cnp.ndarray L, U=None):
        """Add another owner's fan-in sums for cblk k (held here, not yet factored) into
        its panel(s): ``L`` (and ``U`` for LU) flat, stride x width, column-major."""
        cdef CblkStore* c
        cdef cnp.ndarray src
        cdef size_t size, isz = self.dtype.itemsize
        if k < 0 or k >= self.ncblk or self.cblk[k].storage != DENSE:
            raise ValueError(f"cblk {k} is not held here as a dense panel")
        c = &self.cblk[k]
        size = self.structure.stride[k] * (self.structure.fcol[k + 1] - self.structure.fcol[k])
        if L.dtype != self.dtype or L.size != size or (self.two_factors and U is None):
            raise ValueError(f"cblk {k}'s contribution does not fit its panel")
        if c.lcoef == NULL:
            # A compressed cblk's panels are made at its first update.
            c.lcoef = calloc(max(size, 1), isz)
            if self.two_factors:
                c.ucoef = calloc(max(size, 1), isz)
            if c.lcoef == NULL or (self.two_factors and c.ucoef == NULL):
                raise MemoryError(f"cannot allocate cblk {k}'s panels")
        src = np.ascontiguousarray(L)
        add_flat(self.dtype, c.lcoef, cnp.PyArray_DATA(src), size)
        if self.two_factors:
            src = np.ascontiguousarray(U, dtype=self.dtype)
            if src.size != size:
                raise ValueError(f"cblk {k}'s contribution does not fit its panel")
            add_flat(self.dtype, c.ucoef, cnp.PyArray_DATA(src), size)


# ---------------------------------------------------------------------------- kinds

# Factorization kinds (KIND_CODES; pastixpy/kinds.py names them). Only kind_ops reads them.
cdef enum:
    LLT = 0
    LDLT = 1
    LDLH = 2
    LU = 3

KIND_CODES = {"llt": LLT, "ldlt": LDLT, "ldlh": LDLH, "lu": LU}

# The kernels that factor a diagonal block.
cdef enum:
    CHOLESKY = 0
    BUNCH_KAUFMAN = 1
    PARTIAL_LU = 2


cdef struct Ops:
    # What the factorization kind decides, set once by kind_ops: the kernels read these
    # parameters and never the kind.
    int diagonal  # CHOLESKY, BUNCH_KAUFMAN or PARTIAL_LU
    bint conj  # transposes conjugate (complex LLᴴ and LDLᴴ)
    char tr  # 'C' where conj, else 'T'
    bint two_factors  # LU: Uᵀ's panels beside L's, updated alike
    bint scaled_left  # LDLᵀ: an update's left operand is W = L21 D (kept from the panel)
    bint symmetric_top  # LLᵀ: an update's square on its own rows is symmetric (syrk/herk)


cdef Ops kind_ops(int kind, bint complex_) except *:
    cdef Ops o
    if kind not in (LLT, LDLT, LDLH, LU):
        raise ValueError(f"unknown factorization kind code {kind}")
    o.diagonal = CHOLESKY if kind == LLT else PARTIAL_LU if kind == LU else BUNCH_KAUFMAN
    o.conj = complex_ and (kind == LLT or kind == LDLH)
    o.tr = c'C' if o.conj else c'T'
    o.two_factors = kind == LU
    o.scaled_left = kind == LDLT or kind == LDLH
    o.symmetric_top = kind == LLT
    return o


# ---------------------------------------------------------------------------- A's entries

cdef struct Entries:
    # A's entries bound for one factor (AssemblyMap): cblk k's are ptr[k]:ptr[k + 1],
    # added at val's positions in its panel (int32 or int64, the other NULL).
    const void* val
    const int32_t* pos32
    const int64_t* pos64
    const idx_t* ptr


cdef Entries make_entries(scalar[::1] val, cnp.ndarray pos, const idx_t[::1] ptr,
                          Structure structure) except *:
    """Check one part of an AssemblyMap against the panels it fills."""
    cdef Entries E
    cdef idx_t nval = val.shape[0], ncblk = structure.B.ncblk, k, i, size
    cdef const Blocks* B = &structure.B
    if pos.dtype != np.int32 and pos.dtype != np.int64 or not pos.flags.c_contiguous \
            or pos.shape[0] != nval or ptr.shape[0] != ncblk + 1 or ptr[0] != 0 \
            or ptr[ncblk] != nval:
        raise ValueError("assembly map does not fit the panels")
    E.val = &val[0] if nval else NULL
    E.pos32 = <const int32_t*>cnp.PyArray_DATA(pos) if pos.dtype == np.int32 else NULL
    E.pos64 = <const int64_t*>cnp.PyArray_DATA(pos) if pos.dtype == np.int64 else NULL
    E.ptr = &ptr[0]
    for k in range(ncblk):
        size = B.stride[k] * cblk_width(B, k)
        for i in range(ptr[k], ptr[k + 1]):
            if (E.pos32[i] if E.pos32 != NULL else E.pos64[i]) >= size \
                    or (E.pos32[i] if E.pos32 != NULL else E.pos64[i]) < 0:
                raise ValueError(f"assembly map: an entry of cblk {k} lies outside its panel")
    return E


cdef inline void add_entries(const Entries* E, scalar* a, idx_t k) noexcept nogil:
    """Add cblk k's entries of A into its panel ``a``."""
    cdef const scalar* val = <const scalar*>E.val
    cdef idx_t i
    if E.pos32 != NULL:
        for i in range(E.ptr[k], E.ptr[k + 1]):
            a[E.pos32[i]] += val[i]
    else:
        for i in range(E.ptr[k], E.ptr[k + 1]):
            a[E.pos64[i]] += val[i]


# ---------------------------------------------------------------------------- compression

cdef struct Compression:
    # Just-in-time block low-rank: how the off-diagonal bloks of the cblks marked
    # ``compress`` are compressed once their panel is factored (compress.pxi).
    int method  # LR_RRQR, LR_SVD or LR_RANDOMIZED (lowrank.pxi)
    double tol  # absolute: each tile's ‖T - U Bt‖_F ≤ tol
    double max_ratio  # a tile is kept low-rank only at a rank ≤ max_ratio min(h, w)
    int min_height  # shorter bloks stay dense
    int power  # the randomized method's power iterations


# ---------------------------------------------------------------------------- one factorization

cdef struct FactorState:
    # What the factorization kernels share: read-only structure and parameters, the
    # storage they write, A's entries and the pivots' records.
    Blocks B
    Ops ops
    CblkStore* cblk
    double tol  # static pivoting threshold
    void* dsub  # LDLᵀ: D's off-diagonal entry of the 2x2 pivot at each column, else NULL
    idx_t* lperm  # LDLᵀ and LU: pivot order after the interchanges inside blocks, else NULL
    signed char* pivtype  # LDLᵀ: 1, or 2 and 0 for the columns of a 2x2 pivot, else NULL
    signed char* pert  # 1 where a pivot was replaced (static pivoting)
    Entries al  # A's entries of L's panels
    Entries au  # and of Uᵀ's (LU)
    Compression lr  # for the cblks whose descriptor says compress
    int* nomem  # set to 1 when a compressed cblk's work memory could not be allocated
    # Minimal memory: the bloks facing cblk f are in_blok[in_ptr[f]:in_ptr[f + 1]],
    # blok b belongs to cblk blok_cblk[b] (NULL without such cblks).
    const idx_t* in_ptr
    const idx_t* in_blok
    const idx_t* blok_cblk
    # The cblks this call factors (1), the others only receiving updates; NULL: all.
    const int8_t* only
