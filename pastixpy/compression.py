"""Block low-rank compression of the factors: the ``compress=`` option (and the cluster
sizes it asks of the analysis), which cblks are compressed, the kernels' parameters,
and the statistics of the result.

The kernels are in ``csrc/numeric/`` (``lowrank.pxi``: the compression of one tile;
``compress.pxi``: a factored panel replaced by tiles; ``lrupdates.pxi``: the updates a
compressed cblk sends; ``solve.pxi``: the sweeps on tiles). The strategy is PaStiX's
*just-in-time*: a cblk at least ``min_width`` columns wide accumulates its updates
dense; once its diagonal block is factored and the panel below it solved, each
off-diagonal blok at least ``min_height`` rows tall is compressed at the tolerance
(and kept dense where its rank would exceed ``max_ratio`` of its smaller side), the
dense panel is freed, and the updates it sends go through the tiles' ranks. Wide
separators are cut into compact clusters by the analysis
(:func:`pastixpy.clusters.cluster_supernodes`) so that a tile couples two compact
patches of the domain and its rank stays small.

The tolerance ``tol`` is relative to ‖B‖_F, the Frobenius norm of the matrix as
factored (after scaling): each tile T is replaced by U Bt with ‖T − U Bt‖_F ≤ tol‖B‖_F
(Higham and Mary's global threshold, with which BLR factorizations are backward stable
with error about tol). ``norm="absolute"`` takes ``tol`` as it is.
"""

from dataclasses import dataclass

import numpy as np

from .errors import OptionError
from .norms import norm2

#: Clusters of about 160 to 320 unknowns, the sizes of PaStiX's block low-rank
#: clustering: a tile much narrower costs more in BLAS calls on small factors than its
#: compression saves (PaStiX compresses no cblk under 128 columns).
CLUSTER_SIZE = (160, 320)


def check_cluster_size(size):
    """``size`` as (min, max) ints with 1 <= min and 2·min <= max, or an OptionError."""
    try:
        smin, smax = (int(v) for v in size)
    except (TypeError, ValueError):
        raise OptionError(f"clusters must be (min, max) sizes, got {size!r}") from None
    if not 1 <= smin or 2 * smin > smax:
        raise OptionError(
            f"clusters=(min, max) needs 1 <= min and 2 * min <= max (a separator just wider "
            f"than max is cut in two parts of at least min), got ({smin}, {smax})"
        )
    return smin, smax


#: What ``compress=("blr", {...})`` accepts.
COMPRESS_PARAMETERS = {
    "tol",
    "strategy",
    "method",
    "min_width",
    "min_height",
    "max_ratio",
    "norm",
    "clusters",
}
STRATEGIES = ("jit", "minmem")

#: The kernels' codes of the strategies (Storage's ``compress``).
STRATEGY_CODES = {"jit": 1, "minmem": 2}
METHODS = ("rrqr", "svd", "randomized")


@dataclass(frozen=True)
class Compression:
    """The validated ``compress=`` option (see :func:`parse_compress`).

    Attributes
    ----------
    tol : float
        Tolerance of each tile, relative to ‖B‖_F (``norm="matrix"``) or absolute.
    strategy : str
        ``"jit"``: just-in-time (each cblk compressed as soon as it is factored, its
        panel having received its updates dense). ``"minmem"``: minimal memory (no
        panel of a compressed cblk exists before it is factored: it gathers its
        updates then, left-looking, and is compressed and freed at once).
    method : str
        ``"rrqr"`` (column-pivoted QR stopped at the tolerance), ``"svd"`` (truncated
        SVD: smallest ranks, slowest), ``"randomized"`` (adaptive range finder).
    min_width : int
        Cblks narrower than this stay dense.
    min_height : int
        Bloks shorter than this stay dense.
    max_ratio : float
        A tile whose rank at the tolerance is above ``max_ratio * min(h, w)`` stays
        dense (its low-rank form would cost about as much to store and apply).
    norm : str
        ``"matrix"`` or ``"absolute"``.
    clusters : (int, int)
        Sizes of the clusters the analysis cuts wide separators into.
    """

    tol: float = 1e-8
    strategy: str = "jit"
    method: str = "rrqr"
    min_width: int = 128
    min_height: int = 20
    max_ratio: float = 0.5
    norm: str = "matrix"
    clusters: tuple = CLUSTER_SIZE

    def absolute_tol(self, B):
        """The tolerance each tile is compressed to, for the preprocessed matrix B."""
        if self.norm == "absolute":
            return self.tol
        return self.tol * float(norm2(B.data))

    def candidates(self, layout):
        """Which cblks are compressed once factored (int8 mask): those at least
        ``min_width`` wide with a blok at least ``min_height`` tall, marked with the
        strategy's code (:data:`STRATEGY_CODES`)."""
        width = np.diff(layout.fcol)
        heights = layout.lrow - layout.frow + 1
        off = np.ones(heights.shape[0], dtype=bool)
        off[layout.bloknum[:-1]] = False  # diagonal blocks
        tall = off & (heights >= self.min_height)
        owner = np.repeat(np.arange(layout.ncblk), np.diff(layout.bloknum))
        has_tall = np.bincount(owner[tall], minlength=layout.ncblk) > 0
        code = STRATEGY_CODES[self.strategy]
        return np.where((width >= self.min_width) & has_tall, code, 0).astype(np.int8)

    def kernel_params(self, B, layout):
        """What :func:`pastixpy._numeric.factorize` takes as ``compression``: the
        tolerance and limits, and for minimal memory the bloks facing each cblk."""
        params = {
            "method": self.method,
            "tol": self.absolute_tol(B),
            "max_ratio": self.max_ratio,
            "min_height": self.min_height,
        }
        if self.strategy == "minmem":
            params.update(incoming_bloks(layout))
        return params


