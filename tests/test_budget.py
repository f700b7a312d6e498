"""The memory budget (``factorize(A, memory_limit=...)``): its argument, the choice of a
configuration from the forecasts, the statistics and the warning, the refusal when
nothing fits, the fallbacks, and an accurate answer in whatever configuration is chosen."""

import json
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import pastixpy
import pastixpy.numeric.backend
from pastixpy import _numeric, budget, memory, solve_policy
from pastixpy.budget import CONFIGURATIONS
from pastixpy.cli import main
from pastixpy.errors import MemoryBudgetWarning, OptionError, OutOfMemoryError
from pastixpy.gallery import laplacian
from pastixpy.numeric.forecast import Forecast

MiB = 2**20

#: A 3D Laplacian whose wide separators are compressed (cblks of at least 128 columns
#: with bloks below them), small enough to factor in every configuration at once.
A = laplacian((20, 20, 20))


def backward_error(A, x, b):
    """‖b − A x‖∞ / (‖A‖∞ ‖x‖∞ + ‖b‖∞), computed here with scipy and numpy."""
    r = b - A @ x
    norm_a = np.abs(A).sum(axis=1).max()
    return np.abs(r).max() / (norm_a * np.abs(x).max() + np.abs(b).max())


# ---------------------------------------------------------------------------- the argument


@pytest.mark.parametrize(
    "value, nbytes",
    [
        (4096, 4096),
        (np.int64(10**9), 10**9),
        (8e9, 8 * 10**9),
        ("8GiB", 8 * 2**30),
        ("512MiB", 512 * 2**20),
        ("2.5GB", 25 * 10**8),
        ("1000000", 10**6),
        (" 3 kb ", 3000),
        ("1.5KiB", 1536),
        ("2TB", 2 * 10**12),
    ],
)
def test_sizes_are_read_in_bytes(value, nbytes):
    assert memory.parse_bytes(value) == nbytes
    assert pastixpy.options.Options.parse(memory_limit=value).memory_limit == nbytes


@given(
    count=st.integers(min_value=1, max_value=10**6),
    unit=st.sampled_from(sorted(memory.BYTE_UNITS)),
    case=st.sampled_from([str.lower, str.upper, lambda u: u]),
    space=st.sampled_from(["", " "]),
)
def test_any_count_of_any_unit(count, unit, case, space):
    assert memory.parse_bytes(f"{count}{space}{case(unit)}") == count * memory.BYTE_UNITS[unit]


@pytest.mark.parametrize(
    "value, words",
    [
        ("8G", "units"),
        ("eight GiB", "not a size"),
        ("-1GB", "not a size"),
        ("0", "at least one byte"),
        (0, "at least one byte"),
        (-5, "at least one byte"),
        (1.5, "whole number"),
        (float("inf"), "finite"),
        (True, "not a size"),
        ([8], "not a size"),
    ],
)
def test_a_bad_memory_limit_is_an_option_error_naming_it(value, words):
    with pytest.raises(OptionError, match="memory_limit") as e:
        pastixpy.factorize(A, memory_limit=value)
    assert words in str(e.value)


def test_memory_limit_auto_and_none():
    assert pastixpy.options.Options.parse(memory_limit="auto").memory_limit == "auto"
    plain = pastixpy.options.Options.parse()
    assert plain.memory_limit is None and plain.fixed == frozenset()
    # Without a budget nothing is recorded as fixed (the options compare as before).
    assert pastixpy.options.Options.parse(compress=False) == plain


def test_fixed_choices_are_recorded_with_a_budget():
    parse = pastixpy.options.Options.parse
    assert parse(memory_limit="1GiB", compress=False).fixed == {"compress"}
    assert parse(memory_limit="1GiB", compress=1e-6).fixed == {"compress"}
    named = ("blr", {"strategy": "minmem"})
    assert parse(memory_limit="1GiB", compress=named).fixed == {"compress", "strategy"}


class _TwoRanks:
    """Enough of an MPI communicator for the options' check."""

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 2

    def bcast(self, value, root=0):
        return value

    def Recv(self, *args, **kwargs):
        raise AssertionError("not called")


