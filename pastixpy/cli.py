"""Command line: ``pastixpy analyze FILE.mtx`` (also ``python -m pastixpy``)."""

import argparse
import json
import sys

from .analysis import analyze
from .errors import PastixError
from .io import read_matrix
from .ordering import ORDERINGS

EXAMPLES = {
    "lap2d": (2, "2D 5-point Laplacian, SIZE² unknowns"),
    "lap3d": (3, "3D 7-point Laplacian, SIZE³ unknowns"),
    "elast3d": (3, "3 coupled unknowns per node of a SIZE³ grid (elasticity-like)"),
}


def example_matrix(spec):
    """Matrix of a built-in example given as ``NAME:SIZE``, e.g. ``lap3d:30``."""
    from .gallery import laplacian, vector_laplacian

    name, _, size = spec.partition(":")
    if name not in EXAMPLES or not size.isdigit() or int(size) < 1:
        choices = ", ".join(f"{k}:SIZE ({v[1]})" for k, v in EXAMPLES.items())
        raise argparse.ArgumentTypeError(f"unknown example {spec!r}; choose {choices}")
    shape = (int(size),) * EXAMPLES[name][0]
    return vector_laplacian(shape) if name == "elast3d" else laplacian(shape)


def _parser():
    p = argparse.ArgumentParser(
        prog="pastixpy", description="Sparse direct solver in the lineage of PaStiX."
    )
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser(
        "analyze",
        help="order a matrix and forecast the fill, flops and memory of its factorization",
    )
    src = a.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "matrix", nargs="?", help="Matrix Market (.mtx, .mtx.gz) or Harwell-Boeing file"
    )
    src.add_argument(
        "--example",
        type=example_matrix,
        metavar="NAME:SIZE",
        help="a built-in problem: " + ", ".join(f"{k}:SIZE" for k in EXAMPLES),
    )
    a.add_argument("--ordering", choices=sorted(ORDERINGS), default="metis")
    a.add_argument("--kind", choices=["auto", "llt", "ldlt", "ldlh", "lu"], default="auto")
    a.add_argument("--json", action="store_true", help="print the statistics as JSON")
    return p


def format_stats(stats):
    """The analysis statistics as an aligned two-column table."""
    mib = 1024.0**2
    rows = [
        ("unknowns (n)", f"{stats['n']:,}"),
        ("nonzeros of A", f"{stats['nnz_A']:,}"),
        ("kind", stats["kind"]),
        ("ordering", f"{stats['ordering']} ({stats['n_ordered']:,} vertices ordered)"),
        ("nonzeros of L", f"{stats['nnz_L']:,}  ({stats['fill_ratio']:.1f} x nnz(A))"),
        (
            "stored entries of L",
            f"{stats['nnz_L_stored']:,}  "
            f"({stats['nnz_L_stored'] / max(1, stats['nnz_L']):.2f} x nnz(L))",
        ),
        ("LLᵀ flops", f"{stats['flops']:.4g}"),
        ("column blocks", f"{stats['n_cblk']:,}"),
        ("blocks", f"{stats['n_blok']:,}"),
        ("tree height", f"{stats['tree_height']} cblks, {stats['etree_height']} columns"),
        (
            "factor memory",
            "  ".join(f"{d} {b / mib:,.1f} MiB" for d, b in stats["memory_bytes_by_dtype"].items()),
        ),
    ]
    rows += [(f"time: {step}", f"{sec:.3f} s") for step, sec in stats["seconds"].items()]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def main(argv=None):
    """Entry point; returns the process exit code."""
    args = _parser().parse_args(argv)
    try:
        A = args.example if args.example is not None else read_matrix(args.matrix)
        an = analyze(A, ordering=args.ordering, kind=args.kind)
    except (PastixError, OSError, MemoryError) as exc:
        print(f"pastixpy: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(an.stats, indent=2))
    else:
        print(format_stats(an.stats))
    return 0
