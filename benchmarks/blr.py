"""Block low-rank compression against our full rank and CHOLMOD, in the same run.

Usage::

    PYTHONPATH=. python benchmarks/blr.py [--problems lap3d-60,lap3d-80] [--threads 1,2]
        [--runs 3] [--variants blr1e-8,pc1e-4,mixed+blr1e-8] [--json out.json]
        [--memory-limit GIB] [--rhs 16]

For each problem and thread count, in fresh processes (``worker.py``, medians of
``--runs``): pastixpy full rank, each compressed variant, and CHOLMOD (SPD problems,
when installed). Variants: ``blrTOL`` factors compressed at TOL (relative to ‖B‖_F),
solves refined by GMRES to a backward error of 1e-12; ``pcTOL`` the compressed factors
(no refinement) as the preconditioner of scipy's GMRES to a relative residual of 1e-10;
``mmTOL`` as ``blrTOL`` with the minimal-memory strategy; ``mixed+blrTOL``
single-precision compressed factors refined to double. Columns:

- numeric factorization seconds and its ratio to our full rank's (same thread count);
- factorization + one solve (analysis included, as ``total`` in run.py) and its ratio
  to our full rank's and to CHOLMOD's;
- stored factor bytes over double full rank's (``stored``), peak memory of the run over
  full rank's;
- (in the JSON) ``numeric_ratio``: numeric factorization + one solve (its refinement or
  GMRES included) over full rank's, the analysis left out;
- the 1-right-hand-side solve's GMRES iterations (refinement steps or scipy's), and
  the worst backward error of the 1- and 16-right-hand-side solves.

``--growth 40,60,80,100`` instead runs the first variant alone on 3D Laplacians of
those sizes (one run each) and prints the stored bytes against n, full rank's and the
compressed factors', with the slopes of their logarithms (full rank's is about 4/3 for
a 3D Laplacian: ranks that grow slowly make the compressed one's smaller).

``--memory-limit`` caps each run's address space (``resource.setrlimit``): a
variant that needs more fails as on a smaller machine (the scale test: minimal memory
against full rank); ``--rhs 0`` leaves the many-right-hand-sides solve out.

The ratios are medians of per-run ratios (runs paired in order), so that the shared
machine's noise mostly cancels. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for the
workers (run.py does the same).
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from problems import Problem, all_problems, select
from run import median, reexec_without_slow_env, spawn
from solvers import availability

from pastixpy.gallery import PROBLEMS

HERE = Path(__file__).resolve().parent
MiB = 2**20


def generated(name):
    """A problem of the gallery named NAME-SIZE (``lap3d-100``, ``helmholtz3d-40``,
    ``elast3d-20``), for sizes run.py's list does not have."""
    base, _, size = name.rpartition("-")
    if base not in PROBLEMS or not size.isdigit():
        return None
    p = PROBLEMS[base]
    return Problem(
        name,
        f"{p.description.split(',')[0]} {size}",
        p.structure,
        lambda: p(int(size)),
        3 if "3d" in base else 2,
    )


def factor_plus_solve(r):
    s = r["seconds"]
    return (s["analysis"] or 0.0) + s["factor"] + (s.get("verify") or 0.0) + s["solve1"]


def paired(runs, refs, key):
    """Median of key(run) / key(ref) over the runs paired in order (both ok)."""
    pairs = [(r, p) for r, p in zip(runs, refs, strict=True) if r["status"] == p["status"] == "ok"]
    return median([key(r) / key(p) for r, p in pairs]) if pairs else None


def fmt(x, spec):
    return "—" if x is None else format(x, spec)


