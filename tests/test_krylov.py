"""The package's GMRES (pastixpy.krylov.fgmres) as refinement runs it: matrix and
preconditioner as functions, an absolute tolerance, iterations counted by the callback."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pastixpy.errors import StagnationWarning
from pastixpy.gallery import helmholtz_fd
from pastixpy.krylov import Watch, fgmres


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


def _watch_run(residuals, maxiter, **kwargs):
    """(iteration, reason) at which a Watch stops a run with these relative residuals
    (after iterations 1, 2, ...; 1.0 at iteration 0, target 1e-6), or (None, None)."""
    watch = Watch(**kwargs)
    watch.start(1.0, 1e-6, maxiter)
    for its, r in enumerate(residuals, 1):
        reason = watch.check(r)
        if reason is not None:
            return its, reason
    return None, None


def test_watch_projects_at_the_recent_rate():
    steady = 0.93 ** np.arange(1, 191)  # reaches 1e-6 at iteration 191
    assert _watch_run(steady, maxiter=200) == (None, None)
    # The same run with a maxiter it cannot meet: stopped after the first window.
    assert _watch_run(steady, maxiter=150) == (10, "stagnated")
    # A rate floor that a steady 0.93 misses.
    assert _watch_run(steady, maxiter=200, max_rate=0.9) == (10, "stagnated")
    # Progress, then none: stopped once a whole window made none, whatever maxiter.
    assert _watch_run(np.full(50, 0.5), maxiter=10**6, window=5) == (6, "stagnated")
    assert _watch_run(0.5 * 0.9999 ** np.arange(50), maxiter=10**6, window=5) == (
        6,
        "stagnated",
    )
    assert _watch_run(0.5 * 0.999 ** np.arange(50), maxiter=10**6, window=5) == (None, None)


def test_watch_lets_a_plateau_after_progress_go_on():
    """GMRES plateaus: fast, then 20 iterations at 0.99, then fast again. The mean rate
    since the start still reaches rtol within maxiter, so the run goes on; a rate floor
    (a method that promises a fast rate) stops it in the plateau."""
    rates = [0.5] * 10 + [0.99] * 20 + [0.5] * 15
    residuals = np.cumprod(rates)
    assert residuals[-1] < 1e-6
    assert _watch_run(residuals, maxiter=60) == (None, None)
    its, reason = _watch_run(residuals, maxiter=60, max_rate=0.8)
    assert reason == "stagnated" and 10 < its <= 20


def test_watch_time_limit():
    class Clock(Watch):
        now = 0.0

        def elapsed(self):
            return self.now

    watch = Clock(window=5, max_seconds=100.0, stagnation=False)
    watch.start(1.0, 1e-6, 10**6)
    for its in range(1, 5):  # 10 s per iteration, a factor 0.5: 20 iterations in all
        watch.now = 10.0 * its
        assert watch.check(0.5**its) is None
    watch.now = 50.0
    # At 0.5 per iteration rtol needs 15 more iterations, 150 s more: past the limit.
    assert watch.check(0.5**5) == "time" and "would run past max_seconds=100" in watch.why
    assert watch.summary()["projected_iterations"] == pytest.approx(np.log2(1e6) - 5)
    watch.start(1.0, 1e-6, 10**6)
    watch.now = 101.0
    assert watch.check(0.5) == "time" and "ran past max_seconds=100" in watch.why


def test_fgmres_watch_is_opt_in():
    """Unpreconditioned GMRES on an indefinite Helmholtz matrix (k = 20) needs 76
    iterations: with maxiter=30 and a watch it stops after a window, with a warning;
    without one (refinement's use) it runs silently to maxiter."""
    problem = helmholtz_fd(20)
    A, b = problem.A, problem.b
    with pytest.warns(StagnationWarning, match="fgmres stopped.*more than maxiter=30"):
        x, info = fgmres(A, b, rtol=1e-6, maxiter=30, stagnation=10)
    assert 10 <= info < 30
    assert np.linalg.norm(b - A @ x) > 1e-6 * np.linalg.norm(b)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StagnationWarning)
        x, info = fgmres(A, b, rtol=1e-6, maxiter=30)
        assert info == 30
        # With room in maxiter for its plateaus (the projections at its slowest ask for
        # 2.5 times the iterations it needs), the watch lets it converge.
        x, info = fgmres(A, b, rtol=1e-6, maxiter=200, stagnation=10)
        assert info == 0
