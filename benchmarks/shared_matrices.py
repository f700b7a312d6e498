"""Solve every matrix of ../shared/matrices with b = A x_true and print a Markdown table.

Run: python benchmarks/shared_matrices.py   (PASTIXPY_MATRICES points elsewhere)
Columns: the kind chosen, perturbed pivots, refinement steps, whether the wider-supernode retry
ran, and the backward error ‖b − Ax‖∞ / (‖A‖∞‖x‖∞ + ‖b‖∞).
"""

import os
import warnings
from pathlib import Path

import numpy as np

import pastixpy
from pastixpy.io import read_matrix

folder = Path(os.environ.get("PASTIXPY_MATRICES", Path(__file__).parents[1] / "../shared/matrices"))
print("| matrix | n | kind | perturbed | refinement steps | coarsened | berr |")
print("|---|---:|---|---:|---:|---|---:|")
for path in sorted(folder.glob("*.mtx")):
    A = read_matrix(path)
    n = A.shape[0]
    rng = np.random.default_rng(0)
    x_true = rng.standard_normal(n)
    if np.iscomplexobj(A.data):
        x_true = x_true + 1j * rng.standard_normal(n)
    b = A @ x_true
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            F = pastixpy.factorize(A)
            x = F.solve(b)
    except pastixpy.SingularMatrixError as exc:
        print(f"| {path.stem} | {n} | — | — | — | — | SingularMatrixError: {str(exc)[:60]}… |")
        continue
    r = b - A @ x
    berr = np.abs(r).max() / (abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max())
    s = F.stats
    flag = " (warning)" if caught else ""
    print(
        f"| {path.stem} | {n} | {F.kind} | {s['perturbed_pivots']} | {s['refinement_steps']} | "
        f"{s['coarsened']} | {berr:.1e}{flag} |"
    )
