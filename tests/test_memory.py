"""Memory limits: the factors are checked against what the process may take, before
they are allocated, and a shortfall is a package error that says what to try."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pastixpy
import pastixpy.pipeline
from pastixpy import _numeric, memory
from pastixpy.gallery import laplacian
from pastixpy.runtime import OPENMP


def test_headroom_is_positive_here():
    room = memory.headroom()
    if room is None:
        pytest.skip("no memory limit is known on this system")
    assert room.bytes > 0 and room.limit


@pytest.mark.parametrize(
    "kind, dtype, advice",
    [
        ("llt", np.float64, "A.astype(numpy.float32)"),
        ("lu", np.float64, "stores one factor"),
        ("llt", np.float32, "another ordering may fill less"),
    ],
)
def test_factors_that_do_not_fit_are_refused_before_allocation(monkeypatch, kind, dtype, advice):
    A = laplacian((12, 12, 12)).astype(dtype)
    needed = pastixpy.analyze(A, kind=kind).memory_forecast(dtype)
    monkeypatch.setattr(memory, "headroom", lambda: memory.Headroom(needed // 2, "a test's limit"))
    # Small factors are allocated without reading the limits: check these too.
    monkeypatch.setattr("pastixpy.numeric.factorize.MEMORY_CHECK_MIN_BYTES", 0)
    allocated = []
    storage = _numeric.Storage

    def recording(*args, **kwargs):
        allocated.append(args)
        return storage(*args, **kwargs)

    monkeypatch.setattr(_numeric, "Storage", recording)
    with pytest.raises(pastixpy.OutOfMemoryError) as e:
        pastixpy.factorize(A, kind=kind)
    assert isinstance(e.value, MemoryError) and isinstance(e.value, pastixpy.PastixError)
    assert e.value.needed >= needed and e.value.available == needed // 2
    message = str(e.value)
    assert "the factors need" in message and "(a test's limit)" in message and advice in message
    assert allocated == []  # nothing was allocated for the factors


_UNDER_LIMIT = """
import json, resource, time
import numpy as np
import pastixpy
import pastixpy.pipeline
from pastixpy.gallery import laplacian

A = laplacian((50, 50, 50))
forecast = pastixpy.analyze(A).memory_forecast("float64")
calls = []
analyze = pastixpy.pipeline.analyze
pastixpy.pipeline.analyze = lambda *a, **k: calls.append(1) or analyze(*a, **k)
mapped = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
# Room for the analysis, not for the factors.
limit = mapped + forecast // 2
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
t0 = time.perf_counter()
try:
    pastixpy.factorize(A)
    print(json.dumps({"error": None}))
except BaseException as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc), "analyses": len(calls),
                      "seconds": time.perf_counter() - t0, "needed": getattr(exc, "needed", 0)}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")
def test_an_address_space_limit_gives_a_package_error(tmp_path):
    # Away from the source tree, on the package these tests import (an installed one
    # has its compiled modules where the sources have none).
    env = {**os.environ, "PYTHONPATH": str(Path(pastixpy.__file__).parents[1])}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_UNDER_LIMIT)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["error"] == "OutOfMemoryError", result
    assert "ulimit -v" in result["message"] and "GiB" in result["message"]
    assert result["analyses"] == 1  # one analysis on the way to the error, never two


_PEAK = """
import json, sys, threading
import pastixpy, pastixpy.pipeline, pastixpy.runtime
from pastixpy.gallery import laplacian
from pastixpy.numeric import factorize as numeric

def mapped():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * 4096

strategy, threads = sys.argv[1], int(sys.argv[2])
A = laplacian((26, 26, 26))
compress = None if strategy == "full" else ("blr", {"tol": 1e-6, "strategy": strategy,
                                                    "min_width": 64})
an = pastixpy.analyze(A, clusters=(80, 160))
seen = {}
inner = numeric.forecast

def forecast(*args, **kwargs):
    seen["forecast"] = inner(*args, **kwargs)
    return seen["forecast"]

def measured(*args, **kwargs):
    # The numeric phase's own peak of mapped memory (what an address-space limit
    # counts), sampled while the kernels run without the GIL.
    # The sampler's own stack and heap are mapped before the base is read.
    peak = [0]
    done, started = threading.Event(), threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], mapped())
            started.set()
            done.wait(0.0002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started.wait()
    pastixpy.runtime.release_free_memory()
    base = mapped()
    peak[0] = base
    try:
        return factorize_numeric(*args, **kwargs)
    finally:
        done.set()
        sampler.join()
        seen["peak"] = peak[0] - base

factorize_numeric = pastixpy.numeric.backend.factorize_numeric
kw = dict(analysis=an, compress=compress, threads=threads, refine="none")
# A first run starts the threads and maps their stacks and BLAS buffers (the forecast's
# reserve, apart), then the measured one.
pastixpy.factorize(A, **kw)
numeric.forecast = forecast
pastixpy.numeric.backend.factorize_numeric = measured
F = pastixpy.factorize(A, **kw)
fc = seen["forecast"]
print(json.dumps({"peak": seen["peak"], "least": fc.least, "most": fc.most,
                  "threads": fc.threads, "compressed": F.stats["compression"] is not None}))
"""


