"""Helmholtz benchmark: the multilevel preconditioner against the shifted Laplacian and a
direct solve, on finite-difference Helmholtz problems from pastixpy.gallery.helmholtz_fd.

Usage::

    PYTHONPATH=. python benchmarks/helmholtz.py [--dims 2] [--k 20,40,80,160,320]
        [--media constant,wedge] [--ppw 10] [--methods ml,sl,direct,twogrid] [--runs 1]
        [--ml-options JSON] [--sl-basis-gib 4] [--twogrid-max 300000] [--timeout 3600]
        [--json out.json] [--markdown out.md] [--plot docs/multilevel_iterations.png]
        [--merge earlier.json ...] [--report]

For each medium, wavenumber and method: iterations of right-preconditioned GMRES to a
relative residual of 1e-6 from zero (one preconditioner application per iteration; the
multilevel K-cycle with flexible GMRES, the shifted Laplacian with GMRES keeping the
Arnoldi basis only, restarted only when the basis would exceed ``--sl-basis-gib``), setup
and solve seconds, and the peak memory above the problem's own (resident set high-water
mark, reset after the problem is built). Every run is a fresh process, so each peak is
that run's own; times and peaks are medians of ``--runs`` runs. Methods:

* ``ml``: :func:`pastixpy.multilevel.helmholtz_solver` (``--ml-options`` as JSON, lists
  standing for the option tuples);
* ``sl``: the shifted Laplacian ``L − (1 − 0.5i) k² I`` (damping sign matched), factored;
* ``direct``: :func:`pastixpy.factorize` of A and a refined solve;
* ``twogrid``: the exact-ideal two-grid reference (:class:`IdealTwoGrid`) whose coarse
  grid is the multilevel hierarchy's coarsest level, with the same smoother and one
  Jacobi F-sweep: what ideal transfer operators onto that grid would give. It factors A
  and A_ff, so it runs up to ``--twogrid-max`` unknowns.

The table prints as the runs finish; ``--markdown``/``--json`` write it, ``--plot`` draws
iterations against k. ``--merge`` adds earlier JSON results (e.g. 2D and 3D runs) to the
table and the plot; ``--report`` only combines them, without running anything.
"""

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from worker import memory, reset_peak

MARK = "@@RESULT@@"
MiB = 2**20
#: Variables that select a slower OpenBLAS kernel or cache model; the timed runs go without.
SLOW_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
METHODS = ("ml", "sl", "direct", "twogrid")
LABELS = {
    "ml": "multilevel",
    "sl": "shifted Laplacian",
    "direct": "direct",
    "twogrid": "ideal two-grid",
}


# ----------------------------------------------------------------------------- worker


def as_options(value):
    """JSON lists ``["name", {...}]`` back into the option tuples ``("name", {...})``."""
    if isinstance(value, dict):
        return {k: as_options(v) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], dict):
            return (value[0], as_options(value[1]))
        return tuple(as_options(v) for v in value)
    return value


def ml_fmask(ml, n):
    """F points of the two-level splitting whose coarse grid is ml's coarsest level."""
    idx = np.arange(n)
    for level in ml.levels[:-1]:
        idx = idx[level.splitting.cpoints]
    fmask = np.ones(n, bool)
    fmask[idx] = False
    return fmask


