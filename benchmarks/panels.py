"""Panel widths (``analyze(split=...)``) against each other and CHOLMOD, interleaved.

Usage::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/panels.py \\
        [--problem lap3d-60] [--threads 1] [--rounds 5] \\
        [--split 128,256 --split 256,512 --split none] [--kind llt] [--quick]

Each variant is analysed once (METIS), then every round factors the matrix
with each variant and with CHOLMOD (when scikit-sparse is installed and the
kind is LLᵀ), one after the other in this process: on a shared machine whose
speed drifts by 10-20% within minutes, only comparisons made side by side, round
by round, resolve differences of that size. Prints each round's numeric
seconds, then per variant the median seconds and the median over rounds of its
time over CHOLMOD's (or over the first variant's without CHOLMOD).
"""

import argparse
import gc
import statistics
import time

from problems import all_problems, select
from threadpoolctl import threadpool_limits

import pastixpy


def parse_split(text):
    if text.lower() == "none":
        return None
    low, high = (int(v) for v in text.split(","))
    return (low, high)


def cholmod_factorizer(A):
    """A function timing one CHOLMOD numeric factorization of A, or None without CHOLMOD."""
    try:
        from sksparse import cholmod
    except ImportError:
        return None
    C = A.tocsc()
    factor = cholmod.analyze(C, mode="supernodal", ordering_method="metis")

    def run():
        t = time.perf_counter()
        factor.cholesky_inplace(C)
        return time.perf_counter() - t

    return run


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problem", default="lap3d-60")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--split", action="append", type=parse_split, help="min,max or none")
    p.add_argument("--kind", default="llt", choices=["llt", "ldlt", "lu"])
    p.add_argument("--quick", action="store_true", help="the small problem sizes")
    args = p.parse_args(argv)
    splits = args.split or [(128, 256), (256, 512)]
    problems, _ = all_problems(quick=args.quick)
    (prob,) = select(problems, [args.problem])
    A = prob.build()
    names = [str(s) for s in splits]
    analyses = [pastixpy.analyze(A, ordering="metis", kind=args.kind, split=s) for s in splits]
    timers = {
        name: (lambda an=an: factor_seconds(A, an, args.kind, args.threads))
        for name, an in zip(names, analyses, strict=True)
    }
    cholmod = cholmod_factorizer(A) if args.kind == "llt" else None
    if cholmod is not None:
        timers["cholmod"] = cholmod
    reference = "cholmod" if cholmod is not None else names[0]
    print(f"{prob.label}, {args.kind}, {args.threads} thread(s); ratios to {reference}")
    times = {name: [] for name in timers}
    with threadpool_limits(args.threads):
        factor_seconds(A, analyses[0], args.kind, args.threads)  # warm-up
        for r in range(args.rounds):
            for name, run in timers.items():
                gc.collect()
                times[name].append(run())
            print(f"round {r}: " + ", ".join(f"{n} {t[-1]:.2f} s" for n, t in times.items()))
    for name in names:
        ratios = [a / b for a, b in zip(times[name], times[reference], strict=True)]
        print(
            f"split={name}: median {statistics.median(times[name]):.3f} s, over {reference} "
            f"{statistics.median(ratios):.3f} (rounds: {', '.join(f'{x:.2f}' for x in ratios)})"
        )


def factor_seconds(A, analysis, kind, threads):
    F = pastixpy.factorize(A, kind=kind, analysis=analysis, threads=threads)
    return F.stats["seconds"]["factorize"]


if __name__ == "__main__":
    main()
