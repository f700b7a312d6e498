"""The multilevel preconditioner on the gallery's Helmholtz family (issue 30): problems it
was not tuned on. Small wavenumbers only (k = 20 and 40 at 10 points per wavelength);
the benchmark (``benchmarks/helmholtz.py --problems``) measures k up to 320.

Each member must converge to 1e-6 (true residual, right-preconditioned flexible GMRES) in
at most 10 outer iterations, and the count must not grow with k by more than 1.5x (one
iteration of slack, at counts this small). The members on which it does not hold yet are
listed in NOT_FLAT and run as strict expected failures: one that starts to pass fails the
suite until it moves to the flat list.
"""

import warnings

import numpy as np
import pytest

from pastixpy.errors import StagnationWarning
from pastixpy.gallery import HELMHOLTZ_FAMILY, HELMHOLTZ_FAMILY_2D
from pastixpy.multilevel import helmholtz_solver

RTOL = 1e-6
LIMIT = 10

#: P2 members, on which the counts grow with k already between k = 20 and 40 (measured
#: with the defaults at k = 20 / 40 / 80: 8 / 14 / 16 and 7 / 12 / -); see "Where it is
#: not flat yet" in docs/multilevel.md. Two representatives run here.
NOT_FLAT = ("helm2d-p2l-abc-grf10-s0", "helm2d-p2c-abc-marm")

#: Every finite-difference and P1 member. P1 with a consistent mass matrix in
#: heterogeneous media holds the limits at these sizes (6 / 9 at k = 20 / 40) but not at
#: k = 80 (12 to 14): the benchmark shows it, this test cannot.
FLAT = tuple(name for name in HELMHOLTZ_FAMILY_2D if name.startswith(("helm2d-fd-", "helm2d-p1")))


def outer_iterations(name, k):
    problem = HELMHOLTZ_FAMILY[name](k)
    ml = helmholtz_solver(problem.A)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StagnationWarning)
        x, info = ml.solve(problem.b, rtol=RTOL, maxiter=4 * LIMIT)
    residual = np.linalg.norm(problem.b - problem.A @ x) / np.linalg.norm(problem.b)
    assert info == 0 and residual <= RTOL * (1 + 1e-6)
    return ml.stats["solve"]["iterations"]


def check_flat(name):
    counts = [outer_iterations(name, k) for k in (20, 40)]
    assert max(counts) <= LIMIT, f"{name}: {counts} outer iterations at k = 20, 40"
    assert counts[1] <= max(1.5 * counts[0], counts[0] + 1), f"{name}: grows, {counts}"


@pytest.mark.parametrize("name", FLAT)
def test_flat_in_k(name):
    check_flat(name)


@pytest.mark.parametrize("name", NOT_FLAT)
@pytest.mark.xfail(strict=True, reason="counts grow with k on this member (issue 30, open)")
def test_not_flat_yet(name):
    check_flat(name)


def test_the_family_is_covered():
    """Every scheme and medium of the 2D family is in one list or the other, and the flat
    list holds all the seeds of the random media for finite differences."""
    assert set(FLAT).isdisjoint(NOT_FLAT)
    assert sum("grf" in n for n in FLAT) >= 10
    schemes = {n.split("-")[1] + "-" + n.split("-")[2] for n in FLAT + NOT_FLAT}
    assert {"fd-abc", "fd-pml", "p1l-abc", "p1c-abc", "p1c-pml", "p2l-abc", "p2c-abc"} <= schemes
