"""Command line: ``pastixpy analyze FILE``, ``pastixpy solve FILE`` (or ``python -m pastixpy``)."""

import argparse
import json
import sys
import time
import warnings

import numpy as np

from .analysis import analyze
from .compression import Compression
from .distributed import install_abort_handler, world
from .distributed.numeric import wait_for_all
from .errors import PastixError
from .io import check_writable, read_dense, read_matrix, write_dense
from .ordering import ORDERINGS
from .runtime import OPENMP, peak_memory
from .version import __version__

KIND_CHOICES = ["auto", "llt", "ldlt", "ldlh", "lu"]
PRECISION_CHOICES = ["auto", "double", "single", "mixed"]


def example_spec(spec):
    """``--example NAME:SIZE`` (e.g. ``lap3d:30``, ``lap3d:60x40x20``) checked, not built:
    the matrix is made by :func:`example_matrix` once the command line is read, where
    a size too large for memory is an error like any other (see
    :data:`pastixpy.gallery.PROBLEMS`)."""
    from .gallery import PROBLEMS

    name, _, text = spec.partition(":")
    if name not in PROBLEMS:
        raise argparse.ArgumentTypeError(
            f"unknown example {name!r}: choose one of {', '.join(_example_names())} as "
            "NAME:SIZE, e.g. lap3d:30, or a helm2d-…:K (--help lists them all)"
        )
    dims = PROBLEMS[name].dims
    shape = "SIZE" if dims == 1 else f"SIZE or a shape {'x'.join('ABC'[:dims])}"
    try:
        size = [int(t) for t in text.split("x")]
    except ValueError:
        size = []
    if len(size) not in {1, dims} or min(size) < 1:
        raise argparse.ArgumentTypeError(
            f"{name} needs a positive {shape}, as in {name}:20; got {spec!r}"
        )
    return spec


def example_matrix(spec):
    """The matrix of a checked ``--example`` spec (:func:`example_spec`)."""
    from .errors import InvalidInputError
    from .gallery import problem

    try:
        return problem(spec)
    except MemoryError as exc:
        raise InvalidInputError(
            f"--example {spec} does not fit in memory ({exc}): choose a smaller SIZE"
        ) from None


def _example_names():
    """The registry's problems but the Helmholtz family's members (listed apart)."""
    from .gallery import PROBLEMS

    return [k for k, p in PROBLEMS.items() if p.family is None]


def _examples_epilog():
    import textwrap

    from .gallery import PROBLEMS

    family = [k for k, p in PROBLEMS.items() if p.family == "helmholtz"]
    about = (
        "the Helmholtz family (--example NAME:K, K the largest wavenumber, 10 points per "
        "wavelength; e.g. helm2d-p2c-pml-grf05-s3: 2D, P2 elements, consistent mass, PML, "
        "random medium of correlation 0.05 and seed 3; pastixpy.gallery.HELMHOLTZ_FAMILY):"
    )
    return "\n".join(
        [
            "built-in problems (--example NAME:SIZE):",
            *(f"  {k:<12} {PROBLEMS[k].description}" for k in _example_names()),
            textwrap.fill(about, width=88),
            textwrap.fill(
                ", ".join(family),
                width=88,
                initial_indent="  ",
                subsequent_indent="  ",
                break_on_hyphens=False,
            ),
        ]
    )


def _add_source(p):
    """The matrix to work on: a file or a built-in example."""
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "matrix", nargs="?", help="Matrix Market (.mtx, .mtx.gz) or Harwell-Boeing file"
    )
    src.add_argument(
        "--example",
        type=example_spec,
        metavar="NAME:SIZE",
        help="a built-in problem: "
        + ", ".join(f"{k}:SIZE" for k in _example_names())
        + ", or a Helmholtz family member NAME:K (listed below)",
    )
    p.add_argument("--ordering", choices=sorted(ORDERINGS), default="auto")
    p.add_argument("--kind", choices=KIND_CHOICES, default="auto")
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")


