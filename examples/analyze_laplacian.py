"""Analyse a 3D Laplacian: fill, flops and memory forecast before any numeric work.

Run: python examples/analyze_laplacian.py [SIZE]
"""

import sys

import pastixpy
from pastixpy.gallery import laplacian

size = int(sys.argv[1]) if len(sys.argv) > 1 else 30
A = laplacian((size, size, size))
an = pastixpy.analyze(A)
an.check()

s = an.stats
print(an)
print(f"n = {s['n']:,}, nnz(A) = {s['nnz_A']:,}")
print(f"nnz(L) = {s['nnz_L']:,} ({s['fill_ratio']:.1f} x nnz(A)), stored {s['nnz_L_stored']:,}")
print(f"LLᵀ flops = {s['flops']:.3g}, float64 factor = {s['memory_bytes'] / 2**20:.1f} MiB")
print(f"{s['n_cblk']:,} column blocks, widest {an.symbol.cblk_width.max()} columns")
ptr, parent = an.separators
top = parent == -1
print(
    f"top separator: {int((ptr[1:] - ptr[:-1])[top].max())} unknowns (one grid plane ~ {size**2})"
)
print("seconds:", {k: round(v, 3) for k, v in s["seconds"].items()})