def test_a_memory_limit_with_comm_is_refused():
    with pytest.raises(OptionError, match="memory_limit= .* comm="):
        pastixpy.options.Options.parse(memory_limit="1GiB", comm=_TwoRanks())


# ---------------------------------------------------------------------------- the choice

#: Forecasts (least, most) in MiB whose estimates decrease along the order, so that each
#: configuration is the first to fit for limits from its estimate up to the one before.
SYNTHETIC = {
    "full-rank": (100, 100),
    "mixed": (80, 80),
    "mixed+blr-jit": (60, 90),
    "mixed+blr-minmem": (50, 70),
    "blr-jit": (40, 60),
    "blr-minmem": (20, 40),
}


def _synthetic(name):
    least, most = SYNTHETIC[name]
    return Forecast("x", 1, 0, 0, 0, least * MiB, most * MiB, 0)


def _estimate(name):
    return budget.estimate(_synthetic(name))


@pytest.fixture
def synthetic(monkeypatch):
    """The budget reads :data:`SYNTHETIC` as the forecasts, no system limit and nothing
    held: the limits of the tests are the room for the numeric phase. Returns the
    configurations the budget forecast, in the order asked."""
    asked = []

    def fake(B, analysis, layout, amap, kind, dtype, threads, compression):
        mixed = np.dtype(dtype) == np.float32  # A is float64
        strategy = None if compression is None else compression.strategy
        conf = next(c for c in CONFIGURATIONS if (c.mixed, c.strategy) == (mixed, strategy))
        asked.append(conf.name)
        return _synthetic(conf.name)

    monkeypatch.setattr(budget, "numeric_forecast", fake)
    monkeypatch.setattr(budget, "headroom", lambda: None)
    monkeypatch.setattr(budget, "address_space_room", lambda: None)
    monkeypatch.setattr(budget, "held_bytes", lambda B, amap: 0)
    return asked


def test_the_synthetic_estimates_decrease_along_the_order():
    estimates = [_estimate(c.name) for c in CONFIGURATIONS]
    assert estimates == sorted(estimates, reverse=True) and len(set(estimates)) == 6
    for c in CONFIGURATIONS:
        least, most = SYNTHETIC[c.name]
        assert least * MiB <= _estimate(c.name) <= most * MiB


def _limits_between():
    """(configuration, limit) for each configuration at both ends of the limits that
    choose it: its own estimate, and just under the estimate of the one before."""
    out = []
    for i, c in enumerate(CONFIGURATIONS):
        out.append(pytest.param(c.name, _estimate(c.name), id=f"{c.name}-low"))
        if i:
            upper = _estimate(CONFIGURATIONS[i - 1].name) - 1
            out.append(pytest.param(c.name, upper, id=f"{c.name}-high"))
    return out


