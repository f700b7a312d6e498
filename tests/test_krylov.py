"""The package's GMRES (pastixpy.krylov.fgmres) as refinement runs it: matrix and
preconditioner as functions, an absolute tolerance, iterations counted by the callback."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pastixpy.krylov import fgmres


def right_gmres(matvec, psolve, b, x0, atol, restart=30, maxiter=300):
    """(x, iterations) of fgmres called as pastixpy.refine calls it."""
    count = []
    x, _ = fgmres(
        matvec,
        b,
        x0,
        M=psolve,
        rtol=0.0,
        atol=atol,
        restart=restart,
        maxiter=maxiter,
        callback=count.append,
    )
    return x, len(count)


def _system(n, seed, complex_):
    rng = np.random.default_rng(seed)
    A = 4 * np.eye(n) + rng.standard_normal((n, n)) / np.sqrt(n)
    if complex_:
        A = A + 1j * rng.standard_normal((n, n)) / np.sqrt(n)
    # An inexact inverse, as compressed or single-precision factors give.
    M = np.linalg.inv(A + 0.3 * rng.standard_normal((n, n)) / np.sqrt(n))
    b = rng.standard_normal(n) + (1j * rng.standard_normal(n) if complex_ else 0)
    return A, M, b


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("restart", [3, 30])
def test_reaches_the_true_residual_with_one_solve_per_iteration(complex_, restart):
    A, M, b = _system(120, 1, complex_)
    solves = []

    def psolve(v):
        solves.append(1)
        return M @ v

    atol = 1e-12 * np.linalg.norm(b)
    x, its = right_gmres(lambda v: A @ v, psolve, b, np.zeros_like(b), atol, restart=restart)
    assert np.linalg.norm(A @ x - b) <= 1.01 * atol
    assert np.abs(x - np.linalg.solve(A, b)).max() <= 1e-10 * np.abs(x).max()
    assert len(solves) == its


def test_starts_from_x0_and_does_nothing_when_it_is_good_enough():
    A, M, b = _system(50, 2, False)
    x0 = np.linalg.solve(A, b)
    x, its = right_gmres(lambda v: A @ v, lambda v: M @ v, b, x0, 1e-8)
    assert its == 0 and np.array_equal(x, x0)


def test_stops_at_maxiter_and_at_rounding_floor():
    A, M, b = _system(80, 3, True)
    x, its = right_gmres(lambda v: A @ v, lambda v: v, b, np.zeros_like(b), 1e-14, maxiter=4)
    assert its == 4
    # An unreachable tolerance: the iterations stop once a cycle gains nothing.
    x, its = right_gmres(
        lambda v: A @ v, lambda v: M @ v, b, np.zeros_like(b), 1e-30, restart=5, maxiter=10**4
    )
    assert its < 10**4
    assert np.linalg.norm(A @ x - b) <= 1e-13 * np.linalg.norm(b)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 40), seed=st.integers(0, 10**6), complex_=st.booleans())
def test_property_matches_a_dense_solve(n, seed, complex_):
    A, M, b = _system(n, seed, complex_)
    x, _ = right_gmres(
        lambda v: A @ v,
        lambda v: M @ v,
        b,
        np.zeros_like(b),
        1e-12 * np.linalg.norm(b),
        restart=10,
        maxiter=400,
    )
    assert np.linalg.norm(A @ x - b) <= 1e-11 * np.linalg.norm(b)


def test_a_singular_operator_or_a_nan_does_not_raise():
    A = np.diag([1.0, 2.0, 0.0])
    b = np.array([1.0, 1.0, 1.0])
    x, _ = right_gmres(lambda v: A @ v, lambda v: v, b, np.zeros(3), 1e-12, restart=3)
    # The least-squares solution on the range: b's last entry cannot be matched.
    assert np.allclose(x[:2], [1.0, 0.5])
    x, _ = right_gmres(lambda v: A @ v, lambda v: v * np.nan, b, np.zeros(3), 1e-12)
    assert np.array_equal(x, np.zeros(3))
