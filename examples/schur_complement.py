"""The Schur complement: ``factorize(A, schur=idx)`` eliminates every unknown but ``idx``
and keeps S = A₂₂ − A₂₁ A₁₁⁻¹ A₁₂, with the partial solves around it.

1. Domain decomposition: a 2D Poisson problem cut by a grid line into two subdomains.
   The line's unknowns are the interface; S is the Steklov–Poincaré operator, and the
   interface problem S x_Γ = y is solved here by conjugate gradients on S (any solver
   would do), then each subdomain's unknowns by back substitution.
2. A KKT reduction: minimise ½ xᵀ K x − fᵀ x subject to C x = g. The multipliers are the
   Schur unknowns, so only K is factored (Cholesky: the zero block is never pivoted on)
   and S = −C K⁻¹ Cᵀ is the reduced (negative definite) system for the multipliers.

Run: python examples/schur_complement.py
"""

import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import pastixpy
from pastixpy.gallery import laplacian

# --- 1. Two subdomains and their interface ---------------------------------------------
m = 200
A = laplacian((m, m))  # unknown i * m + j at grid point (i, j)
interface = np.arange(m // 2, m * m, m)  # the grid line j = m/2 between the halves
b = np.random.default_rng(0).standard_normal(m * m)

t = time.perf_counter()
F = pastixpy.factorize(A, schur=interface)
t_schur = time.perf_counter() - t
t = time.perf_counter()
pastixpy.factorize(A)
t_full = time.perf_counter() - t
S = F.schur()
print(f"1. {m}x{m} Poisson, interface of {interface.size} unknowns")
print(f"   factorize(A, schur=interface): {t_schur:.3f} s  (factorize(A): {t_full:.3f} s)")
print(
    f"   S is {S.shape[0]}x{S.shape[1]}, symmetric: {np.array_equal(S, S.T)}, "
    f"smallest eigenvalue {np.linalg.eigvalsh(S)[0]:.3f} (> 0: positive definite)"
)

y = F.schur_reduce(b)  # b_Γ − A_Γ1 A₁₁⁻¹ b₁
x_gamma, info = sla.cg(S, y, rtol=1e-13, maxiter=500)
x = F.schur_expand(b, x_gamma)  # each subdomain: A₁₁⁻¹ (b₁ − A₁Γ x_Γ)
reference = F.solve(b)
print(
    f"   interface by CG on S ({'converged' if info == 0 else 'not converged'}); "
    f"‖A x − b‖ / ‖b‖ = {np.linalg.norm(A @ x - b) / np.linalg.norm(b):.1e}, "
    f"‖x − F.solve(b)‖ / ‖x‖ = {np.linalg.norm(x - reference) / np.linalg.norm(x):.1e}"
)

# --- 2. A KKT system reduced to its multipliers ----------------------------------------
K = laplacian((60, 60)) + 0.1 * sp.eye(3600)  # a positive definite energy
rng = np.random.default_rng(1)
C = sp.random(40, 3600, density=0.01, random_state=rng) + sp.eye(40, 3600)  # 40 constraints
f, g = rng.standard_normal(3600), rng.standard_normal(40)
KKT = sp.bmat([[K, C.T], [C, None]], format="csc")
rhs = np.concatenate([f, g])
multipliers = np.arange(3600, 3640)

G = pastixpy.factorize(KKT, schur=multipliers, kind="llt")  # K alone is factored: LLᵀ
S = G.schur()  # −C K⁻¹ Cᵀ
lam = np.linalg.solve(S, G.schur_reduce(rhs))
sol = G.schur_expand(rhs, lam)
x, lam = sol[:3600], sol[3600:]
print(f"2. KKT system of {KKT.shape[0]} unknowns, {C.shape[0]} constraints; kind {G.kind}")
print(f"   S = −C K⁻¹ Cᵀ: largest eigenvalue {np.linalg.eigvalsh(S)[-1]:.2e} (< 0)")
print(
    f"   ‖C x − g‖ = {np.linalg.norm(C @ x - g):.1e}, "
    f"‖K x + Cᵀ λ − f‖ = {np.linalg.norm(K @ x + C.T @ lam - f):.1e}"
)
dense = np.linalg.solve(KKT.toarray(), rhs)
print(f"   against a dense solve of the KKT matrix: {np.abs(sol - dense).max():.1e}")
print(
    f"   pastixpy.schur_complement(KKT, multipliers) is the same S: "
    f"{np.allclose(pastixpy.schur_complement(KKT, multipliers, kind='llt'), S)}"
)
