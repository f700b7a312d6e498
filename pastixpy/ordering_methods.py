"""The ordering methods: how each fill-reducing permutation is computed.

Natural order, reverse Cuthill-McKee, approximate minimum degree (our kernel in
``ordering/amd.pyx``) and METIS's nested dissection, each on a graph given by its
adjacency; the graph compression they order on (indistinguishable vertices merged
into one weighted vertex of a quotient graph, whose order is then expanded);
METIS run on several balance tolerances, the runs after the first in forked
processes (:func:`pastixpy.runtime.fork_child`); 2x2 pivot pairs checked and kept
adjacent. Which method runs, and which result is kept, is
:func:`pastixpy.ordering.order`'s policy.
"""

import warnings
from dataclasses import dataclass
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import (
    connected_components,
    maximum_bipartite_matching,
    reverse_cuthill_mckee,
)

from ._graph import indistinguishable_groups, quotient_adjacency
from .errors import InvalidInputError, OptionError
from .permutation import expand_permutation, inverse_permutation
from .runtime import fork_child

#: Compress the graph when it shrinks at least this much (METIS uses the same fraction).
COMPRESSION_FRACTION = 0.85

#: Largest ``ufactor`` accepted: from 1000 on (a part twice the other) METIS's nested
#: dissection did not finish on a 40³ grid; 999 took a hundred times the flops there.
MAX_UFACTOR = 999


def natural_perm(n):
    """The identity permutation of range(n)."""
    return np.arange(n, dtype=np.int64)


def rcm_perm(xadj, adjncy):
    """Reverse Cuthill-McKee's permutation of a graph."""
    n = xadj.shape[0] - 1
    graph = sp.csr_array((np.ones(adjncy.size, dtype=np.int8), adjncy, xadj), shape=(n, n))
    return reverse_cuthill_mckee(graph, symmetric_mode=True).astype(np.int64)


@dataclass(frozen=True)
class OrderedGraph:
    """The graph METIS and AMD order: the quotient graph of groups of vertices
    (indistinguishable ones, and pairs), or the graph itself.

    Attributes
    ----------
    xadj, adjncy : int64 arrays
        The ordered graph's adjacency.
    weights : int64 array or None
        Each vertex's group size; None for the graph itself.
    groups : int64 array
        The vertex of the ordered graph each original vertex belongs to.
    n : int
        Vertices of the original graph.
    """

    xadj: np.ndarray
    adjncy: np.ndarray
    weights: np.ndarray | None
    groups: np.ndarray
    n: int

    @property
    def nv(self):
        """Vertices of the ordered graph."""
        return self.xadj.shape[0] - 1

    @property
    def empty(self):
        """Whether the graph has no edges."""
        return self.adjncy.size == 0

    def expand(self, qperm):
        """The original vertices in the order ``qperm`` of the ordered graph's."""
        return expand_permutation(qperm, self.groups, self.nv)


def compress_graph(xadj, adjncy, pairs=None, compress=True):
    """The graph to order: vertices with identical closed adjacency (the unknowns of
    one node of a multi-dof mesh) merged, where that shrinks the graph by
    :data:`COMPRESSION_FRACTION` or more, and the two vertices of each pair merged
    (then always).

    Returns
    -------
    OrderedGraph
    """
    n = xadj.shape[0] - 1
    groups, ngroups = indistinguishable_groups(n, xadj, adjncy)
    if pairs is not None and pairs.size:
        groups, ngroups = _merge_groups(groups, ngroups, pairs)
    if (compress and ngroups <= COMPRESSION_FRACTION * n) or pairs is not None:
        qxadj, qadjncy, weights = quotient_graph(xadj, adjncy, groups, ngroups)
        return OrderedGraph(qxadj, qadjncy, weights, groups, n)
    return OrderedGraph(xadj, adjncy, None, np.arange(n, dtype=np.int64), n)


def _merge_groups(groups, ngroups, pairs):
    """Groups joined wherever a pair links two of them (connected components)."""
    links = sp.coo_array(
        (np.ones(pairs.shape[0], dtype=np.int8), (groups[pairs[:, 0]], groups[pairs[:, 1]])),
        shape=(ngroups, ngroups),
    )
    ncomp, label = connected_components(links, directed=False)
    return label[groups].astype(np.int64), ncomp


