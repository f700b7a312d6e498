"""The one-process numeric factorization: the memory forecast checked against what the
process may take, the panels allocated, the kernels run (:mod:`.kernels`) in order or on
threads; :func:`factorize_numeric` returns the :class:`~.factors.LocalFactors`."""

import numpy as np

from .. import _numeric
from ..errors import NotPositiveDefiniteError, OutOfMemoryError
from ..memory import (
    address_space_limited,
    address_space_room,
    check_memory,
    headroom,
    stack_bytes,
)
from ..runtime import (
    OPENMP,
    default_threads,
    kernel_threads,
    map_blas_buffers,
    release_free_memory,
)
from .factors import LocalFactors, Pivots
from .forecast import BLAS_BUFFER_BYTES, forecast, gib
from .kernels import NumericTask, allocate_storage, factor_cblks

#: Factors smaller than this are allocated without reading the memory limits first
#: (reading them takes longer than such a factorization; numpy's MemoryError is still
#: turned into OutOfMemoryError).
MEMORY_CHECK_MIN_BYTES = 16 * 2**20

#: Below this many flops, starting threads costs more than they save.
PARALLEL_MIN_FLOPS = 1e8


def is_small(analysis):
    """Whether a factorization is under :data:`PARALLEL_MIN_FLOPS`: it and its solves
    then run on the calling thread, the BLAS single-threaded."""
    return analysis.stats["flops"] < PARALLEL_MIN_FLOPS


def factorize_numeric(
    B,
    analysis,
    layout,
    amap,
    kind,
    pivot_tol,
    dtype=None,
    progress=None,
    threads=None,
    compression=None,
):
    """Assemble B into panels and factor them in this process.

    Parameters
    ----------
    B : canonical CSC array
        The preprocessed matrix, in the original numbering.
    analysis : Analysis
        Supplies the permutation; ``layout`` and ``amap`` derive from it.
    layout : PanelLayout
    amap : AssemblyMap
    kind : Kind
    pivot_tol : float
        Static pivoting threshold: pivots smaller in magnitude are replaced.
    dtype : numpy dtype, optional
        The factors' precision (default B's): float32 factors of a float64 B are mixed
        precision's.
    progress : callable, optional
        Called as ``progress(done_fraction)`` as the factorization advances.
    threads : int, optional
        At most this many threads factor cblks concurrently (BLAS then runs
        single-threaded in each); default: the cores this process may run on. Under
        :data:`PARALLEL_MIN_FLOPS`, one whatever is asked, and the BLAS on one too.
        ``1`` factors the cblks in order on the calling
        thread, the reference the threaded run agrees with to rounding (and what a
        process forked from one that ran threads gets: GNU OpenMP does not survive
        fork).
    compression : pastixpy.compression.Compression, optional
        Block low-rank compression of the wide cblks, each as soon as it is factored
        (their panels are allocated apart, and freed when compressed).

    Returns
    -------
    LocalFactors

    Raises
    ------
    OutOfMemoryError
        The factors would not fit in the memory this process may take (checked
        before anything is allocated).
    NotPositiveDefiniteError
        LLᵀ met a pivot that is not positive (column in B's numbering): the first
        failing column in pivot order, whatever the number of threads.
    """
    dtype = np.dtype(B.dtype if dtype is None else dtype)
    # Everything the kernels will allocate, forecast for the strategy used and checked
    # against what the process may take before any of it is allocated.
    small = is_small(analysis)
    fc = numeric_forecast(B, analysis, layout, amap, kind, dtype, threads, compression)
    threads = fc.threads
    advice = memory_advice(kind, B.dtype, dtype, compression, threads)
    room = None
    reserve = fc.reserve
    if fc.least >= MEMORY_CHECK_MIN_BYTES or address_space_limited():
        # Trimming the heap takes longer than small factors take to allocate, and
        # moves no peak that matters there. Under an address-space limit even small
        # ones are checked: a thread's first BLAS call maps OpenBLAS's buffer, and
        # OpenBLAS retries that map forever where it fails.
        release_free_memory()
        reserve -= map_own_buffers(uses_gmres(B.dtype, dtype, compression))
        room = check_memory(fc.least, _what(fc), advice, reserve=reserve, detail=fc.describe())
    try:
        task = NumericTask.build(B, layout, amap, kind, pivot_tol, dtype, compression)
        storage = allocate_storage(task, touch_threads=threads)
        pivots = Pivots.empty(kind, B.shape[0], dtype)
        # Small factorizations stay on one thread, the BLAS's included, whatever was
        # asked: starting threads costs more than they save, and on a machine with as
        # many cores as threads the OpenMP and BLAS threads that wait spinning after a
        # region take the caller's core from it through the calls that follow. A build
        # without OpenMP runs on one thread too, the BLAS's included: the one thread
        # its statistics report and its forecast counts buffers for.
        failed = factor_cblks(
            task,
            storage,
            pivots,
            threads,
            only=schur_excluded(analysis, layout),
            progress=progress,
            one_blas=small or not OPENMP,
        )
    except MemoryError as exc:
        if isinstance(exc, OutOfMemoryError):
            raise
        reason = str(exc) or "an allocation failed"
        task = storage = pivots = None  # noqa: F841 (freed before measuring)
        raise out_of_memory(reason, fc, room, advice, reserve) from None
    raise_if_failed(failed, analysis)
    if progress is not None:
        progress(1.0)
    storage.freeze()
    pivots.freeze()
    return LocalFactors(kind, layout, storage, pivots, threads)


