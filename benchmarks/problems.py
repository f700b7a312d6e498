"""The benchmark problems: generated FD/FEM matrices (from the package's registry,
pastixpy.gallery.PROBLEMS) and the largest real ones in shared/matrices.

Each :class:`Problem` knows how to build its matrix, its structure (which
decides the factorization each solver uses) and its grid dimension (which
decides whether scipy's ``splu`` is worth waiting for). :func:`select` returns
the full or ``--quick`` list, filtered by name.
"""

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import scipy.io
import scipy.sparse as sp

from pastixpy.gallery import PROBLEMS

#: Structures: which factorization the solvers use.
STRUCTURES = {
    "spd": "symmetric positive definite",
    "sym": "real symmetric indefinite",
    "csym": "complex symmetric",
    "unsym": "unsymmetric",
}

#: scipy's splu (SuperLU, COLAMD) is skipped above these orders: past them it is
#: estimated to take over 3 minutes (40³ in 3D, 500² in 2D).
SPLU_LIMIT = {2: 500**2, 3: 40**3}

#: The largest well-posed matrices of shared/matrices (by stored entries), with their
#: structure. mbeacxc (50k entries) is left out: it is singular on purpose.
REAL_MATRICES = {
    "bcsstk16": "spd",
    "bayer10": "unsym",
    "bcsstk13": "spd",
    "ncvxqp1": "sym",
}
QUICK_REAL = ("bcsstk16", "bayer10")

#: Shared matrices that are singular on purpose: no solver's time to compare.
SINGULAR = {"zenios", "mbeacxc", "neumann", "cryg2500", "reorientation_1"}

#: ``--small``'s generated problems: where fixed costs decide (a 2D Laplacian 30×30, and
#: 2D FEM-like problems of 10⁴–10⁵ unknowns).
SMALL_GENERATED = (
    ("lap2d-30", "2D Laplacian 30²", "lap2d", 30),
    ("lap2d-100", "2D Laplacian 100²", "lap2d", 100),
    ("lap2d-250", "2D Laplacian 250²", "lap2d", 250),
    ("helmholtz-150", "2D Helmholtz 150², ppw 10", "helmholtz2d", 150),
    ("saddle2d-70", "2D Stokes-like saddle point 70²", "saddle2d", 70),
)


@dataclass(frozen=True)
class Problem:
    """One benchmark matrix, built on demand.

    Attributes
    ----------
    name : str
        Short name used by ``--problems`` and in the JSON (``lap3d-40``).
    label : str
        What the table shows (``3D Laplacian 40³``).
    structure : str
        A key of :data:`STRUCTURES`.
    build : callable
        Returns the matrix (scipy sparse, any format).
    dim : int or None
        Grid dimension of a generated problem (2 or 3); None for a real matrix.
    """

    name: str
    label: str
    structure: str
    build: Callable
    dim: int | None = None

    def splu_skip(self, n):
        """Why scipy's splu is skipped on this problem of order n, or None to run it."""
        limit = SPLU_LIMIT.get(self.dim)
        if limit is not None and n > limit:
            side = {2: "500²", 3: "40³"}[self.dim]
            return f"skipped: estimated over 3 minutes (a {self.dim}D problem above {side})"
        return None


def matrices_dir():
    """The folder of real matrices: ``$PASTIXPY_MATRICES`` or ``../shared/matrices``."""
    env = os.environ.get("PASTIXPY_MATRICES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "matrices"


def _real(name, structure):
    def build():
        return sp.csc_array(scipy.io.mmread(matrices_dir() / f"{name}.mtx"))

    return Problem(name, f"{name} (shared)", structure, build)


def structure_of(A):
    """The structure of a matrix for the solvers' choice of factorization: "spd" when
    symmetric with a Cholesky factorization, "sym" / "csym" when symmetric otherwise
    (real / complex), else "unsym" (complex Hermitian matrices included: not every
    solver here takes them)."""
    import pastixpy

    A = sp.csc_array(A)
    if (A - A.T).count_nonzero():
        return "unsym"
    if A.dtype.kind == "c":
        return "csym"
    try:
        pastixpy.factorize(A, kind="llt")
        return "spd"
    except pastixpy.PastixError:
        return "sym"


def small_problems():
    """``--small``: every well-posed shared matrix, and :data:`SMALL_GENERATED`."""
    problems = []
    for path in sorted(matrices_dir().glob("*.mtx")):
        if path.stem in SINGULAR:
            continue
        structure = structure_of(scipy.io.mmread(path))
        problems.append(_real(path.stem, structure))
    for name, label, key, size in SMALL_GENERATED:
        problems.append(
            Problem(name, label, PROBLEMS[key].structure, lambda k=key, m=size: PROBLEMS[k](m), 2)
        )
    return problems


def _cube(n):
    return f"{n}³"


def all_problems(quick=False):
    """The generated problems (full sizes, or the small ``--quick`` ones) and the real matrices."""
    if quick:
        lap2, lap3, elast, helm, conv = 200, (12, 16, 20), (8, 8, 8), 100, 16
        real = QUICK_REAL
    else:
        lap2, lap3, elast, helm, conv = 1000, (40, 60, 80), (37, 37, 37), 500, 60
        real = tuple(REAL_MATRICES)
    problems = [
        Problem(
            "lap2d",
            f"2D Laplacian {lap2}²",
            PROBLEMS["lap2d"].structure,
            lambda: PROBLEMS["lap2d"](lap2),
            2,
        )
    ]
    for m in lap3:
        problems.append(
            Problem(
                f"lap3d-{m}",
                f"3D Laplacian {_cube(m)}",
                PROBLEMS["lap3d"].structure,
                (lambda m=m: PROBLEMS["lap3d"](m)),
                3,
            )
        )
    problems += [
        Problem(
            "elast3d",
            f"3D elasticity {'x'.join(map(str, elast))} el.",
            PROBLEMS["elast3d"].structure,
            lambda: PROBLEMS["elast3d"](elast),
            3,
        ),
        Problem(
            "helmholtz",
            f"2D Helmholtz {helm}², ppw 10",
            PROBLEMS["helmholtz2d"].structure,
            lambda: PROBLEMS["helmholtz2d"](helm),
            2,
        ),
        Problem(
            "convdiff",
            f"3D convection-diffusion {_cube(conv)}",
            PROBLEMS["convdiff3d"].structure,
            lambda: PROBLEMS["convdiff3d"](conv),
            3,
        ),
    ]
    present = [name for name in real if (matrices_dir() / f"{name}.mtx").exists()]
    problems += [_real(name, REAL_MATRICES[name]) for name in present]
    return problems, [name for name in real if name not in present]


def select(problems, names):
    """The problems whose name is in ``names`` or starts with one of them (``lap3d``)."""
    if not names:
        return problems
    chosen = [p for p in problems if any(p.name == w or p.name.startswith(w) for w in names)]
    unknown = [w for w in names if not any(p.name.startswith(w) for p in problems)]
    if unknown:
        known = ", ".join(p.name for p in problems)
        raise SystemExit(f"unknown problem(s) {', '.join(unknown)}; known: {known}")
    return chosen