def quotient_graph(xadj, adjncy, groups, ngroups):
    """Graph whose vertices are the groups, weighted by their sizes."""
    weights = np.bincount(groups, minlength=ngroups).astype(np.int64)
    members = np.argsort(groups, kind="stable").astype(np.int64)
    mptr = np.zeros(ngroups + 1, dtype=np.int64)
    np.cumsum(weights, out=mptr[1:])
    qxadj, qadjncy = quotient_adjacency(ngroups, xadj, adjncy, groups, members, mptr)
    return qxadj, qadjncy, weights


def amd_perm(graph, **kwargs):
    """AMD's permutation of an :class:`OrderedGraph`, expanded to the original
    vertices; ``kwargs``: AMD's ``dense`` and ``aggressive``."""
    from ._amd import amd_order

    qperm = amd_order(graph.xadj, graph.adjncy, graph.nv, weights=graph.weights, **kwargs)
    return graph.expand(qperm)


def parse_ufactors(value):
    """METIS's ``ufactor`` option as a tuple of ints in 1..MAX_UFACTOR."""
    values = (value,) if isinstance(value, Integral) else value
    try:
        values = tuple(values)
    except TypeError:
        values = ()
    if not values or not all(
        isinstance(u, Integral) and not isinstance(u, bool) and 0 < u <= MAX_UFACTOR for u in values
    ):
        raise OptionError(
            f"METIS's ufactor must be an integer in 1..{MAX_UFACTOR} or a sequence of them, "
            f"got {value!r}; 200 is METIS's default, 100-600 the useful range (from 1000 on "
            "METIS's nested dissection may not finish)"
        )
    return tuple(int(u) for u in values)


