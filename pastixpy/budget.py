"""The memory budget: ``factorize(A, memory_limit=...)`` chooses, before anything is
allocated, the configuration of the numeric factorization asked for where its forecast
fits, else the fastest that fits.

The configurations (:data:`CONFIGURATIONS`) are tried in this order: the one the
options ask for (the budget changes nothing where it fits), then the others fastest
first, as ``benchmarks/budget.py`` measured them on 3D Laplacians (factorization and a
refined solve): mixed precision (single-precision factors refined to A's precision),
mixed precision with block low-rank compression just in time, mixed precision with
minimal memory, then, where mixed precision is ruled out (``precision="double"``, a
single-precision A, a mixed try that failed), compression just in time and minimal
memory in A's precision, which are both slower and larger than their mixed
counterparts (docs/solve.md, "A memory budget"). Each is forecast on the analysis
made, by the numeric phase's own forecast (:func:`pastixpy.numeric.numeric_forecast`:
panels, A's entries, the threads' work, compressed cblks' panels, tiles and work), and
the first that fits the effective limit is chosen: the smaller of ``memory_limit`` and
what the process may still take (:func:`pastixpy.memory.headroom`: ``ulimit -v``, the
memory cgroup, the system's available memory), with the threads' address space on top
under ``ulimit -v``.
What the user fixed limits the configurations considered: a precision other than
``"auto"``, ``compress=`` (``False``: never compress), and compression's strategy where
it is named; ``schur=`` keeps full rank in A's precision only.

Which figure is tested. Full rank's forecast is exact (its least and most are equal).
A compressed one is a range: ``least`` with every compressible tile at rank 0, ``most``
with every tile dense, which is above full rank's peak: testing ``most`` would never
choose compression where full rank does not fit, and testing ``least`` would choose it
where the tiles cannot be that small. The budget tests an estimate between them,
``least + TILE_FILL * (most - least)``, with :data:`TILE_FILL` set above the fraction
measured on 3D and 2D Laplacians at the default tolerance (``benchmarks/budget.py``
prints both; tighter tolerances and matrices that compress less can need more). Where
the limit is one the system enforces and the tiles still take more, the allocation
fails during the factorization (:class:`~pastixpy.errors.OutOfMemoryError`) and the
pipeline excludes that configuration and chooses again among the others (minimal
memory peaks lower than just in time). ``memory_limit`` itself is a target the choice is
made against, not a cap enforced at each allocation: for a hard cap, run the process
under ``ulimit -v`` or a memory cgroup (those are read into the effective limit).
"""

from dataclasses import dataclass, replace

import numpy as np

from .compression import CLUSTER_SIZE, Compression
from .errors import OutOfMemoryError
from .memory import address_space_room, headroom
from .numeric import numeric_forecast
from .numeric.factorize import map_own_buffers, uses_gmres
from .numeric.forecast import BLAS_BUFFER_BYTES
from .runtime import release_free_memory

#: Where between a compressed configuration's ``least`` and ``most`` its peak is
#: estimated: above the largest fraction measured by ``benchmarks/budget.py``.
TILE_FILL = 0.5


@dataclass(frozen=True)
class Configuration:
    """One way to run the numeric factorization.

    Attributes
    ----------
    name : str
    mixed : bool
        Single-precision factors refined to A's (double) precision.
    strategy : str or None
        Block low-rank compression's strategy (``"jit"`` or ``"minmem"``), None for
        full rank.
    """

    name: str
    mixed: bool
    strategy: str | None

    def options(self, options):
        """``options`` (:class:`~pastixpy.options.Options`) set to this configuration:
        its precision and compression (the user's compression parameters kept, or the
        defaults)."""
        if self.mixed:
            precision = "mixed"
        else:
            precision = "double" if options.precision == "mixed" else options.precision
        compress = None
        if self.strategy is not None:
            compress = replace(options.compress or Compression(), strategy=self.strategy)
        return replace(options, precision=precision, compress=compress)


#: Fastest first after the one asked for (the module's text; ``benchmarks/budget.py``
#: times them).
CONFIGURATIONS = (
    Configuration("full-rank", False, None),
    Configuration("mixed", True, None),
    Configuration("mixed+blr-jit", True, "jit"),
    Configuration("mixed+blr-minmem", True, "minmem"),
    Configuration("blr-jit", False, "jit"),
    Configuration("blr-minmem", False, "minmem"),
)


def preference(default):
    """The configurations in the order they are tried: ``default`` (the one asked
    for), then the others fastest first."""
    return (default,) + tuple(c for c in CONFIGURATIONS if c != default)


BY_NAME = {c.name: c for c in CONFIGURATIONS}
COMPRESSED = tuple(c.name for c in CONFIGURATIONS if c.strategy is not None)
MIXED = tuple(c.name for c in CONFIGURATIONS if c.mixed)


