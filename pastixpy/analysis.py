"""Analysis driver: matrix → ordering → elimination tree → supernodes → block structure.

The analysis uses A's pattern only, so one :class:`Analysis` serves every
numeric factorization of matrices with that pattern.
"""

import time
from dataclasses import dataclass, field, replace

import numpy as np

from . import _symbolic
from .clusters import cluster_supernodes
from .errors import InvalidInputError, OptionError, PastixError
from .kinds import KINDS
from .matrix import canonical_csc, compact_index, matrix_symmetry, symmetric_pattern
from .options import KIND_CHOICES, parse_option
from .ordering import Ordering, order
from .ordering_methods import check_pairs, keep_pairs_adjacent
from .runtime import Allowance
from .schur import (
    check_schur,
    interior_graph,
    interior_ordering,
    postorder_then_schur,
    schur_last,
    schur_partition,
)
from .symbolic import (
    EliminationTree,
    SymbolMatrix,
    block_symbol,
    elimination_tree,
    reorder_supernodes,
    split_partition,
    supernode_partition,
)

#: Below this many flops the reordering inside supernodes costs more than it saves.
REORDER_MIN_FLOPS = 1e8

#: The ordering methods whose supernodes the reordering is for by default: nested
#: dissection's separators, on which the traces of the subdomains below nest. A minimum
#: degree ordering's supernodes came out with more bloks than they had, not fewer, and
#: factorizations no faster for the reordering's cost (docs/analysis.md).
REORDER_METHODS = ("metis",)


#: Dtypes the memory forecast is given for.
FORECAST_DTYPES = ("float32", "float64", "complex64", "complex128")


