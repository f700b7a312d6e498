"""Forward error of mixed precision against double on ill-conditioned matrices.

Usage::

    python benchmarks/forward_error.py [--n 40] [--seeds 5]

A 2D Laplacian (n² unknowns) shifted towards its smallest eigenvalue to condition
numbers 1e8, 1e10 and 1e12 (SPD), and towards an inner one (symmetric indefinite);
b = A x₀ for random x₀. Prints the median relative forward error
‖x − x₀‖∞ / ‖x₀‖∞ of ``precision="double"``, ``"mixed"`` and ``"mixed"`` with
``refine=("auto", {"tol": 3e-15})``, and the backward errors reached. Accuracy, not
speed: the figures are the same on any machine.
"""

import argparse
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import pastixpy
from pastixpy.gallery import laplacian

SETTINGS = {
    "double": {"precision": "double"},
    "mixed": {"precision": "mixed"},
    "mixed, tol 3e-15": {"precision": "mixed", "refine": ("auto", {"tol": 3e-15})},
}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=40)
    p.add_argument("--seeds", type=int, default=5)
    args = p.parse_args(argv)
    L = laplacian((args.n, args.n))
    lowest = sla.eigsh(L, k=1, sigma=0, which="LM")[0][0]
    inner = sla.eigsh(L, k=1, sigma=4.1, which="LM")[0][0]
    cases = [("SPD", lowest, c) for c in (1e8, 1e10, 1e12)] + [("indefinite", inner, 1e12)]
    print("| matrix | κ | " + " | ".join(SETTINGS) + " |")
    print("|---|---:|" + "---:|" * len(SETTINGS))
    for label, shift, target in cases:
        A = sp.csc_array(L - (shift - 8.0 / target) * sp.eye_array(L.shape[0]))
        cond = np.linalg.cond(A.toarray())
        cells = []
        for options in SETTINGS.values():
            errors, berr = [], 0.0
            for seed in range(args.seeds):
                x0 = np.random.default_rng(seed).standard_normal(A.shape[0])
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # perturbed pivots of the shifts
                    F = pastixpy.factorize(A, **options)
                    x = F.solve(A @ x0)
                errors.append(np.abs(x - x0).max() / np.abs(x0).max())
                berr = max(berr, F.stats["backward_error"])
            cells.append(f"{np.median(errors):.1e} (berr {berr:.0e})")
        print(f"| {label} | {cond:.0e} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