def _parser():
    p = argparse.ArgumentParser(
        prog="pastixpy", description="Sparse direct solver in the lineage of PaStiX."
    )
    build = "OpenMP" if OPENMP else "built without OpenMP: kernels run on one thread"
    p.add_argument("--version", action="version", version=f"pastixpy {__version__} ({build})")
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser(
        "analyze",
        help="order a matrix and forecast the fill, flops and memory of its factorization",
        epilog=_examples_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_source(a)
    s = sub.add_parser(
        "solve",
        help="factor a matrix and solve A x = b (b = A @ ones unless --rhs is given)",
        epilog=_examples_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_source(s)
    s.add_argument("--rhs", metavar="B.mtx", help="right-hand side(s), Matrix Market")
    s.add_argument("-o", "--output", metavar="X.mtx", help="write the solution (Matrix Market)")
    s.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="threads of the factorization and the solve (default: all cores)",
    )
    s.add_argument(
        "--refine",
        choices=["auto", "ir", "gmres", "cg", "none"],
        default="auto",
        help="refinement after the solve (default: auto)",
    )
    s.add_argument(
        "--precision",
        choices=PRECISION_CHOICES,
        default="auto",
        help="factors in the matrix's precision (auto), double, single, or mixed: "
        "single-precision factors refined to double accuracy",
    )
    s.add_argument(
        "--compress",
        type=float,
        metavar="TOL",
        help="block low-rank compression of the factors at this tolerance (relative to "
        "the matrix's Frobenius norm, e.g. 1e-8); solves are refined by GMRES",
    )
    s.add_argument(
        "--compress-strategy",
        choices=["jit", "minmem"],
        help="jit: each cblk compressed once factored, its panel having received its "
        "updates (default); minmem: no panel of a compressed cblk before it is factored "
        f"(lower peak memory, a little slower). Implies --compress {Compression.tol:g} "
        "when --compress is not given",
    )
    s.add_argument(
        "--compress-method",
        choices=["rrqr", "svd", "randomized"],
        help="how a tile is compressed (default: rrqr, pivoted QR stopped at the "
        f"tolerance). Implies --compress {Compression.tol:g} when --compress is not given",
    )
    s.add_argument(
        "--memory-limit",
        metavar="SIZE",
        help="a memory budget (e.g. 8GiB, 512MiB, 2.5GB, a number of bytes, or auto: what "
        "the process may take): the fastest configuration whose forecast fits is chosen "
        "before allocating (full rank, mixed precision, block low-rank just in time or "
        "minimal memory, and mixed with either); --precision and --compress* given are kept",
    )
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


def format_solve(stats):
    """The numeric phase's statistics (printed after :func:`format_stats`)."""
    rows = [
        (
            "factor entries",
            f"{stats['factor_entries']:,}  ({stats['factor_bytes'] / 2**20:,.1f} MiB, "
            f"{stats['factor_dtype']})",
        ),
        ("precision", stats["precision"]),
        ("perturbed pivots", f"{stats['perturbed_pivots']}"),
        ("threads", f"{stats['threads']}"),
        ("refinement", f"{stats['refinement']}, {stats['refinement_steps']} steps"),
        ("backward error", f"{stats['backward_error']:.2e}"),
    ]
    if stats.get("precision_fallback"):
        rows.append(("fell back", stats["precision_fallback"]))
    c = stats.get("compression")
    if c:
        rows += [
            (
                "compression",
                f"{c['strategy']}, {c['method']}, tol {c['tol']:g} "
                f"({c['tol_absolute']:.2e} per tile)",
            ),
            (
                "compressed factors",
                f"{c['ratio']:.3f} x full rank ({c['full_rank_bytes'] / 2**20:,.1f} MiB)",
            ),
            (
                "tiles",
                f"{c['lowrank_tiles']:,} low-rank (mean rank {c['mean_rank']:.1f}), "
                f"{c['dense_tiles']:,} dense, in {c['compressed_cblks']:,} cblks",
            ),
            ("time: compression", f"{c['seconds']:.3f} s (summed over threads)"),
        ]
    m = stats.get("memory_budget")
    if m:
        rows.append(("memory budget", f"{m['chosen']}: {m['why']}"))
    if stats.get("peak_memory_bytes"):
        rows.append(("peak memory", f"{stats['peak_memory_bytes'] / 2**20:,.1f} MiB (the process)"))
    d = stats.get("distributed")
    if d:
        rows += [
            (
                "ranks",
                f"{d['ranks']} (largest share of the factor entries "
                f"{d['max_entries_share']:.2f}, largest peak memory "
                f"{d['max_peak_memory_bytes'] / 2**20:,.1f} MiB)",
            ),
            ("communication", f"{d['sent_bytes'] / 2**20:,.1f} MiB sent by all ranks"),
        ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


class _ProgressBar:
    """A factorization progress bar on stderr, shown only once a second has passed."""

    def __init__(self):
        from tqdm import tqdm

        self.bar = tqdm(
            total=100,
            delay=1.0,
            file=sys.stderr,
            desc="factorizing",
            unit="%",
            leave=False,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}",
        )

    def __call__(self, fraction):
        self.bar.update(round(100 * fraction) - self.bar.n)

    def close(self):
        self.bar.close()


def _solve(args, A, b, comm=None):
    """Factor and solve; under ``mpiexec`` (``comm``) every rank takes part, A and b
    on rank 0 only, and only rank 0 writes the output."""
    from .api import PastixWarning, factorize

    root = comm is None or comm.Get_rank() == 0
    bar = _ProgressBar() if root else None
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PastixWarning)
            F = factorize(
                A,
                kind=args.kind,
                ordering=args.ordering,
                threads=args.threads,
                refine=args.refine,
                precision=args.precision,
                compress=_compress_option(args),
                progress=bar if comm is None else None,
                comm=comm,
                memory_limit=args.memory_limit,
            )
            x = F.solve(b)
    finally:
        if bar is not None:
            bar.close()
    stats = dict(F.stats, total_seconds=time.perf_counter() - t0)
    peak = peak_memory()  # the command's own: it runs in a fresh process
    if peak is not None:
        stats["peak_memory_bytes"] = peak
    stats["warnings"] = [str(w.message) for w in caught]
    if args.output and root:
        write_dense(args.output, x)
    return stats


