"""Two builds of pastixpy timed against each other: numeric factorization seconds.

Usage::

    python benchmarks/builds.py BASE NEW [--problems lap3d:40 elast3d:37x37x37 ...]
        [--threads 2] [--runs 5]

BASE and NEW are directories holding a built ``pastixpy`` package (a worktree, or a
copy of one's ``pastixpy/`` with its compiled modules). Each run is a fresh process
that analyses and factors one problem of the gallery (``pastixpy.gallery.problem``)
and reports ``stats["seconds"]["factorize"]``; the runs of the two builds alternate
(BASE, NEW, BASE, NEW, ...), so that other load on the machine hits both alike, and
the medians and the ratio NEW / BASE are printed per problem. The default problems
are ``benchmarks/run.py``'s 3D ones.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

RUN = """
import json, sys, warnings
import pastixpy
from pastixpy.gallery import problem
warnings.simplefilter("ignore")
A = problem(sys.argv[1])
F = pastixpy.factorize(A, threads=int(sys.argv[2]))
print(json.dumps({"file": pastixpy.__file__, "seconds": F.stats["seconds"]["factorize"]}))
"""

PROBLEMS = ["lap3d:40", "lap3d:60", "lap3d:80", "elast3d:37x37x37", "convdiff3d:60"]


def one(path, name, threads):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
    out = subprocess.run(
        [sys.executable, "-c", RUN, name, str(threads)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=os.path.abspath(path),
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not result["file"].startswith(os.path.abspath(path)):
        raise RuntimeError(f"{path} imported pastixpy from {result['file']}")
    return result["seconds"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base")
    p.add_argument("new")
    p.add_argument("--problems", nargs="+", default=PROBLEMS)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args(argv)
    print(f"{'problem':18s} {'base s':>8s} {'new s':>8s} {'new/base':>8s}   runs (base; new)")
    for name in args.problems:
        times = {"base": [], "new": []}
        for _ in range(args.runs):
            times["base"].append(one(args.base, name, args.threads))
            times["new"].append(one(args.new, name, args.threads))
        b, n = statistics.median(times["base"]), statistics.median(times["new"])
        runs = "; ".join(" ".join(f"{t:.2f}" for t in times[k]) for k in ("base", "new"))
        print(f"{name:18s} {b:8.2f} {n:8.2f} {n / b:8.3f}   {runs}", flush=True)


if __name__ == "__main__":
    main()