def schur_excluded(analysis, layout):
    """The cblks to factor where the analysis keeps Schur unknowns (every cblk but the
    last, which only receives the others' updates: :mod:`pastixpy.schur`), else None."""
    if analysis.schur is None:
        return None
    only = np.ones(layout.ncblk, dtype=np.int8)
    only[-1] = 0
    return only


def numeric_forecast(B, analysis, layout, amap, kind, dtype, threads=None, compression=None):
    """The :class:`~.forecast.Forecast` of :func:`factorize_numeric` with these
    arguments (its threads as it would run them), before anything is allocated."""
    threads = kernel_threads(threads_asked(analysis, layout, threads))
    return forecast(
        layout,
        kind,
        _numeric.KIND_CODES[kind.name],
        np.dtype(B.dtype if dtype is None else dtype),
        threads,
        amap.src_l.size + amap.src_u.size,
        B.dtype.itemsize,
        B.shape[0],
        compression,
        stack_bytes(),
    )


def uses_gmres(matrix_dtype, factor_dtype, compression):
    """Whether GMRES refines the solves (compressed or mixed-precision factors), whose
    least-squares problems go through numpy's LAPACK: its OpenBLAS buffer counts."""
    return compression is not None or np.dtype(factor_dtype) != np.dtype(matrix_dtype)


def map_own_buffers(gmres):
    """Under an address-space limit with room for them, map the calling thread's
    OpenBLAS buffers now (scipy's, and numpy's with ``gmres``), so that the headroom read
    next counts them in the mapped size: returns their bytes, to take off a forecast's
    reserve (0 where nothing was mapped)."""
    space = address_space_room()
    buffers = (2 if gmres else 1) * BLAS_BUFFER_BYTES
    if space is None or space < buffers:
        return 0
    map_blas_buffers(gmres)
    return buffers


def raise_if_failed(failed, analysis):
    """NotPositiveDefiniteError for the kernels' failing pivot (pivot order), if any."""
    if failed >= 0:
        column = int(analysis.perm[failed])
        raise NotPositiveDefiniteError(
            f"the matrix is not positive definite: the pivot of column {column} is not "
            "positive; use kind='ldlt' (or kind='auto') for symmetric indefinite matrices",
            column=column,
        )


def threads_asked(analysis, layout, threads):
    """The threads a factorization runs on: ``threads`` (None: the environment's,
    :func:`~pastixpy.runtime.default_threads`), but one for
    small ones (:func:`is_small`) and single cblks."""
    threads = default_threads() if threads is None else int(threads)
    if is_small(analysis) or layout.ncblk < 2:
        threads = 1
    return threads


def memory_advice(kind, matrix_dtype, factor_dtype, compression=None, threads=1):
    """What to try when a factorization does not fit."""
    tips = []
    if compression is None:
        tips.append(
            "compress=1e-8 stores the large blocks in low rank (with "
            "('blr', {'strategy': 'minmem'}) the peak follows the compressed size)"
        )
    elif compression.strategy == "jit":
        tips.append("compress=('blr', {'strategy': 'minmem'}) lowers the peak further")
    if np.dtype(factor_dtype).char in "dD":
        tips.append(
            "precision='mixed' halves the factors and refines the solution to double "
            "accuracy; a single-precision matrix (A.astype(numpy.float32)) halves them too"
        )
    if threads > 1:
        tips.append("fewer threads (threads=1) take less work memory")
    if kind.two_factors:
        tips.append("a symmetric matrix factored as kind='llt' or 'ldlt' stores one factor")
    tips.append(
        "another ordering may fill less (pastixpy.analyze(A, ordering=...).stats"
        "['memory_bytes'] forecasts each before any allocation)"
    )
    return "; ".join(tips)


def _what(fc):
    return "the factors" if fc.strategy == "full" else f"the factors ({fc.strategy} compression)"


def out_of_memory(reason, fc, room, advice, reserve):
    """The OutOfMemoryError for an allocation that failed during the factorization
    (``reason``: the kernels' words) with forecast ``fc``; ``room``: the headroom
    checked before allocating, else measured now; ``reserve``: the threads' address
    space still to be mapped then."""
    room = room if room is not None else headroom()
    available = 0 if room is None else room.bytes
    where = "" if room is None else f" ({room.limit})"
    if fc.least == fc.most:
        needed = f"{gib(fc.least)}"
    else:
        needed = f"{gib(fc.least)} to {gib(fc.most)}, as the tiles compress"
    reserve = reserve if room is not None and room.address_space else 0
    if reserve:
        needed += f", and {gib(reserve)} of threads' address space"
    return OutOfMemoryError(
        f"{reason}: {_what(fc)} need {needed} [{fc.describe()}] and this process could "
        f"take only {gib(available)} more{where}; {advice}",
        needed=fc.most + reserve,
        available=available,
    )
