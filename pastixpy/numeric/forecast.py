"""What a numeric factorization allocates, forecast from its block structure before
anything is allocated, for each strategy: full rank, just-in-time and minimal-memory
block low-rank.

Every allocation of the kernels is counted: the panels (those allocated at once, and
for compression those made and freed during the run), A's entries in assembly order,
the pivots, each thread's work buffers (:func:`pastixpy._numeric.work_scalars`, the
same computation the kernels run), and for compressed cblks the work of their
compression (the tile being compressed, the stacked rows solved at once), of their
updates through the ranks (``lrupdates.pxi``) and, for minimal memory, of gathering a
panel's updates. The compressed tiles' size depends on their ranks, known only once
computed, so a compressed strategy's forecast is a range: ``least`` with each tile at
its smallest (the bloks that are always kept dense: the diagonal blocks, bloks under
``min_height`` rows and those too small to gain from a low-rank form), ``most`` with
every tile dense. Full rank's two figures are equal.

The order in which cblks are factored is the sequential one (just-in-time's panels
live from the first update they receive to their compression); with threads each
thread beyond the first adds its own transient work (a compressed cblk's, the
largest), as the threads run cblks near each other in that order.
"""

from dataclasses import dataclass

import numpy as np

from .. import _numeric

#: Address space OpenBLAS maps for each thread that calls it (scipy's builds: 32 MiB and
#: a page), the first time it does; where the map fails OpenBLAS retries forever, so it
#: is counted against an address-space limit whether or not it exists yet.
BLAS_BUFFER_BYTES = 32 * 2**20 + 4096

#: Bytes per cblk of a Storage descriptor (about 80) and the threaded scheduler's state
#: (a lock and three counters).
PER_CBLK_BYTES = 160

#: Scalars of the compression workspace of an h x w tile, per method (``lowrank.pxi``: a
#: copy of the tile, and for the SVD and the randomized range finder the factors and
#: bases beside it), as a multiple of h w, plus a margin per row and column.
COMPRESS_WORK = {"rrqr": 1, "svd": 3, "randomized": 4}
COMPRESS_WORK_MARGIN = 128


@dataclass(frozen=True)
class Forecast:
    """Bytes a factorization allocates (see the module's text).

    Attributes
    ----------
    strategy : str
        ``"full"`` (no compression), ``"jit"`` or ``"minmem"``.
    threads : int
        The threads it runs on.
    panels : int
        Panels allocated before the first cblk is factored: all of them at full rank,
        the cblks kept dense with compression.
    entries : int
        A's entries in assembly order (and a copy in A's dtype while they are converted),
        the pivots, the descriptors.
    work : int
        The threads' work buffers, allocated with the panels.
    least, most : int
        The peak: with every compressed tile at its smallest, and with every tile dense
        (equal at full rank). Everything above is included.
    reserve : int
        Address space the threads add besides: OpenBLAS's buffer per thread (and
        numpy's OpenBLAS's for the calling thread where GMRES refines the solves:
        :func:`thread_reserve`) and the worker threads' stacks (counted against an
        address-space limit only).
    """

    strategy: str
    threads: int
    panels: int
    entries: int
    work: int
    least: int
    most: int
    reserve: int

    def describe(self):
        """The parts, for a message: ``"factors 0.31 GiB, ..."``."""
        parts = [
            f"{'factors' if self.strategy == 'full' else 'dense panels'} {gib(self.panels)}",
            f"work buffers {gib(self.work)} for {self.threads} thread"
            + ("s" if self.threads > 1 else ""),
            f"A's entries and pivots {gib(self.entries)}",
        ]
        if self.strategy != "full":
            rest = self.least - self.panels - self.work - self.entries
            parts.append(
                f"compressed cblks' panels, tiles and work {gib(rest)} at least, "
                f"{gib(self.most - self.least + rest)} if no tile compresses"
            )
        return ", ".join(parts)

    def as_dict(self):
        return dict(self.__dict__)