@pytest.mark.parametrize("name, limit", _limits_between())
def test_the_first_configuration_that_fits_is_chosen(synthetic, name, limit):
    """Each configuration is chosen where the limit sits between its forecast and the
    one before; it says so in the statistics and, but for full rank (the one asked
    for), in a MemoryBudgetWarning; the answer is accurate in every one."""
    conf = budget.BY_NAME[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F = pastixpy.factorize(A, memory_limit=limit)
    m = F.stats["memory_budget"]
    assert m["chosen"] == name and m["requested"] == "full-rank"
    assert m["effective"] == limit and m["limit"] == limit and m["available"] is None
    assert set(m["forecasts"]) == set(SYNTHETIC)
    for n, f in m["forecasts"].items():
        assert f["fits"] == (f["estimate"] <= limit), (n, f)
    assert F.stats["precision"] == ("mixed" if conf.mixed else "double")
    compression = F.stats["compression"]
    if conf.strategy is None:
        assert compression is None
    else:
        assert compression["strategy"] == conf.strategy and compression["compressed_cblks"] > 0
    budget_warnings = [w for w in caught if issubclass(w.category, MemoryBudgetWarning)]
    if name == "full-rank":
        assert budget_warnings == [] and m["why"].startswith("full-rank needs")
    else:
        assert len(budget_warnings) == 1
        message = str(budget_warnings[0].message)
        assert f"{name} instead of full-rank" in message
        assert "full-rank needs 100.0 MiB" in message and "the fastest that fits" in message
        assert m["why"] in message
    b = A @ np.linspace(1.0, 2.0, A.shape[0])
    x = F.solve(b)
    assert backward_error(A, x, b) < 1e-12


def test_nothing_fits_is_refused_before_anything_is_allocated(synthetic, monkeypatch):
    allocated = []
    storage = _numeric.Storage
    monkeypatch.setattr(_numeric, "Storage", lambda *a, **k: allocated.append(a) or storage(*a))
    limit = _estimate("blr-minmem") - 1
    with pytest.raises(OutOfMemoryError) as e:
        pastixpy.factorize(A, memory_limit=limit, threads=2)
    assert isinstance(e.value, MemoryError)
    assert e.value.needed == _estimate("blr-minmem") and e.value.available == limit
    message = str(e.value)
    assert "no configuration fits the memory budget" in message
    for name in SYNTHETIC:
        assert f"{name} needs" in message
    assert "a memory_limit of at least 30.0 MiB" in message
    assert "threads=1" in message
    assert allocated == []


def test_what_the_user_fixed_is_kept(synthetic):
    # precision="double": mixed precision is not considered, full rank does not fit.
    with pytest.warns(MemoryBudgetWarning, match="mixed ruled out .precision='double'"):
        F = pastixpy.factorize(A, memory_limit=_estimate("mixed"), precision="double")
    m = F.stats["memory_budget"]
    assert m["chosen"] == "blr-jit" and F.stats["precision"] == "double"
    assert all(
        m["ruled_out"][c.name] == "precision='double' was given" for c in CONFIGURATIONS if c.mixed
    )
    # compress=False: never compressed.
    with pytest.warns(MemoryBudgetWarning, match="mixed instead of full-rank"):
        F = pastixpy.factorize(A, memory_limit=_estimate("mixed"), compress=False)
    assert F.stats["memory_budget"]["chosen"] == "mixed" and F.stats["compression"] is None
    with pytest.raises(
        OutOfMemoryError, match=r"blr-jit would fit but is ruled out \(compress=False was given"
    ):
        pastixpy.factorize(A, memory_limit=_estimate("blr-jit"), compress=False)
    # compress= given, its strategy not named: both strategies are considered.
    with pytest.warns(MemoryBudgetWarning, match="blr-minmem instead of blr-jit"):
        F = pastixpy.factorize(A, memory_limit=_estimate("blr-minmem"), compress=1e-8)
    m = F.stats["memory_budget"]
    assert m["requested"] == "blr-jit" and m["chosen"] == "blr-minmem"
    assert {"full-rank", "mixed"} <= set(m["ruled_out"])
    # Its strategy named: that one only.
    with pytest.raises(OutOfMemoryError, match="compress strategy 'jit' was given"):
        pastixpy.factorize(
            A, memory_limit=_estimate("blr-minmem"), compress=("blr", {"strategy": "jit"})
        )
    # precision="mixed": the mixed configurations only.
    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryBudgetWarning)
        F = pastixpy.factorize(A, memory_limit=_estimate("mixed"), precision="mixed")
    assert F.stats["memory_budget"]["chosen"] == "mixed"


def test_the_effective_limit_is_the_smaller_of_the_limit_and_the_headroom(synthetic, monkeypatch):
    room = memory.Headroom(_estimate("mixed+blr-jit"), "a test's limit")
    monkeypatch.setattr(budget, "headroom", lambda: room)
    for limit in ("1GiB", "auto"):
        with pytest.warns(MemoryBudgetWarning, match=r"\(a test's limit\)"):
            F = pastixpy.factorize(A, memory_limit=limit)
        m = F.stats["memory_budget"]
        assert m["chosen"] == "mixed+blr-jit" and m["effective"] == room.bytes
        assert m["available"] == room.bytes and m["available_from"] == "a test's limit"
    with pytest.warns(MemoryBudgetWarning, match=r"\(a test's limit\)"):
        F = pastixpy.factorize(A, memory_limit=_estimate("mixed"))  # the room is smaller
    assert F.stats["memory_budget"]["chosen"] == "mixed+blr-jit"


