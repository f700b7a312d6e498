"""Ordering phase: a fill-reducing permutation of the graph of A + Aᵀ.

Methods: nested dissection through METIS (``"metis"``), approximate minimum
degree (``"amd"``, our kernel in ``ordering/amd.pyx``), reverse Cuthill-McKee
(``"rcm"``), ``"natural"``, or a user permutation. Before METIS or AMD, vertices
with identical closed adjacency (the unknowns of one node of a multi-dof mesh)
are merged into one weighted vertex; the quotient graph is ordered and expanded.
"""

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ._graph import indistinguishable_groups
from .errors import InvalidInputError
from .options import parse_option

#: Accepted ordering names and the parameters each accepts.
ORDERINGS = {
    "metis": {"seed", "compress"},
    "amd": {"dense", "aggressive", "compress"},
    "rcm": set(),
    "natural": set(),
}

#: Compress the graph when it shrinks at least this much (METIS uses the same fraction).
COMPRESSION_FRACTION = 0.85


@dataclass(frozen=True)
class Ordering:
    """Result of the ordering phase.

    Attributes
    ----------
    perm : ndarray of int64
        ``perm[k]`` is the original index of the k-th pivot.
    method : str
        ``"metis"``, ``"amd"``, ``"rcm"``, ``"natural"`` or ``"user"``.
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


def order(xadj, adjncy, ordering="metis"):
    """Compute a fill-reducing ordering of a symmetric graph.

    Parameters
    ----------
    xadj, adjncy : int64 arrays
        Adjacency of the pattern of A + Aᵀ without the diagonal.
    ordering : str, (str, dict) or array_like
        A method name, a ``(name, {kwargs})`` pair, or a permutation array.

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
    if kwargs.pop("compress", True) and ngroups <= COMPRESSION_FRACTION * n:
        qxadj, qadjncy, weights = quotient_graph(xadj, adjncy, groups, ngroups)
    else:
        groups, ngroups = np.arange(n, dtype=np.int64), n
        qxadj, qadjncy, weights = xadj, adjncy, None
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


def quotient_graph(xadj, adjncy, groups, ngroups):
    """Graph whose vertices are the groups, weighted by their sizes."""
    weights = np.bincount(groups, minlength=ngroups).astype(np.int64)
    rows = np.repeat(groups, np.diff(xadj))
    cols = groups[adjncy]
    keep = rows != cols
    q = sp.csr_array(
        (np.ones(int(keep.sum()), dtype=np.int8), (rows[keep], cols[keep])),
        shape=(ngroups, ngroups),
    )
    q.sum_duplicates()
    return q.indptr.astype(np.int64), q.indices.astype(np.int64), weights


def expand_permutation(qperm, groups, ngroups):
    """Order the members of each group consecutively, in the group order ``qperm``."""
    rank = np.empty(ngroups, dtype=np.int64)
    rank[qperm] = np.arange(ngroups, dtype=np.int64)
    return np.argsort(rank[groups], kind="stable").astype(np.int64)
