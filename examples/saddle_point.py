"""A symmetric indefinite (KKT) system: LDLᵀ with 2x2 pivots, inertia and determinant.

Run: python examples/saddle_point.py
"""

import numpy as np

import pastixpy
from pastixpy.gallery import saddle_point

A = saddle_point((12, 12))  # [[K, Bᵀ], [B, 0]]: zero diagonal block, indefinite
b = A @ np.ones(A.shape[0])

F = pastixpy.factorize(A)  # "auto" tries LLᵀ, meets a non-positive pivot, uses LDLᵀ
x = F.solve(b)
print(
    f"kind {F.kind}, perturbed pivots {F.stats['perturbed_pivots']}, "
    f"backward error {F.stats['backward_error']:.1e}, max |x - 1| {np.abs(x - 1).max():.1e}"
)

pos, neg, zero = F.inertia()  # Sylvester: the signs of D's eigenvalues are A's
print(f"inertia: {pos} positive, {neg} negative, {zero} zero eigenvalues")
if A.shape[0] <= 2000:
    w = np.linalg.eigvalsh(A.toarray())
    print(f"dense check: {np.sum(w > 0)} positive, {np.sum(w < 0)} negative")
sign, logabs = F.slogdet()
print(f"slogdet: sign {sign:+.0f}, log|det| {logabs:.6f}")
