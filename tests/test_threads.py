"""Threaded factorization and solves: the results of one thread, to rounding, for every kind."""

import _thread
import dataclasses
import json
import multiprocessing
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

import pastixpy
import pastixpy.numeric.factorize
import pastixpy.options
from pastixpy.errors import InvalidInputError, NotPositiveDefiniteError
from pastixpy.gallery import convection_diffusion3d, elasticity3d, laplacian, saddle_point
from pastixpy.numeric import PanelLayout, SolvePlan

REAL = (np.float32, np.float64)
COMPLEX = (np.complex64, np.complex128)


@pytest.fixture(autouse=True)
def threads_on_small_matrices(monkeypatch):
    """These tests ask for threads on small matrices to exercise the scheduler; the
    factorization otherwise keeps those under PARALLEL_MIN_FLOPS on one thread."""
    monkeypatch.setattr(pastixpy.numeric.factorize, "PARALLEL_MIN_FLOPS", 0.0)


def _signed_diagonal(shape, seed, hermitian=False):
    """Symmetric (Hermitian) indefinite and well conditioned: the Laplacian's
    off-diagonal part, ±8 on the diagonal, and a small skew imaginary part."""
    rng = np.random.default_rng(seed)
    L = laplacian(shape)
    n = L.shape[0]
    A = L - sp.diags_array(L.diagonal()) + sp.diags_array(rng.choice([-8.0, 8.0], n))
    if hermitian:
        T = sp.triu(A, k=1).tocoo()
        S = sp.coo_array((rng.uniform(-0.5, 0.5, T.nnz), (T.row, T.col)), shape=(n, n))
        A = A + 1j * (S - S.T)
    return sp.csc_array(A)


def _hermitian_pd(shape, seed):
    """Hermitian positive definite: the Laplacian plus a small skew imaginary part."""
    rng = np.random.default_rng(seed)
    L = laplacian(shape)
    T = sp.triu(L, k=1).tocoo()
    S = sp.coo_array((rng.uniform(-0.3, 0.3, T.nnz), (T.row, T.col)), shape=L.shape)
    return sp.csc_array(L + 1j * (S - S.T))


#: (name, matrix maker, kind, dtypes); all have condition numbers of about 100 or less.
CASES = [
    ("laplacian", lambda: laplacian((12, 12, 12)), "llt", REAL),
    ("hermitian_pd", lambda: _hermitian_pd((12, 12, 12), 1), "llt", COMPLEX),
    ("saddle_point", lambda: saddle_point((7, 7, 7)), "ldlt", REAL),
    ("saddle_point_complex", lambda: saddle_point((7, 7, 7)) * (1 + 0.5j), "ldlt", COMPLEX),
    ("indefinite", lambda: _signed_diagonal((12, 12, 12), 2), "ldlt", REAL),
    ("hermitian_indefinite", lambda: _signed_diagonal((12, 12, 12), 3, True), "ldlh", COMPLEX),
    ("convection_diffusion", lambda: convection_diffusion3d(12), "lu", REAL),
    ("convection_complex", lambda: convection_diffusion3d(12) * (1 - 0.5j), "lu", COMPLEX),
]

PARAMS = [
    pytest.param(make, kind, dtype, id=f"{name}-{kind}-{np.dtype(dtype).name}")
    for name, make, kind, dtypes in CASES
    for dtype in dtypes
]


def _solve(A, kind, threads, **options):
    F = pastixpy.factorize(A, kind=kind, threads=threads, refine="none", **options)
    b = A @ np.linspace(1.0, 2.0, A.shape[0]).astype(A.dtype)
    return F, F.solve(b)


def _assert_close(x, ref, dtype, factor=1e3):
    eps = np.finfo(dtype).eps
    assert np.abs(x - ref).max() <= factor * eps * np.abs(ref).max()


@pytest.mark.parametrize(("make", "kind", "dtype"), PARAMS)
def test_two_threads_match_one(make, kind, dtype):
    A = sp.csc_array(make()).astype(dtype)
    # Each run analyses A itself, so that LDLᵀ pairs its weak diagonals (2x2 pivots).
    F1, x1 = _solve(A, kind, 1)
    F2, x2 = _solve(A, kind, 2)
    assert np.array_equal(F1.perm, F2.perm)
    assert F1.kind == F2.kind == kind
    assert F2.stats["perturbed_pivots"] == F1.stats["perturbed_pivots"]
    _assert_close(x2, x1, dtype)
    # And both solve the system (the comparison is not between two wrong answers).
    b = A @ np.linspace(1.0, 2.0, A.shape[0]).astype(dtype)
    assert np.abs(A @ x2 - b).max() <= 1e3 * np.finfo(dtype).eps * np.abs(b).max()