def incoming_bloks(layout):
    """For each cblk f, the off-diagonal bloks of other cblks that face it
    (``in_blok[in_ptr[f]:in_ptr[f + 1]]``, in blok order: their cblks in order), and
    the cblk of each blok (``blok_cblk``)."""
    nblok = layout.fcblk.shape[0]
    blok_cblk = np.repeat(np.arange(layout.ncblk, dtype=np.int64), np.diff(layout.bloknum))
    off = np.ones(nblok, dtype=bool)
    off[layout.bloknum[:-1]] = False
    bloks = np.flatnonzero(off)
    order = np.argsort(layout.fcblk[bloks], kind="stable")
    in_blok = bloks[order].astype(np.int64)
    counts = np.bincount(layout.fcblk[bloks], minlength=layout.ncblk)
    in_ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return {"in_ptr": in_ptr, "in_blok": in_blok, "blok_cblk": blok_cblk}


def parse_compress(value):
    """``compress=`` as a :class:`Compression`, or None (no compression).

    Accepts None or False, a tolerance (a positive number), ``"blr"`` (the defaults),
    or ``("blr", {parameters})``.
    """
    if value is None or value is False:
        return None
    if isinstance(value, bool):
        raise OptionError("compress=True is ambiguous: give a tolerance, e.g. compress=1e-8")
    if isinstance(value, (int, float, np.floating, np.integer)):
        return _validated({"tol": float(value)})
    if value == "blr":
        return Compression()
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and value[0] == "blr"
        and isinstance(value[1], dict)
    ):
        return _validated(dict(value[1]))
    raise OptionError(
        f"compress={value!r} is not understood: give None, a tolerance (compress=1e-8), "
        "'blr' or ('blr', {'tol': 1e-8, 'strategy': 'jit', ...})"
    )


def _validated(kw):
    unknown = set(kw) - COMPRESS_PARAMETERS
    if unknown:
        raise OptionError(
            f"compress got unknown parameter(s) {sorted(unknown)}; accepted: "
            f"{sorted(COMPRESS_PARAMETERS)}"
        )
    c = Compression(**{k: v for k, v in kw.items() if k != "clusters"})
    if not (isinstance(c.tol, (int, float)) and 0 < c.tol < 1):
        raise OptionError(f"compress tol must be in (0, 1), got {c.tol!r}")
    if c.strategy not in STRATEGIES:
        raise OptionError(f"unknown compress strategy {c.strategy!r}: choose one of {STRATEGIES}")
    if c.method not in METHODS:
        raise OptionError(f"unknown compress method {c.method!r}: choose one of {METHODS}")
    for name in ("min_width", "min_height"):
        v = getattr(c, name)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise OptionError(f"compress {name} must be a positive integer, got {v!r}")
    if not (isinstance(c.max_ratio, (int, float)) and 0 < c.max_ratio <= 1):
        raise OptionError(f"compress max_ratio must be in (0, 1], got {c.max_ratio!r}")
    if c.norm not in ("matrix", "absolute"):
        raise OptionError(f"compress norm must be 'matrix' or 'absolute', got {c.norm!r}")
    if "clusters" in kw:
        c = Compression(**{**c.__dict__, "clusters": check_cluster_size(kw["clusters"])})
    return c


#: The rank histogram's bins: [low, high] ranks, the last one open.
RANK_BINS = ((0, 0), (1, 4), (5, 8), (9, 16), (17, 32), (33, 64), (65, 128), (129, None))


