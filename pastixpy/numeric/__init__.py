"""Numeric phase: assemble A's values into the panels of the block structure, factor, solve.

Works in pivot order on an already preprocessed matrix B (scaled, rows matched);
:mod:`pastixpy.solve` maps user vectors to and from that space.

- :mod:`.layout`: the block structure as the kernels read it, the assembly map, the
  solves' split over threads;
- :mod:`.factorize`: storage for the panels and the factorization itself;
- :mod:`.factors`: the factors and what is read from them (solves, diagonal, D);
- :mod:`.threads`: BLAS and OpenMP threads around the kernels.
"""

from .factorize import PARALLEL_MIN_FLOPS, factorize_numeric, is_small, release_free_memory
from .factors import Factors, Pivots, parity
from .layout import AssemblyMap, PanelLayout, SolvePlan
from .threads import blas_threads

__all__ = [
    "PARALLEL_MIN_FLOPS",
    "AssemblyMap",
    "Factors",
    "PanelLayout",
    "Pivots",
    "SolvePlan",
    "blas_threads",
    "factorize_numeric",
    "is_small",
    "parity",
    "release_free_memory",
]