@pytest.mark.parametrize(("make", "kind", "dtype"), PARAMS)
@pytest.mark.parametrize("threads", [2, 3])
def test_threaded_solves_match_one_thread(make, kind, dtype, threads):
    """The same factors solved over subtrees on several threads and on one, for
    one and several right-hand sides and every op."""
    A = sp.csc_array(make()).astype(dtype)
    F = pastixpy.factorize(A, kind=kind, threads=threads, refine="none")
    assert F._factors.layout.solve_plan(threads).threads > 1
    rng = np.random.default_rng(9)
    B = rng.standard_normal((A.shape[0], 3)).astype(dtype)
    for trans in ("N", "T", "H"):
        for b in (B[:, 0], B):
            x = F.solve(b, trans=trans)
            one = dataclasses.replace(F._factors, threads=1)
            parallel = F._solver
            F._solver = dataclasses.replace(parallel, factors=one)
            ref = F.solve(b, trans=trans)
            F._solver = parallel
            _assert_close(x, ref, dtype, factor=100)


_FEWER_THREADS = """
import numpy as np, pastixpy, pastixpy.numeric.factorize
from pastixpy.gallery import laplacian
pastixpy.numeric.factorize.PARALLEL_MIN_FLOPS = 0.0  # threads on a small matrix
A = laplacian((12, 12, 12))
b = np.random.default_rng(0).standard_normal((A.shape[0], 2))
F = pastixpy.factorize(A, threads=2, refine="none")
x = F.solve(b)
assert F._factors.layout.solve_plan(2).threads == 2
ref = pastixpy.factorize(A, threads=1, refine="none").solve(b)
print(np.abs(x - ref).max() / np.abs(ref).max())
"""


def test_solves_when_openmp_gives_fewer_threads():
    # Each OpenMP thread takes the plan's slots tid, tid + team, ...: with a team of
    # one, every subtree is still swept.
    env = dict(os.environ, OMP_THREAD_LIMIT="1")
    # From the directory that holds the pastixpy under test (not the source tree
    # ``-c`` would put first on the path when the package is installed).
    home = os.path.dirname(os.path.dirname(os.path.abspath(pastixpy.__file__)))
    out = subprocess.run(
        [sys.executable, "-c", _FEWER_THREADS],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) <= 1e-12


def _check_plan(layout, plan, threads):
    ncblk = layout.fcol.shape[0] - 1
    parent = layout.parent
    assert plan.ptr[0] == 0 and plan.ptr[-1] == plan.cblks.shape[0]
    assert np.array_equal(np.sort(np.concatenate([plan.cblks, plan.top])), np.arange(ncblk))
    owner = np.full(ncblk, -1)
    for t in range(plan.threads):
        mine = plan.cblks[plan.ptr[t] : plan.ptr[t + 1]]
        assert np.all(np.diff(mine) > 0)  # ascending: children first
        owner[mine] = t
    # Subtrees: a thread's cblk has its parent on the same thread or above them all;
    # the top is closed upwards.
    has = parent >= 0
    up = owner[parent[has]]
    assert np.all((up == owner[has]) | (up == -1))
    assert np.all(owner[parent[(owner == -1) & has]] == -1)
    widths = np.diff(layout.fcol)
    assert plan.ntop == widths[plan.top].sum()
    assert np.array_equal(
        np.sort(plan.topoff[plan.top]), np.cumsum(widths[plan.top]) - widths[plan.top]
    )
    assert np.all(plan.topoff[owner >= 0] == -1)


