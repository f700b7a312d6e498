"""pastixpy: a sparse direct solver for Python in the lineage of PaStiX.

Phases: :func:`analyze` (ordering and symbolic factorization, from the pattern
only), then the numeric factorization and solve built on its result.
"""

from .analysis import Analysis, analyze
from .api import Factorization, PastixWarning, factorize, factorized, spsolve
from .errors import (
    InvalidInputError,
    MixedPrecisionError,
    NotPositiveDefiniteError,
    OptionError,
    OutOfMemoryError,
    OutputError,
    PastixError,
    PatternMismatchError,
    SingularMatrixError,
)
from .ordering import Ordering
from .symbolic import EliminationTree, SymbolMatrix

__version__ = "0.1.0"

__all__ = [
    "Analysis",
    "EliminationTree",
    "Factorization",
    "InvalidInputError",
    "MixedPrecisionError",
    "NotPositiveDefiniteError",
    "OptionError",
    "Ordering",
    "OutOfMemoryError",
    "OutputError",
    "PastixError",
    "PastixWarning",
    "PatternMismatchError",
    "SingularMatrixError",
    "SymbolMatrix",
    "analyze",
    "factorize",
    "factorized",
    "spsolve",
]
