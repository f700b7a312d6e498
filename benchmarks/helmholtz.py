"""Helmholtz benchmark: the multilevel preconditioner against the shifted Laplacian and a
direct solve, on finite-difference Helmholtz problems from pastixpy.gallery.helmholtz_fd
or on members of the Helmholtz family (pastixpy.gallery.HELMHOLTZ_FAMILY).

Usage::

    PYTHONPATH=. python benchmarks/helmholtz.py [--dims 2] [--k 20,40,80,160,320]
        [--media constant,wedge | --problems NAME,PATTERN,...] [--ppw 10]
        [--methods ml,sl,direct,twogrid] [--runs 1] [--ml-options JSON] [--maxiter N]
        [--sl-maxiter 3000] [--sl-basis-gib 4] [--twogrid-max 300000] [--timeout 3600]
        [--json out.json] [--markdown out.md] [--plot docs/multilevel_iterations.png]
        [--merge earlier.json ...] [--report]

    PYTHONPATH=. python benchmarks/helmholtz.py --problems 'helm2d-fd-pml-wedge,helm2d-p1*' \
        --k 20,40 --methods direct,ml --markdown family.md --plot family.png --json family.json

For each medium, wavenumber and method: iterations of right-preconditioned GMRES to a
relative residual of 1e-6 from zero (one preconditioner application per iteration; the
multilevel K-cycle with flexible GMRES, the shifted Laplacian with GMRES keeping the
Arnoldi basis only, restarted only when the basis would exceed ``--sl-basis-gib``), setup
and solve seconds, and the peak memory above the problem's own (resident set high-water
mark, reset after the problem is built). Every run is a fresh process, so each peak is
that run's own; times and peaks are medians of ``--runs`` runs. The solves keep their
default stagnation watch; each row records why it stopped (``stats["solve"]["stop"]``:
converged, stagnated, maxiter, ...). Methods:

* ``ml``: :func:`pastixpy.multilevel.helmholtz_solver` (``--ml-options`` as JSON, lists
  standing for the option tuples), at most ``--maxiter`` outer iterations;
* ``sl``: the shifted Laplacian ``L − (1 − 0.5i) k² I`` (damping sign matched), factored,
  at most ``--sl-maxiter`` iterations; a problem it cannot be made for is a "skipped" row;
* ``direct``: :func:`pastixpy.factorize` of A and a refined solve;
* ``twogrid``: the exact-ideal two-grid reference (:class:`IdealTwoGrid`) whose coarse
  grid is the multilevel hierarchy's coarsest level, with the same smoother and one
  Jacobi F-sweep: what ideal transfer operators onto that grid would give. It factors A
  and A_ff, so it runs up to ``--twogrid-max`` unknowns (estimated from k and ppw).

Problems: ``--dims`` and ``--media`` (default ``constant``) select ``helmholtz_fd``
problems; ``--problems`` instead takes family members by name or shell-style pattern
(``helm2d-p1*``, ``helm3d-fd-*-const``; the names are in docs/gallery.md), each built at
each ``--k`` with ``--ppw`` (``--dims`` is then the member's own). With ``--problems``,
``--maxiter`` defaults to 100 (else 300).

Output: the rows print as the runs finish; ``--markdown``/``--json`` write them. The
``helmholtz_fd`` results form one table; the family's form one table per scheme
(``helm2d, fd-abc``, ``helm2d, p1l-abc``, ...) with, for ml, the outer iterations, the stop
reason, the levels, the operator complexity (OC) and the cycles made on each level
(``stats["solve"]["cycles_per_level"]``), and for every method setup and solve seconds,
the peak, and time and peak over those of the direct solve of the same matrix. ``--plot``
draws iterations against k: for ``helmholtz_fd``, a panel per medium and a line per
method; for the family, the multilevel solver's outer iterations, a panel per scheme and a
line per member, crosses where it did not converge (written to ``NAME_family.png`` when
both kinds are plotted). ``--merge`` adds earlier JSON results (e.g. 2D and 3D runs) to
the tables and the plots; ``--report`` only combines them, without running anything.
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
        x, info = ml.solve(b, rtol=rtol, maxiter=spec.get("maxiter") or 300)
        st = ml.stats
        out.update(
            iterations=st["solve"]["iterations"],
            stop=st["solve"]["stop"],
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
        from pastixpy.errors import PastixError

        try:
            sl = shifted_laplacian_preconditioner(problem, threads=threads)
        except (PastixError, ValueError, AttributeError) as exc:
            # A member whose Laplacian the shifted operator cannot be made from is a row
            # of the table with the reason, not a failed benchmark.
            raise Skipped(f"no shifted Laplacian: {type(exc).__name__}: {exc}") from exc
        t1 = time.perf_counter()
        n = A.shape[0]
        budget = spec.get("sl_basis_gib", 4.0) * 2**30
        maxiter = spec.get("sl_maxiter") or 3000
        restart = max(20, min(maxiter, int(budget // (16 * n))))
        x, info = sl.solve(b, rtol=rtol, maxiter=maxiter, restart=restart)
        out.update(
            iterations=sl.stats["solve"]["iterations"],
            stop=sl.stats["solve"].get("stop"),
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
        if len(ml.levels) == 1:
            raise Skipped("the hierarchy has one level: no coarse grid to compare with")
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
            A, b, M=tg, rtol=rtol, maxiter=spec.get("maxiter") or 300, callback=history.append
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


class Skipped(Exception):
    """A method that does not apply to a problem (its row says why)."""


def make_problem(spec, k=None):
    """The spec's problem: a member of the Helmholtz family, or :func:`helmholtz_fd`."""
    from pastixpy.gallery import HELMHOLTZ_FAMILY, helmholtz_fd

    k = spec["k"] if k is None else k
    if spec.get("problem"):
        return HELMHOLTZ_FAMILY[spec["problem"]](k, ppw=spec["ppw"])
    return helmholtz_fd(k, dims=spec["dims"], ppw=spec["ppw"], medium=spec["medium"])


