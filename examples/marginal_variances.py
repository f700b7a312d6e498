"""Marginal variances of a Gaussian Markov random field, and the gradient of log det,
by selected inversion (F.inv_diag(), F.inv_selected()).

A Gaussian field x ~ N(0, Q⁻¹) on a grid is given by its sparse precision matrix Q
(here a conditional autoregression: Q = τ I + θ Lx + Ly, Lx and Ly the 1D second
differences along each axis). Its marginal variances are the diagonal of the dense
covariance Q⁻¹: n solves, or one selected inversion, whose cost is that of a few
factorizations. Fitting θ by maximum likelihood needs d/dθ log det Q = trace(Q⁻¹ Lx),
a sum over Lx's pattern, which lies in the factor's: F.inv_selected() holds every
entry it needs.

Run: python examples/marginal_variances.py
"""

import time

import numpy as np
import scipy.sparse as sp

import pastixpy


def second_differences(m):
    """The 1D second difference (Neumann ends: zero row sums) on m points."""
    main = np.full(m, 2.0)
    main[[0, -1]] = 1.0
    return sp.diags_array([-np.ones(m - 1), main, -np.ones(m - 1)], offsets=[-1, 0, 1])


def precision(m, theta, tau=0.1):
    """Q = τ I + θ Lx + Ly on an m x m grid, and Lx."""
    D, eye = second_differences(m), sp.identity(m)
    Lx, Ly = sp.kron(eye, D), sp.kron(D, eye)
    return sp.csc_array(tau * sp.identity(m * m) + theta * Lx + Ly), sp.csc_array(Lx)


m, theta = 300, 2.0
Q, Lx = precision(m, theta)
n = Q.shape[0]
t0 = time.perf_counter()
F = pastixpy.factorize(Q)
t1 = time.perf_counter()
variances = F.inv_diag()
t2 = time.perf_counter()
print(f"{m}x{m} field, n = {n}: factorize {t1 - t0:.2f} s, inv_diag {t2 - t1:.2f} s")

# Against solves Q x = e_i for a few unknowns: the corner, an edge, the middle.
picks = [0, m // 2, (m // 2) * m + m // 2, n - 1]
E = np.zeros((n, len(picks)))
E[picks, np.arange(len(picks))] = 1.0
t3 = time.perf_counter()
X = F.solve(E)
per_solve = (time.perf_counter() - t3) / len(picks)
by_solves = X[picks, np.arange(len(picks))]
print("unknown   variance (inv_diag)   variance (solve)")
for i, a, b in zip(picks, variances[picks], by_solves, strict=True):
    print(f"{i:7d}   {a:19.12f}   {b:16.12f}")
assert np.allclose(variances[picks], by_solves, rtol=1e-10)
print(f"all {n} variances by solves: about {per_solve * n:.0f} s")

# Near the boundary the field is freer: variances are largest at the corners.
field = variances.reshape(m, m)
print(
    f"variance: corner {field[0, 0]:.3f}, edge {field[0, m // 2]:.3f}, "
    f"middle {field[m // 2, m // 2]:.3f}"
)

# d/dθ log det Q = trace(Q⁻¹ Lx) = sum of Q⁻¹ ∘ Lx over Lx's pattern (Q⁻¹ symmetric).
Z = F.inv_selected()
i, j = Lx.nonzero()
gradient = float(np.sum(np.asarray(Z[i, j]).ravel() * Lx[i, j]))
h = 1e-5
finite = (
    pastixpy.factorize(precision(m, theta + h)[0]).logdet()
    - pastixpy.factorize(precision(m, theta - h)[0]).logdet()
) / (2 * h)
print(f"d/dθ log det Q: selected inverse {gradient:.6f}, finite difference {finite:.6f}")
assert abs(gradient - finite) <= 1e-5 * abs(finite)