@pytest.mark.parametrize(
    "make",
    [
        lambda: laplacian((30, 30)),
        lambda: laplacian((12, 12, 12)),
        lambda: elasticity3d((5, 5, 5)),
        lambda: sp.block_diag([laplacian((9, 9)), laplacian((5, 6)), laplacian((4, 4, 4))]),
    ],
    ids=["2d", "3d", "elasticity", "forest"],
)
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_solve_plan_gives_each_thread_whole_subtrees(make, threads):
    an = pastixpy.analyze(sp.csc_array(make()), ordering="metis")
    layout = PanelLayout.from_symbol(an.symbol)
    plan = SolvePlan.build(layout, threads)
    _check_plan(layout, plan, threads)
    if threads == 1:
        assert plan.threads == 1 and plan.top.size == 0
    else:
        assert plan.threads == threads
        work = layout.panel_sizes
        loads = [work[plan.cblks[plan.ptr[t] : plan.ptr[t + 1]]].sum() for t in range(threads)]
        assert max(loads) <= 1.1 * sum(loads) / threads
    assert layout.solve_plan(threads) is layout.solve_plan(threads)  # cached


def test_solve_plan_of_a_chain_is_serial():
    # A tridiagonal matrix in natural order is one chain of cblks: nothing to split.
    n = 200
    A = sp.diags_array([-np.ones(n - 1), 4 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1])
    an = pastixpy.analyze(sp.csc_array(A), ordering="natural", amalgamation=False)
    layout = PanelLayout.from_symbol(an.symbol)
    plan = SolvePlan.build(layout, 2)
    assert plan.threads == 1
    _check_plan(layout, plan, 1)


def _graph_laplacians():
    """Three disconnected Neumann (graph) Laplacians: singular, three tiny pivots."""
    blocks = []
    for shape in ((6, 7, 5), (8, 8), (5, 5, 5)):
        L = laplacian(shape)
        blocks.append(L - sp.diags_array(np.asarray(L.sum(axis=1)).ravel()))
    return sp.csc_array(sp.block_diag(blocks))


@pytest.mark.parametrize("kind", ["ldlt", "lu"])
def test_perturbed_pivots_are_the_same(kind):
    A = _graph_laplacians()
    counts, columns = set(), set()
    for threads in (1, 2, 2, 3):
        F = pastixpy.factorize(A, kind=kind, threads=threads, matching="off")
        counts.add(F.stats["perturbed_pivots"])
        columns.add(tuple(sorted(F._solver.perturbed_columns)))
    assert counts == {3} and len(columns) == 1


def _spd_with_negative_diagonal(seed, bad=12):
    """The 3D Laplacian with a few diagonal entries made negative, far apart: several
    independent subtrees fail, and LLᵀ must report the first in pivot order."""
    A = laplacian((12, 12, 12)).tolil()
    rows = np.random.default_rng(seed).choice(A.shape[0], bad, replace=False)
    A[rows, rows] = -1.0
    return sp.csc_array(A)


@pytest.mark.parametrize("seed", range(4))
def test_not_positive_definite_column_is_the_same(seed):
    A = _spd_with_negative_diagonal(seed)
    an = pastixpy.analyze(A)
    with pytest.raises(NotPositiveDefiniteError) as one:
        pastixpy.factorize(A, kind="llt", analysis=an, threads=1)
    for _ in range(5):
        with pytest.raises(NotPositiveDefiniteError, match="not positive definite") as two:
            pastixpy.factorize(A, kind="llt", analysis=an, threads=2)
        assert two.value.column == one.value.column


def test_auto_kind_falls_back_to_ldlt_with_threads():
    A = _spd_with_negative_diagonal(0)
    F = pastixpy.factorize(A, threads=2)
    assert F.kind == "ldlt"
    b = np.ones(A.shape[0])
    assert np.abs(A @ F.solve(b) - b).max() <= 1e-10


@pytest.mark.parametrize("kind", ["llt", "ldlt", "lu"])
def test_repeated_threaded_factorizations_agree(kind):
    """Races would show as runs that disagree, crash or hang."""
    A = laplacian((9, 8, 7)) if kind != "lu" else convection_diffusion3d(8)
    if kind == "ldlt":
        A = saddle_point((5, 5, 5))
    _, ref = _solve(A, kind, 1)
    for _ in range(20):
        _, x = _solve(A, kind, 2)
        _assert_close(x, ref, np.float64)


#: Block low-rank with tiles on a small problem (the defaults compress nothing there).
_BLR = {"tol": 1e-6, "min_width": 32, "min_height": 8}

