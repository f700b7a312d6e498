"""Analysis benchmark: ordering time against everything after it, and fill per ordering.

Usage::

    python benchmarks/analysis.py [--quick] [--runs N] [--json PATH]

Times ``pastixpy.analyze`` on the 3D 7-point Laplacian 60³ (216k unknowns) and
the 2D 5-point Laplacian 1000² (1M unknowns), split into the ordering and the
rest (canonicalization, graph, etree, supernodes, block structure), medians of
``--runs`` runs. Then compares the fill of each ordering on 60³ with METIS's own
nested dissection called directly through pymetis. ``--quick`` uses 30³ and 300².
"""

import argparse
import json
import statistics
import time
import warnings

import numpy as np
import pymetis

import pastixpy
from pastixpy.gallery import laplacian


def time_analysis(A, runs):
    """Median seconds of the ordering, of the rest, and of check(), over ``runs`` analyses."""
    order, rest, check = [], [], []
    for _ in range(runs):
        an = pastixpy.analyze(A)
        sec = an.stats["seconds"]
        order.append(sec["ordering"])
        rest.append(sec["total"] - sec["ordering"])
        t = time.perf_counter()
        an.check()
        check.append(time.perf_counter() - t)
    return statistics.median(order), statistics.median(rest), statistics.median(check), an


def fill_table(A):
    """nnz(L), stored entries and flops of each ordering, with pymetis's ND as the reference."""
    rows = {}
    for name in ("metis", "amd", "rcm", "natural"):
        if name == "natural" and A.shape[0] > 100_000:
            continue  # a banded 3D factor that large is pointless to list
        t = time.perf_counter()
        an = pastixpy.analyze(A, ordering=name)
        rows[name] = (an.stats, time.perf_counter() - t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        t = time.perf_counter()
        perm, _ = pymetis.nested_dissection(pymetis.CSRAdjacency(an.xadj, an.adjncy))
        elapsed = time.perf_counter() - t
    rows["pymetis.nested_dissection"] = (
        pastixpy.analyze(A, ordering=np.asarray(perm)).stats,
        elapsed,
    )
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small problems (seconds, not minutes)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", help="also write the results to this JSON file")
    args = p.parse_args()
    sizes = {"3D Laplacian": (30, 30, 30), "2D Laplacian": (300, 300)}
    if not args.quick:
        sizes = {"3D Laplacian": (60, 60, 60), "2D Laplacian": (1000, 1000)}
    results = {"timing": [], "fill": {}}

    print("# Analysis benchmark (benchmarks/analysis.py)\n")
    print(f"## Analysis time, median of {args.runs} runs\n")
    print("| problem | n | ordering s | rest s | rest / ordering | check() s |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, shape in sizes.items():
        A = laplacian(shape)
        order, rest, check, _ = time_analysis(A, args.runs)
        name = f"{label} {'x'.join(map(str, shape))}"
        print(
            f"| {name} | {A.shape[0]:,} | {order:.3f} | {rest:.3f} | {rest / order:.3f} "
            f"| {check:.3f} |"
        )
        results["timing"].append(
            {
                "problem": name,
                "n": A.shape[0],
                "ordering_s": order,
                "rest_s": rest,
                "check_s": check,
            }
        )

    shape = sizes["3D Laplacian"]
    A = laplacian(shape)
    rows = fill_table(A)
    ref = rows["pymetis.nested_dissection"][0]["nnz_L"]
    print(f"\n## Fill on the 3D Laplacian {'x'.join(map(str, shape))}\n")
    print("| ordering | nnz(L) | vs pymetis ND | stored / nnz(L) | flops | analysis s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (s, sec) in rows.items():
        print(
            f"| {name} | {s['nnz_L']:,} | {s['nnz_L'] / ref:.3f} | "
            f"{s['nnz_L_stored'] / s['nnz_L']:.3f} | {s['flops']:.3g} | {sec:.2f} |"
        )
        results["fill"][name] = {k: s[k] for k in ("nnz_L", "nnz_L_stored", "flops")}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