def run_method(spec, problem, threads=1):
    """Set up and solve with one method; returns the measurements."""
    import pastixpy
    from pastixpy.multilevel import (
        IdealTwoGrid,
        fgmres,
        helmholtz_solver,
        shifted_laplacian_preconditioner,
    )

    A, b = problem.A, problem.b
    rtol = spec.get("rtol", 1e-6)
    method = spec["method"]
    out = {}
    t0 = time.perf_counter()
    if method == "ml":
        ml = helmholtz_solver(A, threads=threads, **as_options(spec.get("options", {})))
        t1 = time.perf_counter()
        x, info = ml.solve(b, rtol=rtol, maxiter=spec.get("maxiter", 300))
        st = ml.stats
        out.update(
            iterations=st["solve"]["iterations"],
            levels=st["levels"],
            sizes=st["sizes"],
            nnz=st["nnz"],
            operator_complexity=st["operator_complexity"],
            coarse_factor_bytes=st["coarse_factor_bytes"],
            memory_bytes=st["memory_bytes"],
            stop_reason=st["stop_reason"],
            cycles_per_level=st["solve"]["cycles_per_level"],
            setup_phases=st["setup_phases"],
            f_relaxation_rates=st["f_relaxation_rates"],
        )
    elif method == "sl":
        sl = shifted_laplacian_preconditioner(problem, threads=threads)
        t1 = time.perf_counter()
        n = A.shape[0]
        budget = spec.get("sl_basis_gib", 4.0) * 2**30
        maxiter = spec.get("maxiter", 3000)
        restart = max(20, min(maxiter, int(budget // (16 * n))))
        x, info = sl.solve(b, rtol=rtol, maxiter=maxiter, restart=restart)
        out.update(
            iterations=sl.stats["solve"]["iterations"],
            factor_bytes=sl.stats["factor_bytes"],
            restart=restart if restart < maxiter else None,
            shift=str(sl.shift),
        )
    elif method == "direct":
        F = pastixpy.factorize(A, threads=threads)
        t1 = time.perf_counter()
        x = F.solve(b)
        info = 0
        out.update(iterations=0, factor_bytes=int(F.stats["factor_bytes"]))
    elif method == "twogrid":
        ml = helmholtz_solver(A, threads=threads, **as_options(spec.get("options", {})))
        fmask = ml_fmask(ml, A.shape[0])
        del ml
        gc.collect()
        t0 = time.perf_counter()
        tg = IdealTwoGrid(
            A,
            fmask,
            f_relaxation=("jacobi", {"sweeps": 1}),
            smoother=("polynomial", {"degree": 4}),
            threads=threads,
        )
        t1 = time.perf_counter()
        history = []
        x, info = fgmres(
            A, b, M=tg, rtol=rtol, maxiter=spec.get("maxiter", 300), callback=history.append
        )
        out.update(iterations=len(history), coarse_size=int((~fmask).sum()))
    else:
        raise ValueError(f"unknown method {method!r}")
    t2 = time.perf_counter()
    out.update(
        setup_seconds=t1 - t0,
        solve_seconds=t2 - t1,
        info=int(info),
        relres=float(np.linalg.norm(b - A @ x) / np.linalg.norm(b)),
    )
    return out


def warm_up(spec):
    """The method once on a small problem, untimed (imports, first-call costs)."""
    from pastixpy.gallery import helmholtz_fd

    if spec["method"] == "twogrid":  # not timed against the others
        return
    small = helmholtz_fd(10 if spec["dims"] == 2 else 6, dims=spec["dims"])
    run_method({**spec, "maxiter": 20}, small)


def worker(spec):
    from pastixpy.gallery import helmholtz_fd

    problem = helmholtz_fd(spec["k"], dims=spec["dims"], ppw=spec["ppw"], medium=spec["medium"])
    warm_up(spec)
    gc.collect()
    rss0, _ = memory()
    reset = reset_peak()
    result = run_method(spec, problem)
    _, peak = memory()
    result.update(
        status="ok",
        n=int(problem.A.shape[0]),
        peak_bytes=peak - rss0,
        peak_reset=reset,
        baseline_bytes=rss0,
    )
    return result


# ----------------------------------------------------------------------------- driver


def reexec_without_slow_env():
    found = {k: os.environ[k] for k in SLOW_ENV if k in os.environ}
    if not found:
        return
    env = {k: v for k, v in os.environ.items() if k not in SLOW_ENV}
    shown = ", ".join(f"{k}={v}" for k, v in found.items())
    print(f"re-executing with {shown} unset for the timed runs", file=sys.stderr, flush=True)
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def spawn(spec, timeout):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "error": f"more than {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"status": "error", "error": " | ".join(tail) or f"exit code {proc.returncode}"}


def summarize(runs):
    ok = [r for r in runs if r.get("status") == "ok"]
    if not ok:
        return runs[-1]
    out = dict(ok[-1])
    for key in ("setup_seconds", "solve_seconds", "peak_bytes"):
        out[key] = statistics.median(r[key] for r in ok)
    out["runs"] = len(ok)
    return out


def fmt(value, spec="", missing="—"):
    return missing if value is None else format(value, spec)


def table_rows(results):
    """Markdown rows; peaks relative to the direct solve of the same problem."""
    direct = {
        (r["dims"], r["medium"], r["k"]): r
        for r in results
        if r["method"] == "direct" and r.get("status") == "ok"
    }
    rows = []
    for r in results:
        d = direct.get((r["dims"], r["medium"], r["k"]))
        if r.get("status") != "ok":
            rows.append(
                f"| {r['dims']}D {r['medium']} | {r['k']} | {fmt(r.get('n'))} | "
                f"{LABELS[r['method']]} | {r.get('status')}: {r.get('error', '')[:60]} "
                "| | | | | |"
            )
            continue
        total = r["setup_seconds"] + r["solve_seconds"]
        ratio_t = total / (d["setup_seconds"] + d["solve_seconds"]) if d else None
        ratio_m = r["peak_bytes"] / d["peak_bytes"] if d and d["peak_bytes"] else None
        its = "—" if r["method"] == "direct" else str(r["iterations"])
        if r.get("info"):
            its += " (not converged)"
        note = ""
        if r["method"] == "ml":
            cycles = "/".join(str(c) for c in r["cycles_per_level"])
            note = f"{r['levels']} levels, OC {r['operator_complexity']:.2f}, cycles {cycles}"
        elif r["method"] == "sl" and r.get("restart") and r["iterations"] > r["restart"]:
            note = f"GMRES({r['restart']}), restarted"
        elif r["method"] == "twogrid":
            note = f"coarse grid {r['coarse_size']}"
        rows.append(
            f"| {r['dims']}D {r['medium']} | {r['k']} | {r['n']} | {LABELS[r['method']]} | "
            f"{its} | {r['setup_seconds']:.2f} | {r['solve_seconds']:.2f} | {total:.2f} | "
            f"{r['peak_bytes'] / MiB:.0f} | {fmt(ratio_t, '.2f')} / {fmt(ratio_m, '.2f')} "
            f"| {note} |"
        )
    return rows


HEADER = (
    "| problem | k | unknowns | method | iterations | setup s | solve s | total s | "
    "peak MiB | time / peak vs direct | notes |\n"
    "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"
)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    groups = sorted({(r["dims"], r["medium"]) for r in results})
    fig, axes = plt.subplots(1, len(groups), figsize=(4.6 * len(groups), 3.8), squeeze=False)
    styles = {"ml": "o-", "sl": "s--", "twogrid": "^:"}
    for ax, (dims, medium) in zip(axes[0], groups, strict=True):
        for method, style in styles.items():
            pts = sorted(
                (r["k"], r["iterations"])
                for r in results
                if (r["dims"], r["medium"], r["method"]) == (dims, medium, method)
                and r.get("status") == "ok"
                and not r.get("info")
            )
            if pts:
                ks, its = zip(*pts, strict=True)
                ax.plot(ks, its, style, label=LABELS[method])
        ks = sorted({r["k"] for r in results if (r["dims"], r["medium"]) == (dims, medium)})
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("wavenumber k (10 points per wavelength)")
        ax.set_ylim(bottom=1)
        ax.set_ylabel("GMRES iterations to 1e-6")
        ax.set_title(f"{dims}D, {medium} medium")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}", flush=True)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--worker":
        spec = json.loads(sys.argv[2])
        try:
            result = worker(spec)
        except Exception as exc:  # reported in the table, not raised
            result = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        print(MARK, json.dumps(result), flush=True)
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", type=int, default=2, choices=(2, 3))
    p.add_argument("--k", default="20,40,80,160,320", help="comma-separated wavenumbers")
    p.add_argument("--media", default="constant", help="constant,wedge")
    p.add_argument("--ppw", type=float, default=10.0)
    p.add_argument("--methods", default="ml,sl,direct,twogrid")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--ml-options", default="{}", help="helmholtz_solver options as JSON")
    p.add_argument("--sl-basis-gib", type=float, default=4.0, help="Krylov basis budget")
    p.add_argument("--twogrid-max", type=int, default=300_000, help="largest reference")
    p.add_argument("--timeout", type=float, default=3600.0)
    p.add_argument("--json")
    p.add_argument("--markdown")
    p.add_argument("--plot")
    p.add_argument(
        "--merge", nargs="*", default=[], help="JSON results to add to the table and the plot"
    )
    p.add_argument(
        "--report", action="store_true", help="no runs: the table and plot of --merge files"
    )
    args = p.parse_args()
    reexec_without_slow_env()
    # The direct solve first: the others' rows compare with it as they print.
    methods = sorted((m for m in args.methods.split(",") if m), key=lambda m: m != "direct")
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise SystemExit(f"unknown method(s) {bad}; known: {list(METHODS)}")
    options = json.loads(args.ml_options)
    results = []
    merged = []
    for name in args.merge:
        merged += json.loads(Path(name).read_text())["results"]
    print(HEADER, flush=True)
    for medium in [] if args.report else args.media.split(","):
        for k in (float(s) for s in args.k.split(",")):
            k = int(k) if k == int(k) else k
            for method in methods:
                n_est = round(args.ppw * k / (2 * np.pi) - 1) ** args.dims
                if method == "twogrid" and n_est > args.twogrid_max:
                    continue
                spec = {
                    "method": method,
                    "dims": args.dims,
                    "k": k,
                    "ppw": args.ppw,
                    "medium": medium,
                    "options": options,
                    "sl_basis_gib": args.sl_basis_gib,
                }
                runs = [spawn(spec, args.timeout) for _ in range(args.runs)]
                result = {**summarize(runs), **{x: spec[x] for x in ("method", "dims", "k")}}
                result["medium"] = medium
                results.append(result)
                print(table_rows(results)[-1], flush=True)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"options": options, "ppw": args.ppw, "results": results}, indent=1)
        )
    everything = merged + results
    if args.report:
        print("\n".join(table_rows(everything)))
    if args.markdown:
        rows = table_rows(everything)
        Path(args.markdown).write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    if args.plot:
        plot(everything, args.plot)


if __name__ == "__main__":
    main()