def warm_up(spec):
    """The method once on a small problem, untimed (imports, first-call costs)."""
    if spec["method"] == "twogrid":  # not timed against the others
        return
    small = make_problem(spec, k=10 if spec["dims"] == 2 else 6)
    try:
        run_method({**spec, "maxiter": 20, "sl_maxiter": 20}, small)
    except Skipped:
        pass


def worker(spec):
    problem = make_problem(spec)
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


def case(r):
    """The problem a result is about: the family member, or the dimension and medium."""
    return r.get("problem") or (r["dims"], r["medium"])


def direct_results(results):
    """The direct solves, by problem and k: the others' times and peaks compare with them."""
    return {
        (case(r), r["k"]): r for r in results if r["method"] == "direct" and r.get("status") == "ok"
    }


def ratios(r, d):
    """Total time and peak of r over those of the direct solve d (None without d)."""
    if not d:
        return None, None
    total = r["setup_seconds"] + r["solve_seconds"]
    ratio_t = total / (d["setup_seconds"] + d["solve_seconds"])
    ratio_m = r["peak_bytes"] / d["peak_bytes"] if d["peak_bytes"] else None
    return ratio_t, ratio_m


def iterations_cell(r):
    if r["method"] == "direct":
        return "—"
    its = str(r["iterations"])
    if r.get("info"):
        its += f" (not converged: {r.get('stop') or 'maxiter'})"
    return its


def table_rows(results):
    """Markdown rows of the helmholtz_fd results; peaks relative to the direct solve of the
    same problem."""
    direct = direct_results(results)
    rows = []
    for r in results:
        if r.get("problem"):
            continue
        d = direct.get((case(r), r["k"]))
        if r.get("status") != "ok":
            rows.append(
                f"| {r['dims']}D {r['medium']} | {r['k']} | {fmt(r.get('n'))} | "
                f"{LABELS[r['method']]} | {r.get('status')}: {r.get('error', '')[:60]} "
                "| | | | | |"
            )
            continue
        total = r["setup_seconds"] + r["solve_seconds"]
        ratio_t, ratio_m = ratios(r, d)
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
            f"{iterations_cell(r)} | {r['setup_seconds']:.2f} | {r['solve_seconds']:.2f} | "
            f"{total:.2f} | {r['peak_bytes'] / MiB:.0f} | "
            f"{fmt(ratio_t, '.2f')} / {fmt(ratio_m, '.2f')} | {note} |"
        )
    return rows


HEADER = (
    "| problem | k | unknowns | method | iterations | setup s | solve s | total s | "
    "peak MiB | time / peak vs direct | notes |\n"
    "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"
)

FAMILY_HEADER = (
    "| member | k | unknowns | method | outer its | stop | levels | OC | cycles per level | "
    "setup s | solve s | peak MiB | time / peak vs direct |\n"
    "|---|---:|---:|---|---:|---|---:|---:|---|---:|---:|---:|---:|"
)