def test_a_refactorization_keeps_the_configuration(synthetic, monkeypatch):
    calls = []
    choose = budget.choose
    monkeypatch.setattr(budget, "choose", lambda *a, **k: calls.append(1) or choose(*a, **k))
    with pytest.warns(MemoryBudgetWarning):
        F = pastixpy.factorize(A, memory_limit=_estimate("mixed+blr-jit"))
    stats = F.stats["memory_budget"]
    assert calls == [1] and stats["chosen"] == "mixed+blr-jit"
    A2 = (2 * A).tocsc()
    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryBudgetWarning)
        F.refactorize(A2)
    assert calls == [1]  # not chosen again
    assert F.stats["memory_budget"] == stats and F.stats["precision"] == "mixed"
    assert F.stats["compression"]["strategy"] == "jit"
    b = np.ones(A.shape[0])
    assert backward_error(A2, F.solve(b), b) < 1e-12
    # A copy keeps it too.
    G = pickle.loads(pickle.dumps(F))
    G.refactorize(A)
    assert calls == [1] and G.stats["memory_budget"] == stats
    assert G.stats["precision"] == "mixed" and G.stats["compression"]["strategy"] == "jit"


def test_running_out_during_the_factorization_chooses_again(monkeypatch):
    """Where the system refuses an allocation during the run of the configuration
    chosen (tiles that compressed less than estimated), that one is ruled out and the
    budget chooses again: minimal memory after just in time."""
    inner = pastixpy.numeric.backend.factorize_numeric

    def refuse_jit(*args, compression=None, **kwargs):
        if compression is not None and compression.strategy == "jit":
            raise OutOfMemoryError("cannot allocate a tile", needed=2, available=1)
        return inner(*args, compression=compression, **kwargs)

    monkeypatch.setattr(pastixpy.numeric.backend, "factorize_numeric", refuse_jit)
    with pytest.warns(MemoryBudgetWarning, match="blr-minmem instead of blr-jit"):
        F = pastixpy.factorize(A, memory_limit="auto", compress=1e-8, precision="double")
    m = F.stats["memory_budget"]
    assert m["chosen"] == "blr-minmem"
    assert m["ruled_out"]["blr-jit"] == "ran out of memory during its factorization"
    assert any("blr-jit ran out of memory" in r for r in F.stats["retries"])
    b = np.ones(A.shape[0])
    assert backward_error(A, F.solve(b), b) < 1e-12


def test_mixed_precision_that_cannot_be_refined_chooses_again_in_double(synthetic, monkeypatch):
    probe = solve_policy.probe
    monkeypatch.setattr(solve_policy, "probe", lambda s: not s.mixed and probe(s))
    with pytest.warns(pastixpy.PastixWarning, match="chose again in double precision"):
        F = pastixpy.factorize(A, memory_limit=_estimate("full-rank"), precision="mixed")
    m = F.stats["memory_budget"]
    assert m["chosen"] == "full-rank" and F.stats["precision"] == "double"
    assert m["ruled_out"]["mixed"] == "single-precision factors not refined"
    assert "mixed precision fell back to double" in F.stats["retries"]
    # Compression allowed: the fastest double-precision configuration that fits.
    with (
        pytest.warns(MemoryBudgetWarning, match="blr-jit instead of full-rank"),
        pytest.warns(pastixpy.PastixWarning, match="chose again in double precision"),
    ):
        F = pastixpy.factorize(A, memory_limit=_estimate("mixed"), precision="mixed")
    assert F.stats["memory_budget"]["chosen"] == "blr-jit"
    # Where nothing in double precision fits, the budget says so.
    with (
        pytest.warns(pastixpy.PastixWarning, match="chose again in double precision"),
        pytest.raises(OutOfMemoryError, match=r"mixed would fit but is ruled out \(single-p"),
    ):
        pastixpy.factorize(A, memory_limit=_estimate("mixed"), precision="mixed", compress=False)


