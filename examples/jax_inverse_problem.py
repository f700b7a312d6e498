"""Recover a diffusion coefficient from observations, with gradients from pastixpy.jax.

The forward problem is -div(kappa grad u) = f on the unit square, u = 0 on the
boundary, by finite differences on a 30 x 30 grid of unknowns, for four sources f (the
columns of one right-hand side). kappa is unknown: from u observed at every node, we
fit theta = log(kappa) at the grid's nodes by L-BFGS (scipy.optimize), the misfit and
its gradient computed by JAX through :func:`pastixpy.jax.spsolve`, whose backward pass
solves with the transpose on the forward pass's factorization. The script checks that
the misfit fell at least a thousandfold.

The matrix is assembled edge by edge as a BCOO with duplicate entries (each edge adds
its conductance to four entries, summed by the solver), on a pattern fixed in advance,
so that its values are a JAX function of theta. Needs ``pip install 'pastixpy[jax]'``.
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import sparse
from scipy.optimize import minimize

from pastixpy import jax as pj

jax.config.update("jax_enable_x64", True)

N = 30  # unknowns per side; the coefficient lives on the (N + 2)^2 nodes, boundary included
h = 1.0 / (N + 1)
n = N * N


def grid():
    """The edges between neighbouring nodes of the (N + 2)^2 grid, and the BCOO pattern
    their conductances are added into (unknowns are the interior nodes, row by row)."""
    ij = np.arange((N + 2) ** 2).reshape(N + 2, N + 2)
    a = np.r_[ij[:, :-1].ravel(), ij[:-1, :].ravel()]  # horizontal, then vertical edges
    b = np.r_[ij[:, 1:].ravel(), ij[1:, :].ravel()]
    unknown = -np.ones((N + 2) ** 2, dtype=np.int64)
    inner = ij[1:-1, 1:-1].ravel()
    unknown[inner] = np.arange(n)
    ua, ub = unknown[a], unknown[b]
    both = (ua >= 0) & (ub >= 0)
    keep = (ua >= 0) | (ub >= 0)  # edges between two boundary nodes play no part
    a, b, ua, ub, both = a[keep], b[keep], ua[keep], ub[keep], both[keep]
    # Each edge: -c at (ua, ub) and (ub, ua) when both are unknowns; +c on the diagonal
    # of each endpoint that is an unknown.
    rows = np.r_[ua[both], ub[both], ua[ua >= 0], ub[ub >= 0]]
    cols = np.r_[ub[both], ua[both], ua[ua >= 0], ub[ub >= 0]]
    return (a, b), (both, ua >= 0, ub >= 0), np.stack([rows, cols], axis=1), inner


(EA, EB), (BOTH, A_IN, B_IN), INDICES, INNER = grid()


def matrix(theta):
    """The finite-difference matrix as a BCOO, its values a JAX function of theta."""
    kappa = jnp.exp(theta)
    c = 0.5 * (kappa[EA] + kappa[EB]) / h**2  # the edge's conductance
    data = jnp.concatenate([-c[BOTH], -c[BOTH], c[A_IN], c[B_IN]])
    return sparse.BCOO((data, INDICES), shape=(n, n))


def sources():
    """Four Gaussian sources at the corners of the inner square."""
    x = np.linspace(h, 1 - h, N)
    X, Y = np.meshgrid(x, x)
    centres = [(0.3, 0.3), (0.7, 0.3), (0.3, 0.7), (0.7, 0.7)]
    return np.stack(
        [np.exp(-((X - cx) ** 2 + (Y - cy) ** 2) / 0.02).ravel() for cx, cy in centres], 1
    )


def true_theta():
    """log kappa: 1 in the background, 3 in a disc and 0.5 in a band."""
    x = np.linspace(0, 1, N + 2)
    X, Y = np.meshgrid(x, x)
    kappa = np.ones_like(X)
    kappa[(X - 0.35) ** 2 + (Y - 0.6) ** 2 < 0.04] = 3.0
    kappa[(np.abs(Y - 0.25) < 0.06) & (X > 0.45)] = 0.5
    return np.log(kappa).ravel()


F_SRC = jnp.asarray(sources())
OBSERVED = pj.spsolve(matrix(jnp.asarray(true_theta())), F_SRC, kind="llt")
SCALE = float(jnp.sum(OBSERVED**2))
ALPHA = 1e-7  # smoothness penalty: neighbouring nodes' log kappa alike


@jax.jit
def objective(theta):
    u = pj.spsolve(matrix(theta), F_SRC, kind="llt")
    misfit = jnp.sum((u - OBSERVED) ** 2) / SCALE
    smooth = jnp.sum((theta[EA] - theta[EB]) ** 2)
    return misfit + ALPHA * smooth, misfit


def main():
    start = time.perf_counter()
    value_and_grad = jax.jit(jax.value_and_grad(objective, has_aux=True))
    theta0 = np.zeros((N + 2) ** 2)  # kappa = 1 everywhere
    misfits = []

    def fun(theta):
        (value, misfit), grad = value_and_grad(theta)
        misfits.append(float(misfit))
        return float(value), np.asarray(grad)

    def report(intermediate_result):
        steps = report.steps = getattr(report, "steps", 0) + 1
        if steps % 10 == 0:
            print(f"iteration {steps:3d}: misfit {misfits[-1]:.3e}")

    first = float(objective(theta0)[1])
    print(f"{n} unknowns, {F_SRC.shape[1]} sources, {theta0.size} coefficients to fit")
    print(f"iteration   0: misfit {first:.3e}")
    result = minimize(
        fun,
        theta0,
        jac=True,
        method="L-BFGS-B",
        callback=report,
        options={"maxiter": 40, "gtol": 1e-12, "ftol": 1e-15},
    )
    last = float(objective(result.x)[1])
    truth = true_theta()
    error = np.linalg.norm(np.exp(result.x[INNER]) - np.exp(truth[INNER]))
    error /= np.linalg.norm(np.exp(truth[INNER]) - 1)
    print(
        f"after {result.nit} iterations: misfit {last:.3e} ({first / last:.0f}x smaller), "
        f"kappa's error {error:.0%} of its variation"
    )
    print(f"factorizations: {pj.cache_info()}, {time.perf_counter() - start:.1f} s")
    # The fit must have brought the misfit down by three orders of magnitude.
    assert last < first / 1000, (first, last)


if __name__ == "__main__":
    main()