#: (name, matrix maker, kind, options): large enough that, on two threads, a cblk's
#: updates come in a different order from run to run.
BITWISE = [
    ("laplacian", lambda: laplacian((16, 16, 16)), "llt", {}),
    ("indefinite", lambda: _signed_diagonal((16, 16, 16), 2), "ldlt", {}),
    ("convection", lambda: convection_diffusion3d(16), "lu", {}),
    ("convection_complex", lambda: convection_diffusion3d(16) * (1 - 0.5j), "lu", {}),
    ("laplacian_blr", lambda: laplacian((16, 16, 16)), "llt", {"compress": ("blr", _BLR)}),
    (
        "indefinite_blr",
        lambda: _signed_diagonal((16, 16, 16), 2),
        "ldlt",
        {"compress": ("blr", _BLR)},
    ),
    ("convection_blr", lambda: convection_diffusion3d(16), "lu", {"compress": ("blr", _BLR)}),
    (
        "laplacian_minmem",
        lambda: laplacian((16, 16, 16)),
        "llt",
        {"compress": ("blr", dict(_BLR, strategy="minmem"))},
    ),
]


def _factor_arrays(F):
    """Every coefficient the factors hold, as arrays: dense panels, and for compressed
    cblks their diagonal blocks and tiles."""
    storage = F._factors.storage
    out = []
    for k in range(F._factors.layout.ncblk):
        if storage.describe(k)["storage"] == "dense":
            out += [storage.panel(k, f) for f in ("LU" if storage.two_factors else "L")]
        else:
            out.append(storage.diagonal_block(k))
    tiles = storage.tiles()
    for k, b, f in zip(tiles["cblk"], tiles["blok"], tiles["factor"], strict=True):
        out += [t for t in storage.tile(k, b, "LU"[f]) if t is not None]
    return out