@dataclass(frozen=True, repr=False)
class Analysis:
    """Result of :func:`analyze`: everything the numeric phase needs that depends on the pattern.

    Attributes
    ----------
    n : int
    kind : str
        ``"llt"``, ``"ldlt"``, ``"ldlh"`` or ``"lu"``.
    ordering : Ordering
        What the ordering method produced, before postordering.
    tree : EliminationTree
        Postordered elimination tree, column counts, separator tree.
    symbol : SymbolMatrix
        Block structure of the factor.
    stats : dict
        Sizes, fill, flops, memory forecast and seconds per step (see :func:`analyze`).
    schur : ndarray of int64 or None
        The Schur unknowns (``analyze(A, schur=...)``), ordered last as one cblk, in
        the order given; None for a full factorization.
    """

    n: int
    kind: str
    ordering: Ordering
    tree: EliminationTree
    symbol: SymbolMatrix
    stats: dict = field(default_factory=dict)
    # The pattern of A + Aᵀ the analysis was made for (checked by check()).
    xadj: np.ndarray = field(default=None)
    adjncy: np.ndarray = field(default=None)
    #: The Schur unknowns (original indices, in the order given), ordered last as the
    #: last cblk, or None (see :mod:`pastixpy.schur`).
    schur: np.ndarray = field(default=None)

    @property
    def perm(self):
        """``perm[k]`` is the original index of the k-th pivot."""
        return self.tree.perm

    @property
    def iperm(self):
        """``iperm[i]`` is the pivot position of original index i."""
        return self.tree.iperm

    @property
    def separators(self):
        """Separator tree as ``(ptr, parent)``: node s holds pivots ``ptr[s]:ptr[s+1]``."""
        return self.tree.sep_ptr, self.tree.sep_parent

    def memory_forecast(self, dtype="float64", kind=None):
        """Bytes of factor storage for a value dtype (L, plus U for LU), full rank.

        The factors alone: before allocating, the numeric phase forecasts everything it
        allocates for the strategy it runs (work buffers per thread, A's entries,
        compression's panels, tiles and work: :mod:`pastixpy.numeric.forecast`) and
        checks that.

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> an = analyze(sp.eye(4, format="csc"), ordering="natural")
        >>> an.memory_forecast("float32")
        16
        """
        kind = self.kind if kind is None else kind
        copies = 2 if KINDS[kind].two_factors else 1
        return copies * self.symbol.nnz_stored * np.dtype(dtype).itemsize

    def save(self, path):
        """Write this analysis to ``path`` (:func:`pastixpy.persist.save`), for
        ``factorize(A, analysis=pastixpy.load(path))`` in a later process. Returns the
        path."""
        from .persist import save

        return save(self, path)

    def check(self):
        """Verify every invariant of the analysis; raise PastixError on a violation.

        Checks the permutation, the elimination tree (parents come later), the
        block structure (:meth:`SymbolMatrix.check`), that every entry of the
        permuted A + Aᵀ lies inside the structure, and that the stored structure
        holds at least the exact fill.
        """
        n, perm = self.n, self.perm
        if perm.shape != (n,) or not np.array_equal(np.sort(perm), np.arange(n)):
            raise PastixError("analysis invariant violated: perm is not a permutation of range(n)")
        parent = self.tree.parent
        if np.any((parent != -1) & (parent <= np.arange(n))):
            raise PastixError("analysis invariant violated: an etree parent precedes its child")
        self.symbol.check()
        sym = self.symbol
        iperm = self.iperm
        rows = iperm[self.adjncy]
        cols = np.repeat(iperm, np.diff(self.xadj))
        low = rows > cols
        rows, cols = rows[low], cols[low]
        k = sym.col2cblk()[cols]
        below = rows > sym.cblk_lcolnum[k]
        rows, k = rows[below], k[below]
        # Each entry below a diagonal block must fall inside one of that cblk's bloks.
        key = sym.blok_lcblknm * n + sym.blok_frownum
        b = np.searchsorted(key, k * n + rows, side="right") - 1
        ok = (b >= 0) & (sym.blok_lcblknm[np.maximum(b, 0)] == k)
        ok &= sym.blok_lrownum[np.maximum(b, 0)] >= rows
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise PastixError(
                f"analysis invariant violated: entry ({int(rows[i])}, cblk {int(k[i])}) of the "
                "permuted matrix lies outside the block structure"
            )
        if sym.nnz_stored < self.tree.nnz:
            raise PastixError("analysis invariant violated: the structure stores less than nnz(L)")

    def __repr__(self):
        s = self.stats
        return (
            f"<Analysis n={self.n} kind={self.kind} ordering={self.ordering.method} "
            f"nnz(L)={s['nnz_L']} stored={s['nnz_L_stored']} flops={s['flops']:.3g} "
            f"cblk={s['n_cblk']} blok={s['n_blok']}>"
        )

    def draw_tree(self, ax=None, *, max_nodes=3000):
        """Draw the cblk tree (children below parents) with igraph's Reingold-Tilford layout.

        Needs matplotlib. Node sizes grow with cblk widths.
        """
        import igraph
        import matplotlib.pyplot as plt

        sym = self.symbol
        if sym.ncblk > max_nodes:
            raise ValueError(f"{sym.ncblk} cblks is too many to draw (max_nodes={max_nodes})")
        parent = sym.cblk_parent
        kids = np.flatnonzero(parent >= 0)
        roots = np.flatnonzero(parent < 0).tolist()
        edges = np.column_stack([parent[kids], kids]).tolist()
        g = igraph.Graph(n=sym.ncblk, edges=edges)
        coords = np.array(g.layout_reingold_tilford(mode="out", root=roots).coords)
        if ax is None:
            _, ax = plt.subplots(figsize=(8, 5))
        for k in kids:
            p = parent[k]
            ax.plot(coords[[k, p], 0], coords[[k, p], 1], color="0.6", lw=0.5, zorder=1)
        ax.scatter(coords[:, 0], coords[:, 1], s=4 + 2 * np.sqrt(sym.cblk_width), zorder=2)
        ax.invert_yaxis()
        ax.set_axis_off()
        ax.set_title(f"cblk tree: {sym.ncblk} nodes, height {self.stats['tree_height']}")
        return ax


