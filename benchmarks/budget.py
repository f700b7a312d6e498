"""The memory budget's configurations: each one's forecast beside its measured peak, and
its time.

Usage::

    PYTHONPATH=. python benchmarks/budget.py [--problems lap3d:40,lap2d:400]
        [--threads 1] [--runs 1] [--json out.json]

For each problem and each configuration of :data:`pastixpy.budget.CONFIGURATIONS`, in a
fresh process: the analysis (wide separators cut into clusters, as the budget's is),
then ``factorize`` in that configuration and one solve. Columns:

- the forecast of the numeric phase (:func:`pastixpy.numeric.numeric_forecast`):
  ``least`` and ``most``, and the ``estimate`` the budget tests against the limit
  (:func:`pastixpy.budget.estimate`);
- the measured peak resident memory of the numeric phase (the high-water mark reset
  just before it, less the resident size then), its ratio to the estimate, and
  ``fill``: where it falls between least and most ((peak - least) / (most - least),
  what :data:`pastixpy.budget.TILE_FILL` must stay above);
- the peak of the whole ``factorize`` call (preprocessing, the assembly map, the
  check solve included) over what the budget tests against ``memory_limit``: the
  estimate plus the bytes the preprocessed matrix and the assembly map hold
  (:func:`pastixpy.budget.held_bytes`);
- the numeric factorization's seconds, factorization + one solve (its refinement or
  GMRES included) and the solve's backward error.

OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for the workers (as run.py does).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SLOW_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
MiB = 2**20


def status():
    """(VmRSS, VmHWM) of this process in bytes."""
    with open("/proc/self/status") as fh:
        d = dict(line.split(":", 1) for line in fh if line.startswith("Vm"))
    return int(d["VmRSS"].split()[0]) * 1024, int(d["VmHWM"].split()[0]) * 1024


def reset_peak():
    """VmHWM back to the current resident size (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def child(problem, name, threads):
    """One configuration's run: its forecast, measured peaks and times, as JSON."""
    import numpy as np

    import pastixpy
    import pastixpy.numeric.backend as backend
    from pastixpy import budget
    from pastixpy.compression import CLUSTER_SIZE
    from pastixpy.gallery import problem as make
    from pastixpy.numeric import factorize as numeric
    from pastixpy.runtime import release_free_memory

    A = make(problem)
    an = pastixpy.analyze(A, clusters=CLUSTER_SIZE)
    conf = budget.BY_NAME[name]
    compress = None if conf.strategy is None else ("blr", {"strategy": conf.strategy})
    precision = "mixed" if conf.mixed else "auto"
    seen = {}
    inner_forecast, inner_numeric = numeric.forecast, backend.factorize_numeric

    def forecast(*args, **kwargs):
        seen["forecast"] = inner_forecast(*args, **kwargs)
        return seen["forecast"]

    def measured(*args, **kwargs):
        seen["held"] = budget.held_bytes(args[0], args[3])  # B, amap
        release_free_memory()
        reset_peak()
        rss0, _ = status()
        try:
            return inner_numeric(*args, **kwargs)
        finally:
            seen["numeric_peak"] = status()[1] - rss0

    numeric.forecast, backend.factorize_numeric = forecast, measured
    b = A @ np.ones(A.shape[0])
    release_free_memory()
    reset_peak()
    rss0, _ = status()
    t0 = time.perf_counter()
    F = pastixpy.factorize(A, analysis=an, precision=precision, compress=compress, threads=threads)
    t1 = time.perf_counter()
    whole = status()[1] - rss0
    x = F.solve(b)
    t2 = time.perf_counter()
    fc = seen["forecast"]
    r = b - A @ x
    berr = np.abs(r).max() / (abs(A).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max())
    return {
        "problem": problem,
        "configuration": name,
        "threads": fc.threads,
        "least": fc.least,
        "most": fc.most,
        "estimate": budget.estimate(fc),
        "numeric_peak": seen["numeric_peak"],
        "factorize_peak": whole,
        "held": seen["held"],
        "factor_bytes": F.stats["factor_bytes"],
        "numeric_seconds": F.stats["seconds"]["factorize"],
        "factor_solve_seconds": t2 - t0,
        "factorize_seconds": t1 - t0,
        "backward_error": float(berr),
        "precision": F.stats["precision"],
        "compressed": F.stats["compression"] is not None,
    }


def spawn(problem, name, threads):
    env = {k: v for k, v in os.environ.items() if k not in SLOW_ENV}
    env.update({k: str(threads) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
    cmd = [sys.executable, __file__, "--child", problem, name, str(threads)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode:
        raise RuntimeError(f"{problem} {name}: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_run(runs):
    """The run of median factorization + solve time (its peaks with it)."""
    runs = sorted(runs, key=lambda r: r["factor_solve_seconds"])
    return runs[len(runs) // 2]


def table(results):
    head = (
        "| problem | configuration | least MiB | most MiB | estimate MiB | numeric peak MiB "
        "| peak / estimate | fill | held MiB | factorize peak / (estimate + held) "
        "| numeric s | factor+solve s | backward err |\n|" + "---|" * 13
    )
    rows = [head]
    for r in results:
        span = r["most"] - r["least"]
        fill = (r["numeric_peak"] - r["least"]) / span if span else None
        rows.append(
            f"| {r['problem']} | {r['configuration']} | {r['least'] / MiB:.0f} "
            f"| {r['most'] / MiB:.0f} | {r['estimate'] / MiB:.0f} "
            f"| {r['numeric_peak'] / MiB:.0f} | {r['numeric_peak'] / r['estimate']:.2f} "
            f"| {'-' if fill is None else f'{fill:.2f}'} "
            f"| {r['held'] / MiB:.0f} | {r['factorize_peak'] / (r['estimate'] + r['held']):.2f} "
            f"| {r['numeric_seconds']:.2f} "
            f"| {r['factor_solve_seconds']:.2f} | {r['backward_error']:.1e} |"
        )
    return "\n".join(rows)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        problem, name, threads = sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(json.dumps(child(problem, name, threads)))
        return
    from pastixpy.budget import CONFIGURATIONS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", default="lap3d:40,lap2d:400")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--json", metavar="OUT")
    args = p.parse_args()
    results = []
    for problem in args.problems.split(","):
        for conf in CONFIGURATIONS:
            runs = [spawn(problem, conf.name, args.threads) for _ in range(args.runs)]
            results.append(median_run(runs))
            print(f"{problem} {conf.name} done", file=sys.stderr, flush=True)
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
