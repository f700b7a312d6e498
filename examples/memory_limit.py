"""Memory: the factor size forecast before any numeric work, what happens when the
factors would not fit, and the memory budget that chooses a configuration that does.

The analysis forecasts the factors' bytes for every dtype; ``factorize`` compares
the numeric phase's forecast with what the process may still take (address-space
limit, memory cgroup, available memory) before allocating, and raises
OutOfMemoryError saying how much is needed, how much is available and what to try.
With ``memory_limit=`` it chooses instead, before allocating, the first configuration
that fits (full rank, mixed precision, block low-rank just in time or minimal memory,
and mixed precision with either) and says which and why in ``stats["memory_budget"]``
and a MemoryBudgetWarning. Here a child process runs a 50³ Laplacian under
address-space limits (``ulimit -v``) of decreasing size.

Run: python examples/memory_limit.py
"""

import subprocess
import sys
import warnings

import numpy as np

import pastixpy
from pastixpy.gallery import laplacian
from pastixpy.memory import headroom

A = laplacian((50, 50, 50))
an = pastixpy.analyze(A)
for dtype, nbytes in an.stats["memory_bytes_by_dtype"].items():
    print(f"factors in {dtype:>10}: {nbytes / 2**20:8.1f} MiB")
room = headroom()
if room is not None:
    print(f"this process may take {room.bytes / 2**30:.1f} GiB more ({room.limit})")

# A budget of one's own: a 30³ Laplacian in 40 MiB (its full-rank factorization needs
# more): mixed precision is chosen, and the answer is refined to double accuracy.
B = laplacian((30, 30, 30))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", pastixpy.errors.MemoryBudgetWarning)
    F = pastixpy.factorize(B, memory_limit="40MiB", threads=1)
budget = F.stats["memory_budget"]
print(f"\n30³ Laplacian, memory_limit='40MiB': {budget['chosen']}")
for name, f in budget["forecasts"].items():
    print(
        f"  {name:>17}: {f['estimate'] / 2**20:6.1f} MiB "
        f"(from {f['least'] / 2**20:.1f} to {f['most'] / 2**20:.1f}) fits: {f['fits']}"
    )
print(f"  warning: {caught[0].message}" if caught else "  no warning")
x = F.solve(np.ones(B.shape[0]))
print(f"  backward error {F.stats['backward_error']:.1e}")

CHILD = """
import resource, warnings
import numpy as np
import pastixpy
from pastixpy.compression import CLUSTER_SIZE
from pastixpy.gallery import laplacian
from pastixpy.runtime import map_blas_buffers

A = laplacian((50, 50, 50))
an = pastixpy.analyze(A, clusters=CLUSTER_SIZE)
map_blas_buffers(True)  # the BLAS buffers of this thread, mapped before the limit is set
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
for mib in (260, 175):
    mapped = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (mapped + mib * 2**20, hard))
    print(f"{mib} MiB of address space more than the process maps:")
    try:
        pastixpy.factorize(A, analysis=an, threads=1)
        print("  factorize(A): fits")
    except pastixpy.OutOfMemoryError as exc:
        print(f"  factorize(A): OutOfMemoryError, needed {exc.needed / 2**20:.0f} MiB, "
              f"available {exc.available / 2**20:.0f} MiB")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        F = pastixpy.factorize(A, analysis=an, threads=1, memory_limit="auto")
        F.solve(np.ones(A.shape[0]))
    budget = F.stats["memory_budget"]
    print(f"  factorize(A, memory_limit='auto'): {budget['chosen']}, backward error "
          f"{F.stats['backward_error']:.1e}")
    print(f"    why: {budget['why']}")
    del F
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
"""

if sys.platform.startswith("linux"):
    print("\n50³ Laplacian in a child process under address-space limits:")
    child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
    print(child.stdout)
    if child.returncode:
        sys.exit(child.stderr)
