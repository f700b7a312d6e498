"""Solver benchmark suite: pastixpy against scipy, CHOLMOD, MUMPS, PARDISO and rslab.

Usage::

    PYTHONPATH=. python benchmarks/run.py [--quick | --small]
        [--solvers pastixpy,spsolve,scipy,cholmod,mumps,pardiso,rslab,rslab-spsolve]
        [--threads 1,2] [--precision double,mixed] [--compress blr1e-8,mm1e-8,pc1e-4]
        [--runs 3] [--problems lap3d,helmholtz,...]
        [--json out.json] [--markdown out.md] [--timeout 1800] [--coretype auto]

For each problem, solver and thread count: analysis, factorization and solve
seconds (1 and 16 right-hand sides), factor entries, peak memory above the
baseline (up to the end of the factorization, and over the whole run), backward
error, GFLOP/s (pastixpy's LLᵀ flop count of the problem at that thread count
over each solver's factorization time) and ratios to pastixpy, medians of
``--runs`` runs. Every run is a fresh process (``worker.py``), so the peak
memory is that run's own. Solvers that are not installed are reported as such.
``--quick`` runs small problems, once each, in one to two minutes. ``--small`` runs
the shared matrices (the singular ones aside) and small generated problems, where
fixed costs decide. After each problem, the solvers are ranked by total time
(analysis + factorization + one solve) at each thread count, the fastest named.
``--precision double,mixed`` runs pastixpy in each precision (``pastixpy:mixed`` in
the table) and prints, per problem and thread count, each precision against double
and against CHOLMOD (numeric factorization, factorization + one solve, factor and
peak memory). ``--compress`` adds pastixpy with block low-rank factors, one row per
variant (``blrTOL`` just-in-time at TOL, solves refined by GMRES; ``mmTOL`` minimal
memory; ``pcTOL`` the factors as scipy GMRES's preconditioner; ``mixed+blrTOL``
single-precision tiles; ``pastixpy+blr1e-8`` in the table); ``benchmarks/blr.py``
prints their ratios to our full rank and to CHOLMOD. ``--coretype`` names the OpenBLAS
kernels every worker's libraries run (default: the CPU's best, so that an OpenBLAS
older than the CPU does not fall back to generic ones). See docs/performance.md for
the columns.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
from problems import STRUCTURES, all_problems, select, small_problems
from solvers import ONE_CALL, PRECISIONS, SOLVERS, availability, base_name, not_applicable
from threadpoolctl import threadpool_info, threadpool_limits
from worker import MARK

import pastixpy

HERE = Path(__file__).resolve().parent
#: Variables that select a slower OpenBLAS kernel or cache model; the timed runs go without.
SLOW_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
MiB = 2**20


# ------------------------------------------------------------------ environment and machine


def reexec_without_slow_env():
    """Re-execute this script with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset, once."""
    found = {k: os.environ[k] for k in SLOW_ENV if k in os.environ}
    if not found:
        return
    env = {k: v for k, v in os.environ.items() if k not in SLOW_ENV}
    env["PASTIXPY_BENCH_UNSET"] = json.dumps(found)
    shown = ", ".join(f"{k}={v}" for k, v in found.items())
    print(f"re-executing with {shown} unset for the timed runs", file=sys.stderr, flush=True)
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


#: The OpenBLAS kernel set a worker's libraries are told to use (``OPENBLAS_CORETYPE``):
#: set by ``--coretype`` (default: :func:`cpu_coretype`). An OpenBLAS older than the CPU
#: does not recognise it and falls back to generic kernels (Debian 12's 0.3.21, under
#: CHOLMOD and MUMPS, runs "Prescott" kernels on a recent Xeon: its 40³ factorization
#: 3.5× slower than on its own SkylakeX kernels), which would make their columns a
#: measure of the library's age, not of the solver.
WORKER_ENV = {}


def cpu_coretype():
    """The best OpenBLAS kernel set this CPU runs, from /proc/cpuinfo's flags:
    ``SkylakeX`` (AVX-512 F/CD/BW/DQ/VL), ``Haswell`` (AVX2 and FMA), or None (leave it
    to OpenBLAS's own detection; also off Linux)."""
    try:
        with open("/proc/cpuinfo") as fh:
            flags = next((ln.split(":", 1)[1].split() for ln in fh if ln.startswith("flags")), [])
    except OSError:
        return None
    if {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"} <= set(flags):
        return "SkylakeX"
    if {"avx2", "fma"} <= set(flags):
        return "Haswell"
    return None


def blas_kernels():
    """The BLAS libraries threadpoolctl sees here: internal_api, architecture, version."""
    return [
        {k: d.get(k) for k in ("internal_api", "architecture", "version", "filepath")}
        for d in threadpool_info()
        if d.get("user_api") == "blas"
    ]


def dgemm_gflops(threads, n=2000, runs=3):
    """Median GFLOP/s of numpy's float64 matmul n x n at this BLAS thread count."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    with threadpool_limits(limits=threads):
        a @ b  # warm-up: thread pool and page faults
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t)
    return 2 * n**3 / statistics.median(times) / 1e9


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# ------------------------------------------------------------------ running the workers


def spawn(matrix, solver, threads, structure, timeout, **options):
    """One run in a fresh process; returns the worker's result dict (status "ok" or not).
    ``options``: the worker's optional keys (``memory_limit``, ``rhs``)."""
    env = {k: v for k, v in os.environ.items() if k not in SLOW_ENV}
    env.update({k: str(threads) for k in THREAD_ENV})
    env.update(WORKER_ENV)
    spec = {"matrix": str(matrix), "solver": solver, "threads": threads, "structure": structure}
    spec.update({k: v for k, v in options.items() if v is not None})
    cmd = [sys.executable, str(HERE / "worker.py"), json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "error": f"timeout: over {timeout} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"status": "error", "error": f"exit {proc.returncode}: {tail[0][:200]}"}


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(runs, ref_runs):
    """Medians over the runs of one solver, and per-run ratios to pastixpy's runs."""
    ok = [r for r in runs if r["status"] == "ok"]
    if not ok:
        return None
    sec = {k: median([r["seconds"][k] for r in ok]) for k in ok[0]["seconds"]}
    out = {
        "seconds": sec,
        "nnz_factor": median([r["nnz_factor"] for r in ok]),
        "factor_bytes": median([r["factor_bytes"] for r in ok]),
        "peak_bytes": median([r["peak_bytes"] for r in ok]),
        "factor_peak_bytes": median([r.get("factor_peak_bytes") for r in ok]),
        "backward_error": max(r["backward_error"] for r in ok),
        "kind": ok[0]["kind"],
        "ordering": ok[0]["ordering"],
        "runs_ok": len(ok),
        "total": median([total(r) for r in ok]),
    }
    if ref_runs is not None:
        both = zip(runs, ref_runs, strict=True)
        pairs = [(r, p) for r, p in both if r["status"] == p["status"] == "ok"]
        out["factor_ratio"] = median(
            [r["seconds"]["factor"] / p["seconds"]["factor"] for r, p in pairs]
        )
        out["total_ratio"] = median([total(r) / total(p) for r, p in pairs])
    return out


def total(r):
    """Analysis + factorization (with its check solve) + one solve, in seconds."""
    s = r["seconds"]
    return (s["analysis"] or 0.0) + s["factor"] + (s.get("verify") or 0.0) + s["solve1"]


# ------------------------------------------------------------------ the table

HEADER = (
    "| problem | n | solver | thr | analysis s | factor s | solve s (1) | solve s (16) "
    "| total s | nnz(L) | factor peak MiB | peak MiB | factor MiB | backward err | GFLOP/s "
    "| factor / pastixpy | total / pastixpy | note |\n"
    "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
)


def fmt(x, spec):
    return "—" if x is None else format(x, spec)


def row(problem, n, solver, threads, summary, flops, note):
    """One Markdown table row; ``summary`` None gives a row with the note only."""
    if summary is None:
        return f"| {problem} | {n:,} | {solver} | {threads} |" + " |" * 13 + f" {note} |"
    sec = summary["seconds"]
    whole = base_name(solver) in ONE_CALL  # one call per solve: no factorization apart
    rate = flops / sec["factor"] / 1e9 if flops and sec["factor"] and not whole else None
    peak, factor_peak = summary["peak_bytes"], summary["factor_peak_bytes"]
    cells = [
        problem,
        f"{n:,}",
        solver,
        str(threads),
        fmt(sec["analysis"], ".3f"),
        fmt(sec["factor"], ".3f"),
        fmt(sec["solve1"], ".3f"),
        fmt(sec["solve16"], ".3f"),
        fmt(summary["total"], ".4f"),
        fmt(summary["nnz_factor"], ",.0f"),
        fmt(None if factor_peak is None else factor_peak / MiB, ".0f"),
        fmt(None if peak is None else peak / MiB, ".0f"),
        fmt(summary["factor_bytes"] / MiB, ".0f"),
        fmt(summary["backward_error"], ".1e"),
        fmt(rate, ".2f"),
        fmt(None if whole else summary.get("factor_ratio"), ".2f"),
        fmt(summary.get("total_ratio"), ".2f"),
        note,
    ]
    return "| " + " | ".join(cells) + " |"


class Report:
    """Lines printed as they come and kept for --markdown."""

    def __init__(self):
        self.lines = []

    def __call__(self, line=""):
        print(line, flush=True)
        self.lines.append(line)


def blas_by_solver(records):
    """One line: the BLAS libraries (kernel, version, threads) each solver's runs had loaded."""
    seen = {}
    for rec in records:
        for res in rec["results"]:
            for run in res.get("runs", []):
                for b in run.get("blas", []):
                    text = f"{b['internal_api']} {b['version']} {b['architecture'] or ''}".strip()
                    seen.setdefault(res["solver"], set()).add(text)
    parts = [f"{s}: {', '.join(sorted(v))}" for s, v in seen.items()]
    return "BLAS loaded in the runs (threadpoolctl): " + "; ".join(parts) + "."


# ------------------------------------------------------------------ driver


def run_problem(problem, solvers, threads, runs, timeout, workdir, report):
    """Build one matrix, run every solver on it, print its rows; returns its JSON record."""
    t = time.perf_counter()
    A = sp.csc_array(problem.build())
    build_s = time.perf_counter() - t
    n = A.shape[0]
    path = Path(workdir) / f"{problem.name}.npz"
    sp.save_npz(path, A, compressed=False)
    record = {
        "name": problem.name,
        "label": problem.label,
        "structure": problem.structure,
        "n": n,
        "nnz": int(A.nnz),
        "dtype": str(A.dtype),
        "build_seconds": build_s,
        "results": [],
    }
    skips, active = {}, []
    for name, (installed, _) in solvers.items():
        reason = None if installed else "not installed"
        reason = reason or not_applicable(name, problem.structure)
        if reason is None and name == "scipy":
            reason = problem.splu_skip(n)
        if reason:
            skips[name] = reason
        else:
            active.append(name)
    flops = None
    if "pastixpy" not in active and problem.structure == "spd":
        # pastixpy's flop count for the rates: its analysis alone gives it for LLᵀ
        flops = float(pastixpy.analyze(A, kind="llt").stats["flops"])
    del A  # the workers load the file
    if "pastixpy" not in active and problem.structure != "spd" and "pastixpy" in solvers:
        # LU / LDLᵀ analyse the matrix after row matching or 2x2 pairing: one pastixpy run
        flops = spawn(path, "pastixpy", min(threads), problem.structure, timeout).get("flops")
    raw = {(s, k): [] for s in active for k in threads}
    for i in range(runs):
        for k in threads:
            for name in active:  # pastixpy first: its ratio partner runs right before
                if raw[name, k] and raw[name, k][-1]["status"] == "timeout":
                    raw[name, k].append(raw[name, k][-1])
                    continue
                t = time.perf_counter()
                raw[name, k].append(spawn(path, name, k, problem.structure, timeout))
                status = raw[name, k][-1]["status"]
                print(
                    f"  {problem.name} {name} threads={k} run {i + 1}/{runs}: {status}, "
                    f"{time.perf_counter() - t:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
    path.unlink()
    # pastixpy's flops at each thread count: with two cores its analysis may keep a
    # second METIS ordering (see docs/analysis.md), so the counts can differ.
    by_threads = {
        k: next((r["flops"] for r in raw.get(("pastixpy", k), []) if r["status"] == "ok"), flops)
        for k in threads
    }
    flops = flops or next((f for f in by_threads.values() if f), None)
    record["flops_pastixpy"] = flops
    record["flops_pastixpy_by_threads"] = by_threads
    for name in solvers:
        if name in skips:
            report(row(problem.label, n, name, "—", None, None, skips[name]))
            record["results"].append({"solver": name, "status": "skipped", "note": skips[name]})
            continue
        for k in threads:
            ref = raw.get(("pastixpy", k)) if name != "pastixpy" else None
            summary = summarize(raw[name, k], ref)
            errors = sorted({r["error"] for r in raw[name, k] if r["status"] != "ok"})
            notes = [f"{summary['kind']}, {summary['ordering']}" if summary else ""] + errors
            first = next((r for r in raw[name, k] if r["status"] == "ok"), {})
            if first.get("perturbed_pivots"):
                notes.append(f"{first['perturbed_pivots']} perturbed pivot(s)")
            if first.get("refinement_steps"):
                notes.append(f"{first['refinement_steps']} refinement step(s)")
            note = "; ".join(x for x in notes if x)[:160]
            report(row(problem.label, n, name, k, summary, by_threads[k] or flops, note))
            record["results"].append(
                {"solver": name, "threads": k, "summary": summary, "runs": raw[name, k]}
            )
    record["fastest"] = fastest(record["results"], threads)
    for k, ranking in record["fastest"].items():
        if ranking:
            report(
                f"| {problem.label} | | **fastest in total at {k} thread{'s' * (k > 1)}** | | "
                + ", ".join(f"{name} {t:.4g} s" for name, t in ranking)
                + " |" * 13
            )
    record["precision_ratios"] = precision_ratios(raw, active, threads)
    for line in precision_lines(problem.label, record["precision_ratios"]):
        report(line)
    return record


def fastest(results, threads):
    """Per thread count, the solvers ranked by median total time: [(name, seconds), ...]."""
    out = {}
    for k in threads:
        timed = [
            (res["solver"], res["summary"]["total"])
            for res in results
            if res.get("threads") == k and res.get("summary") and res["summary"]["total"]
        ]
        out[k] = sorted(timed, key=lambda item: item[1])
    return out


def precision_ratios(raw, active, threads):
    """Each pastixpy precision against double and against CHOLMOD, pair by pair (the runs
    of one round came one after another): medians of the per-run ratios."""
    out = []
    for name in active:
        if not name.startswith("pastixpy:"):
            continue
        for k in threads:
            mine = raw[name, k]
            entry = {"solver": name, "threads": k}
            for other in ("pastixpy", "cholmod"):
                if (other, k) not in raw:
                    continue
                pairs = [
                    (r, o)
                    for r, o in zip(mine, raw[other, k], strict=True)
                    if r["status"] == o["status"] == "ok"
                ]
                if not pairs:
                    continue
                entry[other] = {
                    "factor": median(
                        [r["seconds"]["factor"] / o["seconds"]["factor"] for r, o in pairs]
                    ),
                    "factor_solve": median([fs(r) / fs(o) for r, o in pairs]),
                    "factor_bytes": median(
                        [r["factor_bytes"] / o["factor_bytes"] for r, o in pairs]
                    ),
                    "peak": median(
                        [r["peak_bytes"] / o["peak_bytes"] for r, o in pairs if o["peak_bytes"]]
                    ),
                    "solve1_peak": median(
                        [
                            r["solve1_peak_bytes"] / o["solve1_peak_bytes"]
                            for r, o in pairs
                            if o.get("solve1_peak_bytes")
                        ]
                    ),
                }
            entry["refinement_steps"] = median(
                [r.get("refinement_steps") for r in mine if r["status"] == "ok"]
            )
            entry["backward_error"] = max(
                (r["backward_error"] for r in mine if r["status"] == "ok"), default=None
            )
            entry["fallback"] = next(
                (r.get("precision_fallback") for r in mine if r.get("precision_fallback")), None
            )
            out.append(entry)
    return out


def fs(r):
    """Numeric factorization, its check solve (pastixpy: mixed precision, perturbed
    pivots) and one solve with its refinement, in seconds."""
    s = r["seconds"]
    return s["factor"] + (s.get("verify") or 0.0) + s["solve1"]


def precision_lines(label, ratios):
    """The lines printed under a problem's rows for :func:`precision_ratios`."""
    lines = []
    for e in ratios:
        parts = []
        for other, title in (("pastixpy", "double"), ("cholmod", "CHOLMOD")):
            if other in e:
                r = e[other]
                parts.append(
                    f"vs {title}: factor {fmt(r['factor'], '.2f')}, whole solve "
                    f"{fmt(r['factor_solve'], '.2f')}, factor bytes "
                    f"{fmt(r['factor_bytes'], '.2f')}, peak through one solve "
                    f"{fmt(r['solve1_peak'], '.2f')}, peak with the 16-RHS solve "
                    f"{fmt(r['peak'], '.2f')}"
                )
        berr = fmt(e["backward_error"], ".1e")
        extra = f"; {fmt(e['refinement_steps'], '.0f')} refinement step(s), berr {berr}"
        if e["fallback"]:
            extra += f"; fell back: {e['fallback']}"
        lines.append(
            f"\n*{label}, {e['solver']}, {e['threads']} thread(s)*: " + "; ".join(parts) + extra
        )
    return lines


def compressed_name(variant):
    """The solver name of a ``--compress`` variant (``blr1e-8`` → ``pastixpy+blr1e-8``,
    ``mixed+blr1e-8`` → ``pastixpy:mixed+blr1e-8``), checked."""
    precision, _, compress = variant.rpartition("+")
    mode = next((m for m in ("blr", "mm", "pc") if compress.startswith(m)), None)
    try:
        tol = float(compress[len(mode) :]) if mode else None
    except ValueError:
        tol = None
    if tol is None or not 0 < tol < 1 or precision not in ("", *PRECISIONS):
        raise SystemExit(
            f"unknown --compress variant {variant!r}: give blrTOL, mmTOL or pcTOL "
            "(TOL in (0, 1)), optionally after a precision (mixed+blr1e-8)"
        )
    return f"pastixpy:{precision}+{compress}" if precision else f"pastixpy+{compress}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small problems, one run: 1-2 minutes")
    p.add_argument(
        "--small",
        action="store_true",
        help="the shared matrices and small generated problems (fixed costs decide)",
    )
    p.add_argument("--solvers", default=",".join(SOLVERS), help="comma-separated solver names")
    p.add_argument("--threads", default="1,2", help="comma-separated BLAS thread counts")
    p.add_argument("--runs", type=int, help="runs per measurement (default 3; 1 with --quick)")
    p.add_argument("--problems", help="comma-separated problem names or prefixes")
    p.add_argument("--json", help="write the results to this JSON file")
    p.add_argument("--markdown", help="write the table to this Markdown file")
    p.add_argument("--timeout", type=float, help="seconds before a run is abandoned")
    p.add_argument(
        "--precision",
        default="double",
        help="pastixpy's precisions, comma-separated: double, mixed, single (default double)",
    )
    p.add_argument(
        "--compress",
        default="",
        help="pastixpy's block low-rank variants, comma-separated: blrTOL, mmTOL, pcTOL, "
        "mixed+blrTOL (e.g. blr1e-8,pc1e-4; default none)",
    )
    p.add_argument(
        "--coretype",
        default="auto",
        help="OPENBLAS_CORETYPE for every worker's OpenBLAS: auto (the CPU's best, from its "
        "flags: SkylakeX or Haswell), none (each library's own detection), or a name",
    )
    args = p.parse_args()
    reexec_without_slow_env()
    coretype = cpu_coretype() if args.coretype == "auto" else args.coretype
    if coretype and coretype != "none":
        WORKER_ENV["OPENBLAS_CORETYPE"] = coretype

    runs = args.runs or (1 if args.quick else 3)
    timeout = args.timeout or (120 if args.quick else 1800)
    threads = [int(t) for t in args.threads.split(",")]
    names = [s.strip() for s in args.solvers.split(",") if s.strip()]
    unknown = [s for s in names if base_name(s) not in SOLVERS or ":" in s]
    if unknown:
        raise SystemExit(f"unknown solver(s) {', '.join(unknown)}; known: {', '.join(SOLVERS)}")
    names = sorted(names, key=list(SOLVERS).index)  # pastixpy first
    precisions = [q.strip() for q in args.precision.split(",") if q.strip()]
    bad = [q for q in precisions if q not in PRECISIONS]
    if bad:
        raise SystemExit(f"unknown precision(s) {', '.join(bad)}; known: {', '.join(PRECISIONS)}")
    variants = [compressed_name(v.strip()) for v in args.compress.split(",") if v.strip()]
    if "pastixpy" in names:
        at = names.index("pastixpy") + 1
        names[at:at] = [f"pastixpy:{q}" for q in precisions if q != "double"] + variants
    solvers = {s: availability(s) for s in names}
    if args.small:
        problems, missing = small_problems(), []
    else:
        problems, missing = all_problems(args.quick)
    problems = select(problems, [w for w in (args.problems or "").split(",") if w])

    report = Report()
    unset = json.loads(os.environ.get("PASTIXPY_BENCH_UNSET", "{}"))
    gemm = {k: dgemm_gflops(k) for k in sorted(set(threads) | {1, 2})}
    kernels = blas_kernels()
    kernel_text = "; ".join(
        f"{d['internal_api']} {d['version']} {d['architecture']}" for d in kernels
    )
    mode = "small" if args.small else "quick" if args.quick else "full"
    report(f"# Solver benchmark ({mode}, median of {runs} run{'s' * (runs > 1)})\n")
    report(
        f"Machine: {cpu_model()}, {os.cpu_count()} cores; dgemm 2000² "
        + ", ".join(f"{v:.1f} GFLOP/s at {k} thread{'s' * (k > 1)}" for k, v in gemm.items())
        + f"; BLAS (threadpoolctl): {kernel_text}"
        + (f"; unset for the runs: {', '.join(unset)}" if unset else "")
        + (f"; workers' OPENBLAS_CORETYPE={WORKER_ENV['OPENBLAS_CORETYPE']}" if WORKER_ENV else "")
        + ".\n"
    )
    report(
        "Solvers: "
        + "; ".join(f"{s} {ver}" if ok else f"{s}: {ver}" for s, (ok, ver) in solvers.items())
        + ".\n"
    )
    if missing:
        report(f"Real matrices not found (skipped): {', '.join(missing)}.\n")
    report(HEADER)
    records = []
    with tempfile.TemporaryDirectory(prefix="pastixpy-bench-") as workdir:
        for problem in problems:
            records.append(run_problem(problem, solvers, threads, runs, timeout, workdir, report))
    report("\n" + blas_by_solver(records))
    structures = sorted({p.structure for p in problems})
    report("Structures: " + "; ".join(f"{s} = {STRUCTURES[s]}" for s in structures) + ".")

    if args.markdown:
        Path(args.markdown).write_text("\n".join(report.lines) + "\n")
    if args.json:
        out = {
            "mode": mode,
            "runs": runs,
            "threads": threads,
            "machine": {
                "cpu": cpu_model(),
                "cores": os.cpu_count(),
                "dgemm_gflops": gemm,
                "blas": kernels,
                "unset_env": unset,
                "worker_env": dict(WORKER_ENV),
                "python": platform.python_version(),
                "numpy": np.__version__,
                "scipy": scipy.__version__,
            },
            "solvers": {s: {"installed": ok, "version": v} for s, (ok, v) in solvers.items()},
            "missing_matrices": missing,
            "problems": records,
        }
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