def _inputs(args):
    """The matrix and the right-hand side of a command (read, or made)."""
    A = example_matrix(args.example) if args.example is not None else read_matrix(args.matrix)
    if args.command != "solve":
        return A, None
    if args.rhs is not None:
        b = read_dense(args.rhs)
        if b.shape[1] == 1:
            b = b[:, 0]
    else:
        b = A @ np.ones(A.shape[1], dtype=A.dtype)
    return A, b


def _compress_option(args):
    """The ``compress=`` of the command line's --compress options (None: off).

    ``--compress-strategy`` or ``--compress-method`` alone asks for compression too, at
    the default tolerance: given, they are never ignored."""
    params = {
        "tol": args.compress,
        "strategy": args.compress_strategy,
        "method": args.compress_method,
    }
    params = {k: v for k, v in params.items() if v is not None}
    return ("blr", params) if params else None


def main(argv=None):
    """Entry point; returns the process exit code.

    Started by ``mpiexec -n N`` (N > 1, mpi4py installed), ``solve`` runs distributed:
    rank 0 reads the inputs and reports, every rank factors its share. An error every
    rank shares ends each with exit code 1; anything else on one rank (Ctrl-C, a
    failure of its own) aborts the job, as ``python -m mpi4py`` would, rather than
    leave the other ranks waiting."""
    args = _parser().parse_args(argv)
    if args.command == "solve":
        install_abort_handler()  # before MPI starts (it acts only once MPI has)
    comm = world() if args.command == "solve" else None
    root = comm is None or comm.Get_rank() == 0
    try:
        failure = None
        A = b = None
        if root:
            try:
                if args.command == "solve" and args.output:
                    check_writable(args.output)  # before any work: a bad path costs nothing
                A, b = _inputs(args)
            except (PastixError, OSError, MemoryError) as exc:
                failure = exc
        if comm is not None:
            # The other ranks wait for rank 0's input asleep (MPI's bcast would spin on
            # a core, deaf to Ctrl-C), then every rank stops, or none.
            wait_for_all(comm)
            failure = comm.bcast(failure, root=0)
        if failure is not None:
            raise failure
        if args.command == "solve":
            stats = _solve(args, A, b, comm)
        else:
            stats = analyze(A, ordering=args.ordering, kind=args.kind).stats
    except (PastixError, OSError, MemoryError) as exc:
        if root:
            print(f"pastixpy: error: {exc}", file=sys.stderr)
        return 1
    if not root:
        return 0
    if args.json:
        print(json.dumps(stats, indent=2, default=_jsonable))
    else:
        print(format_stats(stats))
        if args.command == "solve":
            print(format_solve(stats))
            for w in stats["warnings"]:
                print(f"warning: {w}", file=sys.stderr)
    return 0


def _jsonable(value):
    """numpy scalars and arrays in the statistics, as JSON values."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