@dataclass(frozen=True)
class Choice:
    """The configuration chosen, ``stats["memory_budget"]`` (:func:`choose`), and the
    warning's text where it is not the configuration asked for (else None)."""

    configuration: Configuration
    stats: dict
    message: str | None = None

    def apply(self, options):
        return self.configuration.options(options)


def analysis_clusters(options):
    """The clusters the analysis cuts wide separators into: compression's, and the
    default ones where the budget may choose compression (every configuration is then
    forecast on one block structure; full rank's time and memory hardly change)."""
    if options.compress is not None:
        return options.compress.clusters
    if options.schur is not None:
        return None  # the budget cannot compress a Schur complement factorization
    if options.memory_limit is not None and "compress" not in options.fixed:
        return CLUSTER_SIZE
    return None


def requested(options):
    """The configuration the options ask for without a budget."""
    strategy = None if options.compress is None else options.compress.strategy
    return next(
        c
        for c in CONFIGURATIONS
        if c.mixed == (options.precision == "mixed") and c.strategy == strategy
    )


def ruled_out(options, dtype):
    """``{name: why}`` of the configurations the user's fixed options rule out, for a
    matrix of working ``dtype``."""
    single = np.dtype(dtype).char in "fF"
    out = {}
    for c in CONFIGURATIONS:
        if options.schur is not None and (c.mixed or c.strategy is not None):
            out[c.name] = "schur= keeps the Schur complement dense, in A's precision"
        elif c.mixed and options.precision in ("double", "single"):
            out[c.name] = f"precision={options.precision!r} was given"
        elif c.mixed and single:
            out[c.name] = "A is in single precision: its factors are single already"
        elif not c.mixed and options.precision == "mixed":
            out[c.name] = "precision='mixed' was given"
        elif "compress" in options.fixed and (c.strategy is None) != (options.compress is None):
            out[c.name] = (
                "compress=False was given" if options.compress is None else "compress= was given"
            )
        elif "strategy" in options.fixed and c.strategy not in (None, options.compress.strategy):
            out[c.name] = f"compress strategy {options.compress.strategy!r} was given"
    return out


def held_bytes(B, amap):
    """Bytes the factorization holds beside its numeric phase when the choice is made:
    the preprocessed matrix B and the assembly map (each array once). They count in
    ``memory_limit``; what the process may take is read after they were allocated."""
    arrays = [B.data, B.indices, B.indptr]
    arrays += [getattr(amap, f) for f in ("src_l", "pos_l", "ptr_l", "src_u", "pos_u", "ptr_u")]
    seen, total = set(), 0
    for a in arrays:
        base = a if a.base is None else a.base
        if id(base) not in seen and isinstance(base, np.ndarray):
            seen.add(id(base))
            total += base.nbytes
    return total


def estimate(fc):
    """The bytes a forecast is tested at (the module's text): exact at full rank,
    between ``least`` and ``most`` with compression."""
    return int(fc.least + TILE_FILL * (fc.most - fc.least))