def gib(nbytes):
    return f"{nbytes / 2**30:.2f} GiB"


def thread_reserve(threads, stack_bytes, gmres):
    """:attr:`Forecast.reserve` for ``threads`` threads whose stacks take ``stack_bytes``
    each (the calling thread's exists already): scipy's OpenBLAS buffer for each, and
    with ``gmres`` (the solves of compressed or mixed-precision factors are refined by
    GMRES, whose small least-squares problems go through numpy's LAPACK) numpy's for
    the calling thread."""
    return (threads + bool(gmres)) * BLAS_BUFFER_BYTES + (threads - 1) * stack_bytes


def forecast(
    layout,
    kind,
    kind_code,
    dtype,
    threads,
    entries,
    source_itemsize,
    n,
    compression=None,
    stack_bytes=8 * 2**20,
):
    """The :class:`Forecast` of a factorization.

    Parameters
    ----------
    layout : PanelLayout
    kind : Kind
    kind_code : int
        Its value in :data:`pastixpy._numeric.KIND_CODES`.
    dtype : numpy dtype
        The factors'.
    threads : int
        The threads it runs on.
    entries : int
        Stored entries of B assembled (the assembly map's, L and U).
    source_itemsize : int
        Bytes of one of B's entries (its values are copied into ``dtype`` from it).
    n : int
        Order of the matrix.
    compression : pastixpy.compression.Compression, optional
    stack_bytes : int
        A worker thread's stack.
    """
    dtype = np.dtype(dtype)
    isz = dtype.itemsize
    copies = 2 if kind.two_factors else 1
    sizes = np.asarray(layout.panel_sizes, dtype=np.int64)
    per_thread = _numeric.work_scalars(layout.structure, kind_code, isz) * isz
    # Each thread's work buffers; on several threads, the updates that come before their
    # target's turn are kept until it (scheduler.pxi), each at most a work buffer's
    # product: one such buffer is allowed for each thread beyond the first (what a
    # thread gets ahead of the others by; the test against the measured peak checks it).
    work = (2 * threads - 1) * per_thread
    copy = entries * source_itemsize if source_itemsize != isz else 0
    # Pivots.empty: pert, and lperm (local pivots), pivtype and dsub (LDLᵀ).
    fixed = (
        entries * isz
        + copy
        + n * (1 + (8 if kind.local_pivots else 0) + (1 + isz if kind.block_diagonal else 0))
        + layout.ncblk * PER_CBLK_BYTES
    )
    reserve = thread_reserve(threads, stack_bytes, compression is not None or copy > 0)
    if compression is None:
        panels = copies * int(sizes.sum()) * isz
        total = panels + fixed + work
        return Forecast("full", threads, panels, fixed, work, total, total, reserve)
    cand = compression.candidates(layout) > 0
    panels = copies * int(sizes[~cand].sum()) * isz
    base = panels + fixed + work
    least, most = (
        base + isz * _compressed_peak(layout, kind, copies, cand, compression, threads, lo)
        for lo in (True, False)
    )
    return Forecast(compression.strategy, threads, panels, fixed, work, least, most, reserve)


