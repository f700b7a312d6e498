"""Block low-rank compression: smaller factors, refined to full accuracy, or a cheap
preconditioner for GMRES.

The factors' blocks that couple distant patches of a 3D domain are numerically of low
rank; compress=tol stores each as a product U Bt within tol (relative to the matrix's
Frobenius norm), and solves are refined by GMRES to the requested backward error.

Run: python examples/block_low_rank.py [--plot blocks.png]
"""

import argparse
import time

import numpy as np
import scipy.sparse.linalg as sla

import pastixpy
from pastixpy.gallery import laplacian

ap = argparse.ArgumentParser()
ap.add_argument("--size", type=int, default=40, help="a SIZE³ 3D Laplacian")
ap.add_argument("--plot", metavar="PNG", help="draw the block structure, coloured by rank")
args = ap.parse_args()

A = laplacian((args.size,) * 3)
b = np.random.default_rng(0).standard_normal(A.shape[0])

# A direct solver: full rank, then compressed at 1e-8 (refined to 1e-12 by GMRES).
for compress in (None, 1e-8):
    t = time.perf_counter()
    F = pastixpy.factorize(A, compress=compress)
    x = F.solve(b)
    s = F.stats
    c = s["compression"]
    kept = f"{c['ratio']:.2f} of full rank, mean rank {c['mean_rank']:.0f}" if c else "full rank"
    print(
        f"compress={compress}: factors {s['factor_bytes'] / 2**20:.0f} MiB ({kept}), "
        f"factorization {s['seconds']['factorize']:.2f} s, refinement {s['refinement']} "
        f"({s['refinement_steps']} steps), backward error {s['backward_error']:.1e}, "
        f"total {time.perf_counter() - t:.2f} s"
    )

# A preconditioner: loosely compressed factors, no refinement, inside scipy's GMRES.
F = pastixpy.factorize(A, compress=1e-4, refine="none")
iterations = []
x, info = sla.gmres(
    A,
    b,
    M=F.aspreconditioner(),
    rtol=1e-10,
    callback=iterations.append,
    callback_type="pr_norm",
)
print(
    f"compress=1e-4 as a preconditioner: factors {F.stats['compression']['ratio']:.2f} of "
    f"full rank, GMRES converged (info={info}) in {len(iterations)} iterations, relative "
    f"residual {np.linalg.norm(A @ x - b) / np.linalg.norm(b):.1e}"
)
print("rank histogram of its tiles:", F.stats["compression"]["rank_histogram"])

if args.plot:
    import matplotlib

    matplotlib.use("Agg")
    ax = pastixpy.factorize(A, compress=1e-8).draw()
    ax.figure.savefig(args.plot, dpi=120, bbox_inches="tight")
    print(f"block structure written to {args.plot}")