def choose(B, analysis, layout, amap, kind, options, excluded=()):
    """The :class:`Choice` for preprocessed B, its analysis, layout and assembly map,
    under ``options.memory_limit``.

    Parameters
    ----------
    B : canonical CSC array
        The matrix as factored, in the working precision.
    analysis, layout, amap, kind
        As the numeric phase takes them.
    options : Options
        The user's; ``memory_limit`` is not None.
    excluded : sequence of (str, str)
        Configurations a failed try ruled out, and why.

    Returns
    -------
    Choice

    Raises
    ------
    OutOfMemoryError
        No configuration considered fits: what each needs, what is available and
        what to try.
    """
    ruled = {**ruled_out(options, B.dtype), **dict(excluded)}
    default = requested(options)
    setups = [(c, c.options(options)) for c in CONFIGURATIONS]
    # As the numeric phase does before its check: the heap trimmed and the calling
    # thread's OpenBLAS buffers mapped, so that the room read next is the one it reads.
    release_free_memory()
    mapped = map_own_buffers(
        any(
            uses_gmres(B.dtype, o.factor_dtype(B.dtype), o.compress)
            for c, o in setups
            if c.name not in ruled
        )
    )
    room = headroom()
    space = address_space_room()
    held = held_bytes(B, amap)
    limit = None if options.memory_limit == "auto" else int(options.memory_limit)
    bounds = [max(0, limit - held) if limit is not None else None]
    bounds.append(None if room is None else room.bytes)
    effective = min((x for x in bounds if x is not None), default=None)
    if limit is not None and (room is None or limit - held <= room.bytes):
        source = f"memory_limit {_size(limit)}" + (
            f", less {_size(held)} that the preprocessed matrix and the assembly map hold"
            if held
            else ""
        )
    else:
        source = "no limit known" if room is None else room.limit
    forecasts = {}
    for c, opts in setups:
        dtype = opts.factor_dtype(B.dtype)
        fc = numeric_forecast(B, analysis, layout, amap, kind, dtype, opts.threads, opts.compress)
        # Under ulimit -v the threads' stacks and OpenBLAS buffers count, but for the
        # calling thread's, mapped already.
        gmres = uses_gmres(B.dtype, dtype, opts.compress)
        reserve = 0 if space is None else fc.reserve - min(mapped, (1 + gmres) * BLAS_BUFFER_BYTES)
        needed = estimate(fc)
        forecasts[c.name] = {
            "least": fc.least,
            "most": fc.most,
            "estimate": needed,
            "reserve": reserve,
            "fits": (effective is None or needed <= effective)
            and (space is None or needed + reserve <= space),
        }
    chosen = next(
        (c for c in preference(default) if c.name not in ruled and forecasts[c.name]["fits"]),
        None,
    )
    stats = {
        "limit": options.memory_limit,
        "available": None if room is None else room.bytes,
        "available_from": None if room is None else room.limit,
        "held": held,
        "effective": effective,
        "requested": default.name,
        "chosen": None if chosen is None else chosen.name,
        "why": "",
        "tile_fill": TILE_FILL,
        "forecasts": forecasts,
        "ruled_out": ruled,
    }
    if chosen is None:
        raise _nothing_fits(stats, source, options, kind)
    stats["why"] = _why(stats, chosen, default, source)
    message = None
    if chosen != default:
        message = f"memory_limit: {chosen.name} instead of {default.name}: {stats['why']}"
    return Choice(chosen, stats, message)


def _size(nbytes):
    """Bytes for a message: MiB under a GiB, else GiB."""
    if nbytes < 2**30:
        return f"{nbytes / 2**20:.1f} MiB"
    return f"{nbytes / 2**30:.2f} GiB"


def _needs(name, f):
    if f["least"] == f["most"]:
        return f"{name} needs {_size(f['estimate'])}"
    return (
        f"{name} needs about {_size(f['estimate'])} (from {_size(f['least'])} to "
        f"{_size(f['most'])} as its tiles compress)"
    )


def _room(stats, source):
    if stats["effective"] is None:
        return "no known limit"
    return f"{_size(stats['effective'])} ({source})"


def _why(stats, chosen, default, source):
    """Why ``chosen``: the faster configurations that do not fit or were ruled out, or
    that it is the one asked for."""
    forecasts, ruled = stats["forecasts"], stats["ruled_out"]
    if chosen == default:
        return f"{_needs(chosen.name, forecasts[chosen.name])}, within {_room(stats, source)}"
    tried = preference(default)
    faster = [c.name for c in tried[: tried.index(chosen)]]
    over = [_needs(n, forecasts[n]) for n in faster if n not in ruled]
    parts = [f"{'; '.join(over)}: more than {_room(stats, source)}"] if over else []
    parts += [f"{n} ruled out ({ruled[n]})" for n in faster if n in ruled]
    parts.append(f"{_needs(chosen.name, forecasts[chosen.name])}, the fastest that fits")
    return "; ".join(parts)


def _nothing_fits(stats, source, options, kind):
    """The OutOfMemoryError where no configuration considered fits."""
    forecasts, ruled = stats["forecasts"], stats["ruled_out"]
    eligible = [n for n in forecasts if n not in ruled]
    smallest = min(
        forecasts[n]["estimate"] + forecasts[n]["reserve"] for n in eligible or forecasts
    )
    tips = []
    if source.startswith("memory_limit"):
        tips.append(f"a memory_limit of at least {_size(smallest + stats['held'])}")
    would = [
        f"{n} would fit but is ruled out ({ruled[n]})"
        for n in forecasts
        if n in ruled and forecasts[n]["fits"]
    ]
    if options.threads is None or options.threads > 1:
        tips.append("fewer threads (threads=1) take less work memory")
    if kind.two_factors:
        tips.append("a symmetric matrix factored as kind='llt' or 'ldlt' stores one factor")
    tips.append("another ordering may fill less")
    return OutOfMemoryError(
        f"no configuration fits the memory budget of {_room(stats, source)}: "
        + "; ".join(_needs(n, forecasts[n]) for n in eligible)
        + "".join(f"; {w}" for w in would)
        + "".join(
            f"; {n} ruled out ({why})"
            for n, why in ruled.items()
            if n not in forecasts or not forecasts[n]["fits"]
        )
        + f"; try {'; '.join(tips)}",
        needed=smallest,
        available=stats["effective"] or 0,
    )