def test_compressed_factors_that_cannot_be_refined_choose_again_uncompressed(
    synthetic, monkeypatch
):
    probe = solve_policy.probe
    monkeypatch.setattr(solve_policy, "probe", lambda s: not s.compressed and probe(s))
    with pytest.warns(pastixpy.PastixWarning, match="chose again without compression"):
        F = pastixpy.factorize(A, memory_limit=_estimate("full-rank"), compress=1e-8)
    m = F.stats["memory_budget"]
    assert m["chosen"] == "full-rank" and F.stats["compression"] is None
    assert all(m["ruled_out"][n] == "compressed factors not refined" for n in budget.COMPRESSED)
    assert "compression fell back to full rank" in F.stats["retries"]
    b = np.ones(A.shape[0])
    assert backward_error(A, F.solve(b), b) < 1e-12


# ---------------------------------------------------------------------------- real forecasts


def test_the_real_forecasts_and_a_limit_between_them():
    F = pastixpy.factorize(A, memory_limit="auto", threads=1)
    m = F.stats["memory_budget"]
    f = m["forecasts"]
    assert m["chosen"] == "full-rank" and m["held"] > 0
    for c in CONFIGURATIONS:
        assert f[c.name]["least"] <= f[c.name]["estimate"] <= f[c.name]["most"]
        assert (f[c.name]["least"] == f[c.name]["most"]) == (c.strategy is None)
    assert f["mixed"]["estimate"] < f["full-rank"]["estimate"] / 1.8
    limit = m["held"] + f["mixed"]["estimate"]
    with pytest.warns(MemoryBudgetWarning, match="mixed instead of full-rank"):
        G = pastixpy.factorize(A, memory_limit=limit, threads=1)
    assert G.stats["memory_budget"]["chosen"] == "mixed"
    assert G.stats["factor_dtype"] == "float32"
    b = np.ones(A.shape[0])
    assert backward_error(A, G.solve(b), b) < 1e-12
    with pytest.raises(OutOfMemoryError, match="no configuration fits"):
        pastixpy.factorize(A, memory_limit=m["held"] + 1024, threads=1)


def _variant(case):
    """A 12³ Laplacian made into each kind and dtype the budget meets."""
    L = laplacian((12, 12, 12))
    if case == "lu":  # unsymmetric: convection
        n = L.shape[0]
        return (L + sp.diags_array([0.3 * np.ones(n - 1)], offsets=[1])).tocsc(), "lu"
    if case == "complex-symmetric":
        return (L * (1 + 0.2j)).tocsc(), "ldlt"
    if case == "hermitian":
        n = L.shape[0]
        skew = sp.diags_array([0.05j * np.ones(n - 1)], offsets=[1])
        return (L + skew + skew.conj().T).tocsc(), "llt"
    if case == "indefinite":  # a positive diagonal: LLᵀ is tried first, then LDLᵀ
        return (L - 0.5 * sp.eye_array(L.shape[0])).tocsc(), "ldlt"
    return L.astype(np.float32), "llt"


@pytest.mark.parametrize("case", ["lu", "complex-symmetric", "hermitian", "indefinite", "float32"])
def test_each_kind_and_dtype_under_a_limit_between_full_rank_and_mixed(case):
    """With real forecasts, a limit under full rank's: mixed precision (single-precision
    factors of the matrix's kind, refined to its precision) for double-precision
    matrices, accurate against the residual computed here; a single-precision matrix
    has no mixed configuration and is refused, saying so."""
    M, kind = _variant(case)
    F = pastixpy.factorize(M, memory_limit="auto", threads=1)
    m = F.stats["memory_budget"]
    assert F.kind == kind and m["chosen"] == "full-rank"
    limit = m["held"] + m["forecasts"]["full-rank"]["estimate"] - 1
    b = M @ np.linspace(1.0, 2.0, M.shape[0]).astype(M.dtype)
    if case == "float32":
        assert m["ruled_out"]["mixed"] == "A is in single precision: its factors are single already"
        with pytest.raises(OutOfMemoryError, match="mixed ruled out .A is in single precision"):
            pastixpy.factorize(M, memory_limit=limit, threads=1, compress=False)
        return
    with pytest.warns(MemoryBudgetWarning, match="mixed instead of full-rank"):
        G = pastixpy.factorize(M, memory_limit=limit, threads=1)
    assert G.stats["memory_budget"]["chosen"] == "mixed" and G.kind == kind
    if case == "indefinite":  # chosen again for the LDLᵀ try
        assert G.stats["retries"] == ["not positive definite: ldlt"]
    assert G.stats["factor_dtype"] == ("complex64" if M.dtype.kind == "c" else "float32")
    x = G.solve(b)
    assert x.dtype == M.dtype and backward_error(M, x, b) < 1e-12