def metis_perm(xadj, adjncy, weights, seed, ufactor):
    """METIS's nested-dissection permutation of one (possibly weighted) graph."""
    import pymetis

    options = pymetis.Options(seed=seed, ufactor=ufactor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        perm, _ = pymetis.nested_dissection(
            pymetis.CSRAdjacency(xadj, adjncy), vweights=weights, options=options
        )
    return np.asarray(perm, dtype=np.int64)


def metis_runs(graph, seed, ufactors, cost, children=0, min_cost=0, redo=True):
    """METIS's permutations of an :class:`OrderedGraph` (expanded to the original
    vertices) for the balance tolerances ``ufactors``, and the ``cost`` of each.

    The first runs here while up to ``children`` others run in forked processes:
    pymetis holds the GIL, and METIS seeds libc's one random generator, so threads
    would run one after another and mix their random streams. The others count only
    if the first costs at least ``min_cost`` (then, with ``redo``, one whose child
    failed or had no process is run here; without, it is left out); else the children
    are stopped. With one ufactor, no cost is taken.

    Returns
    -------
    perms : list of int64 arrays
    costs : list of float
        Empty with one ufactor.
    done : list of int
        The index in ``ufactors`` of each permutation.
    """
    import pymetis  # noqa: F401  (imported before any fork: the children only call it)

    def run(ufactor):
        qperm = metis_perm(graph.xadj, graph.adjncy, graph.weights, seed, ufactor)
        return graph.expand(qperm)

    started = {}
    try:
        for i in range(1, min(children + 1, len(ufactors))):
            try:
                started[i] = fork_child(lambda u=ufactors[i]: run(u))
            except OSError:  # no process to spare (limits, memory)
                break
        perms = [run(ufactors[0])]
        costs = [cost(perms[0])] if len(ufactors) > 1 else []
        if not costs or costs[0] < min_cost:
            return perms, costs, [0]
        done = [0]
        for i, u in enumerate(ufactors[1:], start=1):
            perm = started.pop(i).wait() if i in started else None
            if perm is None or perm.size != perms[0].size:
                if not redo:
                    continue
                perm = run(u)
            perms.append(perm)
            costs.append(cost(perm))
            done.append(i)
        return perms, costs, done
    finally:
        for child in started.values():
            child.kill()


#: How :func:`vertex_separator` turns METIS's edge bisection into a vertex separator:
#: ``"cover"``, a minimum vertex cover of the cut edges (König's theorem, from a maximum
#: matching of their bipartite graph), or ``"boundary"``, the boundary of the lighter side.
SEPARATORS = ("cover", "boundary")


def vertex_separator(xadj, adjncy, weights, seed, ufactor, how="cover"):
    """A vertex separator of a graph, from METIS's edge bisection.

    METIS bisects the (weighted) graph into two sides with few cut edges; every cut edge
    then needs one endpoint in the separator. ``how="cover"`` takes a minimum vertex
    cover of the cut edges (fewest vertices, not least weight), ``"boundary"`` every
    vertex of the lighter side with a neighbour on the other.

    Returns
    -------
    side : int8 array
        0 or 1 for the vertices of either half, 2 for the separator's. No edge joins
        a vertex of side 0 to one of side 1.

    Examples
    --------
    >>> from pastixpy.gallery import laplacian
    >>> from pastixpy.matrix import canonical_csc, symmetric_pattern
    >>> xadj, adjncy = symmetric_pattern(canonical_csc(laplacian((10, 10))))
    >>> side = vertex_separator(xadj, adjncy, None, seed=0, ufactor=200)
    >>> np.flatnonzero(side == 2).tolist()  # a grid line
    [5, 15, 25, 35, 45, 55, 65, 75, 85, 95]
    """
    import pymetis

    if how not in SEPARATORS:
        raise OptionError(f"the separator must be one of {SEPARATORS}, got {how!r}")
    nv = xadj.shape[0] - 1
    options = pymetis.Options(seed=seed, ufactor=ufactor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _, part = pymetis.part_graph(
            2, pymetis.CSRAdjacency(xadj, adjncy), vweights=weights, options=options
        )
    side = np.asarray(part, dtype=np.int8)
    src = np.repeat(np.arange(nv, dtype=np.int64), np.diff(xadj))
    cut = side[src] != side[adjncy]
    if not cut.any():
        return side
    if how == "boundary":
        w = np.ones(nv, dtype=np.int64) if weights is None else np.asarray(weights)
        lighter = int(w[side == 1].sum() < w[side == 0].sum())
        side[src[cut & (side[src] == lighter)]] = 2
        return side
    side[_cut_cover(src[cut], adjncy[cut], side, nv)] = 2
    return side


def _cut_cover(src, dst, side, nv):
    """A minimum vertex cover of the cut edges ``src -> dst`` (both directions listed):
    König's construction from a maximum matching of their bipartite graph, rows the
    side-0 endpoints, columns the side-1 ones. Those reached from an unmatched row by
    alternating paths (Z): the cover is the rows outside Z and the columns in Z."""
    keep = side[src] == 0
    left, right = src[keep], dst[keep]
    rows, li = np.unique(left, return_inverse=True)
    cols, ri = np.unique(right, return_inverse=True)
    bip = sp.csr_array((np.ones(li.size, dtype=np.int8), (li, ri)), shape=(rows.size, cols.size))
    bip.sum_duplicates()
    mate = maximum_bipartite_matching(bip, perm_type="column")  # row i -> column, or -1
    col_mate = np.full(cols.size, -1, dtype=np.int64)
    matched = mate >= 0
    col_mate[mate[matched]] = np.flatnonzero(matched)
    bipT = bip.T.tocsr()
    in_z = ~matched  # rows in Z
    frontier = in_z.copy()
    cols_z = np.zeros(cols.size, dtype=bool)
    while frontier.any():
        # From rows in Z along any edge (the one matched edge of a reached row leads back
        # to a column already in Z), then from each new column along its matched edge.
        reached = (bipT @ frontier.astype(np.int8)) > 0
        new_cols = reached & ~cols_z
        cols_z |= new_cols
        back = col_mate[new_cols]
        back = back[back >= 0]
        frontier = np.zeros(rows.size, dtype=bool)
        frontier[back] = True
        frontier &= ~in_z
        in_z |= frontier
    return np.concatenate([rows[~in_z], cols[cols_z]])


def induced_subgraph(xadj, adjncy, keep):
    """The subgraph on the vertices where ``keep`` is True, renumbered in their order:
    ``(xadj, adjncy)`` and those vertices' indices."""
    nv = xadj.shape[0] - 1
    vertices = np.flatnonzero(keep).astype(np.int64)
    new = np.full(nv, -1, dtype=np.int64)
    new[vertices] = np.arange(vertices.size, dtype=np.int64)
    src = np.repeat(np.arange(nv, dtype=np.int64), np.diff(xadj))
    both = keep[src] & keep[adjncy]
    sxadj = np.zeros(vertices.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(new[src[both]], minlength=vertices.size), out=sxadj[1:])
    return sxadj, new[adjncy[both]], vertices


def metis_split_perm(graph, seed, ufactor, children=1, how="cover", balance=None):
    """Nested dissection of an :class:`OrderedGraph` whose top level is split by hand so
    its two halves are ordered at the same time, expanded to the original vertices.

    The top vertex separator comes from :func:`vertex_separator`; each half is ordered
    by METIS's nested dissection (:func:`metis_perm`), one in a forked child
    (:func:`pastixpy.runtime.fork_child`) when ``children`` allows while this process
    orders the other, and the order is the first half's, the second's, then the
    separator's. Where no child can be forked, or one fails, its half is ordered here:
    the permutation is the same either way.

    Examples
    --------
    >>> from pastixpy.gallery import laplacian
    >>> from pastixpy.matrix import canonical_csc, symmetric_pattern
    >>> graph = compress_graph(*symmetric_pattern(canonical_csc(laplacian((10, 10)))))
    >>> perm = metis_split_perm(graph, seed=0, ufactor=200, children=0)
    >>> perm[-10:].tolist()  # the separator last
    [5, 15, 25, 35, 45, 55, 65, 75, 85, 95]
    """
    import pymetis  # noqa: F401  (imported before any fork: the child only calls it)

    balance = ufactor if balance is None else balance
    side = vertex_separator(graph.xadj, graph.adjncy, graph.weights, seed, balance, how)
    halves = [induced_subgraph(graph.xadj, graph.adjncy, side == s) for s in (0, 1)]

    def run(half):
        xadj, adjncy, vertices = half
        if adjncy.size == 0:  # no edges: any order fills nothing
            return vertices
        weights = None if graph.weights is None else graph.weights[vertices]
        return vertices[metis_perm(xadj, adjncy, weights, seed, ufactor)]

    child = None
    if children > 0 and halves[0][1].size:
        try:
            child = fork_child(lambda: run(halves[0]))
        except OSError:  # no process to spare (limits, memory): both halves here
            child = None
    try:
        second = run(halves[1])
    except BaseException:
        if child is not None:
            child.kill()
        raise
    first = child.wait() if child is not None else None  # None: the child failed
    if first is None or first.size != halves[0][2].size:
        first = run(halves[0])
    qperm = np.concatenate([first, second, np.flatnonzero(side == 2).astype(np.int64)])
    return graph.expand(qperm)


def check_pairs(pairs, n, xadj, adjncy):
    """Validate 2x2 pivot pairs: an (m, 2) int array of adjacent, distinct, unshared vertices."""
    pairs = np.asarray(pairs)
    if pairs.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.dtype.kind not in "iu":
        raise InvalidInputError(f"pairs must be an (m, 2) integer array, got shape {pairs.shape}")
    pairs = pairs.astype(np.int64)
    if pairs.min() < 0 or pairs.max() >= n:
        raise InvalidInputError(f"pairs hold an index outside 0..{n - 1}")
    if np.unique(pairs).size != pairs.size:
        raise InvalidInputError("pairs must not share a vertex or pair a vertex with itself")
    graph = sp.csr_array((np.ones(adjncy.size, dtype=bool), adjncy, xadj), shape=(n, n))
    apart = ~np.asarray(graph[pairs[:, 0], pairs[:, 1]]).ravel().astype(bool)
    if apart.any():
        a, b = pairs[np.argmax(apart)]
        raise InvalidInputError(
            f"pair ({a}, {b}) is not an entry of A: only coupled unknowns can form a 2x2 pivot"
        )
    return pairs


def keep_pairs_adjacent(perm, pairs):
    """Move each pair's earlier vertex next to the later one, so both pivot together.

    Every other vertex keeps its relative order; since a pair is coupled, the
    earlier vertex's elimination-tree parent becomes the later one.
    """
    pos = inverse_permutation(perm)
    key = pos.copy()
    later = np.maximum(pos[pairs[:, 0]], pos[pairs[:, 1]])
    key[pairs[:, 0]] = later
    key[pairs[:, 1]] = later
    return perm[np.lexsort((pos[perm], key[perm]))]
