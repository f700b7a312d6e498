"""Shared test helpers: the case registry and independent reference computations."""

import os
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import pastixpy
from pastixpy.gallery import problem
from pastixpy.runtime import OPENMP

#: The checkout these tests belong to.
CHECKOUT = Path(__file__).resolve().parents[1]


def pytest_report_header(config):
    """Which pastixpy the run tests: where it was imported from, and how it was built."""
    build = "with OpenMP" if OPENMP else "without OpenMP (kernels on one thread)"
    return f"pastixpy {pastixpy.__version__} from {Path(pastixpy.__file__).parent}, built {build}"


def pytest_configure(config):
    """With PASTIXPY_TEST_INSTALLED=1 (.ci/wheel), the run must test an installed
    pastixpy, not this checkout's source tree: stop at once where it does not."""
    if os.environ.get("PASTIXPY_TEST_INSTALLED", "0") not in ("", "0"):
        where = Path(pastixpy.__file__).resolve()
        if where.is_relative_to(CHECKOUT):
            raise pytest.UsageError(
                f"PASTIXPY_TEST_INSTALLED is set, but pastixpy was imported from {where}, "
                "inside the checkout: run pytest where the source tree is not importable"
            )


#: The real matrices shipped beside the project (absent on some machines: tests skip).
MATRIX_DIR = Path(
    os.environ.get("PASTIXPY_MATRICES", Path(__file__).parents[1] / ".." / "shared" / "matrices")
)


def shared_matrix_names():
    if not MATRIX_DIR.is_dir():
        return []
    return sorted(p.stem for p in MATRIX_DIR.glob("*.mtx"))


def load_shared(name):
    path = MATRIX_DIR / f"{name}.mtx"
    if not path.exists():
        pytest.skip(f"{path} not found (the shared matrices are not on this machine)")
    return sp.csc_array(scipy.io.mmread(path))


def shared_params():
    """Parametrize over the shared matrices, or one skipped case when the folder is absent."""
    names = shared_matrix_names()
    if names:
        return names
    return [pytest.param("missing", marks=pytest.mark.skip(reason=f"{MATRIX_DIR} not found"))]


#: Generated cases from the package's registry of problems (pastixpy.gallery.PROBLEMS,
#: which the CLI's --example and the benchmarks use too), by "NAME:SIZE".
GENERATED = {
    spec: (lambda spec=spec: problem(spec))
    for spec in (
        "lap1d:50",
        "lap2d:12x9",
        "lap2d:25",
        "lap3d:7",
        "lap3d:10x8x6",
        "vlap3d:5",
        "elast3d:3x2x2",
        "saddle2d:6",
    )
}


def _permuted_pattern(A, perm):
    """Pattern of P(A + Aᵀ)Pᵀ, explicit zeros included (they are structural)."""
    P = sp.csc_array(A, copy=True)
    P.data = np.ones_like(P.data, dtype=np.int8)
    P = sp.csc_array(P + P.T)[perm][:, perm]
    P.sum_duplicates()
    return P


def elimination_game_nnz_L(A, perm):
    """Structural nonzeros of the Cholesky factor of P(A + Aᵀ)Pᵀ, by the elimination game.

    Dense boolean simulation, independent of any tree algorithm: eliminating
    column j connects all its remaining neighbours pairwise. Small n only.
    """
    n = A.shape[0]
    B = np.asfortranarray(_permuted_pattern(A, perm).toarray() != 0)
    np.fill_diagonal(B, True)
    total = 0
    for j in range(n):
        rows = j + 1 + np.flatnonzero(B[j + 1 :, j])
        total += rows.size + 1
        if rows.size > 1:
            B[np.ix_(rows, rows)] = True
    return total


def brute_force_nnz_L(A, perm):
    """Structural nonzeros of the Cholesky factor of P(A + Aᵀ)Pᵀ, diagonal included.

    Column structures as Python-int bitsets: eliminating column j adds its
    remaining rows to the column of its first off-diagonal row (the rows it
    fills in there; the rest propagate on from that column). Independent of
    pastixpy's etree and column-count kernels.
    """
    P = _permuted_pattern(A, perm)
    n = P.shape[0]
    masks = []
    for j in range(n):
        m = 0
        for i in P.indices[P.indptr[j] : P.indptr[j + 1]]:
            if i > j:
                m |= 1 << int(i)
        masks.append(m)
    total = 0
    for j in range(n):
        m = masks[j]
        total += m.bit_count() + 1
        if m:
            p = (m & -m).bit_length() - 1
            masks[p] |= m ^ (1 << p)
    return total


def random_pattern(n, density, seed, symmetric=False, complex_=False):
    """A random sparse square matrix with a nonzero diagonal."""
    rng = np.random.default_rng(seed)
    A = sp.random_array((n, n), density=density, rng=rng, format="csc")
    if complex_:
        A = A + 1j * sp.random_array((n, n), density=density, rng=rng, format="csc")
    A = A + sp.eye_array(n) * n
    if symmetric:
        A = A + A.T
    return sp.csc_array(A)