def test_the_command_line_takes_a_memory_limit(capsys):
    assert main(["solve", "--example", "lap3d:12", "--memory-limit", "1GiB", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["memory_budget"]["chosen"] == "full-rank"
    assert stats["memory_budget"]["limit"] == 2**30
    assert main(["solve", "--example", "lap3d:12", "--memory-limit", "1 GigaByte"]) == 1
    assert "memory_limit='1 GigaByte' is not a size" in capsys.readouterr().err


_ULIMIT = """
import json, resource, warnings
import numpy as np
import pastixpy
from pastixpy import budget
from pastixpy.compression import CLUSTER_SIZE
from pastixpy.gallery import laplacian
from pastixpy.runtime import map_blas_buffers

A = laplacian((50, 50, 50))
an = pastixpy.analyze(A, clusters=CLUSTER_SIZE)
map_blas_buffers(True)  # the calling thread's buffers, counted in the mapped size below

# The forecasts, without factoring: the budget's choice, then stop.
class Stop(Exception):
    pass

seen = {}
choose = budget.choose

def dry(*args, **kwargs):
    seen["choice"] = choose(*args, **kwargs)
    raise Stop

budget.choose = dry
try:
    pastixpy.factorize(A, analysis=an, memory_limit="auto", threads=1)
except Stop:
    pass
budget.choose = choose
stats = seen["choice"].stats
f = stats["forecasts"]
# Room for the compressed configurations, not for mixed precision (nor full rank),
# whether or not the preprocessed matrix and the assembly map made anew (what the budget
# calls held) reuse memory the process has mapped already.
room = f["mixed+blr-minmem"]["estimate"] + stats["held"] + 2**21
assert room < f["mixed"]["estimate"], (room, f)
mapped = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (mapped + room, resource.getrlimit(resource.RLIMIT_AS)[1]))
out = {"forecasts": f}
try:
    pastixpy.factorize(A, analysis=an, threads=1)
    out["plain"] = None
except pastixpy.OutOfMemoryError as exc:
    out["plain"] = str(exc)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    F = pastixpy.factorize(A, analysis=an, memory_limit="auto", threads=1)
    b = np.ones(A.shape[0])
    x = F.solve(b)
r = b - A @ x
out.update(
    chosen=F.stats["memory_budget"]["chosen"],
    available_from=F.stats["memory_budget"]["available_from"],
    berr=float(np.abs(r).max() / (12 * np.abs(x).max() + 1)),
    warnings=[str(w.message) for w in caught],
)
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")
def test_under_ulimit_a_problem_that_fits_only_compressed(tmp_path):
    """Under an address-space limit with room for the compressed factorization of a 3D
    Laplacian but not for full rank nor mixed precision: factorize alone is refused
    (OutOfMemoryError), with memory_limit="auto" (the limit read from the system) a
    compressed configuration is chosen and solves."""
    # One thread: the room is measured against the memory the process has mapped after
    # one analysis, and a nested dissection split over a forked child leaves less heap
    # behind for the factorization to reuse than one METIS run does.
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(pastixpy.__file__).parents[1]),
        "OMP_NUM_THREADS": "1",
    }
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_ULIMIT)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["plain"] is not None and "ulimit -v" in r["plain"], r
    assert r["chosen"] in ("mixed+blr-jit", "mixed+blr-minmem"), r
    assert "ulimit -v" in r["available_from"], r
    assert any("instead of full-rank" in w for w in r["warnings"]), r
    assert r["berr"] < 1e-12, r
