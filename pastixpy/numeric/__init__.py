"""Numeric phase: assemble A's values into the panels of the block structure, factor, solve.

Works in pivot order on an already preprocessed matrix B (scaled, rows matched);
:mod:`pastixpy.solve` maps user vectors to and from that space.

- :mod:`.layout`: the block structure as the kernels read it, the assembly map, the
  solves' split over threads;
- :mod:`.factorize`: storage for the panels and the factorization itself;
- :mod:`.factors`: the factors and what is read from them (solves, diagonal, D).

Threads and memory release come from :mod:`pastixpy.runtime`.
"""

from .factorize import PARALLEL_MIN_FLOPS, factorize_numeric, is_small
from .factors import Factors, Pivots
from .layout import AssemblyMap, PanelLayout, SolvePlan

__all__ = [
    "PARALLEL_MIN_FLOPS",
    "AssemblyMap",
    "Factors",
    "PanelLayout",
    "Pivots",
    "SolvePlan",
    "factorize_numeric",
    "is_small",
]
