"""Compare the fill of the orderings on a multi-dof (elasticity-like) problem.

Run: python examples/compare_orderings.py [SIZE]
"""

import sys

import numpy as np

import pastixpy
from pastixpy.gallery import vector_laplacian

size = int(sys.argv[1]) if len(sys.argv) > 1 else 12
A = vector_laplacian((size, size, size), dofs=3)
print(f"3 unknowns per node on a {size}^3 grid: n = {A.shape[0]:,}")
print(f"{'ordering':>22} {'nnz(L)':>12} {'flops':>10} {'ordered':>9} {'seconds':>8}")
candidates = {
    "metis": "metis",
    "metis, no compression": ("metis", {"compress": False}),
    "amd": "amd",
    "rcm": "rcm",
    "random permutation": np.random.default_rng(0).permutation(A.shape[0]),
}
for label, ordering in candidates.items():
    s = pastixpy.analyze(A, ordering=ordering).stats
    print(
        f"{label:>22} {s['nnz_L']:>12,} {s['flops']:>10.3g} {s['n_ordered']:>9,} "
        f"{s['seconds']['total']:>8.3f}"
    )

# METIS's balance tolerance (ufactor) changes its separators: given several, the
# analysis runs METIS once per value (on two cores, two at a time) and keeps the
# ordering with the fewest flops. Which one wins depends on the matrix. (By default
# a second run with 400 is made only for large graphs, see docs/analysis.md.)
both = ("metis", {"ufactor": (200, 400)})
for B, label in ((A, "3 dofs per node"), (pastixpy.gallery.laplacian((2 * size,) * 3), "scalar")):
    s = pastixpy.analyze(B, ordering=both).stats
    runs = ", ".join(f"ufactor {c['ufactor']}: {c['flops']:.3g}" for c in s["ordering_candidates"])
    print(f"METIS runs on the {label} problem: {runs} flops")
