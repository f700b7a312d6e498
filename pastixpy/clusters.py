"""Separators cut into compact clusters: the tiles of block low-rank compression.

Block low-rank (BLR) compression stores an off-diagonal tile of the factor, which
couples a range of rows with a range of columns, as a product U Vᴴ of small rank. For
a discretized PDE that rank is small when the two ranges are each a compact patch of
the domain and the patches are apart: their interaction is then a smooth kernel seen
from a distance. A separator as nested dissection numbers it, cut into panels of equal
width, gives strips or scattered sets instead, and ranks near full.

:func:`cluster_supernodes` therefore partitions each wide separator (each fundamental
supernode wider than the largest cluster) into parts of about ``size`` vertices with
METIS's k-way partitioning of the separator's distance-2 graph (two of its vertices
are linked when they are adjacent or share a neighbour on either side: the separator of
a finite-element mesh is not connected by its own edges), numbers each part's vertices
consecutively, and cuts the panels at the parts' boundaries. This is PaStiX's
clustering for BLR (``order_supernodes`` with k-way splitting). Inside a fundamental
supernode the columns may be permuted freely (its diagonal block is dense and its
columns share the rows below it), so the fill and flops do not change; within a part
the previous order is kept (the one :func:`pastixpy.symbolic.reorder_supernodes`
chose to make few blocks).
"""

import numpy as np
import scipy.sparse as sp

from .compression import CLUSTER_SIZE, check_cluster_size
from .symbolic import elimination_tree, fundamental_joins


def cluster_supernodes(xadj, adjncy, tree, fcol, size=CLUSTER_SIZE, together=None, seed=0):
    """Renumber each fundamental supernode wider than ``size[1]`` cluster by cluster
    and cut the partition at the clusters' boundaries (see the module).

    Parameters
    ----------
    xadj, adjncy : int arrays
        Adjacency of A + Aᵀ without the diagonal, original numbering.
    tree : EliminationTree
    fcol : int64 array
        The column partition (first column of each cblk, then n).
    size : (int, int)
        A separator of width w > max becomes ceil(w / max) clusters (each at least min
        when METIS balances them, which it does to a few percent).
    together : bool array, optional
        Second columns of 2x2 pivot pairs; a supernode that holds a pair keeps its order.
    seed : int
        METIS's seed: the same seed gives the same clusters.

    Returns
    -------
    tree : EliminationTree
        For the renumbered permutation (the same fill and flops).
    fcol : int64 array
        ``fcol`` with the clusters' boundaries added.
    clusters : int64 array
        The first column of each cluster made, ascending (each ends where the next one
        or its supernode does).
    """
    import pymetis

    smin, smax = check_cluster_size(size)
    n = xadj.shape[0] - 1
    starts = np.append(np.flatnonzero(~fundamental_joins(tree)), n).astype(np.int64)
    wide = np.flatnonzero(np.diff(starts) > smax)
    if together is not None:
        wide = [k for k in wide if not together[starts[k] + 1 : starts[k + 1]].any()]
    if len(wide) == 0:
        return tree, fcol, np.empty(0, dtype=np.int64)
    xadj, adjncy = np.asarray(xadj, dtype=np.int64), np.asarray(adjncy, dtype=np.int64)
    # Each vertex with its own row too, so that G_S G_Sᵀ links neighbours and vertices
    # that share one.
    G = sp.csr_array((np.ones(adjncy.size, dtype=np.int32), adjncy, xadj), shape=(n, n))
    G = (G + sp.eye_array(n, dtype=np.int32, format="csr")).tocsr()
    perm = tree.perm.copy()
    options = pymetis.Options(seed=seed)
    cluster_starts = []
    for k in wide:
        lo, hi = int(starts[k]), int(starts[k + 1])
        verts = perm[lo:hi]
        GS = G[verts]
        D2 = (GS @ GS.T).tocsr()
        D2.setdiag(0)
        D2.eliminate_zeros()
        nparts = -(-(hi - lo) // smax)
        adjacency = pymetis.CSRAdjacency(D2.indptr, D2.indices)
        _, membership = pymetis.part_graph(nparts, adjacency=adjacency, options=options)
        part = np.asarray(membership, dtype=np.int64)
        # Parts in the order their first vertex had, each in the order it had.
        first = np.full(nparts, hi - lo, dtype=np.int64)
        np.minimum.at(first, part, np.arange(hi - lo, dtype=np.int64))
        rank = np.empty(nparts, dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(nparts, dtype=np.int64)
        key = rank[part]
        perm[lo:hi] = verts[np.argsort(key, kind="stable")]
        sizes = np.bincount(key, minlength=nparts)
        bounds = lo + np.concatenate(([0], np.cumsum(sizes)[:-1]))
        cluster_starts.extend(bounds[sizes > 0].tolist())
    tree = elimination_tree(xadj, adjncy, perm, keep_order=True)
    clusters = np.asarray(cluster_starts, dtype=np.int64)
    fcol = np.union1d(fcol, clusters).astype(np.int64)
    return tree, fcol, clusters