def analyze(
    A,
    *,
    ordering="auto",
    kind="auto",
    amalgamation=True,
    split="auto",
    reorder=None,
    clusters=None,
    pairs=None,
    schur=None,
    threads=None,
    allowance=None,
):
    """Analyse the sparsity pattern of A: ordering, symbolic factorization, block structure.

    Parameters
    ----------
    A : scipy sparse matrix or array (any format), or dense array_like
        Square matrix. Only its pattern is used (plus its values' symmetry when
        ``kind="auto"``); the pattern of A + Aᵀ is analysed, for LU too.
    ordering : str, (str, dict) or array_like
        ``"auto"`` (default: AMD for graphs of at most
        :data:`pastixpy.ordering.AUTO_AMD_MAX` vertices; above, AMD or METIS,
        whichever is forecast to cost less analysis plus factorization time),
        ``"metis"`` (nested dissection; kwargs ``seed``, ``compress`` and
        ``ufactor``: one balance tolerance or several, of which the ordering
        with the fewest flops is kept; by default a second run with a looser
        tolerance on another core, see :func:`pastixpy.ordering.order`),
        ``"amd"`` (kwargs ``dense``, ``aggressive``, ``compress``), ``"rcm"``,
        ``"natural"``, or a permutation array (``perm[k]`` = original index of
        the k-th pivot). The result is postordered, which keeps the fill.
    kind : {"auto", "llt", "ldlt", "ldlh", "lu"}
        Factorization the analysis is for: it sets the memory forecast. With
        ``"auto"``, symmetric/Hermitian matrices give ``"llt"``, others ``"lu"``.
    amalgamation : bool or dict
        Relaxed amalgamation of small supernodes (fewer, larger BLAS calls);
        a dict overrides the rules of :data:`pastixpy.symbolic.AMALGAMATION`
        (``subtree``, ``nrelax``, ``zrelax``).
    split : "auto", (int, int) or None
        Min and max panel width when splitting wide cblks; None to keep them;
        ``"auto"``: the kind's (:attr:`pastixpy.kinds.Kind.split`: 256-512 columns,
        128-256 for LDLᵀ).
    reorder : bool, optional
        Reorder the columns inside each supernode so that the rows other cblks
        have there form few intervals (fewer, taller blocks: fewer BLAS calls
        and scatters; see :func:`pastixpy.symbolic.reorder_supernodes`). The
        fill does not grow. Default: on for nested dissection
        (:data:`REORDER_METHODS`) when the factorization takes at least
        :data:`REORDER_MIN_FLOPS`; off for the other methods, whose supernodes it
        does not improve, and for a permutation array, which is then kept as given
        (up to postorder).
    clusters : (int, int), optional
        Cut every separator (fundamental supernode) wider than ``max`` into compact
        clusters of about ``min`` to ``max`` unknowns, each numbered consecutively and a
        cblk of its own: the tiles block low-rank compression needs (see
        :mod:`pastixpy.clusters`; :data:`pastixpy.compression.CLUSTER_SIZE` is the usual
        choice). The fill and flops do not change. Default None: panels as ``split``
        cuts them.
    pairs : (m, 2) int array, optional
        Coupled unknowns to keep in one cblk, next to each other, so the
        numeric phase can pivot on them as a 2x2 block (symmetric indefinite
        matrices with zero diagonal entries; see :func:`pastixpy.preprocess.pivot_pairs`).
    schur : array_like of int, optional
        Unknowns ordered last, in the order given, as one cblk: the analysis of a
        Schur complement factorization (``factorize(A, schur=...)``, see
        :mod:`pastixpy.schur`). The other unknowns are ordered by themselves; no
        reordering inside supernodes, no clusters, no pair with a Schur unknown.
    threads : int, optional
        Cores for the METIS runs (the runs after the first in forked processes,
        on Linux); default: what the environment allows
        (:func:`pastixpy.runtime.default_threads`). With one, METIS runs once
        unless ``ufactor`` lists several values.
    allowance : pastixpy.runtime.Allowance, optional
        Internal: what this process may do, in place of ``threads``'s
        :meth:`~pastixpy.runtime.Allowance.process` (rank 0 of a distributed run
        passes an MPI rank's, which never forks).

    Returns
    -------
    Analysis
        With ``stats`` holding ``n``, ``nnz_A``, ``nnz_L`` (exact structural
        nonzeros of the Cholesky factor of the permuted A + Aᵀ, diagonal
        included, before amalgamation), ``nnz_L_stored`` (entries stored,
        padding included), ``flops`` (LLᵀ), ``n_cblk``, ``n_blok``,
        ``tree_height`` (cblk tree), ``etree_height``, ``n_separators``,
        ``n_ordered`` (vertices after graph compression), ``n_schur`` (Schur
        unknowns, 0 without ``schur``), ``n_clusters`` (with
        ``clusters``: the clusters made, 0 otherwise), ``ordering_candidates``
        (each METIS run compared: its parameters and the flops of its ordering,
        before the reordering inside supernodes), ``amalgamation_zeros``,
        ``memory_bytes`` (factor storage of this kind in float64),
        ``memory_bytes_by_dtype`` and ``seconds`` (per step, and ``total``).

    Raises
    ------
    InvalidInputError
        Non-square, empty, non-numeric or non-finite A; a permutation that is not one.
    OptionError
        An unknown ordering or kind, or an unknown option parameter.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(100, 100), format="csc")
    >>> an = analyze(A, ordering="natural")  # a tridiagonal matrix: no fill
    >>> an.stats["nnz_L"]
    199
    >>> an.check()
    """
    kind, _ = parse_option(kind, KIND_CHOICES, "kind")
    seconds = {}
    t = time.perf_counter()

    def lap(step):
        nonlocal t
        now = time.perf_counter()
        seconds[step] = now - t
        t = now

    C = canonical_csc(A, copy=False)  # only read here, nothing of it kept
    if kind == "auto":
        kind = "lu" if matrix_symmetry(C) == "general" else "llt"
    if isinstance(split, str):
        if split != "auto":
            raise OptionError(f"split must be 'auto', None or (min, max), got {split!r}")
        split = KINDS[kind].split
    lap("canonicalize")
    n = C.shape[0]
    xadj, adjncy = symmetric_pattern(C)
    lap("graph")
    together = None
    schur = check_schur(schur, n)
    if schur is not None and clusters is not None:
        raise OptionError("schur= does not combine with clusters=")
    if pairs is not None:
        pairs = check_pairs(pairs, n, xadj, adjncy)
        if schur is not None and np.isin(pairs, schur).any():
            raise InvalidInputError("a 2x2 pair holds a Schur unknown: pair the others only")
    cheapest = {}  # the tree of the cheapest METIS candidate, reused if it is kept

    def flops(perm):
        tree = elimination_tree(xadj, adjncy, perm)
        if not cheapest or tree.flops < cheapest["tree"].flops:
            cheapest.update(perm=perm, tree=tree)
        return tree.flops

    if allowance is None:
        allowance = Allowance.process(threads)
    if schur is None:
        ordered = order(xadj, adjncy, ordering, pairs, cost=flops, allowance=allowance)
    else:
        ordered = _schur_ordered(xadj, adjncy, ordering, schur, pairs, allowance)
    if pairs is not None:
        ordered = replace(ordered, perm=keep_pairs_adjacent(ordered.perm, pairs))
    lap("ordering")
    if cheapest.get("perm") is ordered.perm:
        tree = cheapest["tree"]
    else:
        tree = elimination_tree(xadj, adjncy, ordered.perm)
    cheapest.clear()
    if schur is not None:
        # The postorder may interleave Schur unknowns with others hanging below them:
        # they go back to the end, in the order given.
        perm = postorder_then_schur(tree.perm, schur)
        tree = elimination_tree(xadj, adjncy, perm, keep_order=True)
    if pairs is not None:
        together = _pair_seconds(tree.iperm, pairs)
    lap("etree")
    fcol, n_zeros = supernode_partition(tree, amalgamation=amalgamation, together=together)
    lap("supernodes")
    if reorder is None:
        reorder = ordered.method in REORDER_METHODS and tree.flops >= REORDER_MIN_FLOPS
    # Reordering inside supernodes would move the Schur unknowns out of the order given.
    reorder = reorder and schur is None
    if reorder:
        tree = reorder_supernodes(xadj, adjncy, tree, fcol, together)
        if pairs is not None:
            together = _pair_seconds(tree.iperm, pairs)  # pairs moved with their supernode
    lap("reordering")
    made = np.empty(0, dtype=np.int64)
    if clusters is not None:
        tree, fcol, made = cluster_supernodes(xadj, adjncy, tree, fcol, clusters, together)
        lap("clustering")
    fcol = split_partition(fcol, split, together)
    if schur is not None:
        fcol = schur_partition(fcol, n, schur.size)
    symbol = block_symbol(xadj, adjncy, tree, fcol)
    lap("blocks")
    depth = _symbolic.tree_depth(symbol.cblk_parent)
    etree_depth = _symbolic.tree_depth(tree.parent)
    seconds["total"] = sum(seconds.values())
    copies = 2 if KINDS[kind].two_factors else 1
    by_dtype = {d: copies * symbol.nnz_stored * np.dtype(d).itemsize for d in FORECAST_DTYPES}
    stats = {
        "n": n,
        "nnz_A": int(C.nnz),
        "nnz_L": tree.nnz,
        "nnz_L_stored": symbol.nnz_stored,
        "fill_ratio": tree.nnz / max(1, C.nnz),
        "flops": tree.flops,
        "n_cblk": symbol.ncblk,
        "n_blok": symbol.nblok,
        "tree_height": int(depth.max()),
        "etree_height": int(etree_depth.max()),
        "n_separators": int(tree.sep_ptr.size - 1),
        "n_ordered": ordered.n_ordered,
        "n_clusters": int(made.size),
        "amalgamation_zeros": int(n_zeros),
        "n_pairs": 0 if pairs is None else int(pairs.shape[0]),
        "n_schur": 0 if schur is None else int(schur.size),
        "kind": kind,
        "ordering": ordered.method,
        "memory_bytes": by_dtype["float64"],
        "memory_bytes_by_dtype": by_dtype,
        "seconds": seconds,
        "ordering_seconds": dict(ordered.seconds),
        "ordering_candidates": [{**params, "flops": flops} for params, flops in ordered.candidates],
    }
    # Kept to check reuse and invariants; int32 halves them where n allows.
    xadj, adjncy = compact_index(xadj), compact_index(adjncy)
    if schur is not None:
        schur.setflags(write=False)
    return Analysis(n, kind, ordered, tree, symbol, stats, xadj, adjncy, schur)