def member_parts(name):
    """``helm2d-fd-abc-grf10-s0`` -> (2, "fd-abc", "grf10-s0")."""
    head, disc, boundary, *medium = name.split("-")
    return int(head[4]), f"{disc}-{boundary}", "-".join(medium)


def family_row(r, direct):
    """One markdown row of a family member's result."""
    d = direct.get((case(r), r["k"]))
    lead = f"| {r['problem']} | {r['k']} | {fmt(r.get('n'))} | {LABELS[r['method']]} |"
    if r.get("status") != "ok":
        return f"{lead} {r.get('status')}: {r.get('error', '')[:80]} | | | | | | | | |"
    ratio_t, ratio_m = ratios(r, d)
    if r["method"] == "ml":
        levels = str(r["levels"])
        oc = f"{r['operator_complexity']:.2f}"
        cycles = "/".join(str(c) for c in r["cycles_per_level"])
    else:
        levels = oc = cycles = ""
        if r["method"] == "twogrid":
            cycles = f"coarse grid {r['coarse_size']}"
    stop = (
        "" if r["method"] == "direct" else r.get("stop") or ("converged" if not r["info"] else "")
    )
    its = "—" if r["method"] == "direct" else str(r["iterations"])
    return (
        f"{lead} {its} | {stop} | {levels} | {oc} | {cycles} | {r['setup_seconds']:.2f} | "
        f"{r['solve_seconds']:.2f} | {r['peak_bytes'] / MiB:.0f} | "
        f"{fmt(ratio_t, '.2f')} / {fmt(ratio_m, '.2f')} |"
    )


def family_tables(results):
    """One markdown table per scheme of the family (``helm2d fd-abc``, ...), rows by member
    and k in the order they ran."""
    direct = direct_results(results)
    groups = {}
    for r in results:
        if r.get("problem"):
            dims, scheme, _ = member_parts(r["problem"])
            groups.setdefault((dims, scheme), []).append(r)
    out = []
    for (dims, scheme), rows in sorted(groups.items()):
        out.append(f"### helm{dims}d, {scheme}\n")
        out.append(FAMILY_HEADER)
        out += [family_row(r, direct) for r in rows]
        out.append("")
    return out


def report(results):
    """The markdown of all results: the helmholtz_fd table, then the family's tables."""
    parts = []
    rows = table_rows(results)
    if rows:
        parts += [HEADER, *rows, ""]
    parts += family_tables(results)
    return "\n".join(parts)


def log_axes(ax, ks):
    import matplotlib.ticker

    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_ylim(bottom=1)
    ax.grid(True, which="both", alpha=0.3)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
        log_axes(
            ax, sorted({r["k"] for r in results if (r["dims"], r["medium"]) == (dims, medium)})
        )
        ax.set_xlabel("wavenumber k (10 points per wavelength)")
        ax.set_ylabel("GMRES iterations to 1e-6")
        ax.set_title(f"{dims}D, {medium} medium")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}", flush=True)


