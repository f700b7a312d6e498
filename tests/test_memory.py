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
