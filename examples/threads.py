"""Threads: the factorization and the solves on one thread and on every core.

The factorization schedules column blocks on the threads as their updates
arrive; the solves sweep disjoint subtrees of the block tree on the same
threads. Results agree with one thread's to rounding.

Run: python examples/threads.py
"""

import time

import numpy as np

import pastixpy
from pastixpy.gallery import laplacian
from pastixpy.runtime import available_cores

A = laplacian((40, 40, 40))
rng = np.random.default_rng(0)
b = rng.standard_normal(A.shape[0])
B = rng.standard_normal((A.shape[0], 16))

solutions = {}
for threads in sorted({1, available_cores()}):
    F = pastixpy.factorize(A, threads=threads)
    t0 = time.perf_counter()
    x = F.solve(b)
    t1 = time.perf_counter()
    F.solve(B)
    t2 = time.perf_counter()
    solutions[threads] = x
    print(
        f"threads={F.stats['threads']}: factorize {F.stats['seconds']['factorize']:.3f} s, "
        f"solve 1 RHS {1e3 * (t1 - t0):.1f} ms, 16 RHS {1e3 * (t2 - t1):.1f} ms, "
        f"backward error {F.stats['backward_error']:.1e}"
    )

xs = list(solutions.values())
print(f"largest difference between thread counts: {np.abs(xs[0] - xs[-1]).max():.1e}")

# Several Python threads may solve with one factorization at once: a solve changes
# nothing shared, and each thread's F.stats holds its own last solve.
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

F = pastixpy.factorize(A, threads=1)
columns = [B[:, j] for j in range(8)]


def solve_and_report(b):
    x = F.solve(b)
    return F.stats["backward_error"], float(np.abs(A @ x - b).max())


with ThreadPoolExecutor(4) as pool:
    results = list(pool.map(solve_and_report, columns))
worst = max(berr for berr, _ in results)
print(f"8 solves on 4 Python threads, one factorization: worst backward error {worst:.1e}")
