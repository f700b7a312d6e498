"""Memory: the factor size forecast before any numeric work, and what happens when the
factors would not fit.

The analysis forecasts the factors' bytes for every dtype; ``factorize`` compares
that with what the process may still take (address-space limit, memory cgroup,
available memory) before allocating, and raises OutOfMemoryError saying how much is
needed, how much is available and what to try. Here a child process runs under an
address-space limit (``ulimit -v``) too small for a 50³ Laplacian's factors.

Run: python examples/memory_limit.py
"""

import subprocess
import sys

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

CHILD = """
import resource
import pastixpy
from pastixpy.gallery import laplacian
A = laplacian((50, 50, 50))
mapped = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (mapped + 200 * 2**20, resource.RLIM_INFINITY))
try:
    pastixpy.factorize(A)
except pastixpy.OutOfMemoryError as exc:
    print(f"OutOfMemoryError: {exc}")
    print(f"needed {exc.needed / 2**20:.0f} MiB, available {exc.available / 2**20:.0f} MiB")
"""

if sys.platform.startswith("linux"):
    print("under an address-space limit of 200 MiB more than the process maps:")
    print(subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True).stdout)
