"""Factorization kinds on one matrix: LDLᵀ and LU numeric time over LLᵀ's.

Usage::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/kinds.py \\
        [--problems lap3d-60,elast3d] [--runs 3] [--threads 1]

Each SPD problem is factored as LLᵀ, LDLᵀ and LU (``pastixpy.factorize(A,
kind=..., ordering="metis")``), each kind analysed once (LU's analysis is made
after its row matching and scaling, like a user's first call) and then
refactored ``--runs`` times with that analysis, the kinds interleaved so that
drift in the machine's load hits them alike. Prints the median numeric seconds
(``stats["seconds"]["factorize"]``) and the ratios LDLᵀ/LLᵀ and LU/LLᵀ.
"""

import argparse
import statistics

from problems import all_problems, select
from threadpoolctl import threadpool_info, threadpool_limits

import pastixpy

KINDS = ("llt", "ldlt", "lu")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problems", default="lap3d-60,elast3d")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    kernels = {i.get("architecture") for i in threadpool_info() if i.get("architecture")}
    print(f"BLAS kernels: {', '.join(sorted(kernels))}; threads {args.threads}")
    head = ("LLᵀ s", "LDLᵀ s", "LU s", "LDLᵀ/LLᵀ", "LU/LLᵀ")
    print(f"{'problem':32s} " + " ".join(f"{h:>9s}" for h in head))
    problems, _ = all_problems(quick=False)
    for prob in select(problems, args.problems.split(",")):
        A = prob.build()
        analyses = {}
        for kind in KINDS:
            F = pastixpy.factorize(A, kind=kind, ordering="metis", threads=args.threads)
            analyses[kind] = F.analysis
            del F
        times = {kind: [] for kind in KINDS}
        with threadpool_limits(args.threads):
            for _ in range(args.runs):
                for kind in KINDS:
                    F = pastixpy.factorize(
                        A, kind=kind, analysis=analyses[kind], threads=args.threads
                    )
                    times[kind].append(F.stats["seconds"]["factorize"])
                    del F
        med = {kind: statistics.median(t) for kind, t in times.items()}
        print(
            f"{prob.label:32s} {med['llt']:9.3f} {med['ldlt']:9.3f} {med['lu']:9.3f} "
            f"{med['ldlt'] / med['llt']:9.2f} {med['lu'] / med['llt']:9.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
