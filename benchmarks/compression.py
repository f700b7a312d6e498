"""How far the exact factors compress: block low-rank's ceiling, with and without clusters.

Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. python benchmarks/compression.py
     [--problems lap3d-40,lap3d-60] [--tol 1e-4,1e-8,1e-12] [--method rrqr]

For each problem the full-rank LLᵀ (LDLᵀ) factors are computed twice: with the panels
as ``split`` cuts them (strips of the separators, 256-512 columns) and with the
separators cut into compact clusters (``analyze(clusters=(160, 320))``,
pastixpy/clusters.py). Then every off-diagonal tile (a blok: the rows a cblk has in one
cblk above it) of a cblk at least ``--min-width`` wide and at least ``--min-height`` tall
is compressed as U Vᴴ with ``‖T - U Vᴴ‖_F ≤ tol · ‖A‖_F`` (``--relative matrix``, the
default: a global threshold, whose factorization error is about tol · ‖A‖ times the
square root of the tiles' number, Higham and Mary's BLR analysis) or ``≤ tol · ‖T‖_F``
(``--relative tile``, far stricter), with the kernels of csrc/numeric/lowrank.pxi, and
kept dense where the low-rank form would not be smaller.
The table shows the factor entries stored against full rank, the tiles compressed and
their mean rank, and the compression time: what just-in-time compression, which
compresses these same tiles once they are final, can reach at best. Diagonal blocks and
narrow cblks stay dense, as they do in PaStiX.
"""

import argparse
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg  # noqa: F401  (sp.linalg.norm)

import pastixpy
from pastixpy._numeric import lowrank_compress
from pastixpy.gallery import PROBLEMS

SIZES = {
    "lap3d-40": ("lap3d", 40),
    "lap3d-60": ("lap3d", 60),
    "lap3d-80": ("lap3d", 80),
    "elast3d-20": ("elast3d", (20, 20, 20)),
    "helmholtz2d-500": ("helmholtz2d", 500),
}


def tiles(F, an, min_width, min_height):
    """(cblk, row offset in its panel, height, width) of each candidate tile."""
    s = an.symbol
    fcol, bloknum = s.cblk_fcolnum, s.cblk_bloknum
    lcol = s.cblk_lcolnum
    for k in range(s.ncblk):
        w = int(lcol[k] - fcol[k] + 1)
        if w < min_width:
            continue
        heights = (
            s.blok_lrownum[bloknum[k] : bloknum[k + 1]]
            - s.blok_frownum[bloknum[k] : bloknum[k + 1]]
            + 1
        )
        offsets = np.concatenate(([0], np.cumsum(heights)[:-1]))
        for h, off in zip(heights[1:], offsets[1:], strict=True):  # the first is diagonal
            if h >= min_height:
                yield k, int(off), int(h), w


def measure(A, clusters, tol, method, min_width, min_height, relative):
    an = pastixpy.analyze(A, ordering="metis", clusters=clusters)
    norm_a = float(sp.linalg.norm(A))
    F = pastixpy.factorize(A, analysis=an, refine="none")
    factors = F._factors
    full = int(factors.storage.entries)
    saved, count, ranks, seconds = 0, 0, [], 0.0
    for k, off, h, w in tiles(F, an, min_width, min_height):
        T = np.asfortranarray(factors.panel(k)[off : off + h, :])
        t = time.perf_counter()
        scale = norm_a if relative == "matrix" else np.linalg.norm(T)
        res = lowrank_compress(T, tol * scale, method=method)
        seconds += time.perf_counter() - t
        count += 1
        if res is None:
            continue
        r = res[0].shape[1]
        if r * (h + w) < h * w:
            saved += h * w - r * (h + w)
            ranks.append(r)
    return {
        "clusters": an.stats["n_clusters"],
        "full": full,
        "stored": full - saved,
        "tiles": count,
        "compressed": len(ranks),
        "mean_rank": float(np.mean(ranks)) if ranks else 0.0,
        "seconds": seconds,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", default="lap3d-40,lap3d-60")
    p.add_argument("--tol", default="1e-4,1e-8,1e-12")
    p.add_argument("--method", default="rrqr", choices=["rrqr", "svd", "randomized"])
    p.add_argument("--relative", default="matrix", choices=["matrix", "tile"])
    p.add_argument("--min-width", type=int, default=128)
    p.add_argument("--min-height", type=int, default=20)
    args = p.parse_args()
    tols = [float(t) for t in args.tol.split(",")]
    print(
        "| problem | n | panels | clusters | tol | stored / full rank | tiles compressed "
        "| mean rank | compression s |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name in args.problems.split(","):
        key, size = SIZES[name]
        A = PROBLEMS[key](size)
        for label, clusters in (("split", None), ("clusters", (160, 320))):
            for tol in tols:
                r = measure(
                    A, clusters, tol, args.method, args.min_width, args.min_height, args.relative
                )
                print(
                    f"| {name} | {A.shape[0]:,} | {label} | {r['clusters']} | {tol:.0e} "
                    f"| {r['stored'] / r['full']:.2f} | {r['compressed']} of {r['tiles']} "
                    f"| {r['mean_rank']:.1f} | {r['seconds']:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
