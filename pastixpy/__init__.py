"""pastixpy: a sparse direct solver for Python in the lineage of PaStiX.

Phases: :func:`analyze` (ordering and symbolic factorization, from the pattern
only), then the numeric factorization and solve built on its result.
"""


def _check_built():
    """A clear error where the compiled modules are missing: the package imported from
    its source tree (a checkout's root as the working directory) without a build."""
    import importlib.util
    from pathlib import Path

    names = ("_numeric", "_symbolic", "_graph", "_amd", "_matching")
    missing = [n for n in names if importlib.util.find_spec(f"{__name__}.{n}") is None]
    if missing:
        raise ImportError(
            f"pastixpy's compiled modules ({', '.join(missing)}) are not in "
            f"{Path(__file__).parent}: this is pastixpy's source tree, not a built package "
            "(Python looks in the current directory first). Run from another directory to "
            "use the installed pastixpy, or build it here with 'pip install -e .'"
        )


_check_built()

from . import multilevel as multilevel  # noqa: E402
from .analysis import Analysis, analyze  # noqa: E402
from .api import PastixWarning, factorize, factorized, schur_complement, spsolve  # noqa: E402
from .errors import (  # noqa: E402
    InvalidInputError,
    MixedPrecisionError,
    NotPositiveDefiniteError,
    OptionError,
    OutOfMemoryError,
    OutputError,
    PastixError,
    PatternMismatchError,
    PersistError,
    SingularMatrixError,
)
from .factorization import Factorization  # noqa: E402
from .ordering import Ordering  # noqa: E402
from .persist import load  # noqa: E402
from .symbolic import EliminationTree, SymbolMatrix  # noqa: E402
from .version import __version__ as __version__  # noqa: E402

__all__ = [
    "schur_complement",
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
    "PersistError",
    "PastixError",
    "PastixWarning",
    "PatternMismatchError",
    "SingularMatrixError",
    "SymbolMatrix",
    "analyze",
    "factorize",
    "factorized",
    "load",
    "spsolve",
]
