"""One timed run of one solver on one matrix, in a fresh process (started by run.py).

Usage::

    python benchmarks/worker.py '{"matrix": "A.npz", "solver": "pastixpy", "threads": 1,
                                  "structure": "spd"}'

Optional keys: ``"memory_limit"`` (bytes: the process's address space is capped there
with ``resource.setrlimit`` before the matrix is loaded, so that a solver that needs
more fails as it would on a smaller machine) and ``"rhs"`` (columns of the
many-right-hand-sides solve, 16 by default; 0 leaves it out).

Loads the matrix and right-hand sides, imports the solver and runs it once on an
8 x 8 matrix of the same structure (first calls untimed), takes the resident
set size as the baseline and resets the high-water mark (``/proc/self/clear_refs``),
then times analysis, factorization and the solves with 1 and 16 right-hand
sides under a BLAS thread limit, reads the peak after the factorization, after
the one-right-hand-side solve and after both solves, and prints one line
``@@RESULT@@ {json}`` last on stdout.
"""

import json
import resource
import sys
import time
import traceback
import warnings

import numpy as np
import scipy.sparse as sp
from solvers import adapter, base_name
from threadpoolctl import threadpool_info, threadpool_limits

MARK = "@@RESULT@@"
MiB = 2**20


def memory():
    """(VmRSS, VmHWM) of this process in bytes, or (None, None) off Linux."""
    try:
        with open("/proc/self/status") as fh:
            d = dict(line.split(":", 1) for line in fh if line.startswith("Vm"))
        return int(d["VmRSS"].split()[0]) * 1024, int(d["VmHWM"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None, None


def reset_peak():
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def backward_error(A, X, B, norm_a):
    """max over columns of ‖b − Ax‖∞ / (‖A‖∞ ‖x‖∞ + ‖b‖∞)."""
    X2, B2 = X.reshape(B.shape[0], -1), B.reshape(B.shape[0], -1)
    R = B2 - A @ X2
    num = np.abs(R).max(axis=0)
    den = norm_a * np.abs(X2).max(axis=0) + np.abs(B2).max(axis=0)
    return float((num / den).max())


def rhs(n, k, dtype, seed=0):
    """Seeded standard normal right-hand sides (complex parts too for complex A)."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, k))
    if np.dtype(dtype).kind == "c":
        B = B + 1j * rng.standard_normal((n, k))
    return B.astype(dtype)


def warm_up(name, structure, dtype, threads):
    """Run the solver once on an 8 x 8 matrix of the structure: what a library does on
    its first call only (lazy imports, thread pools, caches) is not timed, as it is not
    in a program that solves more than once. Small problems would be all first call."""
    T = sp.diags_array([-np.ones(7), 2 * np.ones(8), -np.ones(7)], offsets=[-1, 0, 1])
    W = {
        "spd": T,
        "sym": T - 1.3 * sp.eye_array(8),
        "csym": (1 + 1j) * T,
        "unsym": T + 0.5 * sp.eye_array(8, k=1),
    }[structure]
    W = sp.csc_array(W).astype(dtype)
    solver = adapter(name, W, structure, threads)
    with threadpool_limits(limits=threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver.analyze()
        solver.factor()
        solver.solve(rhs(8, 1, dtype)[:, 0])
        if base_name(name) in ("pastixpy", "spsolve"):
            # An 8 x 8 matrix takes pastixpy's small path: its supernodal pipeline (its
            # modules, thread pool, BLAS) has a first call too, which a program that
            # solves more than once has made. Naming the precision asks for it.
            import pastixpy

            pastixpy.factorize(W, threads=threads, precision="double").solve(rhs(8, 1, dtype)[:, 0])


def run(spec):
    """Time one solver on one matrix; returns the result dict."""
    if spec.get("memory_limit"):
        limit = int(spec["memory_limit"])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    A = sp.csc_array(sp.load_npz(spec["matrix"]))
    n = A.shape[0]
    b1 = rhs(n, 1, A.dtype, seed=1)[:, 0]
    B16 = rhs(n, int(spec.get("rhs", 16)), A.dtype, seed=16)
    norm_a = float(abs(A).sum(axis=1).max())
    threads = int(spec["threads"])
    warm_up(spec["solver"], spec["structure"], A.dtype, threads)
    solver = adapter(spec["solver"], A, spec["structure"], threads)
    rss0, _ = memory()
    reset = reset_peak()
    seconds = {}
    with threadpool_limits(limits=threads), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for phase, call in (("analysis", solver.analyze), ("factor", solver.factor)):
            t = time.perf_counter()
            call()
            seconds[phase] = time.perf_counter() - t
        _, factor_peak = memory()
        t = time.perf_counter()
        x1 = solver.solve(b1)
        seconds["solve1"] = time.perf_counter() - t
        _, solve1_peak = memory()
        t = time.perf_counter()
        X16 = solver.solve(B16) if B16.shape[1] else B16
        seconds["solve16"] = time.perf_counter() - t
        _, peak = memory()
        blas = [
            {k: d.get(k) for k in ("internal_api", "architecture", "version", "num_threads")}
            for d in threadpool_info()
            if d.get("user_api") == "blas"
        ]
    if hasattr(solver, "split"):
        seconds = solver.split(seconds)
    info = solver.info()
    messages = sorted({str(w.message) for w in caught})
    return {
        "status": "ok",
        "seconds": seconds,
        "backward_error": max(
            [backward_error(A, np.asarray(x1), b1, norm_a)]
            + ([backward_error(A, np.asarray(X16), B16, norm_a)] if B16.shape[1] else [])
        ),
        "peak_bytes": None if rss0 is None or peak is None else peak - rss0,
        "factor_peak_bytes": None if rss0 is None or factor_peak is None else factor_peak - rss0,
        "solve1_peak_bytes": None if rss0 is None or solve1_peak is None else solve1_peak - rss0,
        "peak_reset": reset,
        "baseline_bytes": rss0,
        "blas": blas,
        "warnings": messages[:3],
        **info,
    }


def main():
    spec = json.loads(sys.argv[1])
    try:
        result = run(spec)
    except Exception as exc:  # reported in the table, not raised
        tb = traceback.format_exc(limit=3)
        result = {"status": "error", "error": f"{type(exc).__name__}: {exc}", "traceback": tb}
    sys.stdout.flush()
    print(MARK, json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