def _same_bits(a, b):
    return len(a) == len(b) and all(
        x.shape == y.shape and x.tobytes() == y.tobytes() for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize(
    ("make", "kind", "options"),
    [pytest.param(make, kind, options, id=name) for name, make, kind, options in BITWISE],
)
def test_two_thread_factorizations_are_bitwise_identical(make, kind, options):
    """Each cblk takes its updates in one order whatever the threads' timing: six
    two-thread factorizations (and their threaded solves) give the same bits, those of
    one thread's (the BLAS on one thread too, as each worker's is)."""
    A = sp.csc_array(make())
    b = A @ np.linspace(1.0, 2.0, A.shape[0]).astype(A.dtype)
    analysis = pastixpy.factorize(A, kind=kind, threads=1, **options).analysis
    runs = []
    for _ in range(6):
        F = pastixpy.factorize(A, kind=kind, analysis=analysis, threads=2, **options)
        runs.append((_factor_arrays(F), F.solve(b)))
    if "compress" in options:
        assert F._factors.storage.compressed_cblks > 0
    factors, x = runs[0]
    for other, y in runs[1:]:
        assert _same_bits(other, factors)
        assert y.tobytes() == x.tobytes()
    with threadpool_limits(limits=1, user_api="blas"):
        F1 = pastixpy.factorize(A, kind=kind, analysis=analysis, threads=1, **options)
    assert _same_bits(_factor_arrays(F1), factors)


def test_more_threads_than_cores_and_tiny_matrices():
    for n in (1, 2, 3, 30):
        A = laplacian((n,))
        F = pastixpy.factorize(A, threads=8)
        assert np.allclose(A @ F.solve(np.ones(n)), 1.0)
    A = laplacian((10, 10, 10))
    _, ref = _solve(A, "llt", 1)
    _, x = _solve(A, "llt", 5)
    _assert_close(x, ref, np.float64)


def test_default_threads_use_all_cores():
    A = laplacian((24, 24, 24))  # above PARALLEL_MIN_FLOPS
    F1, ref = _solve(A, "llt", 1)
    F, x = _solve(A, "llt", None)
    _assert_close(x, ref, np.float64)
    assert F1.stats["threads"] == 1
    cores = pastixpy.runtime.available_cores() if pastixpy.runtime.OPENMP else 1
    assert F.stats["threads"] == cores


def test_stats_say_whether_kernels_have_openmp():
    """A build without OpenMP (setup.py's fallback) runs every kernel on one thread,
    whatever is asked, and says so; a build with it runs the threads asked."""
    A = laplacian((24, 24, 24))
    F = pastixpy.factorize(A, threads=2)
    assert F.stats["openmp"] is pastixpy.runtime.OPENMP
    assert pastixpy.runtime.OPENMP is bool(pastixpy._numeric.OPENMP)
    assert F.stats["threads"] == (2 if pastixpy.runtime.OPENMP else 1)
    b = np.ones(A.shape[0])
    assert np.abs(A @ F.solve(b) - b).max() <= 1e-10


@pytest.mark.parametrize("threads", [0, -1, 1.5, "2", True])
def test_bad_threads(threads):
    with pytest.raises(InvalidInputError, match="threads must be a positive integer"):
        pastixpy.factorize(laplacian((4, 4)), threads=threads)


# Large enough that the calling thread, which alone reports, gets a core while the
# factorization runs even when the machine is busy: on a 16³ grid the other thread
# could finish the whole run while it waited for one.
PROGRESS_GRID = (28, 28, 28)


@pytest.mark.parametrize("threads", [1, 2])
def test_progress_is_reported_from_the_run(threads):
    seen = []
    pastixpy.factorize(laplacian(PROGRESS_GRID), threads=threads, progress=seen.append)
    assert len(seen) >= 2 and seen[-1] == 1.0
    assert all(0 <= a <= b <= 1 for a, b in zip(seen, seen[1:], strict=False))


@pytest.mark.parametrize("threads", [1, 2])
def test_progress_exception_stops_the_workers(threads):
    class Stop(Exception):
        pass

    def progress(fraction):
        if fraction < 1:
            raise Stop

    A = laplacian(PROGRESS_GRID)
    with pytest.raises(Stop):
        pastixpy.factorize(A, threads=threads, progress=progress)
    # Nothing is left behind: the next factorization runs normally.
    F = pastixpy.factorize(A, threads=threads)
    b = np.ones(A.shape[0])
    assert np.abs(A @ F.solve(b) - b).max() <= 1e-10


@pytest.mark.parametrize("threads", [1, 2])
def test_ctrl_c_stops_the_workers(threads):
    seen = []

    def progress(fraction):
        seen.append(fraction)
        if len(seen) == 1:
            _thread.interrupt_main()  # as Ctrl-C would, in the middle of the factorization

    A = laplacian(PROGRESS_GRID)
    with pytest.raises(KeyboardInterrupt):
        pastixpy.factorize(A, threads=threads, progress=progress)
    assert seen[0] < 1 and 1.0 not in seen
    F = pastixpy.factorize(A, threads=threads)
    b = np.ones(A.shape[0])
    assert np.abs(A @ F.solve(b) - b).max() <= 1e-10


def _factor_in_child(queue):
    A = laplacian((12, 12, 12))
    F = pastixpy.factorize(A, threads=2)
    queue.put((F.stats["threads"], float(np.abs(A @ F.solve(np.ones(A.shape[0])) - 1).max())))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here")
def test_a_forked_child_can_factorize():
    """GNU OpenMP hangs in a forked child once the parent ran threads; the child must not."""
    pastixpy.factorize(laplacian((12, 12, 12)), threads=2)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_factor_in_child, args=(queue,))
    with warnings.catch_warnings():
        # JAX, once an earlier test imported it, warns at every fork: this child uses
        # no JAX.
        warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
        child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung in the factorization")
    threads, error = queue.get(timeout=5)
    assert child.exitcode == 0 and threads == 1 and error <= 1e-10


