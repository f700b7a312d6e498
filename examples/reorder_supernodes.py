"""What reordering the columns inside supernodes does to the block structure and the time.

Nested dissection numbers a separator's unknowns arbitrarily, so the rows each
cblk below it has there come in many short runs: many thin blocks, each a BLAS
call and a scatter. ``analyze(reorder=True)`` (the default for large problems)
reorders each supernode so that those rows form few runs; the fill does not grow.

Run: python examples/reorder_supernodes.py [SIZE]
"""

import sys

import numpy as np

import pastixpy
from pastixpy.gallery import laplacian

size = int(sys.argv[1]) if len(sys.argv) > 1 else 30
A = laplacian((size, size, size))
b = np.ones(A.shape[0])
print(f"3D Laplacian {size}^3, METIS ordering")
head = ("nnz(L)", "stored", "blocks", "analysis s", "factor s", "backward err")
print(f"{'reorder':>8} " + " ".join(f"{h:>12}" for h in head))
for reorder in (False, True):
    an = pastixpy.analyze(A, ordering="metis", reorder=reorder)
    F = pastixpy.factorize(A, analysis=an, threads=1)
    F.solve(b)
    s = an.stats
    print(
        f"{str(reorder):>8} {s['nnz_L']:>12,} {s['nnz_L_stored']:>12,} {s['n_blok']:>12,} "
        f"{s['seconds']['total']:>12.3f} {F.stats['seconds']['factorize']:>12.3f} "
        f"{F.stats['backward_error']:>12.1e}"
    )