HEADER = (
    "| problem | thr | solver | factor s | / full | fact+solve s | / full | / CHOLMOD | stored "
    "| peak MiB | peak / full | GMRES its | mean rank | backward err |\n"
    "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def main():
    reexec_without_slow_env()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--problems", default="lap3d-60,lap3d-80")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--variants", default="blr1e-8,pc1e-4,mixed+blr1e-8")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--json")
    ap.add_argument("--no-cholmod", action="store_true", help="leave CHOLMOD out")
    ap.add_argument("--memory-limit", type=float, help="GiB of address space per run")
    ap.add_argument("--rhs", type=int, default=16, help="columns of the many-RHS solve")
    ap.add_argument("--growth", help="3D Laplacian sizes: stored bytes against n")
    args = ap.parse_args()
    if args.growth:
        return growth([int(v) for v in args.growth.split(",")], args)
    problems, _ = all_problems()
    wanted = [w for w in args.problems.split(",") if w]
    extra = [generated(w) for w in wanted if not any(p.name.startswith(w) for p in problems)]
    problems += [p for p in extra if p is not None]
    chosen = select(problems, wanted)
    threads = [int(t) for t in args.threads.split(",")]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    names = ["pastixpy"] + [
        f"pastixpy:{v.split('+')[0]}+{v.split('+')[1]}" if "+" in v else f"pastixpy+{v}"
        for v in variants
    ]
    have_cholmod = availability("cholmod")[0] and not args.no_cholmod
    limit = int(args.memory_limit * 2**30) if args.memory_limit else None
    records = []
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory() as work:
        for problem in chosen:
            path = Path(work) / f"{problem.name}.npz"
            A = sp.csc_matrix(problem.build())
            sp.save_npz(path, A)
            solvers = names + (["cholmod"] if have_cholmod and problem.structure == "spd" else [])
            for t in threads:
                raw = {name: [] for name in solvers}
                for _ in range(args.runs):
                    # Interleaved: each round runs every solver once, so that a slow spell
                    # of the machine hits them all.
                    for name in solvers:
                        raw[name].append(
                            spawn(
                                path,
                                name,
                                t,
                                problem.structure,
                                args.timeout,
                                memory_limit=limit,
                                rhs=args.rhs,
                            )
                        )
                full = raw["pastixpy"]
                chol = raw.get("cholmod")
                for name in solvers:
                    runs = raw[name]
                    ok = [r for r in runs if r["status"] == "ok"]
                    if not ok:
                        print(f"| {problem.label} | {t} | {name} | {runs[0].get('error')} |")
                        continue
                    full_bytes = median([r.get("full_rank_bytes") or r["factor_bytes"] for r in ok])
                    # Our full rank's stored bytes; where it did not run (a memory limit),
                    # the full-rank size the compressed run reports.
                    ref_bytes = (
                        median([r["factor_bytes"] for r in full if r["status"] == "ok"])
                        or full_bytes
                    )
                    rec = {
                        "problem": problem.name,
                        "threads": t,
                        "solver": name,
                        "factor_s": median([r["seconds"]["factor"] for r in ok]),
                        "analysis_s": median([r["seconds"]["analysis"] for r in ok]),
                        "verify_s": median([r["seconds"].get("verify") or 0.0 for r in ok]),
                        "solve1_s": median([r["seconds"]["solve1"] for r in ok]),
                        "numeric_ratio": paired(
                            runs, full, lambda r: r["seconds"]["factor"] + r["seconds"]["solve1"]
                        ),
                        "factor_ratio": paired(runs, full, lambda r: r["seconds"]["factor"]),
                        "total_s": median([factor_plus_solve(r) for r in ok]),
                        "total_ratio": paired(runs, full, factor_plus_solve),
                        "cholmod_ratio": paired(runs, chol, factor_plus_solve) if chol else None,
                        "stored": median([r["factor_bytes"] for r in ok]) / ref_bytes
                        if name != "cholmod"
                        else None,
                        "peak_mib": median([r["peak_bytes"] for r in ok]) / MiB,
                        "peak_ratio": paired(runs, full, lambda r: r["peak_bytes"]),
                        "gmres": median([r.get("gmres_iterations") for r in ok]),
                        "mean_rank": median([r.get("mean_rank") for r in ok]),
                        "berr": max(r["backward_error"] for r in ok),
                        "full_rank_bytes": full_bytes,
                        "runs_ok": len(ok),
                    }
                    records.append(rec)
                    print(
                        f"| {problem.label} | {t} | {name} | {fmt(rec['factor_s'], '.2f')} "
                        f"| {fmt(rec['factor_ratio'], '.2f')} | {fmt(rec['total_s'], '.2f')} "
                        f"| {fmt(rec['total_ratio'], '.2f')} | {fmt(rec['cholmod_ratio'], '.2f')} "
                        f"| {fmt(rec['stored'], '.3f')} | {fmt(rec['peak_mib'], '.0f')} "
                        f"| {fmt(rec['peak_ratio'], '.2f')} | {fmt(rec['gmres'], '.0f')} "
                        f"| {fmt(rec['mean_rank'], '.1f')} | {fmt(rec['berr'], '.1e')} |",
                        flush=True,
                    )
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))


def growth(sizes, args):
    """Stored factor bytes of full rank and of the first variant against n (3D
    Laplacians), and the log-log slopes."""
    variant = [v.strip() for v in args.variants.split(",") if v.strip()][0]
    name = f"pastixpy+{variant}" if "+" not in variant else "pastixpy:" + variant
    threads = int(args.threads.split(",")[0])
    rows = []
    print(
        f"| n | unknowns | full rank MiB | {variant} MiB | ratio | mean rank | factor s |\n"
        "|---:|---:|---:|---:|---:|---:|---:|",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as work:
        for size in sizes:
            path = Path(work) / f"lap3d-{size}.npz"
            sp.save_npz(path, sp.csc_matrix(PROBLEMS["lap3d"](size)))
            r = spawn(path, name, threads, "spd", args.timeout, rhs=0)
            if r["status"] != "ok":
                print(f"| {size} | {r.get('error')} |", flush=True)
                continue
            full, stored = r["full_rank_bytes"], r["factor_bytes"]
            rows.append(
                {
                    "n": size**3,
                    "size": size,
                    "full": full,
                    "stored": stored,
                    "mean_rank": r.get("mean_rank"),
                    "factor_s": r["seconds"]["factor"],
                }
            )
            print(
                f"| {size}³ | {size**3:,} | {full / MiB:,.0f} | {stored / MiB:,.0f} "
                f"| {stored / full:.3f} | {fmt(r.get('mean_rank'), '.1f')} "
                f"| {r['seconds']['factor']:.1f} |",
                flush=True,
            )
    if len(rows) >= 2:
        n = np.log([r["n"] for r in rows])
        for key in ("full", "stored"):
            slope = np.polyfit(n, np.log([r[key] for r in rows]), 1)[0]
            print(f"\nlog-log slope of {key} bytes against n: {slope:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    sys.exit(main())
