"""Ordering phase: a fill-reducing permutation of the graph of A + Aᵀ.

Methods: nested dissection through METIS (``"metis"``), approximate minimum
degree (``"amd"``, our kernel in ``ordering/amd.pyx``), reverse Cuthill-McKee
(``"rcm"``), ``"natural"``, or a user permutation; ``"auto"`` (the default) is
AMD on small graphs and METIS on the others. Before METIS or AMD, vertices
with identical closed adjacency (the unknowns of one node of a multi-dof mesh)
are merged into one weighted vertex; the quotient graph is ordered and expanded.
"""

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, reverse_cuthill_mckee

from ._graph import indistinguishable_groups, quotient_adjacency
from .errors import InvalidInputError
from .options import parse_option

#: Accepted ordering names and the parameters each accepts.
ORDERINGS = {
    "auto": {"seed", "compress"},
    "metis": {"seed", "compress"},
    "amd": {"dense", "aggressive", "compress"},
    "rcm": set(),
    "natural": set(),
}

#: Compress the graph when it shrinks at least this much (METIS uses the same fraction).
COMPRESSION_FRACTION = 0.85

#: ``"auto"`` orders graphs of at most this many vertices (after compression) with AMD:
#: below it, METIS costs several times AMD's time (about 2 ms for a 30x30 grid, more
#: than the whole factorization) for a fill within about 1.3x of AMD's.
AUTO_AMD_MAX = 5000


@dataclass(frozen=True)
class Ordering:
    """Result of the ordering phase.

    Attributes
    ----------
    perm : ndarray of int64
        ``perm[k]`` is the original index of the k-th pivot.
    method : str
        ``"metis"``, ``"amd"``, ``"rcm"``, ``"natural"`` or ``"user"`` (``"auto"``
        resolved to the method it chose).
    n_ordered : int
        Vertices of the graph that was ordered: fewer than n when indistinguishable
        vertices were compressed.
    seconds : dict
        Time spent in ``compress`` and ``order``.
    """

    perm: np.ndarray
    method: str
    n_ordered: int
    seconds: dict = field(default_factory=dict)

    @property
    def iperm(self):
        """Inverse permutation: ``iperm[i]`` is the pivot position of original index i."""
        return inverse_permutation(self.perm)


def inverse_permutation(perm):
    """Inverse of a permutation array, as int64."""
    iperm = np.empty_like(perm)
    iperm[perm] = np.arange(perm.size, dtype=perm.dtype)
    return iperm


def check_permutation(p, n, argname="ordering"):
    """Validate a user permutation of range(n) and return it as int64.

    Raises
    ------
    InvalidInputError
        Wrong length, non-integer values, out of range, or a repeated index.
    """
    p = np.asarray(p)
    if p.ndim != 1 or p.shape[0] != n:
        raise InvalidInputError(
            f"{argname} must be a permutation of range({n}) (1-D, length {n}); got shape {p.shape}"
        )
    if p.dtype.kind not in "iu":
        if p.dtype.kind == "f" and np.all(np.isfinite(p)) and np.all(p == np.round(p)):
            p = p.astype(np.int64)
        else:
            raise InvalidInputError(f"{argname} must hold integers, got dtype {p.dtype}")
    p = p.astype(np.int64)
    if n and (p.min() < 0 or p.max() >= n):
        raise InvalidInputError(f"{argname} has values outside range({n})")
    seen = np.bincount(p, minlength=n)
    if n and seen.max() > 1:
        raise InvalidInputError(
            f"{argname} is not a permutation: index {int(np.argmax(seen))} appears "
            f"{int(seen.max())} times and {int(np.sum(seen == 0))} indices are missing"
        )
    return p


def order(xadj, adjncy, ordering="auto", pairs=None):
    """Compute a fill-reducing ordering of a symmetric graph.

    Parameters
    ----------
    xadj, adjncy : int64 arrays
        Adjacency of the pattern of A + Aᵀ without the diagonal.
    ordering : str, (str, dict) or array_like
        A method name, a ``(name, {kwargs})`` pair, or a permutation array.
        ``"auto"`` takes METIS's keyword arguments and uses them when it picks
        METIS (graphs of more than :data:`AUTO_AMD_MAX` vertices).
    pairs : (m, 2) int64 array, optional
        Vertices METIS and AMD order as one (2x2 pivots); see :func:`keep_pairs_adjacent`.

    Returns
    -------
    Ordering
    """
    n = xadj.shape[0] - 1
    if not isinstance(ordering, (str, tuple)):
        return Ordering(check_permutation(ordering, n), "user", n)
    name, kwargs = parse_option(ordering, ORDERINGS, "ordering")
    t0 = time.perf_counter()
    if name == "natural":
        return Ordering(np.arange(n, dtype=np.int64), name, n, {"order": 0.0})
    if name == "rcm":
        graph = sp.csr_array((np.ones(adjncy.size, dtype=np.int8), adjncy, xadj), shape=(n, n))
        perm = reverse_cuthill_mckee(graph, symmetric_mode=True).astype(np.int64)
        return Ordering(perm, name, n, {"order": time.perf_counter() - t0})

    # METIS and AMD order the quotient graph of indistinguishable vertices.
    groups, ngroups = indistinguishable_groups(n, xadj, adjncy)
    compress = kwargs.pop("compress", True)
    if pairs is not None and pairs.size:
        groups, ngroups = _merge_groups(groups, ngroups, pairs)
    if (compress and ngroups <= COMPRESSION_FRACTION * n) or pairs is not None:
        qxadj, qadjncy, weights = quotient_graph(xadj, adjncy, groups, ngroups)
    else:
        groups, ngroups = np.arange(n, dtype=np.int64), n
        qxadj, qadjncy, weights = xadj, adjncy, None
    if name == "auto":
        name = "amd" if ngroups <= AUTO_AMD_MAX else "metis"
        if name == "amd":
            kwargs.pop("seed", None)
    t1 = time.perf_counter()
    qperm = _order_graph(name, kwargs, qxadj, qadjncy, weights)
    perm = expand_permutation(qperm, groups, ngroups)
    t2 = time.perf_counter()
    return Ordering(perm, name, ngroups, {"compress": t1 - t0, "order": t2 - t1})


def _order_graph(name, kwargs, xadj, adjncy, weights):
    """Permutation of one (possibly weighted) graph by METIS or AMD."""
    n = xadj.shape[0] - 1
    if name == "amd" or adjncy.size == 0:
        from ._amd import amd_order

        return amd_order(xadj, adjncy, n, weights=weights, **kwargs)
    import pymetis

    options = pymetis.Options(seed=int(kwargs.get("seed", 0)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        perm, _ = pymetis.nested_dissection(
            pymetis.CSRAdjacency(xadj, adjncy), vweights=weights, options=options
        )
    return np.asarray(perm, dtype=np.int64)


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


def expand_permutation(qperm, groups, ngroups):
    """Order the members of each group consecutively, in the group order ``qperm``."""
    rank = np.empty(ngroups, dtype=np.int64)
    rank[qperm] = np.arange(ngroups, dtype=np.int64)
    return np.argsort(rank[groups], kind="stable").astype(np.int64)


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