def _child(cwd, code, *args, timeout=120, env=()):
    # Away from the source tree, on the package these tests import.
    env = {**os.environ, "PYTHONPATH": str(Path(pastixpy.__file__).parents[1]), **dict(env)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("strategy, threads", [("full", 1), ("full", 2), ("jit", 2), ("minmem", 2)])
def test_forecast_covers_the_measured_peak(tmp_path, strategy, threads):
    """Each strategy's forecast (every allocation of the numeric phase: panels, work
    buffers per thread, A's entries, compressed cblks' panels, tiles and work) holds
    the numeric phase's measured peak, and is not far above it."""
    # glibc maps every allocation of 128 KiB or more by itself and keeps one arena, so
    # the mapped size follows the allocations (not arenas reserved ahead, nor freed
    # blocks reused inside them).
    malloc = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_ARENA_MAX": "1"}
    out = _child(tmp_path, _PEAK, strategy, threads, env=malloc)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    # A build without OpenMP (setup.py) runs the kernels on one thread.
    assert r["threads"] == (threads if OPENMP else 1) and r["compressed"] == (strategy != "full")
    assert r["peak"] <= r["most"] <= 2 * r["peak"], r
    if strategy == "full":
        assert r["least"] == r["most"] <= 1.25 * r["peak"], r
    else:
        # What the check refuses on: not above what the run takes (the sampled peak
        # may miss a short-lived allocation by a little).
        assert r["least"] <= 1.1 * r["peak"] and r["least"] < r["most"], r


_LIMITS = """
import json, resource, sys, warnings
import numpy as np
import pastixpy
from pastixpy.gallery import laplacian
from pastixpy.numeric import factorize as numeric

strategy, threads = sys.argv[1], int(sys.argv[2])
A = laplacian((22, 22, 22))
compress = None if strategy == "full" else ("blr", {"tol": 1e-8, "strategy": strategy})
an = pastixpy.analyze(A, clusters=None if compress is None else (160, 320))
seen = []
inner = numeric.forecast
numeric.forecast = lambda *a, **k: seen.append(inner(*a, **k)) or seen[-1]
pastixpy.factorize(A, analysis=an, compress=compress, threads=threads)  # warm, unlimited
fc = seen[-1]
# Room for the forecast (the most, and the threads' address space) and for the rest of
# factorize and a solve (the assembly map, the solve's vectors): it must fit.
enough = (fc.most + fc.reserve) // 2**20 + 24
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
out = []
for mib in (8, 16, 24, 32, 48, 64, 96, enough):
    mapped = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (mapped + mib * 2**20, hard))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            F = pastixpy.factorize(A, analysis=an, compress=compress, threads=threads)
            F.solve(np.ones(A.shape[0]))
        del F
        out.append({"mib": mib, "error": None})
    except MemoryError as exc:
        out.append({"mib": mib, "error": type(exc).__name__, "message": str(exc),
                    "needed": getattr(exc, "needed", None),
                    "available": getattr(exc, "available", None)})
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")
@pytest.mark.parametrize("strategy, threads", [("full", 1), ("full", 2), ("jit", 2), ("minmem", 2)])
def test_under_address_space_limits_success_or_a_package_error(tmp_path, strategy, threads):
    """From too little to enough address space: each run succeeds or raises
    OutOfMemoryError saying what is needed, what is available and what to try, never a
    plain MemoryError and never a hang (OpenBLAS retries forever a buffer it cannot
    map: the threads' buffers are counted)."""
    out = _child(tmp_path, _LIMITS, strategy, threads, timeout=60)
    assert out.returncode == 0, out.stderr
    runs = json.loads(out.stdout.strip().splitlines()[-1])
    assert runs[-1]["error"] is None, runs  # enough room: it fits
    assert any(r["error"] for r in runs), runs  # too little: refused
    for r in runs:
        if r["error"] is None:
            continue
        assert r["error"] == "OutOfMemoryError", r
        assert r["needed"] > r["available"] >= 0, r
        assert "GiB" in r["message"] and "ulimit -v" in r["message"], r
        assert "compress=" in r["message"] or "precision='mixed'" in r["message"], r


@pytest.mark.parametrize(
    "options, path",
    [({}, "simplicial"), ({"matching": "on"}, "supernodal")],
    ids=["small", "pipeline"],
)
def test_a_solve_that_cannot_allocate_raises_the_package_error(monkeypatch, options, path):
    """The solve's work buffers (kernels) or vectors (numpy) not allocated: the
    package's OutOfMemoryError with what a solve holds and what to try."""
    A = laplacian((8, 8, 8))

    def fail(self, *args):
        raise MemoryError("cannot allocate the solve work buffers")

    # The supernodal factors and the small path's (a 512-unknown SPD matrix takes it).
    monkeypatch.setattr(pastixpy.numeric.LocalFactors, "solve_inplace", fail)
    monkeypatch.setattr(pastixpy.simplicial.SimplicialLDL, "solve_inplace", fail)
    monkeypatch.setattr(pastixpy.simplicial.SimplicialLDL, "refined_solve", fail)
    F = pastixpy.factorize(A, **options)
    assert F.stats["path"] == path
    with pytest.raises(pastixpy.OutOfMemoryError) as e:
        F.solve(np.ones((A.shape[0], 3)))
    assert e.value.needed > 0 and e.value.available >= 0
    message = str(e.value)
    assert "cannot allocate the solve work buffers" in message and "3 right-hand" in message
    assert "fewer right-hand sides" in message
