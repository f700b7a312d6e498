"""Separators cut into compact clusters: the tiles of block low-rank compression.

``analyze(A, clusters=(160, 320))`` partitions every separator wider than 320 unknowns
into compact clusters (METIS on the separator's distance-2 graph), each a contiguous
range of columns and a cblk of its own. The fill does not change. This prints, for the
largest separator of a 3D Laplacian, the clusters' sizes and how many mesh edges join
two different clusters, against equal chunks of the order without clustering (strips
of the separator's plane): fewer edges between tiles, more compact tiles.

Run: python examples/clusters.py [SIZE]
"""

import sys

import numpy as np
import scipy.sparse as sp

import pastixpy
from pastixpy.gallery import laplacian


def separators(tree):
    """The etree's chains (for nested dissection, the separators), widest first."""
    starts, ends = tree.sep_ptr[:-1], tree.sep_ptr[1:]
    order = np.argsort(starts - ends, kind="stable")
    return starts[order], ends[order]


def edges_between(A, labels):
    r, c = sp.triu(A, k=1).nonzero()
    keep = (labels[r] >= 0) & (labels[c] >= 0)
    return int((labels[r][keep] != labels[c][keep]).sum())


size = int(sys.argv[1]) if len(sys.argv) > 1 else 40
A = laplacian((size, size, size))
n = A.shape[0]
plain = pastixpy.analyze(A, ordering="metis")
clustered = pastixpy.analyze(A, ordering="metis", clusters=(160, 320))
print(f"3D Laplacian {size}^3: {clustered.stats['n_clusters']} clusters")
print(f"nnz(L) {plain.stats['nnz_L']:,} without, {clustered.stats['nnz_L']:,} with clusters")

starts, ends = separators(plain.tree)
lo, hi = int(starts[0]), int(ends[0])
cuts = clustered.symbol.cblk_fcolnum  # the clusters are cblks of their own
bounds = [int(c) for c in cuts if lo <= c < hi] + [hi]
sizes = np.diff(bounds)
chunks = -np.ones(n, dtype=np.int64)
tiles = -np.ones(n, dtype=np.int64)
chunks[plain.perm[lo:hi]] = (np.arange(hi - lo) * sizes.size) // (hi - lo)
for i in range(sizes.size):
    tiles[clustered.perm[bounds[i] : bounds[i + 1]]] = i
print(f"largest separator: {hi - lo} unknowns, clusters of {sizes.tolist()}")
print(
    f"mesh edges between tiles: {edges_between(A, tiles)} clustered, "
    f"{edges_between(A, chunks)} as equal chunks of the unclustered order"
)
b = np.ones(n)
x = pastixpy.factorize(A, analysis=clustered).solve(b)
print(f"solve on the clustered analysis: residual {np.abs(A @ x - b).max():.1e}")