@pytest.mark.filterwarnings("ignore::pastixpy.PastixWarning")  # catch_warnings is not thread-safe
def test_a_failing_solve_leaves_other_threads_alone():
    """Six threads solve with one factorization of a singular matrix (a column the sum
    of two others); one of them with a right-hand side outside its range, which
    refinement cannot solve. That one gets its SingularMatrixError; the others solve,
    each seeing its own statistics. (A failing solve used to refactor on wider
    supernodes, freeing the factors first: the others then read "its last refactorize()
    failed", and F.stats was the last writer's.)"""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    M = convection_diffusion3d(12).tolil()
    M[:, 5] = M[:, 4].toarray() + M[:, 6].toarray()
    A = sp.csc_array(M)
    n = A.shape[0]
    F = pastixpy.factorize(A, refine="ir")
    assert F.stats["perturbed_pivots"] >= 1
    rng = np.random.default_rng(4)
    consistent = [A @ rng.standard_normal(n) for _ in range(5)]
    inconsistent = np.ones(n)
    barrier = threading.Barrier(6)
    norm_a = abs(A).sum(axis=1).max()

    def work(t):
        barrier.wait()
        results = []
        for r in range(10):
            b = inconsistent if t == 0 else consistent[(t + r) % 5]
            try:
                x = F.solve(b)
            except pastixpy.PastixError as exc:
                results.append((type(exc).__name__, str(exc)))
                continue
            mine = np.abs(A @ x - b).max() / (norm_a * np.abs(x).max() + np.abs(b).max())
            results.append(("solved", float(mine), F.stats["backward_error"]))
        return results

    with ThreadPoolExecutor(6) as pool:
        outcomes = list(pool.map(work, range(6)))
    assert {kind for kind, *_ in outcomes[0]} == {"SingularMatrixError"}
    assert "numerically singular" in outcomes[0][0][1]
    for results in outcomes[1:]:
        assert all(kind == "solved" for kind, *_ in results), results
        for _, mine, reported in results:
            # Each thread's F.stats is its own last solve, not another thread's.
            assert mine <= 1e-14 and reported == pytest.approx(mine, rel=0.5, abs=1e-17)
    assert not F.stats["coarsened"]  # no solve refactored


def test_small_factorizations_run_on_one_thread_whatever_asked(monkeypatch):
    monkeypatch.setattr(pastixpy.numeric.factorize, "PARALLEL_MIN_FLOPS", 1e8)
    A = laplacian((12, 12, 12))
    assert pastixpy.analyze(A).stats["flops"] < 1e8
    F = pastixpy.factorize(A, threads=2)
    assert F.stats["threads"] == 1
    b = np.ones(A.shape[0])
    assert np.abs(A @ F.solve(b) - b).max() <= 1e-10
    big = laplacian((24, 24, 24))
    if pastixpy.runtime.available_cores() > 1 and pastixpy.runtime.OPENMP:
        assert pastixpy.factorize(big, threads=2).stats["threads"] == 2


_ONE_THREAD = """
import json, resource, sys, time
import numpy as np
import pastixpy
from pastixpy.gallery import laplacian

def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

A = laplacian((36, 36, 36))  # threaded kernels and forked METIS runs where allowed
b = np.ones(A.shape[0])
pastixpy.spsolve(laplacian((4, 4)), np.ones(16))  # imports and first calls done
calls = {
    "spsolve": lambda: pastixpy.spsolve(A, b),
    "factorize+solve": lambda: pastixpy.factorize(A).solve(b),
    "factorized": lambda: pastixpy.factorized(A)(b),
    "analyze": lambda: pastixpy.analyze(A),
}
out = {"default": pastixpy.runtime.default_threads()}
for name, call in calls.items():
    c0, t0 = cpu(), time.perf_counter()
    call()
    out[name] = [cpu() - c0, time.perf_counter() - t0]
out["threads"] = pastixpy.factorize(A).stats["threads"]
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="children's rusage, fork")
def test_omp_num_threads_1_keeps_every_entry_point_on_one_core(tmp_path):
    """threads=None follows OMP_NUM_THREADS, as numpy, scipy and MKL do: with it at 1
    (and the BLAS's), spsolve, factorize + solve, factorized and analyze take no more
    CPU time than wall time (the forked METIS runs of the analysis counted, through
    the children's rusage)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-c", _ONE_THREAD],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["default"] == 1 and r["threads"] == 1
    for name in ("spsolve", "factorize+solve", "factorized", "analyze"):
        cpu, wall = r[name]
        # rusage counts in clock ticks: a few hundredths of slack.
        assert cpu <= 1.05 * wall + 0.03, (name, cpu, wall)


def test_default_threads_follow_the_openmp_limit_in_force():
    """The environment's limit (threadpoolctl's on the OpenMP runtime here), never more
    than the affinity mask's cores; factorizations take it as their default."""
    cores = pastixpy.runtime.available_cores()
    assert 1 <= pastixpy.runtime.default_threads() <= cores
    with threadpool_limits(limits=1, user_api="openmp"):
        assert pastixpy.runtime.default_threads() == 1
        assert pastixpy.runtime.Allowance.process().children == 0
        F = pastixpy.factorize(laplacian((24, 24, 24)))
        assert F.stats["threads"] == 1
    with threadpool_limits(limits=64, user_api="openmp"):
        assert pastixpy.runtime.default_threads() == cores