def plot_family(results, path):
    """The multilevel solver's outer iterations against k: one panel per scheme, one line
    per member; runs that stopped unconverged are crosses at the iterations they made."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    ml = [r for r in results if r["method"] == "ml" and r.get("status") == "ok"]
    groups = sorted({member_parts(r["problem"])[:2] for r in ml})
    if not groups:
        print(f"no multilevel results of the family to plot in {path}", flush=True)
        return
    cols = min(4, len(groups))
    nrows = -(-len(groups) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.8 * nrows), squeeze=False)
    for ax, (dims, scheme) in zip(axes.flat, groups, strict=False):
        mine = [r for r in ml if member_parts(r["problem"])[:2] == (dims, scheme)]
        for name in dict.fromkeys(r["problem"] for r in mine):
            pts = sorted(
                (r["k"], r["iterations"], bool(r["info"])) for r in mine if r["problem"] == name
            )
            ks, its, failed = zip(*pts, strict=True)
            (line,) = ax.plot(ks, its, "o-", label=member_parts(name)[2], markersize=4)
            bad = [(k, i) for k, i, f in pts if f]
            if bad:
                ax.plot(*zip(*bad, strict=True), "x", color=line.get_color(), markersize=9)
        # Linear iterations (few, and a flat line is the point) against k doubling.
        ks = sorted({r["k"] for r in mine})
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_ylim(0, max(5, 1.15 * max(r["iterations"] for r in mine)))
        ax.grid(True, alpha=0.3)
        ax.set_xlabel("wavenumber k")
        ax.set_ylabel("outer FGMRES iterations to 1e-6")
        ax.set_title(f"{dims}D {scheme} (x: not converged)", fontsize=9)
        ax.legend(fontsize=7)
    for ax in axes.flat[len(groups) :]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}", flush=True)


def select_members(patterns):
    """Family member names from comma-separated names or shell-style patterns, in the order
    asked for, each once."""
    from fnmatch import fnmatchcase

    from pastixpy.gallery import HELMHOLTZ_FAMILY

    names = []
    for pattern in (s.strip() for s in patterns.split(",")):
        if not pattern:
            continue
        found = [n for n in HELMHOLTZ_FAMILY if fnmatchcase(n, pattern)]
        if not found:
            raise SystemExit(
                f"--problems: {pattern!r} names no member of the Helmholtz family "
                f"(e.g. {', '.join(list(HELMHOLTZ_FAMILY)[:3])}; see docs/gallery.md)"
            )
        names += [n for n in found if n not in names]
    return names


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--worker":
        spec = json.loads(sys.argv[2])
        try:
            result = worker(spec)
        except Skipped as exc:
            result = {"status": "skipped", "error": str(exc)}
        except Exception as exc:  # reported in the table, not raised
            result = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
        print(MARK, json.dumps(result), flush=True)
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", type=int, default=2, choices=(2, 3))
    p.add_argument("--k", default="20,40,80,160,320", help="comma-separated wavenumbers")
    p.add_argument("--media", default=None, help="constant,wedge (default constant)")
    p.add_argument(
        "--problems",
        help="members of the Helmholtz family, names or patterns (helm2d-p1*), instead of "
        "--media and --dims",
    )
    p.add_argument("--ppw", type=float, default=10.0)
    p.add_argument("--methods", default="ml,sl,direct,twogrid")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--ml-options", default="{}", help="helmholtz_solver options as JSON")
    p.add_argument(
        "--maxiter",
        type=int,
        default=None,
        help="outer iterations of ml and twogrid (default 100 with --problems, else 300)",
    )
    p.add_argument(
        "--sl-maxiter", type=int, default=3000, help="iterations of the shifted Laplacian"
    )
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
    if args.problems and args.media:
        raise SystemExit("--problems and --media exclude each other")
    members = select_members(args.problems) if args.problems else []
    maxiter = args.maxiter or (100 if members else 300)
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
    if members:
        from pastixpy.gallery import HELMHOLTZ_FAMILY

        cases = [(HELMHOLTZ_FAMILY[n].dims, member_parts(n)[2], n) for n in members]
    else:
        cases = [(args.dims, medium, None) for medium in (args.media or "constant").split(",")]
    if not args.report:
        print(FAMILY_HEADER if members else HEADER, flush=True)
    for dims, medium, member in [] if args.report else cases:
        for k in (float(s) for s in args.k.split(",")):
            k = int(k) if k == int(k) else k
            for method in methods:
                # For the family's finite elements and PMLs a rough estimate of the size.
                n_est = round(args.ppw * k / (2 * np.pi) - 1) ** dims
                if method == "twogrid" and n_est > args.twogrid_max:
                    continue
                spec = {
                    "method": method,
                    "dims": dims,
                    "k": k,
                    "ppw": args.ppw,
                    "medium": medium,
                    "problem": member,
                    "options": options,
                    "sl_basis_gib": args.sl_basis_gib,
                    "maxiter": maxiter,
                    "sl_maxiter": args.sl_maxiter,
                }
                runs = [spawn(spec, args.timeout) for _ in range(args.runs)]
                result = {**summarize(runs), **{x: spec[x] for x in ("method", "dims", "k")}}
                result["medium"] = medium
                if member:
                    result["problem"] = member
                    result["scheme"] = member_parts(member)[1]
                    print(family_row(result, direct_results(results + [result])), flush=True)
                results.append(result)
                if not member:
                    print(table_rows(results)[-1], flush=True)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"options": options, "ppw": args.ppw, "maxiter": maxiter, "results": results},
                indent=1,
            )
        )
    everything = merged + results
    if args.report:
        print(report(everything))
    if args.markdown:
        Path(args.markdown).write_text(report(everything) + "\n")
    if args.plot:
        fd = [r for r in everything if not r.get("problem")]
        family = [r for r in everything if r.get("problem")]
        path = Path(args.plot)
        if fd:
            plot(fd, path)
        if family:
            plot_family(family, path.with_stem(path.stem + "_family") if fd else path)


if __name__ == "__main__":
    main()
