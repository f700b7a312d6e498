"""Pickling and copy.deepcopy of factorizations and analyses, and the lifetime of the
factors' storage."""

import subprocess
import sys

CYCLE = """
import gc
import pastixpy
from pastixpy.gallery import laplacian
small = {"tol": 1e-3, "min_width": 16, "min_height": 4, "max_ratio": 1.0, "clusters": (16, 32)}
F = pastixpy.factorize(laplacian((8, 8, 8)), kind="lu", compress=("blr", small))
assert F.stats["compression"]["compressed_cblks"] > 0
cycle = [F]
cycle.append(cycle)
del F, cycle
print(gc.collect())
"""


def test_compressed_factors_in_a_reference_cycle_are_collected():
    """A compressed factorization reachable only from a reference cycle (an exception's
    traceback holding the frame that held it, say) is freed by the garbage collector
    without a crash: the storage frees its tiles through its block structure, which
    the collector must not clear first."""
    run = subprocess.run([sys.executable, "-c", CYCLE], capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