def rank_histogram(ranks):
    """How many of ``ranks`` fall in each of :data:`RANK_BINS`, keyed "low-high"."""
    out = {}
    for lo, hi in RANK_BINS:
        key = str(lo) if hi == lo else f">{lo - 1}" if hi is None else f"{lo}-{hi}"
        inside = ranks >= lo if hi is None else (ranks >= lo) & (ranks <= hi)
        out[key] = int(inside.sum())
    return out


def compression_stats(compression, factors, tol_absolute):
    """``stats["compression"]``: what was compressed and what it saved, read from
    ``factors`` (:class:`pastixpy.numeric.Factors`: one process's or every rank's).

    ``full_rank_bytes`` is what the same factors take uncompressed (the
    ``factor_bytes`` of a factorization without ``compress``), ``ratio`` the bytes held
    over that; ranks are of the low-rank tiles, dense tiles counted apart.
    """
    layout = factors.layout
    copies = 2 if factors.kind.two_factors else 1
    itemsize = np.dtype(factors.dtype).itemsize
    full = copies * layout.size * itemsize
    t = factors.tiles()
    rank = t["rank"]
    low = rank[rank >= 0]
    # Scalars of the compressed cblks' panels had they stayed dense.
    dense_of_compressed = copies * int(layout.panel_sizes[t["cblks"]].sum())
    return {
        "tol": compression.tol,
        "norm": compression.norm,
        "tol_absolute": float(tol_absolute),
        "strategy": compression.strategy,
        "method": compression.method,
        "full_rank_bytes": int(full),
        "ratio": float(factors.footprint().nbytes / full) if full else 1.0,
        "compressed_cblks": int(t["cblks"].size),
        "candidate_bytes": int(dense_of_compressed * itemsize),
        "compressed_bytes": int(t["held"].sum() * itemsize),
        "tiles": int(rank.size),
        "lowrank_tiles": int(low.size),
        "dense_tiles": int((rank < 0).sum()),
        "mean_rank": float(low.mean()) if low.size else 0.0,
        "max_rank": int(low.max()) if low.size else 0,
        "rank_histogram": rank_histogram(low),
        "seconds": float(t["seconds"].sum()),
    }


def draw_blocks(factors, ax=None, cmap="viridis"):
    """Draw the factor's block structure, each off-diagonal tile coloured by its rank
    relative to its smaller side (dense tiles grey, diagonal blocks black).

    Parameters
    ----------
    factors : pastixpy.numeric.Factors
        Their layout and compressed tiles are drawn.
    ax : matplotlib Axes, optional
        Where to draw (a new figure's by default).
    cmap : str
        The colour map of rank / min(rows, columns).

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ImportError
        matplotlib is not installed (``pip install matplotlib``).
    """
    try:
        import matplotlib.pyplot as plt
        from matplotlib.collections import PatchCollection
        from matplotlib.patches import Rectangle
    except ImportError as exc:  # an optional dependency
        raise ImportError("F.draw() needs matplotlib: pip install matplotlib") from exc
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 6))
    layout = factors.layout
    n = int(layout.fcol[-1])
    ranks = {}
    t = factors.tiles()
    for b, f, r, h, w in zip(t["blok"], t["factor"], t["rank"], t["rows"], t["cols"], strict=True):
        if f == 0:
            ranks[int(b)] = r / min(h, w) if r >= 0 else None
    diag, dense, low, values = [], [], [], []
    for k in range(layout.ncblk):
        f0, f1 = int(layout.fcol[k]), int(layout.fcol[k + 1])
        for b in range(layout.bloknum[k], layout.bloknum[k + 1]):
            rect = Rectangle((f0, layout.frow[b]), f1 - f0, layout.lrow[b] - layout.frow[b] + 1)
            if b == layout.bloknum[k]:
                diag.append(rect)
            elif ranks.get(b) is None:
                dense.append(rect)
            else:
                low.append(rect)
                values.append(ranks[b])
    ax.add_collection(PatchCollection(diag, facecolor="black", edgecolor="none"))
    ax.add_collection(PatchCollection(dense, facecolor="0.6", edgecolor="none"))
    tiles = PatchCollection(low, cmap=cmap, edgecolor="none")
    tiles.set_array(values)
    tiles.set_clim(0, 0.5)
    ax.add_collection(tiles)
    if low:
        plt.colorbar(tiles, ax=ax, label="rank / min(rows, columns)")
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)
    ax.set_aspect("equal")
    ax.set_title("diagonal blocks black, dense tiles grey")
    return ax
