"""A multilevel preconditioner for indefinite Helmholtz problems, wrapping the direct solver.

:func:`helmholtz_solver` builds the hierarchy of the reduction-based multilevel method
(least-squares interpolation fitted to relaxed test vectors and corrected towards the
ideal interpolation, polynomial smoothing, K-cycle, coarsest level factored by pastixpy)
and returns a :class:`MultilevelSolver`, with ``aspreconditioner()`` for scipy's Krylov
solvers and ``solve()`` (flexible GMRES). For comparison, :func:`shifted_laplacian_preconditioner`
and :func:`direct_solver` are the classical baselines, and :class:`IdealTwoGrid` the exact-ideal
two-grid method that the construction approximates. See ``docs/multilevel.md``.
"""

from ..krylov import fgmres, gmres_right
from .baselines import (
    DirectSolver,
    ShiftedLaplacian,
    direct_solver,
    shifted_laplacian_preconditioner,
)
from .reference import IdealTwoGrid
from .solver import MultilevelSolver, helmholtz_solver

__all__ = [
    "DirectSolver",
    "IdealTwoGrid",
    "MultilevelSolver",
    "ShiftedLaplacian",
    "direct_solver",
    "fgmres",
    "gmres_right",
    "helmholtz_solver",
    "shifted_laplacian_preconditioner",
]