def _schur_ordered(xadj, adjncy, ordering, schur, pairs, allowance):
    """The ordering of a Schur complement analysis: the graph of the other unknowns
    ordered alone (its own METIS candidates compared by their flops; ``pairs``, none
    with a Schur unknown, ordered as one), ``schur`` after."""
    n = xadj.shape[0] - 1
    sub_xadj, sub_adjncy, keep = interior_graph(xadj, adjncy, schur)
    if pairs is not None:
        local = np.full(n, -1, dtype=np.int64)
        local[keep] = np.arange(keep.size)
        pairs = local[pairs]

    def flops(perm):
        return elimination_tree(sub_xadj, sub_adjncy, perm).flops

    inner = order(
        sub_xadj,
        sub_adjncy,
        interior_ordering(ordering, schur, n),
        pairs,
        cost=flops,
        allowance=allowance,
    )
    return replace(inner, perm=schur_last(inner.perm, keep, schur))


def _pair_seconds(iperm, pairs):
    """Mask of pivot positions that hold the second column of a pair (adjacent after postorder)."""
    first = np.minimum(iperm[pairs[:, 0]], iperm[pairs[:, 1]])
    second = np.maximum(iperm[pairs[:, 0]], iperm[pairs[:, 1]])
    if (second != first + 1).any():
        raise PastixError("internal error: a 2x2 pivot pair was separated by the postorder")
    together = np.zeros(iperm.size, dtype=bool)
    together[second] = True
    return together
