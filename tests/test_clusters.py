"""Separators cut into compact clusters (pastixpy.clusters): the tiles of block low-rank
compression. The fill must not change, each cluster must be one contiguous range of
the expected size, and the clusters must be more compact than equal chunks."""

import numpy as np
import pytest
import scipy.sparse as sp
from test_numeric import backward_error

import pastixpy
from pastixpy.clusters import cluster_supernodes
from pastixpy.compression import CLUSTER_SIZE, check_cluster_size
from pastixpy.errors import OptionError
from pastixpy.gallery import elasticity3d, laplacian, saddle_point
from pastixpy.matrix import canonical_csc, symmetric_pattern
from pastixpy.symbolic import fundamental_joins


def _supernode_starts(tree):
    n = tree.parent.shape[0]
    return np.append(np.flatnonzero(~fundamental_joins(tree)), n)


def _clustered(A):
    an = pastixpy.analyze(A, ordering="metis")
    xadj, adjncy = symmetric_pattern(canonical_csc(A))
    n = A.shape[0]
    tree, fcol, starts = cluster_supernodes(xadj, adjncy, an.tree, np.array([0, n]))
    return an, tree, fcol, starts


def _cut(G, labels):
    """Edges of G between two different labelled sets (unlabelled: -1, not counted)."""
    r, c = G.nonzero()
    keep = (labels[r] >= 0) & (labels[c] >= 0)
    return int((labels[r][keep] != labels[c][keep]).sum() // 2)


@pytest.mark.parametrize(
    "A", [laplacian((30, 30, 30)), elasticity3d((12, 12, 12))], ids=["lap3d", "elast"]
)
def test_fill_is_unchanged_and_the_factorization_solves(A):
    plain = pastixpy.analyze(A, ordering="metis")
    clustered = pastixpy.analyze(A, ordering="metis", clusters=CLUSTER_SIZE)
    assert clustered.stats["n_clusters"] > 0 and plain.stats["n_clusters"] == 0
    assert clustered.stats["nnz_L"] == plain.stats["nnz_L"]
    assert clustered.stats["flops"] == plain.stats["flops"]
    clustered.check()
    b = np.arange(A.shape[0], dtype=np.float64)
    x = pastixpy.factorize(A, analysis=clustered).solve(b)
    assert backward_error(A, x, b).max() < 1e-14


def test_each_wide_supernode_becomes_contiguous_clusters_of_the_size():
    A = laplacian((40, 40, 40))
    an, tree, fcol, starts = _clustered(A)
    smin, smax = CLUSTER_SIZE
    before = _supernode_starts(an.tree)
    wide = np.flatnonzero(np.diff(before) > smax)
    assert wide.size > 0
    cuts = set(fcol.tolist())
    for k in wide:
        lo, hi = before[k], before[k + 1]
        # The same vertices in the same positions' range, in clusters that fcol cuts.
        assert set(tree.perm[lo:hi].tolist()) == set(an.tree.perm[lo:hi].tolist())
        mine = starts[(starts >= lo) & (starts < hi)]
        assert mine[0] == lo and all(int(s) in cuts for s in mine)
        sizes = np.diff(np.append(mine, hi))
        assert sizes.size == -(-(hi - lo) // smax)
        assert sizes.min() >= smin and sizes.max() <= 1.05 * smax
    # Supernodes not wider than the largest cluster keep their order.
    narrow = np.ones(A.shape[0], dtype=bool)
    for k in wide:
        narrow[before[k] : before[k + 1]] = False
    assert np.array_equal(tree.perm[narrow], an.tree.perm[narrow])


@pytest.mark.parametrize("size", [30, 40])
def test_clusters_are_more_compact_than_equal_chunks(size):
    """On the top separator (a plane of the cube), the clusters' shared boundary is
    shorter than that of equal chunks of the order before (strips)."""
    A = laplacian((size, size, size))
    an, tree, _, starts = _clustered(A)
    n = A.shape[0]
    G = sp.csr_array(A)
    G.setdiag(0)
    G.eliminate_zeros()
    before = _supernode_starts(an.tree)
    k = int(np.argmax(np.diff(before)))
    lo, hi = before[k], before[k + 1]
    mine = np.append(starts[(starts >= lo) & (starts < hi)], hi)
    chunks = -np.ones(n, dtype=np.int64)
    clusters = -np.ones(n, dtype=np.int64)
    nparts = mine.size - 1
    chunks[an.tree.perm[lo:hi]] = (np.arange(hi - lo) * nparts) // (hi - lo)
    for i in range(nparts):
        clusters[tree.perm[mine[i] : mine[i + 1]]] = i
    assert _cut(G, clusters) < _cut(G, chunks)


def test_supernodes_with_pivot_pairs_keep_their_order():
    A = saddle_point((6, 6, 6))
    an = pastixpy.analyze(A, ordering="metis")
    xadj, adjncy = symmetric_pattern(canonical_csc(A))
    n = A.shape[0]
    together = np.ones(n, dtype=bool)  # every supernode holds a pair
    tree, fcol, starts = cluster_supernodes(
        xadj, adjncy, an.tree, np.array([0, n]), (8, 16), together
    )
    assert starts.size == 0 and tree is an.tree


def test_same_seed_same_clusters():
    A = laplacian((30, 30, 30))
    _, t1, f1, s1 = _clustered(A)
    _, t2, f2, s2 = _clustered(A)
    assert np.array_equal(t1.perm, t2.perm) and np.array_equal(s1, s2)


@pytest.mark.parametrize("size", [(0, 10), (100, 150), (10,), "big", (10, None)])
def test_bad_cluster_sizes_are_option_errors(size):
    with pytest.raises(OptionError, match="clusters"):
        check_cluster_size(size)
    with pytest.raises(OptionError, match="clusters"):
        pastixpy.analyze(laplacian((5, 5)), clusters=size)
