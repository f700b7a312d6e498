"""Keep a factorization: save it to a file, copy it, and solve with it in worker
processes.

``F.save(path)`` writes a versioned file (the factorization pickled whole: factors,
compressed tiles, pivots, scaling, permutations, analysis, options, behind a header
with the format version and a checksum) that ``pastixpy.load(path)`` reads in another
process, which then solves without factoring again; a file of another format version,
or a damaged one, is a ``PersistError``. A ``Factorization`` also pickles, to be sent
to the workers of a process pool. ``copy.deepcopy`` gives an independent copy: a
refactorization of the copy leaves the original as it was. A loaded copy solves bitwise
like the original on the same number of threads; the workers here are started fresh
("spawn"), since a forked child of a process that ran OpenMP threads may solve on
another number of them, and round the last bits otherwise.

Run: python examples/keep_factorization.py
"""

import copy
import multiprocessing
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

import pastixpy
from pastixpy.gallery import laplacian


def solve_with(path, seed):
    """A worker: load the factorization from ``path`` and solve for a random b."""
    F = pastixpy.load(path, expect="Factorization")
    b = np.random.default_rng(seed).standard_normal(F.shape[0])
    return seed, F.solve(b)


if __name__ == "__main__":
    A = laplacian((30, 30, 30))
    F = pastixpy.factorize(A, compress=1e-8)  # compressed tiles pickle too
    print(f"factored: {F.stats['factor_bytes'] / 2**20:.1f} MiB of factors, kind {F.stats['kind']}")

    with tempfile.TemporaryDirectory() as tmp:
        path = F.save(Path(tmp) / "F.pastixpy")
        print(f"saved to {path.name}: {path.stat().st_size / 2**20:.1f} MiB")

        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
            for seed, x in pool.map(solve_with, [path] * 3, range(3)):
                b = np.random.default_rng(seed).standard_normal(A.shape[0])
                same = np.array_equal(x, F.solve(b))
                print(f"worker solve {seed}: bitwise equal to this process's: {same}")

    G = copy.deepcopy(F)
    G.refactorize(A * 2)  # the copy changes, the original does not
    b = np.ones(A.shape[0])
    print(f"copy solves A*2: {np.allclose(2 * G.solve(b), F.solve(b))}")
