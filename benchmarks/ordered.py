"""What the threaded factorization's fixed order of updates costs: numeric factorization
seconds with each cblk taking its updates in the sequential order (the default, the
same bits from run to run) and as they come (``_numeric.factorize(ordered=False)``).

Usage::

    python benchmarks/ordered.py [--problems lap3d:40 convdiff3d:40 ...] [--threads 2]
        [--runs 5]

Each problem is analysed once; the two modes then alternate in one process (ordered,
as they come, ordered, ...), so that other load on the machine hits both alike, and the
medians and their ratio are printed.
"""

import argparse
import statistics
import warnings

import pastixpy
import pastixpy._numeric as kernels
from pastixpy.gallery import problem

PROBLEMS = ["lap3d:40", "lap3d:60", "convdiff3d:40", "elast3d:25x25x25"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", nargs="+", default=PROBLEMS)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args(argv)
    factorize = kernels.factorize
    mode = {"ordered": True}
    kernels.factorize = lambda *a, **k: factorize(*a, ordered=mode["ordered"], **k)
    warnings.simplefilter("ignore")
    print(f"{'problem':18s} {'ordered s':>9s} {'as come s':>9s} {'ratio':>6s}   runs")
    try:
        for name in args.problems:
            A = problem(name)
            analysis = pastixpy.factorize(A, threads=args.threads).analysis
            times = {True: [], False: []}
            for _ in range(args.runs):
                for ordered in (True, False):
                    mode["ordered"] = ordered
                    F = pastixpy.factorize(A, analysis=analysis, threads=args.threads)
                    times[ordered].append(F.stats["seconds"]["factorize"])
                    del F
            o, c = statistics.median(times[True]), statistics.median(times[False])
            runs = "; ".join(" ".join(f"{t:.2f}" for t in times[k]) for k in (True, False))
            print(f"{name:18s} {o:9.2f} {c:9.2f} {o / c:6.3f}   {runs}", flush=True)
    finally:
        kernels.factorize = factorize


if __name__ == "__main__":
    main()