def _compressed_peak(layout, kind, copies, cand, compression, threads, smallest):
    """Scalars of the compressed cblks' panels, tiles and work at the peak, in the
    sequential order (tiles at their smallest, or dense)."""
    ncblk = layout.ncblk
    fcol, bloknum, stride = layout.fcol, layout.bloknum, layout.stride
    frow, lrow, fcblk = layout.frow, layout.lrow, layout.fcblk
    width = np.diff(fcol).astype(np.int64)
    below = (stride - width).astype(np.int64)
    heights = (lrow - frow + 1).astype(np.int64)
    nblok = heights.shape[0]
    owner = np.repeat(np.arange(ncblk, dtype=np.int64), np.diff(bloknum))
    off = np.ones(nblok, dtype=bool)
    off[bloknum[:-1]] = False
    # The tallest off-diagonal blok of each cblk.
    hmax = np.zeros(ncblk, dtype=np.int64)
    np.maximum.at(hmax, owner[off], heights[off])
    # Rows of a cblk's bloks that are kept dense whatever the ranks: under min_height, or
    # too small for a low-rank form to store less (compress.pxi's compress_tile).
    w_b = width[owner]
    maxr = np.minimum(
        (compression.max_ratio * np.minimum(heights, w_b)).astype(np.int64),
        (heights * w_b - 1) // (heights + w_b),
    )
    forced = off & ((heights < compression.min_height) | (maxr <= 0))
    rows_lo = np.bincount(owner[forced], weights=heights[forced], minlength=ncblk).astype(np.int64)
    rows = rows_lo if smallest else below
    tiles = width * width + copies * rows * width
    # compress_cblk: its scratch (ubuf) and a copy of the diagonal block, then each
    # tile's compression workspace (the tallest's), then the stacked rows solved at once.
    factor = COMPRESS_WORK[compression.method]
    compress_work = (
        (hmax + width) * np.minimum(hmax, width)
        + width * width
        + np.maximum(factor * hmax * width + COMPRESS_WORK_MARGIN * (hmax + width), rows * width)
    )
    # lowrank_work: an h x h product, the stacked products and products (2 per factor),
    # the stacked left operands (and L·D's for LDLᵀ), a stack's product with one operand.
    scaled = 1 if kind.name in ("ldlt", "ldlh") else 0
    update_work = (
        hmax * (hmax + 2 * copies * below)
        + (copies + scaled) * rows * width
        + rows * hmax
        + 3 * (bloknum[1:] - bloknum[:-1])
    )
    panel = copies * stride * width
    tiles_c = np.where(cand, tiles, 0)
    before = np.concatenate(([0], np.cumsum(tiles_c)[:-1]))  # tiles of earlier cblks
    if compression.strategy == "minmem":
        # Its panel is made when it is factored, the updates gathered into it first (a
        # dense source's product and LDLᵀ's W, or a compressed one's lowrank_work), then
        # it is compressed beside it.
        dense_gather = below * hmax + scaled * below * width
        gather = int(np.max(np.where(cand, update_work, dense_gather), initial=0))
        factoring = panel + np.maximum(gather, tiles + compress_work)
        alive_a = alive_b = 0
    else:
        # A panel lives from the first update it receives (after its source is
        # factored) to its compression; one that receives none is made when factored.
        first = np.arange(ncblk, dtype=np.int64)
        np.minimum.at(first, fcblk[off], owner[off])
        f = np.flatnonzero(cand)
        early = first[f] < f
        fe, first_e, panel_e = f[early], first[f][early], panel[f][early]
        # Alive while k is factored: first[f] < k <= f, or f == k.
        delta = np.zeros(ncblk + 1, dtype=np.int64)
        np.add.at(delta, first_e + 1, panel_e)
        np.add.at(delta, fe + 1, -panel_e)
        late = np.zeros(ncblk, dtype=bool)
        late[f[~early]] = True
        alive_a = np.cumsum(delta)[:-1] + np.where(late, panel, 0)
        # Alive while k sends its updates: first[f] <= k < f.
        delta[:] = 0
        np.add.at(delta, first_e, panel_e)
        np.add.at(delta, fe, -panel_e)
        alive_b = np.cumsum(delta)[:-1]
        factoring = tiles + compress_work
    updating = tiles + update_work
    stage_a = alive_a + before + np.where(cand, factoring, 0)
    stage_b = alive_b + before + np.where(cand, updating, 0)
    peak = int(max(np.max(stage_a, initial=0), np.max(stage_b, initial=0)))
    if not smallest:
        # Other threads at the same time, each on a compressed cblk of its own: its panel
        # and work (at most; in order they mostly overlap the panels counted).
        own = np.maximum(factoring, updating) - tiles
        if compression.strategy == "jit":
            own = own + panel
        peak += (threads - 1) * int(np.max(np.where(cand, own, 0), initial=0))
    return max(peak, int(tiles_c.sum()))
